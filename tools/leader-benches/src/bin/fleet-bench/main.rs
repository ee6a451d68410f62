//! `fleet-bench`: a fleet of replicas placing many leases, measured from outside on one
//! PostgreSQL (issue 44's table; docs/benchmarks/fleet.md).
//!
//! ```text
//! fleet-bench ROLES SHARDS REPLICAS [--fast-takeover] [--idle SECS] [--limit SECS] [--log]
//! ```
//!
//! Starts a throwaway cluster with ROLES sharded roles of SHARDS shards each (SHARDS = 1: plain
//! roles), then REPLICAS runtimes in this process, each with its own pool of two connections,
//! TTL 3 s, every job holding its lease until cancelled. It prints, one line each:
//!
//! - `all_held_s`: seconds from start until every lease is held (live in `leader_leases`), or
//!   `never` within `--limit` (default 120 s), with how many were held then;
//! - `spread`: leases per replica (fewest, most) and the most shards of one role on one replica
//!   against the share (⌈SHARDS / REPLICAS⌉);
//! - `idle`: over `--idle` seconds (default 10) once all are held, the server's transactions and
//!   `leader_leases` row updates a second (`pg_stat_database`, `pg_stat_user_tables`);
//! - `dropped_run`: the `run` future of the replica holding the most leases is dropped (its task
//!   aborted, the process alive); seconds until every lease is held again, and how many leases
//!   the other replicas lost meanwhile (a lease a survivor held before whose token changed or
//!   that is no longer live).
//!
//! `--log` turns on PostgreSQL's lock-wait and slow-statement log (≥ 300 ms) and counts what
//! it logged, to find which statement refuses, waits or times out.

use std::collections::{BTreeMap, HashMap};
use std::process::ExitCode;
use std::time::{Duration, Instant};

use leader_benches::Res;
use leader_runtime::{JobError, Role, Runtime, TickContext, Timings};
use leader_testkit::Cluster;
use sqlx::postgres::{PgConnectOptions, PgPoolOptions};
use sqlx::{ConnectOptions, PgConnection};
use tokio::task::JoinHandle;
use tokio_util::sync::CancellationToken;

const USAGE: &str = "usage: fleet-bench ROLES SHARDS REPLICAS [--fast-takeover] [--idle SECS] [--limit SECS] [--log]";

async fn hold(tick: TickContext) -> Result<(), JobError> {
    tick.cancelled().await;
    Ok(())
}

fn role_name(i: usize) -> String {
    format!("fleet_{i:02}")
}

#[derive(Debug)]
struct Args {
    roles: usize,
    shards: u32,
    replicas: usize,
    fast_takeover: bool,
    idle: Duration,
    limit: Duration,
    log: bool,
}

fn parse(args: &[String]) -> Result<Args, String> {
    let number = |i: usize| -> Result<u64, String> {
        args.get(i)
            .ok_or_else(|| USAGE.to_owned())?
            .parse()
            .map_err(|_| format!("{}: not a number\n{USAGE}", args[i]))
    };
    let mut parsed = Args {
        roles: number(0)? as usize,
        shards: u32::try_from(number(1)?).map_err(|_| USAGE.to_owned())?,
        replicas: number(2)? as usize,
        fast_takeover: false,
        idle: Duration::from_secs(10),
        limit: Duration::from_secs(120),
        log: false,
    };
    let mut i = 3;
    while i < args.len() {
        match args[i].as_str() {
            "--fast-takeover" => parsed.fast_takeover = true,
            "--log" => parsed.log = true,
            "--idle" => {
                parsed.idle = Duration::from_secs(number(i + 1)?);
                i += 1;
            }
            "--limit" => {
                parsed.limit = Duration::from_secs(number(i + 1)?);
                i += 1;
            }
            other => return Err(format!("unknown argument {other}\n{USAGE}")),
        }
        i += 1;
    }
    if parsed.roles == 0 || parsed.shards == 0 || parsed.replicas < 2 {
        return Err(format!(
            "at least one role, one shard and two replicas\n{USAGE}"
        ));
    }
    Ok(parsed)
}

async fn setup(admin: &mut PgConnection, roles: usize, shards: u32) -> Res<()> {
    let names: Vec<String> = (0..roles).map(|i| format!("'{}'", role_name(i))).collect();
    let mut sql = format!(
        "ALTER TABLE leader_leases ADD CONSTRAINT leader_leases_role_registered CHECK (role IN ({}));",
        names.join(", ")
    );
    for name in &names {
        sql.push_str(&format!(
            "INSERT INTO leader_leases (role, holder_token) VALUES ({name}, leader_seed_token());"
        ));
        if shards > 1 {
            sql.push_str(&format!("SELECT leader_reshard({name}, {shards});"));
        }
    }
    sqlx::raw_sql(sqlx::AssertSqlSafe(sql))
        .execute(&mut *admin)
        .await?;
    Ok(())
}

