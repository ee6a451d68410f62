//! What a differential run found: each statement's class, counts by class overall, by
//! construct tag and by refusal reason, PostgreSQL's refusals, and the reproducers of the
//! accepted statements that acted as the superseded leader.

use std::collections::{BTreeMap, BTreeSet};
use std::time::Duration;

use crate::probe::{Effect, Plan, Ran};
use crate::refusal;
use crate::runner::{Case, Settings};
use crate::tags::Tag;

/// What a statement is, by the checker's verdict and what it did as the superseded leader.
///
/// A statement *acts* when it changes or locks a row, or, if it is a claim
/// ([`crate::render::Rendered::claim`]), returns one; *unsafe* means it acted with the stale
/// token.
#[derive(Debug, Clone, Copy, PartialEq, Eq, PartialOrd, Ord, Hash)]
pub enum Class {
    /// Accepted, and it acted with the stale token: a hole.
    AcceptedUnsafe,
    /// Accepted, and it did nothing with the stale token.
    AcceptedSafe,
    /// Refused, and it acted with the stale token: a refusal that stops a real bug.
    RefusedUnsafe,
    /// Refused, though it did nothing with the stale token: a false rejection.
    RefusedSafe,
    /// PostgreSQL refused it as the stale leader; out of the safety figures.
    PgError,
}

impl Class {
    /// Every class, in report order.
    pub const ALL: [Class; 5] = [
        Class::AcceptedUnsafe,
        Class::AcceptedSafe,
        Class::RefusedUnsafe,
        Class::RefusedSafe,
        Class::PgError,
    ];

    /// The class as the report writes it.
    pub const fn name(self) -> &'static str {
        match self {
            Class::AcceptedUnsafe => "accepted_unsafe",
            Class::AcceptedSafe => "accepted_safe",
            Class::RefusedUnsafe => "refused_unsafe",
            Class::RefusedSafe => "refused_safe",
            Class::PgError => "pg_error",
        }
    }

    fn index(self) -> usize {
        self as usize
    }
}

/// An accepted statement that acted as the superseded leader, shrunk to a minimal one.
#[derive(Debug, Clone)]
pub struct Reproducer {
    /// The minimal statement.
    pub sql: String,
    pub tags: BTreeSet<Tag>,
    /// What it did as the superseded leader.
    pub effect: Effect,
    /// The forced plan it did that under, where it did nothing under the chosen one.
    pub acted_under: Option<Plan>,
    /// The statement as first generated.
    pub original: String,
    /// How many shrink steps ran.
    pub steps: u32,
    /// How many accepted-unsafe statements of the run have all of its [`Reproducer::marks`]
    /// (itself included).
    pub alike: usize,
}

impl Reproducer {
    /// The constructs that tell its hole apart: its tags but those of [`Tag::is_context`] (all
    /// of them if it has no other).
    pub fn marks(&self) -> BTreeSet<Tag> {
        let marks: BTreeSet<Tag> = self
            .tags
            .iter()
            .copied()
            .filter(|tag| !tag.is_context())
            .collect();
        if marks.is_empty() {
            self.tags.clone()
        } else {
            marks
        }
    }
}

/// Counts of one group of statements, by class.
#[derive(Debug, Clone, Copy, Default, PartialEq, Eq)]
pub struct Counts {
    pub by_class: [usize; 5],
    /// Of the refused-safe ones, how many acted as the live leader: a rejected claim that does
    /// something, not an inert one.
    pub refused_safe_live_acting: usize,
    /// Of the accepted-safe ones, how many acted as the live leader.
    pub accepted_safe_live_acting: usize,
}

impl Counts {
    /// How many statements.
    pub fn total(&self) -> usize {
        self.by_class.iter().sum()
    }

    /// How many of `class`.
    pub fn of(&self, class: Class) -> usize {
        self.by_class[class.index()]
    }

    /// How many did nothing as the superseded leader (accepted or not).
    pub fn safe(&self) -> usize {
        self.of(Class::AcceptedSafe) + self.of(Class::RefusedSafe)
    }

    /// The share of the safe ones the checker refuses, if any were safe.
    pub fn false_rejection(&self) -> Option<f64> {
        (self.safe() > 0).then(|| self.of(Class::RefusedSafe) as f64 / self.safe() as f64)
    }

    pub(crate) fn add(&mut self, case: &Case) {
        self.by_class[case.class.index()] += 1;
        if case.live_acted == Some(true) {
            match case.class {
                Class::RefusedSafe => self.refused_safe_live_acting += 1,
                Class::AcceptedSafe => self.accepted_safe_live_acting += 1,
                _ => {}
            }
        }
    }
}

/// The refused statements of one reason.
#[derive(Debug, Clone, Default)]
pub struct Refusals {
    pub counts: Counts,
    /// The shortest of them that did nothing as the superseded leader and acted as the live one:
    /// a claim someone could want to write, refused.
    pub shortest_false: Option<String>,
    /// The first [`SAMPLES`] of them, as they came: for `--false-rejections`.
    pub false_samples: Vec<String>,
}

