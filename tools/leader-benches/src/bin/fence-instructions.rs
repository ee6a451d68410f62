//! `fence-instructions [--write PATH]`: what the fence costs a claim funnel, counted in CPU
//! instructions of the server process, so the figure is the same on a loaded machine as on an
//! idle one.
//!
//! `fence-bench` times the funnel (`BEGIN; UPDATE outbox … WHERE id IN (SELECT … FOR UPDATE SKIP
//! LOCKED) RETURNING id; COMMIT`) on the wall clock, where a few microseconds of difference sit
//! inside the noise of a shared VM. This counts instead: the server runs in single-user mode
//! (`postgres --single`, one process, the statements on its standard input) under `valgrind
//! --tool=callgrind`, which counts every instruction the process executes. Each gate runs the
//! funnel `SHORT` and `LONG` times from a freshly vacuumed outbox; the difference of the two
//! totals over `LONG - SHORT` is the cost of one more funnel transaction, with the start-up, the
//! plan cache's first fills and the shutdown cancelled out.
//!
//! The gates split the fence into what each step adds: a pseudo-constant condition on a built-in
//! (the `Result` node every gated claim gets, with its One-Time Filter), a plpgsql function that
//! returns true (the call), the isolation check, the lease-row read, the fence as shipped, and two
//! other forms (the read as `PERFORM … ; RETURN FOUND`, the read written inline). Each runs with
//! a prepared statement (`PREPARE`/`EXECUTE`, a generic plan as a pooled client's) and as plain
//! text planned on every execution (as the simple protocol). Every run's claims are counted: each
//! funnel must claim its full batch, and each gate that reads the lease must claim nothing for a
//! stale token.
//!
//! Instructions are not time: the counts leave out system calls (the row read's seq scan adds
//! one `lseek` a transaction, the commit's `fdatasync` is in both), cache misses and the client.
//! Their ratio says what share of the server's work the fence is.
//!
//! Needs valgrind (`apt-get install valgrind`). It starts its own durable throwaway cluster.

use std::fmt::Write as _;
use std::io::Write as _;
use std::process::{ExitCode, Stdio};

use leader_benches::Res;
use leader_benches::fence_schema::{self, CLAIM_LIMIT, FUNNEL, TOKEN};
use leader_benches::report::{self, progress};
use leader_testkit::Cluster;
use sqlx::{Connection, PgConnection};

const NAME: &str = "fence-instructions";
const COMMAND: &str = "cargo run --release -p leader-benches --bin fence-instructions -- --write docs/benchmarks/protocol.md";
const DATABASE: &str = "fence_bench";
const SHORT: usize = 20;
const LONG: usize = 220;

/// A gate in the funnel's row-locking sub-select: its name, what it adds, its condition
/// (`{role}` and `{token}` stand for the lease's), and whether it reads the lease.
struct Gate {
    name: &'static str,
    what: &'static str,
    condition: &'static str,
    reads_lease: bool,
}

const GATES: [Gate; 8] = [
    Gate {
        name: "A",
        what: "none: the unfenced funnel",
        condition: "",
        reads_lease: false,
    },
    Gate {
        name: "G",
        what: "a pseudo-constant built-in (`statement_timestamp() > '2000-01-01'`): the `Result` node with its One-Time Filter, nothing else",
        condition: " AND statement_timestamp() > '2000-01-01'",
        reads_lease: false,
    },
    Gate {
        name: "C",
        what: "a plpgsql function that returns true",
        condition: " AND fence_parts.call_only({role}, {token})",
        reads_lease: false,
    },
    Gate {
        name: "I",
        what: "the function with the isolation check, no read",
        condition: " AND fence_parts.isolation_check({role}, {token})",
        reads_lease: false,
    },
    Gate {
        name: "R",
        what: "the function with the lease-row read (`RETURN EXISTS (…)`), no isolation check",
        condition: " AND fence_parts.row_read({role}, {token})",
        reads_lease: true,
    },
    Gate {
        name: "B",
        what: "**`leader_fence` as shipped**: the isolation check and the read",
        condition: " AND leader_fence({role}, {token})",
        reads_lease: true,
    },
    Gate {
        name: "P",
        what: "the fence with the read as `PERFORM … ; RETURN FOUND`",
        condition: " AND fence_parts.select_into({role}, {token})",
        reads_lease: true,
    },
    Gate {
        name: "D",
        what: "the read written inline (`EXISTS (…)`, no function, no isolation check)",
        condition: " AND EXISTS (SELECT 1 FROM leader_leases WHERE role = {role} AND holder_token = {token} AND expires_at > statement_timestamp())",
        reads_lease: true,
    },
];

