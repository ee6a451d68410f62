//! The servers every run of a drill shares (a private PostgreSQL, a PgBouncer in front of it,
//! a network namespace per replica) and the fresh database each run gets on them.

use std::net::SocketAddr;
use std::path::PathBuf;

use billing_demo::seed::{SeedSize, seed};
use leader_testkit::{Cluster, Pooler, PoolerSettings};
use sqlx::PgPool;
use sqlx::postgres::{PgConnectOptions, PgPoolOptions};

use super::{DrillError, RunConfig};
use crate::ledger;
use crate::netns::Namespaces;

/// The drill-only override of the seeded-bug mode: the fence always true.
pub const SEEDED_BUG_SQL: &str =
    "CREATE OR REPLACE FUNCTION leader_fence(p_role text, p_token bigint)
RETURNS boolean LANGUAGE sql STABLE AS $$ SELECT true $$;";

/// The drill-only override of the seeded takeover bug: ACQUIRE takes over any lease that names an
/// anchor, without asking the server whether its session lives.
pub const TAKEOVER_WITHOUT_ANCHOR_CHECK_SQL: &str =
    "CREATE OR REPLACE FUNCTION leader_anchor_ended(p_pid integer, p_start timestamptz,
                                               p_recorded_at timestamptz)
RETURNS boolean LANGUAGE sql STABLE AS $$ SELECT p_pid IS NOT NULL AND p_recorded_at < now() $$;";

/// The drill-only `token + 1` override: every change of a lease's token becomes the old token
/// plus one, as an ACQUIRE without the clock term would issue.
pub const TOKEN_PLUS_ONE_SQL: &str = "
CREATE FUNCTION drill_token_plus_one() RETURNS trigger LANGUAGE plpgsql AS $$
BEGIN
    IF NEW.holder_token IS DISTINCT FROM OLD.holder_token THEN
        NEW.holder_token := OLD.holder_token + 1;
    END IF;
    RETURN NEW;
END
$$;
CREATE TRIGGER drill_token_plus_one BEFORE UPDATE ON leader_leases
    FOR EACH ROW EXECUTE FUNCTION drill_token_plus_one();";

/// The servers a drill runs against: a private PostgreSQL and a PgBouncer 1.18 in transaction
/// mode with a pool of 2 in front of it.
#[derive(Debug)]
pub struct Servers {
    pub cluster: Cluster,
    pub pooler: Pooler,
    /// What the pooler (and the read-only fault's second one) was started with.
    pub pooler_settings: PoolerSettings,
    /// A network namespace per replica for the severed link, when `ip netns add` works (else
    /// `None`, and the drill's TCP proxy severs instead).
    pub netns: Option<Namespaces>,
    /// Where the replicas' logs and each run's notes go.
    pub log_dir: PathBuf,
    pub replica_binary: PathBuf,
}

/// `port` on loopback, where every server listens.
pub(super) fn local(port: u16) -> SocketAddr {
    SocketAddr::from(([127, 0, 0, 1], port))
}

impl Servers {
    /// Starts PostgreSQL and PgBouncer (pool of 2, transaction mode), and a network namespace
    /// per replica where the kernel allows it.
    pub fn start(
        log_dir: PathBuf,
        replica_binary: PathBuf,
        replicas: usize,
        pooler: PoolerSettings,
    ) -> Result<Servers, DrillError> {
        let cluster = Cluster::start()?;
        let pooler_settings = pooler;
        let pooler = Pooler::start_with("127.0.0.1", cluster.port(), pooler_settings)?;
        std::fs::create_dir_all(&log_dir)?;
        let netns = match Namespaces::create(replicas) {
            Ok(namespaces) => Some(namespaces),
            Err(why) => {
                eprintln!("drill: no network namespaces ({why}); the TCP proxy severs links");
                None
            }
        };
        Ok(Servers {
            cluster,
            pooler,
            pooler_settings,
            netns,
            log_dir,
            replica_binary,
        })
    }

    fn admin_options(&self, db: &str) -> PgConnectOptions {
        PgConnectOptions::new()
            .host("127.0.0.1")
            .port(self.cluster.port())
            .username("postgres")
            .database(db)
    }

    /// Creates the run's database `name` with the reference application's schema, the ledger,
    /// the run's overrides and the seed; returns an admin pool on it.
    pub(super) async fn create_db(
        &self,
        name: &str,
        config: &RunConfig,
    ) -> Result<PgPool, DrillError> {
        let server = PgPoolOptions::new()
            .max_connections(1)
            .connect_with(self.admin_options("postgres"))
            .await?;
        sqlx::raw_sql(sqlx::AssertSqlSafe(format!("CREATE DATABASE {name}")))
            .execute(&server)
            .await?;
        server.close().await;
        let admin = PgPoolOptions::new()
            .max_connections(4)
            .connect_with(self.admin_options(name))
            .await?;
        billing_demo::MIGRATOR.run(&admin).await?;
        sqlx::raw_sql(ledger::SETUP_SQL).execute(&admin).await?;
        if config.seeded_bug {
            sqlx::raw_sql(SEEDED_BUG_SQL).execute(&admin).await?;
        }
        if config.token_plus_one {
            sqlx::raw_sql(TOKEN_PLUS_ONE_SQL).execute(&admin).await?;
        }
        if config.takeover_without_anchor_check {
            sqlx::raw_sql(TAKEOVER_WITHOUT_ANCHOR_CHECK_SQL)
                .execute(&admin)
                .await?;
        }
        seed(
            &admin,
            SeedSize {
                subscriptions: 60,
                webhooks: 200,
                emails: 100,
            },
        )
        .await?;
        Ok(admin)
    }
}
