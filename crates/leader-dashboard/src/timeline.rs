//! A lease's history as a timeline: runs of consecutive ticks by one holder, and the gaps between
//! holders with their lengths and causes.

use chrono::{DateTime, TimeDelta, Utc};
use leader_core::history::{EndedBy, TickRecord};

/// Consecutive ticks of one lease by one holder.
#[derive(Debug, Clone, PartialEq, Eq)]
pub(crate) struct Run {
    pub holder_id: String,
    pub first_tick: i64,
    pub last_tick: i64,
    pub ticks: usize,
    pub from: DateTime<Utc>,
    /// When the run's last lease ended; `None` while it runs.
    pub to: Option<DateTime<Utc>>,
    /// How the run's last lease ended, and the outcome its holder reported.
    pub ended_by: Option<EndedBy>,
    pub outcome: Option<String>,
}

/// Between two runs: how long nobody held the lease, and why the earlier holder stopped.
#[derive(Debug, Clone, PartialEq, Eq)]
pub(crate) struct Gap {
    pub length: TimeDelta,
    pub cause: String,
    /// Whether the earlier holder's lease ended otherwise than by the release of a completed
    /// tick: a failover, a pause, a failed tick. Routine handovers are not.
    pub notable: bool,
}

/// The timeline's entries, oldest first.
#[derive(Debug, Clone, PartialEq, Eq)]
pub(crate) enum Entry {
    Run(Run),
    Gap(Gap),
}

/// What ended a lease, in words.
pub(crate) fn cause(ended_by: Option<EndedBy>, outcome: Option<&str>) -> String {
    let end = match ended_by {
        Some(EndedBy::Release) => "released",
        Some(EndedBy::Expiry) => {
            "its lease ran out (no release: the holder crashed or was cut off)"
        }
        Some(EndedBy::Takeover) => {
            "taken over: its holder's anchor session had ended (a dead holder)"
        }
        Some(EndedBy::Pause) => "paused by an operator",
        Some(_) => "ended",
        None => "not ended",
    };
    match outcome {
        Some(outcome) => format!("{end}; the tick: {outcome}"),
        None if ended_by.is_some() && ended_by != Some(EndedBy::Release) => {
            format!("{end}; the holder never reported the tick")
        }
        None => end.to_owned(),
    }
}

/// The timeline of one lease's `ticks` (oldest first).
pub(crate) fn timeline(ticks: &[&TickRecord]) -> Vec<Entry> {
    let mut runs: Vec<Run> = Vec::new();
    for tick in ticks {
        let same = runs.last().is_some_and(|run| {
            run.holder_id == tick.holder_id && run.last_tick + 1 == tick.tick_number
        });
        if same {
            let run = runs.last_mut().expect("checked");
            run.last_tick = tick.tick_number;
            run.ticks += 1;
            run.to = tick.ended_at;
            run.ended_by = tick.ended_by;
            run.outcome.clone_from(&tick.outcome);
        } else {
            runs.push(Run {
                holder_id: tick.holder_id.clone(),
                first_tick: tick.tick_number,
                last_tick: tick.tick_number,
                ticks: 1,
                from: tick.acquired_at,
                to: tick.ended_at,
                ended_by: tick.ended_by,
                outcome: tick.outcome.clone(),
            });
        }
    }
    let mut entries = Vec::with_capacity(runs.len() * 2);
    for run in runs {
        if let Some(Entry::Run(previous)) = entries.last() {
            let previous: &Run = previous;
            let ended = previous.to.unwrap_or(previous.from);
            entries.push(Entry::Gap(Gap {
                length: run.from - ended,
                cause: cause(previous.ended_by, previous.outcome.as_deref()),
                notable: previous.ended_by != Some(EndedBy::Release)
                    || previous.outcome.as_deref() != Some("completed"),
            }));
        }
        entries.push(Entry::Run(run));
    }
    entries
}

#[cfg(test)]
mod tests {
    use super::*;

    fn tick(
        n: i64,
        holder: &str,
        from_s: i64,
        to_s: Option<i64>,
        by: Option<EndedBy>,
    ) -> TickRecord {
        let t0 = DateTime::parse_from_rfc3339("2026-12-07T12:00:00Z")
            .unwrap()
            .to_utc();
        let mut t = TickRecord::forge(
            "billing",
            0,
            n,
            holder,
            1000 + n,
            t0 + TimeDelta::seconds(from_s),
        );
        t.ended_at = to_s.map(|s| t0 + TimeDelta::seconds(s));
        t.ended_by = by;
        t.outcome = (by == Some(EndedBy::Release)).then(|| "completed".to_owned());
        t
    }

    #[test]
    fn runs_of_one_holder_and_the_gaps_between_holders_with_their_causes() {
        let ticks = [
            tick(1, "a", 0, Some(1), Some(EndedBy::Release)),
            tick(2, "a", 5, Some(6), Some(EndedBy::Release)),
            tick(3, "a", 10, Some(13), Some(EndedBy::Takeover)),
            tick(4, "b", 13, Some(14), Some(EndedBy::Release)),
            tick(5, "b", 20, None, None),
        ];
        let refs: Vec<&TickRecord> = ticks.iter().collect();
        let entries = timeline(&refs);
        assert_eq!(entries.len(), 3, "{entries:?}");
        let Entry::Run(a) = &entries[0] else { panic!() };
        assert_eq!(
            (a.holder_id.as_str(), a.first_tick, a.last_tick, a.ticks),
            ("a", 1, 3, 3)
        );
        let Entry::Gap(gap) = &entries[1] else {
            panic!()
        };
        assert_eq!(gap.length, TimeDelta::zero());
        assert!(gap.cause.starts_with("taken over"), "{}", gap.cause);
        assert!(gap.notable, "a takeover is a failover");
        let Entry::Run(b) = &entries[2] else { panic!() };
        assert_eq!((b.holder_id.as_str(), b.ticks, b.to), ("b", 2, None));
    }

    #[test]
    fn a_tick_missing_from_the_ring_starts_a_new_run() {
        let ticks = [
            tick(1, "a", 0, Some(1), Some(EndedBy::Expiry)),
            tick(3, "a", 30, Some(31), Some(EndedBy::Release)),
        ];
        let refs: Vec<&TickRecord> = ticks.iter().collect();
        let entries = timeline(&refs);
        assert_eq!(entries.len(), 3);
        let Entry::Gap(gap) = &entries[1] else {
            panic!()
        };
        assert_eq!(gap.length, TimeDelta::seconds(29));
        assert!(gap.cause.contains("ran out"), "{}", gap.cause);
        assert!(gap.cause.contains("never reported"), "{}", gap.cause);
    }
}
