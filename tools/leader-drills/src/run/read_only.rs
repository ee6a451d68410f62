//! The read-only server: a fourth replica started on the standby must refuse to lead, saying so
//! once per role, then lead once its link (or its own PgBouncer) is pointed at the primary.

use std::net::SocketAddr;
use std::path::Path;
use std::time::Duration;

use billing_demo::checks::{Check, Kind};
use chrono::{DateTime, Utc};
use leader_runtime::Timings;
use leader_testkit::{Cluster, Pooler};
use sqlx::PgPool;

use super::records::{ledger_holder, note_fault, ts, wait_outage};
use super::replicas::Replica;
use super::servers::local;
use super::strike::{STARTUP, Struck, drain};
use super::{DrillError, RunConfig, Servers};
use crate::scrape;

/// The gauge a replica sets to 1 per role while its ACQUIREs find the server read-only.
const READ_ONLY_GAUGE: &str = "leader_database_read_only";

/// The reference application's roles, each of which must say it once.
const ROLES: i64 = 6;

/// How many times `text` says `what`.
fn said(text: &str, what: &str) -> i64 {
    text.matches(what).count() as i64
}

/// Roles whose read-only gauge, scraped from `metrics`, is not `value`.
async fn gauge_not(metrics: SocketAddr, value: f64) -> Result<i64, DrillError> {
    let exported = scrape::gauge_by_role(metrics, READ_ONLY_GAUGE).await?;
    Ok(ROLES - exported.values().filter(|&&v| v == value).count() as i64)
}

impl Servers {
    /// The read-only server: a replica pointed at the standby refuses to lead, saying so once
    /// per role, then leads once its link is pointed at the primary.
    #[allow(clippy::too_many_arguments)]
    pub(super) async fn read_only(
        &self,
        db: &str,
        admin: &PgPool,
        standby: &Cluster,
        replicas: &mut Vec<Replica>,
        config: &RunConfig,
        timings: &Timings,
        struck: &mut Struck,
    ) -> Result<(), DrillError> {
        let name = "replica-on-standby".to_owned();
        ledger_holder(admin, STARTUP).await?;
        let (standby_pooler, replica, metrics) =
            self.start_on_standby(db, &name, standby, config).await?;
        // Long enough for several polls of every role.
        tokio::time::sleep(config.ttl * 2).await;
        let log = std::fs::read_to_string(&replica.log)?;
        let (refusals, led) = (
            said(&log, "the database is read-only"),
            said(&log, "became leader"),
        );
        struck.checks.push(Check {
            name: "refused on the standby, it exported leader_database_read_only = 1 for every role",
            kind: Kind::Safety,
            violations: gauge_not(metrics, 1.0).await?,
        });
        let heal_at = self
            .point_at_primary(admin, standby_pooler.as_ref(), &replica)
            .await?;
        replicas.push(replica);
        struck.standby_pooler = standby_pooler;
        let first_grant = format!(
            "SELECT {heal}, (SELECT min(granted_at) FROM grants
                              WHERE holder = '{name}' AND granted_at > {heal})",
            heal = ts(heal_at)
        );
        struck.outage =
            wait_outage(admin, first_grant, config.ttl * 4 + Duration::from_secs(30)).await?;
        struck.checks.push(Check {
            name: "a replica on the standby logged exactly one read-only line per role, and led nothing",
            kind: Kind::Safety,
            violations: (refusals - ROLES).abs() + led,
        });
        tokio::time::sleep(Duration::from_secs(1)).await;
        drain(admin, config, timings).await?;
        // Every role has polled since.
        tokio::time::sleep(timings.max_poll()).await;
        let log = &replicas.last().expect("just pushed").log;
        struck.checks.extend(writable_again(log, metrics).await?);
        struck.victim = Some(name);
        Ok(())
    }

    /// Starts the replica `name` on `standby`, its metrics exported; through the pooler it
    /// reaches the standby through a PgBouncer of its own (the drill's fronts the primary).
    /// Returns that PgBouncer, the replica, and where its metrics are.
    async fn start_on_standby(
        &self,
        db: &str,
        name: &str,
        standby: &Cluster,
        config: &RunConfig,
    ) -> Result<(Option<Pooler>, Replica, SocketAddr), DrillError> {
        let standby_pooler = if config.via_pooler {
            Some(tokio::task::block_in_place(|| {
                Pooler::start_with("127.0.0.1", standby.port(), self.pooler_settings)
            })?)
        } else {
            None
        };
        let upstream = standby_pooler.as_ref().map_or(standby.port(), Pooler::port);
        let metrics = scrape::free_local_addr()?;
        let replica = self
            .spawn_replica(
                db,
                name.to_owned(),
                Some(upstream),
                None,
                Some(metrics),
                config,
            )
            .await?;
        Ok((standby_pooler, replica, metrics))
    }

    /// Points the replica on the standby at the primary: its own PgBouncer (`standby_pooler`),
    /// or direct its link. When, on the database clock.
    async fn point_at_primary(
        &self,
        admin: &PgPool,
        standby_pooler: Option<&Pooler>,
        replica: &Replica,
    ) -> Result<DateTime<Utc>, DrillError> {
        let heal_at = note_fault(admin, "read-only replica pointed at the primary").await?;
        match standby_pooler {
            Some(pooler) => pooler.repoint("127.0.0.1", self.cluster.port())?,
            None => replica.link.set_upstream(local(self.cluster.port())),
        }
        Ok(heal_at)
    }
}

/// The checks once the replica on the standby is pointed at the primary and every role has
/// polled: it said once per role that the server takes writes again, and its gauges are 0.
async fn writable_again(log: &Path, metrics: SocketAddr) -> Result<[Check; 2], DrillError> {
    let resumed = said(&std::fs::read_to_string(log)?, "accepts writes again");
    Ok([
        Check {
            name: "pointed at the primary, it said once per role that the server takes writes again",
            kind: Kind::Liveness,
            violations: (resumed - ROLES).abs(),
        },
        Check {
            name: "pointed at the primary, it exported leader_database_read_only = 0 for every role",
            kind: Kind::Liveness,
            violations: gauge_not(metrics, 0.0).await?,
        },
    ])
}
