//! `drill`: fault drills on real processes (see `scripts/drill` and
//! `docs/benchmarks/failure-correctness.md`).

use std::collections::BTreeMap;
use std::process::ExitCode;
use std::time::Duration;

use billing_demo::checks::Kind;
use clap::Parser;
use leader_drills::fault::Fault;
use leader_drills::run::{
    DrillError, RoleSettling, RunConfig, RunResult, SETTLING_WINDOW, Servers, Settling,
    default_log_dir, replica_binary, violated,
};
use leader_testkit::PoolerSettings;

/// Runs the reference application's replicas as processes, strikes the leader of a long-tick
/// role (or the database, or the pooler) mid-tick, and checks every grant, claim, completion and
/// effect afterwards. Exits 1 on any safety violation (or if the seeded bug goes unnoticed).
#[derive(Debug, Parser)]
struct Args {
    /// CI mode: each fault once at TTL 3 s through PgBouncer, then the seeded-bug freeze, the
    /// `token + 1` failover and the seeded takeover with anchors (direct), which must each
    /// report a violation; only safety decides the exit code.
    #[arg(long)]
    quick: bool,
    /// The faults to run (default: all).
    #[arg(long, value_delimiter = ',')]
    faults: Vec<Fault>,
    /// Lease TTLs in milliseconds, each a table of its own.
    #[arg(long, value_delimiter = ',', default_value = "10000,3000")]
    ttl_ms: Vec<u64>,
    /// Runs per fault and TTL (the first goes through PgBouncer, the rest direct; the pooler
    /// restart always goes through PgBouncer).
    #[arg(long, default_value_t = 5)]
    runs: usize,
    /// Replica processes.
    #[arg(long, default_value_t = 3)]
    replicas: usize,
    /// Also run the seeded-bug mode (the fence replaced by `true`) under the freeze fault,
    /// direct, which must report a violation: up to five freezes, until one leaves the
    /// superseded leader claiming.
    #[arg(long)]
    seeded_bug: bool,
    /// Also run the failover with the drill-only `token + 1` override (no clock term), which
    /// must report a re-issued token.
    #[arg(long)]
    token_plus_one: bool,
    /// Also run the kill with anchors and the seeded takeover bug (ACQUIRE takes over a lease
    /// whose holder's anchor lives), which must report a violation.
    #[arg(long)]
    seeded_takeover: bool,
    /// Lead the drill's ledger role by a session advisory lock instead of a lease (the
    /// comparison); meant with --faults kill,sever,freeze,pooler-restart.
    #[arg(long)]
    advisory_lock: bool,
    /// Run the replicas with `take_over_when_dead` (issue 33): a dead replica's leases move when
    /// the server ends its anchor session, not at their expiry.
    #[arg(long)]
    anchors: bool,
    /// Send every run through PgBouncer, not only the first of each fault.
    #[arg(long)]
    pooler_every_run: bool,
    /// PgBouncer's `server_login_retry` in milliseconds (default: PgBouncer's, 15 s): how long
    /// it waits after a failed server login, which bounds the outage of a restart or failover
    /// behind it.
    #[arg(long)]
    server_login_retry_ms: Option<u64>,
    /// PgBouncer's `idle_transaction_timeout` in milliseconds (default: off): frees the server
    /// connection of a client frozen or cut off inside a transaction.
    #[arg(long)]
    idle_transaction_timeout_ms: Option<u64>,
}

fn refuse_unworkable(args: &Args) -> Result<(), String> {
    if !args.anchors && args.faults.iter().any(|f| f.needs_anchors()) {
        return Err(
            "--faults anchor-end needs --anchors: without them there is no anchor to end".into(),
        );
    }
    if args.replicas < 2 {
        return Err(format!(
            "--replicas {}: a takeover needs a second replica; use --replicas 2 or more",
            args.replicas
        ));
    }
    if args.runs == 0 {
        return Err("--runs 0: nothing would run; use --runs 1 or more".into());
    }
    if let Some(ttl) = args.ttl_ms.iter().find(|ttl| **ttl < 1_000) {
        return Err(format!(
            "--ttl-ms {ttl}: too short for the replicas' statement timeout (a fifth of the TTL); \
             use 1000 or more"
        ));
    }
    Ok(())
}

