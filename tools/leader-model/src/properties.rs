//! What the checker proves (`always`) and what it must be able to reach (`sometimes`, so that
//! no `always` holds only because nothing happens).

use stateright::Property;

use crate::model::LeaseModel;
use crate::state::{Operator, Phase, Row, State, Tick};

/// A claim passes the fence only for the replica the row names as holder, with its token, while
/// its lease is live and unpaused. Since a grant needs the previous lease over, no claim by a
/// lower token succeeds once a higher token is granted, and no two replicas' claims interleave.
pub const CLAIMS_INSIDE_LEASE: &str = "a claim succeeds only inside its own lease";
/// While a replica may still work by its own clock (its tick runs and its clock is before
/// `anchor + abandon_after + statement_timeout`: its abandon point plus one statement in flight),
/// no other lease is live. A replica whose lease an operator pause took away is counted (the
/// pause's floor keeps ACQUIRE off until that lease's expiry); one whose lease a failover took
/// away is not, until its next acknowledged RENEW (see the README's "Outside the model"). Nor,
/// with anchors, is one whose lease ACQUIRE took over because its anchor had ended, while it has
/// not heard of that end (it cancels the moment it does): only the fence stops its claims then.
pub const OWN_CLOCK_EXCLUSIVE: &str =
    "no lease is granted while an earlier holder may still work by its own clock";
/// Every grant's token is above every token issued before it to its shard's row, on any
/// database.
pub const TOKENS_NEVER_REISSUED: &str = "tokens only grow, across the failover";
/// RELEASE stamps `last_tick_ended_at` only for a tick whose work returned.
pub const STAMPED_ONLY_IF_COMPLETED: &str = "a tick is stamped completed only if it completed";
/// No grant comes within one interval of a RELEASE of a tick that did not complete (a shutdown
/// or `anchor_lost` release sets no cooldown, so it is not counted).
pub const COOLDOWN_RESPECTED: &str =
    "a tick that did not complete is not retried within its cooldown";

/// A replica leads: its tick runs, and the row names it with its token and a live lease.
pub const LED: &str = "a role is led";
/// A grant goes to another replica than the one whose lease ran out.
pub const TAKEOVER: &str = "a takeover happens";
/// A claim passes the fence.
pub const CLAIMED: &str = "a claim succeeds";
/// A running tick learns of a pause from RENEW and is cancelled.
pub const PAUSE_TAKES_EFFECT: &str = "a pause takes effect";
/// After the unpause, a replica leads again.
pub const LED_AFTER_UNPAUSE: &str = "a paused role is led again after unpause";
/// A holder whose RENEWs go unacknowledged abandons its tick (so the abandon rule is exercised,
/// not only assumed by [`OWN_CLOCK_EXCLUSIVE`]'s clock window).
pub const ABANDONS: &str = "a cut-off holder abandons its tick";
/// A tick completes and is stamped.
pub const TICK_COMPLETES: &str = "a tick completes";
/// The gap [`OWN_CLOCK_EXCLUSIVE`] leaves out is real: after a failover that lost the last grant,
/// a new holder leads while the holder whose lease the failover took away may still work by its
/// own clock, until its next RENEW tells it. Only the fence stops its claims then. A pause cannot
/// reach this: its floor holds ACQUIRE off until the paused lease's expiry, and
/// [`OWN_CLOCK_EXCLUSIVE`] counts the paused holder. (A holder whose lease a takeover took is
/// [`TAKEN_OVER_HOLDER_OVERLAPS`]'s.)
pub const REVOKED_HOLDER_OVERLAPS: &str =
    "after a failover, a new holder leads while the old one may still work by its own clock";

/// A calendar role: RELEASE records each scheduled instant as completed at most once (on the
/// database that holds the record), and ACQUIRE grants no instant before the database clock
/// reaches it.
pub const INSTANT_ONCE: &str =
    "each scheduled instant is completed at most once, and never granted before it is due";
/// A calendar role's scheduled instant completes.
pub const INSTANT_COMPLETES: &str = "a scheduled instant completes";

