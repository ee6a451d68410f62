//! The demo: replicas of the billing service leading five roles, three killed and replaced during
//! the run, a drain, then checks.

use std::collections::BTreeMap;
use std::time::Duration;

use leader_core::{StatementError, operator, status};
use leader_runtime::{Fence, Runtime, Timings};
use leaderctl::table::Table;
use sqlx::{PgPool, Row};
use tokio::sync::oneshot;
use tokio::task::JoinHandle;
use tokio::time::Instant;
use tokio_util::sync::CancellationToken;

use crate::checks::{CHECKS, Report, run_checks};
use crate::outbound::{SendPoint, hold_next_send};
use crate::seed::{SeedSize, seed};

/// What the demo runs.
#[derive(Debug, Clone)]
pub struct DemoConfig {
    pub replicas: usize,
    /// How long the replicas run before billing is paused and the queues drain.
    pub run_for: Duration,
    /// The drain gives up once no work was done for this long (see [`drain`]).
    pub drain_stall_limit: Duration,
    pub timings: Timings,
    pub seed: SeedSize,
    /// Kill three replicas without releasing their leases, each replaced by a new one: the
    /// `email_outbox` leader in the middle of an email send from a sixth of the run (before the
    /// provider accepted it) and from a third (after it accepted it), and the `billing` leader
    /// from halfway. Each waits for its victim: a send is held only once its role is led again.
    pub kill_replicas: bool,
    /// Print the live status every this often (`None`: quiet).
    pub status_every: Option<Duration>,
    /// With a direct connection to PostgreSQL itself, every replica takes over dead replicas'
    /// leases at once (`wake_on_release` and `take_over_when_dead`).
    pub take_over: Option<sqlx::postgres::PgConnectOptions>,
}

/// A replica the demo killed.
#[derive(Debug, Clone)]
pub struct Kill {
    pub replica: String,
    /// What it was doing: the [`Victim`] the kill looked for.
    pub victim: Victim,
    /// Each lease it held and how long after the kill it was led elsewhere.
    pub takeovers: Vec<(String, Duration)>,
}

/// Which replica a kill picks.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum Victim {
    /// The one leading `billing`.
    BillingLeader,
    /// The one whose email send is held at this point (see [`crate::outbound`]).
    Sending(SendPoint),
}

impl std::fmt::Display for Victim {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.write_str(match self {
            Victim::BillingLeader => "leading billing",
            Victim::Sending(SendPoint::BeforeAccepted) => {
                "in an email send, before the provider accepted it"
            }
            Victim::Sending(SendPoint::AfterAccepted) => {
                "in an email send, after the provider accepted it and before it stamped it sent"
            }
        })
    }
}

/// What the mail provider received.
#[derive(Debug, Clone, Copy, Default)]
pub struct Mail {
    /// Emails in the outbox.
    pub emails: i64,
    /// Sends the provider accepted, repeats included.
    pub sends: i64,
    /// Sends of an email the provider had already accepted (each dropped by its key).
    pub repeats: i64,
}

/// What the demo found.
#[derive(Debug)]
pub struct DemoSummary {
    pub report: Report,
    /// Per role: ticks granted and rows claimed.
    pub per_role: BTreeMap<String, (i64, i64)>,
    pub kills: Vec<Kill>,
    pub drained: Drained,
    pub mail: Mail,
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
    take_over: Option<sqlx::postgres::PgConnectOptions>,
    shutdown: &CancellationToken,
) -> Result<Replica, Box<dyn std::error::Error>> {
    let pool = sqlx::postgres::PgPoolOptions::new()
        .max_connections(6)
        .connect_with(connect())
        .await?;
    let mut builder = Runtime::builder(pool.clone())
        .registered_jobs()
        .timings(timings)
        .holder_id(name.clone())
        .shutdown_grace(Duration::from_secs(5))
        .status_every(Duration::from_secs(1));
    if let Some(direct) = take_over {
        builder = builder.wake_on_release(direct).take_over_when_dead();
    }
    let runtime = builder.build()?;
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

/// The live table: `leaderctl status`'s table ([`Table`]) with the demo's ticks and
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
    let table = Table::new(&rows)
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

/// The work a drain waits for, as counted at one moment.
#[derive(Debug, Clone, Copy, Default, PartialEq, Eq)]
pub struct Backlog {
    /// Billing periods that ended before the cutoff and are not billed.
    pub periods: i64,
    /// Webhook outbox rows not dispatched.
    pub webhooks: i64,
    /// Emails not stamped sent.
    pub emails: i64,
    /// Webhook deliveries still pending (to be attempted or retried).
    pub deliveries: i64,
}

impl Backlog {
    /// Nothing is left.
    pub fn is_empty(&self) -> bool {
        *self == Backlog::default()
    }
}

impl std::fmt::Display for Backlog {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        write!(
            f,
            "{} billing periods, {} webhook outbox rows, {} emails, {} deliveries",
            self.periods, self.webhooks, self.emails, self.deliveries
        )
    }
}

