//! `protocol-bench [--write PATH]`: measures the lease protocol on one PostgreSQL database and
//! prints a Markdown report; with `--write` it also writes the report to PATH.
//!
//! 1. ACQUIRE, RENEW and RELEASE latency over sequential acquire→renew→release cycles of one
//!    role on one connection.
//! 2. ACQUIRE under contention: 64 tasks on 64 connections race for one role, round after round;
//!    exactly one must win each round (the process exits 1 otherwise).
//! 3. The fence's cost: a `FOR UPDATE SKIP LOCKED` claim on a 1,000,000-row outbox, without (A)
//!    and with (B) `AND leader_fence($1, $2)`, interleaved A, B, A, B… in the same run, five runs;
//!    plus `EXPLAIN ANALYZE` of B with a stale token, showing the fence as a One-Time Filter above
//!    a scan that never executes.
//!
//! The database is `DATABASE_URL` when set, else a private throwaway cluster (works as root); in
//! both cases a fresh database is created for the run (and dropped at the end on `DATABASE_URL`).
//! Every connection is direct: no pooler.
//!
//! When PATH already holds a report, only the text between the generated-report markers is
//! replaced, so hand-written notes outside them survive a re-run.

use std::fmt::Write as _;
use std::process::ExitCode;
use std::str::FromStr;
use std::sync::Arc;
use std::time::{Duration, Instant};

use leader_benches::fence_schema::{self, CLAIM_LIMIT, OUTBOX_ROWS};
use leader_benches::report::{self, progress};
use leader_benches::stats::{self, Stats};
use leader_benches::{Res, machine};
use leader_core::lease::{self, Acquired, RefusalReason, Renewed};
use leader_core::{Fence, ReleaseOutcome, Role, Timings};
use leader_testkit::TestDb;
use sqlx::postgres::{PgConnectOptions, PgPoolOptions};
use sqlx::{ConnectOptions, Connection, PgConnection, PgPool};
use tokio::sync::{Barrier, Mutex};
use tokio::task::JoinHandle;

const NAME: &str = "protocol-bench";
const COMMAND: &str = "cargo run --release -p leader-benches --bin protocol-bench -- --write docs/benchmarks/protocol.md";

const BENCH: Role = Role::from_static("bench");
const RACE: Role = Role::from_static("race");
const FENCE_ROLE: Role = Role::from_static("fence");
const ROLES_UP: &str = include_str!("../../migrations/roles.up.sql");

/// The tick interval of every role here: the smallest the protocol accepts.
const INTERVAL: Duration = Duration::from_millis(1);

// Part 1.
const CYCLES: usize = 2_000;
const CYCLES_WARMUP: usize = 100;
// Part 2.
const RACERS: usize = 64;
const ROUNDS: usize = 50;
const ROUNDS_WARMUP: usize = 5;
// Part 3.
const FENCE_RUNS: usize = 5;
const FENCE_ITERATIONS: usize = 2_000;
const FENCE_WARMUP: usize = 200;
const TARGET_RATIO: f64 = 1.05;

const CLAIM_A: &str = "SELECT id FROM outbox WHERE status = 'pending' AND due_at <= now() \
                       ORDER BY due_at LIMIT 100 FOR UPDATE SKIP LOCKED";
const CLAIM_B: &str = "SELECT id FROM outbox WHERE status = 'pending' AND due_at <= now() \
                       AND leader_fence($1, $2) ORDER BY due_at LIMIT 100 FOR UPDATE SKIP LOCKED";
const EXPLAIN_B: &str = "EXPLAIN (ANALYZE, COSTS OFF) \
                         SELECT id FROM outbox WHERE status = 'pending' AND due_at <= now() \
                         AND leader_fence($1, $2) ORDER BY due_at LIMIT 100 FOR UPDATE SKIP LOCKED";

/// A lease long enough that the fence stays live through every fence run.
fn long_lease() -> Timings {
    Timings::new(leader_runtime::TimingParts {
        ttl: Duration::from_secs(3_600),
        heartbeat: Duration::from_secs(60),
        statement_timeout: Duration::from_secs(2),
        abandon_after: Duration::from_secs(120),
        max_poll: Duration::from_secs(5),
    })
    .expect("a valid combination")
}

