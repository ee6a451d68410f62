//! Keeping a granted lease alive while its tick runs.
//!
//! # Rules
//!
//! 1. RENEW every `heartbeat`, each bounded by the statement timeout (in the statement layer).
//! 2. The last acknowledged RENEW counts from the instant it was *sent* (monotonic clock), not
//!    when its answer arrived: the lease it extended runs from the server's `now()` during that
//!    statement, which is no earlier than the send. The first "acknowledgement" is the ACQUIRE.
//! 3. Once `abandon_after` has passed since that instant, the tick is cancelled with
//!    [`CancelCause::HeartbeatTimeout`] and no further statement is sent for it. This also
//!    happens while a RENEW is in flight: its late answer cannot revive the tick.
//!    With `abandon_after + statement_timeout < ttl`, the holder gives up before its lease can
//!    run out, so it stops before anyone else can be granted the role.
//! 4. Zero rows from RENEW is definitive: cancel at once, with the cause the row shows.
//! 5. A RENEW error or timeout is a missed beat, not a loss: the next beat is tried on schedule.
//! 6. Beats fall on the replica's grid (`grid + k * heartbeat`): the next beat is the last grid
//!    point at most one heartbeat after the previous send (or the ACQUIRE). That is never later
//!    than rule 1 asks, and it makes every tick of a replica renew at the same instants, so the
//!    statement layer sends their RENEWs as one statement.
//! 7. A pause notice for the tick's role (`leader_paused`, heard on the direct connection:
//!    [`crate::pause`]) sends a RENEW at once, off the grid; its answer decides as any RENEW's
//!    (rule 4 cancels a paused lease's tick), and the next beat is on the grid again.

use leader_core::lease::Renewed;
use leader_core::{Fence, Timings};
use tokio::time::{Instant, sleep_until};

use std::time::Duration;

use crate::cancel::{CancelCause, TickCancellation};
use crate::pause::PauseReceiver;
use crate::statements::LeaseStatements;

/// The last point of the grid `grid + k * period` at most `period` after `after` (and after
/// `after`); `after + period` when the grid starts later.
pub(crate) fn next_on_grid(grid: Instant, after: Instant, period: Duration) -> Instant {
    let due = after + period;
    if due < grid || period.is_zero() {
        return due;
    }
    let periods = (due - grid).as_nanos() / period.as_nanos();
    grid + period * u32::try_from(periods).unwrap_or(u32::MAX)
}

/// Renews `fence` until the lease is lost or abandoned, then cancels the tick and returns; at
/// once when `pauses` hears the role paused (rule 7).
///
/// It keeps renewing through a shutdown's grace period (the lease is still this tick's until
/// RELEASE); the runtime drops it as soon as the work ends.
pub(crate) async fn keep_alive(
    statements: &dyn LeaseStatements,
    fence: Fence,
    timings: &Timings,
    acquire_sent: Instant,
    grid: Instant,
    cancellation: &TickCancellation,
    mut pauses: PauseReceiver,
) {
    let role = fence.role();
    let mut last_ack_sent = acquire_sent;
    let mut next_beat = next_on_grid(grid, acquire_sent, timings.heartbeat());
    loop {
        let abandon_at = last_ack_sent + timings.abandon_after();
        let wake_at = next_beat.min(abandon_at);
        tokio::select! {
            () = sleep_until(wake_at) => {}
            () = pauses.heard() => {
                tracing::debug!(%role, token = fence.token(), "heard the role paused; renewing now");
            }
        }
        if Instant::now() >= abandon_at {
            if wake_at < abandon_at {
                // Due to send a RENEW before the give-up instant, it was not run until after it:
                // nothing was sent, so no database was slow.
                let late = Instant::now() - wake_at;
                tracing::warn!(%role, token = fence.token(), ?late, "the heartbeat was not run for {late:?} after its beat was due: this replica's async runtime did not run it (a job blocking the only worker thread, or a stopped process), not the database; giving up the tick");
            }
            cancellation.cancel(CancelCause::HeartbeatTimeout);
            return;
        }
        let sent = Instant::now();
        next_beat = next_on_grid(grid, sent, timings.heartbeat());
        tokio::select! {
            biased;
            _ = sleep_until(abandon_at) => {
                cancellation.cancel(CancelCause::HeartbeatTimeout);
                return;
            }
            result = statements.renew(fence) => match result {
                Ok(Renewed::Extended { db_now, .. }) => {
                    last_ack_sent = sent;
                    crate::metrics::clock_drift(db_now, sent, Instant::now());
                }
                Ok(Renewed::Lost(reason)) => {
                    cancellation.cancel(CancelCause::from_loss(reason));
                    return;
                }
                Err(err) => {
                    tracing::warn!(%role, token = fence.token(), error = %err, "RENEW failed; a missed beat, retrying on schedule");
                }
            },
        }
    }
}

#[cfg(test)]
mod tests {
    use std::time::Duration;

    use leader_core::lease::{LossReason, Renewed};
    use leader_core::{TimingParts, Timings};
    use tokio::time::Instant;

    use super::keep_alive;
    use crate::cancel::{CancelCause, TickCancellation};
    use crate::fake::{Call, FakeStatements, extended, failed};