/// How a drain ended.
#[derive(Debug, Clone, Copy)]
pub struct Drained {
    /// From the cutoff to the end of the drain.
    pub took: Duration,
    /// The longest stretch in which no work was done; when the drain gave up, the last one.
    pub longest_stall: Duration,
    /// True if it stopped with work left because none was done for its stall limit.
    pub gave_up: bool,
    /// What was left when it stopped.
    pub left: Backlog,
}

impl std::fmt::Display for Drained {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        if self.gave_up {
            write!(
                f,
                "drain gave up after {:.1}s without progress, {:.1}s after the cutoff; left: {}",
                self.longest_stall.as_secs_f64(),
                self.took.as_secs_f64(),
                self.left
            )
        } else {
            write!(
                f,
                "drained in {:.1}s (longest wait without progress {:.1}s); left: {}",
                self.took.as_secs_f64(),
                self.longest_stall.as_secs_f64(),
                self.left
            )
        }
    }
}

/// Counts the backlog, and the work done so far: invoices, dispatched rows, emails stamped sent
/// and delivery attempts, each of which only grows, and each bounded once billing has a cutoff,
/// so a drain that waits while it grows ends.
async fn backlog_and_done(pool: &PgPool) -> sqlx::Result<(Backlog, i64)> {
    let row = sqlx::raw_sql(
        "SELECT (SELECT count(*) FROM subscriptions s, billing_cutoff c
                  WHERE s.billed_until + s.period_secs * interval '1 second' <= c.cutoff),
                (SELECT count(*) FROM webhook_outbox WHERE dispatched_at IS NULL),
                (SELECT count(*) FROM email_outbox WHERE sent_at IS NULL),
                (SELECT count(*) FROM webhook_deliveries WHERE status = 'pending'),
                (SELECT count(*) FROM invoices)
                + (SELECT count(*) FROM webhook_outbox WHERE dispatched_at IS NOT NULL)
                + (SELECT count(*) FROM email_outbox WHERE sent_at IS NOT NULL)
                + (SELECT coalesce(sum(attempt), 0) FROM webhook_deliveries)::bigint",
    )
    .fetch_one(pool)
    .await?;
    let backlog = Backlog {
        periods: row.try_get(0)?,
        webhooks: row.try_get(1)?,
        emails: row.try_get(2)?,
        deliveries: row.try_get(3)?,
    };
    Ok((backlog, row.try_get(4)?))
}

/// Ends a run so the checks can judge it: takes no new billing periods (every period that ended
/// before now must be billed), waits for billing to catch up, pauses `billing` and `dunning`
/// through the framework's pause API, and waits for the queues to drain.
///
/// It waits for as long as work gets done, however long that is (a small pool behind a pooler
/// drains slowly, not wrongly), and gives up only once no work was done for `stall_limit`,
/// leaving what is left for the liveness checks to report. The work is bounded once billing has
/// a cutoff, so the drain ends. `stall_limit` must outlast the longest quiet stretch of a
/// healthy run: a killed leader's roles led again (one TTL and a poll), a delivery's retry
/// backoff (2 s at most).
pub async fn drain(
    admin: &PgPool,
    stall_limit: Duration,
    timings: &Timings,
) -> Result<Drained, Box<dyn std::error::Error>> {
    let started = Instant::now();
    sqlx::raw_sql("INSERT INTO billing_cutoff (cutoff) VALUES (now())")
        .execute(admin)
        .await?;
    let mut last_done = -1;
    let mut last_progress = started;
    let mut longest_stall = Duration::ZERO;
    let mut paused = false;
    loop {
        let (left, done) = backlog_and_done(admin).await?;
        let now = Instant::now();
        if done > last_done {
            last_done = done;
            last_progress = now;
        }
        let stall = now - last_progress;
        longest_stall = longest_stall.max(stall);
        let gave_up = stall >= stall_limit;
        if (left.is_empty() && paused) || gave_up {
            return Ok(Drained {
                took: started.elapsed(),
                longest_stall,
                gave_up,
                left,
            });
        }
        if left.periods == 0 && !paused {
            for role in ["billing", "dunning"] {
                pause_within(admin, role, now + stall_limit, timings).await?;
            }
            paused = true;
            continue;
        }
        tokio::time::sleep(Duration::from_millis(100)).await;
    }
}

/// A kill the demo plans: its victim, when it starts looking for it, and, for a send, the hold
/// it waits on.
struct PlannedKill {
    victim: Victim,
    at: Duration,
    hold: Option<oneshot::Receiver<Fence>>,
    done: bool,
}

