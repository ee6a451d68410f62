//! The per-replica poller: one ACQUIRE for every lease not in a tick, at the soonest moment any
//! of them may be claimable, each grant handed to the lease's worker ([`crate::worker`]).

use std::time::Duration;

use leader_core::lease::{Acquired, Grant, Refusal, Wanted};
use leader_core::{Role, Shard};
use leader_schedule::Schedule;
use rand::Rng;
use tokio::sync::mpsc;
use tokio::time::Instant;

use crate::instants::{DbClock, InstantPlanner, ScheduledGrant};
use crate::role_spec::LeaseKey;
use crate::tick::TickEnv;
use crate::wake::Wake;
use crate::worker::Handoff;

/// How long to wait before the next ACQUIRE after a refusal that said the role is claimable in
/// `retry_after` (`None`: unknown, e.g. paused).
///
/// Until then plus a little jitter (at most a tenth of `max_poll`, at most 250 ms), never more
/// than `max_poll`; at the cap the jitter is subtracted, so replicas never poll in step.
pub(crate) fn next_poll_wait(retry_after: Option<Duration>, max_poll: Duration) -> Duration {
    let cap = (max_poll / 10).min(Duration::from_millis(250));
    let jitter = if cap.is_zero() {
        Duration::ZERO
    } else {
        rand::rng().random_range(Duration::ZERO..=cap)
    };
    let base = retry_after.unwrap_or(max_poll).min(max_poll);
    if base + jitter <= max_poll {
        base + jitter
    } else {
        max_poll - jitter
    }
}

/// RELEASE's longest cooldown after a tick that did not complete (`least(interval, 60 s)`).
const LONGEST_COOLDOWN: Duration = Duration::from_secs(60);

/// SQLSTATE `read_only_sql_transaction`: the server is a standby or a read-only primary.
const READ_ONLY_SQL_TRANSACTION: &str = "25006";

/// Whether `error` says the server cannot take writes (so no replica can lead through it).
pub(crate) fn is_read_only(error: &leader_core::StatementError) -> bool {
    error.sqlstate().as_deref() == Some(READ_ONLY_SQL_TRANSACTION)
}

/// Whether the server this replica's ACQUIREs reach is read-only: logged once per role at each
/// change, not per poll, and exported as `leader_database_read_only`.
#[derive(Debug, Default)]
pub(crate) struct ReadOnlyState {
    read_only: bool,
}

impl ReadOnlyState {
    /// Records what the last ACQUIRE said (`Some(true)`: read-only, `Some(false)`: a writable
    /// answer, `None`: another error, which says nothing either way). Returns true when the
    /// state changed.
    pub(crate) fn observe(&mut self, roles: &[Role], read_only: Option<bool>) -> bool {
        let Some(read_only) = read_only else {
            return false;
        };
        if read_only == self.read_only {
            return false;
        }
        self.read_only = read_only;
        // One line per role, as for every other transition, so a role's lines can be found by
        // its name alone.
        for &role in roles {
            crate::metrics::read_only(role, read_only);
            if read_only {
                tracing::error!(%role, "not leading: the database is read-only (a standby or a demoted primary, SQLSTATE 25006); point the pool at the writable primary. Polling on; logged again when it changes");
            } else {
                tracing::info!(%role, "the database accepts writes again; leading resumes");
            }
        }
        true
    }
}

/// One lease the poller polls for (a role, or one shard of a sharded role): its schedule, its
/// worker's inbox, and where the poll stands with it.
pub(crate) struct Polled {
    pub role: Role,
    pub shard: Option<Shard>,
    pub schedule: Schedule,
    pub worker: mpsc::Sender<Handoff>,
    /// For a calendar role, which instant to ask for.
    pub instants: InstantPlanner,
    /// Whether its worker has a grant: then it is not asked for until the tick is released.
    in_tick: bool,
    /// When to ask for it next, while it is not in a tick.
    ask_at: Instant,
    /// Whether this replica runs it, as the last answer for it said: it holds it, or ran its
    /// last tick.
    runs: bool,
}

