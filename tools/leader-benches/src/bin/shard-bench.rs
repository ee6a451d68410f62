//! `shard-bench [--write PATH]`: what sharding a role buys and costs, on a private PostgreSQL
//! cluster; prints a Markdown report, and with `--write` writes it to PATH.
//!
//! 1. Throughput. A backlog of webhooks, a role of [`SHARDS`] shards led by 1, 2, 4 and 8
//!    runtimes in this process (each with its own pool). Each tick claims up to [`BATCH`] of its
//!    shard's webhooks with the documented fenced claim and delivers them one after another,
//!    each delivery a fixed [`DELIVERY`] sleep through the replica's one delivery slot (a
//!    semaphore of one permit: what one replica can deliver at once, so that a replica's
//!    capacity, not the database, is what more replicas add). Deliveries a second over a
//!    [`WINDOW`] after a [`WARM_UP`], and the statements the server logged meanwhile per
//!    delivery, [`RUNS`] runs per replica count.
//! 2. Rebalance. Three runtimes lead a role of eight shards whose ticks record themselves,
//!    fenced; a fourth joins (time until it has run its share, two shards), then one of the
//!    first three is aborted as a crash (time until every shard has run again on the
//!    survivors), then one of the remaining three is shut down cleanly (time until every shard
//!    has run again on the last two), on the database clock, [`RUNS`] runs.
//! 3. Idle cost. Sixteen runtimes lead one unsharded role, then a role of 64 shards; the
//!    statements the server logged a second in a window, and their ratio, [`RUNS`] runs. Twice:
//!    with ticks that never end (what `runtime-bench` calls idle load), and with a job that
//!    finds nothing to do every 200 ms (a replica's shards then cost one ACQUIRE and one
//!    RELEASE per tick).
//!
//! Statements are counted from the server's log (`log_statement = 'all'` on the benchmark
//! database) by the name in each statement's leading comment, as `runtime-bench` counts them.

use std::fmt::Write as _;
use std::path::Path;
use std::process::ExitCode;
use std::sync::Arc;
use std::sync::atomic::{AtomicU64, Ordering};
use std::time::Duration;

use chrono::{DateTime, Utc};
use leader_benches::Res;
use leader_benches::report::{self, progress};
use leader_benches::server_log::{Kind, Window, count_window, create_logged_database};
use leader_benches::stats::{max, median, min};
use leader_runtime::{JobError, Role, Runtime, State, TickContext, Timings};
use leader_testkit::Cluster;
use sqlx::postgres::{PgConnectOptions, PgPoolOptions};
use sqlx::{ConnectOptions, PgConnection, PgPool};
use tokio::sync::Semaphore;
use tokio::task::JoinHandle;
use tokio_util::sync::CancellationToken;

const NAME: &str = "shard-bench";
const COMMAND: &str =
    "cargo run --release -p leader-benches --bin shard-bench -- --write docs/benchmarks/shards.md";
const DATABASE: &str = "shard_bench";

const WEBHOOKS: Role = Role::from_static("webhooks");
const REBALANCE: Role = Role::from_static("rebalance");
const IDLE_ONE: Role = Role::from_static("idle_one");
const IDLE_SHARDS: Role = Role::from_static("idle_shards");

const SHARDS: u32 = 8;
const IDLE_SHARD_COUNT: u32 = 64;
const IDLE_REPLICAS: usize = 16;
const REPLICA_COUNTS: [usize; 4] = [1, 2, 4, 8];
const RUNS: usize = 3;
const BATCH: i64 = 25;
const BACKLOG: i64 = 40_000;
const DELIVERY: Duration = Duration::from_millis(5);
const BUSY_EVERY: Duration = Duration::from_millis(10);
const IDLE_EVERY: Duration = Duration::from_millis(200);
const WARM_UP: Duration = Duration::from_secs(2);
const WINDOW: Duration = Duration::from_secs(10);
const IDLE_SETTLE: Duration = Duration::from_secs(6);
const IDLE_WINDOW: Duration = Duration::from_secs(20);
const TARGET_SPEEDUP_AT_4: f64 = 3.5;
const TARGET_IDLE_RATIO: f64 = 2.0;