/// No claim passes the fence for a replica with the token of a lease that ACQUIRE took over from
/// it because its anchor had ended, or an older token of its. (It follows from the fence and the
/// early expiry a takeover sets; checked on its own.)
pub const NO_WRITE_AFTER_TAKEOVER: &str =
    "no fenced write by a holder after its lease was taken over on its anchor's end";
/// The takeover promise of issue 33, checked as an invariant over every ACQUIRE: an ACQUIRE that
/// finds a live lease whose holder's anchor session has ended, and that no other guard refuses,
/// ends that lease at once (its next ACQUIRE is granted it). With the watchers' notice (which the
/// model abstracts as "any replica may ACQUIRE at any moment"), that is a takeover within a
/// notice's delay of a death, whatever the TTL.
pub const TAKEOVER_AT_FIRST_ASK: &str =
    "a lease whose holder's anchor has ended goes to the first replica that asks";
/// ACQUIRE takes over a live lease because its holder's anchor ended (the branch is reachable).
pub const DEAD_HOLDER_TAKEN_OVER: &str =
    "a lease is taken over before it expires, its holder's anchor gone";
/// The gap [`NO_WRITE_AFTER_TAKEOVER`] covers is real: after a takeover, the new holder leads
/// while the old one, not yet told that its anchor ended, may still work by its own clock.
pub const TAKEN_OVER_HOLDER_OVERLAPS: &str =
    "after a takeover, the new holder leads while the old one may still work by its own clock";

/// A sharded role's keys: no claim takes a key while another lease's claim on it may still hold,
/// that is, while the lease under which that claim passed its fence is live. A claim's fence
/// names one shard's row and its filter selects the keys of that shard, so keys change hands only
/// when their shard's lease does.
pub const KEY_CLAIMED_ONCE: &str = "no key is claimed by two holders at once";
/// The keys of two shards are claimed at once, each under a live lease (so that
/// [`KEY_CLAIMED_ONCE`] is checked while shards are held side by side).
pub const SHARDS_CLAIMED_AT_ONCE: &str = "the keys of two shards are claimed at once";

/// The safety properties.
pub const SAFETY: [&str; 9] = [
    CLAIMS_INSIDE_LEASE,
    OWN_CLOCK_EXCLUSIVE,
    TOKENS_NEVER_REISSUED,
    STAMPED_ONLY_IF_COMPLETED,
    COOLDOWN_RESPECTED,
    INSTANT_ONCE,
    KEY_CLAIMED_ONCE,
    NO_WRITE_AFTER_TAKEOVER,
    TAKEOVER_AT_FIRST_ASK,
];

/// The reachability properties.
pub const REACHABLE: [&str; 12] = [
    LED,
    TAKEOVER,
    CLAIMED,
    PAUSE_TAKES_EFFECT,
    LED_AFTER_UNPAUSE,
    TICK_COMPLETES,
    ABANDONS,
    REVOKED_HOLDER_OVERLAPS,
    INSTANT_COMPLETES,
    SHARDS_CLAIMED_AT_ONCE,
    DEAD_HOLDER_TAKEN_OVER,
    TAKEN_OVER_HOLDER_OVERLAPS,
];

fn led(state: &State) -> bool {
    state.replicas.iter().enumerate().any(|(i, r)| {
        matches!(r.phase, Phase::Working(tick)
            if tick.cancelled.is_none()
                && state.rows[usize::from(tick.shard)].holder == Some(i as u8)
                && tick.fence().is_live_in(&state.rows, state.now))
    })
}

/// The first replica that may still work by its own clock while another lease of its tick's
/// shard is live, with its tick: among the replicas whose lease a failover took away
/// (`revoked`), or among the others (`!revoked`), a replica whose lease a pause took away
/// included.
fn overlapping(model: &LeaseModel, state: &State, revoked: bool) -> Option<(usize, Tick)> {
    overlaps(model, state, revoked).next()
}

