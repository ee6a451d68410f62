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
//! `runtime-bench tick-cost ...` compares two builds of this benchmark (before and after a change
//! to the lease statements): see `tick_cost`.
//!
//! Parts 3 to 7 are described in their modules: `scale`, `handoff`, `takeover` (part 5, a dead
//! holder's takeover with anchors), `anchor_loss` (6, an anchor ended while its holder lives) and
//! `sharded_takeover` (7, a sharded role's shards after SIGKILL) and `pause` (8, a pause reaching
//! the running tick). The replica processes of parts
//! 2 and 5 to 7 are `replicas`.
//!
//! It always starts its own throwaway cluster (`DATABASE_URL` is ignored): it reads the server's
//! log file. Every connection is direct: no pooler. No server or replica process outlives it:
//! the cluster is stopped on exit (and by the testkit's watchdog otherwise), replicas are killed
//! by the parent and also exit when their stdin (a pipe from the parent) closes.
//!
//! When PATH already holds a report, only the text between the generated-report markers is
//! replaced, so hand-written notes outside them survive a re-run.

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
use leader_core::{Fence, Role, Timings};
use leader_runtime::{CancelCause, JobError, Runtime, TickContext};
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
const HANDOFF: Role = Role::from_static("handoff");
const PAUSE: Role = Role::from_static("pause");
const ROLES_UP: &str = include_str!("../../../migrations/runtime-roles.up.sql");
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

// Part 3 (run between parts 1 and 2).
const SCALE_SETTLE: Duration = Duration::from_secs(6);
const SCALE_WINDOW: Duration = Duration::from_secs(30);

// Part 4 (run after part 2).
const HANDOFF_RUNS: usize = 30;
/// How long the follower runs before the random part of the shutdown delay starts.
const HANDOFF_SETTLE: Duration = Duration::from_millis(1_000);
const TARGET_WAKE_HANDOFF: Duration = Duration::from_millis(100);

// Part 5 (run after part 4).
const DEAD_HOLDER_TTLS: [Duration; 2] = [Duration::from_secs(3), Duration::from_secs(10)];
const DEAD_HOLDER_RUNS: usize = 7;
const DEAD_HOLDER_TARGET_MEDIAN: Duration = Duration::from_millis(100);
const DEAD_HOLDER_TARGET_MAX: Duration = Duration::from_millis(300);

// Part 8 (run last).
const PAUSE_RUNS: usize = 24;
const PAUSE_RUNS_WITHOUT: usize = 12;

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
    shard      integer     NOT NULL,
    started_at timestamptz NOT NULL,
    -- When the job saw its tick cancelled, and why (`CancelCause::as_str`).
    cancelled_at timestamptz,
    cause      text
)";

fn timings() -> Timings {
    Timings::scaled_to_ttl(TTL).expect("TTL 3 s scales to valid timings")
}

fn secs_between(from: DateTime<Utc>, to: DateTime<Utc>) -> f64 {
    (to - from).num_microseconds().unwrap_or(i64::MAX) as f64 / 1e6
}

mod anchor_loss;
mod handoff;
mod idle;
mod pause;
mod replicas;
mod scale;
mod sharded_takeover;
mod takeover;
mod tick_cost;

use anchor_loss::*;
use handoff::*;
use idle::*;
use leader_benches::server_log::*;
use pause::*;
use replicas::*;
use scale::*;
use sharded_takeover::*;
use takeover::*;

enum Args {
    Bench {
        write: Option<String>,
    },
    Replica {
        url: String,
        holder: String,
        run: i32,
        setup: Setup,
    },
    TickCostMeasure,
    TickCostCompare(Vec<String>),
}

