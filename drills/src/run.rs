//! One drill run: a fresh database with the reference application's schema and the ledger,
//! replicas as processes (each behind its own [`Link`]), one fault mid-tick, the outage on the
//! database clock, a drain, a clean stop, and the checks.

use std::net::SocketAddr;
use std::path::PathBuf;
use std::process::Stdio;
use std::time::Duration;

use billing_demo::checks::{CHECKS, Kind, Report, run_checks};
use billing_demo::seed::{SeedSize, seed};
use chrono::{DateTime, Utc};
use leader_runtime::Timings;
use leader_testkit::{Cluster, Pooler};
use rand::Rng;
use sqlx::postgres::{PgConnectOptions, PgPoolOptions};
use sqlx::{PgPool, Row};
use tokio::process::{Child, Command};
use tokio::time::Instant;

use crate::fault::Fault;
use crate::ledger;
use crate::proxy::Link;

/// The error type of a run that could not be carried out (as opposed to one whose checks
/// failed).
pub type DrillError = Box<dyn std::error::Error + Send + Sync>;

/// The drill-only override of the seeded-bug mode: the fence always true.
pub const SEEDED_BUG_SQL: &str =
    "CREATE OR REPLACE FUNCTION leader_fence(p_role text, p_token bigint)
RETURNS boolean LANGUAGE sql STABLE AS $$ SELECT true $$;";

/// The servers a drill runs against: a private PostgreSQL and a PgBouncer 1.18 in transaction
/// mode with a pool of 2 in front of it.
#[derive(Debug)]
pub struct Servers {
    pub cluster: Cluster,
    pub pooler: Pooler,
    /// Where the replicas' logs and each run's notes go.
    pub log_dir: PathBuf,
    pub replica_binary: PathBuf,
}

/// What one run does.
#[derive(Debug, Clone)]
pub struct RunConfig {
    pub fault: Fault,
    pub ttl: Duration,
    pub via_pooler: bool,
    pub replicas: usize,
    pub seeded_bug: bool,
}

/// What one run found.
#[derive(Debug)]
pub struct RunResult {
    pub config: RunConfig,
    pub report: Report,
    /// The outage on the database clock (see [`Fault::outage_means`]); `None` if the role did
    /// not run again before the drill gave up waiting.
    pub outage: Option<Duration>,
    pub victim: Option<String>,
    /// Anything worth saying beside the figures (a replica that did not exit cleanly, ...).
    pub notes: Vec<String>,
}

struct Replica {
    name: String,
    child: Child,
    link: Link,
    log: PathBuf,
}

impl Replica {
    fn pid(&self) -> Option<u32> {
        self.child.id()
    }
}

async fn signal(pid: u32, sig: &str) -> Result<(), DrillError> {
    let status = Command::new("kill")
        .arg(format!("-{sig}"))
        .arg(pid.to_string())
        .status()
        .await?;
    if status.success() {
        Ok(())
    } else {
        Err(format!("kill -{sig} {pid} failed").into())
    }
}

async fn psql(port: u16, db: &str, sql: &str) -> Result<(), DrillError> {
    let out = Command::new("psql")
        .args([
            "-h",
            "127.0.0.1",
            "-U",
            "postgres",
            "-v",
            "ON_ERROR_STOP=1",
            "-qAt",
        ])
        .args(["-p", &port.to_string(), "-d", db, "-c", sql])
        .output()
        .await?;
    if out.status.success() {
        Ok(())
    } else {
        Err(format!("psql -c {sql:?}: {}", String::from_utf8_lossy(&out.stderr)).into())
    }
}

async fn db_now(admin: &PgPool) -> Result<DateTime<Utc>, DrillError> {
    Ok(sqlx::raw_sql("SELECT clock_timestamp()")
        .fetch_one(admin)
        .await?
        .try_get(0)?)
}

/// Waits for `admin` to answer again (after a server restart), up to `limit`.
async fn db_now_when_back(admin: &PgPool, limit: Duration) -> Result<DateTime<Utc>, DrillError> {
    let until = Instant::now() + limit;
    loop {
        match db_now(admin).await {
            Ok(now) => return Ok(now),
            Err(error) if Instant::now() > until => return Err(error),
            Err(_) => tokio::time::sleep(Duration::from_millis(50)).await,
        }
    }
}

