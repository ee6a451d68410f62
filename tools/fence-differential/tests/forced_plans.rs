//! The differential's oracle forces the planner's other choices: a statement that does nothing
//! as the superseded leader under the plan PostgreSQL chose for the fixture's ten-row tables
//! may act under another plan PostgreSQL may choose for the same statement, and is unsafe all
//! the same.
//!
//! `cargo nextest run -p fence-differential --test forced_plans` under a server.

use fence_differential::probe::{FenceBinds, Plan, Probe, Ran};
use fence_differential::schema::{Fixture, ROLE};

/// Found by the 3,000-statement run of seed 7: under the chosen plan the fenced semi-join is
/// read first and, empty, ends the statement; with nested loops only, the unfenced locking
/// sub-select of the other `IN` is run for every row of the view, and locks `q`'s rows.
const ONLY_UNDER_NESTED_LOOPS: &str = "UPDATE v_flat t0 SET status = 'u'
    WHERE id IN (SELECT id AS id FROM q t1 WHERE grp < 3 AND leader_fence($1, $2)
                  ORDER BY 1 LIMIT 5 FOR UPDATE SKIP LOCKED)
      AND (status = 'new' OR id IN (SELECT t2.id AS id FROM q t2 FOR KEY SHARE OF t2 SKIP LOCKED))
    RETURNING id";

#[tokio::test]
async fn a_forced_plan_shows_what_the_chosen_one_hides() {
    let fixture = Fixture::new().await.expect("the fixture");
    let mut probe = Probe::connect(&fixture.db, false).await.expect("the probe");
    let stale = || {
        Some(FenceBinds {
            role: ROLE.as_str(),
            token: fixture.stale,
            shard: None,
        })
    };
    let chosen = probe
        .run(ONLY_UNDER_NESTED_LOOPS, stale())
        .await
        .expect("the run");
    assert!(
        matches!(chosen, Ran::Effect(effect) if !effect.any()),
        "under the chosen plan: {chosen:?}"
    );
    let forced = probe
        .run_planned(ONLY_UNDER_NESTED_LOOPS, stale(), Plan::NestedLoops)
        .await
        .expect("the run");
    assert!(
        matches!(forced, Ran::Effect(effect) if effect.locked > 0),
        "with nested loops only: {forced:?}"
    );
}
