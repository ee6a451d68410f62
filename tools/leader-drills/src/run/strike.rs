//! The strike: once the ledger is led, one fault at a random point of the renew cycle (on the
//! leader's process or link, the operator's pause, the server or the pooler), held and healed,
//! then the outage it caused measured on the database clock and the work drained. The failover
//! and the read-only server have strikes of their own ([`super::failover`], [`super::read_only`]).

use std::time::Duration;

use billing_demo::checks::Check;
use chrono::{DateTime, Utc};
use leader_runtime::Timings;
use leader_testkit::{Cluster, Pooler};
use rand::Rng;
use sqlx::{PgPool, Row};
use tokio::process::Command;

use super::records::{
    advisory_holder, db_now, db_now_when_back, ledger_holder, note_fault, psql, resumed, ts,
    wait_outage,
};
use super::replicas::{Replica, signal};
use super::settling::{Settling, settle};
use super::{DrillError, Resumed, RunConfig, Servers};
use crate::fault::Fault;

/// How long a run waits for the ledger's first leader, or for a restarted server to answer.
pub(super) const STARTUP: Duration = Duration::from_secs(60);

/// What a strike left for the checks.
#[derive(Debug, Default)]
pub(super) struct Struck {
    pub(super) outage: Option<Duration>,
    pub(super) takeover: Option<Duration>,
    pub(super) victim: Option<String>,
    pub(super) resumed: Option<Resumed>,
    pub(super) settling: Option<Settling>,
    /// The pool to check through when the run ended on another server (a failover).
    pub(super) admin: Option<PgPool>,
    /// Checks only this fault can make.
    pub(super) checks: Vec<Check>,
    /// The read-only fault's PgBouncer in front of the standby, kept until the replicas exit.
    pub(super) standby_pooler: Option<Pooler>,
}

/// How long a run waits for an outage to end: four TTLs and half a minute.
fn outage_limit(config: &RunConfig) -> Duration {
    config.ttl * 4 + Duration::from_secs(30)
}

impl Servers {
    /// Waits for the ledger to be led, injects the fault at a random point of the renew cycle,
    /// heals it, measures the outage, then drains. Fills `struck`.
    #[allow(clippy::too_many_arguments)]
    pub(super) async fn strike(
        &self,
        db: &str,
        admin: &PgPool,
        standby: Option<&Cluster>,
        replicas: &mut Vec<Replica>,
        config: &RunConfig,
        timings: &Timings,
        notes: &mut Vec<String>,
        struck: &mut Struck,
    ) -> Result<(), DrillError> {
        match (config.fault, standby) {
            (Fault::Failover, Some(standby)) => {
                return self
                    .fail_over(db, admin, standby, replicas, config, timings, notes, struck)
                    .await;
            }
            (Fault::ReadOnly, Some(standby)) => {
                return self
                    .read_only(db, admin, standby, replicas, config, timings, struck)
                    .await;
            }
            _ => {}
        }
        let (holder, token, victim) = victim(admin, replicas, config, timings).await?;
        let pid = victim.pid().ok_or("the leader exited before the fault")?;
        let fault_at = note_fault(admin, config.fault.name()).await?;
        let heal_at = self
            .inject(db, admin, victim, pid, config, fault_at, notes)
            .await?;
        let healed_at = note_fault(admin, "healed").await?;
        let (outage, takeover) = outage(admin, config, token, fault_at, heal_at).await?;
        struck.takeover = takeover;
        if outage.is_none() {
            notes.push(format!(
                "drill_ledger did not run again within {:?} of the fault",
                outage_limit(config)
            ));
        }
        if config.settling && config.fault.ends_every_session() {
            struck.settling = Some(settle(admin, heal_at).await?);
        }
        tokio::time::sleep(Duration::from_secs(1)).await;
        drain(admin, config, timings).await?;
        if config.seeded_bug {
            struck.resumed = Some(resumed(admin, token, healed_at).await?);
        }
        struck.outage = outage;
        struck.victim = Some(holder);
        Ok(())
    }

