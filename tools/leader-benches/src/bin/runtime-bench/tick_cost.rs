//! `runtime-bench tick-cost`: what a change to the lease statements costs, as statements and as
//! latency, measured on two builds of this benchmark (before and after the change) run in turn.
//!
//! `tick-cost measure` measures one build, on a private cluster of its own, and prints one line
//! of `key=value` figures:
//!
//! 1. idle: four runtimes on one role, the leader's tick never ending (part 1's setup): every
//!    statement in a 20 s window, from the server log, per second;
//! 2. ticking: two runtimes on one role ticking every 200 ms, each tick returning at once: every
//!    statement in a 20 s window, per completed tick (a tick ends with exactly one RELEASE);
//! 3. latency: 2,000 ACQUIRE → RELEASE cycles (after 100 to warm up) of one role on one
//!    connection, each statement timed by the client: median and p99 of each.
//!
//! `tick-cost compare BEFORE AFTER [--runs N] [--write PATH]` runs `BEFORE tick-cost measure` and
//! `AFTER tick-cost measure` in turn, N times each (5 by default), alternating so that a change in
//! the machine's load falls on both, and reports the medians of each figure over the runs and the
//! ratio of the medians. `scripts/tick-cost` builds the two binaries (the before one from a
//! commit's tree, with this benchmark's code copied in) and runs it.

use super::*;
use leader_benches::stats::nearest_rank;

const TICK_ROLE: Role = Role::from_static("handoff");
const LATENCY_ROLE: Role = Role::from_static("naive");
const TICK_EVERY: Duration = Duration::from_millis(200);
const TICK_WINDOW: Duration = Duration::from_secs(20);
const CYCLES: usize = 2_000;
const CYCLES_WARMUP: usize = 100;
const RUNS: usize = 5;
/// The targets: no statement more per tick, latency within 10 %.
const TARGET_LATENCY_RATIO: f64 = 1.10;

/// One build's figures, in the order `measure` prints them.
const KEYS: [&str; 8] = [
    "idle_per_s",
    "ticking_per_tick",
    "ticking_ticks",
    "ticking_lease_per_tick",
    "acquire_median_us",
    "acquire_p99_us",
    "release_median_us",
    "release_p99_us",
];

/// `tick-cost measure`: one build's figures, on a private cluster.
pub(super) async fn measure() -> Res<String> {
    let cluster = tokio::task::spawn_blocking(Cluster::start).await??;
    let result = measure_on(&cluster).await;
    tokio::task::spawn_blocking(move || drop(cluster)).await?;
    result
}

async fn measure_on(cluster: &Cluster) -> Res<String> {
    let log = cluster.log_path();
    let (_maintenance, options, _version) =
        create_logged_database(cluster, DATABASE, &[ROLES_UP]).await?;
    let mut admin = options.connect().await?;
    let mut marker = options.connect().await?;

    let (idle, _) = idle_runtime(&options, &mut admin, &mut marker, &log, false).await?;
    let ticking = ticking_window(&options, &mut marker, &log).await?;
    let releases = ticking.by_kind.get(&Kind::Release).copied().unwrap_or(0);
    if releases == 0 {
        return Err("no tick completed in the ticking window".into());
    }
    let lease: usize = [Kind::Acquire, Kind::Renew, Kind::Release]
        .iter()
        .map(|k| ticking.by_kind.get(k).copied().unwrap_or(0))
        .sum();
    let (acquire, release) = latencies(&mut admin).await?;
    let figures = [
        idle.window.rate(),
        ticking.total() as f64 / releases as f64,
        releases as f64,
        lease as f64 / releases as f64,
        acquire.0,
        acquire.1,
        release.0,
        release.1,
    ];
    Ok(KEYS
        .iter()
        .zip(figures)
        .map(|(k, v)| format!("{k}={v:.3}"))
        .collect::<Vec<_>>()
        .join(" "))
}

/// Two runtimes ticking one role every [`TICK_EVERY`], counted over [`TICK_WINDOW`].
async fn ticking_window(
    options: &PgConnectOptions,
    marker: &mut PgConnection,
    log: &Path,
) -> Res<Window> {
    let shutdown = CancellationToken::new();
    let mut runs = Vec::new();
    for i in 0..2 {
        let runtime = Runtime::builder(small_pool(options).await?)
            .timings(timings())
            .holder_id(format!("ticking-{i}"))
            .role(TICK_ROLE, TICK_EVERY, |_tick: TickContext| async move {
                Ok::<(), JobError>(())
            })
            .build()?;
        runs.push(tokio::spawn(runtime.run_until_cancelled(shutdown.clone())));
    }
    tokio::time::sleep(SETTLE).await;
    let window = count_window(marker, log, "ticking", TICK_WINDOW).await?;
    shutdown.cancel();
    for run in runs {
        tokio::time::timeout(Duration::from_secs(15), run).await???;
    }
    Ok(window)
}