/// A killed replica whose leases are not all led elsewhere yet.
struct Killed {
    kill: Kill,
    at: Instant,
    /// The leases it held, with its token, not yet taken over.
    held: BTreeMap<String, i64>,
}

/// The replica `plan` kills now, if it has found it: the `billing` leader, or the replica whose
/// email send took the plan's hold (holding the next send if that replica is already dead).
/// `closing`: withdraw the hold first, so that no send takes it after this look.
async fn find_victim(
    admin: &PgPool,
    database: &str,
    plan: &mut PlannedKill,
    closing: bool,
    replicas: &[Replica],
    timings: &Timings,
) -> Result<Option<usize>, Box<dyn std::error::Error>> {
    let name = match plan.victim {
        Victim::BillingLeader => leaders(admin, timings)
            .await?
            .remove("billing")
            .and_then(|(_, leader, _)| leader),
        Victim::Sending(point) => {
            let hold = plan
                .hold
                .get_or_insert_with(|| hold_next_send(database, point));
            if closing {
                hold.close();
            }
            match hold.try_recv() {
                Err(oneshot::error::TryRecvError::Empty) => None,
                Err(oneshot::error::TryRecvError::Closed) => {
                    plan.hold = None;
                    None
                }
                Ok(fence) => {
                    plan.hold = None;
                    holder_of(admin, fence).await?
                }
            }
        }
    };
    Ok(name.and_then(|name| replicas.iter().position(|r| r.name == name)))
}

/// The holder the audit trail recorded for `fence`'s grant. (In a transaction with
/// `.persistent(false)`: `admin` may be a transaction-mode pooler, when `DATABASE_URL` is one.)
async fn holder_of(admin: &PgPool, fence: Fence) -> sqlx::Result<Option<String>> {
    let mut tx = admin.begin().await?;
    let holder = sqlx::query_scalar("SELECT holder FROM grants WHERE role = $1 AND token = $2")
        .persistent(false)
        .bind(fence.role())
        .bind(fence.token())
        .fetch_optional(&mut *tx)
        .await?;
    tx.commit().await?;
    Ok(holder.flatten())
}

/// The running replicas.
struct Fleet {
    running: Vec<Replica>,
    /// How many were started, which numbers the next one.
    started: usize,
    /// Stops them all.
    shutdown: CancellationToken,
    /// Their direct connection, when they take over dead replicas at once.
    take_over: Option<sqlx::postgres::PgConnectOptions>,
}

impl Fleet {
    /// Starts one more replica, `replica-N` for the next N.
    async fn start(
        &mut self,
        connect: &(impl Fn() -> sqlx::postgres::PgConnectOptions + Sync),
        timings: Timings,
    ) -> Result<String, Box<dyn std::error::Error>> {
        self.started += 1;
        let name = format!("replica-{}", self.started);
        let replica = start_replica(
            connect,
            name.clone(),
            timings,
            self.take_over.clone(),
            &self.shutdown,
        )
        .await?;
        self.running.push(replica);
        Ok(name)
    }
}

/// Kills `fleet.running[index]` and starts a replica in its place, as an orchestrator restarts
/// a crashed process; records the leases it held.
async fn kill_and_replace(
    admin: &PgPool,
    connect: &(impl Fn() -> sqlx::postgres::PgConnectOptions + Sync),
    fleet: &mut Fleet,
    index: usize,
    victim: Victim,
    config: &DemoConfig,
) -> Result<Killed, Box<dyn std::error::Error>> {
    let current = leaders(admin, &config.timings).await?;
    let replica = fleet.running.remove(index);
    let name = replica.name.clone();
    replica.kill();
    let at = Instant::now();
    let held: BTreeMap<String, i64> = current
        .iter()
        .filter(|(_, (_, leader, _))| leader.as_deref() == Some(name.as_str()))
        .map(|(role, (_, _, token))| (role.clone(), *token))
        .collect();
    let replacement = fleet.start(connect, config.timings).await?;
    if config.status_every.is_some() {
        println!(
            ">>> killed {name} ({victim}; it led {}) without releasing its leases; {replacement} starts in its place",
            held.keys().cloned().collect::<Vec<_>>().join(", ")
        );
    }
    Ok(Killed {
        kill: Kill {
            replica: name,
            victim,
            takeovers: Vec::new(),
        },
        at,
        held,
    })
}

/// Records each lease of a killed replica that a newer token now leads, with the time since
/// the kill.
async fn watch_takeovers(
    admin: &PgPool,
    timings: &Timings,
    killed: &mut [Killed],
    verbose: bool,
) -> Result<(), StatementError> {
    if killed.iter().all(|k| k.held.is_empty()) {
        return Ok(());
    }
    let current = leaders(admin, timings).await?;
    for Killed { kill, at, held } in killed {
        held.retain(|role, token| {
            let taken = current.get(role).is_some_and(|(_, leader, t)| {
                *t > *token && leader.as_deref() != Some(kill.replica.as_str())
            });
            if taken {
                let after = at.elapsed();
                if verbose {
                    println!(
                        ">>> {role} taken over {:.1}s after {} was killed",
                        after.as_secs_f64(),
                        kill.replica
                    );
                }
                kill.takeovers.push((role.clone(), after));
            }
            !taken
        });
    }
    Ok(())
}