impl Polled {
    pub(crate) fn new(
        (role, shard): LeaseKey,
        schedule: Schedule,
        worker: mpsc::Sender<Handoff>,
    ) -> Polled {
        Polled {
            role,
            shard,
            schedule,
            worker,
            instants: InstantPlanner::default(),
            in_tick: false,
            ask_at: Instant::now(),
            runs: false,
        }
    }

    fn key(&self) -> LeaseKey {
        (self.role, self.shard)
    }

    /// When to ask for it next: `None` while it is in a tick.
    fn next_ask(&self) -> Option<Instant> {
        (!self.in_tick).then_some(self.ask_at)
    }

    /// How long after its tick ends to ask for this lease again. A role at once: the answer says
    /// when it is due, and another role of the replica may be due by then. A shard on an interval
    /// schedule after its interval (capped at RELEASE's longest cooldown, so a failed tick's
    /// retry is not missed): it cannot be due sooner, and the replica's shards that one ACQUIRE
    /// granted, released by one statement, are then asked for again together.
    fn wait_after_tick(&self) -> Duration {
        match (&self.schedule, self.shard) {
            (Schedule::Cron(_), _) | (_, None) => Duration::ZERO,
            (schedule, Some(_)) => schedule
                .interval()
                .unwrap_or(Duration::ZERO)
                .min(LONGEST_COOLDOWN),
        }
    }

    /// How long after `refusal` to ask for this lease again, as `holder`; `runs_shards` says
    /// whether `holder` runs any shard of the role (see [`Polled::ran_by`]).
    ///
    /// A role: at the refusal's hint plus jitter ([`next_poll_wait`]). A shard that another
    /// replica holds, or that a present replica ran last ([`Refusal::kept_by`]), stays with it
    /// (ACQUIRE prefers the shards a replica ran, up to its share), so while this replica runs
    /// shards of its own such a shard is asked for at `max_poll`, not at its hint: a replica's
    /// polls then follow its own shards, not every shard's due time. A replica that runs no
    /// shard yet (it just joined) follows every shard's hint with jitter, to take the shards the
    /// others hand over. A shard it ran itself, or that nobody keeps (never run, or its replica
    /// left or died), at the hint without jitter, so that its shards stay in step and a gone
    /// replica's shards are taken when due.
    fn wait_after_refusal(
        &self,
        refusal: &Refusal,
        holder: &str,
        runs_shards: bool,
        max_poll: Duration,
    ) -> Duration {
        if self.shard.is_none() {
            return next_poll_wait(refusal.retry_after, max_poll);
        }
        match Polled::ran_by(refusal) {
            Some(other) if other != holder && runs_shards => next_poll_wait(None, max_poll),
            Some(other) if other != holder => next_poll_wait(refusal.retry_after, max_poll),
            _ => refusal.retry_after.unwrap_or(max_poll).min(max_poll),
        }
    }

    /// Who a refused lease is with: its holder, or else the present replica that ran its last
    /// tick.
    fn ran_by(refusal: &Refusal) -> Option<&str> {
        refusal.holder_id.as_deref().or(refusal.kept_by.as_deref())
    }

    /// What to ask ACQUIRE for this lease.
    fn wanted(&mut self, clock: Option<DbClock>) -> Wanted {
        let wanted = match &self.schedule {
            Schedule::Cron(cron) => self.instants.wanted(self.role, cron, clock),
            schedule => Wanted::every(self.role, schedule.interval().unwrap_or(Duration::MAX)),
        };
        match self.shard {
            Some(shard) => wanted.in_shard(shard),
            None => wanted,
        }
    }
}

