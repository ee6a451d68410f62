//! The correct protocol satisfies every property under each fault scenario, and reaches every
//! state a property needs (so no `always` holds vacuously); each seeded bug breaks its property.

use leader_model::properties::{
    ABANDONS, DEAD_HOLDER_TAKEN_OVER, INSTANT_COMPLETES, LED_AFTER_UNPAUSE, PAUSE_TAKES_EFFECT,
    REVOKED_HOLDER_OVERLAPS, SHARDS_CLAIMED_AT_ONCE, TAKEN_OVER_HOLDER_OVERLAPS,
};
use leader_model::{Bug, Config, Report, Timings, check};

fn proves(config: Config) -> Report {
    let report = check(config, 1, None).expect("the model builds");
    println!("{}", report.render());
    assert!(
        report.violated.is_empty(),
        "the correct protocol violates a property:\n{}",
        report.render()
    );
    // Pausing needs a pause; a holder that may work on after its lease was taken away needs a
    // failover (a pause's floor keeps ACQUIRE off until it has stopped), or with anchors a
    // takeover after its anchor ended while it lived; abandoning needs a RENEW left unanswered.
    let mut expected_unreached = Vec::new();
    if !config.pause {
        expected_unreached.extend([PAUSE_TAKES_EFFECT, LED_AFTER_UNPAUSE]);
    }
    if config.freezes == 0 && config.delays == 0 && config.clock_drift_every.is_none() {
        expected_unreached.push(ABANDONS);
    }
    let anchor_outlived = config.anchors && (config.anchor_losses > 0 || config.failovers > 0);
    if config.failovers == 0 {
        expected_unreached.push(REVOKED_HOLDER_OVERLAPS);
    }
    if config.schedule.is_none() {
        expected_unreached.push(INSTANT_COMPLETES);
    }
    if config.shards < 2 || config.keys < 2 {
        expected_unreached.push(SHARDS_CLAIMED_AT_ONCE);
    }
    if !(anchor_outlived || config.anchors && config.crashes > 0) {
        expected_unreached.push(DEAD_HOLDER_TAKEN_OVER);
    }
    if !anchor_outlived {
        expected_unreached.push(TAKEN_OVER_HOLDER_OVERLAPS);
    }
    assert_eq!(report.unreached, expected_unreached, "{}", report.render());
    report
}

#[test]
fn two_replicas_under_drifting_clocks_freeze_and_two_delays() {
    proves(Config::clocks_and_delays(2));
}

/// Subsumes `Config::operator_and_failover(2)`: slow clocks add behaviours, take none away.
#[test]
fn two_replicas_under_every_fault_at_once() {
    proves(Config::all_faults(2));
}

#[test]
fn two_replicas_with_late_renew_answers() {
    proves(Config::late_answers(2));
}

/// A tick may also end by the runtime's shutdown, released with no cooldown: still one holder at
/// a time and nothing stamped that did not complete.
#[test]
fn two_replicas_with_shutdown_releases_under_pause_failover_freeze_and_a_delay() {
    let mut config = Config::operator_and_failover(2);
    config.shutdowns = 1;
    proves(config);
}

#[test]
fn three_replicas_under_pause_failover_freeze_and_a_delay() {
    let mut config = Config::operator_and_failover(3);
    config.horizon = 5;
    proves(config);
}

#[test]
fn three_replicas_under_drifting_clocks_freeze_and_two_delays() {
    let mut config = Config::clocks_and_delays(3);
    config.horizon = 5;
    proves(config);
}

/// A calendar role, whose ACQUIREs ask for any instant up to one period ahead: each instant is
/// completed at most once and none is granted early, over a pause, a shutdown release, a freeze
/// and a delay.
#[test]
fn two_replicas_on_a_calendar_schedule_under_pause_shutdown_freeze_and_a_delay() {
    proves(Config::scheduled(2));
}

/// A role in two shards, each its own row with its own tokens: no key is claimed by two holders
/// at once, across a failover that loses the last grant of either shard (and the RENEWs of the
/// other since) and a frozen replica.
#[test]
fn two_replicas_over_two_shards_under_failover_and_freeze() {
    proves(Config::sharded(2));
}

/// A claim (or any other statement) delayed past its lease, over two shards.
#[test]
fn two_replicas_over_two_shards_with_a_delayed_statement() {
    let mut config = Config::sharded(2);
    config.failovers = 0;
    config.freezes = 0;
    config.delays = 1;
    proves(config);
}

