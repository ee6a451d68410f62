//! The failover: replication to the standby cut, a ledger grant only the old primary has, the
//! primary crashed and the standby promoted, every link (or the pooler) pointed at it; then
//! what the old primary had issued, read from it, checked against what the new one grants.

use std::time::Duration;

use billing_demo::checks::{Check, Kind};
use chrono::{DateTime, Utc};
use leader_runtime::Timings;
use leader_testkit::Cluster;
use rand::Rng;
use sqlx::postgres::{PgConnectOptions, PgPoolOptions};
use sqlx::{PgPool, Row};
use tokio::time::Instant;

use super::records::{
    db_now_when_back, ledger_holder, note_fault, psql, psql_value, ts, wait_outage,
};
use super::replicas::Replica;
use super::servers::local;
use super::settling::settle;
use super::strike::{STARTUP, Struck, drain};
use super::{DrillError, RunConfig, Servers};

/// What the old primary had issued, read from it once it is back: nothing points at it then.
struct Issued {
    /// Its last claim of the ledger.
    last_claim: Option<DateTime<Utc>>,
    /// Each role's last token.
    tokens: Vec<(String, i64)>,
    /// The ledger's last token.
    ledger_token: i64,
}

impl Servers {
    /// The failover: cut replication, wait for a ledger grant the standby lacks, crash the
    /// primary, promote the standby, point every link at it. The old primary is started again
    /// afterwards (nothing points at it) to read what it had issued.
    #[allow(clippy::too_many_arguments)]
    pub(super) async fn fail_over(
        &self,
        db: &str,
        admin: &PgPool,
        standby: &Cluster,
        replicas: &mut [Replica],
        config: &RunConfig,
        timings: &Timings,
        notes: &mut Vec<String>,
        struck: &mut Struck,
    ) -> Result<(), DrillError> {
        ledger_holder(admin, STARTUP).await?;
        tokio::time::sleep(timings.heartbeat()).await;
        cut_replication(standby, db).await?;
        let holder = granted_on_the_primary_only(admin, config).await?;
        let delay = rand::rng().random_range(Duration::ZERO..timings.heartbeat());
        tokio::time::sleep(delay).await;
        let fault_at = note_fault(admin, "failover").await?;
        let (new_admin, promoted_at) = self.promote(db, standby, replicas, config).await?;
        let issued = self.issued_by_the_old_primary(admin).await?;
        let first_new = format!(
            "SELECT {last}::timestamptz, (SELECT min(claimed_at) FROM claims
                      WHERE role = 'drill_ledger' AND claimed_at > {promoted})",
            last = issued.last_claim.map(ts).unwrap_or_else(|| "NULL".into()),
            promoted = ts(promoted_at)
        );
        let limit = config.ttl * 4 + Duration::from_secs(30);
        struck.outage = wait_outage(&new_admin, first_new, limit).await?;
        if struck.outage.is_none() {
            notes.push(format!(
                "drill_ledger did not run on the promoted standby within {limit:?}"
            ));
        }
        // The old leader's fence, on the new primary, while its successor leads.
        let fenced_in: bool = sqlx::query_scalar("SELECT leader_fence('drill_ledger', $1)")
            .bind(issued.ledger_token)
            .fetch_one(&new_admin)
            .await?;
        if config.settling {
            struck.settling = Some(settle(&new_admin, promoted_at).await?);
        }
        tokio::time::sleep(Duration::from_secs(1)).await;
        drain(&new_admin, config, timings).await?;
        let reissued = reissued(&new_admin, &issued, fault_at).await?;
        struck.checks.extend(checks(reissued, fenced_in));
        struck.victim = Some(holder);
        struck.admin = Some(new_admin);
        Ok(())
    }

    /// Crashes the primary, promotes `standby` and points the pooler (or, direct, every
    /// replica's link) at it; a pool on the promoted standby, and when it answered.
    async fn promote(
        &self,
        db: &str,
        standby: &Cluster,
        replicas: &[Replica],
        config: &RunConfig,
    ) -> Result<(PgPool, DateTime<Utc>), DrillError> {
        let primary = &self.cluster;
        tokio::task::block_in_place(|| primary.crash())?;
        tokio::task::block_in_place(|| standby.promote())?;
        let new_admin = PgPoolOptions::new()
            .max_connections(4)
            .connect_with(
                PgConnectOptions::new()
                    .host("127.0.0.1")
                    .port(standby.port())
                    .username("postgres")
                    .database(db),
            )
            .await?;
        let promoted_at = db_now_when_back(&new_admin, STARTUP).await?;
        // Through the pooler, the pooler is re-pointed (as an operator or a failover manager
        // would); direct, each replica's link is.
        if config.via_pooler {
            self.pooler.repoint("127.0.0.1", standby.port())?;
        } else {
            for replica in replicas.iter() {
                replica.link.set_upstream(local(standby.port()));
            }
        }
        // Anchors always connect to the server itself: they follow the promotion.
        for anchor_link in replicas.iter().filter_map(|r| r.anchor_link.as_ref()) {
            anchor_link.set_upstream(local(standby.port()));
        }
        Ok((new_admin, promoted_at))
    }

    /// Starts the crashed primary again and reads what it had issued through `admin`.
    async fn issued_by_the_old_primary(&self, admin: &PgPool) -> Result<Issued, DrillError> {
        let primary = &self.cluster;
        tokio::task::block_in_place(|| primary.restart("fast"))?;
        let last_claim: Option<DateTime<Utc>> =
            sqlx::raw_sql("SELECT max(claimed_at) FROM claims WHERE role = 'drill_ledger'")
                .fetch_one(admin)
                .await?
                .try_get(0)?;
        let tokens: Vec<(String, i64)> =
            sqlx::raw_sql("SELECT role, holder_token FROM leader_leases ORDER BY role")
                .fetch_all(admin)
                .await?
                .iter()
                .map(|row| Ok((row.try_get(0)?, row.try_get(1)?)))
                .collect::<sqlx::Result<_>>()?;
        let ledger_token = tokens
            .iter()
            .find(|(role, _)| role == "drill_ledger")
            .map(|(_, token)| *token)
            .ok_or("the old primary has no drill_ledger row")?;
        Ok(Issued {
            last_claim,
            tokens,
            ledger_token,
        })
    }
}