/// Every replica [`overlapping`] may return, in order.
fn overlaps<'a>(
    model: &'a LeaseModel,
    state: &'a State,
    revoked: bool,
) -> impl Iterator<Item = (usize, Tick)> + 'a {
    let t = model.config.timings;
    state.replicas.iter().enumerate().filter_map(move |(i, r)| {
        let Phase::Working(tick) = r.phase else {
            return None;
        };
        let row = &state.rows[usize::from(tick.shard)];
        let holder = row
            .holder
            .filter(|_| row.expires.is_some_and(|e| e > state.now))?;
        let may_work = r.clock(state.now) < tick.anchor + t.abandon_after + t.statement_timeout;
        let was_revoked = r
            .revoked
            .is_some_and(|(token, at)| token == tick.token && tick.anchor <= at);
        let other_lease = holder != i as u8 || row.token != tick.token;
        (may_work && other_lease && was_revoked == revoked).then_some((i, tick))
    })
}

/// Whether the own-clock property holds in `state`.
pub fn own_clock_exclusive(model: &LeaseModel, state: &State) -> bool {
    overlapping(model, state, false).is_none()
}

/// Whether the keys of two shards are claimed under two live leases.
fn shards_claimed_at_once(state: &State) -> bool {
    let mut live_claims = state
        .history
        .key_claims
        .iter()
        .flatten()
        .filter(|c| c.is_live_in(&state.rows, state.now));
    live_claims
        .next()
        .is_some_and(|first| live_claims.any(|c| c.shard != first.shard))
}

/// `value` of the one row, or of each row with its shard.
fn by_shard(state: &State, value: impl Fn(&Row) -> String) -> String {
    match &*state.rows {
        [row] => value(row),
        rows => rows
            .iter()
            .enumerate()
            .map(|(shard, row)| format!("{} (shard {shard})", value(row)))
            .collect::<Vec<_>>()
            .join(", "),
    }
}

/// Why `property` fails in `state`, the last state of its counterexample, in a sentence.
pub fn explain(model: &LeaseModel, property: &str, state: &State) -> String {
    let t = model.config.timings;
    match property {
        OWN_CLOCK_EXCLUSIVE => {
            let overlapping = overlapping(model, state, false).map(|(i, tick)| {
                let until = tick.anchor + t.abandon_after + t.statement_timeout;
                (i, state.replicas[i].clock(state.now), tick, until)
            });
            let row = overlapping.map(|(_, _, tick, _)| &state.rows[usize::from(tick.shard)]);
            match (
                overlapping,
                row.and_then(|row| row.holder.map(|h| (row, h))),
            ) {
                (Some((i, clock, tick, until)), Some((row, holder))) => format!(
                    "r{i} (token {}) may still work by its own clock: it reads {clock}, before its \
                     last acknowledged send {} + abandon_after {} + statement_timeout {} = {until}; \
                     yet r{holder} holds a live lease (token {}, expires {})",
                    tick.token,
                    tick.anchor,
                    t.abandon_after,
                    t.statement_timeout,
                    row.token,
                    row.expires.map_or("-".into(), |e| e.to_string()),
                ),
                _ => "two replicas may work at once".into(),
            }
        }
        CLAIMS_INSIDE_LEASE => {
            "the last claim passed the fence, but its replica does not hold a live lease with that \
             token"
                .into()
        }
        TOKENS_NEVER_REISSUED => format!(
            "the last grant issued token {}, not above every token issued before",
            by_shard(state, |row| row.token.to_string())
        ),
        STAMPED_ONLY_IF_COMPLETED => {
            "the last RELEASE stamped the tick completed, but its job did not return".into()
        }
        INSTANT_ONCE if state.history.granted_early => {
            "the last grant serves a scheduled instant the database clock has not reached".into()
        }
        INSTANT_ONCE => format!(
            "the last RELEASE recorded instant {} as completed, which was already completed",
            by_shard(state, |row| row
                .tick_instant
                .map_or("-".into(), |i| i.to_string()))
        ),
        NO_WRITE_AFTER_TAKEOVER => {
            "the last claim passed the fence with a token of a lease that ACQUIRE had taken over \
             from its replica"
                .into()
        }
        TAKEOVER_AT_FIRST_ASK => {
            "the last ACQUIRE left live a lease whose holder's anchor session had ended, though \
             no other guard refused it: the server took another session for that anchor"
                .into()
        }
        KEY_CLAIMED_ONCE => match state.history.key_claimed_twice {
            Some((key, had, took)) => format!(
                "key {key} (shard {}) was claimed under shard {}'s lease (token {}), still live, \
                 when a claim under shard {}'s lease (token {}) took it: two holders claim it at \
                 once",
                key % model.config.shards,
                had.shard,
                had.token,
                took.shard,
                took.token
            ),
            None => "a key is claimed by two holders at once".into(),
        },
        COOLDOWN_RESPECTED => {
            "the last grant came before the cooldown of a tick that did not complete ran out".into()
        }
        other => format!("`{other}` fails"),
    }
}

