//! Cancellation of a tick, with the reason it was cancelled.

use std::fmt;
use std::sync::{Arc, OnceLock};

use leader_core::lease::LossReason;
use tokio_util::sync::CancellationToken;

/// Why a tick was cancelled.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Hash)]
pub enum CancelCause {
    /// RENEW found the lease gone: taken over, released or expired.
    LeaseLost(LossReason),
    /// An operator paused the role (`leader_pause`).
    Paused,
    /// No RENEW was acknowledged for `abandon_after`: the leader gave up its tick and sends
    /// nothing more for it; the lease runs out on its own.
    HeartbeatTimeout,
    /// The runtime is shutting down.
    Shutdown,
}

impl CancelCause {
    /// The cause for a RENEW that found the lease gone for `reason`.
    pub fn from_loss(reason: LossReason) -> CancelCause {
        match reason {
            LossReason::Paused => CancelCause::Paused,
            other => CancelCause::LeaseLost(other),
        }
    }

    /// True for every cause except shutdown: the lease is no longer this tick's.
    pub fn is_loss(self) -> bool {
        !matches!(self, CancelCause::Shutdown)
    }

    /// The name used in logs and as the `reason` label of the lease-loss counter.
    pub fn as_str(self) -> &'static str {
        match self {
            CancelCause::LeaseLost(reason) => reason.as_str(),
            CancelCause::Paused => "paused",
            CancelCause::HeartbeatTimeout => "heartbeat_timeout",
            CancelCause::Shutdown => "shutdown",
        }
    }
}

impl fmt::Display for CancelCause {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.write_str(self.as_str())
    }
}

/// A [`CancellationToken`] that remembers why it was cancelled.
///
/// The first cause wins: a tick lost to a takeover and then interrupted by shutdown reports the
/// loss. Clones share the token and the cause.
///
/// # Invariant
///
/// The token is cancelled only by [`TickCancellation::cancel`], after it records the cause, so
/// a cancelled `TickCancellation` always has a cause. [`TickCancellation::token`] hands out a
/// child token: cancelling it stops whatever holds it and nothing else.
#[derive(Debug, Clone, Default)]
pub struct TickCancellation {
    token: CancellationToken,
    cause: Arc<OnceLock<CancelCause>>,
}

impl TickCancellation {
    /// A token that is not cancelled.
    pub fn new() -> TickCancellation {
        TickCancellation::default()
    }

    /// Cancels with `cause`, unless already cancelled. Returns true if this call set the cause.
    pub fn cancel(&self, cause: CancelCause) -> bool {
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
    /// use leader_runtime::{CancelCause, TickCancellation};
    ///
    /// let tick = TickCancellation::new();
    /// let helper = tick.token();
    /// helper.cancel();
    /// assert!(!tick.is_cancelled());
    ///
    /// let helper = tick.token();
    /// tick.cancel(CancelCause::Shutdown);
    /// assert!(helper.is_cancelled());
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
