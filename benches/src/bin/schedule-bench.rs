//! `schedule-bench [--write PATH]`: how soon after its scheduled instant a calendar role's tick
//! starts, with three replicas at the default timings, on a throwaway PostgreSQL (or
//! `DATABASE_URL`'s server); prints a Markdown report, and with `--write` writes it to PATH.
//!
//! Three runtimes in this process, each with its own pool, lead one role on `* * * * * *` (every
//! second, UTC). Each tick records, fenced, the instant it serves, when its lease was granted and
//! when the job started, all on the database clock. The start delay is the grant's time minus the
//! instant. The run also checks what the schedule promises: no instant recorded twice, none
//! before it was due.

use std::fmt::Write as _;
use std::process::ExitCode;
use std::time::Duration;

use chrono::{DateTime, Utc};
use leader_benches::Res;
use leader_benches::report::{self, progress};
use leader_benches::stats::{max, median};
use leader_runtime::schedule::CronSchedule;
use leader_runtime::{JobError, Role, Runtime, State, TickContext, Timings};
use leader_testkit::TestDb;
use sqlx::postgres::PgPoolOptions;
use tokio_util::sync::CancellationToken;

const NAME: &str = "schedule-bench";
const COMMAND: &str = "cargo run --release -p leader-benches --bin schedule-bench -- --write docs/benchmarks/schedules.md";

const ROLE: Role = Role::from_static("every_second");
const EXPRESSION: &str = "* * * * * *";
const REPLICAS: usize = 3;
/// Instants to measure (the first few, while the replicas start, are left out).
const INSTANTS: i64 = 40;
const WARM_UP: i64 = 3;
const TARGET_MEDIAN_MS: f64 = 100.0;
const TARGET_MAX_MS: f64 = 500.0;

const SETUP: &str = "
ALTER TABLE leader_leases ADD CONSTRAINT leader_leases_role_registered
    CHECK (role IN ('every_second'));
INSERT INTO leader_leases (role, holder_token) VALUES ('every_second', leader_seed_token());
CREATE TABLE starts (instant timestamptz NOT NULL, granted_at timestamptz NOT NULL,
                     started_at timestamptz NOT NULL, holder text NOT NULL);
";