    /// Injects `config.fault` into the leader `victim` (process `pid`), the role, the server
    /// or the pooler, and heals it; returns when it healed on the database clock (`fault_at`
    /// for the faults whose outage is counted from the leader's last claim).
    #[allow(clippy::too_many_arguments)]
    async fn inject(
        &self,
        db: &str,
        admin: &PgPool,
        victim: &Replica,
        pid: u32,
        config: &RunConfig,
        fault_at: DateTime<Utc>,
        notes: &mut Vec<String>,
    ) -> Result<DateTime<Utc>, DrillError> {
        // Long enough for the lease to run out and be granted again. The seeded-bug freeze holds
        // longer, so the takeover has surely happened when the frozen leader resumes and claims.
        let hold = if config.seeded_bug {
            config.ttl * 3
        } else {
            config.ttl * 3 / 2
        };
        let mut heal_at = fault_at;
        match config.fault {
            Fault::Kill => signal(pid, "KILL").await?,
            Fault::Term => signal(pid, "TERM").await?,
            Fault::Freeze => {
                signal(pid, "STOP").await?;
                self.hold(admin, db, config, hold, notes).await?;
                signal(pid, "CONT").await?;
            }
            Fault::Sever => match (victim.netns, &self.netns) {
                (Some(i), Some(namespaces)) => {
                    namespaces.sever(i)?;
                    self.hold(admin, db, config, hold, notes).await?;
                    namespaces.heal(i)?;
                }
                _ => {
                    victim.sever();
                    self.hold(admin, db, config, hold, notes).await?;
                    victim.heal();
                }
            },
            Fault::Pause => {
                let port = self.cluster.port();
                psql(
                    port,
                    db,
                    "SELECT leader_pause('drill_ledger', 'drill', 'fault drill')",
                )
                .await?;
                tokio::time::sleep(config.ttl / 2).await;
                psql(port, db, "SELECT leader_unpause('drill_ledger')").await?;
                heal_at = db_now(admin).await?;
            }
            Fault::PgRestartFast | Fault::PgRestartImmediate => {
                let mode = if config.fault == Fault::PgRestartFast {
                    "fast"
                } else {
                    "immediate"
                };
                let cluster = &self.cluster;
                tokio::task::block_in_place(|| cluster.restart(mode))?;
                heal_at = db_now_when_back(admin, STARTUP).await?;
            }
            Fault::AnchorEnd => {
                let port = self.cluster.port();
                psql(
                    port,
                    db,
                    "SELECT pg_terminate_backend(holder_anchor_pid, 10000)
                       FROM leader_leases WHERE role = 'drill_ledger'",
                )
                .await?;
            }
            Fault::PoolerRestart => {
                let pooler = &self.pooler;
                tokio::task::block_in_place(|| pooler.restart())?;
                heal_at = db_now(admin).await?;
            }
            Fault::Failover | Fault::ReadOnly => unreachable!("handled above, with a standby"),
        }
        Ok(heal_at)
    }

    /// Holds a fault that struck the leader for `hold`. Through the pooler, notes halfway how
    /// the pool stood: what the struck leader held inside a transaction, and who waited.
    async fn hold(
        &self,
        admin: &PgPool,
        db: &str,
        config: &RunConfig,
        hold: Duration,
        notes: &mut Vec<String>,
    ) -> Result<(), DrillError> {
        if !config.via_pooler {
            tokio::time::sleep(hold).await;
            return Ok(());
        }
        tokio::time::sleep(hold / 2).await;
        let sample = PoolSample::take(admin, self.pooler.port(), db).await?;
        notes.push(format!(
            "mid-fault: {} of the pool's {} server connections idle in a transaction for over \
             0.5 s, {} clients waiting in PgBouncer",
            sample.held_in_transaction, self.pooler_settings.pool_size, sample.clients_waiting
        ));
        tokio::time::sleep(hold - hold / 2).await;
        Ok(())
    }
}

/// The ledger's leader (by lease, or by advisory lock when the run compares it), once it has
/// one.
async fn leader(admin: &PgPool, config: &RunConfig) -> Result<(String, i64), DrillError> {
    if config.advisory_lock {
        advisory_holder(admin, STARTUP).await
    } else {
        ledger_holder(admin, STARTUP).await
    }
}

/// Waits for the ledger to be led and a claim or two to land, then for a random point of the
/// renew cycle; the leader then, its token, and its replica.
async fn victim<'r>(
    admin: &PgPool,
    replicas: &'r [Replica],
    config: &RunConfig,
    timings: &Timings,
) -> Result<(String, i64, &'r Replica), DrillError> {
    leader(admin, config).await?;
    // Let a claim or two land, then strike at a random point of the renew cycle.
    tokio::time::sleep(timings.heartbeat()).await;
    let delay = rand::rng().random_range(Duration::ZERO..timings.heartbeat());
    tokio::time::sleep(delay).await;
    let (holder, token) = leader(admin, config).await?;
    let victim = replicas
        .iter()
        .find(|r| r.name == holder)
        .ok_or_else(|| format!("the ledger's holder {holder} is not one of the replicas"))?;
    Ok((holder, token, victim))
}

