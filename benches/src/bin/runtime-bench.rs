//! `runtime-bench [--write PATH]`: measures the leader runtime on a private PostgreSQL cluster and
//! prints a Markdown report; with `--write` it also writes the report to PATH.
//!
//! 1. Idle load. One role, TTL 3 s (`Timings::scaled_to_ttl`), four runtimes in this process
//!    (each with its own pool): one leads a tick that never ends, three follow. Every statement
//!    that reaches the server in a 20 s window is counted from the server's log
//!    (`log_statement = 'all'` on the benchmark database), between two marker statements. In the
//!    same run, a naive baseline: four replicas calling ACQUIRE every 250 ms, the holder also
//!    renewing every heartbeat, counted the same way.
//! 2. Takeover. Three replica processes (this binary re-executed as `runtime-bench replica ..`)
//!    on one role; once one leads, it is killed with SIGKILL at a random point of its renew
//!    cycle. The kill instant (`clock_timestamp()` right after the kill) and the instant the
//!    survivor's job starts (its job inserts `clock_timestamp()`) are both on the database clock.
//!
//! It always starts its own throwaway cluster (`DATABASE_URL` is ignored): it reads the server's
//! log file. Every connection is direct: no pooler. No server or replica process outlives it:
//! the cluster is stopped on exit (and by the testkit's watchdog otherwise), replicas are killed
//! by the parent and also exit when their stdin (a pipe from the parent) closes.
//!
//! When PATH already holds a report, only the text between the generated-report markers is
//! replaced, so hand-written notes outside them survive a re-run.

use std::collections::BTreeMap;
use std::fmt::Write as _;
use std::io::Write as _;
use std::path::{Path, PathBuf};
use std::process::{ExitCode, Stdio};
use std::time::{Duration, Instant};

use chrono::{DateTime, Utc};
use leader_benches::report::{self, progress};
use leader_benches::stats::{max, median, min};
use leader_benches::{Res, machine};
use leader_core::lease::{self, Acquired, Renewed};
use leader_core::{Fence, Role, Statement, Timings};
use leader_runtime::{JobError, Runtime, TickContext};
use leader_testkit::Cluster;
use rand::Rng;
use sqlx::postgres::{PgConnectOptions, PgPoolOptions};
use sqlx::{ConnectOptions, PgConnection, PgPool};
use tokio::io::{AsyncBufReadExt, BufReader};
use tokio::process::{Child, ChildStdin, Command};
use tokio_util::sync::CancellationToken;

const NAME: &str = "runtime-bench";
const COMMAND: &str = "cargo run --release -p leader-benches --bin runtime-bench -- --write docs/benchmarks/runtime.md";

const IDLE: Role = Role::from_static("idle");
const NAIVE: Role = Role::from_static("naive");
const TAKEOVER: Role = Role::from_static("takeover");
const ROLES_UP: &str = include_str!("../../migrations/runtime-roles.up.sql");
const DATABASE: &str = "runtime_bench";

const TTL: Duration = Duration::from_secs(3);
/// The roles' tick interval. Irrelevant here: no tick ever completes.
const EVERY: Duration = Duration::from_secs(1);

// Part 1.
const REPLICAS: usize = 4;
const SETTLE: Duration = Duration::from_secs(4);
const WINDOW: Duration = Duration::from_secs(20);
const NAIVE_POLL: Duration = Duration::from_millis(250);
const TARGET_RATE: f64 = 5.0;
const ISSUE_NAIVE_RATE: f64 = 25.0;

// Part 2.
const TAKEOVER_RUNS: usize = 12;
const TAKEOVER_REPLICAS: usize = 3;
/// How long the leader runs before the random part of the kill delay starts: enough for the
/// followers to be polling and for the leader to have renewed at least once.
const KILL_BASE: Duration = Duration::from_millis(1_200);
const TARGET_TAKEOVER: Duration = Duration::from_secs(3);

const TICKS_TABLE: &str = "
CREATE TABLE runtime_ticks (
    id         bigserial   PRIMARY KEY,
    run        integer     NOT NULL,
    holder     text        NOT NULL,
    token      bigint      NOT NULL,
    started_at timestamptz NOT NULL
)";

