//! One granted tick: run the job beside its heartbeat, decide the outcome, release.

use std::sync::Arc;
use std::time::Duration;

use leader_core::lease::Grant;
use leader_core::{ReleaseOutcome, Timings};
use sqlx::PgPool;
use tokio::time::{Instant, sleep_until};
use tokio_util::sync::CancellationToken;
use tokio_util::task::AbortOnDropHandle;
use tracing::Instrument;

use crate::cancel::{CancelCause, TickCancellation};
use crate::context::TickContext;
use crate::heartbeat::keep_alive;
use crate::panic_capture::{CatchPanic, CaughtPanic, catch};
use crate::registry::JobError;
use crate::role_spec::RoleSpec;
use crate::statements::LeaseStatements;
use crate::tick_tasks::{EndOnDrop, TickTasks};

/// How the job's future ended.
#[derive(Debug)]
pub(crate) enum TickEnd {
    /// The job returned.
    Returned(Result<(), JobError>),
    /// The job panicked.
    Panicked(CaughtPanic),
    /// The job did not return within the grace period after its tick was cancelled, and was
    /// dropped.
    Abandoned,
}

/// What the runtime did with a tick.
#[derive(Debug)]
#[cfg_attr(
    not(test),
    expect(dead_code, reason = "asserted by the paused-clock tests")
)]
pub(crate) struct TickReport {
    /// How the tick ended, as RELEASE, logs and the tick-duration metric name it.
    pub outcome: ReleaseOutcome,
    /// Whether RELEASE was sent (not after a heartbeat timeout).
    pub released: bool,
    /// Why the tick was cancelled, if it was.
    pub cause: Option<CancelCause>,
    /// The job's panic, if it panicked.
    pub panic: Option<CaughtPanic>,
}

/// The outcome rules, in the order they are checked:
///
/// 1. A loss wins over everything: a tick whose lease was lost is released as lost even if its
///    work then panicked or failed (after a heartbeat timeout nothing at all is sent); a loss of
///    the anchor is released as `anchor_lost`, with no cooldown, since it says nothing about the
///    job or the database.
/// 2. A shutdown wins over a panic: the tick is released as shut down, with no cooldown, so a
///    deploy adds no wait, and the panic is still logged.
/// 3. A panic is released as panicked (cooldown one interval).
/// 4. A job that returned an error did not complete: released as failed (short cooldown).
/// 5. Otherwise the tick completed.
///
/// Returns the outcome and whether RELEASE is sent for it.
pub(crate) fn decide(cause: Option<CancelCause>, end: &TickEnd) -> (ReleaseOutcome, bool) {
    match (cause, end) {
        (Some(CancelCause::HeartbeatTimeout), _) => (ReleaseOutcome::Lost, false),
        (Some(CancelCause::AnchorLost), _) => (ReleaseOutcome::AnchorLost, true),
        (Some(cause), _) if cause.is_loss() => (ReleaseOutcome::Lost, true),
        (Some(_), _) => (ReleaseOutcome::Shutdown, true),
        (None, TickEnd::Panicked(_)) => (ReleaseOutcome::Panicked, true),
        (None, TickEnd::Returned(Err(_))) => (ReleaseOutcome::Failed, true),
        (None, TickEnd::Returned(Ok(()))) => (ReleaseOutcome::Completed, true),
        (None, TickEnd::Abandoned) => (ReleaseOutcome::Failed, true),
    }
}

/// Resolves when the anchor whose token is `life` has ended, or never without one.
async fn anchor_ended(life: Option<&CancellationToken>) {
    match life {
        Some(life) => life.cancelled().await,
        None => std::future::pending().await,
    }
}

/// Resolves at `at`, or never when there is no deadline yet.
async fn give_up(at: Option<Instant>) {
    match at {
        Some(at) => sleep_until(at).await,
        None => std::future::pending().await,
    }
}

/// Everything a tick needs besides its grant.
pub(crate) struct TickEnv<'a> {
    pub statements: &'a dyn LeaseStatements,
    pub timings: &'a Timings,
    pub grace: Duration,
    pub shutdown: &'a CancellationToken,
    pub pool: &'a PgPool,
    /// This runtime's holder id, for the tick's span.
    pub holder: &'a str,
    /// The replica's heartbeat grid (see `heartbeat`).
    pub beat_grid: Instant,
    /// The roles this replica leads now.
    pub leadership: &'a crate::leadership::Leadership,
    /// This replica's anchor, with [`take_over_when_dead`](crate::RuntimeBuilder::take_over_when_dead).
    pub anchor: Option<&'a crate::anchor::AnchorCell>,
    /// The pauses the wake listener hears.
    pub pauses: &'a crate::pause::PauseNotices,
}

