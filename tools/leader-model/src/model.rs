//! The transitions: each replica runs the runtime's loop, the server runs statements when it
//! gets to them, clocks advance, and the faults strike.
//!
//! | runtime code | model |
//! |---|---|
//! | `poll::poll_roles` and `worker::work_lease`: ACQUIRE, run the tick, repeat | `Idle` sends ACQUIRE at any time (every poll schedule is one of these) |
//! | `heartbeat::keep_alive` rule 1: RENEW every `heartbeat` | `SendRenew` at `next_beat`, one RENEW in flight at a time |
//! | rule 2: the acknowledgement counts from the send | `AnswerRenew` sets `anchor` to the RENEW's send time |
//! | rule 3: abandon `abandon_after` after `anchor`, even with a RENEW in flight | `Abandon`, which wins over a late answer |
//! | rule 4: zero rows cancels at once | `AnswerRenew` with `Lost` cancels |
//! | rule 5: an error or timeout is a missed beat | `GiveUpWaiting` on a RENEW |
//! | `tick::decide`: a loss wins, a heartbeat timeout sends nothing | `WorkStops` |
//! | `lease::send`: the caller stops waiting after the statement timeout; the server may still run it | `GiveUpWaiting` leaves the statement as the replica's orphan |
//!
//! Timers are urgent: the database clock does not advance while a replica that is not frozen has
//! a step due (a beat, a timeout, an abandon, a cancelled job's stop). The server's steps are
//! never urgent: any statement may run late, or never.
//!
//! A sharded role is one row per shard. An ACQUIRE asks for one shard (any of them), and every
//! later statement of the tick names that shard's row; a claim proves its lease with the fence of
//! that row and takes the keys its shard filter selects (`leader_shard_of(key, count) = shard`,
//! here `key mod count`).

use stateright::{Model, Property};

use crate::anchor::{self, NewPid};
use crate::config::{Config, Time};
use crate::guards::Guards;
use crate::properties;
use crate::replica::{end_tick, orphan};
use crate::state::{
    Cause, Claim, History, MAX_KEYS, MAX_SHARDS, Operator, Outcome, Phase, Replica, ReplicaId,
    Reply, Row, Rows, ShardIndex, State, Statement, WorkEnd,
};

/// How a statement reaches the server.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Hash)]
pub enum Delivery {
    /// It runs at once and its answer comes straight back (one atomic step).
    Prompt,
    /// A delay fault: it runs later, or never, and its answer may come after the caller gave up.
    Delayed,
}

/// One step of the model.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Hash)]
pub enum Action {
    /// The database clock advances one tick; replicas' clocks may drift from it.
    Tick {
        /// Bit `i` set: replica `i`'s clock does not advance this tick.
        slow: u8,
        /// Bit `i` set: replica `i`'s clock advances two ticks.
        fast: u8,
    },
    /// A replica sends ACQUIRE for a shard, asking for a scheduled instant on a calendar schedule.
    SendAcquire(ReplicaId, Delivery, Option<Time>, ShardIndex),
    /// The server runs a replica's ACQUIRE.
    RunAcquire(ReplicaId),
    /// A replica reads its ACQUIRE's answer.
    AnswerAcquire(ReplicaId),
    /// A replica sends RENEW.
    SendRenew(ReplicaId, Delivery),
    /// The server runs a replica's RENEW.
    RunRenew(ReplicaId),
    /// A replica reads its RENEW's answer.
    AnswerRenew(ReplicaId),
    /// A replica's statement timeout fires: it stops waiting for its ACQUIRE, RENEW or RELEASE.
    GiveUpWaiting(ReplicaId),
    /// A replica's heartbeat abandons its tick.
    Abandon(ReplicaId),
    /// A replica's job sends a fenced claim of the keys of a shard (its tick's own, unless a
    /// seeded bug filters by another).
    SendClaim(ReplicaId, Delivery, ShardIndex),
    /// The server runs a replica's claim, checking the fence.
    RunClaim(ReplicaId),
    /// A replica's job ends on its own; the RELEASE is sent.
    WorkEnds(ReplicaId, WorkEnd, Delivery),
    /// A cancelled replica's job stops; the RELEASE, if any, is sent.
    WorkStops(ReplicaId, Delivery),
    /// The server runs a replica's RELEASE.
    RunRelease(ReplicaId),
    /// A replica reads its RELEASE's answer.
    AnswerRelease(ReplicaId),
    /// The server runs a statement whose caller gave up on it.
    RunOrphan(ReplicaId),
    /// A replica freezes.
    Freeze(ReplicaId),
    /// A frozen replica resumes.
    Resume(ReplicaId),
    /// An operator runs `leader_pause`.
    Pause,
    /// An operator runs `leader_unpause`.
    Unpause,
    /// The primary fails; the standby, which lacks the last grant, is promoted (taking a tick).
    /// With anchors, every anchor ends with the old primary.
    Failover,
    /// A replica's process dies, and its anchor with it.
    Crash(ReplicaId),
    /// A replica's anchor ends while its process lives on.
    LoseAnchor(ReplicaId),
    /// A replica learns that its anchor ended, cancels the tick granted under it, and opens a new
    /// anchor with this pid.
    NoticeAnchorLost(ReplicaId, NewPid),
}

