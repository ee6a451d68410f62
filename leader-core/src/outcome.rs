//! How a tick ended, and what RELEASE records for it.

use std::fmt;

/// How a tick ended; RELEASE records it.
///
/// | outcome | the tick ended | `last_tick_ended_at`, `last_tick_holder` | cooldown (`not_before`) |
/// |---|---|---|---|
/// | `completed` | the job returned `Ok` | stamped with now and the holder; a calendar role's `last_completed_instant` with the tick's instant | unchanged |
/// | `failed` | the job returned an error | unchanged | now + min(interval, 60 s) |
/// | `shutdown` | the runtime shut down (even if the job then panicked, or did not return within the grace period) | unchanged | unchanged: claimable at once |
/// | `lost` | RENEW found the lease taken over, released, expired or paused (even if the job then panicked) | unchanged | now + min(interval, 60 s), if the row is still this token's |
/// | `anchor_lost` | the server ended the anchor session the lease was granted under (even if the job then panicked) | unchanged | unchanged: claimable at once |
/// | `panicked` | the job panicked | unchanged | now + interval |
/// | `lost`, no RELEASE | the heartbeat timed out | unchanged | unchanged: the lease runs out after its TTL |
///
/// Only a completed tick counts as done, so a role whose ticks keep failing ages its
/// last-tick metric instead of looking healthy. The short cooldown after a failure keeps a
/// slow database from turning an hourly job into a partial tick every few seconds; the full
/// interval after a panic keeps a deterministic panic from re-running more than once an interval.
/// A shutdown says nothing about the job or the database (it is a deploy or a scale-down), so
/// it sets no cooldown: another replica may take the role at once, as it could after a crash
/// once the TTL ran out. An ended anchor says nothing about them either (a server restart, a
/// failover, a network blip or `pg_terminate_backend` ends it), and any other replica could already
/// take the lease over early, so it sets none: after a restart each role runs again as soon as a
/// replica claims it, not one cooldown later.
///
/// The same word names the outcome in RELEASE, in the `outcome` label of
/// `leader_tick_duration_seconds`, in the runtime's log line and in the docs.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Hash)]
#[non_exhaustive]
pub enum ReleaseOutcome {
    /// The work returned.
    Completed,
    /// The work was cancelled by the runtime's shutdown (even if it then panicked).
    Shutdown,
    /// The work returned an error (or did not stop within the grace period, for a cause other
    /// than a shutdown or a loss).
    Failed,
    /// The lease was lost during the tick (even if the work then panicked).
    Lost,
    /// The server ended the anchor session the lease was granted under, so the tick stopped as
    /// on a lost lease (even if the work then panicked); unlike [`Lost`](Self::Lost), no cooldown.
    AnchorLost,
    /// The work panicked.
    Panicked,
}

impl ReleaseOutcome {
    /// The name used in the RELEASE statement, logs and metric labels: `completed`, `shutdown`,
    /// `failed`, `lost`, `anchor_lost` or `panicked`.
    pub const fn as_str(self) -> &'static str {
        match self {
            ReleaseOutcome::Completed => "completed",
            ReleaseOutcome::Shutdown => "shutdown",
            ReleaseOutcome::Failed => "failed",
            ReleaseOutcome::Lost => "lost",
            ReleaseOutcome::AnchorLost => "anchor_lost",
            ReleaseOutcome::Panicked => "panicked",
        }
    }
}

impl fmt::Display for ReleaseOutcome {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.write_str(self.as_str())
    }
}
