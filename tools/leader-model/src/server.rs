//! The server's side of the model: each statement is one atomic step on the rows (ACQUIRE,
//! RENEW, RELEASE, a fenced claim, the operator's pause and unpause), and a failover takes away
//! what the standby lacks. The guards come from `leader-core` ([`crate::guards`]); the SET
//! clauses are written here by hand.

use crate::anchor::Session;
use crate::config::Bug;
use crate::guards::{Subject, all_hold};
use crate::model::LeaseModel;
use crate::state::{
    Acquired, Cause, Claim, Fence, Operator, Outcome, Phase, Renewed, ReplicaId, Reply, Row,
    ShardIndex, State, Statement, TOKEN_TICK, Token,
};

impl LeaseModel {
    /// What the guards of a statement proving `fence` read: its shard's row, as the server sees
    /// it now.
    fn subject<'a>(&self, state: &'a State, fence: Fence) -> Subject<'a> {
        Subject {
            row: &state.rows[usize::from(fence.shard)],
            now: state.now,
            token: fence.token,
            interval: self.config.timings.interval,
            calendar: self.config.schedule.is_some(),
            instant: None,
            caller_anchor_alive: true,
            holder_anchor_ended: false,
        }
    }

    /// ACQUIRE by replica `id` of `shard`, naming its anchor `session`, for the instant the
    /// replica asks for. With anchors, it first ends early a live lease whose holder's anchor has
    /// ended (`anchor.rs`), and is then refused: a later ACQUIRE grants that lease as any expired
    /// one, as `ended_early` and `granted` do in one statement's two steps.
    pub(crate) fn run_acquire(
        &self,
        state: &mut State,
        id: ReplicaId,
        shard: ShardIndex,
        session: Option<Session>,
    ) -> Acquired {
        let instant = state.replicas[usize::from(id)].asks;
        let row = state.rows[usize::from(shard)];
        let subject = Subject {
            row: &row,
            now: state.now,
            token: 0,
            interval: self.config.timings.interval,
            calendar: self.config.schedule.is_some(),
            instant,
            caller_anchor_alive: self.anchor_lives(state, session),
            holder_anchor_ended: self.holder_anchor_ended(state, &row),
        };
        if self.takes_over(state, subject) {
            self.record_takeover(state, shard, &row);
            state.rows[usize::from(shard)].expires = Some(state.now);
            return Acquired::Refused;
        }
        if !all_hold(&self.guards.acquire, subject) {
            return Acquired::Refused;
        }
        let now = state.now;
        if self.config.schedule.is_some() {
            state.history.granted_early |= instant.is_none_or(|i| i > now);
        }
        let base = if self.config.has(Bug::TokenPlusOne) {
            row.token + 1
        } else {
            // greatest(holder_token + 1, clock in ms)
            (row.token + 1).max(Token::from(now) * TOKEN_TICK)
        };
        let token = congruent_to_shard(base, shard, self.config.shards);
        let h = &mut state.history;
        let issued = &mut h.max_issued[usize::from(shard)];
        h.token_reissued |= token <= *issued;
        *issued = (*issued).max(token);
        h.granted_in_cooldown |= row.cooldown_until.is_some_and(|until| now < until);
        h.took_over |= row.holder.is_some_and(|holder| holder != id);
        if state.failovers_left > 0 {
            state.standby = Some(state.rows);
        }
        state.rows[usize::from(shard)] = Row {
            token,
            holder: Some(id),
            expires: Some(now + self.config.timings.ttl),
            tick_instant: instant,
            anchor: session,
            ..row
        };
        Acquired::Granted(token)
    }

    pub(crate) fn run_renew(&self, state: &mut State, fence: Fence) -> Renewed {
        if all_hold(&self.guards.renew, self.subject(state, fence)) {
            state.rows[usize::from(fence.shard)].expires =
                Some(state.now + self.config.timings.ttl);
            Renewed::Extended
        } else if state.rows[usize::from(fence.shard)].paused {
            Renewed::Lost(Cause::Paused)
        } else {
            Renewed::Lost(Cause::Lost)
        }
    }

    pub(crate) fn run_release(&self, state: &mut State, statement: Statement) {
        let Statement::Release {
            fence,
            outcome,
            completed,
        } = statement
        else {
            return;
        };
        if !all_hold(&self.guards.release, self.subject(state, fence)) {
            return;
        }
        let now = state.now;
        let interval = self.config.timings.interval;
        let stamps = outcome == Outcome::Completed
            || (outcome == Outcome::Panicked && self.config.has(Bug::ReleaseStampsPanicked));
        let row = &mut state.rows[usize::from(fence.shard)];
        row.holder = None;
        row.expires = None;
        row.anchor = None;
        if stamps {
            row.last_tick_ended = Some(now);
            state.history.stamped_incomplete |= !completed;
            if let Some(instant) = row.tick_instant {
                let bit = 1u32 << instant;
                state.history.instant_completed_twice |= row.completed_instants & bit != 0;
                row.completed_instants |= bit;
                row.last_completed_instant = row.last_completed_instant.max(Some(instant));
            }
        } else if matches!(outcome, Outcome::Shutdown | Outcome::AnchorLost) {
            // No cooldown: a shutdown or an ended anchor says nothing about the job or the
            // database.
        } else {
            // Panicked: now + interval; interrupted and lost: now + min(interval, 60 s), the
            // same at these bounds.
            row.not_before = Some(now + interval);
            row.cooldown_until = Some(now + interval);
        }
    }

    /// A claim by replica `id`: `leader_fence` (the four-argument form for a sharded role) and
    /// the shard filter over the keys. It takes every key its filter selects, or none if the
    /// fence is false.
    pub(crate) fn run_claim(&self, state: &mut State, id: ReplicaId, claim: Claim) {
        let fence = claim.fence;
        let guards = if self.config.shards == 1 {
            &self.guards.fence
        } else {
            &self.guards.shard_fence
        };
        if !all_hold(guards, self.subject(state, fence)) {
            return;
        }
        let now = state.now;
        let row = state.rows[usize::from(fence.shard)];
        let inside = row.holder == Some(id)
            && row.token == fence.token
            && !row.paused
            && row.expires.is_some_and(|e| e > now);
        state.history.claimed = true;
        state.history.claim_outside_lease |= !inside;
        state.history.write_after_takeover |= state.replicas[usize::from(id)].taken_over
            [usize::from(fence.shard)]
        .is_some_and(|taken| fence.token <= taken);
        for key in 0..self.config.keys {
            if key % self.config.shards != claim.filter {
                continue;
            }
            let h = &mut state.history;
            let holder = &mut h.key_claims[usize::from(key)];
            if let Some(had) = holder.filter(|&c| c != fence && c.is_live_in(&state.rows, now)) {
                h.key_claimed_twice = h.key_claimed_twice.or(Some((key, had, fence)));
            }
            *holder = Some(fence);
        }
    }

    pub(crate) fn run(&self, state: &mut State, id: ReplicaId, statement: Statement) {
        match statement {
            Statement::Acquire(shard, session) => {
                self.run_acquire(state, id, shard, session);
            }
            Statement::Renew(fence) => {
                self.run_renew(state, fence);
            }
            Statement::Release { .. } => self.run_release(state, statement),
        }
    }

    /// Marks each replica whose lease a failover to `standby` (the rows as they were before the
    /// last grant) takes away or cuts short, for the own-clock property: it may work on by its own
    /// clock until it notices, which that property does not count. Its token holds its row on the
    /// primary, and the standby's copy of that row is older: it lacks the grant (the last one), or
    /// a RENEW or pause since (on another shard's row than the last grant's). The row may no
    /// longer name it (a pause cleared the holder), but its lease was live on the old primary
    /// until the failover lost it, and with it the pause's floor.
    pub(crate) fn revoke_lost_leases(state: &mut State, standby: &[Row]) {
        let now = state.now;
        let rows = &state.rows;
        let lost = |shard: ShardIndex, token: Token| {
            let primary = &rows[usize::from(shard)];
            primary.token == token && *primary != standby[usize::from(shard)]
        };
        for r in &mut state.replicas {
            let (shard, token) = match r.phase {
                Phase::Working(tick) => (tick.shard, tick.token),
                Phase::Acquiring(_, shard, _, Reply::Ran(Acquired::Granted(token))) => {
                    (shard, token)
                }
                _ => continue,
            };
            if lost(shard, token) {
                r.revoked = Some((token, r.clock(now)));
            }
        }
    }

    /// `leader_pause`: pauses every row of the role. Its floor (migration
    /// 20261204000000_leader_pause_floor), written by hand like every SET clause:
    /// `not_before = greatest(not_before, expires_at)`. `greatest()` ignores NULLs, and so does
    /// `Option`'s order (`None` is below `Some`).
    pub(crate) fn run_pause(&self, state: &mut State) {
        for row in state.rows.iter_mut() {
            if !self.config.has(Bug::PauseWithoutFloor) {
                row.not_before = row.not_before.max(row.expires);
            }
            row.holder = None;
            row.expires = None;
            row.anchor = None;
            row.paused = true;
        }
        state.operator = Operator::Paused;
    }

    /// `leader_unpause`: unpauses every row of the role.
    pub(crate) fn run_unpause(state: &mut State) {
        for row in state.rows.iter_mut() {
            row.paused = false;
        }
        state.operator = Operator::Unpaused;
    }
}

/// `base` raised to the next token congruent to `shard` modulo `shards`, as ACQUIRE issues them
/// (no change for an unsharded role): two shards of a role never hold the same token.
fn congruent_to_shard(base: Token, shard: ShardIndex, shards: u8) -> Token {
    let (shard, shards) = (Token::from(shard), Token::from(shards));
    base + (shard + shards - base % shards) % shards
}
