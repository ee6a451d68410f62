//! The operator's view of every role: `leader_status` read in one statement into typed rows, and
//! the aligned table that `leaderctl status` and the reference application print.
//!
//! The read is one simple-protocol query with no values in it, tagged
//! [`Statement::StatusView`], so it works through a transaction-mode pooler. Every time in a row
//! is on the database clock, and the row carries that clock's reading ([`RoleStatus::db_now`]), so
//! "expires in" and "ago" never mix the server's clock with the reader's.

use std::fmt;
use std::time::Duration;

use chrono::{DateTime, TimeDelta, Utc};
use sqlx::{PgExecutor, Row};

use crate::send::send;
use crate::{Shard, Statement, StatementError, Timings};

/// The state of a lease (a role's, or one shard's), as `leader_status.state` names it.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Hash)]
#[non_exhaustive]
pub enum LeaseState {
    /// Held by a live lease.
    Leading,
    /// Held, but the holder's lease ran out (the holder went silent).
    Expired,
    /// Unheld, before `not_before`: the cooldown a tick that did not complete set, or the floor a
    /// pause of a held role set (until that lease would have expired).
    Cooldown,
    /// Paused by an operator.
    Paused,
    /// Unheld and free to claim when due.
    Idle,
}

impl LeaseState {
    /// The view's word for it: `leading`, `expired`, `cooldown`, `paused` or `idle`.
    pub const fn as_str(self) -> &'static str {
        match self {
            LeaseState::Leading => "leading",
            LeaseState::Expired => "expired",
            LeaseState::Cooldown => "cooldown",
            LeaseState::Paused => "paused",
            LeaseState::Idle => "idle",
        }
    }

    fn parse(word: &str) -> Option<LeaseState> {
        [
            LeaseState::Leading,
            LeaseState::Expired,
            LeaseState::Cooldown,
            LeaseState::Paused,
            LeaseState::Idle,
        ]
        .into_iter()
        .find(|s| s.as_str() == word)
    }
}

impl fmt::Display for LeaseState {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.write_str(self.as_str())
    }
}

/// One row of `leader_status`.
#[derive(Debug, Clone, PartialEq, Eq)]
#[non_exhaustive]
pub struct RoleStatus {
    /// The role.
    pub role: String,
    /// Its state.
    pub state: LeaseState,
    /// The holder's id while held (also while expired).
    pub holder_id: Option<String>,
    /// The latest token issued (the holder's while held).
    pub token: i64,
    /// When the current holder was granted the lease (ACQUIRE's database clock).
    pub acquired_at: Option<DateTime<Utc>>,
    /// When the current lease runs out unless renewed.
    pub expires_at: Option<DateTime<Utc>>,
    /// When the last completed tick ended.
    pub last_tick_ended_at: Option<DateTime<Utc>>,
    /// Who ran the last completed tick.
    pub last_tick_holder: Option<String>,
    /// No ACQUIRE grants the lease before it: the end of the cooldown a tick that did not
    /// complete set, or the floor a pause of a held lease set; `None` if none was set (it may
    /// have passed).
    pub not_before: Option<DateTime<Utc>>,
    /// When the role was paused.
    pub paused_at: Option<DateTime<Utc>>,
    /// Who paused it.
    pub paused_by: Option<String>,
    /// Why, if they said.
    pub pause_reason: Option<String>,
    /// The schedule the role's last grant ran under (`every 1h`, `cron "0 2 * * *" in
    /// Europe/Berlin`); `None` before its first grant.
    pub schedule: Option<String>,
    /// For a role on a cron schedule, the latest scheduled instant completed.
    pub last_completed_instant: Option<DateTime<Utc>>,
    /// When the lease is next due by its schedule and `not_before`: a cron role's next instant,
    /// an interval role's last completed tick plus its interval (both as its last grant ran
    /// them). `None` while paused, before the first grant, and for an interval role that never
    /// completed a tick and has no `not_before` (it is due whenever a replica asks). Past while
    /// unheld: overdue.
    pub next_due_at: Option<DateTime<Utc>>,
    /// Which shard of a sharded role this row is (`shard_index`, `shard_count`); `None` for an
    /// unsharded role's one row.
    pub shard: Option<Shard>,
    /// The database clock when the row was read.
    pub db_now: DateTime<Utc>,
}

impl RoleStatus {
    /// Time left on the lease (negative once expired); `None` when unheld.
    pub fn expires_in(&self) -> Option<TimeDelta> {
        self.expires_at.map(|at| at - self.db_now)
    }

    /// How long ago the last completed tick ended; `None` if none has.
    pub fn last_tick_age(&self) -> Option<TimeDelta> {
        self.last_tick_ended_at.map(|at| self.db_now - at)
    }

