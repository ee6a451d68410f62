//! `fence-bench [--write PATH]`: where the fence's cost goes, and what it costs on a claim funnel
//! as the reference application runs it, on a durable server (`fsync` on).
//!
//! 1. **Breakdown, server-side.** Each part of `leader_fence` is timed inside the server over many
//!    statements, so neither the network nor the client is in the figure: a plpgsql loop runs
//!    `PERFORM 1 WHERE <condition>` (one planned statement per iteration, its condition a
//!    One-Time Filter as in a claim) for the bare call of a plpgsql function, the isolation check,
//!    the lease-row read, the whole fence, and the other forms the fence could take (the read as
//!    `PERFORM … ; RETURN FOUND`, a `LANGUAGE sql` function, the condition written inline). The
//!    variants run round-robin, so load on the machine hits them alike; each figure is the median
//!    over the rounds, minus the same statement with a condition that reads nothing.
//! 2. **Per statement, client-side.** The same conditions, each in an autocommit
//!    `SELECT … WHERE <condition>` of its own, round-robin; medians. Unlike the loop, each
//!    statement is a transaction, so what a function or a table read costs once per transaction
//!    is in the figure, as it is in a claim.
//! 3. **The funnel.** `BEGIN; UPDATE outbox … WHERE id IN (SELECT … FOR UPDATE SKIP LOCKED)
//!    RETURNING id; COMMIT` on a 1,000,000-row outbox, unfenced (A), fenced (B), gated by a
//!    plpgsql function that only returns true (C) and by the lease read written inline (D),
//!    taking turns, each transaction timed BEGIN to COMMIT; each ratio to A's median within a
//!    run, five runs, with prepared statements and through the simple protocol. Medians, not means:
//!    on this shared VM a commit's WAL flush now and then takes tens of milliseconds.
//!
//! Part 3's wall clock cannot split a difference of a few microseconds on a shared VM;
//! `fence-instructions` counts the same funnel's instructions, step by step, instead.
//!
//! It starts its own durable throwaway cluster (fsync, synchronous_commit and full_page_writes
//! on), whatever `DATABASE_URL` says. Every connection is direct.

use std::fmt::Write as _;
use std::process::ExitCode;
use std::time::Instant;

use leader_benches::fence_schema::{self, CLAIM_LIMIT, FUNNEL, TOKEN};
use leader_benches::report::{self, progress};
use leader_benches::{Res, machine};
use leader_testkit::Cluster;
use sqlx::{Connection, PgConnection};

const NAME: &str = "fence-bench";
const COMMAND: &str = "cargo run --release -p leader-benches --bin fence-bench -- --write docs/benchmarks/protocol.md";

const TARGET_RATIO: f64 = 1.03;

// Part 1.
const ROUNDS: usize = 15;
const LOOP_ITERATIONS: i32 = 4_000;
// Part 2.
const STATEMENT_ROUNDS: usize = 2_000;
// Part 3.
const FUNNEL_RUNS: usize = 5;
const FUNNEL_ITERATIONS: usize = 400;
const FUNNEL_WARMUP: usize = 50;

