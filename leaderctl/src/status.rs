//! `leaderctl status`: `leader_status` as the shared table ([`leader_core::status::Table`]) or
//! JSON, once or redrawn in place until Ctrl-C, with when each role is next due.
//!
//! **Next due.** A role is due once its interval has passed since its last completed tick (and
//! any cooldown has ended), and the interval lives in the runtime, not the database: the table
//! has `last_tick_ended_at` and `not_before`, not the interval. So the `next_due` column reads a
//! `next_due_at timestamptz` column of `leader_status` when the view has one (a later framework
//! migration is to add it), and shows `-` until then rather than guess; the `last_tick` age and the
//! cooldown are what the table knows meanwhile. A role on a cron schedule has it already: its
//! `next_instant` (the earliest scheduled instant not yet completed) is when it is next due, and
//! the `schedule` column shows its schedule. With it:
//!
//! | `next_due` | when | `on_time` (JSON) |
//! |---|---|---|
//! | `running` | the role is leading: its tick runs now | `true` |
//! | `in 4.2s` | due later | `true` |
//! | `due now` | due, less than the default `max_poll` ago (a follower may not have polled yet) | `true` |
//! | `late 3m05s` | due longer ago than that, and nobody runs it | `false` |
//! | `-` | paused, or the view has no `next_due_at` (or it is null) | `null` |

use std::collections::HashMap;
use std::time::Duration;

use chrono::{DateTime, SecondsFormat, TimeDelta, Utc};
use leader_core::Timings;
use leader_core::status::{self, RoleStatus, State, Table, human};
use serde_json::{Value, json};
use sqlx::{PgPool, Row};

use crate::failure::Failure;

/// Moves the cursor home and clears the screen, so each redraw replaces the last.
const REDRAW: &str = "\x1b[H\x1b[2J";

/// Prints the status once, or every `watch` until Ctrl-C.
pub async fn run(pool: &PgPool, json: bool, watch: Option<Duration>) -> Result<(), Failure> {
    let timings = Timings::default();
    let Some(every) = watch else {
        let (rows, due) = read(pool, &timings).await?;
        print!("{}", render(&rows, &due, json));
        return Ok(());
    };
    let stop = tokio::signal::ctrl_c();
    tokio::pin!(stop);
    loop {
        let (rows, due) = read(pool, &timings).await?;
        if json {
            print!("{}", render(&rows, &due, true));
        } else {
            let at = rows.first().map_or_else(String::new, |r| {
                format!(" at {}", r.db_now.format("%H:%M:%SZ"))
            });
            print!(
                "{REDRAW}leader_status{at}, every {}ms (Ctrl-C stops)\n\n{}",
                every.as_millis(),
                render(&rows, &due, false)
            );
        }
        tokio::select! {
            _ = &mut stop => return Ok(()),
            () = tokio::time::sleep(every) => {}
        }
    }
}

/// Each lease row's `next_due_at` (by role and shard index), when the view has the column.
type NextDue = HashMap<(String, i32), DateTime<Utc>>;

/// Reads `leader_status` for the next-due times. `to_jsonb` of the row makes a column the view
/// lacks read as null instead of failing, so one statement serves views with and without it.
const NEXT_DUE: &str = "
SELECT role, coalesce((to_jsonb(s) ->> 'shard_index')::integer, 0) AS shard_index,
       coalesce(to_jsonb(s) ->> 'next_due_at', to_jsonb(s) ->> 'next_instant')::timestamptz
           AS next_due_at
  FROM leader_status s
";

/// The rows, and the next-due times the view has.
async fn read(pool: &PgPool, timings: &Timings) -> Result<(Vec<RoleStatus>, NextDue), Failure> {
    let rows = status::read(pool, timings)
        .await
        .map_err(Failure::from_core)?;
    let due = tokio::time::timeout(
        timings.statement_timeout(),
        sqlx::raw_sql(NEXT_DUE).fetch_all(pool),
    )
    .await
    .map_err(|_| {
        Failure::unreachable(format!(
            "the status read got no answer within {:?}: the database is slow; try again",
            timings.statement_timeout()
        ))
    })?
    .and_then(|rows| {
        rows.iter()
            .filter_map(|row| match row.try_get("next_due_at") {
                Ok(Some(at)) => Some(
                    row.try_get("role")
                        .and_then(|role| Ok(((role, row.try_get("shard_index")?), at))),
                ),
                Ok(None) => None,
                Err(e) => Some(Err(e)),
            })
            .collect()
    })
    .map_err(|e| Failure::from_sqlx("the status read", &e))?;
    Ok((rows, due))
}

/// A role past due by less than this counts as due, not late: a follower polls at most every
/// `max_poll` (the default's; the runtime's may differ).
const DUE_GRACE: Duration = Timings::DEFAULT.max_poll();

/// The `next_due` cell, and whether the role is on time; `None` where there is nothing to say.
fn next_due(row: &RoleStatus, at: Option<DateTime<Utc>>) -> (String, Option<bool>) {
    let Some(at) = at else {
        return ("-".to_owned(), None);
    };
    let left = at - row.db_now;
    let grace = TimeDelta::from_std(DUE_GRACE).unwrap_or(TimeDelta::zero());
    match row.state {
        State::Paused => ("-".to_owned(), None),
        State::Leading => ("running".to_owned(), Some(true)),
        _ if left > TimeDelta::zero() => (format!("in {}", human(left)), Some(true)),
        _ if -left <= grace => ("due now".to_owned(), Some(true)),
        _ => (format!("late {}", human(-left)), Some(false)),
    }
}

fn render(rows: &[RoleStatus], due: &NextDue, json: bool) -> String {
    if json {
        let rows = rows
            .iter()
            .map(|row| to_json(row, due.get(&key(row)).copied()))
            .collect();
        format!("{}\n", Value::Array(rows))
    } else {
        let due = due.clone();
        Table::new(rows)
            .column("schedule", |row| {
                row.schedule.clone().unwrap_or_else(|| "-".to_owned())
            })
            .column("next_due", move |row| {
                next_due(row, due.get(&key(row)).copied()).0
            })
            .to_string()
    }
}

/// The row's key in [`NextDue`].
fn key(row: &RoleStatus) -> (String, i32) {
    let index = row.shard.map_or(0, |shard| shard.index());
    (row.role.clone(), i32::try_from(index).unwrap_or(i32::MAX))
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
/// milliseconds, when it is next due and whether it is on time (null where the view does not
/// say), and the database clock they were computed on.
fn to_json(row: &RoleStatus, due: Option<DateTime<Utc>>) -> Value {
    json!({
        "role": row.role,
        "shard_index": row.shard.map_or(0, |shard| shard.index()),
        "shard_count": row.shard.map_or(1, |shard| shard.count()),
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
        "schedule": row.schedule,
        "last_completed_instant": time(row.last_completed_instant),
        "next_due_at": time(due),
        "next_due_in_ms": millis(due.map(|at| at - row.db_now)),
        "on_time": next_due(row, due).1,
        "db_now": time(Some(row.db_now)),
    })
}
