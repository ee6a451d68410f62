//! The model's state: the lease row, the database clock, the replicas, and what the properties
//! remember.

use crate::anchor::{Anchor, Session};
use crate::config::Time;
use crate::inline::InlineList;

/// A fencing token.
pub type Token = u16;

/// A replica's index.
pub type ReplicaId = u8;

/// A shard's index among its role's shards (`shard_index`; 0 for an unsharded role).
pub type ShardIndex = u8;

/// The most shards a checked role may have.
pub const MAX_SHARDS: usize = 2;

/// The most work keys a check may watch.
pub const MAX_KEYS: usize = 4;

/// Tokens issued from the clock term are `now * TOKEN_TICK`: one tick is this many of the
/// database clock's milliseconds, more than the grants one tick can hold at these bounds.
pub const TOKEN_TICK: Token = 16;

/// One shard's lease row of the one role (the role's only row when it is unsharded), as the
/// database holds it.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Hash, PartialOrd, Ord)]
pub struct Row {
    /// `holder_token`.
    pub token: Token,
    /// `holder_id`: which replica the row names.
    pub holder: Option<ReplicaId>,
    /// `expires_at`.
    pub expires: Option<Time>,
    /// `not_before`.
    pub not_before: Option<Time>,
    /// `paused_at IS NOT NULL`.
    pub paused: bool,
    /// `last_tick_ended_at`.
    pub last_tick_ended: Option<Time>,
    /// Not a column: until when the last tick that did not complete bars a new one (what the
    /// cooldown is for, kept apart from `not_before`, which is how the SQL does it).
    pub cooldown_until: Option<Time>,
    /// `tick_instant`: the scheduled instant the last grant serves.
    pub tick_instant: Option<Time>,
    /// `last_completed_instant`.
    pub last_completed_instant: Option<Time>,
    /// Not a column: the scheduled instants whose ticks this database recorded as completed (bit
    /// `i` for instant `i`), so that a failover rolls them back with the row.
    pub completed_instants: u32,
    /// `holder_anchor_pid` and `holder_anchor_start`: the identity of the anchor session the
    /// holder named with its ACQUIRE (`None`: no anchor, or no holder).
    pub anchor: Option<Session>,
}

/// The role's lease rows, one per shard, by shard index.
pub type Rows = InlineList<Row, MAX_SHARDS>;

/// How a tick's work ended.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Hash, PartialOrd, Ord)]
pub enum WorkEnd {
    /// The job returned `Ok`.
    Completed,
    /// The job panicked (a job error is released as interrupted, which at these bounds has the
    /// same cooldown, one interval).
    Panicked,
    /// The runtime shut down mid-tick (a deploy): released with no cooldown.
    Shutdown,
}

/// What RELEASE records (`leader_core::ReleaseOutcome`).
#[derive(Debug, Clone, Copy, PartialEq, Eq, Hash, PartialOrd, Ord)]
pub enum Outcome {
    /// `completed`.
    Completed,
    /// `panicked`.
    Panicked,
    /// `lost`.
    Lost,
    /// `shutdown`: clears the holder, leaves `not_before` and `last_tick_*` alone.
    Shutdown,
    /// `anchor_lost`: as `shutdown`, no cooldown.
    AnchorLost,
}

/// Why a tick was cancelled (`leader_runtime`'s `CancelCause`, less shutdown).
#[derive(Debug, Clone, Copy, PartialEq, Eq, Hash, PartialOrd, Ord)]
pub enum Cause {
    /// RENEW found the lease taken over, released or expired.
    Lost,
    /// RENEW found the role paused.
    Paused,
    /// No RENEW acknowledged for `abandon_after`.
    HeartbeatTimeout,
    /// The anchor session the tick was granted under ended (issue 33): the holder cancels at
    /// once, as on a lost lease, and leads again only through ACQUIRE.
    AnchorLost,
}

/// A statement's answer, as far as the server has got with it.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Hash, PartialOrd, Ord)]
pub enum Reply<T> {
    /// Sent; the server has not run it yet.
    Pending,
    /// The server ran it; this is the answer, on its way back.
    Ran(T),
}

