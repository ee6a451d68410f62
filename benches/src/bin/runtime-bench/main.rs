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
const HANDOFF: Role = Role::from_static("handoff");
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

mod handoff;
mod idle;
mod scale;
mod server_log;
mod takeover;

use handoff::*;
use idle::*;
use scale::*;
use server_log::*;
use takeover::*;

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
    let start = report::RunStart::now();
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
    let mut scale = Vec::with_capacity(SCALE_SETUPS.len());
    for setup in SCALE_SETUPS {
        progress(
            NAME,
            &format!(
                "part 3: {} roles on {} runtimes at the default timings (settle {} s, count {} s)",
                setup.0,
                setup.1,
                SCALE_SETTLE.as_secs(),
                SCALE_WINDOW.as_secs()
            ),
        );
        scale.push(idle_scale(&options, &mut admin, &mut marker, &log, setup).await?);
    }

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
    handoff_setup(&mut admin).await?;
    let mut handoffs: Vec<(bool, Vec<f64>)> = Vec::new();
    for wake in [false, true] {
        let mut runs = Vec::with_capacity(HANDOFF_RUNS);
        for (run, point) in release_points(HANDOFF_RUNS).into_iter().enumerate() {
            let id = (run + if wake { HANDOFF_RUNS } else { 0 }) as i32;
            let secs = handoff_run(&options, &mut admin, id, wake, point).await?;
            progress(
                NAME,
                &format!(
                    "part 4: clean-shutdown handoff {}, run {}: {:.0} ms",
                    if wake { "with wake" } else { "polling only" },
                    run + 1,
                    secs * 1e3
                ),
            );
            runs.push(secs);
        }
        handoffs.push((wake, runs));
    }
    drop(admin);
    drop(marker);
    drop(maintenance);

    let span = start.end();

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
        &span,
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
        &span,
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
         markers excluded) was counted from the server log and classified by the name in its leading comment (`/* leader:acquire */`).\n",
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
    writeln!(w)?;

    scale_section(w, &scale)?;
    handoff_section(w, &handoffs)?;

    print!("{r}");
    Ok(report::conclude(NAME, &r, write, ok, "a check failed")?)
}

/// The report's section for part 3.
fn scale_section(w: &mut String, runs: &[ScaleRun]) -> Res<()> {
    let t = Timings::DEFAULT;
    writeln!(
        w,
        "## 3. Idle load over many roles, at the default timings\n"
    )?;
    writeln!(
        w,
        "Each setup: that many `Runtime`s in one process (each its own pool of at most 2 \
         connections and its own holder id), each registering the same roles (`scale_000`, …), \
         at `Timings::DEFAULT` (TTL {:?}, heartbeat {:?}, max poll {:?}; status refresh every \
         15 s). Every job waits on `tick.cancelled()`, so leaders only renew and the rest only \
         poll. Once every role is held, {} s to settle, then every statement the server logged \
         in a {} s window, counted as in part 1. A replica polls for all its roles not in a tick \
         with one ACQUIRE (`batch::acquire_many`) and renews all its leases with one RENEW \
         (`batch::renew_many`).\n",
        t.ttl(),
        t.heartbeat(),
        t.max_poll(),
        SCALE_SETTLE.as_secs(),
        SCALE_WINDOW.as_secs()
    )?;
    writeln!(
        w,
        "| roles | replicas | replicas leading | ACQUIRE/s | RENEW/s | other/s | **all/s** |"
    )?;
    writeln!(w, "|---:|---:|---:|---:|---:|---:|---:|")?;
    for run in runs {
        let rest = run.window.rate()
            - run.window.kind_rate(Kind::Acquire)
            - run.window.kind_rate(Kind::Renew);
        writeln!(
            w,
            "| {} | {} | {} | {:.2} | {:.2} | {:.2} | **{:.2}** |",
            run.roles,
            run.replicas,
            run.leaders,
            run.window.kind_rate(Kind::Acquire),
            run.window.kind_rate(Kind::Renew),
            rest,
            run.window.rate()
        )?;
    }
    let rate = |roles: usize, replicas: usize| {
        runs.iter()
            .find(|r| r.roles == roles && r.replicas == replicas)
            .map(|r| r.window.rate())
    };
    if let (Some(many), Some(one)) = (rate(100, 16), rate(1, 16)) {
        let ratio = many / one;
        writeln!(
            w,
            "\n- **100 roles × 16 replicas: {many:.2} statements/s, {ratio:.2}× 1 role × 16 \
             replicas ({one:.2}/s)** (target ≤ {SCALE_TARGET_RATIO:.0}×: **{}**).",
            if ratio <= SCALE_TARGET_RATIO {
                "met"
            } else {
                "not met"
            }
        )?;
    }
    writeln!(
        w,
        "- \"other\" is the status reads (one per replica every 15 s) and any RELEASE.\n"
    )?;
    Ok(())
}