/// The conditions timed: name, what it measures, and the condition, `{tok}` standing for the
/// token (a plpgsql variable in part 1, the bind parameter `$1` in part 2: uncorrelated either
/// way, so each function runs once per statement, as in a claim).
const PARTS: [(&str, &str, &str); 8] = [
    (
        "baseline",
        "a condition that reads nothing (subtracted from the rest)",
        "{tok} > 0",
    ),
    (
        "call",
        "calling a plpgsql function that returns true",
        "fence_parts.call_only('fence', {tok})",
    ),
    (
        "isolation check",
        "the call plus the isolation check",
        "fence_parts.isolation_check('fence', {tok})",
    ),
    (
        "row read",
        "the call plus the lease-row read (`RETURN EXISTS (…)`)",
        "fence_parts.row_read('fence', {tok})",
    ),
    (
        "leader_fence",
        "**the fence as shipped**: call, isolation check, row read",
        "leader_fence('fence', {tok})",
    ),
    (
        "SELECT INTO form",
        "the whole fence with the read as `PERFORM … ; RETURN FOUND`",
        "fence_parts.select_into('fence', {tok})",
    ),
    (
        "LANGUAGE sql",
        "the read as a `LANGUAGE sql` function (no isolation check)",
        "fence_parts.sql_function('fence', {tok})",
    ),
    (
        "inline EXISTS",
        "the read written into the statement (no function, no isolation check)",
        "EXISTS (SELECT 1 FROM leader_leases WHERE role = 'fence' AND holder_token = {tok} \
         AND expires_at > statement_timestamp())",
    ),
];

/// The loop that times `condition`: microseconds per statement over `n` statements.
fn loop_function(index: usize, condition: &str) -> String {
    let condition = condition.replace("{tok}", "tok");
    format!(
        "CREATE FUNCTION fence_parts.loop_{index}(n int, tok bigint) RETURNS float8
         LANGUAGE plpgsql AS $$
         DECLARE started timestamptz := clock_timestamp();
         BEGIN
             FOR i IN 1..n LOOP
                 PERFORM 1 WHERE {condition};
             END LOOP;
             RETURN extract(epoch FROM clock_timestamp() - started) * 1e6 / n;
         END $$;"
    )
}

/// How the funnel's statement is sent.
#[derive(Debug, Clone, Copy)]
enum Protocol {
    /// The extended protocol, a prepared statement with bind parameters (`sqlx::query`).
    Prepared,
    /// The simple protocol, values inlined (`sqlx::raw_sql`), as the runtime sends its own.
    Simple,
}

impl Protocol {
    fn name(self) -> &'static str {
        match self {
            Protocol::Prepared => "prepared statements (extended protocol)",
            Protocol::Simple => "simple protocol, values inlined",
        }
    }

    /// The funnel with `gate` in its row-locking sub-select.
    fn sql(self, gate: Gate) -> String {
        let (token, role) = match self {
            Protocol::Prepared => ("$1".to_owned(), "$2".to_owned()),
            Protocol::Simple => (TOKEN.to_string(), "'fence'".to_owned()),
        };
        let condition = match gate {
            Gate::None => String::new(),
            Gate::Fence => format!(" AND leader_fence({role}, {token})"),
            Gate::CallOnly => format!(" AND fence_parts.call_only({role}, {token})"),
            Gate::InlineExists => format!(
                " AND EXISTS (SELECT 1 FROM leader_leases WHERE role = {role} \
                 AND holder_token = {token} AND expires_at > statement_timestamp())"
            ),
        };
        FUNNEL
            .replace("{token}", &token)
            .replace("{fence}", &condition)
    }
}

/// What gates the funnel's row-locking sub-select.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
enum Gate {
    /// Nothing: A, the unfenced funnel.
    None,
    /// `leader_fence`: B, the fenced funnel as shipped.
    Fence,
    /// A plpgsql function that returns true: the cost of calling one from the claim.
    CallOnly,
    /// The lease read written into the claim, no function (and no isolation check).
    InlineExists,
}

impl Gate {
    const ALL: [Gate; 4] = [Gate::None, Gate::Fence, Gate::CallOnly, Gate::InlineExists];

    fn label(self) -> &'static str {
        match self {
            Gate::None => "A: unfenced",
            Gate::Fence => "B: `leader_fence`",
            Gate::CallOnly => "C: a plpgsql function returning true",
            Gate::InlineExists => "D: the read inline, no function",
        }
    }
}

fn median(mut values: Vec<f64>) -> f64 {
    values.sort_by(f64::total_cmp);
    values[(values.len() - 1) / 2]
}

