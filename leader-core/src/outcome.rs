//! How a tick ended, and what RELEASE records for it.

use std::fmt;

/// How a tick ended; RELEASE records it.
///
/// | outcome | `last_tick_ended_at`, `last_tick_holder` | `not_before` (cooldown) |
/// |---|---|---|
/// | `Completed` | stamped with now and the holder | unchanged |
/// | `Interrupted` (shutdown) | unchanged | now + min(interval, 60 s) |
/// | `Lost` | unchanged | now + min(interval, 60 s) |
/// | `Panicked` | unchanged | now + interval |
///
/// Only a completed tick counts as done, so a role whose ticks keep failing ages its
/// last-tick metric instead of looking healthy. The short cooldown after an interruption keeps a
/// slow database from turning an hourly job into a partial tick every few seconds; the full
/// interval after a panic keeps a deterministic panic from re-running more than once an interval.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Hash)]
pub enum ReleaseOutcome {
    /// The work returned.
    Completed,
    /// The work was cancelled by shutdown (even if it then panicked).
    Interrupted,
    /// The lease was lost during the tick (even if the work then panicked).
    Lost,
    /// The work panicked.
    Panicked,
}

impl ReleaseOutcome {
    /// The name used in the RELEASE statement, logs and metric labels.
    pub const fn as_str(self) -> &'static str {
        match self {
            ReleaseOutcome::Completed => "completed",
            ReleaseOutcome::Interrupted => "interrupted",
            ReleaseOutcome::Lost => "lost",
            ReleaseOutcome::Panicked => "panicked",
        }
    }
}

impl fmt::Display for ReleaseOutcome {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.write_str(self.as_str())
    }
}