#[derive(Clone)]
struct Replica(&'static str);

async fn record(tick: TickContext, State(Replica(holder)): State<Replica>) -> Result<(), JobError> {
    let instant = tick
        .scheduled_for()
        .ok_or("a calendar role's tick serves an instant")?
        .with_timezone(&Utc);
    let mut tx = tick.pool().begin().await?;
    sqlx::query(
        "INSERT INTO starts (instant, granted_at, started_at, holder)
         SELECT $3, $4, clock_timestamp(), $5 WHERE leader_fence($1, $2)",
    )
    .persistent(false)
    .bind(tick.role())
    .bind(tick.fence().token())
    .bind(instant)
    .bind(tick.granted_at())
    .bind(holder)
    .execute(&mut *tx)
    .await?;
    tx.commit().await?;
    Ok(())
}

#[tokio::main]
async fn main() -> ExitCode {
    report::run_main(NAME, run).await
}

async fn run(write: Option<String>) -> Res<bool> {
    let start = report::RunStart::now();
    progress(NAME, "creating a fresh database");
    let db = TestDb::new().await;
    db.exec(SETUP).await;
    let options = (*db.admin().connect_options()).clone();
    let schedule = CronSchedule::new(EXPRESSION, "UTC")?;
    let stop = CancellationToken::new();
    let mut replicas = Vec::new();
    for holder in ["replica-a", "replica-b", "replica-c"]
        .into_iter()
        .take(REPLICAS)
    {
        let pool = PgPoolOptions::new()
            .max_connections(4)
            .connect_with(options.clone())
            .await?;
        let runtime = Runtime::builder(pool)
            .timings(Timings::DEFAULT)
            .holder_id(holder)
            .with_state(Replica(holder))
            .role(ROLE, schedule.clone(), record)
            .build()?;
        replicas.push(tokio::spawn(runtime.run_until_cancelled(stop.clone())));
    }
    progress(
        NAME,
        &format!(
            "{REPLICAS} replicas on {EXPRESSION:?}: waiting for {} instants",
            INSTANTS + WARM_UP
        ),
    );
    while db.count("SELECT count(*) FROM starts").await < INSTANTS + WARM_UP {
        tokio::time::sleep(Duration::from_millis(200)).await;
    }
    stop.cancel();
    for replica in replicas {
        replica.await??;
    }
    let span = start.end();

    let rows: Vec<(DateTime<Utc>, f64, f64, String)> = sqlx::query_as(
        "SELECT instant,
                extract(epoch FROM granted_at - instant)::float8 * 1000,
                extract(epoch FROM started_at - instant)::float8 * 1000,
                holder
           FROM starts ORDER BY instant OFFSET $1 LIMIT $2",
    )
    .bind(WARM_UP)
    .bind(INSTANTS)
    .fetch_all(db.admin())
    .await?;
    let twice = db
        .count("SELECT count(*) FROM (SELECT instant FROM starts GROUP BY instant HAVING count(*) > 1) t")
        .await;
    let early = db
        .count("SELECT count(*) FROM starts WHERE granted_at < instant")
        .await;
    let skipped = rows
        .windows(2)
        .filter(|pair| pair[1].0 - pair[0].0 != chrono::Duration::seconds(1))
        .count();
    let grant: Vec<f64> = rows.iter().map(|r| r.1).collect();
    let job: Vec<f64> = rows.iter().map(|r| r.2).collect();
    let by_holder = |name: &str| rows.iter().filter(|r| r.3 == name).count();

    let mut r = String::new();
    let w = &mut r;
    report::header(w, "Calendar schedules: start delay", NAME, &span, COMMAND)?;
    writeln!(
        w,
        "{REPLICAS} runtimes in one process, each with its own pool, lead one role on `{EXPRESSION}` \
         (every second, UTC) at the default timings (`max_poll` 5 s, so a follower's jitter is at \
         most 250 ms). Each tick records, fenced, its instant, its grant and its job's start, all on \
         the database clock. Measured: {} instants after {WARM_UP} of warm-up.\n",
        rows.len()
    )?;
    writeln!(
        w,
        "| measure | median | max | target |\n|---|---:|---:|---|"
    )?;
    writeln!(
        w,
        "| grant after the instant (ms) | {:.1} | {:.1} | median ≤ {TARGET_MEDIAN_MS:.0}, max ≤ {TARGET_MAX_MS:.0}: {} |",
        median(grant.clone()),
        max(&grant),
        if median(grant.clone()) <= TARGET_MEDIAN_MS && max(&grant) <= TARGET_MAX_MS {
            "met"
        } else {
            "missed"
        }
    )?;
    writeln!(
        w,
        "| job start after the instant (ms) | {:.1} | {:.1} | |\n",
        median(job.clone()),
        max(&job)
    )?;
    writeln!(w, "| check | value |\n|---|---:|")?;
    writeln!(w, "| instants recorded twice (must be 0) | {twice} |")?;
    writeln!(
        w,
        "| ticks granted before their instant (must be 0) | {early} |"
    )?;
    writeln!(
        w,
        "| gaps between consecutive measured instants (missed = latest may skip under load) | {skipped} |"
    )?;
    writeln!(
        w,
        "| ticks per replica | {} |\n",
        ["replica-a", "replica-b", "replica-c"]
            .map(|h| format!("{h} {}", by_holder(h)))
            .join(", ")
    )?;
    let version: String = sqlx::query_scalar("SELECT version()")
        .fetch_one(db.admin())
        .await?;
    report::machine_section(
        w,
        &span,
        &version,
        "a throwaway cluster (leader-testkit), direct connections",
    )?;
    print!("{r}");
    Ok(report::conclude(
        NAME,
        &r,
        write.as_deref(),
        twice == 0 && early == 0,
        "an instant ran twice or early",
    )?)
}
