//! The differential run: generates statements from a fixed seed, asks the checker about each,
//! runs each on PostgreSQL as the superseded leader (and, for the report, as the live one where
//! it did nothing), classifies it, and shrinks accepted statements that acted to minimal
//! reproducers. What it finds is an [`Outcome`].

use std::time::Instant;

use proptest::strategy::{Strategy, ValueTree};
use proptest::test_runner::{Config, RngAlgorithm, TestRng, TestRunner};

use crate::ast::Statement;
use crate::outcome::{Class, Outcome, Reproducer};
use crate::probe::{Effect, FenceBinds, Plan, Probe, Ran};
use crate::render::{Rendered, render, render_sharded};
use crate::schema::{Fixture, ROLE, SHARDS};
use crate::{Res, generator};

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
    /// Whether rows a read returns count as acting. The checker's contract says no: a statement
    /// that only reads (no change, lock or call) is not a claim, and may return rows to a
    /// superseded leader; a claim may not.
    pub reads_are_claims: bool,
    /// Whether the statements are a shard's claims ([`render_sharded`]) run on a
    /// [`Fixture::sharded`]: then a statement acts unsafely also if it acts with another shard's
    /// live token bound as this shard's.
    pub sharded: bool,
    /// Whether the statements run with `enable_seqscan = off`, so that PostgreSQL reads the
    /// fixture's ten-row tables through their indexes as it reads a large table: index
    /// conditions, their keys evaluated when a scan is rescanned, and joins that rescan an index
    /// scan are then exercised, which sequential scans of tiny tables never are.
    pub index_scans: bool,
    /// Whether a statement that did nothing as the superseded leader under the plan PostgreSQL
    /// chose is run again under each of [`Plan::FORCED`], acting under any of them being
    /// acting. Off, a run measures the chosen plan alone (the figures before 2026-12-07).
    pub forced_plans: bool,
}

impl Settings {
    /// `cases` statements from `seed`, run live too, up to 24 shrinks of 400 steps each, reads
    /// not claims.
    pub fn new(cases: usize, seed: u64) -> Settings {
        Settings {
            cases,
            seed,
            live: true,
            max_shrinks: 24,
            max_shrink_steps: 400,
            reads_are_claims: false,
            sharded: false,
            index_scans: false,
            forced_plans: true,
        }
    }