/// The span a tick runs in, from the grant to the RELEASE: `leader.tick` at INFO, with the
/// `role`, the fencing `token`, this runtime's `holder_id` and, for a sharded role, the `shard`
/// (`index/count`). The job's future is polled inside it, so every event the job logs (and any
/// OpenTelemetry span it opens) carries them; a
/// task the job spawns carries them only if the job instruments it with
/// `tracing::Span::current()`. A subscriber that disables INFO for `leader_runtime` disables the
/// span too.
fn tick_span(fence: leader_core::Fence, holder: &str) -> tracing::Span {
    let span = tracing::info_span!("leader.tick", role = %fence.role(), token = fence.token(), holder_id = %holder, shard = tracing::field::Empty);
    if let Some(shard) = fence.shard() {
        span.record("shard", tracing::field::display(shard));
    }
    span
}

/// Runs one tick of `spec` under `grant`, whose ACQUIRE was sent at `acquire_sent`, inside its
/// [`tick_span`]. With `anchor_life`, the token of the anchor the ACQUIRE named, the tick is
/// cancelled ([`CancelCause::AnchorLost`]) when that anchor ends, or at once if it already has.
pub(crate) async fn run_tick(
    env: &TickEnv<'_>,
    spec: &Arc<RoleSpec>,
    grant: Grant,
    acquire_sent: Instant,
    anchor_life: Option<CancellationToken>,
) -> TickReport {
    let span = tick_span(grant.fence, env.holder);
    run_granted(env, spec, grant, acquire_sent, anchor_life)
        .instrument(span)
        .await
}

async fn run_granted(
    env: &TickEnv<'_>,
    spec: &Arc<RoleSpec>,
    grant: Grant,
    acquire_sent: Instant,
    anchor_life: Option<CancellationToken>,
) -> TickReport {
    let fence = grant.fence;
    log_grant(env, spec, &grant);
    let started = Instant::now();
    let cancellation = TickCancellation::new();
    let tasks = TickTasks::new(tracing::Span::current());
    let _end_tasks = EndOnDrop(tasks.clone());
    let context = TickContext::new(
        fence,
        cancellation.view(),
        grant.acquired_at,
        env.pool.clone(),
        tasks.clone(),
    )
    .serving(spec.tick_instant(&grant));
    let release_interval = spec.release_interval(&grant);
    let end = run_job(
        env,
        spec,
        fence,
        acquire_sent,
        anchor_life.as_ref(),
        &cancellation,
        context,
        &tasks,
    )
    .await;
    // The heartbeat is gone here: no RENEW starts after the work has ended.
    let cause = cancellation.cause();
    let (outcome, released) = decide(cause, &end);
    log_end(env, spec, fence, &end);
    record(fence, cause, &end, outcome, started.elapsed());
    if released {
        release(env, fence, outcome, release_interval, cause).await;
    } else {
        tracing::info!(role = %fence.role(), token = fence.token(), "sent nothing more for the abandoned tick; the lease runs out after its TTL");
    }
    TickReport {
        outcome,
        released,
        cause,
        panic: match end {
            TickEnd::Panicked(panic) => Some(panic),
            _ => None,
        },
    }
}

/// The grant's log line: INFO when leadership changes hands (this replica did not complete the
/// role's last tick), DEBUG for each further tick it leads.
fn log_grant(env: &TickEnv<'_>, spec: &RoleSpec, grant: &Grant) {
    let (role, token) = (grant.fence.role(), grant.fence.token());
    if grant.last_tick_holder.as_deref() == Some(env.holder) {
        tracing::debug!(%role, token, job = %spec.name, "leading another tick");
    } else {
        let last_tick_holder = grant.last_tick_holder.as_deref().unwrap_or("nobody");
        tracing::info!(%role, token, job = %spec.name, %last_tick_holder, "became leader");
    }
}