/// The lease protocol as a Stateright model.
#[derive(Debug, Clone)]
pub struct LeaseModel {
    /// What is checked.
    pub config: Config,
    /// The statements' guards, from `leader-core`.
    pub guards: Guards,
}

impl LeaseModel {
    /// The model for `config`.
    ///
    /// # Errors
    ///
    /// A sentence saying what is wrong: `leader-core`'s guard lists and the model disagree, or the
    /// bounds are out of range.
    pub fn new(config: Config) -> Result<LeaseModel, String> {
        if !(1..=3).contains(&config.replicas) {
            return Err(format!(
                "{} replicas: the model checks 1 to 3",
                config.replicas
            ));
        }
        if !(1..=MAX_SHARDS).contains(&usize::from(config.shards)) {
            return Err(format!(
                "{} shards: the model checks 1 to {MAX_SHARDS}",
                config.shards
            ));
        }
        if usize::from(config.keys) > MAX_KEYS {
            return Err(format!(
                "{} keys: the model watches at most {MAX_KEYS}",
                config.keys
            ));
        }
        let t = config.timings;
        if t.heartbeat == 0 || t.statement_timeout == 0 || t.interval == 0 || t.ttl == 0 {
            return Err("every timing must be at least one tick".into());
        }
        let guards = Guards::resolve(&config)?;
        Ok(LeaseModel { config, guards })
    }

    /// Forgets what can no longer make a difference, so equivalent states are explored once:
    /// moments already past on the rows, the clock of a replica that holds no moment of it, and a
    /// key's claim whose lease is live on neither the primary nor the standby (only a failover
    /// brings a lease back, and only one the standby has).
    fn normalize(&self, state: &mut State) {
        let now = state.now;
        let interval = self.config.timings.interval;
        let past = |row: &mut Row| {
            if row.expires.is_some_and(|e| e <= now) {
                row.expires = Some(0);
                // Only a live lease can be taken over: the anchor no longer matters.
                row.anchor = None;
            }
            row.not_before = row.not_before.filter(|&t| t > now);
            row.cooldown_until = row.cooldown_until.filter(|&t| t > now);
            if row.last_tick_ended.is_some_and(|t| t + interval <= now) {
                row.last_tick_ended = Some(0);
            }
        };
        let standby = state.standby.iter_mut().flat_map(|rows| rows.iter_mut());
        for row in state.rows.iter_mut().chain(standby) {
            past(row);
        }
        for claim in state.history.key_claims.iter_mut() {
            let may_be_live = claim.is_some_and(|c| {
                c.is_live_in(&state.rows, now)
                    || state
                        .standby
                        .as_ref()
                        .is_some_and(|standby| c.is_live_in(standby, now))
            });
            if !may_be_live {
                *claim = None;
            }
        }
        let cap = self.config.clock_drift_every.unwrap_or(1).saturating_sub(1);
        for r in &mut state.replicas {
            if matches!(r.phase, Phase::Idle | Phase::Crashed) {
                r.lag = 0;
                r.since_drift = cap;
            }
        }
        if self.config.anchors {
            anchor::compact_sessions(state);
        }
    }