fn ms(d: Duration) -> String {
    format!("{:.3}", d.as_secs_f64() * 1_000.0)
}

fn ratio(b: Duration, a: Duration) -> f64 {
    b.as_secs_f64() / a.as_secs_f64()
}

/// Makes `role` due again at once: no completion stamp, no cooldown. Never timed.
async fn make_due(admin: &mut PgConnection, role: Role) -> Res<()> {
    sqlx::query(
        "UPDATE leader_leases SET last_tick_ended_at = NULL, not_before = NULL WHERE role = $1",
    )
    .bind(role)
    .execute(&mut *admin)
    .await?;
    Ok(())
}

// ---------------------------------------------------------------------------------------------
// Part 1: sequential cycles.

struct CycleSamples {
    acquire: Vec<Duration>,
    renew: Vec<Duration>,
    release: Vec<Duration>,
}

async fn cycles(conn: &mut PgConnection, admin: &mut PgConnection, n: usize) -> Res<CycleSamples> {
    let t = Timings::DEFAULT;
    let mut out = CycleSamples {
        acquire: Vec::with_capacity(n),
        renew: Vec::with_capacity(n),
        release: Vec::with_capacity(n),
    };
    for _ in 0..n {
        let start = Instant::now();
        let acquired = lease::acquire_one(&mut *conn, BENCH, "bench-1", INTERVAL, &t).await?;
        out.acquire.push(start.elapsed());
        let Acquired::Granted(grant) = acquired else {
            return Err(format!("ACQUIRE of a due, free role refused: {acquired:?}").into());
        };

        let start = Instant::now();
        let renewed = lease::renew_one(&mut *conn, grant.fence, &t).await?;
        out.renew.push(start.elapsed());
        if !matches!(renewed, Renewed::Extended { .. }) {
            return Err(format!("RENEW of a live lease failed: {renewed:?}").into());
        }

        let start = Instant::now();
        let released = lease::release(
            &mut *conn,
            grant.fence,
            ReleaseOutcome::Completed,
            INTERVAL,
            &t,
        )
        .await?;
        out.release.push(start.elapsed());
        if !released.changed {
            return Err("RELEASE of a held lease changed nothing".into());
        }

        make_due(admin, BENCH).await?;
    }
    Ok(out)
}

// ---------------------------------------------------------------------------------------------
// Part 2: contended ACQUIRE.

struct RaceReport {
    /// Winners per measured round.
    winners: Vec<usize>,
    /// Rounds (warm-up included) with a winner count other than one.
    bad_rounds: Vec<(usize, usize)>,
    errors: Vec<String>,
    latency: Stats,
    winner_latency: Stats,
    held: usize,
    contended: usize,
    other_refusals: usize,
}

type Outcome = (Duration, Result<Acquired, String>);

/// Where the racers and the bench meet: all wait at `go` to start a round, and at `done` once
/// every racer has put its outcome in `results`.
#[derive(Clone)]
struct Rounds {
    go: Arc<Barrier>,
    done: Arc<Barrier>,
    results: Arc<Mutex<Vec<Outcome>>>,
}

async fn race(options: &PgConnectOptions, admin: &mut PgConnection) -> Res<RaceReport> {
    let pool = PgPoolOptions::new()
        .max_connections(RACERS as u32)
        .connect_with(options.clone())
        .await?;
    let (rounds, tasks) = spawn_racers(&pool).await?;
    let mut report = RaceReport {
        winners: Vec::with_capacity(ROUNDS),
        bad_rounds: Vec::new(),
        errors: Vec::new(),
        latency: Stats::of(vec![Duration::ZERO]),
        winner_latency: Stats::of(vec![Duration::ZERO]),
        held: 0,
        contended: 0,
        other_refusals: 0,
    };
    let mut latencies = Vec::with_capacity(ROUNDS * RACERS);
    let mut winner_latencies = Vec::with_capacity(ROUNDS);
    for round in 0..ROUNDS_WARMUP + ROUNDS {
        make_due(admin, RACE).await?;
        rounds.go.wait().await;
        rounds.done.wait().await;
        let outcomes: Vec<Outcome> = rounds.results.lock().await.drain(..).collect();
        let fences = report.tally(round, outcomes, &mut latencies, &mut winner_latencies);
        // End the winning tick(s), untimed, so the next round starts from a free role.
        for fence in fences {
            lease::release(
                &mut *admin,
                fence,
                ReleaseOutcome::Completed,
                INTERVAL,
                &Timings::DEFAULT,
            )
            .await?;
        }
    }
    for task in tasks {
        task.await?;
    }
    pool.close().await;
    report.latency = Stats::of(latencies);
    if !winner_latencies.is_empty() {
        report.winner_latency = Stats::of(winner_latencies);
    }
    Ok(report)
}

