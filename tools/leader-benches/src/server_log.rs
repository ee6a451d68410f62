//! Counting the statements that reach the server, from its log, by the name each carries.

use std::collections::BTreeMap;
use std::path::Path;
use std::time::{Duration, Instant};

use leader_core::Statement;
use sqlx::PgConnection;

use crate::Res;

/// What one counted statement was.
#[derive(Debug, Clone, Copy, PartialEq, Eq, PartialOrd, Ord)]
pub enum Kind {
    /// The runtime's ACQUIRE.
    Acquire,
    /// The runtime's RENEW.
    Renew,
    /// The runtime's RELEASE.
    Release,
    /// The metrics' status read.
    StatusRead,
    /// An anchor's or a watcher's statement (`take_over_when_dead`).
    Anchor,
    /// Anything else: the jobs' own statements, the bench's.
    Other,
}

impl Kind {
    /// Every kind, in report order.
    pub const ALL: [Kind; 6] = [
        Kind::Acquire,
        Kind::Renew,
        Kind::Release,
        Kind::StatusRead,
        Kind::Anchor,
        Kind::Other,
    ];

    /// The kind's name in reports.
    pub fn name(self) -> &'static str {
        match self {
            Kind::Acquire => "ACQUIRE",
            Kind::Renew => "RENEW",
            Kind::Release => "RELEASE",
            Kind::StatusRead => "status read (metrics)",
            Kind::Anchor => "anchor and watcher",
            Kind::Other => "other",
        }
    }

    /// The kind of a logged statement, by the name in its leading comment
    /// ([`Statement::of_sql`]), never by its SQL text.
    pub fn of(sql: &str) -> Kind {
        match Statement::of_sql(sql) {
            Some(Statement::Acquire) => Kind::Acquire,
            Some(Statement::Renew) => Kind::Renew,
            Some(Statement::Release) => Kind::Release,
            Some(Statement::StatusRead) => Kind::StatusRead,
            Some(Statement::Anchor) => Kind::Anchor,
            Some(
                Statement::Pause
                | Statement::Unpause
                | Statement::ClearCooldown
                | Statement::StatusView,
            )
            | Some(_)
            | None => Kind::Other,
        }
    }
}

/// Splits a stderr-format server log into entries: a continuation line of a multi-line message
/// starts with a tab.
pub fn log_entries(text: &str) -> Vec<String> {
    let mut entries: Vec<String> = Vec::new();
    for line in text.lines() {
        match entries.last_mut() {
            Some(last) if line.starts_with('\t') => {
                last.push('\n');
                last.push_str(line);
            }
            _ => entries.push(line.to_owned()),
        }
    }
    entries
}

/// The SQL of a statement-log entry: `LOG:  statement: ...` (simple query protocol) or
/// `LOG:  execute <name>: ...` (extended protocol).
pub fn logged_sql(entry: &str) -> Option<&str> {
    const SIMPLE: &str = "LOG:  statement: ";
    const EXTENDED: &str = "LOG:  execute ";
    if let Some(i) = entry.find(SIMPLE) {
        return Some(&entry[i + SIMPLE.len()..]);
    }
    let i = entry.find(EXTENDED)?;
    let rest = &entry[i + EXTENDED.len()..];
    rest.find(": ").map(|j| &rest[j + 2..])
}

/// The holder id inlined into an ACQUIRE (`holder_id = convert_from(decode('<hex>', ..`).
pub fn acquire_holder(sql: &str) -> Option<String> {
    const MARK: &str = "holder_id = convert_from(decode('";
    let i = sql.find(MARK)? + MARK.len();
    let hex = &sql[i..i + sql[i..].find('\'')?];
    let bytes: Option<Vec<u8>> = (0..hex.len())
        .step_by(2)
        .map(|k| u8::from_str_radix(hex.get(k..k + 2)?, 16).ok())
        .collect();
    String::from_utf8(bytes?).ok()
}

/// The statements counted in one window.
#[derive(Debug, Default)]
pub struct Window {
    /// How long the window was open.
    pub seconds: f64,
    /// The statements counted, by kind.
    pub by_kind: BTreeMap<Kind, usize>,
    /// The ACQUIREs counted, by the holder id they carry.
    pub acquires_by_holder: BTreeMap<String, usize>,
    /// The first few statements of kind [`Kind::Other`], on one line each.
    pub other_samples: Vec<String>,
}