/// Seeds, runs the replicas, kills three of them (see [`DemoConfig::kill_replicas`]), drains,
/// stops, and checks.
///
/// `admin` is a pool on the demo's database; `connect` gives each replica's connection options.
pub async fn run_demo(
    admin: &PgPool,
    connect: impl Fn() -> sqlx::postgres::PgConnectOptions + Sync,
    config: &DemoConfig,
) -> Result<DemoSummary, Box<dyn std::error::Error>> {
    seed(admin, config.seed).await?;
    let database = connect().get_database().unwrap_or_default().to_owned();
    let mut fleet = Fleet {
        running: Vec::new(),
        started: 0,
        shutdown: CancellationToken::new(),
        take_over: config.take_over.clone(),
    };
    for _ in 0..config.replicas {
        fleet.start(&connect, config.timings).await?;
    }
    let mut plans: Vec<PlannedKill> = if config.kill_replicas {
        [
            (Victim::Sending(SendPoint::BeforeAccepted), 1),
            (Victim::Sending(SendPoint::AfterAccepted), 2),
            (Victim::BillingLeader, 3),
        ]
        .into_iter()
        .map(|(victim, sixths)| PlannedKill {
            victim,
            at: config.run_for * sixths / 6,
            hold: None,
            done: false,
        })
        .collect()
    } else {
        Vec::new()
    };
    let started = Instant::now();
    let mut killed: Vec<Killed> = Vec::new();
    let mut next_status = started;
    loop {
        let running = started.elapsed() < config.run_for;
        for plan in plans.iter_mut().filter(|p| !p.done) {
            if running && started.elapsed() < plan.at {
                continue;
            }
            // Once the run is over, a plan that has not found its victim is given up; a hold
            // is withdrawn, unless a send took it just now (a held send holds its role's lease
            // for good, so its replica is killed then).
            let closing = !running;
            if closing && plan.hold.is_none() {
                plan.done = true;
                continue;
            }
            if let Some(index) = find_victim(
                admin,
                &database,
                plan,
                closing,
                &fleet.running,
                &config.timings,
            )
            .await?
            {
                let victim = plan.victim;
                killed.push(
                    kill_and_replace(admin, &connect, &mut fleet, index, victim, config).await?,
                );
                plan.done = true;
            }
            plan.done |= closing;
        }
        if !running {
            break;
        }
        watch_takeovers(
            admin,
            &config.timings,
            &mut killed,
            config.status_every.is_some(),
        )
        .await?;
        if let Some(every) = config.status_every
            && Instant::now() >= next_status
        {
            print_status(admin, started, &config.timings).await?;
            next_status += every;
        }
        tokio::time::sleep(Duration::from_millis(100)).await;
    }

    // A lease of the last replica killed may be led again only now.
    let drained = {
        let drain = drain(admin, config.drain_stall_limit, &config.timings);
        tokio::pin!(drain);
        loop {
            tokio::select! {
                drained = &mut drain => break drained?,
                () = tokio::time::sleep(Duration::from_millis(100)) => {
                    let verbose = config.status_every.is_some();
                    watch_takeovers(admin, &config.timings, &mut killed, verbose).await?;
                    if let Some(every) = config.status_every
                        && Instant::now() >= next_status
                    {
                        let (left, _) = backlog_and_done(admin).await?;
                        println!("[{:>3}s] draining: {left} left", started.elapsed().as_secs());
                        next_status += every;
                    }
                }
            }
        }
    };
    fleet.shutdown.cancel();
    for replica in fleet.running {
        replica.handle.await??;
    }
    if config.status_every.is_some() {
        print_status(admin, started, &config.timings).await?;
    }
    let invoices: i64 = sqlx::raw_sql("SELECT count(*) FROM invoices")
        .fetch_one(admin)
        .await?
        .try_get(0)?;
    let mail = sqlx::raw_sql(
        "SELECT (SELECT count(*) FROM email_outbox), count(*), count(*) - count(DISTINCT email_id)
           FROM mailbox",
    )
    .fetch_one(admin)
    .await?;
    Ok(DemoSummary {
        report: run_checks(admin, CHECKS).await?,
        per_role: per_role(admin).await?,
        kills: killed.into_iter().map(|k| k.kill).collect(),
        drained,
        mail: Mail {
            emails: mail.try_get(0)?,
            sends: mail.try_get(1)?,
            repeats: mail.try_get(2)?,
        },
        invoices,
    })
}