/// Opens every racer's connection before the first round, so no round pays for a connect, and
/// starts the racers: each ACQUIREs the role once a round, timed.
async fn spawn_racers(pool: &PgPool) -> Res<(Rounds, Vec<JoinHandle<()>>)> {
    let mut conns = Vec::with_capacity(RACERS);
    for _ in 0..RACERS {
        conns.push(pool.acquire().await?);
    }
    let total = ROUNDS_WARMUP + ROUNDS;
    let rounds = Rounds {
        go: Arc::new(Barrier::new(RACERS + 1)),
        done: Arc::new(Barrier::new(RACERS + 1)),
        results: Arc::new(Mutex::new(Vec::with_capacity(RACERS))),
    };
    let mut tasks = Vec::with_capacity(RACERS);
    for (i, mut conn) in conns.into_iter().enumerate() {
        let rounds = rounds.clone();
        tasks.push(tokio::spawn(async move {
            let holder = format!("racer-{i}");
            for _ in 0..total {
                rounds.go.wait().await;
                let start = Instant::now();
                let outcome =
                    lease::acquire_one(&mut *conn, RACE, &holder, INTERVAL, &Timings::DEFAULT)
                        .await;
                let elapsed = start.elapsed();
                rounds
                    .results
                    .lock()
                    .await
                    .push((elapsed, outcome.map_err(|e| e.to_string())));
                rounds.done.wait().await;
            }
        }));
    }
    Ok((rounds, tasks))
}

impl RaceReport {
    /// Counts round `round`'s outcomes (and, past the warm-up, their latencies); the fences of
    /// its winners.
    fn tally(
        &mut self,
        round: usize,
        outcomes: Vec<Outcome>,
        latencies: &mut Vec<Duration>,
        winner_latencies: &mut Vec<Duration>,
    ) -> Vec<Fence> {
        let measured = round >= ROUNDS_WARMUP;
        let mut fences: Vec<Fence> = Vec::new();
        for (elapsed, outcome) in outcomes {
            match outcome {
                Ok(Acquired::Granted(grant)) => {
                    fences.push(grant.fence);
                    if measured {
                        winner_latencies.push(elapsed);
                    }
                }
                Ok(Acquired::Refused(refusal)) if measured => match refusal.reason {
                    RefusalReason::Held => self.held += 1,
                    RefusalReason::Contended => self.contended += 1,
                    _ => self.other_refusals += 1,
                },
                Ok(Acquired::Refused(_)) => {}
                Err(e) => self.errors.push(format!("round {round}: {e}")),
            }
            if measured {
                latencies.push(elapsed);
            }
        }
        if fences.len() != 1 {
            self.bad_rounds.push((round, fences.len()));
        }
        if measured {
            self.winners.push(fences.len());
        }
        fences
    }
}

// ---------------------------------------------------------------------------------------------
// Part 3: the fence's cost.

/// Runs one claim in a transaction that is rolled back; times the claim statement alone.
async fn claim(conn: &mut PgConnection, fence: Option<(Role, i64)>) -> Res<(Duration, usize)> {
    let mut tx = conn.begin().await?;
    let query = match fence {
        None => sqlx::query(CLAIM_A),
        Some((role, token)) => sqlx::query(CLAIM_B).bind(role).bind(token),
    };
    let start = Instant::now();
    let rows = query.fetch_all(&mut *tx).await?;
    let elapsed = start.elapsed();
    tx.rollback().await?;
    Ok((elapsed, rows.len()))
}

