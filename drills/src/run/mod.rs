//! One drill run: a fresh database with the reference application's schema and the ledger,
//! replicas as processes (each behind its own [`Link`]), one fault mid-tick, the outage on the
//! database clock, a drain, a clean stop, and the checks.

use std::net::SocketAddr;
use std::path::PathBuf;
use std::process::Stdio;
use std::time::Duration;

use billing_demo::checks::{CHECKS, Check, Kind, Report, run_checks};
use billing_demo::seed::{SeedSize, seed};
use chrono::{DateTime, Utc};
use leader_runtime::Timings;
use leader_testkit::{Cluster, Pooler, PoolerSettings};
use rand::Rng;
use sqlx::postgres::{PgConnectOptions, PgPoolOptions};
use sqlx::{PgPool, Row};
use tokio::process::{Child, Command};
use tokio::time::Instant;

use crate::fault::Fault;
use crate::ledger;
use crate::netns::Namespaces;
use crate::proxy::Link;
use crate::scrape;

/// The error type of a run that could not be carried out (as opposed to one whose checks
/// failed).
pub type DrillError = Box<dyn std::error::Error + Send + Sync>;

/// The drill-only override of the seeded-bug mode: the fence always true.
pub const SEEDED_BUG_SQL: &str =
    "CREATE OR REPLACE FUNCTION leader_fence(p_role text, p_token bigint)
RETURNS boolean LANGUAGE sql STABLE AS $$ SELECT true $$;";

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

/// What one run does.
#[derive(Debug, Clone)]
pub struct RunConfig {
    pub fault: Fault,
    pub ttl: Duration,
    pub via_pooler: bool,
    pub replicas: usize,
    pub seeded_bug: bool,
    /// The drill-only `token + 1` override (a trigger on `leader_leases`): the counterexample
    /// the clock term of the token prevents across a failover.
    pub token_plus_one: bool,
    /// Lead `drill_ledger` by a session advisory lock instead of a lease (the comparison).
    pub advisory_lock: bool,
}

/// What one run found.
#[derive(Debug)]
pub struct RunResult {
    pub config: RunConfig,
    pub report: Report,
    /// The outage on the database clock (see [`Fault::outage_means`]); `None` if the role did
    /// not run again before the drill gave up waiting.
    pub outage: Option<Duration>,
    /// For a fault that strikes the leader's process or link (kill, sever, freeze, term): from the fault to the
    /// first claim under a newer token, on the database clock. The outage also counts the time
    /// from the leader's last claim to the fault, which a starved leader can stretch.
    pub takeover: Option<Duration>,
    pub victim: Option<String>,
    /// For the seeded-bug freeze: what the frozen leader did once it resumed, read from the
    /// fault log and the records, not from the checker.
    pub resumed: Option<Resumed>,
    /// What carried the replicas' connections: `netns` (a namespace and veth pair each, direct
    /// to PostgreSQL) or `proxy` (the harness's TCP proxy).
    pub link: &'static str,
    /// Anything worth saying beside the figures (a replica that did not exit cleanly, ...).
    pub notes: Vec<String>,
}

/// What a frozen leader did once it resumed: whether it could show a missing fence. A superseded leader that claims rows afterwards is a violation the
/// checker must report; without both, the run cannot show whether the fence works.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub struct Resumed {
    /// Whether another replica was granted the role (a newer token) before the fault healed.
    pub superseded: bool,
    /// Claims that returned rows to the struck leader's token after the fault healed.
    pub claims: i64,
}

impl Resumed {
    /// Whether the run put a superseded leader in a position to claim rows: only such a run can
    /// show a fence that lets it.
    pub fn exposed(&self) -> bool {
        self.superseded && self.claims > 0
    }
}

struct Replica {
    name: String,
    child: Child,
    link: Link,
    /// The namespace the replica runs in, if any (its link is then the veth pair).
    netns: Option<usize>,
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
    psql_value(port, db, sql).await.map(drop)
}

async fn psql_value(port: u16, db: &str, sql: &str) -> Result<String, DrillError> {
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
        Ok(String::from_utf8_lossy(&out.stdout).trim().to_owned())
    } else {
        Err(format!("psql -c {sql:?}: {}", String::from_utf8_lossy(&out.stderr)).into())
    }
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
    leader_from(
        admin,
        "SELECT holder_id, holder_token FROM leader_leases
          WHERE role = 'drill_ledger' AND expires_at > now()",
        limit,
    )
    .await
}