async fn note_fault(admin: &PgPool, what: &str) -> Result<DateTime<Utc>, DrillError> {
    let mut tx = admin.begin().await?;
    let at: DateTime<Utc> =
        sqlx::query_scalar("INSERT INTO drill_faults (what) VALUES ($1) RETURNING at")
            .persistent(false)
            .bind(what)
            .fetch_one(&mut *tx)
            .await?;
    tx.commit().await?;
    Ok(at)
}

/// The ledger's holder and token now, once it has one.
async fn ledger_holder(admin: &PgPool, limit: Duration) -> Result<(String, i64), DrillError> {
    let until = Instant::now() + limit;
    loop {
        let row = sqlx::raw_sql(
            "SELECT holder_id, holder_token FROM leader_leases
              WHERE role = 'drill_ledger' AND expires_at > now()",
        )
        .fetch_optional(admin)
        .await?;
        if let Some(row) = row {
            return Ok((row.try_get(0)?, row.try_get(1)?));
        }
        if Instant::now() > until {
            return Err(format!("nobody led drill_ledger within {limit:?}").into());
        }
        tokio::time::sleep(Duration::from_millis(20)).await;
    }
}

/// Seconds between two optional database timestamps the query returns, polled until the second
/// exists or `limit` passes.
async fn wait_outage(
    admin: &PgPool,
    sql: String,
    limit: Duration,
) -> Result<Option<Duration>, DrillError> {
    let until = Instant::now() + limit;
    loop {
        let row = sqlx::raw_sql(sqlx::AssertSqlSafe(sql.clone()))
            .fetch_one(admin)
            .await?;
        let (from, to): (Option<DateTime<Utc>>, Option<DateTime<Utc>>) =
            (row.try_get(0)?, row.try_get(1)?);
        if let (Some(from), Some(to)) = (from, to) {
            return Ok(Some((to - from).to_std().unwrap_or(Duration::ZERO)));
        }
        if Instant::now() > until {
            return Ok(None);
        }
        tokio::time::sleep(Duration::from_millis(100)).await;
    }
}

fn ts(at: DateTime<Utc>) -> String {
    format!("'{}'::timestamptz", at.to_rfc3339())
}