#[tokio::main(flavor = "multi_thread", worker_threads = 2)]
async fn main() -> ExitCode {
    let mut args = Args::parse();
    if let Err(why) = refuse_unworkable(&args) {
        eprintln!("drill: {why}");
        return ExitCode::from(2);
    }
    let advisory_faults = [
        Fault::Kill,
        Fault::Sever,
        Fault::Freeze,
        Fault::Term,
        Fault::PoolerRestart,
    ];
    if args.advisory_lock && !args.faults.iter().all(|f| advisory_faults.contains(f)) {
        eprintln!(
            "drill: --advisory-lock needs --faults from kill,sever,freeze,term,pooler-restart \
             (the others act on the lease row or need its fence)"
        );
        return ExitCode::from(2);
    }
    if args.quick {
        args.ttl_ms = vec![3_000];
        args.runs = 1;
        args.seeded_bug = true;
        args.token_plus_one = true;
        args.seeded_takeover = true;
    }
    if args.faults.is_empty() {
        args.faults = Fault::ALL
            .into_iter()
            .filter(|f| args.anchors || !f.needs_anchors())
            .collect();
    }
    // Stopped by a signal, the drill's future is dropped before `main` returns: its replicas are
    // killed and its servers, links and network namespaces removed, which the default action
    // (the process ends at once) would leave behind.
    let outcome = tokio::select! {
        outcome = drill(&args) => outcome,
        (name, number) = stop_signal() => {
            eprintln!("drill: stopped by {name}; removing its replicas, servers and network namespaces");
            return ExitCode::from(128 + number);
        }
    };
    match outcome {
        Ok(true) => ExitCode::SUCCESS,
        Ok(false) => ExitCode::from(1),
        Err(error) => {
            eprintln!("drill: {error}");
            ExitCode::from(2)
        }
    }
}

/// The first SIGTERM, SIGINT or SIGHUP to arrive: its name and number.
async fn stop_signal() -> (&'static str, u8) {
    use tokio::signal::unix::{SignalKind, signal};
    let listen = |kind| signal(kind).expect("a signal handler can be installed");
    let (mut term, mut int, mut hup) = (
        listen(SignalKind::terminate()),
        listen(SignalKind::interrupt()),
        listen(SignalKind::hangup()),
    );
    tokio::select! {
        _ = term.recv() => ("SIGTERM", 15),
        _ = int.recv() => ("SIGINT", 2),
        _ = hup.recv() => ("SIGHUP", 1),
    }
}

fn secs(d: Duration) -> String {
    format!("{:.1}", d.as_secs_f64())
}

fn print_run(result: &RunResult) {
    let c = &result.config;
    println!(
        "{:<21} ttl {:>4.1}s {:<9} {:<5} leader {:<10} outage {:>6}{}  safety {}  liveness {}{}{}",
        c.fault.name(),
        c.ttl.as_secs_f64(),
        if c.via_pooler { "pgbouncer" } else { "direct" },
        result.link,
        result.victim.as_deref().unwrap_or("-"),
        result
            .outage
            .map(|o| format!("{}s", secs(o)))
            .unwrap_or_else(|| "never".into()),
        result
            .takeover
            .map(|t| format!(" (from the fault {}s)", secs(t)))
            .unwrap_or_default(),
        if violated(result, Kind::Safety) {
            "FAIL"
        } else {
            "ok"
        },
        if violated(result, Kind::Liveness) {
            "FAIL"
        } else {
            "ok"
        },
        if c.seeded_bug { "  (seeded bug)" } else { "" },
        if c.advisory_lock {
            "  (advisory lock)"
        } else if c.anchors {
            "  (anchors)"
        } else {
            ""
        },
    );
    for line in result.report.lines() {
        if line.starts_with("[FAIL]") {
            println!("    {line}");
        }
    }
    for note in &result.notes {
        println!("    note: {note}");
    }
    if let Some(settling) = &result.settling {
        print_settling(settling);
    }
}