/// Stops the standby's replication, and waits until its WAL receiver is gone.
async fn cut_replication(standby: &Cluster, db: &str) -> Result<(), DrillError> {
    psql(standby.port(), db, "ALTER SYSTEM SET primary_conninfo = ''").await?;
    psql(standby.port(), db, "SELECT pg_reload_conf()").await?;
    let until = Instant::now() + STARTUP;
    while psql_value(
        standby.port(),
        db,
        "SELECT count(*) FROM pg_stat_wal_receiver",
    )
    .await?
        != "0"
    {
        if Instant::now() > until {
            return Err("the standby's WAL receiver did not stop".into());
        }
        tokio::time::sleep(Duration::from_millis(50)).await;
    }
    Ok(())
}

/// Waits for a grant of the ledger that only the old primary has (a token newer than the one
/// held when replication was cut); its holder.
async fn granted_on_the_primary_only(
    admin: &PgPool,
    config: &RunConfig,
) -> Result<String, DrillError> {
    let (_, cut_token) = ledger_holder(admin, STARTUP).await?;
    let until = Instant::now() + config.ttl * 4 + STARTUP;
    loop {
        let (holder, token) = ledger_holder(admin, STARTUP).await?;
        if token != cut_token {
            return Ok(holder);
        }
        if Instant::now() > until {
            return Err("the ledger was not granted again after replication was cut".into());
        }
        tokio::time::sleep(Duration::from_millis(50)).await;
    }
}

/// Grants on the promoted standby since the fault whose token repeats or undercuts the last
/// one the old primary issued for the same role.
async fn reissued(
    new_admin: &PgPool,
    issued: &Issued,
    fault_at: DateTime<Utc>,
) -> Result<i64, DrillError> {
    let mut reissued = 0;
    for (role, last_old) in &issued.tokens {
        let count: i64 = sqlx::query_scalar(
            "SELECT count(*) FROM grants WHERE role = $1 AND granted_at > $2 AND token <= $3",
        )
        .bind(role)
        .bind(fault_at)
        .bind(last_old)
        .fetch_one(new_admin)
        .await?;
        reissued += count;
    }
    Ok(reissued)
}

/// The failover's own checks: no token re-issued, and the old leader fenced out.
fn checks(reissued: i64, fenced_in: bool) -> [Check; 2] {
    [
        Check {
            name: "no token granted after the failover repeats or undercuts one the old primary issued",
            kind: Kind::Safety,
            violations: reissued,
        },
        Check {
            name: "the old primary's last ledger token is not fenced-in on the promoted standby",
            kind: Kind::Safety,
            violations: i64::from(fenced_in),
        },
    ]
}
