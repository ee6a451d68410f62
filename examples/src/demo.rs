//! The demo: replicas of the billing service leading five roles, one killed midway, then checks.

use std::collections::BTreeMap;
use std::time::Duration;

use leader_core::{StatementError, operator, status};
use leader_runtime::{Runtime, Timings};
use sqlx::{PgPool, Row};
use tokio::task::JoinHandle;
use tokio::time::Instant;
use tokio_util::sync::CancellationToken;

use crate::checks::{CHECKS, Report, run_checks};
use crate::seed::{SeedSize, seed};

/// What the demo runs.
#[derive(Debug, Clone)]
pub struct DemoConfig {
    pub replicas: usize,
    /// How long the replicas run before billing is paused and the queues drain.
    pub run_for: Duration,
    /// The longest billing may take to catch up with the cutoff and the queues to drain.
    pub drain_for: Duration,
    pub timings: Timings,
    pub seed: SeedSize,
    /// Kill the billing leader halfway through, without releasing its leases.
    pub kill_leader: bool,
    /// Print the live status every this often (`None`: quiet).
    pub status_every: Option<Duration>,
}

/// What the demo found.
#[derive(Debug)]
pub struct DemoSummary {
    pub report: Report,
    /// Per role: ticks granted and rows claimed.
    pub per_role: BTreeMap<String, (i64, i64)>,
    /// The killed replica and how long each of its roles took to be led elsewhere.
    pub takeovers: Vec<(String, Duration)>,
    pub killed: Option<String>,
    pub invoices: i64,
}

impl DemoSummary {
    /// True when every safety and liveness check passed.
    pub fn passed(&self) -> bool {
        self.report.all_passed()
    }
}

struct Replica {
    name: String,
    handle: JoinHandle<Result<(), leader_runtime::RunError>>,
    /// A clone of the runtime's pool, so that a kill closes its connections as a dead process's
    /// would be closed: an aborted task alone leaves them open, and a transaction it had begun
    /// then holds one of PgBouncer's few server connections until it times out.
    pool: sqlx::PgPool,
}

impl Replica {
    /// Stops it as a crash would: no RELEASE, and its connections closed under whatever they
    /// were doing (the server rolls their transactions back).
    fn kill(self) {
        self.handle.abort();
        tokio::spawn(async move { self.pool.close().await });
    }
}

/// A replica: its own pool (as a separate process would have) and a runtime with every
/// `#[leader_role]` job of this crate.
async fn start_replica(
    connect: &(impl Fn() -> sqlx::postgres::PgConnectOptions + Sync),
    name: String,
    timings: Timings,
    shutdown: &CancellationToken,
) -> Result<Replica, Box<dyn std::error::Error>> {
    let pool = sqlx::postgres::PgPoolOptions::new()
        .max_connections(6)
        .connect_with(connect())
        .await?;
    let runtime = Runtime::builder(pool.clone())
        .registered_jobs()
        .timings(timings)
        .holder_id(name.clone())
        .shutdown_grace(Duration::from_secs(5))
        .status_every(Duration::from_secs(1))
        .build()?;
    let handle = tokio::spawn(runtime.run_until_cancelled(shutdown.clone()));
    Ok(Replica { name, handle, pool })
}

async fn leaders(
    pool: &PgPool,
    timings: &Timings,
) -> Result<BTreeMap<String, (String, Option<String>, i64)>, StatementError> {
    Ok(status::read(pool, timings)
        .await?
        .into_iter()
        .map(|r| {
            // A shard of a sharded role is its own lease: `webhook_delivery shard 3/8`.
            let lease = match r.shard {
                Some(shard) => format!("{} shard {shard}", r.role),
                None => r.role,
            };
            (lease, (r.state.to_string(), r.holder_id, r.token))
        })
        .collect())
}

async fn per_role(pool: &PgPool) -> sqlx::Result<BTreeMap<String, (i64, i64)>> {
    let rows = sqlx::raw_sql(
        "SELECT g.role, g.ticks, coalesce(c.claimed, 0)::bigint AS claimed
           FROM (SELECT role, count(*) AS ticks FROM grants GROUP BY role) g
           LEFT JOIN (SELECT role, sum(cardinality(row_ids)) AS claimed FROM claims GROUP BY role) c
             ON c.role = g.role",
    )
    .fetch_all(pool)
    .await?;
    rows.iter()
        .map(|r| {
            Ok((
                r.try_get("role")?,
                (r.try_get("ticks")?, r.try_get("claimed")?),
            ))
        })
        .collect()
}

/// The live table: `leaderctl status`'s table ([`status::Table`]) with the demo's ticks and
/// claimed rows per role, after the seconds since the start.
async fn print_status(
    pool: &PgPool,
    started: Instant,
    timings: &Timings,
) -> Result<(), Box<dyn std::error::Error>> {
    let rows = status::read(pool, timings).await?;
    let counts = per_role(pool).await?;
    let count = move |i: usize| {
        let counts = counts.clone();
        move |r: &status::RoleStatus| {
            let (ticks, claimed) = counts.get(&r.role).copied().unwrap_or((0, 0));
            [ticks, claimed][i].to_string()
        }
    };
    let table = status::Table::new(&rows)
        .column("ticks", count(0))
        .column("claimed", count(1))
        .to_string();
    for (i, line) in table.lines().enumerate() {
        if i == 0 {
            println!("[{:>3}s] {line}", started.elapsed().as_secs());
        } else {
            println!("       {line}");
        }
    }
    Ok(())
}

