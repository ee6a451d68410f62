//! Running one check and reporting what it found.

use std::collections::BTreeSet;
use std::fmt::Write;
use std::time::{Duration, Instant};

use stateright::{Checker, HasDiscoveries, Model};

use crate::config::Config;
use crate::model::LeaseModel;
use crate::properties::{self, REACHABLE, SAFETY};
use crate::state::State;
use crate::trace;

/// What one exhaustive check found.
#[derive(Debug)]
pub struct Report {
    /// What was checked.
    pub config: Config,
    /// Distinct states visited.
    pub unique_states: usize,
    /// States generated, repeats included.
    pub states: usize,
    /// The longest path explored, in steps.
    pub max_depth: usize,
    /// Wall-clock time of the check.
    pub elapsed: Duration,
    /// Each violated safety property, with the shortest counterexample as a readable trace.
    pub violated: Vec<(&'static str, String)>,
    /// The reachability properties no path reached.
    pub unreached: Vec<&'static str>,
    /// Whether the check stopped at the first violation of the property it was looking for
    /// (then `unreached` is meaningless).
    pub stopped_early: bool,
}

impl Report {
    /// The counterexample to `property`, if one was found.
    pub fn counterexample(&self, property: &str) -> Option<&str> {
        self.violated
            .iter()
            .find(|(name, _)| *name == property)
            .map(|(_, trace)| trace.as_str())
    }

    /// The reachability properties a check of `config` cannot reach, in [`REACHABLE`]'s order:
    /// those about pausing without a pause, the overlap of a holder whose lease a failover took
    /// away without a failover, a completed instant without a schedule, two shards' keys claimed at once without two shards with a key each, and a
    /// takeover of a dead holder without anchors or a fault that ends one (the overlap after it
    /// needs an anchor that ends while its process lives), and an abandoned tick without a
    /// freeze, a delay or a drifting clock (nothing else keeps a RENEW from being answered).
    pub fn unreachable_by_design(config: &Config) -> Vec<&'static str> {
        let anchor_outlived = config.anchors && (config.anchor_losses > 0 || config.failovers > 0);
        REACHABLE
            .into_iter()
            .filter(|&name| match name {
                properties::PAUSE_TAKES_EFFECT | properties::LED_AFTER_UNPAUSE => !config.pause,
                properties::REVOKED_HOLDER_OVERLAPS => config.failovers == 0,
                properties::DEAD_HOLDER_TAKEN_OVER => {
                    !(anchor_outlived || config.anchors && config.crashes > 0)
                }
                properties::TAKEN_OVER_HOLDER_OVERLAPS => !anchor_outlived,
                properties::ABANDONS => {
                    config.freezes == 0 && config.delays == 0 && config.clock_drift_every.is_none()
                }
                properties::INSTANT_COMPLETES => config.schedule.is_none(),
                properties::SHARDS_CLAIMED_AT_ONCE => config.shards < 2 || config.keys < 2,
                _ => false,
            })
            .collect()
    }

    /// Whether the check found what it should: with `stop_at`, a counterexample to that
    /// property; otherwise no violation, and every reachability property its faults allow.
    pub fn as_expected(&self, stop_at: Option<&str>) -> bool {
        match stop_at {
            Some(name) => self.counterexample(name).is_some(),
            None => {
                self.violated.is_empty()
                    && self.unreached == Report::unreachable_by_design(&self.config)
            }
        }
    }

    /// A summary, then every counterexample.
    pub fn render(&self) -> String {
        let shards = match self.config.shards {
            1 => String::new(),
            n => format!(", {n} shards and {} keys", self.config.keys),
        };
        let mut out = format!(
            "{}: {} replicas{shards}, horizon {}, {} distinct states ({} generated), depth {}, {:.1?}",
            self.config
                .bug
                .map_or("correct protocol".into(), |b| format!("seeded bug `{b}`")),
            self.config.replicas,
            self.config.horizon,
            self.unique_states,
            self.states,
            self.max_depth,
            self.elapsed
        );
        for name in SAFETY {
            match self.counterexample(name) {
                Some(trace) => {
                    let _ = write!(out, "\n  VIOLATED  always: {name}\n{trace}");
                }
                None if self.stopped_early => {}
                None => {
                    let _ = write!(out, "\n  holds     always: {name}");
                }
            }
        }
        if !self.stopped_early {
            for name in REACHABLE {
                let status = if self.unreached.contains(&name) {
                    "UNREACHED"
                } else {
                    "reached  "
                };
                let _ = write!(out, "\n  {status} sometimes: {name}");
            }
        }
        out
    }
}

/// Checks `config` exhaustively with breadth-first search (so counterexamples are shortest) on
/// `threads` threads. With `stop_at` set, stops at the first counterexample to that property.
///
/// # Errors
///
/// When the model cannot be built for `config` (see [`LeaseModel::new`]).
pub fn check(
    config: Config,
    threads: usize,
    stop_at: Option<&'static str>,
) -> Result<Report, String> {
    let model = LeaseModel::new(config)?;
    let builder = model.checker().threads(threads);
    let started = Instant::now();
    // Looking for a counterexample: breadth first, so it is a shortest one. Proving: depth first
    // with symmetry reduction (replicas are interchangeable), which visits fewer states.
    match stop_at {
        Some(name) => {
            let checker = builder
                .finish_when(HasDiscoveries::AnyOf(BTreeSet::from([name])))
                .spawn_bfs()
                .join();
            Ok(report(config, &checker, started.elapsed(), true))
        }
        None => {
            let checker = builder
                .symmetry_fn(State::representative)
                .spawn_dfs()
                .join();
            Ok(report(config, &checker, started.elapsed(), false))
        }
    }
}

fn report(
    config: Config,
    checker: &impl Checker<LeaseModel>,
    elapsed: Duration,
    stopped_early: bool,
) -> Report {
    let model = checker.model();
    let discoveries = checker.discoveries();
    let violated = SAFETY
        .into_iter()
        .filter_map(|name| {
            discoveries.get(name).map(|path| {
                let why = properties::explain(model, name, path.last_state());
                (name, format!("{}  => {why}\n", trace::path(model, path)))
            })
        })
        .collect();
    let unreached = REACHABLE
        .into_iter()
        .filter(|name| !discoveries.contains_key(name))
        .collect();
    Report {
        config,
        unique_states: checker.unique_state_count(),
        states: checker.state_count(),
        max_depth: checker.max_depth(),
        elapsed,
        violated,
        unreached,
        stopped_early,
    }
}