/// Runs the job on a task of its own beside the heartbeat (which stays on this task), until the
/// job and the tasks it spawned through the tick have ended, or until the grace period after the
/// tick was cancelled (by a loss, the heartbeat, or the runtime's shutdown) or after the job
/// ended with tasks still running.
///
/// The job's own task is what keeps the heartbeat beating whatever the job does with its
/// thread: a job that blocks (a synchronous client, a long computation) occupies one worker
/// thread, and RENEW goes on from another. Awaiting and blocking jobs end the same way: a job
/// not done at the give-up instant is aborted (a blocked one is left to finish on its thread,
/// its claims refused by the fence once the lease is released).
#[allow(clippy::too_many_arguments)]
async fn run_job(
    env: &TickEnv<'_>,
    spec: &RoleSpec,
    fence: leader_core::Fence,
    acquire_sent: Instant,
    anchor_life: Option<&CancellationToken>,
    cancellation: &TickCancellation,
    context: TickContext,
    tasks: &TickTasks,
) -> TickEnd {
    let job = match catch(|| (spec.job)(context)) {
        Err(panic) => {
            tasks.end();
            return TickEnd::Panicked(panic);
        }
        Ok(job) => CatchPanic::new(job),
    };
    // Aborted when dropped: a tick that gives up on its job does not leave it running (a job
    // blocked in its thread ends when it next yields).
    let mut job = AbortOnDropHandle::new(tokio::spawn(job.in_current_span()));
    let heartbeat = keep_alive(
        env.statements,
        fence,
        env.timings,
        acquire_sent,
        env.beat_grid,
        cancellation,
        env.pauses.subscribe(fence.role()),
    );
    tokio::pin!(heartbeat);
    let mut beating = true;
    // How the job ended, once it has: the tick then waits for the tasks it spawned.
    let mut ended: Option<TickEnd> = None;
    // Set once the tick is cancelled or the job has ended: whatever still runs is given up then.
    let mut give_up_at: Option<Instant> = None;
    loop {
        tokio::select! {
            result = &mut job, if ended.is_none() => {
                ended = Some(job_end(result));
                tasks.end();
                give_up_at.get_or_insert(Instant::now() + env.grace);
            }
            () = tasks.ended(), if ended.is_some() => {
                return ended.expect("checked by the branch's condition");
            }
            () = &mut heartbeat, if beating => {
                beating = false;
                give_up_at.get_or_insert(Instant::now() + env.grace);
            }
            () = env.shutdown.cancelled(), if !cancellation.is_cancelled() => {
                cancellation.cancel(CancelCause::Shutdown);
                give_up_at.get_or_insert(Instant::now() + env.grace);
            }
            () = anchor_ended(anchor_life), if !cancellation.is_cancelled() => {
                cancellation.cancel(CancelCause::AnchorLost);
                give_up_at.get_or_insert(Instant::now() + env.grace);
            }
            () = give_up(give_up_at) => {
                tasks.end();
                let (role, token) = (fence.role(), fence.token());
                let unfinished = tasks.unfinished();
                if unfinished > 0 {
                    tracing::warn!(%role, token, job = %spec.name, unfinished, grace = ?env.grace, "tasks the tick spawned did not end within the grace period; releasing without them");
                }
                return ended.unwrap_or(TickEnd::Abandoned);
            }
        }
    }
}

/// How the job's task ended. Its panics are caught inside the task (with their location), so a
/// `JoinError` is an abort, which only this tick does, or a panic that escaped the catch.
fn job_end(
    result: Result<Result<Result<(), JobError>, CaughtPanic>, tokio::task::JoinError>,
) -> TickEnd {
    match result {
        Ok(Ok(returned)) => TickEnd::Returned(returned),
        Ok(Err(panic)) => TickEnd::Panicked(panic),
        Err(error) => match error.try_into_panic() {
            Ok(payload) => TickEnd::Panicked(CaughtPanic::from_payload(payload)),
            Err(_) => TickEnd::Abandoned,
        },
    }
}

/// The log line for how the job ended, when it did not just return.
fn log_end(env: &TickEnv<'_>, spec: &RoleSpec, fence: leader_core::Fence, end: &TickEnd) {
    let (role, token) = (fence.role(), fence.token());
    match end {
        TickEnd::Panicked(panic) => {
            tracing::error!(
                %role, token, job = %spec.name, panic = %panic.message,
                location = panic.location.as_deref().unwrap_or("unknown"),
                step = panic.step.as_deref().unwrap_or("-"),
                "tick panicked"
            );
        }
        TickEnd::Returned(Err(error)) => {
            tracing::warn!(%role, token, job = %spec.name, %error, "job returned an error");
        }
        TickEnd::Abandoned => {
            tracing::warn!(%role, token, job = %spec.name, grace = ?env.grace, "job did not stop within the grace period; dropped it");
        }
        TickEnd::Returned(Ok(())) => {}
    }
}

