//! A replica's side of the model: the steps the runtime's loop may take next (ACQUIRE when
//! idle; the heartbeat's RENEW, abandon and give-up; the job's claims and its end), which of
//! them the clock must wait for, and how the replica reads each answer.

use crate::anchor::Session;
use crate::config::{Bug, Time};
use crate::model::{Action, Delivery, LeaseModel};
use crate::state::{
    Acquired, Cause, Phase, Renewed, Replica, ReplicaId, Reply, ShardIndex, State, Statement, Tick,
    WorkEnd,
};

impl LeaseModel {
    /// Whether replica `r` has a step due that the clock must wait for.
    fn urgent(&self, state: &State, r: &Replica) -> bool {
        if r.frozen {
            return false;
        }
        let t = self.config.timings;
        let c = r.clock(state.now);
        match r.phase {
            Phase::Idle | Phase::Crashed => false,
            Phase::Acquiring(sent, _, _, _) | Phase::Releasing(sent, _, _) => {
                c >= sent + t.statement_timeout
            }
            Phase::Working(tick) => {
                tick.cancelled.is_some()
                    || c >= tick.anchor + t.abandon_after
                    || match tick.renew {
                        None => c >= tick.next_beat,
                        Some((sent, _)) => c >= sent + t.statement_timeout,
                    }
            }
        }
    }

    pub(crate) fn clock_may_advance(&self, state: &State) -> bool {
        state.now < self.config.horizon && !state.replicas.iter().any(|r| self.urgent(state, r))
    }

    pub(crate) fn replica_actions(&self, state: &State, id: ReplicaId, actions: &mut Vec<Action>) {
        let r = &state.replicas[usize::from(id)];
        let t = self.config.timings;
        let c = r.clock(state.now);
        // The server's steps, whether or not the replica is frozen.
        match r.phase {
            Phase::Acquiring(_, _, _, Reply::Pending) => actions.push(Action::RunAcquire(id)),
            Phase::Working(Tick {
                renew: Some((_, Reply::Pending)),
                ..
            }) => actions.push(Action::RunRenew(id)),
            Phase::Releasing(_, _, Reply::Pending) => actions.push(Action::RunRelease(id)),
            _ => {}
        }
        if r.claim.is_some() {
            actions.push(Action::RunClaim(id));
        }
        if r.orphan.is_some() {
            actions.push(Action::RunOrphan(id));
        }
        if r.phase == Phase::Crashed {
            return;
        }
        if r.frozen {
            actions.push(Action::Resume(id));
            return;
        }
        if state.freezes_left > 0 {
            actions.push(Action::Freeze(id));
        }
        match r.phase {
            Phase::Idle => {
                for &d in deliveries(state) {
                    for instant in self.instants_to_ask(state) {
                        for shard in 0..self.config.shards {
                            actions.push(Action::SendAcquire(id, d, instant, shard));
                        }
                    }
                }
            }
            Phase::Acquiring(sent, _, _, reply) => {
                if matches!(reply, Reply::Ran(_)) && c <= sent + t.statement_timeout {
                    actions.push(Action::AnswerAcquire(id));
                }
                if c >= sent + t.statement_timeout {
                    actions.push(Action::GiveUpWaiting(id));
                }
            }
            Phase::Releasing(sent, _, reply) => {
                if matches!(reply, Reply::Ran(_)) && c <= sent + t.statement_timeout {
                    actions.push(Action::AnswerRelease(id));
                }
                if c >= sent + t.statement_timeout {
                    actions.push(Action::GiveUpWaiting(id));
                }
            }
            Phase::Crashed => {}
            Phase::Working(tick) if tick.cancelled == Some(Cause::HeartbeatTimeout) => {
                actions.push(Action::WorkStops(id, Delivery::Prompt));
            }
            Phase::Working(tick) if tick.cancelled.is_some() => {
                for &d in deliveries(state) {
                    actions.push(Action::WorkStops(id, d));
                }
            }
            Phase::Working(tick) => {
                let abandon_at = tick.anchor + t.abandon_after;
                if c >= abandon_at {
                    actions.push(Action::Abandon(id));
                } else {
                    match tick.renew {
                        None if c >= tick.next_beat => {
                            for &d in deliveries(state) {
                                actions.push(Action::SendRenew(id, d));
                            }
                        }
                        None => {}
                        Some((sent, reply)) => {
                            if matches!(reply, Reply::Ran(_)) && c <= sent + t.statement_timeout {
                                actions.push(Action::AnswerRenew(id));
                            }
                            if c >= sent + t.statement_timeout {
                                actions.push(Action::GiveUpWaiting(id));
                            }
                        }
                    }
                }
                for &d in deliveries(state) {
                    if d == Delivery::Prompt || r.claim.is_none() {
                        for filter in self.claim_filters(tick.shard) {
                            actions.push(Action::SendClaim(id, d, filter));
                        }
                    }
                }
                for &d in deliveries(state) {
                    actions.push(Action::WorkEnds(id, WorkEnd::Completed, d));
                    actions.push(Action::WorkEnds(id, WorkEnd::Panicked, d));
                    if state.shutdowns_left > 0 {
                        actions.push(Action::WorkEnds(id, WorkEnd::Shutdown, d));
                    }
                }
            }
        }
    }