/// The outage the fault caused, on the database clock (see [`Fault::outage_means`]), and for
/// a fault that struck the leader the time from the fault to the first claim under a newer
/// token; `None` where the ledger did not run again in time.
async fn outage(
    admin: &PgPool,
    config: &RunConfig,
    token: i64,
    fault_at: DateTime<Utc>,
    heal_at: DateTime<Utc>,
) -> Result<(Option<Duration>, Option<Duration>), DrillError> {
    let claims = "FROM claims WHERE role = 'drill_ledger'";
    let sql = match config.fault {
        Fault::Pause => format!(
            "SELECT {heal}, (SELECT min(claimed_at) {claims} AND token > {token} AND claimed_at >= {heal})",
            heal = ts(heal_at)
        ),
        Fault::PgRestartFast | Fault::PgRestartImmediate | Fault::PoolerRestart => format!(
            "SELECT (SELECT max(claimed_at) {claims} AND claimed_at < {fault}),
                    (SELECT min(claimed_at) {claims} AND claimed_at > {heal})",
            fault = ts(fault_at),
            heal = ts(heal_at)
        ),
        _ => format!(
            "SELECT (SELECT max(claimed_at) {claims} AND token = {token}),
                    (SELECT min(claimed_at) {claims} AND token > {token})"
        ),
    };
    let outage = wait_outage(admin, sql, outage_limit(config)).await?;
    let mut takeover = None;
    if outage.is_some() && config.fault.strikes_leader() && config.fault != Fault::Pause {
        let first_new = format!(
            "SELECT {fault}, (SELECT min(claimed_at) {claims} AND token > {token})",
            fault = ts(fault_at)
        );
        takeover = wait_outage(admin, first_new, Duration::ZERO).await?;
    }
    Ok((outage, takeover))
}

/// Waits for the reference application's work to drain, as its own demo does.
pub(super) async fn drain(
    admin: &PgPool,
    config: &RunConfig,
    timings: &Timings,
) -> Result<(), DrillError> {
    // The drain gives up once no work was done for this long. After a failover the promoted
    // standby redoes everything since replication was cut (its copy lacks it), through a pooler
    // that may still be waiting out server_login_retry: a longer limit, which costs nothing
    // when work gets done sooner.
    let limit = if config.fault == Fault::Failover {
        Duration::from_secs(60) + 4 * config.ttl
    } else {
        Duration::from_secs(20) + 2 * config.ttl
    };
    billing_demo::demo::drain(admin, limit, timings)
        .await
        .map(drop)
        .map_err(|e| e.to_string().into())
}

/// How a pool of server connections stood in the middle of a fault that struck a leader: what
/// the frozen or cut-off leader still held, and who waited for it.
#[derive(Debug, Clone, Copy)]
struct PoolSample {
    /// Server connections idle inside a transaction for longer than half a second: held by the
    /// struck leader, since every other client's transactions take milliseconds.
    held_in_transaction: i64,
    /// PgBouncer's `cl_waiting` for the run's database: clients queued for a server connection.
    clients_waiting: i64,
}

impl PoolSample {
    async fn take(admin: &PgPool, pooler_port: u16, db: &str) -> Result<PoolSample, DrillError> {
        let held_in_transaction: i64 = sqlx::raw_sql(
            "SELECT count(*) FROM pg_stat_activity
              WHERE datname = current_database() AND state LIKE 'idle in transaction%'
                AND state_change < clock_timestamp() - interval '500 milliseconds'",
        )
        .fetch_one(admin)
        .await?
        .try_get(0)?;
        let out = Command::new("psql")
            .args(["-h", "127.0.0.1", "-U", "postgres", "-qA", "-F", "|"])
            .args(["-p", &pooler_port.to_string(), "-d", "pgbouncer"])
            .args(["-c", "SHOW POOLS"])
            .output()
            .await?;
        if !out.status.success() {
            return Err(format!("SHOW POOLS: {}", String::from_utf8_lossy(&out.stderr)).into());
        }
        let text = String::from_utf8_lossy(&out.stdout);
        let mut lines = text.lines();
        let header: Vec<&str> = lines.next().unwrap_or_default().split('|').collect();
        let column = |name: &str| {
            header
                .iter()
                .position(|h| *h == name)
                .ok_or_else(|| format!("SHOW POOLS has no {name} column: {header:?}"))
        };
        let (database, waiting) = (column("database")?, column("cl_waiting")?);
        let clients_waiting = lines
            .map(|line| line.split('|').collect::<Vec<_>>())
            .filter(|row| row.get(database) == Some(&db))
            .filter_map(|row| row.get(waiting)?.parse::<i64>().ok())
            .sum();
        Ok(PoolSample {
            held_in_transaction,
            clients_waiting,
        })
    }
}