/// How each funnel's statement reaches the executor.
#[derive(Debug, Clone, Copy)]
enum Sent {
    /// `PREPARE` once, then `EXECUTE`: parsed once, a generic plan after five executions.
    Prepared,
    /// The statement's text each time: parsed and planned on every execution.
    Text,
}

impl Sent {
    fn name(self) -> &'static str {
        match self {
            Sent::Prepared => "prepared (`PREPARE` / `EXECUTE`)",
            Sent::Text => "plain text, planned each time (as the simple protocol)",
        }
    }

    /// The single-user script: a fresh vacuum, then `funnels` funnel transactions gated by
    /// `gate` with `token` in them.
    fn script(self, gate: &Gate, token: i64, funnels: usize) -> String {
        let mut script = String::from("VACUUM outbox;\n");
        let funnel = |role: &str, token: &str| {
            FUNNEL.replace("{token}", token).replace(
                "{fence}",
                &gate
                    .condition
                    .replace("{role}", role)
                    .replace("{token}", token),
            )
        };
        let each = match self {
            Sent::Prepared => {
                script += &format!("PREPARE funnel(bigint, text) AS {};\n", funnel("$2", "$1"));
                format!("EXECUTE funnel({token}, 'fence');")
            }
            Sent::Text => format!("{};", funnel("'fence'", &token.to_string())),
        };
        for _ in 0..funnels {
            script += "BEGIN;\n";
            script += &each;
            script += "\nCOMMIT;\n";
        }
        script
    }
}

/// What one single-user run printed: the instructions counted (under callgrind) and the rows
/// the funnels claimed.
struct Ran {
    instructions: Option<u64>,
    claimed: usize,
}

/// Runs `script` in single-user mode, under callgrind when `count` says so.
fn single_user(cluster: &Cluster, script: &str, count: bool) -> Res<Ran> {
    let wrapper: &[&str] = if count {
        &[
            "valgrind",
            "--tool=callgrind",
            "--callgrind-out-file=/dev/null",
        ]
    } else {
        &[]
    };
    let mut child = cluster
        .single_user(DATABASE, wrapper)
        .stdin(Stdio::piped())
        .stdout(Stdio::piped())
        .stderr(Stdio::piped())
        .spawn()?;
    let mut stdin = child.stdin.take().expect("stdin is piped");
    let script = script.to_owned();
    let writer = std::thread::spawn(move || stdin.write_all(script.as_bytes()));
    let out = child.wait_with_output()?;
    writer.join().expect("the writer thread does not panic")?;
    let stdout = String::from_utf8_lossy(&out.stdout);
    let stderr = String::from_utf8_lossy(&out.stderr);
    if !out.status.success() || stdout.contains("ERROR:") || stderr.contains("ERROR:") {
        let errors: Vec<&str> = stdout
            .lines()
            .chain(stderr.lines())
            .filter(|line| line.contains("ERROR") || line.contains("valgrind"))
            .take(5)
            .collect();
        return Err(format!(
            "postgres --single failed ({}): {}",
            out.status,
            errors.join(" | ")
        )
        .into());
    }
    // Single-user mode prints each returned row's columns as `N: name = value (typeid …)`.
    let claimed = stdout
        .lines()
        .filter(|line| line.trim_start().starts_with("1: id = "))
        .count();
    let instructions = if count {
        let collected = stderr
            .lines()
            .find_map(|line| line.split_once("Collected : ").map(|(_, n)| n.trim()))
            .ok_or("callgrind printed no `Collected :` total")?;
        Some(collected.parse()?)
    } else {
        None
    };
    Ok(Ran {
        instructions,
        claimed,
    })
}

/// Instructions one more funnel transaction costs behind `gate`, sent as `sent`.
fn per_funnel(cluster: &Cluster, gate: &Gate, sent: Sent) -> Res<f64> {
    let mut totals = Vec::new();
    for funnels in [SHORT, LONG] {
        let ran = single_user(cluster, &sent.script(gate, TOKEN, funnels), true)?;
        if ran.claimed != funnels * CLAIM_LIMIT {
            return Err(format!(
                "gate {} ({}) claimed {} rows in {funnels} funnels, not {}",
                gate.name,
                sent.name(),
                ran.claimed,
                funnels * CLAIM_LIMIT
            )
            .into());
        }
        totals.push(ran.instructions.expect("counted"));
    }
    Ok((totals[1] as f64 - totals[0] as f64) / (LONG - SHORT) as f64)
}