/// The tick's metrics: its duration by outcome, and a lost lease (or a panic) by reason.
fn record(
    fence: leader_core::Fence,
    cause: Option<CancelCause>,
    end: &TickEnd,
    outcome: ReleaseOutcome,
    elapsed: Duration,
) {
    let (role, token) = (fence.role(), fence.token());
    if let Some(cause) = cause.filter(|c| c.is_loss()) {
        tracing::warn!(%role, token, reason = %cause, "lost the lease");
        crate::metrics::lease_lost(role, cause.as_str());
    } else if matches!(end, TickEnd::Panicked(_)) && cause.is_none() {
        crate::metrics::lease_lost(role, "panicked");
    }
    crate::metrics::tick_finished(role, outcome.as_str(), elapsed);
}

/// RELEASE with `outcome`: logged at DEBUG for a completed tick, at INFO otherwise.
///
/// A RELEASE that finds the lease already gone, when the tick had not learnt of a loss (`cause`
/// is none or a shutdown), is how a holder whose work ended before its next RENEW learns that it
/// was paused or taken over: it is logged at WARN and counted as a lost lease with that reason,
/// as a RENEW's finding is.
async fn release(
    env: &TickEnv<'_>,
    fence: leader_core::Fence,
    outcome: ReleaseOutcome,
    interval: Duration,
    cause: Option<CancelCause>,
) {
    let (role, token) = (fence.role(), fence.token());
    match env.statements.release(fence, outcome, interval).await {
        Ok(released) => match released.lost.map(CancelCause::from_loss) {
            Some(found) if !cause.is_some_and(CancelCause::is_loss) => {
                tracing::warn!(%role, token, %outcome, reason = %found, "lost the lease before the tick ended: RELEASE found it no longer held, and recorded nothing");
                crate::metrics::lease_lost(role, found.as_str());
            }
            _ if outcome == ReleaseOutcome::Completed => {
                tracing::debug!(%role, token, %outcome, changed = released.changed, "released");
            }
            _ => {
                tracing::info!(%role, token, %outcome, changed = released.changed, "released");
            }
        },
        Err(error) => {
            tracing::warn!(%role, token, %outcome, %error, "RELEASE failed; the lease runs out after its TTL");
        }
    }
}

#[cfg(test)]
mod tests {
    use std::sync::Arc;
    use std::sync::atomic::{AtomicBool, AtomicUsize, Ordering};
    use std::time::Duration;

    use leader_core::lease::{LossReason, Renewed};
    use leader_core::{ReleaseOutcome, Timings};
    use metrics_util::debugging::{DebugValue, DebuggingRecorder};
    use sqlx::postgres::PgPoolOptions;
    use tokio::time::Instant;
    use tokio_util::sync::CancellationToken;

    use super::{TickEnv, TickReport, run_tick};
    use crate::cancel::CancelCause;
    use crate::context::TickContext;
    use crate::fake::{Call, FakeStatements, extended};
    use crate::panic_guard::Steps;
    use crate::registry::{JobError, JobFuture};
    use crate::role_spec::RoleSpec;

    const fn s(secs: u64) -> Duration {
        Duration::from_secs(secs)
    }

    fn spec(job: impl Fn(TickContext) -> JobFuture + Send + Sync + 'static) -> Arc<RoleSpec> {
        Arc::new(RoleSpec {
            role: leader_core::Role::from_static("alpha"),
            schedule: s(3_600).into(),
            job: Arc::new(job),
            name: "test_job".into(),
            shard_count: None,
        })
    }

    /// Runs one tick with the fake statements; `shutdown_at` cancels the runtime at that time.
    async fn tick(
        fake: &FakeStatements,
        spec: Arc<RoleSpec>,
        shutdown_at: Option<Duration>,
    ) -> TickReport {
        tick_anchored(fake, spec, shutdown_at, None).await
    }