/// Every property, safety first.
pub fn all() -> Vec<Property<LeaseModel>> {
    vec![
        Property::always(CLAIMS_INSIDE_LEASE, |_, s: &State| {
            !s.history.claim_outside_lease
        }),
        Property::always(OWN_CLOCK_EXCLUSIVE, own_clock_exclusive),
        Property::always(TOKENS_NEVER_REISSUED, |_, s: &State| {
            !s.history.token_reissued
        }),
        Property::always(STAMPED_ONLY_IF_COMPLETED, |_, s: &State| {
            !s.history.stamped_incomplete
        }),
        Property::always(COOLDOWN_RESPECTED, |_, s: &State| {
            !s.history.granted_in_cooldown
        }),
        Property::always(INSTANT_ONCE, |_, s: &State| {
            !s.history.instant_completed_twice && !s.history.granted_early
        }),
        Property::always(KEY_CLAIMED_ONCE, |_, s: &State| {
            s.history.key_claimed_twice.is_none()
        }),
        Property::always(NO_WRITE_AFTER_TAKEOVER, |_, s: &State| {
            !s.history.write_after_takeover
        }),
        Property::always(TAKEOVER_AT_FIRST_ASK, |_, s: &State| {
            !s.history.takeover_missed
        }),
        Property::sometimes(LED, |_, s: &State| led(s)),
        Property::sometimes(TAKEOVER, |_, s: &State| s.history.took_over),
        Property::sometimes(CLAIMED, |_, s: &State| s.history.claimed),
        Property::sometimes(PAUSE_TAKES_EFFECT, |_, s: &State| {
            s.replicas.iter().any(|r| {
                matches!(r.phase, Phase::Working(tick) if tick.cancelled == Some(crate::state::Cause::Paused))
            })
        }),
        Property::sometimes(LED_AFTER_UNPAUSE, |_, s: &State| {
            s.operator == Operator::Unpaused && led(s)
        }),
        Property::sometimes(TICK_COMPLETES, |_, s: &State| {
            s.rows.iter().any(|row| row.last_tick_ended.is_some())
        }),
        Property::sometimes(ABANDONS, |_, s: &State| {
            s.replicas.iter().any(|r| {
                matches!(r.phase, Phase::Working(tick)
                    if tick.cancelled == Some(crate::state::Cause::HeartbeatTimeout))
            })
        }),
        Property::sometimes(REVOKED_HOLDER_OVERLAPS, |m, s: &State| {
            overlaps(m, s, true).any(|(i, tick)| {
                s.replicas[i].taken_over[usize::from(tick.shard)] != Some(tick.token)
            })
        }),
        Property::sometimes(INSTANT_COMPLETES, |_, s: &State| {
            s.rows
                .iter()
                .any(|row| row.last_completed_instant.is_some())
        }),
        Property::sometimes(SHARDS_CLAIMED_AT_ONCE, |_, s: &State| {
            shards_claimed_at_once(s)
        }),
        Property::sometimes(DEAD_HOLDER_TAKEN_OVER, |_, s: &State| {
            s.history.dead_holder_taken_over
        }),
        Property::sometimes(TAKEN_OVER_HOLDER_OVERLAPS, |m, s: &State| {
            overlaps(m, s, true).any(|(i, tick)| {
                s.replicas[i].taken_over[usize::from(tick.shard)] == Some(tick.token)
            })
        }),
    ]
}