#[tokio::main]
async fn main() -> ExitCode {
    report::run_main(NAME, run).await
}

async fn run(write: Option<String>) -> Res<bool> {
    let start = report::RunStart::now();
    let valgrind = valgrind_version()?;

    progress(NAME, "starting a durable throwaway cluster (fsync on)");
    let cluster = tokio::task::spawn_blocking(Cluster::start_durable).await??;
    let version = build_and_shut_down(&cluster).await?;
    refuse_stale_tokens(&cluster)?;
    settle(&cluster)?;
    let counts = count(&cluster)?;
    let span = start.end();

    let mut w = String::new();
    header(&mut w, &span, &version, &valgrind)?;
    counts_section(&mut w, &counts)?;
    steps_section(&mut w, &counts)?;

    print!("{w}");
    if let Some(path) = &write {
        report::write_report(path, NAME, &w)?;
        progress(NAME, &format!("wrote {path}"));
    }
    Ok(true)
}

/// Valgrind's version, or an error saying how to install it.
fn valgrind_version() -> Res<String> {
    let valgrind = std::process::Command::new("valgrind")
        .arg("--version")
        .output()
        .map_err(|e| {
            format!("valgrind is not runnable ({e}); install it: apt-get install valgrind")
        })?;
    Ok(String::from_utf8_lossy(&valgrind.stdout).trim().to_owned())
}

/// Builds the outbox on `cluster`, then shuts it down for the single-user runs; the server's
/// version.
async fn build_and_shut_down(cluster: &Cluster) -> Res<String> {
    let url = |db: &str| format!("postgres://postgres@127.0.0.1:{}/{db}", cluster.port());
    let mut server = PgConnection::connect(&url("postgres")).await?;
    sqlx::raw_sql(sqlx::AssertSqlSafe(format!("CREATE DATABASE {DATABASE}")))
        .execute(&mut server)
        .await?;
    let mut conn = PgConnection::connect(&url(DATABASE)).await?;
    let version: String = sqlx::query_scalar("SELECT version()")
        .fetch_one(&mut conn)
        .await?;
    progress(NAME, "building the 1,000,000-row outbox");
    fence_schema::build(&mut conn).await?;
    conn.close().await?;
    server.close().await?;
    cluster.shut_down()?;
    Ok(version)
}

/// Each gate that reads the lease must refuse a stale token: its funnels claim nothing.
fn refuse_stale_tokens(cluster: &Cluster) -> Res<()> {
    for gate in GATES.iter().filter(|gate| gate.reads_lease) {
        for sent in [Sent::Prepared, Sent::Text] {
            let ran = single_user(cluster, &sent.script(gate, TOKEN - 1, 3), false)?;
            if ran.claimed != 0 {
                return Err(format!(
                    "gate {} ({}) claimed {} rows for a stale token",
                    gate.name,
                    sent.name(),
                    ran.claimed
                )
                .into());
            }
        }
    }
    Ok(())
}

/// The outbox as built is not what repeated claims leave: the first funnels' updates find
/// full pages, later ones the room vacuum made. Settle it, so the first gate counted sees
/// the table the rest see (A, counted again last, shows how well).
fn settle(cluster: &Cluster) -> Res<()> {
    progress(
        NAME,
        &format!("settling the outbox: 3 × {LONG} unfenced funnels"),
    );
    for _ in 0..3 {
        single_user(
            cluster,
            &Sent::Prepared.script(&GATES[0], TOKEN, LONG),
            false,
        )?;
    }
    Ok(())
}

/// Each gate's instructions per funnel transaction, sent each way, and A's counted again last.
fn count(cluster: &Cluster) -> Res<Vec<(Sent, Vec<f64>, f64)>> {
    let mut counts: Vec<(Sent, Vec<f64>, f64)> = Vec::new();
    for sent in [Sent::Prepared, Sent::Text] {
        let mut per_gate = Vec::new();
        for gate in &GATES {
            progress(
                NAME,
                &format!(
                    "gate {}, {}: {SHORT} and {LONG} funnels under callgrind",
                    gate.name,
                    sent.name()
                ),
            );
            per_gate.push(per_funnel(cluster, gate, sent)?);
        }
        progress(NAME, &format!("gate A again, {}", sent.name()));
        let again = per_funnel(cluster, &GATES[0], sent)?;
        counts.push((sent, per_gate, again));
    }
    Ok(counts)
}