fn timings() -> Timings {
    Timings::scaled_to_ttl(TTL).expect("TTL 3 s scales to valid timings")
}

fn secs_between(from: DateTime<Utc>, to: DateTime<Utc>) -> f64 {
    (to - from).num_microseconds().unwrap_or(i64::MAX) as f64 / 1e6
}

// ---------------------------------------------------------------------------------------------
// The server log.

/// What one counted statement was.
#[derive(Debug, Clone, Copy, PartialEq, Eq, PartialOrd, Ord)]
enum Kind {
    Acquire,
    Renew,
    Release,
    StatusRead,
    Other,
}

impl Kind {
    const ALL: [Kind; 5] = [
        Kind::Acquire,
        Kind::Renew,
        Kind::Release,
        Kind::StatusRead,
        Kind::Other,
    ];

    fn name(self) -> &'static str {
        match self {
            Kind::Acquire => "ACQUIRE",
            Kind::Renew => "RENEW",
            Kind::Release => "RELEASE",
            Kind::StatusRead => "status read (metrics)",
            Kind::Other => "other",
        }
    }

    /// The kind of a logged statement, by the name in its leading comment
    /// ([`Statement::of_sql`]), never by its SQL text.
    fn of(sql: &str) -> Kind {
        match Statement::of_sql(sql) {
            Some(Statement::Acquire) => Kind::Acquire,
            Some(Statement::Renew) => Kind::Renew,
            Some(Statement::Release) => Kind::Release,
            Some(Statement::StatusRead) => Kind::StatusRead,
            Some(Statement::Pause | Statement::Unpause) | None => Kind::Other,
        }
    }
}