/// Polls every role of this replica that is not in a tick with one ACQUIRE, until
/// `env.shutdown` fires: no ACQUIRE is sent after it.
///
/// Each lease not in a tick has a time to be asked for again; the poller sends one ACQUIRE for
/// all of them as soon as any one's time comes. A granted lease goes to its worker and leaves
/// the poll until the worker reports its tick released on `done`; then it is asked for again
/// after [`Polled::wait_after_tick`] (a role at once: the next ACQUIRE says when it is due
/// again). A refused one after [`Polled::wait_after_refusal`] (a role at the refusal's hint with
/// jitter, capped at `max_poll`, see [`next_poll_wait`]). A role is also asked for as soon as
/// `wake` says it was released elsewhere, and every lease when the wake listener reconnected.
pub(crate) async fn poll_roles(
    env: &TickEnv<'_>,
    mut roles: Vec<Polled>,
    mut done: mpsc::UnboundedReceiver<LeaseKey>,
    mut wake: mpsc::UnboundedReceiver<Wake>,
) {
    let mut wake_open = true;
    let max_poll = env.timings.max_poll();
    let mut all: Vec<Role> = roles.iter().map(|polled| polled.role).collect();
    all.dedup();
    let mut read_only = ReadOnlyState::default();
    let mut db_clock: Option<DbClock> = None;
    for &role in &all {
        crate::metrics::read_only(role, false);
    }
    // A replica's first grants name its anchor: the first poll waits for the first attempt to
    // anchor (bounded by its connect and statement timeouts).
    if let Some(anchor) = env.anchor {
        tokio::select! {
            () = anchor.tried() => {}
            () = env.shutdown.cancelled() => return,
        }
    }
    while !env.shutdown.is_cancelled() {
        let now = Instant::now();
        if roles
            .iter()
            .any(|polled| polled.next_ask().is_some_and(|at| at <= now))
        {
            let asked: Vec<usize> = (0..roles.len()).filter(|&i| !roles[i].in_tick).collect();
            let wanted = asked.iter().map(|&i| roles[i].wanted(db_clock)).collect();
            // The anchor is read before the ACQUIRE names it: see `AnchorCell::current`.
            let (anchor, anchor_life) = env.anchor.and_then(|cell| cell.current()).unzip();
            let sent = Instant::now();
            let acquired = env.statements.acquire_many(wanted, anchor).await;
            read_only.observe(
                &all,
                match &acquired {
                    Ok(_) => Some(false),
                    Err(error) if is_read_only(error) => Some(true),
                    Err(_) => None,
                },
            );
            match acquired {
                Ok(answers) => {
                    // Which shards this replica runs, as this poll saw them, before the waits.
                    for (&i, answer) in asked.iter().zip(&answers) {
                        roles[i].runs = match answer {
                            Acquired::Granted(_) => true,
                            Acquired::Refused(refusal) => {
                                Polled::ran_by(refusal) == Some(env.holder)
                            }
                        };
                    }
                    // One entry per role, not per shard: it is searched once per answer.
                    let mut running: Vec<Role> = roles
                        .iter()
                        .filter(|polled| polled.runs && polled.shard.is_some())
                        .map(|polled| polled.role)
                        .collect();
                    running.sort_unstable();
                    running.dedup();
                    for (&i, answer) in asked.iter().zip(answers) {
                        let polled = &mut roles[i];
                        let (role, shard) = polled.key();
                        match answer {
                            Acquired::Granted(grant) => {
                                db_clock = Some(DbClock::new(grant.acquired_at, Instant::now()));
                                crate::metrics::clock_drift(
                                    grant.acquired_at,
                                    sent,
                                    Instant::now(),
                                );
                                if let Some(scheduled) = polled.instants.granted(&grant) {
                                    log_scheduled_grant(role, &grant, scheduled);
                                }
                                let handoff = (grant, sent, anchor_life.clone());
                                if polled.worker.try_send(handoff).is_ok() {
                                    polled.in_tick = true;
                                } else {
                                    tracing::error!(%role, ?shard, "the lease's worker is gone; its lease runs out after its TTL");
                                    polled.ask_at = Instant::now() + max_poll;
                                }
                            }
                            Acquired::Refused(refusal) => {
                                db_clock = Some(DbClock::new(refusal.db_now, Instant::now()));
                                polled.instants.refused(&refusal);
                                let wait = polled.wait_after_refusal(
                                    &refusal,
                                    env.holder,
                                    running.contains(&role),
                                    max_poll,
                                );
                                tracing::debug!(%role, ?shard, reason = ?refusal.reason, holder_id = ?refusal.holder_id, ?wait, "not leading");
                                polled.ask_at = Instant::now() + wait;
                            }
                        }
                    }
                }
                Err(error) => {
                    if !is_read_only(&error) {
                        tracing::warn!(roles = ?all, %error, "ACQUIRE failed; polling again later");
                    }
                    let again = Instant::now() + next_poll_wait(None, max_poll);
                    for &i in &asked {
                        roles[i].ask_at = again;
                    }
                }
            }
        }
        let deadline = roles.iter().filter_map(Polled::next_ask).min();
        tokio::select! {
            () = sleep_or_never(deadline) => {}
            released = done.recv() => {
                let mut released = released;
                while let Some(key) = released {
                    if let Some(polled) = roles.iter_mut().find(|polled| polled.key() == key) {
                        polled.in_tick = false;
                        polled.ask_at = Instant::now() + polled.wait_after_tick();
                    }
                    released = done.try_recv().ok();
                }
            }
            heard = wake.recv(), if wake_open => match heard {
                None => wake_open = false,
                // A reconnect may have missed releases; an anchor that ended may have left leases
                // to take over: ask for every role now.
                Some(Wake::Connected | Wake::AnchorEnded) => {
                    let now = Instant::now();
                    for polled in &mut roles {
                        polled.ask_at = now;
                    }
                }
                // Another replica released a role this one may take: ask for it now. A shard's
                // release says nothing here: the replica that ran it takes it again.
                Some(Wake::Released(role)) => {
                    for polled in &mut roles {
                        if polled.role == role && polled.shard.is_none() && !polled.in_tick {
                            polled.ask_at = Instant::now();
                        }
                    }
                }
            },
            () = env.shutdown.cancelled() => return,
        }
    }
}