/// The run's grants per role in the minute after the server came back, and its verdict.
fn print_settling(settling: &Settling) {
    let each = |figure: fn(&RoleSettling) -> i64| {
        settling
            .roles
            .iter()
            .map(|r| {
                let rows = if r.rows > 1 {
                    format!(" ({} rows)", r.rows)
                } else {
                    String::new()
                };
                format!("{} {}{rows}", r.role, figure(r))
            })
            .collect::<Vec<_>>()
            .join(", ")
    };
    println!(
        "    the {} s after the server came back (at {} on its clock): grants {}; leases ended \
         early {}; {}",
        SETTLING_WINDOW.as_secs(),
        settling.back_at.format("%H:%M:%S%.3f"),
        each(|r| r.grants),
        each(|r| r.early_ends),
        if settling.storm() {
            "STORM: a role had more leases ended early than lease rows"
        } else {
            "no storm"
        }
    );
}

/// How many seeded-bug freezes to try before giving up on exposing the bug.
const SEEDED_TRIES: usize = 5;

/// Runs the seeded-bug freeze until a run exposes the bug (see
/// [`leader_drills::run::Resumed::exposed`]): true if the checker reported that run. A run that
/// did not expose it (no takeover during the freeze, or a freeze at the very end of a unit of
/// work, after which the resumed leader claims nothing) says nothing about the checker and is
/// followed by another. Direct, not through PgBouncer: a leader frozen inside transactions on
/// both of the pool's server connections holds up every other replica's ACQUIRE until it
/// resumes (failure-correctness.md), so no takeover happens while it is frozen.
async fn seeded_bug(args: &Args, servers: &Servers, index: &mut usize) -> Result<bool, DrillError> {
    for _ in 0..SEEDED_TRIES {
        *index += 1;
        let config = RunConfig {
            fault: Fault::Freeze,
            ttl: Duration::from_millis(args.ttl_ms[0]),
            via_pooler: false,
            replicas: args.replicas,
            seeded_bug: true,
            token_plus_one: false,
            advisory_lock: false,
            anchors: false,
            takeover_without_anchor_check: false,
            settling: false,
        };
        let result = servers.run(*index, &config).await?;
        print_run(&result);
        let resumed = result
            .resumed
            .ok_or("the seeded-bug freeze recorded nothing of the resumed leader")?;
        let reported = violated(&result, Kind::Safety);
        let verdict = match (resumed.exposed(), reported) {
            (_, true) => "the checker reported the violation",
            (true, false) => "NOT CAUGHT: the checker missed a superseded leader's claims",
            (false, false) if !resumed.superseded => {
                "not exposed: no newer token was granted while the leader was frozen; again"
            }
            (false, false) => {
                "not exposed: the resumed leader claimed nothing (frozen at the end of a unit); again"
            }
        };
        println!(
            "seeded bug (leader_fence replaced by true) under the freeze: {} claims by the \
             superseded leader after it resumed; {verdict}",
            resumed.claims
        );
        if reported || resumed.exposed() {
            return Ok(reported);
        }
    }
    println!(
        "seeded bug: NOT EXERCISED: {SEEDED_TRIES} freezes, none of which left a superseded \
         leader claiming"
    );
    Ok(false)
}