impl Window {
    /// Every statement counted.
    pub fn total(&self) -> usize {
        self.by_kind.values().sum()
    }

    /// Statements a second.
    pub fn rate(&self) -> f64 {
        self.total() as f64 / self.seconds
    }

    /// Statements of `kind` a second.
    pub fn kind_rate(&self, kind: Kind) -> f64 {
        self.by_kind.get(&kind).copied().unwrap_or(0) as f64 / self.seconds
    }
}

/// Sends a start marker, waits `length`, sends an end marker, and counts the statements the
/// server logged between the two (the markers excluded).
pub async fn count_window(
    marker: &mut PgConnection,
    log: &Path,
    label: &str,
    length: Duration,
) -> Res<Window> {
    let start_sql = format!("SELECT 'bench-window-start:{label}'");
    let end_sql = format!("SELECT 'bench-window-end:{label}'");
    sqlx::raw_sql(sqlx::AssertSqlSafe(start_sql.clone()))
        .execute(&mut *marker)
        .await?;
    let started = Instant::now();
    tokio::time::sleep(length).await;
    sqlx::raw_sql(sqlx::AssertSqlSafe(end_sql.clone()))
        .execute(&mut *marker)
        .await?;
    let seconds = started.elapsed().as_secs_f64();

    let text = std::fs::read_to_string(log)?;
    let entries = log_entries(&text);
    let is = |entry: &String, sql: &str| logged_sql(entry).is_some_and(|s| s.trim() == sql);
    let begin = entries
        .iter()
        .position(|e| is(e, &start_sql))
        .ok_or_else(|| format!("the start marker of window {label} is not in the server log"))?;
    let end = begin
        + entries[begin..]
            .iter()
            .position(|e| is(e, &end_sql))
            .ok_or_else(|| format!("the end marker of window {label} is not in the server log"))?;
    let mut window = Window {
        seconds,
        ..Window::default()
    };
    for entry in &entries[begin + 1..end] {
        let Some(sql) = logged_sql(entry) else {
            continue;
        };
        let kind = Kind::of(sql);
        *window.by_kind.entry(kind).or_default() += 1;
        if kind == Kind::Acquire
            && let Some(holder) = acquire_holder(sql)
        {
            *window.acquires_by_holder.entry(holder).or_default() += 1;
        }
        if kind == Kind::Other && window.other_samples.len() < 5 {
            let one_line: String = sql.split_whitespace().collect::<Vec<_>>().join(" ");
            window
                .other_samples
                .push(one_line.chars().take(100).collect());
        }
    }
    Ok(window)
}

/// The database a statement-counting bench runs on: the connection to the maintenance database
/// (kept for the run), the options of the bench's database, and the server's version.
pub type LoggedDatabase = (PgConnection, sqlx::postgres::PgConnectOptions, String);

/// Creates the database `name` on `cluster` with the framework's migrations and then `setup`'s
/// statements, and from then on makes every new connection to it log each statement it runs
/// (`log_statement = 'all'`), for [`count_window`].
pub async fn create_logged_database(
    cluster: &leader_testkit::Cluster,
    name: &str,
    setup: &[&'static str],
) -> Res<LoggedDatabase> {
    use sqlx::ConnectOptions;
    let server: sqlx::postgres::PgConnectOptions = cluster.url().parse()?;
    let mut maintenance = server.connect().await?;
    sqlx::raw_sql(sqlx::AssertSqlSafe(format!("CREATE DATABASE {name}")))
        .execute(&mut maintenance)
        .await?;
    let options = server.clone().database(name);
    {
        let mut connection = options.connect().await?;
        leader_core::schema::MIGRATOR.run(&mut connection).await?;
        for sql in setup {
            sqlx::raw_sql(*sql).execute(&mut connection).await?;
        }
    }
    sqlx::raw_sql(sqlx::AssertSqlSafe(format!(
        "ALTER DATABASE {name} SET log_statement = 'all'"
    )))
    .execute(&mut maintenance)
    .await?;
    let version: String = sqlx::query_scalar("SELECT version()")
        .fetch_one(&mut maintenance)
        .await?;
    Ok((maintenance, options, version))
}