/// The ledger's leader by advisory lock: the holder of the latest grant.
async fn advisory_holder(admin: &PgPool, limit: Duration) -> Result<(String, i64), DrillError> {
    leader_from(
        admin,
        "SELECT holder, token FROM grants WHERE role = 'drill_ledger' ORDER BY id DESC LIMIT 1",
        limit,
    )
    .await
}

async fn leader_from(
    admin: &PgPool,
    sql: &'static str,
    limit: Duration,
) -> Result<(String, i64), DrillError> {
    let until = Instant::now() + limit;
    loop {
        let row = sqlx::raw_sql(sql).fetch_optional(admin).await?;
        if let Some(row) = row {
            return Ok((row.try_get(0)?, row.try_get(1)?));
        }
        if Instant::now() > until {
            return Err(format!("nobody led drill_ledger within {limit:?}").into());
        }
        tokio::time::sleep(Duration::from_millis(20)).await;
    }
}

/// What the ledger's leader of `token` did after `healed_at`, the fault log's heal (see
/// [`Resumed`]).
async fn resumed(
    admin: &PgPool,
    token: i64,
    healed_at: DateTime<Utc>,
) -> Result<Resumed, DrillError> {
    let (superseded, claims): (bool, i64) = sqlx::query_as(
        "SELECT EXISTS (SELECT 1 FROM grants
                         WHERE role = 'drill_ledger' AND token > $1 AND granted_at < $2),
                (SELECT count(*) FROM claims
                  WHERE role = 'drill_ledger' AND token = $1 AND claimed_at > $2)",
    )
    .persistent(false)
    .bind(token)
    .bind(healed_at)
    .fetch_one(admin)
    .await?;
    Ok(Resumed { superseded, claims })
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

fn local(port: u16) -> SocketAddr {
    SocketAddr::from(([127, 0, 0, 1], port))
}