struct FenceRun {
    a: Stats,
    b: Stats,
}

async fn fence_run(conn: &mut PgConnection, fence: Fence) -> Res<FenceRun> {
    let live = Some((fence.role(), fence.token()));
    for _ in 0..FENCE_WARMUP {
        claim(conn, None).await?;
        claim(conn, live).await?;
    }
    let mut a = Vec::with_capacity(FENCE_ITERATIONS);
    let mut b = Vec::with_capacity(FENCE_ITERATIONS);
    for _ in 0..FENCE_ITERATIONS {
        let (elapsed, rows) = claim(conn, None).await?;
        if rows != CLAIM_LIMIT {
            return Err(format!("claim A returned {rows} rows, not {CLAIM_LIMIT}").into());
        }
        a.push(elapsed);
        let (elapsed, rows) = claim(conn, live).await?;
        if rows != CLAIM_LIMIT {
            return Err(format!("claim B with a live fence returned {rows} rows").into());
        }
        b.push(elapsed);
    }
    Ok(FenceRun {
        a: Stats::of(a),
        b: Stats::of(b),
    })
}

async fn explain_b(conn: &mut PgConnection, role: Role, token: i64) -> Res<String> {
    let mut tx = conn.begin().await?;
    let lines: Vec<String> = sqlx::query_scalar(EXPLAIN_B)
        .bind(role)
        .bind(token)
        .fetch_all(&mut *tx)
        .await?;
    tx.rollback().await?;
    Ok(lines.join("\n"))
}

#[tokio::main]
async fn main() -> ExitCode {
    report::run_main(NAME, run).await
}

/// What part 3 found: the outbox, the fence's runs, and the fence with a stale token.
struct FenceCost {
    setup_time: Duration,
    pending_due: i64,
    fence: Fence,
    runs: Vec<FenceRun>,
    stale: i64,
    stale_rows: usize,
    explain_stale: String,
    explain_live: String,
    /// A stale token's claim returned nothing, and its plan shows why.
    one_time_ok: bool,
    ratios: Vec<f64>,
    median_ratio: f64,
    p99_ratios: Vec<f64>,
}

/// Runs every part and reports; `Ok(false)` when a correctness check failed.
async fn run(write: Option<String>) -> Res<bool> {
    let start = report::RunStart::now();
    let external = std::env::var_os(leader_testkit::DATABASE_URL).is_some();

    progress(NAME, "creating a fresh database");
    let db = TestDb::new().await;
    db.exec(ROLES_UP).await;
    // Every connection here is direct, whatever the environment says about poolers.
    let options: PgConnectOptions = (*db.admin().connect_options()).clone();
    let mut admin = options.connect().await?;
    let mut conn = options.connect().await?;
    let (version, settings) = machine::server_facts(
        &mut admin,
        &[
            "fsync",
            "synchronous_commit",
            "shared_buffers",
            "max_connections",
        ],
    )
    .await?;

    progress(NAME, "part 1: sequential acquire/renew/release cycles");
    let (acq, ren, rel) = statement_latency(&mut conn, &mut admin).await?;
    progress(NAME, "part 2: 64 concurrent acquirers");
    let race = race(&options, &mut admin).await?;
    let race_ok = race.bad_rounds.is_empty() && race.errors.is_empty();
    progress(NAME, "part 3: building the 1,000,000-row outbox");
    let fence = fence_cost(&mut admin, &mut conn).await?;
    let span = start.end();

    let mut r = String::new();
    let w = &mut r;
    header(w, &span, &version, &settings, external)?;
    latency_section(w, [("ACQUIRE", acq), ("RENEW", ren), ("RELEASE", rel)])?;
    race_section(w, &race, race_ok)?;
    fence_section(w, &fence)?;

    print!("{r}");
    let ok = race_ok && fence.one_time_ok;

    drop(conn);
    drop(admin);
    if external {
        drop_database(db).await;
    }

    Ok(report::conclude(
        NAME,
        &r,
        write.as_deref(),
        ok,
        "a correctness check failed",
    )?)
}

