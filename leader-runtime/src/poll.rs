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

/// Leads `spec` until `env.shutdown` fires: no ACQUIRE is sent after it, and a running tick is
/// cancelled, given the grace period and released first.
pub(crate) async fn lead_role(env: TickEnv<'_>, spec: Arc<RoleSpec>) {
    let role = spec.role;
    let max_poll = env.timings.max_poll();
    while !env.shutdown.is_cancelled() {
        let sent = Instant::now();
        let wait = match env.statements.acquire(role, spec.every).await {
            Ok(Acquired::Granted(grant)) => {
                crate::metrics::clock_drift(crate::heartbeat::clock_drift_seconds(
                    grant.db_now,
                    sent,
                    Instant::now(),
                ));
                run_tick(&env, &spec, grant, sent).await;
                // The next ACQUIRE says when the role is due again.
                continue;
            }
            Ok(Acquired::Refused(refusal)) => {
                let wait = next_poll_wait(refusal.retry_after, max_poll);
                tracing::debug!(%role, reason = ?refusal.reason, holder = ?refusal.holder_id, ?wait, "not leading");
                wait
            }
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