    /// Time left until `not_before`; `None` when there is none or it has passed.
    pub fn not_before_in(&self) -> Option<TimeDelta> {
        self.not_before
            .map(|until| until - self.db_now)
            .filter(|left| *left > TimeDelta::zero())
    }
}

const READ: &str = "
SELECT role, state, holder_id, token, acquired_at, expires_at, last_tick_ended_at,
       last_tick_holder, not_before, paused_at, paused_by, pause_reason, schedule,
       last_completed_instant, next_due_at, shard_index, shard_count, now() AS db_now
  FROM leader_status
 ORDER BY role, shard_index
";

/// Reads every row of `leader_status` (one per role, one per shard of a sharded role), ordered by
/// role and shard, in one statement.
///
/// # Errors
///
/// [`StatementError::Timeout`] after the statement timeout, [`StatementError::Database`]
/// otherwise (a missing view included: run [`crate::check_schema_ready`] to say what is missing).
pub async fn read<'e>(
    db: impl PgExecutor<'e>,
    timings: &Timings,
) -> Result<Vec<RoleStatus>, StatementError> {
    let rows = send(
        db,
        Statement::StatusView,
        timings.statement_timeout(),
        READ.to_owned(),
    )
    .await?;
    let field = StatementError::database(Statement::StatusView);
    rows.iter()
        .map(|row| {
            let word: String = row.try_get("state").map_err(&field)?;
            let state = LeaseState::parse(&word).ok_or_else(|| {
                field(sqlx::Error::Decode(
                    format!("leader_status.state is `{word}`, which this version does not know")
                        .into(),
                ))
            })?;
            Ok(RoleStatus {
                role: row.try_get("role").map_err(&field)?,
                state,
                holder_id: row.try_get("holder_id").map_err(&field)?,
                token: row.try_get("token").map_err(&field)?,
                acquired_at: row.try_get("acquired_at").map_err(&field)?,
                expires_at: row.try_get("expires_at").map_err(&field)?,
                last_tick_ended_at: row.try_get("last_tick_ended_at").map_err(&field)?,
                last_tick_holder: row.try_get("last_tick_holder").map_err(&field)?,
                not_before: row.try_get("not_before").map_err(&field)?,
                paused_at: row.try_get("paused_at").map_err(&field)?,
                paused_by: row.try_get("paused_by").map_err(&field)?,
                pause_reason: row.try_get("pause_reason").map_err(&field)?,
                schedule: row.try_get("schedule").map_err(&field)?,
                last_completed_instant: row.try_get("last_completed_instant").map_err(&field)?,
                next_due_at: row.try_get("next_due_at").map_err(&field)?,
                shard: shard_of(
                    row.try_get("shard_index").map_err(&field)?,
                    row.try_get("shard_count").map_err(&field)?,
                ),
                db_now: row.try_get("db_now").map_err(&field)?,
            })
        })
        .collect()
}

/// The shard a row's `shard_index` and `shard_count` name; `None` for an unsharded role (a
/// count of 1) or a pair the table's CHECK would not allow.
fn shard_of(index: i32, count: i32) -> Option<Shard> {
    if count <= 1 {
        return None;
    }
    Shard::new(u32::try_from(index).ok()?, u32::try_from(count).ok()?).ok()
}

/// A span of time as the table shows it: `850ms`, `4.2s`, `3m05s`, `2h10m`, `3d04h`; negative
/// spans (an expired lease) get a leading `-`.
///
/// ```
/// use chrono::TimeDelta;
/// use leader_core::status::human;
///
/// assert_eq!(human(TimeDelta::milliseconds(4_200)), "4.2s");
/// assert_eq!(human(TimeDelta::seconds(185)), "3m05s");
/// assert_eq!(human(TimeDelta::milliseconds(-300)), "-300ms");
/// ```
pub fn human(span: TimeDelta) -> String {
    let sign = if span < TimeDelta::zero() { "-" } else { "" };
    let d = span.abs().to_std().unwrap_or(Duration::ZERO);
    let s = d.as_secs();
    let body = match s {
        _ if d < Duration::from_secs(1) => format!("{}ms", d.as_millis()),
        0..60 => format!("{:.1}s", d.as_secs_f64()),
        60..3_600 => format!("{}m{:02}s", s / 60, s % 60),
        3_600..86_400 => format!("{}h{:02}m", s / 3_600, s % 3_600 / 60),
        _ => format!("{}d{:02}h", s / 86_400, s % 86_400 / 3_600),
    };
    format!("{sign}{body}")
}

type Cell = Box<dyn Fn(&RoleStatus) -> String>;