    /// The instants an ACQUIRE may ask for: on a calendar schedule, every instant (a multiple of
    /// the period) up to one period past the database clock, whatever the last answer said, so
    /// stale and wrong plans are asked too; otherwise none.
    fn instants_to_ask(&self, state: &State) -> Vec<Option<Time>> {
        match self.config.schedule {
            None => vec![None],
            Some(period) => (1..)
                .map(|k| k * period)
                .take_while(|&i| i <= state.now + period && i <= self.config.horizon)
                .map(Some)
                .collect(),
        }
    }

    /// The shards whose keys a claim by the holder of `shard` may select: its own; with the
    /// seeded bug [`Bug::ClaimFiltersAnotherShard`], also the next one (one of the job's claims
    /// binds the next index: were every claim filtered so, each key would still have one holder
    /// at a time).
    fn claim_filters(&self, shard: ShardIndex) -> impl Iterator<Item = ShardIndex> {
        let next = (shard + 1) % self.config.shards;
        let buggy = self.config.has(Bug::ClaimFiltersAnotherShard) && next != shard;
        std::iter::once(shard).chain(buggy.then_some(next))
    }

    /// The phase of replica `r` after its ACQUIRE of `shard`, naming anchor `session`, sent at
    /// `sent`, answered `answer`: the ACQUIRE is the tick's first acknowledgement, counted from
    /// its send. A tick granted under an anchor the replica knows has ended starts cancelled.
    pub(crate) fn acquired(
        &self,
        r: &Replica,
        sent: Time,
        shard: ShardIndex,
        session: Option<Session>,
        answer: Acquired,
    ) -> Phase {
        match answer {
            Acquired::Granted(token) => Phase::Working(Tick {
                shard,
                token,
                anchor: sent,
                next_beat: sent + self.config.timings.heartbeat,
                renew: None,
                cancelled: self
                    .granted_under_ended_anchor(r, session)
                    .then_some(Cause::AnchorLost),
                session,
            }),
            Acquired::Refused => Phase::Idle,
        }
    }

    /// The heartbeat reads `answer` to the RENEW it sent at `sent`, at `now` on its clock.
    pub(crate) fn renewed(&self, tick: &mut Tick, sent: Time, now: Time, answer: Renewed) {
        tick.renew = None;
        match answer {
            Renewed::Extended if self.config.has(Bug::AbandonFromAnswer) => tick.anchor = now,
            Renewed::Extended => tick.anchor = sent,
            Renewed::Lost(cause) => tick.cancelled = Some(cause),
        }
    }

    /// Ends replica `id`'s tick with `release` sent.
    pub(crate) fn send_release(
        &self,
        state: &mut State,
        id: ReplicaId,
        release: Statement,
        delivery: Delivery,
    ) {
        let now = state.now;
        if delivery == Delivery::Delayed {
            state.delays_left -= 1;
            let r = &mut state.replicas[usize::from(id)];
            let sent = r.clock(now);
            end_tick(r, Phase::Releasing(sent, release, Reply::Pending));
        } else {
            self.run_release(state, release);
            end_tick(&mut state.replicas[usize::from(id)], Phase::Idle);
        }
    }
}

/// The ways a statement sent now may reach the server.
fn deliveries(state: &State) -> &'static [Delivery] {
    if state.delays_left > 0 {
        &[Delivery::Prompt, Delivery::Delayed]
    } else {
        &[Delivery::Prompt]
    }
}

/// Parks `statement` as `r`'s orphan: the server may still run it. A second one is lost.
pub(crate) fn orphan(r: &mut Replica, statement: Statement) {
    if r.orphan.is_none() {
        r.orphan = Some(statement);
    }
}

/// The replica's tick is over: it goes to `phase`, and forgets any revocation.
pub(crate) fn end_tick(r: &mut Replica, phase: Phase) {
    r.phase = phase;
    r.revoked = None;
}