const SETUP: &str = "
ALTER TABLE leader_leases ADD CONSTRAINT leader_leases_role_registered
    CHECK (role IN ('webhooks', 'rebalance', 'idle_one', 'idle_shards'));
INSERT INTO leader_leases (role, holder_token)
VALUES ('webhooks', leader_seed_token()), ('rebalance', leader_seed_token()),
       ('idle_one', leader_seed_token()), ('idle_shards', leader_seed_token());
SELECT leader_reshard('webhooks', 8), leader_reshard('rebalance', 8),
       leader_reshard('idle_shards', 64);
CREATE TABLE webhooks (id bigserial PRIMARY KEY, claimed_by bigint);
CREATE TABLE ticks (id bigserial PRIMARY KEY, holder text NOT NULL, shard_index integer NOT NULL,
                    at timestamptz NOT NULL);
";

/// The documented claim of a shard's rows: the shard's fence and its filter on the same
/// placeholders.
const CLAIM: &str = "
UPDATE webhooks SET claimed_by = $4
 WHERE id IN (SELECT id FROM webhooks
               WHERE claimed_by IS NULL
                 AND leader_fence($1, $2, $3, $4)
                 AND leader_shard_of(id, $3) = $2
               ORDER BY id LIMIT 25 FOR UPDATE SKIP LOCKED)
RETURNING id";

/// A tick of the rebalance role, fenced: it exists only if the tick held its shard.
const RECORD: &str = "
INSERT INTO ticks (holder, shard_index, at)
SELECT $5, $2, clock_timestamp() WHERE leader_fence($1, $2, $3, $4)";

fn timings() -> Timings {
    Timings::scaled_to_ttl(Duration::from_secs(3)).expect("TTL 3 s scales to valid timings")
}

/// One replica of the throughput part: its one delivery slot and the run's delivery count.
#[derive(Clone)]
struct Deliverer {
    slot: Arc<Semaphore>,
    delivered: Arc<AtomicU64>,
}

async fn deliver(tick: TickContext, State(replica): State<Deliverer>) -> Result<(), JobError> {
    let fence = tick
        .shard_fence()
        .ok_or("a sharded role's tick holds a shard")?;
    let ids: Vec<i64> = sqlx::query_scalar(CLAIM)
        .bind(fence.role())
        .bind(fence.shard_index())
        .bind(fence.shard_count())
        .bind(fence.token())
        .fetch_all(tick.pool())
        .await?;
    for _ in ids {
        let _slot = replica.slot.acquire().await?;
        tokio::time::sleep(DELIVERY).await;
        replica.delivered.fetch_add(1, Ordering::Relaxed);
    }
    Ok(())
}

#[derive(Clone)]
struct Holder(String);

async fn record(tick: TickContext, State(Holder(holder)): State<Holder>) -> Result<(), JobError> {
    let fence = tick
        .shard_fence()
        .ok_or("a sharded role's tick holds a shard")?;
    sqlx::query(RECORD)
        .bind(fence.role())
        .bind(fence.shard_index())
        .bind(fence.shard_count())
        .bind(fence.token())
        .bind(holder)
        .execute(tick.pool())
        .await?;
    Ok(())
}

async fn nothing(_tick: TickContext) -> Result<(), JobError> {
    Ok(())
}

/// A tick that never ends: it holds its lease until the runtime stops.
async fn hold(tick: TickContext) -> Result<(), JobError> {
    tick.cancelled().await;
    Ok(())
}

/// Runtimes started by a part, stopped together.
struct Replicas {
    stop: CancellationToken,
    running: Vec<Replica>,
}

/// One running replica: its holder id, its own shutdown (a child of every replica's) and its
/// task.
struct Replica {
    holder: String,
    stop: CancellationToken,
    task: JoinHandle<Result<(), leader_runtime::RunError>>,
}

impl Replicas {
    fn new() -> Replicas {
        Replicas {
            stop: CancellationToken::new(),
            running: Vec::new(),
        }
    }

    fn start(&mut self, holder: String, runtime: Runtime) {
        let stop = self.stop.child_token();
        let task = tokio::spawn(runtime.run_until_cancelled(stop.clone()));
        self.running.push(Replica { holder, stop, task });
    }