    /// [`Settings::new`], for a shard's claims on a [`Fixture::sharded`].
    pub fn sharded(cases: usize, seed: u64) -> Settings {
        Settings {
            sharded: true,
            ..Settings::new(cases, seed)
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
    /// The forced plan under which it acted as the superseded leader, where it did nothing
    /// under the chosen one.
    pub acted_under: Option<Plan>,
}

/// Whether the checker accepts `sql` as one claim, given the fixture's schema as `#[fenced]` is
/// given an application's prepared one.
pub fn accepted(sql: &str, schema: &leader_fence_check::Schema) -> Result<(), String> {
    let hints = leader_fence_check::Hints::default().with_schema(schema);
    let checked = leader_fence_check::check_with(sql, &hints);
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
    let mut probe = Probe::connect(&fixture.db, settings.index_scans).await?;
    let strategy = generator::statements();
    let mut seed = [0u8; 32];
    seed[..8].copy_from_slice(&settings.seed.to_le_bytes());
    let mut runner = TestRunner::new_with_rng(
        Config::default(),
        TestRng::from_seed(RngAlgorithm::ChaCha, &seed),
    );
    let mut outcome = Outcome::new(settings.clone());
    for done in 1..=settings.cases {
        let started = Instant::now();
        let mut tree = strategy
            .new_tree(&mut runner)
            .map_err(|reason| format!("the generator failed: {reason}"))?;
        let case = one_case(
            &mut probe,
            fixture,
            settings,
            &tree.current(),
            settings.live,
        )
        .await?;
        outcome.record(&case);
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
    let (minimal, steps) = shrink(probe, fixture, settings, tree, case).await?;
    let effect = match minimal.stale {
        Ran::Effect(effect) => effect,
        Ran::Error { .. } => effect,
    };
    let acted_under = minimal.acted_under;
    // Shrinking can end where an earlier one did, from a case that did not look alike.
    if outcome.alike(&minimal.rendered.tags) {
        return Ok(());
    }
    outcome.reproducers.push(Reproducer {
        sql: minimal.rendered.sql,
        tags: minimal.rendered.tags,
        effect,
        acted_under,
        original,
        steps,
        alike: 1,
    });
    Ok(())
}

/// Shrinks an accepted-unsafe case as proptest does: simplify while the statement stays
/// accepted-unsafe, step back (complicate) when it does not, until neither moves or
/// `max_shrink_steps` statements have been tried. Returns the last accepted-unsafe case and the
/// steps taken.
async fn shrink(
    probe: &mut Probe,
    fixture: &Fixture,
    settings: &Settings,
    tree: &mut impl ValueTree<Value = Statement>,
    found: Case,
) -> Res<(Case, u32)> {
    let mut minimal = found;
    let mut steps = 0;
    if !tree.simplify() {
        return Ok((minimal, steps));
    }
    while steps < settings.max_shrink_steps {
        steps += 1;
        let case = one_case(probe, fixture, settings, &tree.current(), false).await?;
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

/// Checks and runs one statement (as the live leader too if `live` and it was safe).
async fn one_case(
    probe: &mut Probe,
    fixture: &Fixture,
    settings: &Settings,
    statement: &Statement,
    live: bool,
) -> Res<Case> {
    let rendered = if settings.sharded {
        render_sharded(statement)
    } else {
        render(statement)
    };
    let refusal = accepted(&rendered.sql, &fixture.schema).err();
    let shard = settings.sharded.then_some((0, SHARDS as i32));
    let fence = |token| {
        rendered.binds_fence.then_some(FenceBinds {
            role: ROLE.as_str(),
            token,
            shard,
        })
    };
    let mut stale = probe.run(&rendered.sql, fence(fixture.stale)).await?;
    let rows_count = rendered.claim || settings.reads_are_claims;
    let acted = |effect: &Effect| effect.changed_or_locked() || (rows_count && effect.returned > 0);
    // Another shard's live token, bound as this shard's: it must prove nothing either. Its
    // effect stands for the stale run's when it acted.
    if let (Some(other), Ran::Effect(effect)) = (fixture.other_shard, &stale)
        && !acted(effect)
    {
        let crossed = probe.run(&rendered.sql, fence(other)).await?;
        if matches!(&crossed, Ran::Effect(effect) if acted(effect)) {
            stale = crossed;
        }
    }
    // Two shards' live leaders, one after the other: a row both act on is claimed twice.
    if let (true, Some(other), Ran::Effect(effect)) =
        (settings.sharded, fixture.other_shard, &stale)
        && rendered.binds_fence
        && !acted(effect)
    {
        let binds = |token, index| FenceBinds {
            role: ROLE.as_str(),
            token,
            shard: Some((index, SHARDS as i32)),
        };
        let mine = probe.touched(&rendered.sql, binds(fixture.live, 0)).await?;
        let theirs = probe.touched(&rendered.sql, binds(other, 1)).await?;
        if let (Some(mine), Some(theirs)) = (mine, theirs) {
            let shared = mine.intersection(&theirs).count() as u64;
            if shared > 0 {
                stale = Ran::Effect(Effect { shared, ..*effect });
            }
        }
    }
    // The contract holds for every plan: acting under a forced one is acting.
    let mut acted_under = None;
    if settings.forced_plans && matches!(&stale, Ran::Effect(effect) if !acted(effect)) {
        for plan in Plan::FORCED {
            let forced = probe
                .run_planned(&rendered.sql, fence(fixture.stale), plan)
                .await?;
            if matches!(&forced, Ran::Effect(effect) if acted(effect)) {
                stale = forced;
                acted_under = Some(plan);
                break;
            }
        }
    }
    let class = match (&stale, refusal.is_none()) {
        (Ran::Error { .. }, _) => Class::PgError,
        (Ran::Effect(effect), true) if acted(effect) => Class::AcceptedUnsafe,
        (Ran::Effect(_), true) => Class::AcceptedSafe,
        (Ran::Effect(effect), false) if acted(effect) => Class::RefusedUnsafe,
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
        acted_under,
    })
}