/// Median and p99, in microseconds, of ACQUIRE's and of RELEASE's client-side latency.
async fn latencies(admin: &mut PgConnection) -> Res<((f64, f64), (f64, f64))> {
    let t = timings();
    let (mut acquires, mut releases) = (Vec::new(), Vec::new());
    for cycle in 0..CYCLES_WARMUP + CYCLES {
        let started = Instant::now();
        let granted = lease::acquire_one(
            &mut *admin,
            LATENCY_ROLE,
            "latency",
            Duration::from_millis(1),
            &t,
        )
        .await?;
        let acquired = started.elapsed();
        let Acquired::Granted(grant) = granted else {
            return Err(format!("cycle {cycle}: ACQUIRE refused: {granted:?}").into());
        };
        let started = Instant::now();
        let released = lease::release(
            &mut *admin,
            grant.fence,
            leader_core::ReleaseOutcome::Failed,
            Duration::from_millis(1),
            &t,
        )
        .await?;
        let release_took = started.elapsed();
        if !released.changed {
            return Err(format!("cycle {cycle}: RELEASE changed nothing").into());
        }
        // A failed tick cools down for its interval (1 ms) and stamps no completion, so the
        // next ACQUIRE is due at once and every cycle runs the same statements.
        sqlx::query("UPDATE leader_leases SET not_before = NULL WHERE role = $1")
            .bind(LATENCY_ROLE)
            .execute(&mut *admin)
            .await?;
        if cycle >= CYCLES_WARMUP {
            acquires.push(acquired);
            releases.push(release_took);
        }
    }
    Ok((summary(acquires), summary(releases)))
}

fn summary(mut sample: Vec<Duration>) -> (f64, f64) {
    sample.sort_unstable();
    let us = |d: Duration| d.as_secs_f64() * 1e6;
    (
        us(nearest_rank(&sample, 0.5)),
        us(nearest_rank(&sample, 0.99)),
    )
}