    const fn s(secs: u64) -> Duration {
        Duration::from_secs(secs)
    }
    const fn ms(millis: u64) -> Duration {
        Duration::from_millis(millis)
    }

    /// Runs the heartbeat for `run_for` of paused time; returns the cause and when it was set.
    async fn beat(
        fake: &FakeStatements,
        timings: Timings,
        run_for: Duration,
    ) -> Option<(CancelCause, Duration)> {
        let cancellation = TickCancellation::new();
        let grant = FakeStatements::grant("alpha");
        let started = Instant::now();
        let pauses = crate::pause::PauseNotices::default().subscribe(grant.fence.role());
        let heartbeat = keep_alive(
            fake,
            grant.fence,
            &timings,
            started,
            started,
            &cancellation,
            pauses,
        );
        let ended = tokio::time::timeout(run_for, heartbeat).await.is_ok();
        let at = started.elapsed();
        // Nothing more may be sent afterwards, whatever the time.
        tokio::time::sleep(s(60)).await;
        ended.then(|| {
            (
                cancellation
                    .cause()
                    .expect("a returned heartbeat cancelled the tick"),
                at,
            )
        })
    }

    fn renews(fake: &FakeStatements) -> Vec<Duration> {
        fake.calls()
            .into_iter()
            .map(|call| match call {
                Call::Renew(at) => at,
                other => panic!("the heartbeat only renews: {other:?}"),
            })
            .collect()
    }

    #[tokio::test(start_paused = true)]
    async fn renews_every_heartbeat_while_acknowledged() {
        let fake = FakeStatements::new(vec![]);
        assert_eq!(beat(&fake, Timings::DEFAULT, s(10)).await, None);
        assert_eq!(renews(&fake), [s(3), s(6), s(9)]);
    }

    #[tokio::test(start_paused = true)]
    async fn no_acknowledgement_for_abandon_after_cancels_and_sends_nothing_more() {
        // The first RENEW hangs past the abandon point (6 s after the ACQUIRE was sent).
        let fake = FakeStatements::new(vec![(s(3_600), extended())]);
        let ended = beat(&fake, Timings::DEFAULT, s(30)).await;
        assert_eq!(ended, Some((CancelCause::HeartbeatTimeout, s(6))));
        assert_eq!(
            renews(&fake),
            [s(3)],
            "no statement after the abandon point"
        );
    }

    #[tokio::test(start_paused = true)]
    async fn a_slow_renew_that_answers_after_the_abandon_point_does_not_revive_the_tick() {
        let fake = FakeStatements::new(vec![(ms(3_500), extended())]);
        let ended = beat(&fake, Timings::DEFAULT, s(30)).await;
        assert_eq!(ended, Some((CancelCause::HeartbeatTimeout, s(6))));
        assert_eq!(renews(&fake), [s(3)]);
    }

    #[tokio::test(start_paused = true)]
    async fn a_statement_error_is_a_missed_beat_not_a_loss() {
        let timings = Timings::new_or_panic(TimingParts {
            ttl: s(5),
            heartbeat: s(1),
            statement_timeout: s(1),
            abandon_after: ms(3_500),
            max_poll: s(2),
        });
        let fake = FakeStatements::new(vec![
            (ms(10), failed()),
            (ms(10), failed()),
            (ms(10), extended()),
        ]);
        assert_eq!(
            beat(&fake, timings, ms(4_500)).await,
            None,
            "two misses, then an ack"
        );
        assert_eq!(renews(&fake)[..4], [s(1), s(2), s(3), s(4)]);

        let fake = FakeStatements::new(vec![
            (ms(10), failed()),
            (ms(10), failed()),
            (ms(10), failed()),
        ]);
        assert_eq!(
            beat(&fake, timings, s(30)).await,
            Some((CancelCause::HeartbeatTimeout, ms(3_500))),
            "three misses run out the abandon time counted from the ACQUIRE"
        );
        assert_eq!(renews(&fake), [s(1), s(2), s(3)]);
    }

    #[tokio::test(start_paused = true)]
    async fn the_acknowledgement_counts_from_when_the_renew_was_sent() {
        // Sent at 3 s, answered at 5 s: the abandon point moves to 3 + 6 = 9 s, not 5 + 6.
        let fake = FakeStatements::new(vec![
            (s(2), extended()),
            (ms(10), failed()),
            (ms(10), failed()),
        ]);
        let ended = beat(&fake, Timings::DEFAULT, s(30)).await;
        assert_eq!(ended, Some((CancelCause::HeartbeatTimeout, s(9))));
        assert_eq!(renews(&fake), [s(3), s(6)]);
    }

    #[tokio::test(start_paused = true)]
    async fn zero_rows_is_a_loss_at_once_with_the_cause_the_row_shows() {
        for (reason, cause) in [
            (LossReason::TakenOver, CancelCause::TakenOver),
            (LossReason::Paused, CancelCause::Paused),
            (LossReason::Expired, CancelCause::Expired),
            (LossReason::Released, CancelCause::Released),
        ] {
            let fake = FakeStatements::new(vec![(ms(5), Ok(Renewed::Lost(reason)))]);
            assert_eq!(
                beat(&fake, Timings::DEFAULT, s(30)).await,
                Some((cause, ms(3_005)))
            );
            assert_eq!(renews(&fake), [s(3)]);
        }
    }
}