/// One funnel transaction, BEGIN to COMMIT, timed; checks that it claimed a full batch.
async fn funnel_once(conn: &mut PgConnection, protocol: Protocol, sql: &str) -> Res<f64> {
    let started = Instant::now();
    let mut tx = conn.begin().await?;
    let rows = match protocol {
        Protocol::Prepared => {
            sqlx::query(sqlx::AssertSqlSafe(sql))
                .bind(TOKEN)
                .bind("fence")
                .fetch_all(&mut *tx)
                .await?
        }
        Protocol::Simple => {
            sqlx::raw_sql(sqlx::AssertSqlSafe(sql))
                .fetch_all(&mut *tx)
                .await?
        }
    };
    tx.commit().await?;
    let elapsed = started.elapsed().as_secs_f64() * 1e6;
    if rows.len() != CLAIM_LIMIT {
        return Err(format!("a funnel claimed {} rows, not {CLAIM_LIMIT}", rows.len()).into());
    }
    Ok(elapsed)
}

/// Median microseconds of each gate's transactions in one run, in [`Gate::ALL`]'s order.
struct FunnelRun {
    medians: [f64; 4],
}

impl FunnelRun {
    /// The median of `gate`'s transactions over A's.
    fn ratio(&self, gate: Gate) -> f64 {
        self.medians[gate as usize] / self.medians[Gate::None as usize]
    }
}

/// One funnel run: the gates take turns, the first of each turn rotating with the iteration,
/// so load and the table's growing row versions hit all alike.
async fn funnel_run(conn: &mut PgConnection, protocol: Protocol) -> Res<FunnelRun> {
    let sql = Gate::ALL.map(|gate| protocol.sql(gate));
    let mut samples: [Vec<f64>; 4] = Default::default();
    for i in 0..FUNNEL_WARMUP + FUNNEL_ITERATIONS {
        for k in 0..Gate::ALL.len() {
            let g = (i + k) % Gate::ALL.len();
            let us = funnel_once(conn, protocol, &sql[g]).await?;
            if i >= FUNNEL_WARMUP {
                samples[g].push(us);
            }
        }
    }
    Ok(FunnelRun {
        medians: samples.map(median),
    })
}

/// Microseconds of one autocommit `SELECT 1 WHERE <condition>`, round trip included.
async fn statement_once(conn: &mut PgConnection, sql: &str) -> Res<f64> {
    let started = Instant::now();
    sqlx::query(sqlx::AssertSqlSafe(sql))
        .bind(TOKEN)
        .fetch_all(&mut *conn)
        .await?;
    Ok(started.elapsed().as_secs_f64() * 1e6)
}

#[tokio::main]
async fn main() -> ExitCode {
    report::run_main(NAME, run).await
}

async fn run(write: Option<String>) -> Res<bool> {
    let start = report::RunStart::now();

    progress(NAME, "starting a durable throwaway cluster (fsync on)");
    let cluster = tokio::task::spawn_blocking(Cluster::start_durable).await??;
    let (_server, mut conn) = create_database(&cluster).await?;
    let (version, settings) = machine::server_facts(
        &mut conn,
        &[
            "fsync",
            "synchronous_commit",
            "full_page_writes",
            "shared_buffers",
        ],
    )
    .await?;
    progress(NAME, "building the 1,000,000-row outbox");
    build(&mut conn).await?;

    progress(NAME, "part 1: the fence's parts, server-side");
    let part_us = time_parts(&mut conn).await?;
    progress(
        NAME,
        "part 2: the same conditions, one autocommit statement each",
    );
    let statement_us = time_statements(&mut conn).await?;
    let funnel = time_funnels(&mut conn).await?;
    let span = start.end();

    let mut w = String::new();
    header(&mut w, &span, &version, &settings)?;
    parts_section(&mut w, &part_us)?;
    statements_section(&mut w, &statement_us)?;
    funnel_section(&mut w, &funnel)?;
    print!("{w}");
    Ok(report::conclude(NAME, &w, write.as_deref(), true, "")?)
}