/// A calendar role's grant: its start delay and skipped instants, as metrics, and a log line
/// when it skips any.
fn log_scheduled_grant(role: Role, grant: &Grant, scheduled: ScheduledGrant) {
    crate::metrics::scheduled_grant(role, scheduled.delay, scheduled.skipped);
    if scheduled.skipped > 0 {
        let at_least = if scheduled.skipped_at_least {
            "at least "
        } else {
            ""
        };
        tracing::warn!(%role, instant = ?grant.tick_instant, skipped = scheduled.skipped, "running the latest missed instant and skipping {at_least}{} older ones (missed = \"latest\"; missed = \"each\" runs every one)", scheduled.skipped);
    }
}

/// Sleeps until `deadline`, or forever when there is nothing to poll for.
async fn sleep_or_never(deadline: Option<Instant>) {
    match deadline {
        Some(deadline) => tokio::time::sleep_until(deadline).await,
        None => std::future::pending().await,
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::fake::{Call, FakeStatements, refused};
    use crate::registry::JobFuture;
    use crate::role_spec::RoleSpec;
    use crate::worker::work_lease;
    use leader_core::lease::RefusalReason;
    use leader_core::{Role, Shard, Statement, StatementError, Timings};
    use sqlx::postgres::PgPoolOptions;
    use std::sync::Arc;
    use tokio_util::sync::CancellationToken;

    const fn ms(millis: u64) -> Duration {
        Duration::from_millis(millis)
    }

    /// Runs the poller and a worker for each of `roles` (each job sleeps for its duration) on
    /// `fake` until `shutdown` fires; returns when all returned, since the fake's epoch.
    async fn lead_many(
        fake: &FakeStatements,
        timings: Timings,
        shutdown: CancellationToken,
        roles: &[(&'static str, Duration)],
    ) -> Duration {
        lead_waking(fake, timings, shutdown, roles, &[]).await
    }

    /// [`lead_many`], with the wake listener reporting a release of each role at its time (since
    /// the fake's epoch).
    async fn lead_waking(
        fake: &FakeStatements,
        timings: Timings,
        shutdown: CancellationToken,
        roles: &[(&'static str, Duration)],
        wakes: &[(Duration, &'static str)],
    ) -> Duration {
        let leases = roles
            .iter()
            .map(|&(name, runs_for)| {
                let spec = Arc::new(RoleSpec {
                    role: Role::from_static(name),
                    schedule: Duration::from_secs(60).into(),
                    job: Arc::new(move |_| -> JobFuture {
                        Box::pin(async move {
                            tokio::time::sleep(runs_for).await;
                            Ok(())
                        })
                    }),
                    name: "test_job".into(),
                    shard_count: None,
                });
                (spec, None)
            })
            .collect();
        lead_leases(fake, timings, shutdown, leases, wakes).await
    }

    /// Runs the poller and a worker for each of `leases` (a role's spec and the shard of it, if
    /// any) on `fake` until `shutdown` fires, as the holder `test-holder`, with the wake listener
    /// reporting a release of each role at its time (since the fake's epoch); returns when all
    /// returned, since the fake's epoch.
    async fn lead_leases(
        fake: &FakeStatements,
        timings: Timings,
        shutdown: CancellationToken,
        leases: Vec<(Arc<RoleSpec>, Option<Shard>)>,
        wakes: &[(Duration, &'static str)],
    ) -> Duration {
        let pool = PgPoolOptions::new()
            .connect_lazy("postgres://unused@localhost/unused")
            .unwrap();
        let env = TickEnv {
            statements: fake,
            timings: &timings,
            grace: Duration::from_secs(5),
            shutdown: &shutdown,
            pool: &pool,
            holder: "test-holder",
            beat_grid: Instant::now(),
            leadership: &crate::leadership::Leadership::default(),
            anchor: None,
            pauses: &crate::pause::PauseNotices::default(),
        };
        let (done_tx, done_rx) = mpsc::unbounded_channel();
        let mut polled = Vec::new();
        let mut workers = Vec::new();
        for (spec, shard) in leases {
            let (worker_tx, worker_rx) = mpsc::channel(1);
            let key = (spec.role, shard);
            polled.push(Polled::new(key, spec.schedule.clone(), worker_tx));
            workers.push(work_lease(&env, spec, key, worker_rx, done_tx.clone()));
        }
        drop(done_tx);
        let (wake_tx, wake_rx) = mpsc::unbounded_channel();
        let wakes = async move {
            for &(at, role) in wakes {
                tokio::time::sleep_until(fake.epoch + at).await;
                let _ = wake_tx.send(Wake::Released(Role::from_static(role)));
            }
        };
        tokio::join!(
            poll_roles(&env, polled, done_rx, wake_rx),
            futures_util::future::join_all(workers),
            wakes
        );
        fake.epoch.elapsed()
    }

    /// Runs the poller and a worker for each of `shards` shards of `alpha` (every 200 ms, each
    /// tick returning at once) on `fake` until `shutdown` fires, as the holder `test-holder`.
    async fn lead_shards(
        fake: &FakeStatements,
        timings: Timings,
        shutdown: CancellationToken,
        shards: u32,
    ) {
        let spec = Arc::new(RoleSpec {
            role: Role::from_static("alpha"),
            schedule: SHARD_EVERY.into(),
            job: Arc::new(|_| -> JobFuture { Box::pin(async { Ok(()) }) }),
            name: "test_job".into(),
            shard_count: Some(shards),
        });
        let leases = (0..shards)
            .map(|index| (spec.clone(), Some(Shard::new(index, shards).unwrap())))
            .collect();
        lead_leases(fake, timings, shutdown, leases, &[]).await;
    }

    const SHARD_EVERY: Duration = Duration::from_millis(200);

    /// A refusal of a shard whose last tick `holder` completed.
    fn refused_shard(holder: &str, retry_after: Duration) -> Result<Acquired, StatementError> {
        let refusal = Refusal::forge(
            RefusalReason::NotDue,
            Some(retry_after),
            None,
            chrono::Utc::now(),
        )
        .with_kept_by(Some(holder.to_owned()));
        Ok(Acquired::Refused(refusal))
    }

    #[tokio::test(start_paused = true)]
    async fn a_replicas_shards_granted_together_are_asked_for_again_together_one_interval_after_their_ticks()
     {
        let fake = FakeStatements::acquiring(vec![
            granted("alpha"),
            granted("alpha"),
            refused_shard("test-holder", Duration::ZERO),
            refused_shard("test-holder", Duration::ZERO),
        ]);
        let shutdown = fake.acquires_done.clone();
        lead_shards(&fake, Timings::DEFAULT, shutdown, 2).await;
        let releases: Vec<Duration> = fake
            .calls()
            .into_iter()
            .filter_map(|call| match call {
                Call::Release(at, _) => Some(at),
                _ => None,
            })
            .collect();
        assert_eq!(releases, [ms(0), ms(0)], "{:?}", fake.calls());
        let times = fake.acquire_times();
        assert_eq!(
            times[1], SHARD_EVERY,
            "no ACQUIRE between a shard's release and its next due time"
        );
        assert_eq!(
            fake.acquired_roles()[1].len(),
            2,
            "both shards in one ACQUIRE"
        );
    }

    #[tokio::test(start_paused = true)]
    async fn a_shard_another_replica_ran_is_asked_for_at_max_poll_while_this_one_runs_shards_of_its_own()
     {
        let timings = Timings::DEFAULT; // max_poll 5 s: jitter cap 250 ms
        let fake = FakeStatements::acquiring(vec![
            // Shard 0 ran elsewhere and is due sooner; shard 1 ran here.
            refused_shard("other", ms(100)),
            refused_shard("test-holder", ms(300)),
            // Shard 1 too now ran elsewhere: this replica runs none.
            refused_shard("other", ms(2_000)),
            refused_shard("other", ms(100)),
            // Shard 0 ran here again.
            refused_shard("test-holder", ms(300)),
            refused_shard("other", ms(100)),
        ]);
        let shutdown = fake.acquires_done.clone();
        lead_shards(&fake, timings, shutdown, 2).await;
        let gaps = gaps(&fake);
        assert_eq!(gaps[0], ms(300), "its own shard's hint, without jitter");
        assert_jittered(
            gaps[1],
            ms(100),
            ms(250),
            "running none, every shard's hint",
        );
        assert_eq!(gaps[2], ms(300), "its own shard's hint again");
    }

    /// [`lead_many`] with the one role `alpha`.
    async fn lead(
        fake: &FakeStatements,
        timings: Timings,
        shutdown: CancellationToken,
    ) -> Duration {
        lead_many(fake, timings, shutdown, &[("alpha", Duration::ZERO)]).await
    }

    /// The gaps between consecutive ACQUIREs.
    fn gaps(fake: &FakeStatements) -> Vec<Duration> {
        fake.acquire_times()
            .windows(2)
            .map(|w| w[1] - w[0])
            .collect()
    }

    /// `gap` is `base` plus a jitter of at most `cap` (the paused clock fires timers on whole
    /// milliseconds, so one more is allowed).
    fn assert_jittered(gap: Duration, base: Duration, cap: Duration, what: &str) {
        assert!(
            gap >= base && gap <= base + cap + ms(1),
            "{what}: waited {gap:?}, expected {base:?} plus at most {cap:?}"
        );
    }

    #[tokio::test(start_paused = true)]
    async fn after_each_refusal_it_waits_for_the_hint_plus_jitter_capped_at_max_poll() {
        let timings = Timings::DEFAULT; // max_poll 5 s: jitter cap 250 ms
        let cap = ms(250);
        let fake = FakeStatements::acquiring(vec![
            refused(RefusalReason::Held, Some(ms(2_000))),
            refused(RefusalReason::CoolingDown, Some(ms(1_500))),
            refused(RefusalReason::NotDue, Some(ms(700))),
            refused(RefusalReason::Contended, Some(Duration::ZERO)),
            refused(RefusalReason::Paused, None),
            refused(RefusalReason::NotDue, Some(Duration::from_secs(3_600))),
            Err(StatementError::Timeout {
                statement: Statement::Acquire,
                timeout: Duration::from_secs(2),
            }),
        ]);
        let shutdown = fake.acquires_done.clone();
        lead(&fake, timings, shutdown).await;
        let gaps = gaps(&fake);
        assert_eq!(gaps.len(), 7, "{:?}", fake.calls());
        assert_jittered(gaps[0], ms(2_000), cap, "held");
        assert_jittered(gaps[1], ms(1_500), cap, "cooling down");
        assert_jittered(gaps[2], ms(700), cap, "not due");
        assert_jittered(gaps[3], Duration::ZERO, cap, "contended");
        for (gap, what) in [
            (gaps[4], "paused"),
            (gaps[5], "a far hint"),
            (gaps[6], "an error"),
        ] {
            assert_jittered(gap, timings.max_poll() - cap, cap, what);
            assert!(gap <= timings.max_poll() + ms(1), "{what}: {gap:?}");
        }
    }

    #[tokio::test(start_paused = true)]
    async fn the_jitter_is_a_tenth_of_max_poll_when_that_is_below_250_ms() {
        let timings = Timings::scaled_to_ttl(Duration::from_secs(2)).unwrap(); // max_poll 1 s
        let cap = timings.max_poll() / 10;
        let fake = FakeStatements::acquiring(
            (0..40)
                .map(|_| refused(RefusalReason::Held, Some(ms(300))))
                .collect(),
        );
        let shutdown = fake.acquires_done.clone();
        lead(&fake, timings, shutdown).await;
        let gaps = gaps(&fake);
        for &gap in &gaps[..40] {
            assert_jittered(gap, ms(300), cap, "held");
        }
        let distinct: std::collections::HashSet<_> = gaps[..40].iter().collect();
        assert!(distinct.len() > 5, "the jitter varies: {gaps:?}");
    }

    #[tokio::test(start_paused = true)]
    async fn shutdown_during_a_wait_ends_the_loop_at_once_without_another_acquire() {
        let fake = FakeStatements::acquiring(vec![refused(
            RefusalReason::Held,
            Some(Duration::from_secs(3_600)),
        )]);
        let shutdown = CancellationToken::new();
        let stop = shutdown.clone();
        tokio::spawn(async move {
            tokio::time::sleep(ms(1_000)).await;
            stop.cancel();
        });
        let returned_at = lead(&fake, Timings::DEFAULT, shutdown).await;
        assert_eq!(returned_at, ms(1_000));
        assert_eq!(
            fake.calls(),
            [Call::Acquire(
                Duration::ZERO,
                vec![Role::from_static("alpha")]
            )]
        );
    }

    fn granted(role: &'static str) -> Result<Acquired, StatementError> {
        Ok(Acquired::Granted(FakeStatements::grant(role)))
    }

    fn names(roles: &[Role]) -> Vec<&'static str> {
        roles.iter().map(|role| role.as_str()).collect()
    }

    #[tokio::test(start_paused = true)]
    async fn one_statement_polls_every_role_not_in_a_tick_and_a_released_role_is_polled_at_once() {
        let held = || refused(RefusalReason::Held, Some(ms(2_000)));
        let fake = FakeStatements::acquiring(vec![
            // alpha is granted; its tick runs 3 s.
            granted("alpha"),
            held(),
            held(),
            // At about 2 s: alpha is in its tick, so only beta and gamma are asked for.
            held(),
            held(),
            // At about 3 s alpha's tick ends and all three are asked for at once.
            refused(RefusalReason::NotDue, Some(ms(60_000))),
            held(),
            held(),
        ]);
        let shutdown = fake.acquires_done.clone();
        lead_many(
            &fake,
            Timings::DEFAULT,
            shutdown,
            &[("alpha", ms(3_000)), ("beta", ms(0)), ("gamma", ms(0))],
        )
        .await;
        let asked = fake.acquired_roles();
        assert_eq!(names(&asked[0]), ["alpha", "beta", "gamma"]);
        assert_eq!(names(&asked[1]), ["beta", "gamma"], "{asked:?}");
        assert_eq!(names(&asked[2]), ["alpha", "beta", "gamma"], "{asked:?}");
        let times = fake.acquire_times();
        assert_jittered(times[1], ms(2_000), ms(250), "the refusals' hint");
        let released_at = fake
            .calls()
            .into_iter()
            .find_map(|call| match call {
                Call::Release(at, _) => Some(at),
                _ => None,
            })
            .expect("alpha's tick is released");
        assert_eq!(released_at, ms(3_000));
        assert_eq!(
            times[2], released_at,
            "polled as soon as the tick was released"
        );
    }

    #[tokio::test(start_paused = true)]
    async fn the_next_poll_comes_at_the_soonest_hint_of_any_role() {
        let fake = FakeStatements::acquiring(vec![
            refused(RefusalReason::Held, Some(ms(4_000))),
            refused(RefusalReason::CoolingDown, Some(ms(700))),
            refused(RefusalReason::NotDue, Some(ms(3_000))),
        ]);
        let shutdown = fake.acquires_done.clone();
        lead_many(
            &fake,
            Timings::DEFAULT,
            shutdown,
            &[("alpha", ms(0)), ("beta", ms(0)), ("gamma", ms(0))],
        )
        .await;
        let times = fake.acquire_times();
        assert_eq!(times.len(), 2, "{:?}", fake.calls());
        assert_jittered(times[1], ms(700), ms(250), "the soonest hint");
    }

    #[tokio::test(start_paused = true)]
    async fn the_heartbeats_of_ticks_granted_at_different_times_renew_together() {
        let fake = FakeStatements::acquiring(vec![
            granted("alpha"),
            refused(RefusalReason::Held, Some(ms(1_000))),
            granted("beta"),
            // Then both are in their ticks: nothing more to poll for until one ends.
        ]);
        let shutdown = CancellationToken::new();
        let stop = shutdown.clone();
        tokio::spawn(async move {
            tokio::time::sleep(ms(10_000)).await;
            stop.cancel();
        });
        lead_many(
            &fake,
            Timings::DEFAULT,
            shutdown,
            &[("alpha", ms(60_000)), ("beta", ms(60_000))],
        )
        .await;
        let renews: Vec<Duration> = fake
            .calls()
            .into_iter()
            .filter_map(|call| match call {
                Call::Renew(at) => Some(at),
                _ => None,
            })
            .collect();
        // heartbeat 3 s on the replica's grid: alpha (granted at 0) and beta (granted at about
        // 1 s) both renew at 3, 6 and 9 s.
        assert_eq!(
            renews[..6],
            [
                ms(3_000),
                ms(3_000),
                ms(6_000),
                ms(6_000),
                ms(9_000),
                ms(9_000)
            ],
            "{:?}",
            fake.calls()
        );
        assert_eq!(fake.acquire_times().len(), 2, "{:?}", fake.calls());
    }

    #[tokio::test(start_paused = true)]
    async fn a_release_heard_on_the_wake_channel_polls_at_once_for_that_role_only() {
        let fake = FakeStatements::acquiring(vec![
            refused(RefusalReason::Held, Some(ms(4_000))),
            // Woken at 1 s for alpha: polled at once.
            refused(RefusalReason::Held, Some(ms(4_000))),
        ]);
        let shutdown = fake.acquires_done.clone();
        lead_waking(
            &fake,
            Timings::DEFAULT,
            shutdown,
            &[("alpha", ms(0))],
            // A release of a role this replica does not lead wakes nothing.
            &[(ms(500), "beta"), (ms(1_000), "alpha")],
        )
        .await;
        let times = fake.acquire_times();
        assert_eq!(
            times[..2],
            [Duration::ZERO, ms(1_000)],
            "{:?}",
            fake.calls()
        );
    }

    #[test]
    fn waits_until_the_hint_plus_jitter_capped_at_max_poll() {
        let max = Duration::from_secs(5);
        for _ in 0..200 {
            let soon = next_poll_wait(Some(Duration::from_millis(300)), max);
            assert!(
                soon >= Duration::from_millis(300) && soon <= Duration::from_millis(550),
                "{soon:?}"
            );
            let capped = next_poll_wait(Some(Duration::from_secs(3600)), max);
            assert!(
                capped <= max && capped >= max - Duration::from_millis(250),
                "{capped:?}"
            );
            let unknown = next_poll_wait(None, max);
            assert!(unknown <= max, "{unknown:?}");
        }
    }

    #[test]
    fn read_only_is_reported_once_per_change() {
        let role = &[leader_core::Role::from_static("alpha")];
        let mut state = ReadOnlyState::default();
        assert!(!state.observe(role, Some(false)), "writable from the start");
        assert!(state.observe(role, Some(true)), "became read-only");
        assert!(
            !state.observe(role, Some(true)),
            "still read-only: no second report"
        );
        assert!(!state.observe(role, None), "another error says nothing");
        assert!(state.observe(role, Some(false)), "writable again");
        assert!(!state.observe(role, Some(false)));
    }

    #[test]
    fn jitter_spreads_replicas_at_the_cap() {
        let waits: std::collections::HashSet<Duration> = (0..50)
            .map(|_| next_poll_wait(None, Duration::from_secs(5)))
            .collect();
        assert!(
            waits.len() > 10,
            "replicas must not poll in step: {waits:?}"
        );
    }
}
