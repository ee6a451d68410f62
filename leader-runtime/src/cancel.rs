//! Cancellation of a tick, with the reason it was cancelled.

use std::fmt;
use std::sync::{Arc, OnceLock};

use leader_core::lease::LossReason;
use tokio_util::sync::CancellationToken;

/// Why a tick was cancelled.
///
/// Each way of losing the lease is its own variant, named as the `reason` label of
/// `leader_lease_lost_total` and the log's `reason` field name it; [`CancelCause::is_loss`] tells
/// a loss from a shutdown.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Hash)]
#[non_exhaustive]
pub enum CancelCause {
    /// RENEW found the lease held under a newer token: another replica was granted the role.
    TakenOver,
    /// RENEW found the lease released (by hand: the runtime releases only after its work ended).
    Released,
    /// RENEW found the lease past its expiry (its RENEWs arrived too late).
    Expired,
    /// An operator paused the role (`leader_pause`), which ends its lease at once.
    Paused,
    /// No RENEW was acknowledged for `abandon_after`: the leader gave up its tick and sends
    /// nothing more for it; the lease runs out on its own.
    HeartbeatTimeout,
    /// The server ended the anchor session this tick's lease was granted under
    /// ([`RuntimeBuilder::take_over_when_dead`](crate::RuntimeBuilder::take_over_when_dead)):
    /// another replica may take the lease over at once, so the tick stops as on a lost lease.
    AnchorLost,
    /// The runtime is shutting down.
    Shutdown,
}

impl CancelCause {
    /// The cause for a RENEW (or RELEASE) that found the lease gone for `reason`.
    pub fn from_loss(reason: LossReason) -> CancelCause {
        match reason {
            LossReason::TakenOver => CancelCause::TakenOver,
            LossReason::Released => CancelCause::Released,
            LossReason::Expired => CancelCause::Expired,
            LossReason::Paused => CancelCause::Paused,
        }
    }

    /// True for every cause except shutdown: the lease is no longer this tick's.
    pub fn is_loss(self) -> bool {
        !matches!(self, CancelCause::Shutdown)
    }

    /// The name used in logs and as the `reason` label of the lease-loss counter.
    pub fn as_str(self) -> &'static str {
        match self {
            CancelCause::TakenOver => LossReason::TakenOver.as_str(),
            CancelCause::Released => LossReason::Released.as_str(),
            CancelCause::Expired => LossReason::Expired.as_str(),
            CancelCause::Paused => LossReason::Paused.as_str(),
            CancelCause::HeartbeatTimeout => "heartbeat_timeout",
            CancelCause::AnchorLost => "anchor_lost",
            CancelCause::Shutdown => "shutdown",
        }
    }
}

impl fmt::Display for CancelCause {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.write_str(self.as_str())
    }
}

/// A tick's cancellation, as its job sees it: whether and why the runtime cancelled the tick.
///
/// Read-only: only the runtime cancels a tick, with the cause it observed (a RENEW that found
/// the lease gone, the heartbeat's timeout, the runtime's shutdown), so the cause that decides
/// the RELEASE outcome and the lease-lost metric is always the runtime's. A job that needs a
/// token to stop its own helpers takes a child with [`TickCancellation::token`]: cancelling the
/// child stops whatever holds it and nothing else.
///
/// The first cause wins: a tick lost to a takeover and then interrupted by shutdown reports the
/// loss. Clones share the token and the cause.
///
/// # Invariant
///
/// The token is cancelled only by the runtime's `cancel`, after it records the cause, so a
/// cancelled `TickCancellation` always has a cause.
#[derive(Debug, Clone, Default)]
pub struct TickCancellation {
    token: CancellationToken,
    cause: Arc<OnceLock<CancelCause>>,
}

impl TickCancellation {
    /// A token that is not cancelled.
    pub(crate) fn new() -> TickCancellation {
        TickCancellation::default()
    }

    /// The job's view of this cancellation (the same token and cause).
    pub(crate) fn view(&self) -> TickCancellation {
        self.clone()
    }

    /// Cancels with `cause`, unless already cancelled. Returns true if this call set the cause.
    pub(crate) fn cancel(&self, cause: CancelCause) -> bool {
        let first = self.cause.set(cause).is_ok();
        self.token.cancel();
        first
    }

    /// The cause, once cancelled.
    pub fn cause(&self) -> Option<CancelCause> {
        self.cause.get().copied()
    }

    /// True once cancelled.
    pub fn is_cancelled(&self) -> bool {
        self.token.is_cancelled()
    }

    /// Waits until cancelled and returns the cause. Cancellation safe.
    pub async fn cancelled(&self) -> CancelCause {
        self.token.cancelled().await;
        self.cause()
            .expect("the cause is set before the token is cancelled")
    }

    /// A child of the tick's token, to pass to code that takes a plain [`CancellationToken`].
    ///
    /// It is cancelled when the tick is; cancelling it (as some helpers do to stop their own
    /// work) does not cancel the tick.
    ///
    /// ```
    /// # async fn job(tick: leader_runtime::TickContext) {
    /// let helper = tick.cancellation().token();
    /// helper.cancel(); // stops the helper, not the tick
    /// assert!(!tick.is_cancelled());
    /// # }
    /// ```
    pub fn token(&self) -> CancellationToken {
        self.token.child_token()
    }
}

#[cfg(test)]
mod tests {
    use super::{CancelCause, TickCancellation};

    #[tokio::test]
    async fn cancelling_a_handed_out_token_leaves_the_tick_running_and_its_cause_unset() {
        let tick = TickCancellation::new();
        let helper = tick.token();
        helper.cancel();
        assert!(!tick.is_cancelled());
        assert_eq!(tick.cause(), None);

        let later = tick.token();
        assert!(tick.cancel(CancelCause::Shutdown));
        assert!(later.is_cancelled(), "a handed-out token follows the tick");
        assert_eq!(tick.cancelled().await, CancelCause::Shutdown);
    }
}