    fn take(&mut self, holder: &str) -> Option<Replica> {
        let i = self.running.iter().position(|r| r.holder == holder)?;
        Some(self.running.remove(i))
    }

    /// Aborts `holder`'s runtime as a crash would: its leases run out after their TTL.
    fn kill(&mut self, holder: &str) {
        if let Some(replica) = self.take(holder) {
            replica.task.abort();
        }
    }

    /// Shuts `holder`'s runtime down as SIGTERM would, and waits until it has.
    async fn stop_one(&mut self, holder: &str) -> Res<()> {
        if let Some(replica) = self.take(holder) {
            replica.stop.cancel();
            Replicas::joined(replica).await?;
        }
        Ok(())
    }

    async fn joined(replica: Replica) -> Res<()> {
        let holder = replica.holder;
        replica
            .task
            .await?
            .map_err(|e| format!("replica {holder}: {e}"))?;
        Ok(())
    }

    async fn stop(self) -> Res<()> {
        self.stop.cancel();
        for replica in self.running {
            Replicas::joined(replica).await?;
        }
        Ok(())
    }
}

async fn pool(options: &PgConnectOptions) -> Res<PgPool> {
    Ok(PgPoolOptions::new()
        .max_connections(4)
        .connect_with(options.clone())
        .await?)
}

fn builder(pool: PgPool, holder: &str) -> leader_runtime::RuntimeBuilder {
    Runtime::builder(pool)
        .timings(timings())
        .holder_id(holder)
        .status_every(Duration::from_secs(3600))
        .shutdown_grace(Duration::from_secs(1))
}

/// One throughput run: deliveries a second and the statements counted in the window.
struct Throughput {
    replicas: usize,
    per_second: f64,
    window: Window,
    delivered: u64,
}

async fn throughput(
    options: &PgConnectOptions,
    admin: &mut PgConnection,
    marker: &mut PgConnection,
    log: &Path,
    replicas: usize,
    run: usize,
) -> Res<Throughput> {
    sqlx::raw_sql(sqlx::AssertSqlSafe(format!(
        "TRUNCATE webhooks; INSERT INTO webhooks (claimed_by) SELECT NULL FROM generate_series(1, {BACKLOG})"
    )))
    .execute(&mut *admin)
    .await?;
    let delivered = Arc::new(AtomicU64::new(0));
    let mut started = Replicas::new();
    for i in 0..replicas {
        let holder = format!("busy-{replicas}-{run}-{i}");
        let state = Deliverer {
            slot: Arc::new(Semaphore::new(1)),
            delivered: delivered.clone(),
        };
        let runtime = builder(pool(options).await?, &holder)
            .with_state(state)
            .sharded_role(WEBHOOKS, BUSY_EVERY, SHARDS, deliver)
            .build()?;
        started.start(holder, runtime);
    }
    tokio::time::sleep(WARM_UP).await;
    let before = delivered.load(Ordering::Relaxed);
    let window = count_window(marker, log, &format!("busy-{replicas}-{run}"), WINDOW).await?;
    let after = delivered.load(Ordering::Relaxed);
    started.stop().await?;
    let claimed: i64 =
        sqlx::query_scalar("SELECT count(*) FROM webhooks WHERE claimed_by IS NOT NULL")
            .fetch_one(&mut *admin)
            .await?;
    if claimed >= BACKLOG {
        return Err(
            format!("{replicas} replicas drained the backlog of {BACKLOG}: raise BACKLOG").into(),
        );
    }
    Ok(Throughput {
        replicas,
        per_second: (after - before) as f64 / window.seconds,
        window,
        delivered: after - before,
    })
}

/// One rebalance run: seconds until the joining replica ran its share, until every shard ran
/// again after a crash, and until every shard ran again after a clean shutdown.
struct Rebalance {
    join_secs: f64,
    kill_secs: f64,
    stop_secs: f64,
}

async fn db_now(admin: &mut PgConnection) -> Res<DateTime<Utc>> {
    Ok(sqlx::query_scalar("SELECT clock_timestamp()")
        .fetch_one(&mut *admin)
        .await?)
}