fn parse_args() -> Result<Args, String> {
    let args: Vec<String> = std::env::args().skip(1).collect();
    if args.first().map(String::as_str) == Some("replica") {
        let [_, url, holder, run, ttl_ms, mode, lead] = args.as_slice() else {
            return Err(
                "replica needs URL HOLDER RUN TTL_MS anchors|expiry role|shards=COUNT".into(),
            );
        };
        let run = run.parse().map_err(|e| format!("bad run number: {e}"))?;
        return Ok(Args::Replica {
            url: url.clone(),
            holder: holder.clone(),
            run,
            setup: Setup::parse(ttl_ms, mode, lead)?,
        });
    }
    if args.first().map(String::as_str) == Some("tick-cost") {
        return match args.get(1).map(String::as_str) {
            Some("measure") if args.len() == 2 => Ok(Args::TickCostMeasure),
            Some("compare") => Ok(Args::TickCostCompare(args[2..].to_vec())),
            _ => Err(
                "tick-cost needs `measure` or `compare BEFORE AFTER [--runs N] [--write PATH]`"
                    .into(),
            ),
        };
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
        Args::Replica {
            url,
            holder,
            run,
            setup,
        } => replica(&url, &holder, run, setup).await.map(|()| true),
        Args::Bench { write } => bench(write.as_deref()).await,
        Args::TickCostMeasure => tick_cost::measure().await.map(|line| {
            println!("{line}");
            true
        }),
        Args::TickCostCompare(args) => tick_cost::compare(&args).await,
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
    let start = report::RunStart::now();
    let log: PathBuf = cluster.log_path();
    let (maintenance, options, version) =
        create_logged_database(cluster, DATABASE, &[ROLES_UP, TICKS_TABLE]).await?;
    let mut admin = options.connect().await?;
    let mut marker = options.connect().await?;
    let log_statement = machine::setting(&mut marker, "log_statement").await?;
    if log_statement != "all" {
        return Err(format!("log_statement is {log_statement:?} on a new connection").into());
    }

    let idle = idle_load(&options, &mut admin, &mut marker, &log).await?;
    let scale = scale_load(&options, &mut admin, &mut marker, &log).await?;
    let (takeovers, takeover_errors) = takeover_runs(cluster, &mut admin).await?;
    let handoffs = handoff_runs(&options, &mut admin).await?;
    let dead_holders = dead_holder_runs(cluster, &mut admin).await?;
    let anchor_losses = anchor_loss_runs(cluster, &mut admin).await?;
    let shard_takeovers = sharded_takeover_runs(cluster, &mut admin).await?;
    let pauses = pause_runs(&options, &mut admin).await?;
    drop(admin);
    drop(marker);
    drop(maintenance);

    let span = start.end();

    // Checks.
    let idle_ok = idle.runtime.one_leader_throughout();
    let overlap: Vec<usize> = takeovers
        .iter()
        .enumerate()
        .filter(|(_, t)| !t.after_expiry)
        .map(|(i, _)| i + 1)
        .collect();
    let takeover_ok = takeover_errors.is_empty()
        && overlap.is_empty()
        && dead_holders.iter().all(|(_, _, errors)| errors.is_empty());
    let ok = idle_ok && takeover_ok && anchor_losses.ok() && shard_takeovers.ok();

    // The report.
    let mut r = String::new();
    let w = &mut r;
    header(w, &span, &version)?;
    idle_section(w, &idle, idle_ok)?;
    takeover_section(w, &takeovers, &takeover_errors, &overlap)?;
    scale_section(w, &scale)?;
    handoff_section(w, &handoffs)?;
    dead_holder_section(w, &dead_holders)?;
    anchor_loss_section(w, &anchor_losses)?;
    sharded_takeover_section(w, &shard_takeovers)?;
    pause_section(w, &pauses)?;

    print!("{r}");
    Ok(report::conclude(NAME, &r, write, ok, "a check failed")?)
}

/// The report's title, the Machine section and the timings every part runs at.
fn header(w: &mut String, span: &report::RunSpan, version: &str) -> Res<()> {
    let t = timings();
    report::header(
        w,
        "Runtime benchmark: idle load and takeover",
        NAME,
        span,
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
        span,
        version,
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
    Ok(())
}