/// Creates the bench's database on `cluster`: a connection to the server's maintenance
/// database (kept for the run) and one to the bench's.
async fn create_database(cluster: &Cluster) -> Res<(PgConnection, PgConnection)> {
    let url = |db: &str| format!("postgres://postgres@127.0.0.1:{}/{db}", cluster.port());
    let mut server = PgConnection::connect(&url("postgres")).await?;
    sqlx::raw_sql("CREATE DATABASE fence_bench")
        .execute(&mut server)
        .await?;
    let conn = PgConnection::connect(&url("fence_bench")).await?;
    Ok((server, conn))
}

/// Builds the outbox and the fence's parts, and each condition's timing loop; checks that
/// every variant answers as the fence does.
async fn build(conn: &mut PgConnection) -> Res<()> {
    fence_schema::build(&mut *conn).await?;
    for (index, (_, _, condition)) in PARTS.iter().enumerate() {
        sqlx::raw_sql(sqlx::AssertSqlSafe(loop_function(index, condition)))
            .execute(&mut *conn)
            .await?;
    }
    // Every variant must answer as the fence does: true for the live token, false for a stale
    // one (the baseline, which reads nothing, and the bare call and isolation check aside).
    for (index, (name, _, condition)) in PARTS.iter().enumerate().skip(3) {
        for (token, expected) in [(TOKEN, true), (TOKEN - 1, false)] {
            let sql = format!("SELECT {}", condition.replace("{tok}", &token.to_string()));
            let answer: bool = sqlx::query_scalar(sqlx::AssertSqlSafe(sql))
                .fetch_one(&mut *conn)
                .await?;
            if answer != expected {
                return Err(format!(
                    "part {index} ({name}) answered {answer} for token {token}, not {expected}"
                )
                .into());
            }
        }
    }
    Ok(())
}

/// Part 1: each condition's microseconds per statement, server-side: the median over the
/// rounds, in [`PARTS`]' order.
async fn time_parts(conn: &mut PgConnection) -> Res<Vec<f64>> {
    let mut per_part: Vec<Vec<f64>> = vec![Vec::new(); PARTS.len()];
    for index in 0..PARTS.len() {
        // Warm-up: plan caches, the function's compiled form.
        let sql = format!("SELECT fence_parts.loop_{index}($1, $2)");
        sqlx::query_scalar::<_, f64>(sqlx::AssertSqlSafe(sql))
            .bind(LOOP_ITERATIONS / 4)
            .bind(TOKEN)
            .fetch_one(&mut *conn)
            .await?;
    }
    for _ in 0..ROUNDS {
        for (index, samples) in per_part.iter_mut().enumerate() {
            let sql = format!("SELECT fence_parts.loop_{index}($1, $2)");
            samples.push(
                sqlx::query_scalar::<_, f64>(sqlx::AssertSqlSafe(sql))
                    .bind(LOOP_ITERATIONS)
                    .bind(TOKEN)
                    .fetch_one(&mut *conn)
                    .await?,
            );
        }
    }
    Ok(per_part.into_iter().map(median).collect())
}

/// Part 2: each condition's median microseconds in an autocommit statement of its own, in
/// [`PARTS`]' order.
async fn time_statements(conn: &mut PgConnection) -> Res<Vec<f64>> {
    let statements: Vec<String> = PARTS
        .iter()
        .map(|(_, _, condition)| {
            format!(
                "SELECT 1 WHERE {}",
                condition.replace("{tok}", "$1::bigint")
            )
        })
        .collect();
    let mut per_statement: Vec<Vec<f64>> = vec![Vec::new(); PARTS.len()];
    for round in 0..STATEMENT_ROUNDS + STATEMENT_ROUNDS / 10 {
        for (sql, samples) in statements.iter().zip(per_statement.iter_mut()) {
            let us = statement_once(&mut *conn, sql).await?;
            if round >= STATEMENT_ROUNDS / 10 {
                samples.push(us);
            }
        }
    }
    Ok(per_statement.into_iter().map(median).collect())
}