/// The aligned table of [`read`]'s rows: role, state, holder id, token, expires in, last
/// completed tick (time, UTC, and age), time left until `not_before`, and who paused it and why, `-` where there is
/// nothing; plus any columns added with [`Table::column`].
///
/// A sharded role is one line (its shard count and how many shards are in each state, how many
/// replicas lead them, its stalest shard's last tick, how many shards are paused) with one
/// indented line per shard under it (`  3/8`); the added columns are filled on the role's line
/// from its stalest shard's row (one that never completed a tick, else the one whose last tick
/// ended first: the row the line's last tick is from) and left blank on the shards' lines.
///
/// ```no_run
/// # async fn show(pool: &sqlx::PgPool) -> Result<(), leader_core::StatementError> {
/// use leader_core::status::{self, Table};
///
/// let rows = status::read(pool, &leader_core::Timings::DEFAULT).await?;
/// print!("{}", Table::new(&rows).column("ticks", |_| "7".into()));
/// # Ok(()) }
/// ```
pub struct Table<'a> {
    rows: &'a [RoleStatus],
    extra: Vec<(String, Cell)>,
}

impl fmt::Debug for Table<'_> {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.debug_struct("Table")
            .field("rows", &self.rows)
            .field(
                "extra_columns",
                &self.extra.iter().map(|(h, _)| h).collect::<Vec<_>>(),
            )
            .finish()
    }
}

impl<'a> Table<'a> {
    /// The table of `rows`.
    pub fn new(rows: &'a [RoleStatus]) -> Table<'a> {
        Table {
            rows,
            extra: Vec::new(),
        }
    }

    /// Adds a column after the standard ones, headed `header`, its cells from `cell`.
    pub fn column(
        mut self,
        header: impl Into<String>,
        cell: impl Fn(&RoleStatus) -> String + 'static,
    ) -> Table<'a> {
        self.extra.push((header.into(), Box::new(cell)));
        self
    }

    fn cells(row: &RoleStatus) -> [String; 9] {
        let or_dash = |v: Option<String>| v.unwrap_or_else(|| "-".to_owned());
        [
            row.role.clone(),
            row.state.to_string(),
            or_dash(row.holder_id.clone()),
            row.token.to_string(),
            or_dash(row.expires_in().map(human)),
            row.last_tick_ended_at.map_or_else(
                || "never".to_owned(),
                |at| at.format("%H:%M:%SZ").to_string(),
            ),
            or_dash(row.last_tick_age().map(human)),
            or_dash(row.not_before_in().map(human)),
            or_dash(row.paused_by.as_ref().map(|by| match &row.pause_reason {
                Some(why) => format!("{by}: {why}"),
                None => by.clone(),
            })),
        ]
    }
}

impl Table<'_> {
    /// The role line of a sharded role, from its shards' rows: the count and the shards in each
    /// state, the number of replicas leading them, the stalest shard's last tick, the paused
    /// shards.
    fn role_cells(shards: &[RoleStatus]) -> [String; 9] {
        let first = &shards[0];
        let count = first.shard.map_or(shards.len() as u32, Shard::count);
        let mut states: Vec<(LeaseState, usize)> = Vec::new();
        for row in shards {
            match states.iter_mut().find(|(state, _)| *state == row.state) {
                Some((_, n)) => *n += 1,
                None => states.push((row.state, 1)),
            }
        }
        let states: Vec<String> = states
            .iter()
            .map(|(state, n)| format!("{n} {state}"))
            .collect();
        let mut leaders: Vec<&str> = shards
            .iter()
            .filter(|row| row.state == LeaseState::Leading)
            .filter_map(|row| row.holder_id.as_deref())
            .collect();
        leaders.sort_unstable();
        leaders.dedup();
        let stalest = if shards.iter().all(|row| row.last_tick_ended_at.is_some()) {
            shards.iter().filter_map(|row| row.last_tick_ended_at).min()
        } else {
            None
        };
        let paused = shards.iter().filter(|row| row.paused_at.is_some()).count();
        [
            first.role.clone(),
            format!("{count} shards: {}", states.join(", ")),
            match leaders.len() {
                0 => "-".to_owned(),
                1 => leaders[0].to_owned(),
                n => format!("{n} replicas"),
            },
            "-".to_owned(),
            "-".to_owned(),
            stalest.map_or_else(
                || "never".to_owned(),
                |at| at.format("%H:%M:%SZ").to_string(),
            ),
            stalest.map_or_else(|| "-".to_owned(), |at| human(first.db_now - at)),
            "-".to_owned(),
            if paused == 0 {
                "-".to_owned()
            } else {
                format!("{paused} of {count} shards")
            },
        ]
    }
}

const HEADERS: [&str; 9] = [
    "role",
    "state",
    "holder_id",
    "token",
    "expires_in",
    "last_tick",
    "age",
    "not_before_in",
    "paused",
];

