//! The differential run: generates statements from a fixed seed, asks the checker about each,
//! runs each on PostgreSQL as the superseded leader (and, for the report, as the live one where
//! it did nothing), classifies it, and shrinks accepted statements that acted to minimal
//! reproducers.

use std::collections::{BTreeMap, BTreeSet};
use std::time::{Duration, Instant};

use proptest::strategy::{Strategy, ValueTree};
use proptest::test_runner::{Config, RngAlgorithm, TestRng, TestRunner};

use crate::ast::Statement;
use crate::probe::{Effect, Probe, Ran};
use crate::render::{Rendered, render};
use crate::schema::{Fixture, ROLE};
use crate::tags::Tag;
use crate::{Res, generator, refusal};

/// What a statement is, by the checker's verdict and what it did as the superseded leader.
#[derive(Debug, Clone, Copy, PartialEq, Eq, PartialOrd, Ord, Hash)]
pub enum Class {
    /// Accepted, and it returned, changed or locked a row with the stale token: a hole.
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

/// What a run does.
#[derive(Debug, Clone)]
pub struct Settings {
    /// How many statements to generate.
    pub cases: usize,
    /// The seed of the generator: the same seed generates the same statements.
    pub seed: u64,
    /// Whether to run each statement that was safe as the superseded leader as the live one
    /// too (for the report only).
    pub live: bool,
    /// How many accepted-unsafe statements to shrink; one whose constructs include all of an
    /// earlier reproducer's is counted against it instead, and once these are spent the rest
    /// are listed as found.
    pub max_shrinks: usize,
    /// The most simplification steps per shrink.
    pub max_shrink_steps: u32,
}

impl Settings {
    /// `cases` statements from `seed`, run live too, up to 24 shrinks of 400 steps each.
    pub fn new(cases: usize, seed: u64) -> Settings {
        Settings {
            cases,
            seed,
            live: true,
            max_shrinks: 24,
            max_shrink_steps: 400,
        }
    }
}

/// One statement, checked and run.
#[derive(Debug, Clone)]
pub struct Case {
    pub rendered: Rendered,
    pub class: Class,
    /// The checker's first error, if it refused the statement.
    pub refusal: Option<String>,
    /// What it did as the superseded leader.
    pub stale: Ran,
    /// Whether it returned, changed or locked a row as the live leader, when run live (only a
    /// statement that was safe as the stale one is).
    pub live_acted: Option<bool>,
}

/// An accepted statement that acted as the superseded leader, shrunk to a minimal one.
#[derive(Debug, Clone)]
pub struct Reproducer {
    /// The minimal statement.
    pub sql: String,
    pub tags: BTreeSet<Tag>,
    /// What it did as the superseded leader.
    pub effect: Effect,
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

    fn add(&mut self, case: &Case) {
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
}

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
    }
}

/// Everything a run found.
#[derive(Debug, Clone)]
pub struct Outcome {
    pub settings: Settings,
    pub total: Counts,
    pub by_tag: BTreeMap<Tag, Counts>,
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
    fn alike(&mut self, tags: &BTreeSet<Tag>) -> bool {
        let mut alike = false;
        for reproducer in &mut self.reproducers {
            if reproducer.marks().is_subset(tags) {
                reproducer.alike += 1;
                alike = true;
            }
        }
        alike
    }

    /// The mean time per statement (checked, run stale and, if set, live).
    pub fn per_case(&self) -> Duration {
        self.cases_time / u32::try_from(self.settings.cases.max(1)).unwrap_or(u32::MAX)
    }
}

/// Whether the checker accepts `sql` as one claim.
pub fn accepted(sql: &str) -> Result<(), String> {
    let checked = leader_fence_check::check(sql);
    if let Some(error) = checked.errors.first() {
        return Err(error.message.clone());
    }
    if checked.statements != 1 {
        return Err(format!("{} statements", checked.statements));
    }
    Ok(())
}