/// Part 1: ACQUIRE, RENEW and RELEASE latency over the cycles, after the warm-up's.
async fn statement_latency(
    conn: &mut PgConnection,
    admin: &mut PgConnection,
) -> Res<(Stats, Stats, Stats)> {
    cycles(conn, admin, CYCLES_WARMUP).await?;
    let samples = cycles(conn, admin, CYCLES).await?;
    Ok((
        Stats::of(samples.acquire),
        Stats::of(samples.renew),
        Stats::of(samples.release),
    ))
}

/// Part 3: builds the outbox, acquires the fence's role with a long lease, runs the claims,
/// tries a stale token, and releases the role.
async fn fence_cost(admin: &mut PgConnection, conn: &mut PgConnection) -> Res<FenceCost> {
    let (setup_time, pending_due) = build_outbox(admin).await?;
    let fence = match lease::acquire_one(
        &mut *admin,
        FENCE_ROLE,
        "bench-fence",
        INTERVAL,
        &long_lease(),
    )
    .await?
    {
        Acquired::Granted(grant) => grant.fence,
        refused => return Err(format!("ACQUIRE of the fence role refused: {refused:?}").into()),
    };
    let mut runs = Vec::with_capacity(FENCE_RUNS);
    for i in 0..FENCE_RUNS {
        progress(
            NAME,
            &format!("part 3: fence run {} of {FENCE_RUNS}", i + 1),
        );
        runs.push(fence_run(&mut *conn, fence).await?);
    }
    let stale = fence.token() - 1;
    let (_, stale_rows) = claim(&mut *conn, Some((fence.role(), stale))).await?;
    let explain_stale = explain_b(&mut *conn, fence.role(), stale).await?;
    let explain_live = explain_b(&mut *conn, fence.role(), fence.token()).await?;
    let one_time_ok = explain_stale.contains("One-Time Filter")
        && explain_stale.contains("never executed")
        && stale_rows == 0;
    let ratios: Vec<f64> = runs.iter().map(|r| ratio(r.b.median, r.a.median)).collect();
    let median_ratio = stats::median(ratios.clone());
    let p99_ratios: Vec<f64> = runs.iter().map(|r| ratio(r.b.p99, r.a.p99)).collect();
    lease::release(
        &mut *admin,
        fence,
        ReleaseOutcome::Completed,
        INTERVAL,
        &long_lease(),
    )
    .await?;
    Ok(FenceCost {
        setup_time,
        pending_due,
        fence,
        runs,
        stale,
        stale_rows,
        explain_stale,
        explain_live,
        one_time_ok,
        ratios,
        median_ratio,
        p99_ratios,
    })
}

/// Builds and analyzes the outbox and checks its size; how long that took, and how many rows
/// are pending and due.
async fn build_outbox(admin: &mut PgConnection) -> Res<(Duration, i64)> {
    let setup_start = Instant::now();
    sqlx::raw_sql(fence_schema::OUTBOX)
        .execute(&mut *admin)
        .await?;
    sqlx::raw_sql("ANALYZE outbox").execute(&mut *admin).await?;
    let setup_time = setup_start.elapsed();
    let rows: i64 = sqlx::query_scalar("SELECT count(*) FROM outbox")
        .fetch_one(&mut *admin)
        .await?;
    if rows != OUTBOX_ROWS {
        return Err(format!("the outbox has {rows} rows, not {OUTBOX_ROWS}").into());
    }
    let pending_due: i64 = sqlx::query_scalar(
        "SELECT count(*) FROM outbox WHERE status = 'pending' AND due_at <= now()",
    )
    .fetch_one(&mut *admin)
    .await?;
    Ok((setup_time, pending_due))
}

/// The report's title, the Machine section and how latencies are given.
fn header(
    w: &mut String,
    span: &report::RunSpan,
    version: &str,
    settings: &[String],
    external: bool,
) -> Res<()> {
    report::header(w, "Lease protocol benchmark", NAME, span, COMMAND)?;
    writeln!(
        w,
        "Without `DATABASE_URL` it starts a private throwaway PostgreSQL cluster from the machine's \
         binaries (fine as root); with it, it creates and afterwards drops a fresh database on that \
         server. Every connection is direct (no pooler).\n"
    )?;
    let server = format!(
        "{}; {}",
        if external {
            "`DATABASE_URL`"
        } else {
            "private throwaway cluster on loopback"
        },
        settings.join(", ")
    );
    report::machine_section(w, span, version, &server)?;
    writeln!(
        w,
        "Latencies are client-side wall time of one statement (one round trip), in milliseconds; \
         percentiles are nearest-rank over the whole sample.\n"
    )?;
    Ok(())
}