/// How many false rejections of each reason are kept as samples.
pub const SAMPLES: usize = 12;

impl Refusals {
    fn add(&mut self, case: &Case) {
        self.counts.add(case);
        let wanted = case.class == Class::RefusedSafe && case.live_acted == Some(true);
        let shorter = self
            .shortest_false
            .as_ref()
            .is_none_or(|shortest| case.rendered.sql.len() < shortest.len());
        if wanted && shorter {
            self.shortest_false = Some(case.rendered.sql.clone());
        }
        if wanted && self.false_samples.len() < SAMPLES {
            self.false_samples.push(case.rendered.sql.clone());
        }
    }
}

/// Everything a run found.
#[derive(Debug, Clone)]
pub struct Outcome {
    pub settings: Settings,
    pub total: Counts,
    pub by_tag: BTreeMap<Tag, Counts>,
    /// The statements that only read (not claims) and returned rows as the superseded leader.
    pub reads_returning_rows: Counts,
    /// The statements that did nothing as the superseded leader under the plan PostgreSQL
    /// chose and acted under a forced one, by the first such plan: unsafe all the same.
    pub acted_under: BTreeMap<Plan, Counts>,
    /// The refused statements by the reason of the checker's first error ([`refusal::reason`]).
    pub refusals: BTreeMap<String, Refusals>,
    /// PostgreSQL's refusals: SQLSTATE → (how many, one message).
    pub sqlstates: BTreeMap<String, (usize, String)>,
    pub reproducers: Vec<Reproducer>,
    /// How many shrinks ran.
    pub shrinks: usize,
    /// Accepted-unsafe statements neither shrunk nor like a reproducer (the first few).
    pub unshrunk: Vec<(String, Effect)>,
    /// Time spent generating, checking and running the cases, shrinking aside.
    pub cases_time: Duration,
    pub shrink_time: Duration,
}

impl Outcome {
    /// Nothing found yet, for a run of `settings`.
    pub fn new(settings: Settings) -> Outcome {
        Outcome {
            settings,
            total: Counts::default(),
            by_tag: BTreeMap::new(),
            reads_returning_rows: Counts::default(),
            acted_under: BTreeMap::new(),
            refusals: BTreeMap::new(),
            sqlstates: BTreeMap::new(),
            reproducers: Vec::new(),
            shrinks: 0,
            unshrunk: Vec::new(),
            cases_time: Duration::ZERO,
            shrink_time: Duration::ZERO,
        }
    }

    /// Counts one case: in the totals, under each of its tags, under the reason of its refusal,
    /// under PostgreSQL's SQLSTATE.
    pub fn record(&mut self, case: &Case) {
        self.total.add(case);
        for tag in &case.rendered.tags {
            self.by_tag.entry(*tag).or_default().add(case);
        }
        if let Ran::Effect(effect) = &case.stale
            && !case.rendered.claim
            && effect.returned > 0
        {
            self.reads_returning_rows.add(case);
        }
        if let Some(plan) = case.acted_under {
            self.acted_under.entry(plan).or_default().add(case);
        }
        if let Some(message) = &case.refusal {
            let refusals = self.refusals.entry(refusal::reason(message)).or_default();
            refusals.add(case);
        }
        if let Ran::Error { sqlstate, message } = &case.stale {
            let entry = self
                .sqlstates
                .entry(sqlstate.clone())
                .or_insert((0, message.clone()));
            entry.0 += 1;
        }
    }

    /// The tags no statement used.
    pub fn unseen_tags(&self) -> Vec<Tag> {
        Tag::ALL
            .iter()
            .copied()
            .filter(|tag| !self.by_tag.contains_key(tag))
            .collect()
    }

    /// Counts a statement with `tags` against every reproducer whose marks it has; returns
    /// whether there was one.
    pub(crate) fn alike(&mut self, tags: &BTreeSet<Tag>) -> bool {
        let mut alike = false;
        for reproducer in &mut self.reproducers {
            if reproducer.marks().is_subset(tags) {
                reproducer.alike += 1;
                alike = true;
            }
        }
        alike
    }

    /// The totals as a run of the chosen plan alone would count them: a statement that acted
    /// only under a forced plan counted as safe.
    pub fn chosen_plan_only(&self) -> Counts {
        let mut counts = self.total;
        for forced in self.acted_under.values() {
            for (unsafe_class, safe_class) in [
                (Class::AcceptedUnsafe, Class::AcceptedSafe),
                (Class::RefusedUnsafe, Class::RefusedSafe),
            ] {
                counts.by_class[unsafe_class.index()] -= forced.of(unsafe_class);
                counts.by_class[safe_class.index()] += forced.of(unsafe_class);
            }
        }
        counts
    }

    /// The mean time per statement (checked, run stale and, if set, live).
    pub fn per_case(&self) -> Duration {
        self.cases_time / u32::try_from(self.settings.cases.max(1)).unwrap_or(u32::MAX)
    }
}
