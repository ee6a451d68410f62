//! One drill run: a fresh database with the reference application's schema and the ledger,
//! replicas as processes (each behind its own [`Link`](crate::proxy::Link)), one fault mid-tick,
//! the outage on the database clock, a drain, a clean stop, and the checks.
//!
//! * `servers`: the servers every run shares, and each run's fresh database.
//! * `replicas`: the replica processes, started, signalled and stopped.
//! * `records`: the database clock, the fault log, the ledger's leader, the outage.
//! * `strike`: the fault on the leader, its role, the server or the pooler, held and healed.
//! * `failover`: the failover to a promoted standby.
//! * `read_only`: a replica on the read-only standby.
//! * `settling`: each role's grants in the minute after a restart or failover.

mod failover;
mod read_only;
mod records;
mod replicas;
mod servers;
mod settling;
mod strike;

use std::path::PathBuf;
use std::time::Duration;

use billing_demo::checks::{CHECKS, Kind, Report, run_checks};
use leader_runtime::Timings;
use leader_testkit::Cluster;
use sqlx::PgPool;

pub use self::replicas::replica_binary;
pub use self::servers::{SEEDED_BUG_SQL, Servers, TOKEN_PLUS_ONE_SQL};
pub use self::settling::{RoleSettling, Settling, WINDOW as SETTLING_WINDOW};
use self::strike::Struck;
use crate::fault::Fault;
use crate::ledger;

/// The error type of a run that could not be carried out (as opposed to one whose checks
/// failed).
pub type DrillError = Box<dyn std::error::Error + Send + Sync>;

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
    /// Run the replicas with `take_over_when_dead` (issue 33): each gets a direct link to the
    /// server for its anchor and watcher.
    pub anchors: bool,
    /// The drill-only seeded bug of the takeover: ACQUIRE takes over a lease whose holder's
    /// anchor lives (with `anchors`); the checker must report it.
    pub takeover_without_anchor_check: bool,
    /// For a fault that ends every session ([`Fault::ends_every_session`]): wait out the minute
    /// after the server came back, before the drain, and count each role's grants in it.
    pub settling: bool,
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
    /// For a run with [`RunConfig::settling`]: each role's grants in the minute after the server
    /// came back.
    pub settling: Option<Settling>,
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

impl Servers {
    /// Carries out one run; `index` names its database.
    pub async fn run(&self, index: usize, config: &RunConfig) -> Result<RunResult, DrillError> {
        let db = format!("drill_{index}_{}", config.fault.name().replace('-', "_"));
        let admin = self.create_db(&db, config).await?;
        let timings = Timings::scaled_to_ttl(config.ttl)?;
        let standby = self.standby_for(config)?;
        let in_netns = self.severs_in_netns(config);
        let mut replicas = self.spawn_replicas(&db, in_netns, config).await?;
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
        self.stop_replicas(&mut replicas, config, &mut notes).await;
        // The failover re-pointed the shared pooler at this run's standby, which goes with the
        // run: the next run's replicas need it in front of the primary again.
        if config.fault == Fault::Failover && config.via_pooler {
            self.pooler.repoint("127.0.0.1", self.cluster.port())?;
        }
        result?;
        let report = checks(&admin, &mut struck).await?;
        admin.close().await;
        Ok(RunResult {
            config: config.clone(),
            report,
            outage: struck.outage,
            takeover: struck.takeover,
            victim: struck.victim,
            resumed: struck.resumed,
            settling: struck.settling,
            link: if in_netns { "netns" } else { "proxy" },
            notes,
        })
    }

    /// A standby of the server for the faults that need one.
    fn standby_for(&self, config: &RunConfig) -> Result<Option<Cluster>, DrillError> {
        if config.fault.needs_standby() {
            let cluster = &self.cluster;
            Ok(Some(tokio::task::block_in_place(|| {
                cluster.start_standby()
            })?))
        } else {
            Ok(None)
        }
    }

    /// Whether the run severs with the kernel's tools: a namespace per replica, for the severed
    /// link, where there are enough.
    fn severs_in_netns(&self, config: &RunConfig) -> bool {
        config.fault == Fault::Sever
            && self
                .netns
                .as_ref()
                .is_some_and(|n| n.len() >= config.replicas)
    }
}

/// The reference application's checks and the ledger's, through the pool the run ended on,
/// then the fault's own; closes the promoted standby's pool, if any.
async fn checks(admin: &PgPool, struck: &mut Struck) -> Result<Report, DrillError> {
    let checked = struck.admin.as_ref().unwrap_or(admin);
    let mut report = run_checks(checked, CHECKS).await?;
    report
        .checks
        .extend(run_checks(checked, ledger::CHECKS).await?.checks);
    report.checks.append(&mut struck.checks);
    if let Some(new_primary) = struck.admin.take() {
        new_primary.close().await;
    }
    Ok(report)
}

/// Whether `result` found a violation of `kind`.
pub fn violated(result: &RunResult, kind: Kind) -> bool {
    !result.report.passed(kind)
}

/// The log directory's default: under the system temp dir.
pub fn default_log_dir() -> PathBuf {
    std::env::temp_dir().join(format!("leader-drill-{}", std::process::id()))
}