/// Splits a stderr-format server log into entries: a continuation line of a multi-line message
/// starts with a tab.
fn log_entries(text: &str) -> Vec<String> {
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
fn logged_sql(entry: &str) -> Option<&str> {
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
fn acquire_holder(sql: &str) -> Option<String> {
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
struct Window {
    seconds: f64,
    by_kind: BTreeMap<Kind, usize>,
    acquires_by_holder: BTreeMap<String, usize>,
    other_samples: Vec<String>,
}

impl Window {
    fn total(&self) -> usize {
        self.by_kind.values().sum()
    }

    fn rate(&self) -> f64 {
        self.total() as f64 / self.seconds
    }

    fn kind_rate(&self, kind: Kind) -> f64 {
        self.by_kind.get(&kind).copied().unwrap_or(0) as f64 / self.seconds
    }
}

/// Sends a start marker, waits [`WINDOW`], sends an end marker, and counts the statements the
/// server logged between the two (the markers excluded).
async fn count_window(marker: &mut PgConnection, log: &Path, label: &str) -> Res<Window> {
    let start_sql = format!("SELECT 'bench-window-start:{label}'");
    let end_sql = format!("SELECT 'bench-window-end:{label}'");
    sqlx::raw_sql(sqlx::AssertSqlSafe(start_sql.clone()))
        .execute(&mut *marker)
        .await?;
    let started = Instant::now();
    tokio::time::sleep(WINDOW).await;
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

// ---------------------------------------------------------------------------------------------
// Part 1: idle load.

/// The lease row of `role`: holder and token while it is held.
async fn holder_of(admin: &mut PgConnection, role: Role) -> Res<Option<(String, i64)>> {
    let row: Option<(String, i64)> = sqlx::query_as(
        "SELECT holder_id, holder_token FROM leader_leases
          WHERE role = $1 AND holder_id IS NOT NULL AND expires_at > now()",
    )
    .bind(role)
    .fetch_optional(&mut *admin)
    .await?;
    Ok(row)
}

async fn wait_for_holder(
    admin: &mut PgConnection,
    role: Role,
    within: Duration,
) -> Res<(String, i64)> {
    let deadline = Instant::now() + within;
    loop {
        if let Some(held) = holder_of(admin, role).await? {
            return Ok(held);
        }
        if Instant::now() > deadline {
            return Err(format!("nobody leads {role} after {within:?}").into());
        }
        tokio::time::sleep(Duration::from_millis(50)).await;
    }
}

async fn small_pool(options: &PgConnectOptions) -> Res<PgPool> {
    Ok(PgPoolOptions::new()
        .max_connections(2)
        .connect_with(options.clone())
        .await?)
}

struct Steady {
    window: Window,
    /// The holder and token before and after the window.
    before: (String, i64),
    after: Option<(String, i64)>,
}

impl Steady {
    fn one_leader_throughout(&self) -> bool {
        self.after.as_ref() == Some(&self.before)
    }
}

async fn idle_runtime(
    options: &PgConnectOptions,
    admin: &mut PgConnection,
    marker: &mut PgConnection,
    log: &Path,
) -> Res<Steady> {
    let mut runs = Vec::with_capacity(REPLICAS);
    let shutdown = CancellationToken::new();
    for i in 0..REPLICAS {
        let runtime = Runtime::builder(small_pool(options).await?)
            .timings(timings())
            .holder_id(format!("idle-{i}"))
            .role(IDLE, EVERY, |tick: TickContext| async move {
                // One long tick: the leader only renews until it is cancelled.
                tick.cancelled().await;
                Ok::<(), JobError>(())
            })
            .build()?;
        runs.push(tokio::spawn(runtime.run(shutdown.clone())));
    }
    let before = wait_for_holder(admin, IDLE, Duration::from_secs(10)).await?;
    tokio::time::sleep(SETTLE).await;
    let window = count_window(marker, log, "runtime").await?;
    let after = holder_of(admin, IDLE).await?;
    shutdown.cancel();
    for run in runs {
        tokio::time::timeout(Duration::from_secs(15), run).await???;
    }
    Ok(Steady {
        window,
        before,
        after,
    })
}

/// A naive replica: ACQUIRE every 250 ms whatever happens; once granted, also RENEW every
/// heartbeat.
async fn naive_replica(pool: PgPool, holder: String, stop: CancellationToken) -> usize {
    let t = timings();
    let mut errors = 0;
    // Out of step with the other replicas.
    let offset = rand::rng().random_range(Duration::ZERO..NAIVE_POLL);
    tokio::select! {
        () = tokio::time::sleep(offset) => {}
        () = stop.cancelled() => return errors,
    }
    let mut poll = tokio::time::interval(NAIVE_POLL);
    poll.set_missed_tick_behavior(tokio::time::MissedTickBehavior::Delay);
    let mut renew = tokio::time::interval(t.heartbeat());
    renew.set_missed_tick_behavior(tokio::time::MissedTickBehavior::Delay);
    let mut held: Option<Fence> = None;
    loop {
        tokio::select! {
            () = stop.cancelled() => break,
            _ = poll.tick() => match lease::acquire(&pool, NAIVE, &holder, EVERY, &t).await {
                Ok(Acquired::Granted(grant)) => {
                    held = Some(grant.fence);
                    renew.reset();
                }
                Ok(Acquired::Refused(_)) => {}
                Err(_) => errors += 1,
            },
            _ = renew.tick(), if held.is_some() => {
                let fence = held.expect("guarded by the branch condition");
                match lease::renew(&pool, fence, &t).await {
                    Ok(Renewed::Extended { .. }) => {}
                    Ok(Renewed::Lost(_)) => held = None,
                    Err(_) => errors += 1,
                }
            }
        }
    }
    pool.close().await;
    errors
}

async fn idle_naive(
    options: &PgConnectOptions,
    admin: &mut PgConnection,
    marker: &mut PgConnection,
    log: &Path,
) -> Res<(Steady, usize)> {
    let stop = CancellationToken::new();
    let mut tasks = Vec::with_capacity(REPLICAS);
    for i in 0..REPLICAS {
        let pool = small_pool(options).await?;
        tasks.push(tokio::spawn(naive_replica(
            pool,
            format!("naive-{i}"),
            stop.clone(),
        )));
    }
    let before = wait_for_holder(admin, NAIVE, Duration::from_secs(10)).await?;
    tokio::time::sleep(SETTLE).await;
    let window = count_window(marker, log, "naive").await?;
    let after = holder_of(admin, NAIVE).await?;
    stop.cancel();
    let mut errors = 0;
    for task in tasks {
        errors += task.await?;
    }
    Ok((
        Steady {
            window,
            before,
            after,
        },
        errors,
    ))
}

// ---------------------------------------------------------------------------------------------
// Part 2: takeover after SIGKILL.

/// One replica process, killed with SIGKILL when dropped.
struct Replica {
    holder: String,
    child: Child,
    /// Held open: the replica exits when it closes.
    _stdin: ChildStdin,
}

async fn spawn_replica(exe: &Path, url: &str, holder: &str, run: usize) -> Res<Replica> {
    let mut child = Command::new(exe)
        .args(["replica", url, holder, &run.to_string()])
        .stdin(Stdio::piped())
        .stdout(Stdio::piped())
        .stderr(Stdio::inherit())
        .kill_on_drop(true)
        .spawn()?;
    let stdin = child.stdin.take().ok_or("no stdin pipe")?;
    let stdout = child.stdout.take().ok_or("no stdout pipe")?;
    let mut lines = BufReader::new(stdout).lines();
    let ready = tokio::time::timeout(Duration::from_secs(30), lines.next_line()).await;
    match ready {
        Ok(Ok(Some(line))) if line == "ready" => Ok(Replica {
            holder: holder.to_owned(),
            child,
            _stdin: stdin,
        }),
        other => {
            let _ = child.kill().await;
            Err(format!("replica {holder} did not start: {other:?}").into())
        }
    }
}

#[derive(Debug)]
struct TakeoverRun {
    killed: String,
    /// Kill instant minus the last RENEW (or the ACQUIRE), database clock.
    since_renew: f64,
    /// The killed leader's lease expiry minus the kill instant.
    remaining: f64,
    /// The survivor's job start minus the kill instant.
    takeover: f64,
    successor: String,
    /// The survivor's job started no earlier than the killed leader's lease expiry.
    after_expiry: bool,
}

type TickRow = (String, i64, DateTime<Utc>);

async fn first_tick(
    admin: &mut PgConnection,
    run: usize,
    above_token: i64,
    within: Duration,
) -> Res<Option<TickRow>> {
    let deadline = Instant::now() + within;
    loop {
        let row: Option<TickRow> = sqlx::query_as(
            "SELECT holder, token, started_at FROM runtime_ticks
              WHERE run = $1 AND token > $2 ORDER BY started_at LIMIT 1",
        )
        .bind(run as i32)
        .bind(above_token)
        .fetch_optional(&mut *admin)
        .await?;
        if row.is_some() || Instant::now() > deadline {
            return Ok(row);
        }
        tokio::time::sleep(Duration::from_millis(20)).await;
    }
}

async fn takeover_run(
    exe: &Path,
    url: &str,
    admin: &mut PgConnection,
    run: usize,
) -> Res<TakeoverRun> {
    // A clean row: no holder, no cooldown (the previous run's replicas were killed holding it).
    sqlx::query(
        "UPDATE leader_leases SET holder_id = NULL, acquired_at = NULL, expires_at = NULL,
                not_before = NULL, last_tick_ended_at = NULL
          WHERE role = $1",
    )
    .bind(TAKEOVER)
    .execute(&mut *admin)
    .await?;
    let mut replicas = Vec::with_capacity(TAKEOVER_REPLICAS);
    for i in 0..TAKEOVER_REPLICAS {
        replicas.push(spawn_replica(exe, url, &format!("r{run}-{i}"), run).await?);
    }
    let result = takeover_drill(admin, run, &mut replicas).await;
    for replica in &mut replicas {
        let _ = replica.child.kill().await;
    }
    result
}

async fn takeover_drill(
    admin: &mut PgConnection,
    run: usize,
    replicas: &mut [Replica],
) -> Res<TakeoverRun> {
    let (leader, token, _) = first_tick(admin, run, i64::MIN, Duration::from_secs(15))
        .await?
        .ok_or("no replica started a tick")?;
    let delay = KILL_BASE + rand::rng().random_range(Duration::ZERO..timings().heartbeat());
    tokio::time::sleep(delay).await;
    let victim = replicas
        .iter_mut()
        .find(|r| r.holder == leader)
        .ok_or_else(|| format!("the leader {leader} is not one of this run's replicas"))?;
    victim.child.kill().await?;
    let (killed_at, expires_at, held_token, held_by): (
        DateTime<Utc>,
        Option<DateTime<Utc>>,
        i64,
        Option<String>,
    ) = sqlx::query_as(
        "SELECT clock_timestamp(), expires_at, holder_token, holder_id
           FROM leader_leases WHERE role = $1",
    )
    .bind(TAKEOVER)
    .fetch_one(&mut *admin)
    .await?;
    if held_token != token || held_by.as_deref() != Some(leader.as_str()) {
        return Err(format!(
            "run {run}: at the kill the lease was {held_by:?}/{held_token}, not {leader}/{token}"
        )
        .into());
    }
    let expires_at = expires_at.ok_or("a held lease without expiry")?;
    let (successor, _, started_at) = first_tick(admin, run, token, Duration::from_secs(20))
        .await?
        .ok_or_else(|| format!("run {run}: no takeover within 20 s of the kill"))?;
    let remaining = secs_between(killed_at, expires_at);
    Ok(TakeoverRun {
        killed: leader,
        since_renew: TTL.as_secs_f64() - remaining,
        remaining,
        takeover: secs_between(killed_at, started_at),
        successor,
        after_expiry: started_at >= expires_at,
    })
}

/// `runtime-bench replica URL HOLDER RUN`: one runtime leading [`TAKEOVER`]; its job records the
/// tick's start on the database clock, then waits until the tick is cancelled.
async fn replica(url: &str, holder: &str, run: i32) -> Res<()> {
    // Exit as soon as the parent goes away, however it ends: its end of our stdin closes.
    std::thread::spawn(|| {
        let _ = std::io::copy(&mut std::io::stdin(), &mut std::io::sink());
        std::process::exit(0);
    });
    let pool = PgPoolOptions::new().max_connections(3).connect(url).await?;
    let me = holder.to_owned();
    let runtime = Runtime::builder(pool)
        .timings(timings())
        .holder_id(holder)
        .role(TAKEOVER, EVERY, move |tick: TickContext| {
            let me = me.clone();
            async move {
                sqlx::query(
                    "INSERT INTO runtime_ticks (run, holder, token, started_at)
                     VALUES ($1, $2, $3, clock_timestamp())",
                )
                .bind(run)
                .bind(&me)
                .bind(tick.fence().token())
                .execute(tick.pool())
                .await?;
                tick.cancelled().await;
                Ok::<(), JobError>(())
            }
        })
        .build()?;
    {
        let mut out = std::io::stdout().lock();
        writeln!(out, "ready")?;
        out.flush()?;
    }
    runtime.run(CancellationToken::new()).await?;
    Ok(())
}

// ---------------------------------------------------------------------------------------------

enum Args {
    Bench {
        write: Option<String>,
    },
    Replica {
        url: String,
        holder: String,
        run: i32,
    },
}

fn parse_args() -> Result<Args, String> {
    let args: Vec<String> = std::env::args().skip(1).collect();
    if args.first().map(String::as_str) == Some("replica") {
        let [_, url, holder, run] = args.as_slice() else {
            return Err("replica needs URL HOLDER RUN".into());
        };
        let run = run.parse().map_err(|e| format!("bad run number: {e}"))?;
        return Ok(Args::Replica {
            url: url.clone(),
            holder: holder.clone(),
            run,
        });
    }
    Ok(Args::Bench {
        write: report::parse_write(args)?,
    })
}

#[tokio::main]
async fn main() -> ExitCode {
    let args = match parse_args() {
        Ok(args) => args,
        Err(e) => return report::usage(NAME, &e),
    };
    let result = match args {
        Args::Replica { url, holder, run } => replica(&url, &holder, run).await.map(|()| true),
        Args::Bench { write } => bench(write.as_deref()).await,
    };
    report::exit_code(NAME, result)
}

/// Starts the cluster, runs every part, stops the cluster; `Ok(false)` when a check failed.
async fn bench(write: Option<&str>) -> Res<bool> {
    progress(NAME, "starting a private PostgreSQL cluster");
    let cluster = tokio::task::spawn_blocking(Cluster::start).await??;
    let result = measure(&cluster, write).await;
    tokio::task::spawn_blocking(move || drop(cluster)).await?;
    result
}

async fn measure(cluster: &Cluster, write: Option<&str>) -> Res<bool> {
    let started = Instant::now();
    let date = Utc::now().format("%Y-%m-%d %H:%M UTC").to_string();
    let load_before = machine::load_average();
    let log: PathBuf = cluster.log_path();

    let server: PgConnectOptions = cluster.url().parse()?;
    let mut maintenance = server.connect().await?;
    sqlx::raw_sql(sqlx::AssertSqlSafe(format!("CREATE DATABASE {DATABASE}")))
        .execute(&mut maintenance)
        .await?;
    let options = server.clone().database(DATABASE);
    {
        let mut setup = options.connect().await?;
        leader_core::schema::MIGRATOR.run(&mut setup).await?;
        sqlx::raw_sql(ROLES_UP).execute(&mut setup).await?;
        sqlx::raw_sql(TICKS_TABLE).execute(&mut setup).await?;
    }
    // From here on every new connection to the database logs each statement it runs.
    sqlx::raw_sql(sqlx::AssertSqlSafe(format!(
        "ALTER DATABASE {DATABASE} SET log_statement = 'all'"
    )))
    .execute(&mut maintenance)
    .await?;
    let version: String = sqlx::query_scalar("SELECT version()")
        .fetch_one(&mut maintenance)
        .await?;
    let mut admin = options.connect().await?;
    let mut marker = options.connect().await?;
    let log_statement = machine::setting(&mut marker, "log_statement").await?;
    if log_statement != "all" {
        return Err(format!("log_statement is {log_statement:?} on a new connection").into());
    }

    progress(
        NAME,
        "part 1: four runtimes, one leading a long tick (settle 4 s, count 20 s)",
    );
    let runtime = idle_runtime(&options, &mut admin, &mut marker, &log).await?;
    progress(
        NAME,
        "part 1: naive baseline, four replicas polling every 250 ms (settle 4 s, count 20 s)",
    );
    let (naive, naive_errors) = idle_naive(&options, &mut admin, &mut marker, &log).await?;

    progress(
        NAME,
        &format!(
            "part 2: {TAKEOVER_RUNS} takeovers of a SIGKILLed leader, {TAKEOVER_REPLICAS} replica processes each"
        ),
    );
    let exe = std::env::current_exe()?;
    let url = format!(
        "{}/{DATABASE}",
        cluster.url().rsplit_once('/').expect("a URL").0
    );
    let mut takeovers = Vec::with_capacity(TAKEOVER_RUNS);
    let mut takeover_errors = Vec::new();
    for run in 0..TAKEOVER_RUNS {
        match takeover_run(&exe, &url, &mut admin, run).await {
            Ok(t) => {
                progress(
                    NAME,
                    &format!(
                        "part 2: run {}: killed {} {:.0} ms after its last RENEW; {} took over after {:.3} s",
                        run + 1,
                        t.killed,
                        t.since_renew * 1e3,
                        t.successor,
                        t.takeover
                    ),
                );
                takeovers.push(t);
            }
            Err(e) => {
                progress(NAME, &format!("part 2: run {}: {e}", run + 1));
                takeover_errors.push(format!("run {}: {e}", run + 1));
            }
        }
    }
    drop(admin);
    drop(marker);
    drop(maintenance);

    let elapsed = started.elapsed();
    let load_after = machine::load_average();

    // Checks.
    let idle_ok = runtime.one_leader_throughout();
    let overlap: Vec<usize> = takeovers
        .iter()
        .enumerate()
        .filter(|(_, t)| !t.after_expiry)
        .map(|(i, _)| i + 1)
        .collect();
    let takeover_ok = takeover_errors.is_empty() && overlap.is_empty();
    let ok = idle_ok && takeover_ok;

    let t = timings();
    let rt_rate = runtime.window.rate();
    let naive_rate = naive.window.rate();
    let takeover_s: Vec<f64> = takeovers.iter().map(|t| t.takeover).collect();
    let takeover_median = median(takeover_s.clone());
    let takeover_max = max(&takeover_s);
    let overshoot: Vec<f64> = takeovers.iter().map(|t| t.takeover - t.remaining).collect();

    // The report.
    let mut r = String::new();
    let w = &mut r;
    report::header(
        w,
        "Runtime benchmark: idle load and takeover",
        NAME,
        &date,
        elapsed,
        COMMAND,
    )?;
    writeln!(
        w,
        "It always starts a private throwaway PostgreSQL cluster from the machine's binaries \
         (fine as root; `DATABASE_URL` is ignored, since the statements are counted from that \
         server's log). Every connection is direct (no pooler).\n"
    )?;
    report::machine_section(
        w,
        &load_before,
        &load_after,
        &version,
        "private throwaway cluster on loopback (`fsync=off`); `log_statement=all` on the \
         benchmark database only",
    )?;
    writeln!(
        w,
        "Timings: `Timings::scaled_to_ttl(3 s)`: TTL {:?}, heartbeat {:?}, statement timeout {:?}, \
         abandon after {:?}, max poll {:?}. Role interval {EVERY:?} (no tick ever completes, so it \
         never matters).\n",
        t.ttl(),
        t.heartbeat(),
        t.statement_timeout(),
        t.abandon_after(),
        t.max_poll()
    )?;

    writeln!(w, "## 1. Idle load: statements per second\n")?;
    writeln!(
        w,
        "{REPLICAS} replicas of one role in one process, each with its own pool of at most 2 \
         connections. **Runtime**: four `Runtime`s (default status refresh, every 15 s); the \
         leader's job waits on `tick.cancelled()`, so the leader only renews and the others only \
         poll. **Naive**: four loops calling `lease::acquire` every {} ms each (the holder too), \
         the holder also calling `lease::renew` every {} ms. Each setup ran {} s after its first \
         grant, then every statement the server logged between two marker statements ({} s apart; \
         markers excluded) was counted from the server log and classified by its SQL text.\n",
        NAIVE_POLL.as_millis(),
        t.heartbeat().as_millis(),
        SETTLE.as_secs(),
        WINDOW.as_secs()
    )?;
    writeln!(
        w,
        "| statement | runtime: count | runtime: per s | naive: count | naive: per s |"
    )?;
    writeln!(w, "|---|---:|---:|---:|---:|")?;
    for kind in Kind::ALL {
        let rc = runtime.window.by_kind.get(&kind).copied().unwrap_or(0);
        let nc = naive.window.by_kind.get(&kind).copied().unwrap_or(0);
        writeln!(
            w,
            "| {} | {rc} | {:.2} | {nc} | {:.2} |",
            kind.name(),
            runtime.window.kind_rate(kind),
            naive.window.kind_rate(kind)
        )?;
    }
    writeln!(
        w,
        "| **all** | **{}** | **{rt_rate:.2}** | **{}** | **{naive_rate:.2}** |",
        runtime.window.total(),
        naive.window.total()
    )?;
    writeln!(
        w,
        "| window (s, between the markers) | {:.2} | | {:.2} | |\n",
        runtime.window.seconds, naive.window.seconds
    )?;
    writeln!(
        w,
        "- **Runtime: {rt_rate:.2} statements/s** (target ≤ {TARGET_RATE:.0}/s: **{}**).",
        if rt_rate <= TARGET_RATE {
            "met"
        } else {
            "not met"
        }
    )?;
    writeln!(
        w,
        "- **Naive: {naive_rate:.2} statements/s** (the issue quotes about {ISSUE_NAIVE_RATE:.0}/s \
         for such a peer in this setting)."
    )?;
    writeln!(w, "- **Naive / runtime: {:.1}×**.", naive_rate / rt_rate)?;
    writeln!(
        w,
        "- One leader through the runtime window: {} (`{}` token {} before, {} after).",
        if idle_ok { "yes" } else { "**NO**" },
        runtime.before.0,
        runtime.before.1,
        runtime
            .after
            .as_ref()
            .map_or("nobody".to_owned(), |(h, tok)| format!("`{h}` token {tok}"))
    )?;
    writeln!(
        w,
        "- Naive leader kept through its window: {}; naive statement errors: {naive_errors}.",
        if naive.one_leader_throughout() {
            "yes"
        } else {
            "no"
        }
    )?;
    let polls: Vec<String> = runtime
        .window
        .acquires_by_holder
        .iter()
        .map(|(h, n)| {
            format!(
                "`{h}` {n} (one per {:.2} s)",
                runtime.window.seconds / *n as f64
            )
        })
        .collect();
    writeln!(
        w,
        "- Runtime ACQUIREs per replica: {}.",
        if polls.is_empty() {
            "none".to_owned()
        } else {
            polls.join(", ")
        }
    )?;
    for (name, window) in [("runtime", &runtime.window), ("naive", &naive.window)] {
        for sample in &window.other_samples {
            writeln!(w, "- {name}, an `other` statement: `{sample}`")?;
        }
    }
    writeln!(w)?;

    writeln!(w, "## 2. Takeover after the leader is killed\n")?;
    writeln!(
        w,
        "{TAKEOVER_RUNS} runs. Each starts {TAKEOVER_REPLICAS} replica processes (this binary \
         re-executed as `runtime-bench replica`, one `Runtime` each) on a freshly reset role. Once \
         one leads (its job inserts `clock_timestamp()` and waits on `tick.cancelled()`), the \
         bench waits {} ms plus a uniformly random 0–{} ms (one heartbeat), so the kill lands at \
         a random point of the renew cycle, then kills the leader's process with SIGKILL \
         (`Child::kill`) and at once reads `clock_timestamp()` and the lease's `expires_at`. The \
         takeover instant is the `clock_timestamp()` the next leader's job inserts: both instants \
         are on the database clock. \"Since RENEW\" is TTL − (expires_at − kill): how long before \
         the kill the last RENEW (or the ACQUIRE) ran. \"After expiry\" is takeover − (expires_at − \
         kill): how late after the lease ran out the successor's job started.\n",
        KILL_BASE.as_millis(),
        t.heartbeat().as_millis()
    )?;
    writeln!(
        w,
        "| run | killed | since RENEW (ms) | lease left at kill (s) | successor | **takeover (s)** | after expiry (ms) |"
    )?;
    writeln!(w, "|---:|---|---:|---:|---|---:|---:|")?;
    for (i, t) in takeovers.iter().enumerate() {
        writeln!(
            w,
            "| {} | `{}` | {:.0} | {:.3} | `{}` | **{:.3}** | {:.0} |",
            i + 1,
            t.killed,
            t.since_renew * 1e3,
            t.remaining,
            t.successor,
            t.takeover,
            (t.takeover - t.remaining) * 1e3
        )?;
    }
    writeln!(w)?;
    if takeovers.is_empty() {
        writeln!(w, "No run completed.\n")?;
    } else {
        writeln!(
            w,
            "- **Takeover: median {takeover_median:.3} s, max {takeover_max:.3} s, min {:.3} s** \
             over {} runs (target: median < {:.0} s: **{}**).",
            min(&takeover_s),
            takeovers.len(),
            TARGET_TAKEOVER.as_secs_f64(),
            if takeover_median < TARGET_TAKEOVER.as_secs_f64() {
                "met"
            } else {
                "not met"
            }
        )?;
        writeln!(
            w,
            "- Lease left at the kill: median {:.3} s (range {:.3}–{:.3} s). Successor's start \
             after the expiry: median {:.0} ms, max {:.0} ms.",
            median(takeovers.iter().map(|t| t.remaining).collect()),
            min(&takeovers.iter().map(|t| t.remaining).collect::<Vec<_>>()),
            max(&takeovers.iter().map(|t| t.remaining).collect::<Vec<_>>()),
            median(overshoot.clone()) * 1e3,
            max(&overshoot) * 1e3
        )?;
        writeln!(
            w,
            "- Every successor started after the killed leader's lease expired: {}.",
            if overlap.is_empty() {
                "yes".to_owned()
            } else {
                format!("**NO** (runs {overlap:?})")
            }
        )?;
    }
    for e in &takeover_errors {
        writeln!(w, "- **failed** {e}")?;
    }

    print!("{r}");
    Ok(report::conclude(NAME, &r, write, ok, "a check failed")?)
}