fn ts(at: DateTime<Utc>) -> String {
    format!("'{}'::timestamptz", at.to_rfc3339())
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
        if config.token_plus_one {
            sqlx::raw_sql(TOKEN_PLUS_ONE_SQL).execute(&admin).await?;
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
        name: String,
        upstream: Option<u16>,
        netns: Option<usize>,
        metrics: Option<SocketAddr>,
        config: &RunConfig,
    ) -> Result<Replica, DrillError> {
        let upstream_port = upstream.unwrap_or(if config.via_pooler {
            self.pooler.port()
        } else {
            self.cluster.port()
        });
        // In a namespace, the replica reaches the servers (on loopback) through a forwarder on its
        // veth pair's host end; the kernel severs the pair, the forwarder never does.
        let link = match (netns, &self.netns) {
            (Some(i), Some(_)) => {
                Link::start_on(&Namespaces::host_addr(i), local(upstream_port)).await?
            }
            _ => Link::start(local(upstream_port)).await?,
        };
        let log = self.log_dir.join(format!("{db}-{name}.log"));
        let file = std::fs::File::create(&log)?;
        let (mut command, url) = match (netns, &self.netns) {
            (Some(i), Some(namespaces)) => {
                let mut command = Command::new("ip");
                command
                    .args(namespaces.exec_prefix(i))
                    .arg(&self.replica_binary);
                let host = Namespaces::host_addr(i);
                (
                    command,
                    format!("postgres://postgres@{host}:{}/{db}", link.port()),
                )
            }
            _ => (
                Command::new(&self.replica_binary),
                format!("postgres://postgres@127.0.0.1:{}/{db}", link.port()),
            ),
        };
        let child = command
            .args(["--url", &url])
            .args(["--holder", &name])
            .args(["--ttl-ms", &config.ttl.as_millis().to_string()])
            .args(config.advisory_lock.then_some("--advisory-lock"))
            .args(metrics.map(|addr| format!("--metrics-addr={addr}")))
            .stdin(Stdio::null())
            .stdout(file.try_clone()?)
            .stderr(file)
            .kill_on_drop(true)
            .spawn()?;
        Ok(Replica {
            name,
            child,
            link,
            netns: netns.filter(|_| self.netns.is_some()),
            log,
        })
    }

    /// Carries out one run; `index` names its database.
    pub async fn run(&self, index: usize, config: &RunConfig) -> Result<RunResult, DrillError> {
        let db = format!("drill_{index}_{}", config.fault.name().replace('-', "_"));
        let admin = self.create_db(&db, config).await?;
        let timings = Timings::scaled_to_ttl(config.ttl)?;
        let mut replicas = Vec::new();
        let standby = if config.fault.needs_standby() {
            let cluster = &self.cluster;
            Some(tokio::task::block_in_place(|| cluster.start_standby())?)
        } else {
            None
        };
        // The severed link uses the kernel's tools where it can: a namespace per replica.
        let in_netns = config.fault == Fault::Sever
            && self
                .netns
                .as_ref()
                .is_some_and(|n| n.len() >= config.replicas);
        for i in 1..=config.replicas {
            replicas.push(
                self.spawn_replica(
                    &db,
                    format!("replica-{i}"),
                    None,
                    in_netns.then_some(i),
                    None,
                    config,
                )
                .await?,
            );
        }
        let mut notes = Vec::new();
        let mut struck = Struck::default();
        let result = self
            .strike(
                &db,
                &admin,
                standby.as_ref(),
                &mut replicas,
                config,
                &timings,
                &mut notes,
                &mut struck,
            )
            .await;
        // Whatever happened, every replica gets SIGCONT and SIGTERM, and a clean exit is expected
        // of each one that was not killed.
        for replica in &mut replicas {
            replica.link.heal();
            if let (Some(i), Some(namespaces)) = (replica.netns, &self.netns) {
                let _ = namespaces.heal(i);
            }
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
        // The failover re-pointed the shared pooler at this run's standby, which goes with the
        // run: the next run's replicas need it in front of the primary again.
        if config.fault == Fault::Failover && config.via_pooler {
            self.pooler.repoint("127.0.0.1", self.cluster.port())?;
        }
        result?;
        let checked = struck.admin.as_ref().unwrap_or(&admin);
        let mut report = run_checks(checked, CHECKS).await?;
        report
            .checks
            .extend(run_checks(checked, ledger::CHECKS).await?.checks);
        report.checks.append(&mut struck.checks);
        if let Some(new_primary) = struck.admin.take() {
            new_primary.close().await;
        }
        admin.close().await;
        let (outage, takeover, victim) = (struck.outage, struck.takeover, struck.victim);
        Ok(RunResult {
            config: config.clone(),
            report,
            outage,
            takeover,
            victim,
            resumed: struck.resumed,
            link: if in_netns { "netns" } else { "proxy" },
            notes,
        })
    }

    /// Waits for the ledger to be led, injects the fault at a random point of the renew cycle,
    /// heals it, measures the outage, then drains. Fills `struck`.
    #[allow(clippy::too_many_arguments)]
    async fn strike(
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
        let startup = Duration::from_secs(60);
        let leader = async |admin| {
            if config.advisory_lock {
                advisory_holder(admin, startup).await
            } else {
                ledger_holder(admin, startup).await
            }
        };
        leader(admin).await?;
        // Let a claim or two land, then strike at a random point of the renew cycle.
        tokio::time::sleep(timings.heartbeat()).await;
        let delay = rand::rng().random_range(Duration::ZERO..timings.heartbeat());
        tokio::time::sleep(delay).await;
        let (holder, token) = leader(admin).await?;
        let victim = replicas
            .iter()
            .position(|r| r.name == holder)
            .ok_or_else(|| format!("the ledger's holder {holder} is not one of the replicas"))?;
        let pid = replicas[victim]
            .pid()
            .ok_or("the leader exited before the fault")?;
        // Long enough for the lease to run out and be granted again. The seeded-bug freeze holds
        // longer, so the takeover has surely happened when the frozen leader resumes and claims.
        let hold = if config.seeded_bug {
            config.ttl * 3
        } else {
            config.ttl * 3 / 2
        };
        let fault_at = note_fault(admin, config.fault.name()).await?;
        let mut heal_at = fault_at;
        match config.fault {
            Fault::Kill => signal(pid, "KILL").await?,
            Fault::Term => signal(pid, "TERM").await?,
            Fault::Freeze => {
                signal(pid, "STOP").await?;
                self.hold(admin, db, config, hold, notes).await?;
                signal(pid, "CONT").await?;
            }
            Fault::Sever => match (replicas[victim].netns, &self.netns) {
                (Some(i), Some(namespaces)) => {
                    namespaces.sever(i)?;
                    self.hold(admin, db, config, hold, notes).await?;
                    namespaces.heal(i)?;
                }
                _ => {
                    replicas[victim].link.sever();
                    self.hold(admin, db, config, hold, notes).await?;
                    replicas[victim].link.heal();
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
                heal_at = db_now_when_back(admin, startup).await?;
            }
            Fault::PoolerRestart => {
                let pooler = &self.pooler;
                tokio::task::block_in_place(|| pooler.restart())?;
                heal_at = db_now(admin).await?;
            }
            Fault::Failover | Fault::ReadOnly => unreachable!("handled above, with a standby"),
        }
        let healed_at = note_fault(admin, "healed").await?;
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
        if outage.is_some() && config.fault.strikes_leader() && config.fault != Fault::Pause {
            let first_new = format!(
                "SELECT {fault}, (SELECT min(claimed_at) {claims} AND token > {token})",
                fault = ts(fault_at)
            );
            struck.takeover = wait_outage(admin, first_new, Duration::ZERO).await?;
        }
        if outage.is_none() {
            notes.push(format!(
                "drill_ledger did not run again within {:?} of the fault",
                config.ttl * 4 + Duration::from_secs(30)
            ));
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

    /// The failover: cut replication, wait for a ledger grant the standby lacks, crash the
    /// primary, promote the standby, point every link at it. The old primary is started again
    /// afterwards (nothing points at it) to read what it had issued.
    #[allow(clippy::too_many_arguments)]
    async fn fail_over(
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
        let startup = Duration::from_secs(60);
        ledger_holder(admin, startup).await?;
        tokio::time::sleep(timings.heartbeat()).await;
        psql(standby.port(), db, "ALTER SYSTEM SET primary_conninfo = ''").await?;
        psql(standby.port(), db, "SELECT pg_reload_conf()").await?;
        let until = Instant::now() + startup;
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
        let (_, cut_token) = ledger_holder(admin, startup).await?;
        // A grant of the ledger that only the old primary has.
        let until = Instant::now() + config.ttl * 4 + startup;
        let (holder, _) = loop {
            let (holder, token) = ledger_holder(admin, startup).await?;
            if token != cut_token {
                break (holder, token);
            }
            if Instant::now() > until {
                return Err("the ledger was not granted again after replication was cut".into());
            }
            tokio::time::sleep(Duration::from_millis(50)).await;
        };
        let delay = rand::rng().random_range(Duration::ZERO..timings.heartbeat());
        tokio::time::sleep(delay).await;
        let fault_at = note_fault(admin, "failover").await?;
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
        let promoted_at = db_now_when_back(&new_admin, startup).await?;
        // Through the pooler, the pooler is re-pointed (as an operator or a failover manager
        // would); direct, each replica's link is.
        if config.via_pooler {
            self.pooler.repoint("127.0.0.1", standby.port())?;
        } else {
            for replica in replicas.iter() {
                replica.link.set_upstream(local(standby.port()));
            }
        }
        // What the old primary had issued, read from it once it is back (nothing points at it).
        tokio::task::block_in_place(|| primary.restart("fast"))?;
        let old_last_claim: Option<DateTime<Utc>> =
            sqlx::raw_sql("SELECT max(claimed_at) FROM claims WHERE role = 'drill_ledger'")
                .fetch_one(admin)
                .await?
                .try_get(0)?;
        let issued: Vec<(String, i64)> =
            sqlx::raw_sql("SELECT role, holder_token FROM leader_leases ORDER BY role")
                .fetch_all(admin)
                .await?
                .iter()
                .map(|row| Ok((row.try_get(0)?, row.try_get(1)?)))
                .collect::<sqlx::Result<_>>()?;
        let old_ledger_token = issued
            .iter()
            .find(|(role, _)| role == "drill_ledger")
            .map(|(_, token)| *token)
            .ok_or("the old primary has no drill_ledger row")?;
        let first_new = format!(
            "SELECT {last}::timestamptz, (SELECT min(claimed_at) FROM claims
                      WHERE role = 'drill_ledger' AND claimed_at > {promoted})",
            last = old_last_claim.map(ts).unwrap_or_else(|| "NULL".into()),
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
            .bind(old_ledger_token)
            .fetch_one(&new_admin)
            .await?;
        tokio::time::sleep(Duration::from_secs(1)).await;
        drain(&new_admin, config, timings).await?;
        let mut reissued = 0;
        for (role, last_old) in &issued {
            let count: i64 = sqlx::query_scalar(
                "SELECT count(*) FROM grants WHERE role = $1 AND granted_at > $2 AND token <= $3",
            )
            .bind(role)
            .bind(fault_at)
            .bind(last_old)
            .fetch_one(&new_admin)
            .await?;
            reissued += count;
        }
        struck.checks.push(Check {
            name: "no token granted after the failover repeats or undercuts one the old primary issued",
            kind: Kind::Safety,
            violations: reissued,
        });
        struck.checks.push(Check {
            name: "the old primary's last ledger token is not fenced-in on the promoted standby",
            kind: Kind::Safety,
            violations: i64::from(fenced_in),
        });
        struck.victim = Some(holder);
        struck.admin = Some(new_admin);
        Ok(())
    }

    /// The read-only server: a replica pointed at the standby refuses to lead, saying so once
    /// per role, then leads once its link is pointed at the primary.
    #[allow(clippy::too_many_arguments)]
    async fn read_only(
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
        ledger_holder(admin, Duration::from_secs(60)).await?;
        // Through the pooler, the replica reaches the standby through a PgBouncer of its own
        // (the drill's fronts the primary), which is re-pointed at the primary to heal.
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
                name.clone(),
                Some(upstream),
                None,
                Some(metrics),
                config,
            )
            .await?;
        // Long enough for several polls of every role.
        tokio::time::sleep(config.ttl * 2).await;
        let log = std::fs::read_to_string(&replica.log)?;
        let roles = 6;
        let refusals = log.matches("the database is read-only").count() as i64;
        let led = log.matches("became leader").count() as i64;
        let exported = scrape::gauge_by_role(metrics, READ_ONLY_GAUGE).await?;
        struck.checks.push(Check {
            name: "refused on the standby, it exported leader_database_read_only = 1 for every role",
            kind: Kind::Safety,
            violations: roles - exported.values().filter(|&&v| v == 1.0).count() as i64,
        });
        let heal_at = note_fault(admin, "read-only replica pointed at the primary").await?;
        match &standby_pooler {
            Some(pooler) => pooler.repoint("127.0.0.1", self.cluster.port())?,
            None => replica.link.set_upstream(local(self.cluster.port())),
        }
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
            violations: (refusals - roles).abs() + led,
        });
        tokio::time::sleep(Duration::from_secs(1)).await;
        drain(admin, config, timings).await?;
        // Every role has polled since.
        tokio::time::sleep(timings.max_poll()).await;
        let log = std::fs::read_to_string(&replicas.last().expect("just pushed").log)?;
        let resumed = log.matches("accepts writes again").count() as i64;
        struck.checks.push(Check {
            name: "pointed at the primary, it said once per role that the server takes writes again",
            kind: Kind::Liveness,
            violations: (resumed - roles).abs(),
        });
        let exported = scrape::gauge_by_role(metrics, READ_ONLY_GAUGE).await?;
        struck.checks.push(Check {
            name: "pointed at the primary, it exported leader_database_read_only = 0 for every role",
            kind: Kind::Liveness,
            violations: roles - exported.values().filter(|&&v| v == 0.0).count() as i64,
        });
        struck.victim = Some(name);
        Ok(())
    }
}

/// The gauge a replica sets to 1 per role while its ACQUIREs find the server read-only.
const READ_ONLY_GAUGE: &str = "leader_database_read_only";

/// What a strike left for the checks.
#[derive(Debug, Default)]
struct Struck {
    outage: Option<Duration>,
    takeover: Option<Duration>,
    victim: Option<String>,
    resumed: Option<Resumed>,
    /// The pool to check through when the run ended on another server (a failover).
    admin: Option<PgPool>,
    /// Checks only this fault can make.
    checks: Vec<Check>,
    /// The read-only fault's PgBouncer in front of the standby, kept until the replicas exit.
    standby_pooler: Option<Pooler>,
}

async fn drain(admin: &PgPool, config: &RunConfig, timings: &Timings) -> Result<(), DrillError> {
    // After a failover the promoted standby redoes everything since replication was cut (its
    // copy lacks it), through a pooler that may still be waiting out server_login_retry: a
    // longer limit, which costs nothing when the work drains sooner.
    let limit = if config.fault == Fault::Failover {
        Duration::from_secs(60) + 4 * config.ttl
    } else {
        Duration::from_secs(20) + 2 * config.ttl
    };
    billing_demo::demo::drain(admin, limit, timings)
        .await
        .map_err(|e| e.to_string().into())
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