    fn advance_clock(&self, state: &mut State, slow: u8, fast: u8) {
        state.now += 1;
        let cap = self.config.clock_drift_every.unwrap_or(1).saturating_sub(1);
        for (i, r) in state.replicas.iter_mut().enumerate() {
            if slow & (1 << i) != 0 {
                r.lag += 1;
                r.since_drift = 0;
            } else if fast & (1 << i) != 0 {
                r.lag -= 1;
                r.since_drift = 0;
            } else {
                r.since_drift = (r.since_drift + 1).min(cap);
            }
        }
    }
}

impl Model for LeaseModel {
    type State = State;
    type Action = Action;

    fn init_states(&self) -> Vec<State> {
        let cap = self.config.clock_drift_every.unwrap_or(1).saturating_sub(1);
        let replica = |id: ReplicaId| Replica {
            lag: 0,
            since_drift: cap,
            frozen: false,
            phase: Phase::Idle,
            claim: None,
            orphan: None,
            revoked: None,
            asks: None,
            anchor: self.first_anchor(id),
            taken_over: [None; MAX_SHARDS],
        };
        let row = Row {
            token: 0,
            holder: None,
            expires: None,
            not_before: None,
            paused: false,
            last_tick_ended: None,
            cooldown_until: None,
            tick_instant: None,
            last_completed_instant: None,
            completed_instants: 0,
            anchor: None,
        };
        vec![State {
            now: 1,
            rows: Rows::new(row, self.config.shards),
            standby: None,
            replicas: (0..self.config.replicas).map(replica).collect(),
            operator: Operator::Idle,
            freezes_left: self.config.freezes,
            delays_left: self.config.delays,
            failovers_left: self.config.failovers,
            shutdowns_left: self.config.shutdowns,
            crashes_left: self.config.crashes,
            anchor_losses_left: self.config.anchor_losses,
            history: History::new(self.config.shards, self.config.keys),
        }]
    }

    fn actions(&self, state: &State, actions: &mut Vec<Action>) {
        for id in 0..self.config.replicas {
            self.replica_actions(state, id, actions);
            self.anchor_actions(state, id, actions);
        }
        match state.operator {
            Operator::Idle if self.config.pause => actions.push(Action::Pause),
            Operator::Paused => actions.push(Action::Unpause),
            _ => {}
        }
        if self.clock_may_advance(state) {
            if state.failovers_left > 0 && state.standby.is_some() {
                actions.push(Action::Failover);
            }
            let eligible = match self.config.clock_drift_every {
                None => 0u8,
                Some(every) => state
                    .replicas
                    .iter()
                    .enumerate()
                    // An idle replica holds no moment of its clock: drift changes nothing.
                    .filter(|(_, r)| r.phase != Phase::Idle && r.since_drift + 1 >= every)
                    .fold(0, |mask, (i, _)| mask | 1 << i),
            };
            // Each replica whose clock may drift this tick runs slow, fast or on time.
            let mut slow = eligible;
            loop {
                let rest = if self.config.fast_clocks {
                    eligible & !slow
                } else {
                    0
                };
                let mut fast = rest;
                loop {
                    actions.push(Action::Tick { slow, fast });
                    if fast == 0 {
                        break;
                    }
                    fast = (fast - 1) & rest;
                }
                if slow == 0 {
                    break;
                }
                slow = (slow - 1) & eligible;
            }
        }
    }