    /// [`tick`] granted under an anchor whose life is `anchor_life`.
    async fn tick_anchored(
        fake: &FakeStatements,
        spec: Arc<RoleSpec>,
        shutdown_at: Option<Duration>,
        anchor_life: Option<CancellationToken>,
    ) -> TickReport {
        crate::panic_capture::install();
        let pool = PgPoolOptions::new()
            .connect_lazy("postgres://unused@localhost/unused")
            .unwrap();
        let shutdown = CancellationToken::new();
        if let Some(at) = shutdown_at {
            let shutdown = shutdown.clone();
            tokio::spawn(async move {
                tokio::time::sleep(at).await;
                shutdown.cancel();
            });
        }
        let env = TickEnv {
            statements: fake,
            timings: &Timings::DEFAULT,
            grace: s(5),
            shutdown: &shutdown,
            pool: &pool,
            holder: "test-holder",
            beat_grid: Instant::now(),
            leadership: &crate::leadership::Leadership::default(),
            anchor: None,
            pauses: &crate::pause::PauseNotices::default(),
        };
        let grant = FakeStatements::grant("alpha");
        run_tick(&env, &spec, grant, Instant::now(), anchor_life).await
    }

    fn releases(fake: &FakeStatements) -> Vec<ReleaseOutcome> {
        fake.calls()
            .into_iter()
            .filter_map(|call| match call {
                Call::Release(_, outcome) => Some(outcome),
                Call::Acquire(..) | Call::Renew(_) | Call::Leave(..) => None,
            })
            .collect()
    }

