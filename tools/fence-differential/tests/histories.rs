//! The differential over migration histories, short, in CI: a few generated histories, each
//! applied to PostgreSQL and prepared as `leaderctl schema prepare` prepares an application's,
//! and claims over each checked with that schema and run as the superseded leader. The long run
//! is `fence-histories` (`docs/benchmarks/fence-differential-histories.md`).

use fence_differential::history_run::{Settings, run};
use fence_differential::outcome::Class;

#[tokio::test]
async fn no_claim_the_checker_accepts_over_a_migration_history_acts_for_a_superseded_leader() {
    let settings = Settings {
        histories: 6,
        claims: 30,
        seed: 7,
    };
    let outcome = run(&settings, |_| {}).await.expect("the run completes");
    let of = |class| outcome.classes.get(&class).copied().unwrap_or(0);
    assert_eq!(
        of(Class::AcceptedUnsafe),
        0,
        "{}",
        fence_differential::history_run::markdown(&outcome, &settings)
    );
    // The run proves something: claims were accepted and acted live, and unsafe ones refused.
    assert!(of(Class::AcceptedSafe) > 0 && of(Class::RefusedUnsafe) > 0);
    assert!(outcome.live_safe > 0);
}