/// What ACQUIRE answered.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Hash, PartialOrd, Ord)]
pub enum Acquired {
    /// Granted with this token.
    Granted(Token),
    /// Refused.
    Refused,
}

/// What RENEW answered.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Hash, PartialOrd, Ord)]
pub enum Renewed {
    /// The lease was extended.
    Extended,
    /// The lease is gone: paused, or lost otherwise.
    Lost(Cause),
}

/// What a statement that names a lease carries: the shard's row and the token. A claim binds it
/// as `leader_fence(role, shard, shard_count, token)` (the role and the count are the model's one
/// role's), or as `leader_fence(role, token)` for an unsharded role.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Hash, PartialOrd, Ord)]
pub struct Fence {
    /// The shard whose row the lease is.
    pub shard: ShardIndex,
    /// The token the lease was granted.
    pub token: Token,
}

impl Fence {
    /// Whether this lease is live in `rows` at `now`: its token holds its shard's row, unexpired.
    pub fn is_live_in(self, rows: &[Row], now: Time) -> bool {
        let row = &rows[usize::from(self.shard)];
        row.token == self.token && row.expires.is_some_and(|e| e > now)
    }
}

/// A claim as the job sends it: `leader_fence` with its fence, and `leader_shard_of(key, count) =
/// filter` over the keys, both in its WHERE. `#[fenced]` requires the filter to bind the fence's
/// own shard; a seeded bug binds another.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Hash, PartialOrd, Ord)]
pub struct Claim {
    /// The lease the claim proves.
    pub fence: Fence,
    /// The shard whose keys the claim selects.
    pub filter: ShardIndex,
}

/// A statement the server may run, named with what it carries.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Hash, PartialOrd, Ord)]
pub enum Statement {
    /// ACQUIRE of this shard, naming this anchor session.
    Acquire(ShardIndex, Option<Session>),
    /// RENEW of this lease.
    Renew(Fence),
    /// RELEASE of this lease with this outcome; `completed` is whether the work really completed.
    Release {
        /// The lease released.
        fence: Fence,
        /// The outcome recorded.
        outcome: Outcome,
        /// Whether the tick's work returned `Ok` (what the stamp must agree with).
        completed: bool,
    },
}

/// A granted tick, as its replica runs it.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Hash, PartialOrd, Ord)]
pub struct Tick {
    /// The shard the tick holds.
    pub shard: ShardIndex,
    /// The fence's token.
    pub token: Token,
    /// When (replica clock) the last acknowledged RENEW, or the ACQUIRE, was sent.
    pub anchor: Time,
    /// When (replica clock) the next RENEW is due.
    pub next_beat: Time,
    /// The RENEW in flight, with when it was sent (replica clock).
    pub renew: Option<(Time, Reply<Renewed>)>,
    /// Set once the tick is cancelled.
    pub cancelled: Option<Cause>,
    /// The anchor session its ACQUIRE named, which the row records.
    pub session: Option<Session>,
}

impl Tick {
    /// The fence this tick's statements and claims carry.
    pub fn fence(&self) -> Fence {
        Fence {
            shard: self.shard,
            token: self.token,
        }
    }
}

/// Where a replica is in the runtime's loop.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Hash, PartialOrd, Ord)]
pub enum Phase {
    /// Between polls.
    Idle,
    /// ACQUIRE of this shard, naming this anchor session, sent at this time (replica clock).
    Acquiring(Time, ShardIndex, Option<Session>, Reply<Acquired>),
    /// Running a granted tick.
    Working(Tick),
    /// RELEASE sent at this time (replica clock).
    Releasing(Time, Statement, Reply<()>),
    /// The process died (SIGKILL, a crash), and its anchor with it: it takes no step again. What
    /// it sent before may still run on the server.
    Crashed,
}

