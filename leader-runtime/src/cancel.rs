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

    /// The underlying token, to pass to code that takes a plain [`CancellationToken`].
    pub fn token(&self) -> &CancellationToken {
        &self.token
    }
}