/// The report's title, how the figures were made, and the Machine section.
fn header(w: &mut String, span: &report::RunSpan, version: &str, valgrind: &str) -> Res<()> {
    report::header(
        w,
        "The fence's cost on the funnel, in instructions",
        NAME,
        span,
        COMMAND,
    )?;
    writeln!(
        w,
        "It starts a durable throwaway cluster of its own, builds the outbox `fence-bench` uses, \
         shuts it down, and runs the server in single-user mode under `{valgrind}` \
         (callgrind). Each gate's figure is (instructions for {LONG} funnels − for {SHORT}) / \
         {}: what one more `BEGIN; UPDATE … ; COMMIT` costs the server process, start-up and \
         first-use costs cancelled out. Counts do not depend on the machine's load; they leave \
         out system calls, cache misses and the client. Every funnel claimed its {CLAIM_LIMIT} \
         rows, and every gate that reads the lease claimed none for a stale token.\n",
        LONG - SHORT
    )?;
    report::machine_section(
        w,
        span,
        version,
        "private durable cluster, run in single-user mode (`postgres --single`) under callgrind",
    )?;
    Ok(())
}

/// Each gate's instructions per funnel transaction, sent each way.
fn counts_section(w: &mut String, counts: &[(Sent, Vec<f64>, f64)]) -> Res<()> {
    writeln!(w, "## Instructions per funnel transaction\n")?;
    writeln!(
        w,
        "| gate | what it adds | {} | {} |",
        counts[0].0.name(),
        counts[1].0.name()
    )?;
    writeln!(w, "|---|---|---:|---:|")?;
    for (index, gate) in GATES.iter().enumerate() {
        let cell = |per_gate: &[f64]| {
            if index == 0 {
                format!("{:.0}", per_gate[0])
            } else {
                format!("{:+.0}", per_gate[index] - per_gate[0])
            }
        };
        writeln!(
            w,
            "| {} | {} | {} | {} |",
            gate.name,
            gate.what,
            cell(&counts[0].1),
            cell(&counts[1].1)
        )?;
    }
    writeln!(
        w,
        "\nA's row is its count; every other row is that gate's count minus A's. A counted again \
         after the other gates: {:+.0} ({}), {:+.0} ({}): the noise in every row.\n",
        counts[0].2 - counts[0].1[0],
        counts[0].0.name(),
        counts[1].2 - counts[1].1[0],
        counts[1].0.name()
    )?;
    Ok(())
}

/// What each step of the fence adds, and B/A.
fn steps_section(w: &mut String, counts: &[(Sent, Vec<f64>, f64)]) -> Res<()> {
    writeln!(w, "## Where the fence's instructions go\n")?;
    writeln!(
        w,
        "| step | how it is computed | {} | {} |",
        counts[0].0.name(),
        counts[1].0.name()
    )?;
    writeln!(w, "|---|---|---:|---:|")?;
    let at = |name: &str| {
        GATES
            .iter()
            .position(|gate| gate.name == name)
            .expect("a gate")
    };
    let steps: [(&str, &str, &str, &str); 5] = [
        (
            "the `Result` node of any pseudo-constant gate",
            "G − A",
            "G",
            "A",
        ),
        ("the plpgsql call", "C − G", "C", "G"),
        ("the isolation check", "I − C", "I", "C"),
        ("the lease-row read", "R − C", "R", "C"),
        ("**the whole fence**", "B − A", "B", "A"),
    ];
    for (step, how, plus, minus) in steps {
        let cell = |per_gate: &[f64]| {
            let d = per_gate[at(plus)] - per_gate[at(minus)];
            format!("{d:+.0} ({:.1} %)", d / per_gate[0] * 100.0)
        };
        writeln!(
            w,
            "| {step} | {how} | {} | {} |",
            cell(&counts[0].1),
            cell(&counts[1].1)
        )?;
    }
    for (sent, per_gate, _) in counts {
        writeln!(
            w,
            "\n{}: B/A = **{:.4}** in instructions.",
            sent.name(),
            per_gate[at("B")] / per_gate[0]
        )?;
    }
    writeln!(w)?;
    Ok(())
}