/// Polls `count_sql` until it returns 0 or `until` passes.
async fn wait_for_zero(pool: &PgPool, count_sql: &'static str, until: Instant) -> sqlx::Result<()> {
    while Instant::now() < until {
        let left: i64 = sqlx::raw_sql(count_sql).fetch_one(pool).await?.try_get(0)?;
        if left == 0 {
            break;
        }
        tokio::time::sleep(Duration::from_millis(100)).await;
    }
    Ok(())
}

/// Pauses `role` for the drain, trying again while PAUSE times out (a loaded machine, or a lock
/// a struck replica's statement still holds) until `until`; the last error if it never finished.
async fn pause_within(
    admin: &PgPool,
    role: &str,
    until: Instant,
    timings: &Timings,
) -> Result<(), StatementError> {
    loop {
        let paused = operator::pause(
            admin,
            role,
            "billing-demo",
            Some("draining before the checks"),
            timings,
        )
        .await;
        match paused {
            Err(StatementError::Timeout { .. }) if Instant::now() < until => {
                tokio::time::sleep(Duration::from_millis(100)).await;
            }
            done => return done,
        }
    }
}

/// Ends a run so the checks can judge it: takes no new billing periods (every period that ended
/// before now must be billed), waits for billing to catch up, pauses `billing` and `dunning`
/// through the framework's pause API, and waits for the queues to drain; waits `drain_for` at
/// most, leaving whatever is left for the liveness checks to report.
pub async fn drain(
    admin: &PgPool,
    drain_for: Duration,
    timings: &Timings,
) -> Result<(), Box<dyn std::error::Error>> {
    let drain_until = Instant::now() + drain_for;
    sqlx::raw_sql("INSERT INTO billing_cutoff (cutoff) VALUES (now())")
        .execute(admin)
        .await?;
    let caught_up = "SELECT count(*) FROM subscriptions s, billing_cutoff c
                      WHERE s.billed_until + s.period_secs * interval '1 second' <= c.cutoff";
    wait_for_zero(admin, caught_up, drain_until).await?;
    for role in ["billing", "dunning"] {
        pause_within(admin, role, drain_until, timings).await?;
    }
    let queued = "SELECT (SELECT count(*) FROM webhook_outbox WHERE dispatched_at IS NULL)
                       + (SELECT count(*) FROM email_outbox WHERE sent_at IS NULL)
                       + (SELECT count(*) FROM webhook_deliveries WHERE status = 'pending')";
    wait_for_zero(admin, queued, drain_until).await?;
    Ok(())
}

/// Seeds, runs the replicas, kills the billing leader midway, drains, stops, and checks.
///
/// `admin` is a pool on the demo's database; `connect` gives each replica's connection options.
pub async fn run_demo(
    admin: &PgPool,
    connect: impl Fn() -> sqlx::postgres::PgConnectOptions + Sync,
    config: &DemoConfig,
) -> Result<DemoSummary, Box<dyn std::error::Error>> {
    seed(admin, config.seed).await?;
    let shutdown = CancellationToken::new();
    let mut replicas = Vec::new();
    for i in 1..=config.replicas {
        replicas.push(
            start_replica(&connect, format!("replica-{i}"), config.timings, &shutdown).await?,
        );
    }
    let started = Instant::now();
    let mut killed: Option<(String, Instant, BTreeMap<String, i64>)> = None;
    let mut takeovers = Vec::new();
    let mut next_status = started;
    while started.elapsed() < config.run_for {
        if config.kill_leader && killed.is_none() && started.elapsed() >= config.run_for / 2 {
            let current = leaders(admin, &config.timings).await?;
            let victim = current
                .get("billing")
                .and_then(|(_, leader, _)| leader.clone())
                .and_then(|leader| replicas.iter().position(|r| r.name == leader));
            if let Some(index) = victim {
                let replica = replicas.remove(index);
                let name = replica.name.clone();
                replica.kill();
                let held: BTreeMap<String, i64> = current
                    .iter()
                    .filter(|(_, (_, leader, _))| leader.as_deref() == Some(name.as_str()))
                    .map(|(role, (_, _, token))| (role.clone(), *token))
                    .collect();
                if config.status_every.is_some() {
                    println!(
                        ">>> killed {} (leading {}) without releasing its leases",
                        name,
                        held.keys().cloned().collect::<Vec<_>>().join(", ")
                    );
                }
                killed = Some((name, Instant::now(), held));
            }
        }
        if let Some((name, at, held)) = &mut killed {
            let current = leaders(admin, &config.timings).await?;
            held.retain(|role, token| {
                let taken = current.get(role).is_some_and(|(_, leader, t)| {
                    *t > *token && leader.as_deref() != Some(name.as_str())
                });
                if taken {
                    let after = at.elapsed();
                    if config.status_every.is_some() {
                        println!(
                            ">>> {role} taken over {:.1}s after the kill",
                            after.as_secs_f64()
                        );
                    }
                    takeovers.push((role.clone(), after));
                }
                !taken
            });
        }
        if let Some(every) = config.status_every
            && Instant::now() >= next_status
        {
            print_status(admin, started, &config.timings).await?;
            next_status += every;
        }
        tokio::time::sleep(Duration::from_millis(100)).await;
    }

    drain(admin, config.drain_for, &config.timings).await?;
    shutdown.cancel();
    for replica in replicas {
        replica.handle.await??;
    }
    if config.status_every.is_some() {
        print_status(admin, started, &config.timings).await?;
    }
    let invoices: i64 = sqlx::raw_sql("SELECT count(*) FROM invoices")
        .fetch_one(admin)
        .await?
        .try_get(0)?;
    Ok(DemoSummary {
        report: run_checks(admin, CHECKS).await?,
        per_role: per_role(admin).await?,
        takeovers,
        killed: killed.map(|(name, ..)| name),
        invoices,
    })
}