/// Waits (at most a minute) until `query`, bound to `since`, returns a time; the seconds from
/// `since` to it.
async fn seconds_until(
    admin: &mut PgConnection,
    query: &str,
    since: DateTime<Utc>,
    what: &str,
) -> Res<f64> {
    let deadline = tokio::time::Instant::now() + Duration::from_secs(60);
    loop {
        let at: Option<DateTime<Utc>> = sqlx::query_scalar(sqlx::AssertSqlSafe(query.to_owned()))
            .bind(since)
            .fetch_one(&mut *admin)
            .await?;
        if let Some(at) = at {
            return Ok((at - since).num_microseconds().unwrap_or(i64::MAX) as f64 / 1e6);
        }
        if tokio::time::Instant::now() > deadline {
            return Err(format!("{what}: not within a minute").into());
        }
        tokio::time::sleep(Duration::from_millis(20)).await;
    }
}

async fn rebalance(
    options: &PgConnectOptions,
    admin: &mut PgConnection,
    run: usize,
) -> Res<Rebalance> {
    let holders: Vec<String> = (0..4).map(|i| format!("rebalance-{run}-{i}")).collect();
    let mut started = Replicas::new();
    let start = |holder: &str| {
        let holder = holder.to_owned();
        async move {
            let runtime = builder(pool(options).await?, &holder)
                .with_state(Holder(holder.clone()))
                .sharded_role(REBALANCE, IDLE_EVERY, SHARDS, record)
                .build()?;
            Res::Ok((holder, runtime))
        }
    };
    for holder in &holders[..3] {
        let (holder, runtime) = start(holder).await?;
        started.start(holder, runtime);
    }
    let settled = db_now(admin).await?;
    let first_three = format!(
        "SELECT CASE WHEN count(DISTINCT shard_index) = 8 THEN max(at) END FROM ticks
          WHERE at > $1 AND holder LIKE 'rebalance-{run}-%'"
    );
    seconds_until(
        admin,
        &first_three,
        settled,
        "three replicas run all eight shards",
    )
    .await?;
    tokio::time::sleep(Duration::from_secs(2)).await;

    let joined = db_now(admin).await?;
    let (holder, runtime) = start(&holders[3]).await?;
    started.start(holder, runtime);
    let share = format!(
        "SELECT min(at) FROM (SELECT shard_index, min(at) AS at FROM ticks
                               WHERE holder = '{}' AND at > $1 GROUP BY shard_index
                               ORDER BY at OFFSET 1) AS second",
        holders[3]
    );
    let join_secs =
        seconds_until(admin, &share, joined, "the joining replica runs two shards").await?;
    tokio::time::sleep(Duration::from_secs(2)).await;

    started.kill(&holders[0]);
    let killed = db_now(admin).await?;
    let every_shard = format!(
        "SELECT CASE WHEN count(*) = 8 THEN max(first) END
           FROM (SELECT shard_index, min(at) AS first FROM ticks
                  WHERE at > $1 AND holder <> '{}' AND holder LIKE 'rebalance-{run}-%'
                  GROUP BY shard_index) AS again",
        holders[0]
    );
    let kill_secs = seconds_until(
        admin,
        &every_shard,
        killed,
        "every shard runs again on the survivors",
    )
    .await?;
    tokio::time::sleep(Duration::from_secs(2)).await;

    let stopping = db_now(admin).await?;
    started.stop_one(&holders[1]).await?;
    let every_shard_left = format!(
        "SELECT CASE WHEN count(*) = 8 THEN max(first) END
           FROM (SELECT shard_index, min(at) AS first FROM ticks
                  WHERE at > $1 AND holder IN ('{}', '{}')
                  GROUP BY shard_index) AS again",
        holders[2], holders[3]
    );
    let stop_secs = seconds_until(
        admin,
        &every_shard_left,
        stopping,
        "every shard runs again on the two left after a clean stop",
    )
    .await?;
    started.stop().await?;
    Ok(Rebalance {
        join_secs,
        kill_secs,
        stop_secs,
    })
}