/// `tick-cost compare BEFORE AFTER [--runs N] [--write PATH]`.
pub(super) async fn compare(args: &[String]) -> Res<bool> {
    let mut rest = args.iter();
    let (Some(before), Some(after)) = (rest.next(), rest.next()) else {
        return Err("tick-cost compare needs BEFORE AFTER [--runs N] [--write PATH]".into());
    };
    let (mut runs, mut write) = (RUNS, None);
    while let Some(flag) = rest.next() {
        match (flag.as_str(), rest.next()) {
            ("--runs", Some(n)) => runs = n.parse().map_err(|e| format!("--runs: {e}"))?,
            ("--write", Some(path)) => write = Some(path.clone()),
            _ => return Err(format!("tick-cost compare: unexpected {flag:?}").into()),
        }
    }
    let start = report::RunStart::now();
    let mut figures: [Vec<Vec<f64>>; 2] = [Vec::new(), Vec::new()];
    let mut failures: Vec<String> = Vec::new();
    for run in 0..runs {
        for (which, binary) in [before, after].iter().enumerate() {
            progress(NAME, &format!("tick-cost run {}/{runs}: {binary}", run + 1));
            // A run that fails (a cluster that does not start on a loaded machine, a check of
            // part 1 that fails) is said in the report and run again, at most twice.
            let mut attempt = 0;
            let line = loop {
                let out = Command::new(binary)
                    .args(["tick-cost", "measure"])
                    .output()
                    .await?;
                if out.status.success() {
                    break String::from_utf8(out.stdout)?;
                }
                let stderr = String::from_utf8_lossy(&out.stderr);
                let why = stderr.lines().last().unwrap_or("").to_owned();
                progress(NAME, &format!("{binary} tick-cost measure failed: {why}"));
                failures.push(format!("run {} of {binary}: {why}", run + 1));
                attempt += 1;
                if attempt > 2 {
                    return Err(
                        format!("{binary} tick-cost measure failed three times: {why}").into(),
                    );
                }
            };
            figures[which].push(parse(line.trim())?);
        }
    }
    let span = start.end();
    let medians: Vec<Vec<f64>> = figures
        .iter()
        .map(|runs| {
            (0..KEYS.len())
                .map(|k| leader_benches::stats::median(runs.iter().map(|r| r[k]).collect()))
                .collect()
        })
        .collect();
    let (b, a) = (&medians[0], &medians[1]);
    // Statements per tick are not a constant: a follower's polls land in the window as the
    // ticks fall, so they vary from run to run by a few tenths. A statement more per tick would
    // add 1.0. So "unchanged" is: the medians differ by less than the spread of the before runs
    // (and by less than half a statement).
    let spread = |k: usize| {
        let values: Vec<f64> = figures[0].iter().map(|r| r[k]).collect();
        leader_benches::stats::max(&values) - leader_benches::stats::min(&values)
    };
    let unchanged = |k: usize| (a[k] - b[k]).abs() <= spread(k).min(0.5);
    let same_statements = unchanged(1) && unchanged(3);
    let acquire_ratio = a[4] / b[4];
    let release_ratio = a[6] / b[6];
    let latency_ok = acquire_ratio <= TARGET_LATENCY_RATIO && release_ratio <= TARGET_LATENCY_RATIO;

    let mut r = String::new();
    let w = &mut r;
    report::header(
        w,
        "The tick history's cost: statements and latency before and after",
        "runtime-bench tick-cost",
        &span,
        "scripts/tick-cost 1a1ea65 --write docs/benchmarks/runtime.md",
    )?;
    writeln!(
        w,
        "`before` is this benchmark built on the named commit's tree (the lease statements \
         without the tick history), `after` on the working tree; each run starts a private \
         cluster, and the two builds ran in turn, {runs} runs each ({}). Timings: \
         `Timings::scaled_to_ttl(3 s)`. Latency: {CYCLES} ACQUIRE → RELEASE cycles of one role \
         on one direct connection, timed by the client, after {CYCLES_WARMUP} to warm up. Idle: \
         four runtimes, the leader's tick never ending, statements in 20 s from the server log. \
         Ticking: two runtimes, one role every {TICK_EVERY:?}, each tick returning at once, \
         statements in {TICK_WINDOW:?} per completed tick (RELEASEs).\n",
        machine::load_average()
    )?;
    writeln!(
        w,
        "| figure (median of {runs} runs) | before | after | after / before |\n|---|---:|---:|---:|"
    )?;
    let labels = [
        "idle: statements per second",
        "ticking: statements per tick (all)",
        "ticking: ticks completed in the window",
        "ticking: lease statements per tick (ACQUIRE + RENEW + RELEASE)",
        "ACQUIRE latency, median (µs)",
        "ACQUIRE latency, p99 (µs)",
        "RELEASE latency, median (µs)",
        "RELEASE latency, p99 (µs)",
    ];
    for (k, label) in labels.iter().enumerate() {
        writeln!(
            w,
            "| {label} | {:.2} | {:.2} | {:.3} |",
            b[k],
            a[k],
            a[k] / b[k]
        )?;
    }
    writeln!(w)?;
    writeln!(
        w,
        "- **Statements per tick: {:.2} before, {:.2} after** (target: unchanged, that is \
         within the {:.2} the before runs spread over, a statement more being 1.0: **{}**).",
        b[3],
        a[3],
        spread(3).min(0.5),
        if same_statements { "met" } else { "NOT met" }
    )?;
    writeln!(
        w,
        "- **Latency: ACQUIRE {:.3}×, RELEASE {:.3}× of before** (medians of the runs' \
         medians; target ≤ {TARGET_LATENCY_RATIO}×: **{}**).",
        acquire_ratio,
        release_ratio,
        if latency_ok { "met" } else { "NOT met" }
    )?;
    if !failures.is_empty() {
        writeln!(
            w,
            "\nRuns that failed and were run again: {}.",
            failures.join("; ")
        )?;
    }
    writeln!(
        w,
        "\nEvery run's figures (`before` then `after`, in the order they ran):\n"
    )?;
    writeln!(w, "| run | build | {} |", KEYS.join(" | "))?;
    writeln!(w, "|---|---|{}", "---:|".repeat(KEYS.len()))?;
    for (run, (before, after)) in figures[0].iter().zip(&figures[1]).enumerate() {
        for (name, row) in [("before", before), ("after", after)] {
            let cells: Vec<String> = row.iter().map(|v| format!("{v:.1}")).collect();
            writeln!(w, "| {} | {name} | {} |", run + 1, cells.join(" | "))?;
        }
    }
    print!("{r}");
    // The figures are the report, whichever way they fall: a target not met is said in it.
    if let Some(path) = write {
        report::write_report(&path, "runtime-bench tick-cost", &r)?;
        progress(NAME, &format!("wrote {path}"));
    }
    Ok(true)
}

fn parse(line: &str) -> Res<Vec<f64>> {
    let pairs: Vec<(&str, &str)> = line
        .split_whitespace()
        .filter_map(|p| p.split_once('='))
        .collect();
    KEYS.iter()
        .map(|key| {
            pairs
                .iter()
                .find(|(k, _)| k == key)
                .ok_or_else(|| format!("`{key}` missing from {line:?}").into())
                .and_then(|(_, v)| v.parse::<f64>().map_err(Into::into))
        })
        .collect()
}