/// Runs the differential test on `fixture`'s database; `progress` is called after each case
/// with the number done.
///
/// # Errors
///
/// If the generator fails or the database does (a statement PostgreSQL refuses is a
/// `pg_error`, not an error).
pub async fn run(
    fixture: &Fixture,
    settings: &Settings,
    mut progress: impl FnMut(usize),
) -> Res<Outcome> {
    let mut probe = Probe::connect(&fixture.db).await?;
    let strategy = generator::statements();
    let mut seed = [0u8; 32];
    seed[..8].copy_from_slice(&settings.seed.to_le_bytes());
    let mut runner = TestRunner::new_with_rng(
        Config::default(),
        TestRng::from_seed(RngAlgorithm::ChaCha, &seed),
    );
    let mut outcome = Outcome {
        settings: settings.clone(),
        total: Counts::default(),
        by_tag: BTreeMap::new(),
        refusals: BTreeMap::new(),
        sqlstates: BTreeMap::new(),
        reproducers: Vec::new(),
        shrinks: 0,
        unshrunk: Vec::new(),
        cases_time: Duration::ZERO,
        shrink_time: Duration::ZERO,
    };
    for done in 1..=settings.cases {
        let started = Instant::now();
        let mut tree = strategy
            .new_tree(&mut runner)
            .map_err(|reason| format!("the generator failed: {reason}"))?;
        let case = one_case(&mut probe, fixture, &tree.current(), settings.live).await?;
        outcome.total.add(&case);
        for tag in &case.rendered.tags {
            outcome.by_tag.entry(*tag).or_default().add(&case);
        }
        if let Some(message) = &case.refusal {
            let refusals = outcome
                .refusals
                .entry(refusal::reason(message))
                .or_default();
            refusals.add(&case);
        }
        if let Ran::Error { sqlstate, message } = &case.stale {
            let entry = outcome
                .sqlstates
                .entry(sqlstate.clone())
                .or_insert((0, message.clone()));
            entry.0 += 1;
        }
        outcome.cases_time += started.elapsed();
        if case.class == Class::AcceptedUnsafe {
            let started = Instant::now();
            found_unsafe(&mut probe, fixture, settings, &mut tree, case, &mut outcome).await?;
            outcome.shrink_time += started.elapsed();
        }
        progress(done);
    }
    Ok(outcome)
}

/// Files an accepted-unsafe case: against a reproducer it is like, as a new reproducer (shrunk),
/// or in the list of the rest.
async fn found_unsafe(
    probe: &mut Probe,
    fixture: &Fixture,
    settings: &Settings,
    tree: &mut impl ValueTree<Value = Statement>,
    case: Case,
    outcome: &mut Outcome,
) -> Res<()> {
    if outcome.alike(&case.rendered.tags) {
        return Ok(());
    }
    let effect = match case.stale {
        Ran::Effect(effect) => effect,
        Ran::Error { .. } => Effect::default(),
    };
    if outcome.shrinks >= settings.max_shrinks {
        if outcome.unshrunk.len() < 10 {
            outcome.unshrunk.push((case.rendered.sql, effect));
        }
        return Ok(());
    }
    outcome.shrinks += 1;
    let original = case.rendered.sql.clone();
    let (minimal, steps) = shrink(probe, fixture, tree, case, settings.max_shrink_steps).await?;
    let effect = match minimal.stale {
        Ran::Effect(effect) => effect,
        Ran::Error { .. } => effect,
    };
    // Shrinking can end where an earlier one did, from a case that did not look alike.
    if outcome.alike(&minimal.rendered.tags) {
        return Ok(());
    }
    outcome.reproducers.push(Reproducer {
        sql: minimal.rendered.sql,
        tags: minimal.rendered.tags,
        effect,
        original,
        steps,
        alike: 1,
    });
    Ok(())
}

/// Shrinks an accepted-unsafe case as proptest does: simplify while the statement stays
/// accepted-unsafe, step back (complicate) when it does not, until neither moves or `max_steps`
/// statements have been tried. Returns the last accepted-unsafe case and the steps taken.
async fn shrink(
    probe: &mut Probe,
    fixture: &Fixture,
    tree: &mut impl ValueTree<Value = Statement>,
    found: Case,
    max_steps: u32,
) -> Res<(Case, u32)> {
    let mut minimal = found;
    let mut steps = 0;
    if !tree.simplify() {
        return Ok((minimal, steps));
    }
    while steps < max_steps {
        steps += 1;
        let case = one_case(probe, fixture, &tree.current(), false).await?;
        let moved = if case.class == Class::AcceptedUnsafe {
            minimal = case;
            tree.simplify()
        } else {
            tree.complicate()
        };
        if !moved {
            break;
        }
    }
    Ok((minimal, steps))
}

/// Checks and runs one statement.
async fn one_case(
    probe: &mut Probe,
    fixture: &Fixture,
    statement: &Statement,
    live: bool,
) -> Res<Case> {
    let rendered = render(statement);
    let refusal = accepted(&rendered.sql).err();
    let fence = |token| rendered.binds_fence.then_some((ROLE.as_str(), token));
    let stale = probe.run(&rendered.sql, fence(fixture.stale)).await?;
    let class = match (&stale, refusal.is_none()) {
        (Ran::Error { .. }, _) => Class::PgError,
        (Ran::Effect(effect), true) if effect.any() => Class::AcceptedUnsafe,
        (Ran::Effect(_), true) => Class::AcceptedSafe,
        (Ran::Effect(effect), false) if effect.any() => Class::RefusedUnsafe,
        (Ran::Effect(_), false) => Class::RefusedSafe,
    };
    let live_acted = if live && matches!(class, Class::AcceptedSafe | Class::RefusedSafe) {
        match probe.run(&rendered.sql, fence(fixture.live)).await? {
            Ran::Effect(effect) => Some(effect.any()),
            Ran::Error { .. } => None,
        }
    } else {
        None
    };
    Ok(Case {
        rendered,
        class,
        refusal,
        stale,
        live_acted,
    })
}