/// One replica.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Hash, PartialOrd, Ord)]
pub struct Replica {
    /// The database clock minus this replica's clock (grows when the replica's clock runs slow,
    /// shrinks when it runs fast).
    pub lag: i8,
    /// Ticks since this replica's clock last lost or gained one, capped.
    pub since_drift: Time,
    /// Frozen: it takes no step, its clock runs on.
    pub frozen: bool,
    /// Where it is in the loop.
    pub phase: Phase,
    /// A claim it sent that the server has not run yet.
    pub claim: Option<Claim>,
    /// A statement whose caller gave up waiting, which the server may still run (or never).
    pub orphan: Option<Statement>,
    /// Not the replica's: set when a failover took away or cut short the lease of this token (the
    /// standby lacks its grant, or a RENEW or pause since) while the replica's own clock may still let it
    /// work, with the replica's clock then. A pause sets nothing here: its floor covers the paused
    /// holder. The shards of a role never hold the same token, so the token names the lease.
    pub revoked: Option<(Token, Time)>,
    /// The scheduled instant its last ACQUIRE asked for (a calendar role's; `None` otherwise).
    pub asks: Option<Time>,
    /// Its anchor session, and whether the server still has it (`None`: the check runs
    /// without anchors).
    pub anchor: Option<Anchor>,
    /// Not the replica's: for each shard, the highest token of its leases that ACQUIRE gave to
    /// another because its anchor had ended, for
    /// [`NO_WRITE_AFTER_TAKEOVER`](crate::properties::NO_WRITE_AFTER_TAKEOVER). Kept for the
    /// whole run (a claim it sent may land after its tick ended), unless a failover loses the
    /// takeover.
    pub taken_over: [Option<Token>; MAX_SHARDS],
}

impl Replica {
    /// This replica's clock when the database clock reads `now`.
    pub fn clock(&self, now: Time) -> Time {
        (i16::from(now) - i16::from(self.lag)) as Time
    }
}

/// The operator's pause, in the order it happens.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Hash, PartialOrd, Ord)]
pub enum Operator {
    /// Not paused yet.
    Idle,
    /// `leader_pause` ran.
    Paused,
    /// `leader_unpause` ran after it.
    Unpaused,
}

/// Things that happened, remembered for the properties.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Hash, PartialOrd, Ord)]
pub struct History {
    /// The highest token ever issued to each shard's row, on any database.
    pub max_issued: InlineList<Token, MAX_SHARDS>,
    /// A grant went to a replica other than the row's holder, whose lease had run out.
    pub took_over: bool,
    /// A claim passed the fence.
    pub claimed: bool,
    /// A claim passed the fence for a replica that does not hold a live lease.
    pub claim_outside_lease: bool,
    /// A grant issued a token not above every token issued before.
    pub token_reissued: bool,
    /// RELEASE stamped a tick whose work did not complete.
    pub stamped_incomplete: bool,
    /// A grant came inside the cooldown of a tick that did not complete.
    pub granted_in_cooldown: bool,
    /// RELEASE recorded as completed a scheduled instant already recorded completed.
    pub instant_completed_twice: bool,
    /// A calendar role was granted for an instant not yet due (or for none).
    pub granted_early: bool,
    /// For each key, the lease under which a claim last took it, while that lease may still be
    /// live (on the primary or the standby): a key stays claimed by its holder until its lease
    /// ends.
    pub key_claims: InlineList<Option<Fence>, MAX_KEYS>,
    /// The first claim that took a key another live lease had claimed: the key, the lease that
    /// had it, and the lease that took it.
    pub key_claimed_twice: Option<(u8, Fence, Fence)>,
    /// ACQUIRE took over a live lease because its holder's anchor had ended.
    pub dead_holder_taken_over: bool,
    /// A claim passed the fence with a token of its replica's that a takeover had given to
    /// another (or an older one).
    pub write_after_takeover: bool,
    /// ACQUIRE refused a lease whose holder's anchor had ended, though nothing else refused it.
    pub takeover_missed: bool,
}

impl History {
    /// Nothing has happened yet, to a role of `shards` shards with `keys` keys.
    pub fn new(shards: u8, keys: u8) -> History {
        History {
            max_issued: InlineList::new(0, shards),
            took_over: false,
            claimed: false,
            claim_outside_lease: false,
            token_reissued: false,
            stamped_incomplete: false,
            granted_in_cooldown: false,
            instant_completed_twice: false,
            granted_early: false,
            key_claims: InlineList::new(None, keys),
            key_claimed_twice: None,
            dead_holder_taken_over: false,
            write_after_takeover: false,
            takeover_missed: false,
        }
    }
}