impl fmt::Display for Table<'_> {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        let header: Vec<String> = HEADERS
            .iter()
            .map(|h| (*h).to_owned())
            .chain(self.extra.iter().map(|(h, _)| h.clone()))
            .collect();
        let mut lines = vec![header];
        let mut rest = self.rows;
        while let Some(first) = rest.first() {
            let group = rest
                .iter()
                .take_while(|row| row.role == first.role && row.shard.is_some())
                .count();
            if group == 0 {
                let mut line: Vec<String> = Table::cells(first).into();
                line.extend(self.extra.iter().map(|(_, cell)| cell(first)));
                lines.push(line);
                rest = &rest[1..];
                continue;
            }
            let (shards, after) = rest.split_at(group);
            let mut line: Vec<String> = Table::role_cells(shards).into();
            let stalest = shards
                .iter()
                .min_by_key(|row| row.last_tick_ended_at)
                .unwrap_or(first);
            line.extend(self.extra.iter().map(|(_, cell)| cell(stalest)));
            lines.push(line);
            for row in shards {
                let mut line: Vec<String> = Table::cells(row).into();
                if let Some(shard) = row.shard {
                    line[0] = format!("  {shard}");
                }
                line.extend(self.extra.iter().map(|_| String::new()));
                lines.push(line);
            }
            rest = after;
        }
        let widths: Vec<usize> = (0..lines[0].len())
            .map(|i| {
                lines
                    .iter()
                    .map(|l| l[i].chars().count())
                    .max()
                    .unwrap_or(0)
            })
            .collect();
        for line in &lines {
            let mut text = String::new();
            for (i, cell) in line.iter().enumerate() {
                text.push_str(&format!("{cell:<width$}  ", width = widths[i]));
            }
            writeln!(f, "{}", text.trim_end())?;
        }
        Ok(())
    }
}

#[cfg(test)]
mod table_tests {
    use super::{LeaseState, RoleStatus, Table};

    #[test]
    fn a_leading_role_with_an_added_column() {
        let now = chrono::DateTime::from_timestamp(1_796_212_948, 0).unwrap();
        let row = RoleStatus {
            role: "billing".into(),
            state: LeaseState::Leading,
            holder_id: Some("replica-1".into()),
            token: 1_796_212_948_103,
            acquired_at: Some(now),
            expires_at: Some(now + chrono::TimeDelta::seconds(8)),
            last_tick_ended_at: None,
            last_tick_holder: None,
            not_before: None,
            paused_at: None,
            paused_by: None,
            pause_reason: None,
            schedule: None,
            last_completed_instant: None,
            next_due_at: None,
            shard: None,
            db_now: now,
        };
        let rows = [row];
        let table = Table::new(&rows)
            .column("ticks", |_| "7".into())
            .to_string();
        assert_eq!(
            table,
            "role     state    holder_id  token          expires_in  last_tick  age  not_before_in  paused  ticks\n\
             billing  leading  replica-1  1796212948103  8.0s        never      -    -              -       7\n"
        );
    }

    #[test]
    fn a_sharded_role_is_one_line_with_its_shards_under_it() {
        let now = chrono::DateTime::from_timestamp(1_796_212_948, 0).unwrap();
        let row = |shard: u32, state: LeaseState, leader: Option<&str>| RoleStatus {
            role: "webhook_delivery".into(),
            state,
            holder_id: leader.map(str::to_owned),
            token: 1_796_212_948_000 + i64::from(shard),
            acquired_at: None,
            expires_at: leader.map(|_| now + chrono::TimeDelta::seconds(2)),
            last_tick_ended_at: Some(now - chrono::TimeDelta::seconds(i64::from(shard) + 1)),
            last_tick_holder: None,
            not_before: None,
            paused_at: (state == LeaseState::Paused).then_some(now),
            paused_by: (state == LeaseState::Paused).then(|| "ops".to_owned()),
            pause_reason: None,
            schedule: None,
            last_completed_instant: None,
            next_due_at: None,
            shard: Some(crate::Shard::new(shard, 3).unwrap()),
            db_now: now,
        };
        let rows = [
            row(0, LeaseState::Leading, Some("replica-1")),
            row(1, LeaseState::Leading, Some("replica-2")),
            row(2, LeaseState::Paused, None),
        ];
        let table = Table::new(&rows)
            .column("shard", |row| {
                row.shard.map_or(0, crate::Shard::index).to_string()
            })
            .to_string();
        assert_eq!(
            table,
            "role              state                          holder_id   token          expires_in  last_tick  age   not_before_in  paused         shard\n\
             webhook_delivery  3 shards: 2 leading, 1 paused  2 replicas  -              -           12:02:25Z  3.0s  -              1 of 3 shards  2\n\
             \x20 0/3             leading                        replica-1   1796212948000  2.0s        12:02:27Z  1.0s  -              -\n\
             \x20 1/3             leading                        replica-2   1796212948001  2.0s        12:02:26Z  2.0s  -              -\n\
             \x20 2/3             paused                         -           1796212948002  -           12:02:25Z  3.0s  -              ops\n"
        );
    }
}