/// Part 1's section: statement latency, uncontended.
fn latency_section(w: &mut String, statements: [(&str, Stats); 3]) -> Res<()> {
    writeln!(w, "## 1. Statement latency, uncontended\n")?;
    writeln!(
        w,
        "{CYCLES} cycles of ACQUIRE → RENEW → RELEASE (completed) on one role and one connection, \
         interval 1 ms, `Timings::DEFAULT`, after {CYCLES_WARMUP} warm-up cycles. After each \
         RELEASE an untimed admin `UPDATE` clears `last_tick_ended_at` and `not_before` so the role \
         is due again.\n"
    )?;
    writeln!(
        w,
        "| statement | count | median (ms) | p99 (ms) | max (ms) |"
    )?;
    writeln!(w, "|---|---:|---:|---:|---:|")?;
    for (name, s) in statements {
        writeln!(
            w,
            "| {name} | {} | {} | {} | {} |",
            s.n,
            ms(s.median),
            ms(s.p99),
            ms(s.max)
        )?;
    }
    writeln!(w)?;
    Ok(())
}

/// Part 2's section: ACQUIRE under contention.
fn race_section(w: &mut String, race: &RaceReport, race_ok: bool) -> Res<()> {
    writeln!(w, "## 2. ACQUIRE under contention\n")?;
    writeln!(
        w,
        "{RACERS} tasks, each on its own connection of a {RACERS}-connection pool, released together \
         by a barrier, ACQUIRE one due role; {ROUNDS} measured rounds after {ROUNDS_WARMUP} warm-up \
         rounds (whose winners are checked too). Between rounds the winner's lease is released and \
         the role made due, untimed.\n"
    )?;
    let exact = race.winners.iter().filter(|&&n| n == 1).count();
    writeln!(w, "| check / measure | value |\n|---|---:|")?;
    writeln!(
        w,
        "| rounds with exactly one winner | {exact} / {ROUNDS} measured, {} / {} in all: **{}** |",
        ROUNDS_WARMUP + ROUNDS - race.bad_rounds.len(),
        ROUNDS_WARMUP + ROUNDS,
        if race_ok { "PASS" } else { "FAIL" }
    )?;
    writeln!(w, "| statement errors | {} |", race.errors.len())?;
    writeln!(
        w,
        "| losers refused as `Held` (saw the winner's committed row) | {} |",
        race.held
    )?;
    writeln!(
        w,
        "| losers refused as `Contended` (waited on the row lock, lost the re-check) | {} |",
        race.contended
    )?;
    if race.other_refusals > 0 {
        writeln!(w, "| other refusals | {} |", race.other_refusals)?;
    }
    writeln!(w, "| ACQUIRE count | {} |", race.latency.n)?;
    writeln!(w, "| ACQUIRE median (ms) | {} |", ms(race.latency.median))?;
    writeln!(w, "| ACQUIRE p99 (ms) | {} |", ms(race.latency.p99))?;
    writeln!(w, "| ACQUIRE max (ms) | {} |", ms(race.latency.max))?;
    writeln!(
        w,
        "| winner's ACQUIRE median (ms) | {} |\n",
        ms(race.winner_latency.median)
    )?;
    for (round, n) in &race.bad_rounds {
        writeln!(w, "- round {round}: {n} winners")?;
    }
    for e in race.errors.iter().take(10) {
        writeln!(w, "- error: {e}")?;
    }
    if !race_ok {
        writeln!(w)?;
    }

    Ok(())
}