/// One idle run: statements a second of one unsharded role and of 64 shards, on 16 replicas,
/// with ticks that never end (`held_*`) and with ticks every 200 ms (`ticking_*`).
struct Idle {
    held_one: Window,
    held_sharded: Window,
    ticking_one: Window,
    ticking_sharded: Window,
}

async fn idle_window(
    options: &PgConnectOptions,
    marker: &mut PgConnection,
    log: &Path,
    admin: &mut PgConnection,
    label: &str,
    sharded: bool,
    ticks_end: bool,
) -> Res<Window> {
    let mut started = Replicas::new();
    for i in 0..IDLE_REPLICAS {
        let holder = format!("{label}-{i}");
        let builder = builder(pool(options).await?, &holder);
        let runtime = match (sharded, ticks_end) {
            (true, true) => {
                builder.sharded_role(IDLE_SHARDS, IDLE_EVERY, IDLE_SHARD_COUNT, nothing)
            }
            (true, false) => builder.sharded_role(IDLE_SHARDS, IDLE_EVERY, IDLE_SHARD_COUNT, hold),
            (false, true) => builder.role(IDLE_ONE, IDLE_EVERY, nothing),
            (false, false) => builder.role(IDLE_ONE, IDLE_EVERY, hold),
        }
        .build()?;
        started.start(holder, runtime);
    }
    if !ticks_end {
        let (role, leases) = if sharded {
            (IDLE_SHARDS, i64::from(IDLE_SHARD_COUNT))
        } else {
            (IDLE_ONE, 1)
        };
        let query = format!(
            "SELECT CASE WHEN count(*) = {leases} THEN now() END FROM leader_leases
              WHERE role = '{role}' AND expires_at > now() AND $1::timestamptz IS NOT NULL"
        );
        let since = db_now(admin).await?;
        seconds_until(admin, &query, since, "every lease held").await?;
    }
    tokio::time::sleep(IDLE_SETTLE).await;
    let window = count_window(marker, log, label, IDLE_WINDOW).await?;
    started.stop().await?;
    Ok(window)
}

async fn idle(
    options: &PgConnectOptions,
    admin: &mut PgConnection,
    marker: &mut PgConnection,
    log: &Path,
    run: usize,
) -> Res<Idle> {
    let mut measured = Vec::new();
    for (label, sharded, ticks_end) in [
        ("held-one", false, false),
        ("held-shards", true, false),
        ("ticking-one", false, true),
        ("ticking-shards", true, true),
    ] {
        let label = format!("{label}-{run}");
        measured.push(idle_window(options, marker, log, admin, &label, sharded, ticks_end).await?);
    }
    let [held_one, held_sharded, ticking_one, ticking_sharded] =
        <[Window; 4]>::try_from(measured).map_err(|_| "four idle windows")?;
    Ok(Idle {
        held_one,
        held_sharded,
        ticking_one,
        ticking_sharded,
    })
}

fn framework(window: &Window) -> usize {
    [Kind::Acquire, Kind::Renew, Kind::Release]
        .iter()
        .map(|kind| window.by_kind.get(kind).copied().unwrap_or(0))
        .sum()
}

fn verdict(met: bool) -> &'static str {
    if met { "met" } else { "**missed**" }
}