/// The report's section for part 4.
fn handoff_section(w: &mut String, handoffs: &[(bool, Vec<f64>)]) -> Res<()> {
    let t = timings();
    writeln!(
        w,
        "\n## 4. Handoff after a clean shutdown, with and without wake\n"
    )?;
    writeln!(
        w,
        "{HANDOFF_RUNS} runs each, at the TTL 3 s timings above (max poll {:?}). Each run starts a \
         leader `Runtime`, then a follower; {} ms plus a point of one max poll (0–{} ms) later the \
         leader is shut down (its `CancellationToken`, as a SIGTERM would), so the release lands \
         at a random point of the follower's poll cycle. The points are stratified: each run \
         draws uniformly from its own 1/{HANDOFF_RUNS} of the cycle, in shuffled order, so the \
         runs cover the cycle evenly and the median does not hang on where {HANDOFF_RUNS} \
         independent draws bunch up. The leader's job records \
         `clock_timestamp()` when it sees the shutdown, then returns and its tick is released \
         (`shutdown`: no cooldown); the follower's job records `clock_timestamp()` when it \
         starts. The handoff is the difference, on the database clock. **Wake**: both runtimes \
         with `RuntimeBuilder::wake` on a direct connection: RELEASE notifies \
         `leader_released`, the follower polls on the notification.\n",
        t.max_poll(),
        HANDOFF_SETTLE.as_millis(),
        t.max_poll().as_millis()
    )?;
    writeln!(
        w,
        "| setup | runs | median (ms) | max (ms) | min (ms) | target |"
    )?;
    writeln!(w, "|---|---:|---:|---:|---:|---|")?;
    for (wake, runs) in handoffs {
        let (target, limit) = if *wake {
            ("≤ 100 ms median", TARGET_WAKE_HANDOFF.as_secs_f64())
        } else {
            ("≤ max poll / 2 median", t.max_poll().as_secs_f64() / 2.0)
        };
        let med = median(runs.clone());
        writeln!(
            w,
            "| {} | {} | **{:.0}** | {:.0} | {:.0} | {target}: **{}** |",
            if *wake { "wake" } else { "polling only" },
            runs.len(),
            med * 1e3,
            max(runs) * 1e3,
            min(runs) * 1e3,
            if med <= limit { "met" } else { "not met" }
        )?;
    }
    // The runtime polls a held role every max poll minus a jitter of up to a tenth of it (at
    // most 250 ms), so a release uniform over that cycle waits half its mean, plus what the
    // handoff's own statements take (the wake setup's median).
    let jitter_cap = (t.max_poll() / 10).min(Duration::from_millis(250));
    let mean_cycle = t.max_poll() - jitter_cap / 2;
    if let Some((_, woken)) = handoffs.iter().find(|(wake, _)| *wake) {
        writeln!(
            w,
            "\nWithout wake the design expects a median of about {:.0} ms: half the mean poll \
             cycle of a held role ({:.0} ms: max poll minus 0–{} ms of jitter) plus the \
             handoff's statements (the wake median, {:.0} ms).",
            (mean_cycle.as_secs_f64() / 2.0 + median(woken.clone())) * 1e3,
            mean_cycle.as_secs_f64() * 1e3,
            jitter_cap.as_millis(),
            median(woken.clone()) * 1e3
        )?;
    }
    writeln!(w)?;
    Ok(())
}