/// A pause of the role pauses every shard, each with its own floor.
#[test]
fn two_replicas_over_two_shards_under_pause_and_freeze() {
    let mut config = Config::sharded(2);
    config.failovers = 0;
    config.pause = true;
    proves(config);
}

/// Dead holders (issue 33): a crash ends a process and its anchor at once, an anchor ends while
/// its process lives on and is told late, and ACQUIRE takes over a live lease whose holder's
/// anchor has ended; with a frozen replica and a delayed (or lost) statement, so that a taken-over
/// holder's claims and RENEWs may land late.
#[test]
fn two_replicas_with_dead_holders_under_crash_anchor_loss_freeze_and_a_delay() {
    proves(Config::dead_holders(2));
}

/// A failover ends every anchor, and may lose a takeover (the lease taken over is then live
/// again on the promoted server).
#[test]
fn two_replicas_with_dead_holders_across_a_failover() {
    let mut config = Config::dead_holders(2);
    config.failovers = 1;
    config.delays = 0;
    proves(config);
}

#[test]
fn three_replicas_with_dead_holders_under_crash_anchor_loss_and_freeze() {
    let mut config = Config::dead_holders(3);
    config.horizon = 5;
    config.delays = 0;
    proves(config);
}

/// Each shard row records its holder's anchor and is taken over on its own.
#[test]
fn two_replicas_with_dead_holders_over_two_shards() {
    let mut config = Config::sharded(2);
    config.failovers = 0;
    config.freezes = 0;
    config.anchors = true;
    config.crashes = 1;
    config.anchor_losses = 1;
    proves(config);
}

fn breaks(bug: Bug) {
    let report = check(bug.scenario(), 1, Some(bug.breaks())).expect("the model builds");
    let trace = report.counterexample(bug.breaks()).unwrap_or_else(|| {
        panic!(
            "seeded bug `{bug}` did not break `{}`:\n{}",
            bug.breaks(),
            report.render()
        )
    });
    println!("{}", report.render());
    assert!(trace.contains("  1. "), "a readable trace:\n{trace}");
}

#[test]
fn renew_without_token_check_is_caught() {
    breaks(Bug::RenewWithoutTokenCheck);
}

#[test]
fn fence_without_expiry_is_caught() {
    breaks(Bug::FenceWithoutExpiry);
}

#[test]
fn abandon_measured_from_the_answer_is_caught() {
    breaks(Bug::AbandonFromAnswer);
}

#[test]
fn release_stamping_a_panicked_tick_is_caught() {
    breaks(Bug::ReleaseStampsPanicked);
}

#[test]
fn acquire_ignoring_not_before_is_caught() {
    breaks(Bug::AcquireIgnoresNotBefore);
}

#[test]
fn token_plus_one_across_a_lossy_failover_is_caught() {
    breaks(Bug::TokenPlusOne);
}

#[test]
fn abandon_plus_timeout_not_below_ttl_is_caught() {
    breaks(Bug::AbandonPlusTimeoutNotBelowTtl);
}

#[test]
fn pause_without_floor_is_caught() {
    breaks(Bug::PauseWithoutFloor);
}

#[test]
fn the_codes_timing_rule_accepts_the_checked_timings_and_refuses_the_seeded_ones() {
    Timings::CHECKED
        .as_code_timings()
        .expect("the checked timings pass leader-core's validation");
    let broken = Bug::AbandonPlusTimeoutNotBelowTtl.scenario().timings;
    let err = broken.as_code_timings().unwrap_err();
    assert!(
        matches!(err, leader_core::TimingsError::AbandonNotBelowTtl { .. }),
        "{err}"
    );
}

#[test]
fn an_acquire_without_the_instant_guard_completes_an_instant_twice() {
    breaks(Bug::GrantsCompletedInstant);
}

#[test]
fn a_claim_filtered_by_another_shards_index_is_caught() {
    breaks(Bug::ClaimFiltersAnotherShard);
}

#[test]
fn a_takeover_without_the_anchor_check_is_caught() {
    breaks(Bug::TakeoverWithoutAnchorCheck);
}

#[test]
fn a_holder_working_on_after_its_anchor_ended_is_caught() {
    breaks(Bug::WorksOnAfterAnchorLost);
}

/// A liveness failure, not a safety one: a pid given again makes an ended anchor look alive, so
/// the takeover waits for the lease's expiry. Caught by the takeover promise, checked as an
/// invariant over every ACQUIRE.
#[test]
fn an_anchor_identity_without_backend_start_is_caught() {
    breaks(Bug::AnchorWithoutBackendStart);
}