async fn measure(cluster: &Cluster, write: Option<&str>) -> Res<bool> {
    let start = report::RunStart::now();
    let log = cluster.log_path();
    let (maintenance, options, version) =
        create_logged_database(cluster, DATABASE, &[SETUP]).await?;
    let mut admin = options.connect().await?;
    let mut marker = options.connect().await?;

    let mut busy: Vec<Throughput> = Vec::new();
    for run in 0..RUNS {
        for replicas in REPLICA_COUNTS {
            progress(
                NAME,
                &format!(
                    "throughput: run {} of {RUNS}, {replicas} replica(s)",
                    run + 1
                ),
            );
            busy.push(throughput(&options, &mut admin, &mut marker, &log, replicas, run).await?);
        }
    }
    let mut moves = Vec::new();
    for run in 0..RUNS {
        progress(NAME, &format!("rebalance: run {} of {RUNS}", run + 1));
        moves.push(rebalance(&options, &mut admin, run).await?);
        tokio::time::sleep(Duration::from_secs(4)).await;
    }
    let mut idles = Vec::new();
    for run in 0..RUNS {
        progress(NAME, &format!("idle cost: run {} of {RUNS}", run + 1));
        idles.push(idle(&options, &mut admin, &mut marker, &log, run).await?);
    }
    drop((admin, marker, maintenance));
    let span = start.end();

    let mut r = String::new();
    let w = &mut r;
    report::header(
        w,
        "Sharded roles: throughput, rebalance and idle cost",
        NAME,
        &span,
        COMMAND,
    )?;
    writeln!(
        w,
        "A private throwaway PostgreSQL cluster; every runtime runs in this process with its own \
         pool of 4 direct connections, at timings scaled to a TTL of 3 s. Statements are counted \
         from the server's log by the name in their leading comment.\n"
    )?;
    report::machine_section(
        w,
        &span,
        &version,
        "private throwaway cluster on loopback (`fsync=off`); `log_statement=all` on the \
         benchmark database only",
    )?;

    writeln!(w, "## 1. Throughput from a backlog, {SHARDS} shards\n")?;
    writeln!(
        w,
        "Each tick claims up to {BATCH} of its shard's webhooks (the documented fenced claim) and \
         delivers them one after another; a delivery is a {} ms sleep through the replica's one \
         delivery slot. `every = {} ms`. Deliveries a second over {} s after {} s of warm-up; \
         {RUNS} runs, the median shown with the range. Statements per delivery: the framework's \
         (ACQUIRE, RENEW, RELEASE) and all the server logged (the claims included).\n",
        DELIVERY.as_millis(),
        BUSY_EVERY.as_millis(),
        WINDOW.as_secs(),
        WARM_UP.as_secs()
    )?;
    writeln!(
        w,
        "| replicas | deliveries/s (median) | range | speed-up over 1 (medians) | framework statements/delivery | all statements/delivery |\n|---|---|---|---|---|---|"
    )?;
    let median_rate = |replicas: usize| {
        median(
            busy.iter()
                .filter(|t| t.replicas == replicas)
                .map(|t| t.per_second)
                .collect(),
        )
    };
    let one = median_rate(1);
    for replicas in REPLICA_COUNTS {
        let runs: Vec<&Throughput> = busy.iter().filter(|t| t.replicas == replicas).collect();
        let rates: Vec<f64> = runs.iter().map(|t| t.per_second).collect();
        let delivered: u64 = runs.iter().map(|t| t.delivered).sum();
        let framework_statements: usize = runs.iter().map(|t| framework(&t.window)).sum();
        let all_statements: usize = runs.iter().map(|t| t.window.total()).sum();
        writeln!(
            w,
            "| {replicas} | {:.0} | {:.0}–{:.0} | {:.2}× | {:.3} | {:.3} |",
            median_rate(replicas),
            min(&rates),
            max(&rates),
            median_rate(replicas) / one,
            framework_statements as f64 / delivered.max(1) as f64,
            all_statements as f64 / delivered.max(1) as f64,
        )?;
    }
    let speedup = median_rate(4) / one;
    writeln!(
        w,
        "\nTarget: at least {TARGET_SPEEDUP_AT_4}× at 4 replicas over 1: **{speedup:.2}×**, {}.\n",
        verdict(speedup >= TARGET_SPEEDUP_AT_4)
    )?;

    writeln!(
        w,
        "## 2. Rebalance, {SHARDS} shards, `every = {} ms`\n",
        IDLE_EVERY.as_millis()
    )?;
    writeln!(
        w,
        "Three replicas run; a fourth joins: the time until it has run its share (two shards), \
         with no lease waiting for its expiry. Then one of the first three is aborted as a crash: \
         the time until every shard has run again on the survivors, which includes waiting for \
         the crashed replica's leases and presence to run out (TTL {} s). Then one of the \
         remaining three is shut down cleanly (as on SIGTERM): the time from the shutdown's \
         start until every shard has run again on the last two, which its LEAVE lets take its \
         shards without waiting for its presence to run out. Database clock; {RUNS} runs.\n",
        timings().ttl().as_secs()
    )?;
    writeln!(w, "| after | median | min | max |\n|---|---|---|---|")?;
    for (what, secs) in [
        (
            "a replica joins",
            moves.iter().map(|m| m.join_secs).collect::<Vec<_>>(),
        ),
        (
            "a replica is killed",
            moves.iter().map(|m| m.kill_secs).collect(),
        ),
        (
            "a replica shuts down",
            moves.iter().map(|m| m.stop_secs).collect(),
        ),
    ] {
        writeln!(
            w,
            "| {what} | {:.2} s | {:.2} s | {:.2} s |",
            median(secs.clone()),
            min(&secs),
            max(&secs)
        )?;
    }

    writeln!(w, "\n## 3. Idle cost, {IDLE_REPLICAS} replicas\n")?;
    writeln!(
        w,
        "Statements the server logged a second over {} s after {} s of settling (for held \
         leases, after every lease was held): one unsharded role, then one role of \
         {IDLE_SHARD_COUNT} shards, in each of {RUNS} runs. *Held*: ticks that never end, what \
         `runtime-bench` measures as idle load. *Ticking*: `every = {} ms` with a job that finds \
         nothing to do.\n",
        IDLE_WINDOW.as_secs(),
        IDLE_SETTLE.as_secs(),
        IDLE_EVERY.as_millis()
    )?;
    let mut ratios: [Vec<f64>; 2] = [Vec::new(), Vec::new()];
    for (pick, what) in ["held", "ticking"].into_iter().enumerate() {
        writeln!(
            w,
            "**{what}**\n\n| run | 1 role: all/s | ACQUIRE/s | RENEW/s | RELEASE/s | {IDLE_SHARD_COUNT} shards: all/s | ACQUIRE/s | RENEW/s | RELEASE/s | ratio |\n|---|---|---|---|---|---|---|---|---|---|"
        )?;
        for (run, idle) in idles.iter().enumerate() {
            let (one, sharded) = if pick == 0 {
                (&idle.held_one, &idle.held_sharded)
            } else {
                (&idle.ticking_one, &idle.ticking_sharded)
            };
            let ratio = sharded.rate() / one.rate();
            ratios[pick].push(ratio);
            writeln!(
                w,
                "| {} | {:.1} | {:.1} | {:.1} | {:.1} | {:.1} | {:.1} | {:.1} | {:.1} | {ratio:.2}× |",
                run + 1,
                one.rate(),
                one.kind_rate(Kind::Acquire),
                one.kind_rate(Kind::Renew),
                one.kind_rate(Kind::Release),
                sharded.rate(),
                sharded.kind_rate(Kind::Acquire),
                sharded.kind_rate(Kind::Renew),
                sharded.kind_rate(Kind::Release),
            )?;
        }
        writeln!(w)?;
    }
    let [held, ticking] = ratios.map(median);
    writeln!(
        w,
        "Target: {IDLE_SHARD_COUNT} shards on {IDLE_REPLICAS} replicas cost at most \
         {TARGET_IDLE_RATIO}× one unsharded role on {IDLE_REPLICAS} replicas. Held: median ratio \
         **{held:.2}×**, {}. Ticking every {} ms with nothing to do: median ratio \
         **{ticking:.2}×**, {} against the same bound.\n",
        verdict(held <= TARGET_IDLE_RATIO),
        IDLE_EVERY.as_millis(),
        verdict(ticking <= TARGET_IDLE_RATIO)
    )?;
    // Targets are reported, met or missed, not failed on: the figures are what the run is for.
    print!("{r}");
    Ok(report::conclude(NAME, &r, write, true, "")?)
}

async fn bench(write: Option<String>) -> Res<bool> {
    progress(NAME, "starting a private PostgreSQL cluster");
    let cluster = tokio::task::spawn_blocking(Cluster::start).await??;
    let result = measure(&cluster, write.as_deref()).await;
    tokio::task::spawn_blocking(move || drop(cluster)).await?;
    result
}

#[tokio::main]
async fn main() -> ExitCode {
    report::run_main(NAME, bench).await
}