async fn drill(args: &Args) -> Result<bool, DrillError> {
    let log_dir = default_log_dir();
    let pooler = PoolerSettings {
        pool_size: 2,
        server_login_retry: args.server_login_retry_ms.map(Duration::from_millis),
        idle_transaction_timeout: args.idle_transaction_timeout_ms.map(Duration::from_millis),
        server_idle_timeout: None,
        ignore_startup_options: false,
    };
    let servers = Servers::start(log_dir.clone(), replica_binary()?, args.replicas, pooler)?;
    println!(
        "drill: PostgreSQL on port {}, PgBouncer 1.18 (transaction mode, pool of 2{}{}) on port \
         {}, {} replicas, severed links by {}, logs in {}",
        servers.cluster.port(),
        pooler
            .server_login_retry
            .map(|d| format!(", server_login_retry {d:?}"))
            .unwrap_or_default(),
        pooler
            .idle_transaction_timeout
            .map(|d| format!(", idle_transaction_timeout {d:?}"))
            .unwrap_or_default(),
        servers.pooler.port(),
        args.replicas,
        if servers.netns.is_some() {
            "network namespaces (a veth pair per replica, set down)"
        } else {
            "the TCP proxy"
        },
        log_dir.display()
    );
    let mut index = 0;
    let mut safe = true;
    let mut results: BTreeMap<(u64, Fault), Vec<RunResult>> = BTreeMap::new();
    for &ttl_ms in &args.ttl_ms {
        for &fault in &args.faults {
            for run in 0..args.runs {
                index += 1;
                let config = RunConfig {
                    fault,
                    ttl: Duration::from_millis(ttl_ms),
                    via_pooler: run == 0 || fault.needs_pooler() || args.pooler_every_run,
                    replicas: args.replicas,
                    seeded_bug: false,
                    token_plus_one: false,
                    advisory_lock: args.advisory_lock,
                    anchors: args.anchors,
                    takeover_without_anchor_check: false,
                    settling: !args.quick,
                };
                let result = servers.run(index, &config).await?;
                print_run(&result);
                safe &= !violated(&result, Kind::Safety);
                results.entry((ttl_ms, fault)).or_default().push(result);
            }
        }
    }
    let mut caught = true;
    if args.seeded_bug {
        caught = seeded_bug(args, &servers, &mut index).await?;
    }
    let mut counterexample = true;
    if args.token_plus_one {
        index += 1;
        let config = RunConfig {
            fault: Fault::Failover,
            ttl: Duration::from_millis(args.ttl_ms[0]),
            via_pooler: false,
            replicas: args.replicas,
            seeded_bug: false,
            token_plus_one: true,
            advisory_lock: false,
            anchors: false,
            takeover_without_anchor_check: false,
            settling: false,
        };
        let result = servers.run(index, &config).await?;
        print_run(&result);
        counterexample = violated(&result, Kind::Safety);
        println!(
            "token + 1 (no clock term) across the failover: {}",
            if counterexample {
                "the checker reported the re-issued token"
            } else {
                "NOT CAUGHT: no re-issued token reported"
            }
        );
    }
    if args.seeded_takeover {
        index += 1;
        let config = RunConfig {
            fault: Fault::Kill,
            ttl: Duration::from_millis(args.ttl_ms[0]),
            via_pooler: false,
            replicas: args.replicas,
            seeded_bug: false,
            token_plus_one: false,
            advisory_lock: false,
            anchors: true,
            takeover_without_anchor_check: true,
            settling: false,
        };
        let result = servers.run(index, &config).await?;
        print_run(&result);
        let reported = violated(&result, Kind::Safety);
        counterexample &= reported;
        println!(
            "takeover without the anchor check: {}",
            if reported {
                "the checker reported the live holder's lease taken"
            } else {
                "NOT CAUGHT: no early grant of a live holder reported"
            }
        );
    }
    if !args.quick {
        print_tables(&results);
        print_settling_tables(&results, args.anchors);
    }
    let caught = caught && counterexample;
    println!(
        "{}",
        if safe && caught {
            "drill passed: no safety violation"
        } else {
            "DRILL FAILED"
        }
    );
    Ok(safe && caught)
}

