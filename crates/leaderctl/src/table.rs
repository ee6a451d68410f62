//! The presentation of `leader_status` that `leaderctl status` prints: the aligned table of
//! [`leader_core::status::read`]'s rows ([`Table`]) and its spans of time ([`human`]), for tools that want the
//! same table (the reference application prints it with its own columns added).

use std::fmt;
use std::time::Duration;

use chrono::TimeDelta;
use leader_core::Shard;
use leader_core::status::{LeaseState, RoleStatus};

/// A span of time as the table shows it: `850ms`, `4.2s`, `3m05s`, `2h10m`, `3d04h`; negative
/// spans (an expired lease) get a leading `-`.
///
/// ```
/// use chrono::TimeDelta;
/// use leaderctl::table::human;
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

/// The aligned table of [`leader_core::status::read`]'s rows: role, state, holder id, token, expires in, last
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
/// use leader_core::status;
/// use leaderctl::table::Table;
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
mod tests {
    use chrono::TimeDelta;
    use leader_core::Shard;
    use leader_core::status::{LeaseState, RoleStatus};

    use super::{Table, human};

    #[test]
    fn spans_read_in_their_largest_units() {
        let cases = [
            (TimeDelta::milliseconds(850), "850ms"),
            (TimeDelta::milliseconds(4_200), "4.2s"),
            (TimeDelta::seconds(185), "3m05s"),
            (TimeDelta::minutes(130), "2h10m"),
            (TimeDelta::hours(76), "3d04h"),
            (TimeDelta::milliseconds(-300), "-300ms"),
        ];
        for (span, shown) in cases {
            assert_eq!(human(span), shown, "{span:?}");
        }
    }

    #[test]
    fn a_leading_role_with_an_added_column() {
        let now = chrono::DateTime::from_timestamp(1_796_212_948, 0).unwrap();
        let mut row = RoleStatus::forge("billing", LeaseState::Leading, 1_796_212_948_103, now);
        row.holder_id = Some("replica-1".into());
        row.acquired_at = Some(now);
        row.expires_at = Some(now + TimeDelta::seconds(8));
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
        let row = |shard: u32, state: LeaseState, leader: Option<&str>| {
            let token = 1_796_212_948_000 + i64::from(shard);
            let mut row = RoleStatus::forge("webhook_delivery", state, token, now);
            row.holder_id = leader.map(str::to_owned);
            row.expires_at = leader.map(|_| now + TimeDelta::seconds(2));
            row.last_tick_ended_at = Some(now - TimeDelta::seconds(i64::from(shard) + 1));
            row.paused_at = (state == LeaseState::Paused).then_some(now);
            row.paused_by = (state == LeaseState::Paused).then(|| "ops".to_owned());
            row.shard = Some(Shard::new(shard, 3).unwrap());
            row
        };
        let rows = [
            row(0, LeaseState::Leading, Some("replica-1")),
            row(1, LeaseState::Leading, Some("replica-2")),
            row(2, LeaseState::Paused, None),
        ];
        let table = Table::new(&rows)
            .column("shard", |row| row.shard.map_or(0, Shard::index).to_string())
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