/// Part 3's section: the fence's cost on a claim, and the plan with a stale token.
fn fence_section(w: &mut String, fence_cost: &FenceCost) -> Res<()> {
    let c = fence_cost;
    let (pending_due, stale, stale_rows) = (c.pending_due, c.stale, c.stale_rows);
    let (median_ratio, explain_stale, explain_live) =
        (c.median_ratio, &c.explain_stale, &c.explain_live);
    writeln!(w, "## 3. The fence's cost on a claim\n")?;
    writeln!(
        w,
        "`outbox`: {OUTBOX_ROWS} rows (`id bigserial` primary key, `status text`, `due_at \
         timestamptz`, and `claimed_token bigint`, which these claims do not write; \
         `fence_schema::OUTBOX`, as `fence-bench` builds it), one in five `sent`, {pending_due} pending and due; index `outbox_pending_due \
         ON outbox (due_at) WHERE status = 'pending'`; built with one `INSERT … SELECT \
         generate_series` then `CREATE INDEX` and `ANALYZE` in {:.1} s.\n",
        c.setup_time.as_secs_f64()
    )?;
    writeln!(w, "```sql\n-- A\n{CLAIM_A}\n-- B\n{CLAIM_B}\n```\n")?;
    writeln!(
        w,
        "Each claim runs in its own transaction, rolled back afterwards (so every claim locks the \
         same {CLAIM_LIMIT} rows); only the claim statement is timed. Both are prepared statements \
         (`sqlx::query(..).bind(..)`) on one direct connection. B's fence is live: its role was \
         acquired once with a 1 h TTL (`Timings::new`), and every A and B returned {CLAIM_LIMIT} \
         rows. Each run: {FENCE_WARMUP} warm-up pairs, then {FENCE_ITERATIONS} A and \
         {FENCE_ITERATIONS} B interleaved A, B, A, B….\n"
    )?;
    writeln!(
        w,
        "| run | A median (ms) | B median (ms) | **median(B)/median(A)** | B − A (µs) | A p99 (ms) | B p99 (ms) | p99(B)/p99(A) |"
    )?;
    writeln!(w, "|---:|---:|---:|---:|---:|---:|---:|---:|")?;
    for (i, run) in c.runs.iter().enumerate() {
        writeln!(
            w,
            "| {} | {} | {} | **{:.3}** | {:+.0} | {} | {} | {:.3} |",
            i + 1,
            ms(run.a.median),
            ms(run.b.median),
            c.ratios[i],
            (run.b.median.as_secs_f64() - run.a.median.as_secs_f64()) * 1e6,
            ms(run.a.p99),
            ms(run.b.p99),
            c.p99_ratios[i]
        )?;
    }
    writeln!(
        w,
        "\n**Median ratio over the {FENCE_RUNS} runs: {median_ratio:.3}** (target ≤ {TARGET_RATIO:.2}: {}).\n",
        if median_ratio <= TARGET_RATIO {
            "met"
        } else {
            "not met"
        }
    )?;
    writeln!(
        w,
        "### B with a stale token\n\n`leader_fence('{}', {stale})` (one below the live token) \
         returned {stale_rows} rows. The fence is a `One-Time Filter` evaluated once per statement; \
         false, the index scan below it is `never executed`, so a stale leader neither reads nor \
         locks a row{}:\n",
        c.fence.role(),
        if c.one_time_ok {
            ""
        } else {
            " (**CHECK FAILED: the plan below does not show it**)"
        }
    )?;
    writeln!(w, "```text\n{explain_stale}\n```\n")?;
    writeln!(w, "The same with the live token, for comparison:\n")?;
    writeln!(w, "```text\n{explain_live}\n```")?;
    Ok(())
}

/// Drops the run's database from a `DATABASE_URL` server (best effort: 1 M rows is worth it).
async fn drop_database(db: TestDb) {
    let name = db.name().to_owned();
    db.admin().close().await;
    db.pool().close().await;
    let Ok(url) = std::env::var(leader_testkit::DATABASE_URL) else {
        return;
    };
    let Ok(options) = PgConnectOptions::from_str(&url) else {
        return;
    };
    if let Ok(mut maintenance) = options.connect().await {
        let sql = format!("DROP DATABASE IF EXISTS {name} WITH (FORCE)");
        if let Err(e) = sqlx::raw_sql(sqlx::AssertSqlSafe(sql))
            .execute(&mut maintenance)
            .await
        {
            eprintln!("protocol-bench: could not drop database {name}: {e}");
        }
    }
}