fn print_tables(results: &BTreeMap<(u64, Fault), Vec<RunResult>>) {
    let mut ttls: Vec<u64> = results.keys().map(|(ttl, _)| *ttl).collect();
    ttls.dedup();
    for ttl in ttls {
        println!();
        println!(
            "TTL {:.0} s | runs | outage median | outage max | from the fault: median / max | safety violations | liveness failures | outage measured",
            ttl as f64 / 1000.0
        );
        println!("---|---|---|---|---|---|---|---");
        for ((_, fault), runs) in results.range((ttl, Fault::Kill)..=(ttl, Fault::ReadOnly)) {
            let mut outages: Vec<Duration> = runs.iter().filter_map(|r| r.outage).collect();
            outages.sort();
            let never = runs.len() - outages.len();
            let median = outages
                .get(outages.len().saturating_sub(1) / 2)
                .map(|d| format!("{} s", secs(*d)));
            let max = if never > 0 {
                Some(format!("never ({never} runs)"))
            } else {
                outages.last().map(|d| format!("{} s", secs(*d)))
            };
            let mut takeovers: Vec<Duration> = runs.iter().filter_map(|r| r.takeover).collect();
            takeovers.sort();
            let from_fault = match (takeovers.first(), takeovers.last()) {
                (Some(_), Some(max)) => format!(
                    "{} s / {} s",
                    secs(takeovers[(takeovers.len() - 1) / 2]),
                    secs(*max)
                ),
                _ => "-".into(),
            };
            println!(
                "{fault} | {} | {} | {} | {from_fault} | {} | {} | {}",
                runs.len(),
                median.unwrap_or_else(|| "-".into()),
                max.unwrap_or_else(|| "-".into()),
                runs.iter()
                    .map(|r| r
                        .report
                        .checks
                        .iter()
                        .filter(|c| c.kind == Kind::Safety)
                        .map(|c| c.violations)
                        .sum::<i64>())
                    .sum::<i64>(),
                runs.iter().filter(|r| violated(r, Kind::Liveness)).count(),
                fault.outage_means()
            );
        }
    }
}

/// For each fault that ends every session, each role's grants in the minute after the server
/// came back, over the runs.
fn print_settling_tables(results: &BTreeMap<(u64, Fault), Vec<RunResult>>, anchors: bool) {
    for ((ttl, fault), runs) in results {
        let settled: Vec<(&Settling, bool)> = runs
            .iter()
            .filter_map(|r| r.settling.as_ref().map(|s| (s, r.config.via_pooler)))
            .collect();
        let Some((first, _)) = settled.first() else {
            continue;
        };
        println!();
        println!(
            "TTL {:.0} s, {fault}, {}: grants per role in the {} s after the server came back \
             (database clock; each run in order, (pgbouncer) marks a run through PgBouncer). \
             Storm: more leases of a role ended early than it has rows",
            *ttl as f64 / 1000.0,
            if anchors {
                "with anchors"
            } else {
                "without anchors"
            },
            SETTLING_WINDOW.as_secs()
        );
        println!(
            "role | lease rows | grants, each run | grants median | grants max | ended early, each run | runs with a storm"
        );
        println!("---|---|---|---|---|---|---");
        for role in &first.roles {
            // The role in each run, and whether that run went through PgBouncer.
            let per_run: Vec<(&RoleSettling, bool)> = settled
                .iter()
                .filter_map(|(s, via_pooler)| s.role(&role.role).map(|r| (r, *via_pooler)))
                .collect();
            let mut grants: Vec<i64> = per_run.iter().map(|(r, _)| r.grants).collect();
            grants.sort();
            let listed = |figure: fn(&RoleSettling) -> i64| {
                per_run
                    .iter()
                    .map(|(r, via_pooler)| {
                        let pooler = if *via_pooler { " (pgbouncer)" } else { "" };
                        format!("{}{pooler}", figure(r))
                    })
                    .collect::<Vec<_>>()
                    .join(", ")
            };
            println!(
                "{} | {} | {} | {} | {} | {} | {}",
                role.role,
                role.rows,
                listed(|r| r.grants),
                grants[(grants.len() - 1) / 2],
                grants[grants.len() - 1],
                listed(|r| r.early_ends),
                per_run.iter().filter(|(r, _)| r.storm()).count()
            );
        }
    }
}