/// The whole model state.
#[derive(Debug, Clone, PartialEq, Eq, Hash)]
pub struct State {
    /// The database clock.
    pub now: Time,
    /// The role's lease rows on the primary.
    pub rows: Rows,
    /// The rows as the standby has them: as they were just before the last grant.
    pub standby: Option<Rows>,
    /// The replicas.
    pub replicas: Vec<Replica>,
    /// The operator's pause.
    pub operator: Operator,
    /// Freezes left in this run.
    pub freezes_left: u8,
    /// Statement delays left in this run.
    pub delays_left: u8,
    /// Failovers left in this run.
    pub failovers_left: u8,
    /// Shutdown releases left in this run.
    pub shutdowns_left: u8,
    /// Crashes left in this run.
    pub crashes_left: u8,
    /// Anchor losses (the process living on) left in this run.
    pub anchor_losses_left: u8,
    /// What the properties remember.
    pub history: History,
}

impl State {
    /// The same state with the replicas in a canonical order (for symmetry reduction: replicas
    /// are interchangeable, so states that differ only in their numbering are explored once).
    pub fn representative(&self) -> State {
        let mut out = self.clone();
        if self
            .replicas
            .iter()
            .map(|&r| crate::anchor::unnamed(r))
            .is_sorted()
        {
            crate::anchor::name_sessions(&mut out);
            return out;
        }
        let mut order: Vec<usize> = (0..self.replicas.len()).collect();
        // Sessions are names: order the replicas without them, then name them afresh.
        order.sort_by_key(|&i| crate::anchor::unnamed(self.replicas[i]));
        let renumber = |id: Option<ReplicaId>| {
            id.map(|old| {
                order
                    .iter()
                    .position(|&i| i == usize::from(old))
                    .unwrap_or(0) as ReplicaId
            })
        };
        for (replica, &i) in out.replicas.iter_mut().zip(&order) {
            *replica = self.replicas[i];
        }
        let standby = out.standby.iter_mut().flat_map(|rows| rows.iter_mut());
        for row in out.rows.iter_mut().chain(standby) {
            row.holder = renumber(row.holder);
        }
        crate::anchor::name_sessions(&mut out);
        out
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    fn replica(phase: Phase) -> Replica {
        Replica {
            lag: 0,
            since_drift: 3,
            frozen: false,
            phase,
            claim: None,
            orphan: None,
            revoked: None,
            asks: None,
            anchor: None,
            taken_over: [None; MAX_SHARDS],
        }
    }

    #[test]
    fn the_representative_renumbers_the_holder_with_the_replicas() {
        let working = replica(Phase::Working(Tick {
            shard: 0,
            token: 16,
            anchor: 1,
            next_beat: 2,
            renew: None,
            cancelled: None,
            session: None,
        }));
        let row = Row {
            token: 16,
            holder: Some(0),
            expires: Some(5),
            not_before: None,
            paused: false,
            last_tick_ended: None,
            cooldown_until: None,
            tick_instant: None,
            last_completed_instant: None,
            completed_instants: 0,
            anchor: None,
        };
        let state = State {
            now: 1,
            rows: Rows::new(row, 1),
            standby: Some(Rows::new(
                Row {
                    holder: Some(0),
                    ..row
                },
                1,
            )),
            replicas: vec![working, replica(Phase::Idle)],
            operator: Operator::Idle,
            freezes_left: 0,
            delays_left: 0,
            failovers_left: 0,
            shutdowns_left: 0,
            crashes_left: 0,
            anchor_losses_left: 0,
            history: History::new(1, 0),
        };
        let swapped = State {
            rows: Rows::new(
                Row {
                    holder: Some(1),
                    ..row
                },
                1,
            ),
            standby: Some(Rows::new(
                Row {
                    holder: Some(1),
                    ..row
                },
                1,
            )),
            replicas: vec![replica(Phase::Idle), working],
            ..state.clone()
        };
        let a = state.representative();
        assert_eq!(a, swapped.representative());
        let holder = usize::from(a.rows[0].holder.expect("held"));
        assert_eq!(
            a.replicas[holder], working,
            "the holder is still the working replica"
        );
        assert_eq!(a.standby.and_then(|s| s[0].holder), a.rows[0].holder);
    }
}