/// Lock waits, ended sessions and statements of 300 ms or more go to the server's log, with the
/// plans of those of 500 ms or more.
async fn log_slow_statements(admin: &mut PgConnection) -> Res<()> {
    for setting in [
        "ALTER SYSTEM SET log_lock_waits = on",
        "ALTER SYSTEM SET log_disconnections = on",
        "ALTER SYSTEM SET deadlock_timeout = '100ms'",
        "ALTER SYSTEM SET log_min_duration_statement = '300ms'",
        "LOAD 'auto_explain'",
        "ALTER SYSTEM SET session_preload_libraries = 'auto_explain'",
        "ALTER SYSTEM SET auto_explain.log_min_duration = '500ms'",
        "ALTER SYSTEM SET auto_explain.log_analyze = on",
        "SELECT pg_reload_conf()",
    ] {
        sqlx::raw_sql(setting).execute(&mut *admin).await?;
    }
    Ok(())
}

/// Each live lease: (role, shard index) → (holder, token).
type Live = HashMap<(String, i32), (String, i64)>;

async fn live(admin: &mut PgConnection) -> Res<Live> {
    let rows: Vec<(String, i32, String, i64)> = sqlx::query_as(
        "SELECT role, shard_index, holder_id, holder_token FROM leader_leases
          WHERE expires_at > now() AND role LIKE 'fleet_%'",
    )
    .fetch_all(&mut *admin)
    .await?;
    Ok(rows
        .into_iter()
        .map(|(role, shard, holder, token)| ((role, shard), (holder, token)))
        .collect())
}

/// Polls every 50 ms until `total` leases are live and held by others than `gone`, or `limit`
/// has passed: the time it took, or the count reached.
async fn until_all_held(
    admin: &mut PgConnection,
    total: usize,
    gone: Option<&str>,
    limit: Duration,
) -> Res<Result<Duration, usize>> {
    let start = Instant::now();
    loop {
        let held = live(admin)
            .await?
            .values()
            .filter(|(holder, _)| Some(holder.as_str()) != gone)
            .count();
        if held == total {
            return Ok(Ok(start.elapsed()));
        }
        if start.elapsed() > limit {
            return Ok(Err(held));
        }
        tokio::time::sleep(Duration::from_millis(50)).await;
    }
}

/// The server's (transactions, `leader_leases` row updates) so far.
async fn counters(admin: &mut PgConnection) -> Res<(i64, i64)> {
    Ok(sqlx::query_as(
        "SELECT (SELECT xact_commit + xact_rollback FROM pg_stat_database
                  WHERE datname = current_database()),
                (SELECT n_tup_upd FROM pg_stat_user_tables WHERE relname = 'leader_leases')",
    )
    .fetch_one(&mut *admin)
    .await?)
}

fn per_holder(live: &Live) -> BTreeMap<String, usize> {
    let mut counts = BTreeMap::new();
    for (holder, _) in live.values() {
        *counts.entry(holder.clone()).or_default() += 1;
    }
    counts
}

