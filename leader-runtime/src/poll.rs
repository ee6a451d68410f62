//! The per-role loop: poll with ACQUIRE at the right moment, run granted ticks.

use std::sync::Arc;
use std::time::Duration;

use leader_core::lease::Acquired;
use rand::Rng;
use tokio::time::Instant;

use crate::role_spec::RoleSpec;
use crate::tick::{TickEnv, run_tick};

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

/// SQLSTATE `read_only_sql_transaction`: the server is a standby or a read-only primary.
const READ_ONLY_SQL_TRANSACTION: &str = "25006";

/// Whether `error` says the server cannot take writes (so no replica can lead through it).
pub(crate) fn is_read_only(error: &leader_core::Error) -> bool {
    match error {
        leader_core::Error::Database {
            source: sqlx::Error::Database(db),
            ..
        } => db.code().as_deref() == Some(READ_ONLY_SQL_TRANSACTION),
        _ => false,
    }
}

/// Whether the server this role's ACQUIREs reach is read-only: logged once per change, not
/// per poll, and exported as `leader_database_read_only`.
#[derive(Debug, Default)]
pub(crate) struct ReadOnlyState {
    read_only: bool,
}

impl ReadOnlyState {
    /// Records what the last ACQUIRE said (`Some(true)`: read-only, `Some(false)`: a writable
    /// answer, `None`: another error, which says nothing either way). Returns true when the
    /// state changed.
    pub(crate) fn observe(&mut self, role: leader_core::Role, read_only: Option<bool>) -> bool {
        let Some(read_only) = read_only else {
            return false;
        };
        if read_only == self.read_only {
            return false;
        }
        self.read_only = read_only;
        crate::metrics::read_only(role, read_only);
        if read_only {
            tracing::error!(%role, "not leading: the database is read-only (a standby or a demoted primary, SQLSTATE 25006); point the pool at the writable primary. Polling on; logged again when it changes");
        } else {
            tracing::info!(%role, "the database accepts writes again; leading resumes");
        }
        true
    }
}

/// Leads `spec` until `env.shutdown` fires: no ACQUIRE is sent after it, and a running tick is
/// cancelled, given the grace period and released first.
pub(crate) async fn lead_role(env: TickEnv<'_>, spec: Arc<RoleSpec>) {
    let role = spec.role;
    let max_poll = env.timings.max_poll();
    let mut read_only = ReadOnlyState::default();
    crate::metrics::read_only(role, false);
    while !env.shutdown.is_cancelled() {
        let sent = Instant::now();
        let acquired = env.statements.acquire(role, spec.every).await;
        read_only.observe(
            role,
            match &acquired {
                Ok(_) => Some(false),
                Err(error) if is_read_only(error) => Some(true),
                Err(_) => None,
            },
        );
        let wait = match acquired {
            Ok(Acquired::Granted(grant)) => {
                crate::metrics::clock_drift(grant.db_now, sent, Instant::now());
                run_tick(&env, &spec, grant, sent).await;
                // The next ACQUIRE says when the role is due again.
                continue;
            }
            Ok(Acquired::Refused(refusal)) => {
                let wait = next_poll_wait(refusal.retry_after, max_poll);
                tracing::debug!(%role, reason = ?refusal.reason, holder = ?refusal.holder_id, ?wait, "not leading");
                wait
            }
            Err(error) if is_read_only(&error) => next_poll_wait(None, max_poll),
            Err(error) => {
                tracing::warn!(%role, %error, "ACQUIRE failed; polling again later");
                next_poll_wait(None, max_poll)
            }
        };
        tokio::select! {
            () = tokio::time::sleep(wait) => {}
            () = env.shutdown.cancelled() => break,
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::fake::{Call, FakeStatements, refused};
    use crate::registry::JobFuture;
    use crate::role_spec::RoleSpec;
    use leader_core::lease::RefusalReason;
    use leader_core::{Error, Role, Timings};
    use sqlx::postgres::PgPoolOptions;
    use tokio_util::sync::CancellationToken;

    const fn ms(millis: u64) -> Duration {
        Duration::from_millis(millis)
    }

    /// Runs `lead_role` on `fake` until `shutdown` fires; returns when it returned, since the
    /// fake's epoch.
    async fn lead(
        fake: &FakeStatements,
        timings: Timings,
        shutdown: CancellationToken,
    ) -> Duration {
        let pool = PgPoolOptions::new()
            .connect_lazy("postgres://unused@localhost/unused")
            .unwrap();
        let spec = Arc::new(RoleSpec {
            role: Role::from_static("alpha"),
            every: Duration::from_secs(60),
            job: Arc::new(|_| -> JobFuture { Box::pin(async { Ok(()) }) }),
            name: "test_job".into(),
        });
        let env = TickEnv {
            statements: fake,
            timings: &timings,
            grace: Duration::from_secs(5),
            shutdown: &shutdown,
            pool: &pool,
            holder: "test-holder",
        };
        lead_role(env, spec).await;
        fake.epoch.elapsed()
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
            Err(Error::Timeout {
                statement: "ACQUIRE",
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
        assert_eq!(fake.calls(), [Call::Acquire(Duration::ZERO)]);
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
        let role = leader_core::Role::from_static("alpha");
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