    fn next_state(&self, last: &State, action: Action) -> Option<State> {
        let mut state = last.clone();
        let t = self.config.timings;
        let now = state.now;
        match action {
            Action::Tick { slow, fast } => self.advance_clock(&mut state, slow, fast),
            Action::Pause => self.run_pause(&mut state),
            Action::Unpause => Self::run_unpause(&mut state),
            Action::Failover => {
                let standby = state.standby.take()?;
                Self::revoke_lost_leases(&mut state, &standby);
                anchor::failover(&mut state, &standby);
                state.rows = standby;
                state.failovers_left -= 1;
                self.advance_clock(&mut state, 0, 0);
            }
            Action::Freeze(id) => {
                state.freezes_left -= 1;
                state.replicas[usize::from(id)].frozen = true;
            }
            Action::Resume(id) => state.replicas[usize::from(id)].frozen = false,
            Action::Crash(id) => self.crash(&mut state, id),
            Action::LoseAnchor(id) => self.lose_anchor(&mut state, id),
            Action::NoticeAnchorLost(id, pid) => self.notice_anchor_lost(&mut state, id, pid),
            Action::RunAcquire(id) => {
                let Phase::Acquiring(sent, shard, session, Reply::Pending) =
                    state.replicas[usize::from(id)].phase
                else {
                    return None;
                };
                let answer = self.run_acquire(&mut state, id, shard, session);
                state.replicas[usize::from(id)].phase =
                    Phase::Acquiring(sent, shard, session, Reply::Ran(answer));
            }
            Action::RunRenew(id) => {
                let Phase::Working(mut tick) = state.replicas[usize::from(id)].phase else {
                    return None;
                };
                let Some((sent, Reply::Pending)) = tick.renew else {
                    return None;
                };
                let answer = self.run_renew(&mut state, tick.fence());
                tick.renew = Some((sent, Reply::Ran(answer)));
                state.replicas[usize::from(id)].phase = Phase::Working(tick);
            }
            Action::RunRelease(id) => {
                let Phase::Releasing(sent, statement, Reply::Pending) =
                    state.replicas[usize::from(id)].phase
                else {
                    return None;
                };
                self.run_release(&mut state, statement);
                state.replicas[usize::from(id)].phase =
                    Phase::Releasing(sent, statement, Reply::Ran(()));
            }
            Action::RunClaim(id) => {
                let claim = state.replicas[usize::from(id)].claim.take()?;
                self.run_claim(&mut state, id, claim);
            }
            Action::RunOrphan(id) => {
                let statement = state.replicas[usize::from(id)].orphan.take()?;
                self.run(&mut state, id, statement);
            }
            Action::SendAcquire(id, delivery, instant, shard) => {
                let r = &mut state.replicas[usize::from(id)];
                r.asks = instant;
                let session = r.anchor.map(|a| a.session);
                if delivery == Delivery::Delayed {
                    state.delays_left -= 1;
                    r.phase = Phase::Acquiring(r.clock(now), shard, session, Reply::Pending);
                } else {
                    let answer = self.run_acquire(&mut state, id, shard, session);
                    let r = &state.replicas[usize::from(id)];
                    let phase = self.acquired(r, r.clock(now), shard, session, answer);
                    state.replicas[usize::from(id)].phase = phase;
                }
            }
            Action::AnswerAcquire(id) => {
                let r = &state.replicas[usize::from(id)];
                let Phase::Acquiring(sent, shard, session, Reply::Ran(answer)) = r.phase else {
                    return None;
                };
                let phase = self.acquired(r, sent, shard, session, answer);
                state.replicas[usize::from(id)].phase = phase;
            }
            Action::SendRenew(id, delivery) => {
                let c = state.replicas[usize::from(id)].clock(now);
                let Phase::Working(mut tick) = state.replicas[usize::from(id)].phase else {
                    return None;
                };
                tick.next_beat = c + t.heartbeat;
                if delivery == Delivery::Delayed {
                    state.delays_left -= 1;
                    tick.renew = Some((c, Reply::Pending));
                } else {
                    let answer = self.run_renew(&mut state, tick.fence());
                    self.renewed(&mut tick, c, c, answer);
                }
                state.replicas[usize::from(id)].phase = Phase::Working(tick);
            }
            Action::AnswerRenew(id) => {
                let r = &mut state.replicas[usize::from(id)];
                let c = r.clock(now);
                let Phase::Working(mut tick) = r.phase else {
                    return None;
                };
                let Some((sent, Reply::Ran(answer))) = tick.renew else {
                    return None;
                };
                self.renewed(&mut tick, sent, c, answer);
                r.phase = Phase::Working(tick);
            }
            Action::GiveUpWaiting(id) => {
                let r = &mut state.replicas[usize::from(id)];
                match r.phase {
                    Phase::Acquiring(_, shard, session, reply) => {
                        if reply == Reply::Pending {
                            orphan(r, Statement::Acquire(shard, session));
                        }
                        end_tick(r, Phase::Idle);
                    }
                    Phase::Working(mut tick) => {
                        if let Some((_, Reply::Pending)) = tick.renew {
                            orphan(r, Statement::Renew(tick.fence()));
                        }
                        tick.renew = None;
                        r.phase = Phase::Working(tick);
                    }
                    Phase::Releasing(_, statement, reply) => {
                        if reply == Reply::Pending {
                            orphan(r, statement);
                        }
                        end_tick(r, Phase::Idle);
                    }
                    Phase::Idle | Phase::Crashed => return None,
                }
            }
            Action::Abandon(id) => {
                let r = &mut state.replicas[usize::from(id)];
                let Phase::Working(mut tick) = r.phase else {
                    return None;
                };
                if let Some((_, Reply::Pending)) = tick.renew {
                    orphan(r, Statement::Renew(tick.fence()));
                }
                tick.renew = None;
                tick.cancelled = Some(Cause::HeartbeatTimeout);
                r.phase = Phase::Working(tick);
            }
            Action::SendClaim(id, delivery, filter) => {
                let Phase::Working(tick) = state.replicas[usize::from(id)].phase else {
                    return None;
                };
                let claim = Claim {
                    fence: tick.fence(),
                    filter,
                };
                if delivery == Delivery::Delayed {
                    state.delays_left -= 1;
                    state.replicas[usize::from(id)].claim = Some(claim);
                } else {
                    self.run_claim(&mut state, id, claim);
                }
            }
            Action::WorkEnds(id, end, delivery) => {
                let r = &mut state.replicas[usize::from(id)];
                let Phase::Working(tick) = r.phase else {
                    return None;
                };
                // The heartbeat is dropped with the tick: a RENEW in flight may still run.
                if let Some((_, Reply::Pending)) = tick.renew {
                    orphan(r, Statement::Renew(tick.fence()));
                }
                if end == WorkEnd::Shutdown {
                    state.shutdowns_left -= 1;
                }
                let (outcome, completed) = match end {
                    WorkEnd::Completed => (Outcome::Completed, true),
                    WorkEnd::Panicked => (Outcome::Panicked, false),
                    WorkEnd::Shutdown => (Outcome::Shutdown, false),
                };
                let release = Statement::Release {
                    fence: tick.fence(),
                    outcome,
                    completed,
                };
                self.send_release(&mut state, id, release, delivery);
            }
            Action::WorkStops(id, delivery) => {
                let r = &mut state.replicas[usize::from(id)];
                let Phase::Working(tick) = r.phase else {
                    return None;
                };
                match tick.cancelled? {
                    // A heartbeat timeout sends nothing more for the tick.
                    Cause::HeartbeatTimeout if delivery == Delivery::Prompt => {
                        end_tick(r, Phase::Idle);
                    }
                    Cause::HeartbeatTimeout => return None,
                    cause @ (Cause::Lost | Cause::Paused | Cause::AnchorLost) => {
                        let outcome = if cause == Cause::AnchorLost {
                            Outcome::AnchorLost
                        } else {
                            Outcome::Lost
                        };
                        let release = Statement::Release {
                            fence: tick.fence(),
                            outcome,
                            completed: false,
                        };
                        self.send_release(&mut state, id, release, delivery);
                    }
                }
            }
            Action::AnswerRelease(id) => {
                end_tick(&mut state.replicas[usize::from(id)], Phase::Idle)
            }
        }
        self.normalize(&mut state);
        Some(state)
    }

    fn properties(&self) -> Vec<Property<Self>> {
        properties::all()
    }

    fn within_boundary(&self, state: &State) -> bool {
        state.now <= self.config.horizon
    }

    fn format_action(&self, action: &Action) -> String {
        crate::trace::action(action, self.config.shards)
    }
}