/// Part 3: the funnel's runs through each protocol.
async fn time_funnels(conn: &mut PgConnection) -> Res<Vec<(Protocol, Vec<FunnelRun>)>> {
    let mut funnel: Vec<(Protocol, Vec<FunnelRun>)> = Vec::new();
    for protocol in [Protocol::Prepared, Protocol::Simple] {
        let mut runs = Vec::new();
        for run in 1..=FUNNEL_RUNS {
            progress(
                NAME,
                &format!(
                    "part 3: the funnel, {}, run {run} of {FUNNEL_RUNS}",
                    protocol.name()
                ),
            );
            // Every run starts from the same table: the claims of the last one left row versions.
            sqlx::raw_sql("VACUUM outbox").execute(&mut *conn).await?;
            runs.push(funnel_run(&mut *conn, protocol).await?);
        }
        funnel.push((protocol, runs));
    }
    Ok(funnel)
}

/// The report's title, the Machine section and what the run started from.
fn header(w: &mut String, span: &report::RunSpan, version: &str, settings: &[String]) -> Res<()> {
    report::header(
        w,
        "The fence's cost: where it goes, and on a funnel",
        NAME,
        span,
        COMMAND,
    )?;
    writeln!(
        w,
        "It starts a durable throwaway cluster of its own (whatever `DATABASE_URL` says). Every \
         connection is direct.\n"
    )?;
    report::machine_section(
        w,
        span,
        version,
        &format!(
            "private durable cluster on loopback; {}",
            settings.join(", ")
        ),
    )?;
    Ok(())
}

/// Part 1's section: where the fence's cost goes.
fn parts_section(w: &mut String, part_us: &[f64]) -> Res<()> {
    writeln!(w, "## 1. Where the fence's cost goes (server-side)\n")?;
    writeln!(
        w,
        "A plpgsql loop runs `PERFORM 1 WHERE <condition>` {LOOP_ITERATIONS} times per round \
         (one planned statement per iteration, its condition a One-Time Filter, as in a claim); \
         the variants run round-robin for {ROUNDS} rounds, and each figure is the median over \
         the rounds. Every variant that reads the lease was first checked to answer true for the \
         live token and false for a stale one. \"Cost\" is the figure minus the baseline's.\n"
    )?;
    writeln!(
        w,
        "| condition | what it measures | µs per statement | cost (µs) |\n|---|---|---:|---:|"
    )?;
    let baseline = part_us[0];
    for ((name, what, _), us) in PARTS.iter().zip(part_us) {
        writeln!(
            w,
            "| {name} | {what} | {us:.2} | {} |",
            if *name == "baseline" {
                "—".to_owned()
            } else {
                format!("{:+.2}", us - baseline)
            }
        )?;
    }
    let fence = part_us[4] - baseline;
    let call = part_us[1] - baseline;
    let check = part_us[2] - part_us[1];
    let read = part_us[3] - part_us[1];
    writeln!(
        w,
        "\nOf the shipped fence's {fence:.1} µs: the call {call:.1} µs, the isolation check \
         {check:.1} µs, the row read {read:.1} µs (each part's figure minus the one before it).\n"
    )?;
    Ok(())
}