async fn bench(args: Args) -> Res<()> {
    let cluster = tokio::task::spawn_blocking(Cluster::start).await??;
    let server: PgConnectOptions = cluster.url().parse()?;
    let mut admin = server.connect().await?;
    leader_core::schema::MIGRATOR.run(&mut admin).await?;
    setup(&mut admin, args.roles, args.shards).await?;
    if args.log {
        log_slow_statements(&mut admin).await?;
    }
    let timings = Timings::scaled_to_ttl(Duration::from_secs(3))?;
    let stop = CancellationToken::new();
    let mut replicas: Vec<(String, JoinHandle<()>)> = Vec::new();
    let start = Instant::now();
    for i in 0..args.replicas {
        let pool = PgPoolOptions::new()
            .max_connections(2)
            .connect_with(server.clone())
            .await?;
        let holder = format!("r{i:02}");
        let mut builder = Runtime::builder(pool)
            .timings(timings)
            .holder_id(holder.clone())
            .status_every(Duration::from_secs(3600))
            .shutdown_grace(Duration::from_secs(1));
        if args.fast_takeover {
            builder = builder
                .wake_on_release(server.clone())
                .take_over_when_dead();
        }
        for r in 0..args.roles {
            let role = Role::new(&role_name(r))?;
            builder = if args.shards > 1 {
                builder.sharded_role(role, Duration::from_secs(1), args.shards, hold)
            } else {
                builder.role(role, Duration::from_secs(1), hold)
            };
        }
        let run = builder.build()?.run_until_cancelled(stop.clone());
        replicas.push((
            holder,
            tokio::spawn(async move {
                if let Err(error) = run.await {
                    eprintln!("fleet-bench: a runtime stopped: {error}");
                }
            }),
        ));
    }
    let total = args.roles * args.shards as usize;
    println!(
        "fleet-bench {} x {} = {total} leases, {} replicas, fast takeover {}",
        args.roles,
        args.shards,
        args.replicas,
        if args.fast_takeover { "on" } else { "off" }
    );
    let started = until_all_held(
        &mut admin,
        total,
        None,
        args.limit.saturating_sub(start.elapsed()),
    )
    .await?;
    match started {
        Ok(_) => println!("all_held_s {:.2}", start.elapsed().as_secs_f64()),
        Err(held) => {
            let counts = per_holder(&live(&mut admin).await?);
            println!(
                "all_held_s never ({:.0} s: {held} of {total} held; per replica {:?})",
                args.limit.as_secs_f64(),
                counts.values().collect::<Vec<_>>()
            );
        }
    }
    if started.is_ok() {
        let held = live(&mut admin).await?;
        let counts = per_holder(&held);
        let mut per_role: HashMap<(&str, &str), usize> = HashMap::new();
        for ((role, _), (holder, _)) in &held {
            *per_role
                .entry((role.as_str(), holder.as_str()))
                .or_default() += 1;
        }
        let share = (args.shards as usize).div_ceil(args.replicas);
        println!(
            "spread per_replica {}..{} most_of_one_role {} share {share}",
            counts.values().min().unwrap_or(&0),
            counts.values().max().unwrap_or(&0),
            per_role.values().max().unwrap_or(&0)
        );
        tokio::time::sleep(Duration::from_secs(2)).await;
        let (xacts, updates) = counters(&mut admin).await?;
        let idle_start = Instant::now();
        tokio::time::sleep(args.idle).await;
        let (xacts_after, updates_after) = counters(&mut admin).await?;
        let secs = idle_start.elapsed().as_secs_f64();
        let still = live(&mut admin).await?.len();
        println!(
            "idle xacts_per_s {:.0} row_updates_per_s {:.0} held_after {still}",
            (xacts_after - xacts) as f64 / secs,
            (updates_after - updates) as f64 / secs
        );
        let before = live(&mut admin).await?;
        let counts = per_holder(&before);
        let (victim, _) = counts
            .iter()
            .max_by_key(|(_, count)| **count)
            .map(|(holder, count)| (holder.clone(), *count))
            .unwrap_or_default();
        let index = replicas
            .iter()
            .position(|(holder, _)| *holder == victim)
            .unwrap_or(0);
        let (victim, task) = replicas.remove(index);
        let dropped = Instant::now();
        task.abort();
        let healed =
            until_all_held(&mut admin, total, Some(&victim), Duration::from_secs(60)).await?;
        let after = live(&mut admin).await?;
        let lost = before
            .iter()
            .filter(|(_, (holder, _))| *holder != victim)
            .filter(|(key, held)| after.get(*key) != Some(held))
            .count();
        let victims = before
            .values()
            .filter(|(holder, _)| *holder == victim)
            .count();
        match healed {
            Ok(_) => println!(
                "dropped_run held_again_s {:.2} of {victims} leases; others_lost {lost}",
                dropped.elapsed().as_secs_f64()
            ),
            Err(held) => println!(
                "dropped_run held_again_s never (60 s: {held} of {total}); others_lost {lost}"
            ),
        }
    }
    stop.cancel();
    for (_, task) in replicas {
        let _ = task.await;
    }
    if args.log {
        report_log(&cluster)?;
    }
    tokio::task::spawn_blocking(move || drop(cluster)).await?;
    Ok(())
}

/// Counts the lock waits, timeouts and slow statements in the server's log, by statement.
fn report_log(cluster: &Cluster) -> Res<()> {
    let log = std::fs::read_to_string(cluster.log_path())?;
    let mut counts: BTreeMap<String, usize> = BTreeMap::new();
    for line in log.lines() {
        for key in [
            "canceling statement due to lock timeout",
            "canceling statement due to statement timeout",
            "still waiting for",
            "deadlock detected",
        ] {
            if line.contains(key) {
                *counts.entry(key.to_owned()).or_default() += 1;
            }
        }
        if line.contains("duration:") {
            let kind = ["leader:acquire", "leader:renew", "leader:release"]
                .iter()
                .find(|k| line.contains(*k))
                .copied()
                .unwrap_or("other");
            *counts.entry(format!("slow {kind}")).or_default() += 1;
        }
    }
    let kept = std::env::temp_dir().join("fleet-bench-server.log");
    std::fs::copy(cluster.log_path(), &kept)?;
    println!("server_log {counts:?} (the log kept as {})", kept.display());
    Ok(())
}

#[tokio::main]
async fn main() -> ExitCode {
    tracing_subscriber::fmt()
        .with_env_filter(tracing_subscriber::EnvFilter::from_default_env())
        .with_writer(std::io::stderr)
        .init();
    let args: Vec<String> = std::env::args().skip(1).collect();
    let args = match parse(&args) {
        Ok(args) => args,
        Err(message) => {
            eprintln!("{message}");
            return ExitCode::from(2);
        }
    };
    match bench(args).await {
        Ok(()) => ExitCode::SUCCESS,
        Err(error) => {
            eprintln!("fleet-bench: {error}");
            ExitCode::FAILURE
        }
    }
}
