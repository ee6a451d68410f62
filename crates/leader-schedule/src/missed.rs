//! What a calendar schedule does with instants that passed while no tick ran.

use std::fmt;
use std::str::FromStr;

use crate::ScheduleError;

/// What happens to scheduled instants that passed without a completed tick (every replica down,
/// the role paused, a tick longer than the gap between instants).
#[derive(Debug, Clone, Copy, Default, PartialEq, Eq, Hash)]
#[non_exhaustive]
pub enum Missed {
    /// Run the latest missed instant once and skip the older ones (the runtime logs how many and
    /// counts them in `leader_schedule_skipped_instants_total`). The default: a report or a sync
    /// that only needs to be current.
    #[default]
    Latest,
    /// Run every missed instant, oldest first, one tick each: a billing job that must not skip a
    /// day.
    Each,
}

impl Missed {
    /// The policy's name: `latest` or `each` (as `#[leader_role(missed = "…")]` takes it).
    pub const fn as_str(self) -> &'static str {
        match self {
            Missed::Latest => "latest",
            Missed::Each => "each",
        }
    }
}

impl fmt::Display for Missed {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.write_str(self.as_str())
    }
}

impl FromStr for Missed {
    type Err = ScheduleError;

    fn from_str(text: &str) -> Result<Missed, ScheduleError> {
        match text {
            "latest" => Ok(Missed::Latest),
            "each" => Ok(Missed::Each),
            _ => Err(ScheduleError::Missed {
                policy: text.to_owned(),
            }),
        }
    }
}