/// Part 2's section: per statement.
fn statements_section(w: &mut String, statement_us: &[f64]) -> Res<()> {
    writeln!(
        w,
        "## 2. Per statement, each its own transaction (client-side)\n"
    )?;
    writeln!(
        w,
        "Each condition in an autocommit `SELECT 1 WHERE <condition>` (the token bound as \
         `$1`), a prepared statement on one direct connection, round-robin, \
         {STATEMENT_ROUNDS} each; medians, round trip included. What a function or a table read \
         costs once per transaction (the function's executor state, the lease table's locks) is \
         in these figures and not in part 1's.\n"
    )?;
    writeln!(
        w,
        "| condition | median µs per statement | cost (µs) |\n|---|---:|---:|"
    )?;
    for ((name, _, _), us) in PARTS.iter().zip(statement_us) {
        writeln!(
            w,
            "| {name} | {us:.1} | {} |",
            if *name == "baseline" {
                "—".to_owned()
            } else {
                format!("{:+.1}", us - statement_us[0])
            }
        )?;
    }
    Ok(())
}

/// Part 3's section: the fence on a funnel, per protocol, and whether the target was met.
fn funnel_section(w: &mut String, funnel: &[(Protocol, Vec<FunnelRun>)]) -> Res<()> {
    writeln!(w, "\n## 3. The fence on a funnel\n")?;
    writeln!(
        w,
        "The funnels take turns on one direct connection ({FUNNEL_ITERATIONS} turns per run \
         after {FUNNEL_WARMUP} warm-ups, the first of each turn rotating); each transaction is \
         timed from BEGIN to COMMIT; `VACUUM outbox` before each run. B's fence is live, so \
         every funnel claims the same 100 rows. With prepared statements:\n"
    )?;
    writeln!(
        w,
        "```sql\nBEGIN;\n-- A\n{};\n-- B\n{};\nCOMMIT;\n```\n",
        Protocol::Prepared.sql(Gate::None),
        Protocol::Prepared.sql(Gate::Fence)
    )?;
    writeln!(
        w,
        "Through the simple protocol the same with the values inlined. Two more gates run in the \
         same turns, to show where B's cost goes: C calls a plpgsql function that only returns \
         true (`fence_parts.call_only`), D writes the lease read into the claim \
         (`AND EXISTS (SELECT 1 FROM leader_leases WHERE role = $2 AND holder_token = $1 AND \
         expires_at > statement_timestamp())`), with no function and so no isolation check. \
         Each ratio is that gate's median over A's within the run; the target is B's.\n"
    )?;
    let mut met = true;
    for (protocol, runs) in funnel {
        writeln!(w, "### {}\n", protocol.name())?;
        writeln!(
            w,
            "| run | A median (ms) | B − A (µs) | **B/A** | C/A | D/A |\n|---:|---:|---:|---:|---:|---:|"
        )?;
        for (i, r) in runs.iter().enumerate() {
            writeln!(
                w,
                "| {} | {:.3} | {:+.0} | **{:.3}** | {:.3} | {:.3} |",
                i + 1,
                r.medians[0] / 1000.0,
                r.medians[Gate::Fence as usize] - r.medians[0],
                r.ratio(Gate::Fence),
                r.ratio(Gate::CallOnly),
                r.ratio(Gate::InlineExists)
            )?;
        }
        let of = |gate| median(runs.iter().map(|r| r.ratio(gate)).collect());
        let ratio = of(Gate::Fence);
        let extra = median(
            runs.iter()
                .map(|r| r.medians[Gate::Fence as usize] - r.medians[0])
                .collect(),
        );
        met &= ratio <= TARGET_RATIO;
        writeln!(w, "\nMedians over the {} runs:\n", runs.len())?;
        for gate in &Gate::ALL[1..] {
            writeln!(w, "* {} over A: **{:.3}**", gate.label(), of(*gate))?;
        }
        writeln!(
            w,
            "\nB − A median {extra:+.0} µs; target B/A ≤ {TARGET_RATIO}: **{}**.\n",
            if ratio <= TARGET_RATIO {
                "met"
            } else {
                "not met"
            }
        )?;
    }
    writeln!(
        w,
        "The target (B/A ≤ {TARGET_RATIO} in both protocols, in this run): **{}**.\n",
        if met { "met" } else { "not met" }
    )?;
    Ok(())
}
