//! `leaderctl status`: `leader_status` as the shared table ([`leader_core::status::Table`]) or
//! JSON, once or redrawn in place until Ctrl-C.

use std::time::Duration;

use chrono::{DateTime, SecondsFormat, TimeDelta, Utc};
use leader_core::Timings;
use leader_core::status::{self, RoleStatus, Table};
use serde_json::{Value, json};
use sqlx::PgPool;

use crate::failure::Failure;

/// Moves the cursor home and clears the screen, so each redraw replaces the last.
const REDRAW: &str = "\x1b[H\x1b[2J";

/// Prints the status once, or every `watch` until Ctrl-C.
pub async fn run(pool: &PgPool, json: bool, watch: Option<Duration>) -> Result<(), Failure> {
    let timings = Timings::default();
    let Some(every) = watch else {
        let rows = status::read(pool, &timings)
            .await
            .map_err(Failure::from_core)?;
        print!("{}", render(&rows, json));
        return Ok(());
    };
    let stop = tokio::signal::ctrl_c();
    tokio::pin!(stop);
    loop {
        let rows = status::read(pool, &timings)
            .await
            .map_err(Failure::from_core)?;
        if json {
            print!("{}", render(&rows, true));
        } else {
            let at = rows.first().map_or_else(String::new, |r| {
                format!(" at {}", r.db_now.format("%H:%M:%SZ"))
            });
            print!(
                "{REDRAW}leader_status{at}, every {}ms (Ctrl-C stops)\n\n{}",
                every.as_millis(),
                render(&rows, false)
            );
        }
        tokio::select! {
            _ = &mut stop => return Ok(()),
            () = tokio::time::sleep(every) => {}
        }
    }
}

fn render(rows: &[RoleStatus], json: bool) -> String {
    if json {
        format!("{}\n", Value::Array(rows.iter().map(to_json).collect()))
    } else {
        Table::new(rows).to_string()
    }
}

fn time(at: Option<DateTime<Utc>>) -> Value {
    at.map_or(Value::Null, |at| {
        at.to_rfc3339_opts(SecondsFormat::Millis, true).into()
    })
}

fn millis(span: Option<TimeDelta>) -> Value {
    span.map_or(Value::Null, |d| d.num_milliseconds().into())
}

/// One row as JSON: the view's columns (times in RFC 3339, UTC), the spans the table shows in
/// milliseconds, and the database clock they were computed on.
fn to_json(row: &RoleStatus) -> Value {
    json!({
        "role": row.role,
        "state": row.state.as_str(),
        "leader": row.leader,
        "token": row.token,
        "leading_since": time(row.leading_since),
        "expires_at": time(row.expires_at),
        "expires_in_ms": millis(row.expires_in()),
        "last_tick_ended_at": time(row.last_tick_ended_at),
        "last_tick_holder": row.last_tick_holder,
        "last_tick_age_ms": millis(row.last_tick_age()),
        "cooldown_until": time(row.cooldown_until),
        "cooldown_left_ms": millis(row.cooldown_left()),
        "paused_at": time(row.paused_at),
        "paused_by": row.paused_by,
        "pause_reason": row.pause_reason,
        "db_now": time(Some(row.db_now)),
    })
}