    fn boxed<F: Future<Output = Result<(), JobError>> + Send + 'static>(f: F) -> JobFuture {
        Box::pin(f)
    }

    #[tokio::test(start_paused = true)]
    async fn a_returning_job_completes() {
        let fake = FakeStatements::new(vec![]);
        let report = tick(
            &fake,
            spec(|_| {
                boxed(async {
                    tokio::time::sleep(s(7)).await;
                    Ok(())
                })
            }),
            None,
        )
        .await;
        assert_eq!(
            (report.outcome, report.released),
            (ReleaseOutcome::Completed, true)
        );
        assert_eq!(fake.calls()[..2], [Call::Renew(s(3)), Call::Renew(s(6))]);
    }

    #[tokio::test(start_paused = true)]
    async fn a_panicking_job_is_released_as_panicked_and_says_where() {
        let recorder = DebuggingRecorder::new();
        let snapshotter = recorder.snapshotter();
        let _guard = metrics::set_default_local_recorder(&recorder);
        let fake = FakeStatements::new(vec![]);
        let report = tick(
            &fake,
            spec(|_| {
                boxed(async {
                    tokio::time::sleep(s(1)).await;
                    panic!("malformed row 17");
                })
            }),
            None,
        )
        .await;
        assert_eq!(
            (report.outcome, report.released),
            (ReleaseOutcome::Panicked, true)
        );
        let panic = report.panic.expect("the panic is reported");
        assert_eq!(panic.message, "malformed row 17");
        assert!(
            panic.location.as_deref().unwrap_or("").contains("tick.rs"),
            "{panic:?}"
        );
        assert_eq!(releases(&fake), [ReleaseOutcome::Panicked]);
        assert_eq!(
            lost_count(&snapshotter, "panicked"),
            Some(DebugValue::Counter(1))
        );
    }

    #[tokio::test(start_paused = true)]
    async fn a_job_that_fails_to_build_its_future_is_a_panic_too() {
        let fake = FakeStatements::new(vec![]);
        let report = tick(&fake, spec(|_| panic!("bad config")), None).await;
        assert_eq!(
            (report.outcome, report.released),
            (ReleaseOutcome::Panicked, true)
        );
    }

    #[tokio::test(start_paused = true)]
    async fn a_panic_after_shutdown_is_released_as_shut_down() {
        let fake = FakeStatements::new(vec![]);
        let report = tick(
            &fake,
            spec(|tick| {
                boxed(async move {
                    tick.cancelled().await;
                    panic!("panicked while stopping");
                })
            }),
            Some(s(2)),
        )
        .await;
        assert_eq!(report.cause, Some(CancelCause::Shutdown));
        assert_eq!(
            (report.outcome, report.released),
            (ReleaseOutcome::Shutdown, true)
        );
        assert!(report.panic.is_some(), "the panic is still reported");
    }

    #[tokio::test(start_paused = true)]
    async fn a_tick_whose_anchor_ends_stops_at_once_and_is_released_as_anchor_lost() {
        let recorder = DebuggingRecorder::new();
        let snapshotter = recorder.snapshotter();
        let _guard = metrics::set_default_local_recorder(&recorder);
        let fake = FakeStatements::new(vec![]);
        let life = CancellationToken::new();
        let ending = life.clone();
        tokio::spawn(async move {
            tokio::time::sleep(s(2)).await;
            ending.cancel();
        });
        let seen = Arc::new(std::sync::Mutex::new(None));
        let seen_by_job = seen.clone();
        let report = tick_anchored(
            &fake,
            spec(move |tick| {
                let seen = seen_by_job.clone();
                boxed(async move {
                    let cause = tick.cancelled().await;
                    *seen.lock().unwrap() = Some((cause, tokio::time::Instant::now()));
                    Ok(())
                })
            }),
            None,
            Some(life),
        )
        .await;
        assert_eq!(report.cause, Some(CancelCause::AnchorLost));
        assert_eq!(
            (report.outcome, report.released),
            (ReleaseOutcome::AnchorLost, true)
        );
        let (cause, _) = seen.lock().unwrap().expect("the job saw the cancellation");
        assert_eq!(cause, CancelCause::AnchorLost);
        assert_eq!(
            lost_count(&snapshotter, "anchor_lost"),
            Some(DebugValue::Counter(1))
        );
    }

    #[tokio::test(start_paused = true)]
    async fn a_tick_granted_under_an_anchor_already_ended_starts_cancelled() {
        let fake = FakeStatements::new(vec![]);
        let life = CancellationToken::new();
        life.cancel();
        let started = tokio::time::Instant::now();
        let report = tick_anchored(
            &fake,
            spec(move |tick| {
                boxed(async move {
                    tick.cancelled().await;
                    assert_eq!(
                        tokio::time::Instant::now(),
                        started,
                        "cancelled at its start"
                    );
                    Ok(())
                })
            }),
            None,
            Some(life),
        )
        .await;
        assert_eq!(report.cause, Some(CancelCause::AnchorLost));
        assert!(report.panic.is_none(), "{:?}", report.panic);
    }

    #[tokio::test(start_paused = true)]
    async fn a_panic_after_a_loss_reports_only_the_loss() {
        let recorder = DebuggingRecorder::new();
        let snapshotter = recorder.snapshotter();
        let _guard = metrics::set_default_local_recorder(&recorder);
        let fake = FakeStatements::new(vec![(
            Duration::ZERO,
            Ok(Renewed::Lost(LossReason::TakenOver)),
        )]);
        let report = tick(
            &fake,
            spec(|tick| {
                boxed(async move {
                    tick.cancelled().await;
                    panic!("panicked on the cancelled claim");
                })
            }),
            None,
        )
        .await;
        assert_eq!(report.cause, Some(CancelCause::TakenOver));
        assert_eq!(
            (report.outcome, report.released),
            (ReleaseOutcome::Lost, true)
        );
        let reasons: Vec<String> = snapshotter
            .snapshot()
            .into_vec()
            .into_iter()
            .filter(|(key, ..)| key.key().name() == crate::metrics::LEASE_LOST_TOTAL)
            .filter(|(.., value)| *value == DebugValue::Counter(1))
            .flat_map(|(key, ..)| {
                key.key()
                    .labels()
                    .map(|l| l.value().to_owned())
                    .collect::<Vec<_>>()
            })
            .collect();
        assert_eq!(reasons, ["alpha", "taken_over"]);
    }

    #[tokio::test(start_paused = true)]
    async fn after_a_heartbeat_timeout_nothing_more_is_sent() {
        let fake = FakeStatements::new(vec![(s(3_600), extended())]);
        let report = tick(
            &fake,
            spec(|tick| {
                boxed(async move {
                    let cause = tick.cancelled().await;
                    assert_eq!(cause, CancelCause::HeartbeatTimeout);
                    Ok(())
                })
            }),
            None,
        )
        .await;
        assert_eq!(
            (report.outcome, report.released),
            (ReleaseOutcome::Lost, false)
        );
        assert_eq!(fake.calls(), [Call::Renew(s(3))], "no RELEASE either");
    }

    #[tokio::test(start_paused = true)]
    async fn a_job_error_is_not_a_completion() {
        let fake = FakeStatements::new(vec![]);
        let report = tick(
            &fake,
            spec(|_| boxed(async { Err("the API is down".into()) })),
            None,
        )
        .await;
        assert_eq!(
            (report.outcome, report.released),
            (ReleaseOutcome::Failed, true)
        );
    }

    #[tokio::test(start_paused = true)]
    async fn a_job_ignoring_shutdown_is_dropped_after_the_grace_period_and_released() {
        let fake = FakeStatements::new(vec![]);
        let report = tick(
            &fake,
            spec(|_| {
                boxed(async {
                    tokio::time::sleep(s(3_600)).await;
                    Ok(())
                })
            }),
            Some(s(1)),
        )
        .await;
        assert_eq!(
            (report.outcome, report.released),
            (ReleaseOutcome::Shutdown, true)
        );
        let released_at = fake.calls().into_iter().find_map(|c| match c {
            Call::Release(at, _) => Some(at),
            Call::Acquire(..) | Call::Renew(_) | Call::Leave(..) => None,
        });
        assert_eq!(released_at, Some(s(6)), "shutdown at 1 s + 5 s grace");
    }

    #[tokio::test(start_paused = true)]
    async fn a_helper_cancelling_its_token_does_not_cancel_the_tick() {
        let fake = FakeStatements::new(vec![]);
        let job = spec(|tick| {
            boxed(async move {
                tick.cancellation().token().cancel();
                assert!(!tick.is_cancelled());
                assert_eq!(tick.cancelled().await, CancelCause::Shutdown);
                Ok(())
            })
        });
        let report = tick(&fake, job, Some(s(1))).await;
        assert!(report.panic.is_none(), "{:?}", report.panic);
        assert_eq!(report.cause, Some(CancelCause::Shutdown));
        assert_eq!(
            (report.outcome, report.released),
            (ReleaseOutcome::Shutdown, true)
        );
    }

    #[tokio::test(start_paused = true)]
    async fn a_step_panic_is_not_swallowed_when_the_job_returns_without_finish() {
        let fake = FakeStatements::new(vec![]);
        let report = tick(
            &fake,
            spec(|_| {
                boxed(async {
                    let mut steps = Steps::new("alpha");
                    steps.run("first", async { panic!("first broke") }).await;
                    if steps.panicked_steps().is_empty() {
                        steps.finish();
                    }
                    Ok(())
                })
            }),
            None,
        )
        .await;
        assert_eq!(
            (report.outcome, report.released),
            (ReleaseOutcome::Panicked, true)
        );
        assert_eq!(report.panic.unwrap().step.as_deref(), Some("first"));
    }

    #[tokio::test(start_paused = true)]
    async fn an_abandoned_job_holding_a_step_panic_is_dropped_and_released() {
        let fake = FakeStatements::new(vec![]);
        let report = tick(
            &fake,
            spec(|_| {
                boxed(async {
                    let mut steps = Steps::new("alpha");
                    steps.run("first", async { panic!("first broke") }).await;
                    tokio::time::sleep(s(3_600)).await;
                    steps.finish();
                    Ok(())
                })
            }),
            Some(s(1)),
        )
        .await;
        assert_eq!(
            (report.outcome, report.released),
            (ReleaseOutcome::Shutdown, true)
        );
    }

    #[tokio::test(start_paused = true)]
    async fn a_step_panic_lets_the_later_steps_run_then_releases_as_panicked() {
        let fake = FakeStatements::new(vec![]);
        let ran = Arc::new(std::sync::Mutex::new(Vec::new()));
        let log = ran.clone();
        let report = tick(
            &fake,
            spec(move |_| {
                let log = log.clone();
                boxed(async move {
                    let mut steps = Steps::new("alpha");
                    steps
                        .run("first", async { log.lock().unwrap().push("first") })
                        .await;
                    steps.run("second", async { panic!("second broke") }).await;
                    steps
                        .run("third", async { log.lock().unwrap().push("third") })
                        .await;
                    steps.finish();
                    Ok(())
                })
            }),
            None,
        )
        .await;
        assert_eq!(*ran.lock().unwrap(), ["first", "third"]);
        assert_eq!(
            (report.outcome, report.released),
            (ReleaseOutcome::Panicked, true)
        );
        let panic = report.panic.unwrap();
        assert_eq!(
            (panic.message.as_str(), panic.step.as_deref()),
            ("second broke", Some("second"))
        );
        assert!(panic.location.unwrap().contains("tick.rs"));
    }

    /// The lease-lost counter's value for `reason`, from a local recorder's snapshot.
    fn lost_count(
        snapshotter: &metrics_util::debugging::Snapshotter,
        reason: &str,
    ) -> Option<DebugValue> {
        snapshotter
            .snapshot()
            .into_vec()
            .into_iter()
            .find(|(key, ..)| {
                key.key().name() == crate::metrics::LEASE_LOST_TOTAL
                    && key.key().labels().any(|l| l.value() == reason)
            })
            .map(|(.., value)| value)
    }

    #[tokio::test(start_paused = true)]
    async fn a_pause_found_by_release_is_counted_as_a_lost_lease() {
        let recorder = DebuggingRecorder::new();
        let snapshotter = recorder.snapshotter();
        let _guard = metrics::set_default_local_recorder(&recorder);
        let fake = FakeStatements::new(vec![]);
        *fake.release_finds.lock().unwrap() = Some(LossReason::Paused);
        let report = tick(&fake, spec(|_| boxed(async { Ok(()) })), None).await;
        assert_eq!(report.cause, None, "no RENEW ran before the job returned");
        assert_eq!(releases(&fake), [ReleaseOutcome::Completed]);
        assert_eq!(
            lost_count(&snapshotter, "paused"),
            Some(DebugValue::Counter(1))
        );
    }

    #[tokio::test(start_paused = true)]
    async fn a_pause_renew_found_is_not_counted_again_by_release() {
        let recorder = DebuggingRecorder::new();
        let snapshotter = recorder.snapshotter();
        let _guard = metrics::set_default_local_recorder(&recorder);
        let fake = FakeStatements::new(vec![(
            Duration::ZERO,
            Ok(Renewed::Lost(LossReason::Paused)),
        )]);
        *fake.release_finds.lock().unwrap() = Some(LossReason::Paused);
        let report = tick(
            &fake,
            spec(|tick| {
                boxed(async move {
                    tick.cancelled().await;
                    Ok(())
                })
            }),
            None,
        )
        .await;
        assert_eq!(report.cause, Some(CancelCause::Paused));
        assert_eq!(
            lost_count(&snapshotter, "paused"),
            Some(DebugValue::Counter(1))
        );
    }

    #[tokio::test(start_paused = true)]
    async fn the_ticks_tasks_are_aborted_when_its_job_returns_and_end_before_release() {
        let fake = FakeStatements::new(vec![]);
        let runs = Arc::new(AtomicUsize::new(0));
        let ended = Arc::new(AtomicBool::new(false));
        let ended_at_release = Arc::new(AtomicBool::new(false));
        let (seen, observed) = (ended.clone(), ended_at_release.clone());
        *fake.on_release.lock().unwrap() = Some(Box::new(move || {
            observed.store(seen.load(Ordering::SeqCst), Ordering::SeqCst);
        }));
        let (counter, flag) = (runs.clone(), ended.clone());
        let report = tick(
            &fake,
            spec(move |tick| {
                let (counter, flag) = (counter.clone(), flag.clone());
                boxed(async move {
                    tick.spawn(async move {
                        let _ended = SetOnDrop(flag);
                        loop {
                            tokio::time::sleep(s(1)).await;
                            counter.fetch_add(1, Ordering::SeqCst);
                        }
                    });
                    tokio::time::sleep(Duration::from_millis(3_500)).await;
                    Ok(())
                })
            }),
            None,
        )
        .await;
        assert_eq!(report.outcome, ReleaseOutcome::Completed);
        assert!(
            ended_at_release.load(Ordering::SeqCst),
            "RELEASE was sent while a task of the tick still ran"
        );
        let at_end = runs.load(Ordering::SeqCst);
        assert_eq!(at_end, 3);
        tokio::time::sleep(s(10)).await;
        assert_eq!(
            runs.load(Ordering::SeqCst),
            at_end,
            "the task outlived its tick"
        );
    }

    #[tokio::test(start_paused = true)]
    async fn release_waits_for_the_ticks_blocking_work_within_the_grace_period() {
        let fake = FakeStatements::new(vec![]);
        let done = Arc::new(AtomicBool::new(false));
        let done_at_release = Arc::new(AtomicBool::new(false));
        let (seen, observed) = (done.clone(), done_at_release.clone());
        *fake.on_release.lock().unwrap() = Some(Box::new(move || {
            observed.store(seen.load(Ordering::SeqCst), Ordering::SeqCst);
        }));
        let report = tick(
            &fake,
            spec(move |tick| {
                let done = done.clone();
                boxed(async move {
                    tick.spawn_blocking(move || {
                        std::thread::sleep(Duration::from_millis(50));
                        done.store(true, Ordering::SeqCst);
                    });
                    Ok(())
                })
            }),
            None,
        )
        .await;
        assert_eq!(report.outcome, ReleaseOutcome::Completed);
        assert!(
            done_at_release.load(Ordering::SeqCst),
            "RELEASE was sent while the tick's blocking work still ran"
        );
    }

    /// Sets its flag when dropped.
    struct SetOnDrop(Arc<AtomicBool>);

    impl Drop for SetOnDrop {
        fn drop(&mut self) {
            self.0.store(true, Ordering::SeqCst);
        }
    }
}
