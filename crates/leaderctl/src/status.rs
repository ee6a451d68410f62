//! `leaderctl status`: `leader_status` as the shared table ([`leaderctl::table::Table`]) or
//! JSON, once or redrawn in place until Ctrl-C, with when each role is next due.
//!
//! Everything shown comes from the one tagged read of the view ([`leader_core::status::read`]).
//! **Next due** is the view's `next_due_at` (a cron role's next instant, an interval role's last
//! completed tick plus the interval its last grant ran with, neither before `not_before`):
//!
//! | `next_due` | when | `on_time` (JSON) |
//! |---|---|---|
//! | `running` | the role is leading: its tick runs now | `true` |
//! | `in 4.2s` | due later | `true` |
//! | `due now` | due, less than the default `max_poll` ago (a follower may not have polled yet) | `true` |
//! | `late 3m05s` | due longer ago than that, and nobody runs it | `false` |
//! | `-` | paused, or not leading and `next_due_at` is null (never granted, or an interval role that never completed a tick and has no `not_before`) | `null` |

use std::time::Duration;

use chrono::{DateTime, SecondsFormat, TimeDelta, Utc};
use leader_core::Timings;
use leader_core::status::{self, LeaseState, RoleStatus};
use leaderctl::table::{Table, human};
use serde_json::{Value, json};
use sqlx::PgPool;

use crate::failure::Failure;

/// Moves the cursor home and clears the screen, so each redraw replaces the last.
const REDRAW: &str = "\x1b[H\x1b[2J";

/// Prints the status once, or every `watch` until Ctrl-C.
pub async fn run(pool: &PgPool, json: bool, watch: Option<Duration>) -> Result<(), Failure> {
    let timings = Timings::default();
    let Some(every) = watch else {
        let rows = read(pool, &timings).await?;
        print!("{}", render(&rows, json));
        return Ok(());
    };
    let stop = tokio::signal::ctrl_c();
    tokio::pin!(stop);
    loop {
        let rows = read(pool, &timings).await?;
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

/// The rows of `leader_status`.
async fn read(pool: &PgPool, timings: &Timings) -> Result<Vec<RoleStatus>, Failure> {
    status::read(pool, timings)
        .await
        .map_err(Failure::from_core)
}

/// A role past due by less than this counts as due, not late: a follower polls at most every
/// `max_poll` (the default's; the runtime's may differ).
const DUE_GRACE: Duration = Timings::DEFAULT.max_poll();

/// The `next_due` cell, and whether the role is on time; `None` where there is nothing to say.
fn next_due(row: &RoleStatus) -> (String, Option<bool>) {
    match (row.state, row.next_due_at) {
        (LeaseState::Leading, _) => ("running".to_owned(), Some(true)),
        (LeaseState::Paused, _) | (_, None) => ("-".to_owned(), None),
        (_, Some(at)) => {
            let left = at - row.db_now;
            let grace = TimeDelta::from_std(DUE_GRACE).unwrap_or(TimeDelta::zero());
            if left > TimeDelta::zero() {
                (format!("in {}", human(left)), Some(true))
            } else if -left <= grace {
                ("due now".to_owned(), Some(true))
            } else {
                (format!("late {}", human(-left)), Some(false))
            }
        }
    }
}

fn render(rows: &[RoleStatus], json: bool) -> String {
    if json {
        let rows = rows.iter().map(to_json).collect();
        format!("{}\n", Value::Array(rows))
    } else {
        Table::new(rows)
            .column("schedule", |row| {
                row.schedule.clone().unwrap_or_else(|| "-".to_owned())
            })
            .column("next_due", |row| next_due(row).0)
            .to_string()
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
/// milliseconds (`_ms`), whether it is on time (null where the view does not say), and the
/// database clock they were computed on.
fn to_json(row: &RoleStatus) -> Value {
    json!({
        "role": row.role,
        "shard_index": row.shard.map_or(0, |shard| shard.index()),
        "shard_count": row.shard.map_or(1, |shard| shard.count()),
        "state": row.state.as_str(),
        "holder_id": row.holder_id,
        "token": row.token,
        "acquired_at": time(row.acquired_at),
        "expires_at": time(row.expires_at),
        "expires_in_ms": millis(row.expires_in()),
        "last_tick_ended_at": time(row.last_tick_ended_at),
        "last_tick_holder": row.last_tick_holder,
        "last_tick_age_ms": millis(row.last_tick_age()),
        "not_before": time(row.not_before),
        "not_before_in_ms": millis(row.not_before_in()),
        "paused_at": time(row.paused_at),
        "paused_by": row.paused_by,
        "pause_reason": row.pause_reason,
        "schedule": row.schedule,
        "last_completed_instant": time(row.last_completed_instant),
        "next_due_at": time(row.next_due_at),
        "next_due_in_ms": millis(row.next_due_at.map(|at| at - row.db_now)),
        "on_time": next_due(row).1,
        "db_now": time(Some(row.db_now)),
    })
}