impl Servers {
    /// Starts PostgreSQL and PgBouncer (pool of 2, transaction mode).
    pub fn start(log_dir: PathBuf, replica_binary: PathBuf) -> Result<Servers, DrillError> {
        let cluster = Cluster::start()?;
        let pooler = Pooler::start_with_pool_size("127.0.0.1", cluster.port(), 2)?;
        std::fs::create_dir_all(&log_dir)?;
        Ok(Servers {
            cluster,
            pooler,
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

    async fn create_db(&self, name: &str, config: &RunConfig) -> Result<PgPool, DrillError> {
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

    async fn spawn_replica(
        &self,
        db: &str,
        index: usize,
        config: &RunConfig,
    ) -> Result<Replica, DrillError> {
        let upstream_port = if config.via_pooler {
            self.pooler.port()
        } else {
            self.cluster.port()
        };
        let link = Link::start(SocketAddr::from(([127, 0, 0, 1], upstream_port))).await?;
        let name = format!("replica-{index}");
        let log = self.log_dir.join(format!("{db}-{name}.log"));
        let file = std::fs::File::create(&log)?;
        let child = Command::new(&self.replica_binary)
            .args([
                "--url",
                &format!("postgres://postgres@127.0.0.1:{}/{db}", link.port()),
            ])
            .args(["--holder", &name])
            .args(["--ttl-ms", &config.ttl.as_millis().to_string()])
            .stdin(Stdio::null())
            .stdout(file.try_clone()?)
            .stderr(file)
            .kill_on_drop(true)
            .spawn()?;
        Ok(Replica {
            name,
            child,
            link,
            log,
        })
    }

    /// Carries out one run; `index` names its database.
    pub async fn run(&self, index: usize, config: &RunConfig) -> Result<RunResult, DrillError> {
        let db = format!("drill_{index}_{}", config.fault.name().replace('-', "_"));
        let admin = self.create_db(&db, config).await?;
        let timings = Timings::scaled_to_ttl(config.ttl)?;
        let mut replicas = Vec::new();
        for i in 1..=config.replicas {
            replicas.push(self.spawn_replica(&db, i, config).await?);
        }
        let mut notes = Vec::new();
        let result = self
            .strike(&db, &admin, &mut replicas, config, &timings, &mut notes)
            .await;
        // Whatever happened, every replica gets SIGCONT and SIGTERM, and a clean exit is expected
        // of each one that was not killed.
        for replica in &mut replicas {
            replica.link.heal();
            if let Some(pid) = replica.pid() {
                let _ = signal(pid, "CONT").await;
                let _ = signal(pid, "TERM").await;
            }
        }
        for replica in &mut replicas {
            match tokio::time::timeout(Duration::from_secs(30), replica.child.wait()).await {
                Ok(Ok(status)) if status.success() => {}
                Ok(Ok(status)) => {
                    if !(status.code().is_none() && config.fault == Fault::Kill) {
                        notes.push(format!(
                            "{} exited with {status} (log: {})",
                            replica.name,
                            replica.log.display()
                        ));
                    }
                }
                _ => {
                    let _ = replica.child.kill().await;
                    notes.push(format!(
                        "{} did not exit within 30 s of SIGTERM (log: {})",
                        replica.name,
                        replica.log.display()
                    ));
                }
            }
        }
        let (outage, victim) = result?;
        let mut report = run_checks(&admin, CHECKS).await?;
        report
            .checks
            .extend(run_checks(&admin, ledger::CHECKS).await?.checks);
        admin.close().await;
        Ok(RunResult {
            config: config.clone(),
            report,
            outage,
            victim,
            notes,
        })
    }

    /// Waits for the ledger to be led, injects the fault at a random point of the renew cycle,
    /// heals it, measures the outage, then drains. Returns the outage and the victim.
    async fn strike(
        &self,
        db: &str,
        admin: &PgPool,
        replicas: &mut [Replica],
        config: &RunConfig,
        timings: &Timings,
        notes: &mut Vec<String>,
    ) -> Result<(Option<Duration>, Option<String>), DrillError> {
        let startup = Duration::from_secs(60);
        ledger_holder(admin, startup).await?;
        // Let a claim or two land, then strike at a random point of the renew cycle.
        tokio::time::sleep(timings.heartbeat()).await;
        let delay = rand::rng().random_range(Duration::ZERO..timings.heartbeat());
        tokio::time::sleep(delay).await;
        let (holder, token) = ledger_holder(admin, startup).await?;
        let victim = replicas
            .iter()
            .position(|r| r.name == holder)
            .ok_or_else(|| format!("the ledger's holder {holder} is not one of the replicas"))?;
        let pid = replicas[victim]
            .pid()
            .ok_or("the leader exited before the fault")?;
        let hold = config.ttl * 3 / 2;
        let fault_at = note_fault(admin, config.fault.name()).await?;
        let mut heal_at = fault_at;
        match config.fault {
            Fault::Kill => signal(pid, "KILL").await?,
            Fault::Term => signal(pid, "TERM").await?,
            Fault::Freeze => {
                signal(pid, "STOP").await?;
                tokio::time::sleep(hold).await;
                signal(pid, "CONT").await?;
            }
            Fault::Sever => {
                replicas[victim].link.sever();
                tokio::time::sleep(hold).await;
                replicas[victim].link.heal();
            }
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
                heal_at = db_now_when_back(admin, startup).await?;
            }
            Fault::PoolerRestart => {
                let pooler = &self.pooler;
                tokio::task::block_in_place(|| pooler.restart())?;
                heal_at = db_now(admin).await?;
            }
        }
        note_fault(admin, "healed").await?;
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
        let outage = wait_outage(admin, sql, config.ttl * 4 + Duration::from_secs(30)).await?;
        if outage.is_none() {
            notes.push(format!(
                "drill_ledger did not run again within {:?} of the fault",
                config.ttl * 4 + Duration::from_secs(30)
            ));
        }
        tokio::time::sleep(Duration::from_secs(1)).await;
        billing_demo::demo::drain(admin, Duration::from_secs(20) + 2 * config.ttl, timings)
            .await
            .map_err(|e| e.to_string())?;
        Ok((outage, Some(holder)))
    }
}

/// Whether `result` found a violation of `kind`.
pub fn violated(result: &RunResult, kind: Kind) -> bool {
    !result.report.passed(kind)
}

/// The log directory's default: under the system temp dir.
pub fn default_log_dir() -> PathBuf {
    std::env::temp_dir().join(format!("leader-drill-{}", std::process::id()))
}

/// The `drill-replica` binary beside the running `drill`.
pub fn replica_binary() -> Result<PathBuf, DrillError> {
    let path = std::env::current_exe()?.with_file_name("drill-replica");
    if path.is_file() {
        Ok(path)
    } else {
        Err(format!(
            "{} is missing: build it with `cargo build -p leader-drills --bins` (scripts/drill does)",
            path.display()
        )
        .into())
    }
}
