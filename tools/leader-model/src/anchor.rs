//! Anchors (issue 33): each replica holds one idle session to the server, its anchor, and names
//! it with every ACQUIRE; the row records the identity. ACQUIRE may take over a lease that has
//! not expired only when the server no longer has its holder's anchor. `docs/design/dead-holder-takeover.md`
//! is the design; this module is its model.
//!
//! | design | model |
//! |---|---|
//! | the anchor session's identity, `pg_backend_pid()` and `backend_start` | [`Session`]: a pid, which the server may give again once its session has ended, and a serial that stands for `backend_start` and is never given twice |
//! | SIGKILL or a crash: the kernel closes the sockets, the server ends the backend at once | `Crash`: the replica takes no step again and its anchor ends in the same step; what it sent may still run |
//! | a network blip the server noticed, `pg_terminate_backend` | `LoseAnchor`: the anchor ends, the process lives on |
//! | the holder hears its anchor's connection close (at once, or late after a blip) | `NoticeAnchorLost`, at any later moment: it cancels a tick granted under that anchor and opens a new anchor, whose pid may be an ended session's |
//! | a server restart or failover ends every session | `Failover` ends every anchor |
//! | ACQUIRE's takeover branch: no live session has the recorded identity, read in its own statement | `LeaseModel::takes_over`, on the server's state in the step that runs the ACQUIRE |
//! | the ring of watchers and the NOTIFY that wakes the others | not modelled: any idle replica may send ACQUIRE at any moment, which covers every moment a notice can wake it |
//! | a frozen process, or a partition the server has not noticed: the session lives on | a freeze or a delayed statement leaves the anchor alive; expiry frees the lease, as before |
//!
//! The protocol stays safe through an early takeover because the takeover issues a new, larger
//! token (the old holder's fence is false from that step), and because a holder is told when its
//! anchor ends and then cancels at once; until it is told it is counted like a holder whose lease
//! a failover took away (`Replica::revoked`).

use crate::config::Bug;
use crate::guards::{GuardKind, Subject, all_hold};
use crate::model::{Action, LeaseModel};
use crate::replica::orphan;
use crate::state::{
    Acquired, Cause, Phase, Replica, ReplicaId, Reply, Row, ShardIndex, State, Statement,
};

/// A pid the server gives a session.
pub type Pid = u8;

/// Stands for a session's `backend_start`: every new session's is above every other's.
pub type Serial = u8;

/// An anchor session's identity, as `pg_stat_activity` shows it.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Hash, PartialOrd, Ord)]
pub struct Session {
    /// `pg_backend_pid()`: unique among live sessions, given again once a session has ended.
    pub pid: Pid,
    /// `backend_start`.
    pub serial: Serial,
}

/// A replica's anchor as the server has it.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Hash, PartialOrd, Ord)]
pub struct Anchor {
    /// Its identity.
    pub session: Session,
    /// Whether the server still has the session (its replica may not know yet that it ended).
    pub alive: bool,
}

/// The pid of the session a replica opens when it re-anchors.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Hash)]
pub enum NewPid {
    /// A pid no session in the state has.
    Fresh,
    /// The pid of an ended session that a lease row still records.
    Reuse(Pid),
}

/// Whether the server has a session with `session`'s identity: the test ACQUIRE's takeover branch
/// makes. With `pid_only` (the seeded bug [`Bug::AnchorWithoutBackendStart`]), whether it has a
/// session with that pid.
pub fn alive_on_server(state: &State, session: Session, pid_only: bool) -> bool {
    state
        .replicas
        .iter()
        .filter_map(|r| r.anchor.filter(|a| a.alive))
        .any(|a| a.session == session || (pid_only && a.session.pid == session.pid))
}

/// A server restart or failover ends every session, so every anchor; and a failover to a standby
/// that lacks the last grant loses a takeover that grant was, with everything after it: the
/// lease taken over is live again on the promoted server (its token holds the row), and its
/// holder's claims pass the fence there as they did before the takeover. So a replica's
/// `taken_over` token of a shard is forgotten when it holds that shard's row of `standby` again.
pub fn failover(state: &mut State, standby: &[Row]) {
    for r in &mut state.replicas {
        if let Some(anchor) = &mut r.anchor {
            anchor.alive = false;
        }
        for (taken, row) in r.taken_over.iter_mut().zip(standby) {
            if *taken == Some(row.token) {
                *taken = None;
            }
        }
    }
}

/// `r` with its sessions blanked out: what orders the replicas for symmetry reduction, since
/// sessions are names (only which places hold the same session, or the same pid, matters).
pub fn unnamed(mut r: Replica) -> Replica {
    sessions_of_replica(&mut r, &mut |s| *s = Session { pid: 0, serial: 0 });
    r
}

fn sessions_of_replica(r: &mut Replica, f: &mut impl FnMut(&mut Session)) {
    if let Some(anchor) = &mut r.anchor {
        f(&mut anchor.session);
    }
    match &mut r.phase {
        Phase::Acquiring(_, _, Some(session), _) => f(session),
        Phase::Working(tick) => {
            if let Some(session) = &mut tick.session {
                f(session);
            }
        }
        _ => {}
    }
    if let Some(Statement::Acquire(_, Some(session))) = &mut r.orphan {
        f(session);
    }
}

/// Calls `f` on every session named in `state`: each replica's (its anchor, its ACQUIRE or tick,
/// its orphaned ACQUIRE) in order, then the rows', then the standby's.
fn for_each_session(state: &mut State, mut f: impl FnMut(&mut Session)) {
    for r in &mut state.replicas {
        sessions_of_replica(r, &mut f);
    }
    let standby = state.standby.iter_mut().flat_map(|rows| rows.iter_mut());
    for row in state.rows.iter_mut().chain(standby) {
        if let Some(session) = &mut row.anchor {
            f(session);
        }
    }
}

/// Every session named in `state`.
fn sessions(state: &State) -> Vec<Session> {
    let mut all = Vec::new();
    for_each_session(&mut state.clone(), |s| all.push(*s));
    all
}

/// Names the state's sessions afresh, pids and serials each numbered from 0 in the order they
/// first appear, so that symmetric states that differ only in the names are explored once (see
/// [`State::representative`]). Which places share a session, or a pid, is kept.
pub fn name_sessions(state: &mut State) {
    let (mut pids, mut serials) = (Vec::new(), Vec::new());
    let name = |seen: &mut Vec<u8>, old: u8| match seen.iter().position(|&o| o == old) {
        Some(new) => new as u8,
        None => {
            seen.push(old);
            (seen.len() - 1) as u8
        }
    };
    for_each_session(state, |s| {
        *s = Session {
            pid: name(&mut pids, s.pid),
            serial: name(&mut serials, s.serial),
        };
    });
}

/// Numbers the pids and serials in `state` 0, 1, ... in their order, so that states that differ
/// only in names no longer used are explored once. A session's name changes only when an older
/// one is forgotten, so a trace reads the same session the same from step to step.
pub fn compact_sessions(state: &mut State) {
    let named = sessions(state);
    let in_use = |value: fn(&Session) -> u8| {
        let mut values: Vec<u8> = named.iter().map(value).collect();
        values.sort_unstable();
        values.dedup();
        values
    };
    let (pids, serials) = (in_use(|s| s.pid), in_use(|s| s.serial));
    let rank = |values: &[u8], v: u8| values.iter().filter(|&&o| o < v).count() as u8;
    for_each_session(state, |s| {
        *s = Session {
            pid: rank(&pids, s.pid),
            serial: rank(&serials, s.serial),
        };
    });
}

impl LeaseModel {
    /// Replica `id`'s anchor steps: it crashes, its anchor is lost, or it learns that its anchor
    /// ended and opens another, with a fresh pid or one an ended session had.
    pub(crate) fn anchor_actions(&self, state: &State, id: ReplicaId, actions: &mut Vec<Action>) {
        let r = &state.replicas[usize::from(id)];
        if !self.config.anchors || r.phase == Phase::Crashed {
            return;
        }
        if state.crashes_left > 0 {
            actions.push(Action::Crash(id));
        }
        let Some(anchor) = r.anchor else {
            return;
        };
        if anchor.alive {
            if state.anchor_losses_left > 0 {
                actions.push(Action::LoseAnchor(id));
            }
            return;
        }
        if r.frozen {
            return;
        }
        actions.push(Action::NoticeAnchorLost(id, NewPid::Fresh));
        // A pid the server may give again: an ended session's that a row still records (only
        // those can make a difference).
        let mut reusable: Vec<Pid> = Vec::new();
        let standby = state.standby.iter().flat_map(|rows| rows.iter());
        for session in state
            .rows
            .iter()
            .chain(standby)
            .filter_map(|row| row.anchor)
        {
            if !alive_on_server(state, session, true) && !reusable.contains(&session.pid) {
                reusable.push(session.pid);
            }
        }
        actions.extend(
            reusable
                .into_iter()
                .map(|pid| Action::NoticeAnchorLost(id, NewPid::Reuse(pid))),
        );
    }

    /// The replica's anchors at the start: one live session each.
    pub(crate) fn first_anchor(&self, id: ReplicaId) -> Option<Anchor> {
        self.config.anchors.then_some(Anchor {
            session: Session {
                pid: id,
                serial: id,
            },
            alive: true,
        })
    }

    /// Replica `id`'s process dies, and its anchor with it. A statement it was waiting for stays
    /// on the server (as its orphan), as does a claim it sent.
    pub(crate) fn crash(&self, state: &mut State, id: ReplicaId) {
        state.crashes_left -= 1;
        let r = &mut state.replicas[usize::from(id)];
        let pending = match r.phase {
            Phase::Acquiring(_, shard, session, Reply::Pending) => {
                Some(Statement::Acquire(shard, session))
            }
            Phase::Working(tick) if matches!(tick.renew, Some((_, Reply::Pending))) => {
                Some(Statement::Renew(tick.fence()))
            }
            Phase::Releasing(_, statement, Reply::Pending) => Some(statement),
            _ => None,
        };
        if let Some(statement) = pending {
            orphan(r, statement);
        }
        r.phase = Phase::Crashed;
        r.frozen = false;
        r.revoked = None;
        if let Some(anchor) = &mut r.anchor {
            anchor.alive = false;
        }
    }

    /// Replica `id`'s anchor ends while its process lives on.
    pub(crate) fn lose_anchor(&self, state: &mut State, id: ReplicaId) {
        state.anchor_losses_left -= 1;
        if let Some(anchor) = &mut state.replicas[usize::from(id)].anchor {
            anchor.alive = false;
        }
    }

    /// Replica `id` learns that its anchor ended: it cancels the tick granted under it at once
    /// (a RENEW in flight is dropped and may still run), and opens a new anchor, whose pid is
    /// `pid`. With [`Bug::WorksOnAfterAnchorLost`] the tick runs on; the replica knows its lease
    /// may be taken over, so it is no longer counted as one whose lease was taken away unknown to
    /// it (`revoked`).
    pub(crate) fn notice_anchor_lost(&self, state: &mut State, id: ReplicaId, pid: NewPid) {
        let named = sessions(state);
        let session = Session {
            pid: match pid {
                NewPid::Fresh => named.iter().map(|s| s.pid + 1).max().unwrap_or(0),
                NewPid::Reuse(pid) => pid,
            },
            serial: named.iter().map(|s| s.serial + 1).max().unwrap_or(0),
        };
        let r = &mut state.replicas[usize::from(id)];
        let Some(ended) = r.anchor.replace(Anchor {
            session,
            alive: true,
        }) else {
            return;
        };
        let Phase::Working(mut tick) = r.phase else {
            return;
        };
        if tick.session != Some(ended.session) {
            return;
        }
        if self.config.has(Bug::WorksOnAfterAnchorLost) {
            if tick.cancelled.is_none() {
                r.revoked = None;
            }
            return;
        }
        if tick.cancelled.is_none() {
            if let Some((_, Reply::Pending)) = tick.renew {
                orphan(r, Statement::Renew(tick.fence()));
            }
            tick.renew = None;
            tick.cancelled = Some(Cause::AnchorLost);
            r.phase = Phase::Working(tick);
        }
    }

    /// Whether a tick granted under `session` starts cancelled: the replica has opened another
    /// anchor since it sent the ACQUIRE, so it knows that one ended.
    pub(crate) fn granted_under_ended_anchor(&self, r: &Replica, session: Option<Session>) -> bool {
        self.config.anchors
            && !self.config.has(Bug::WorksOnAfterAnchorLost)
            && session != r.anchor.map(|a| a.session)
    }

    /// ACQUIRE's guard on its caller: the anchor session it names lives on the server. A grant
    /// recording an ended anchor could be taken over at once, and its caller, which re-anchors as
    /// soon as it hears, would cancel it; without this guard two replicas whose anchors ended
    /// would take the lease from each other again and again. With it, every takeover ends a lease
    /// granted under a live anchor, so there are no more takeovers than anchors that end.
    pub(crate) fn anchor_lives(&self, state: &State, session: Option<Session>) -> bool {
        !self.config.anchors
            || session.is_some_and(|s| {
                alive_on_server(state, s, self.config.has(Bug::AnchorWithoutBackendStart))
            })
    }

    /// Whether the server no longer has the anchor session `row` records, as ACQUIRE's
    /// `leader_anchor_ended` decides it: with [`Bug::TakeoverWithoutAnchorCheck`] any recorded
    /// anchor counts as ended, with [`Bug::AnchorWithoutBackendStart`] a live session with its pid
    /// counts as its own.
    pub(crate) fn holder_anchor_ended(&self, state: &State, row: &Row) -> bool {
        row.anchor.is_some_and(|recorded| {
            self.config.has(Bug::TakeoverWithoutAnchorCheck)
                || !alive_on_server(
                    state,
                    recorded,
                    self.config.has(Bug::AnchorWithoutBackendStart),
                )
        })
    }

    /// ACQUIRE's takeover (`ended_early`): whether its guards all hold for `subject`, the row it
    /// runs on. Records a lease whose holder's anchor has really ended that the takeover leaves
    /// live although every other guard holds (for
    /// [`TAKEOVER_AT_FIRST_ASK`](crate::properties::TAKEOVER_AT_FIRST_ASK)).
    pub(crate) fn takes_over(&self, state: &mut State, subject: Subject<'_>) -> bool {
        if !self.config.anchors {
            return false;
        }
        let takes = all_hold(&self.guards.takeover, subject);
        let really_ended = subject
            .row
            .anchor
            .is_some_and(|recorded| !alive_on_server(state, recorded, false));
        let otherwise = self
            .guards
            .takeover
            .iter()
            .filter(|&&g| g != GuardKind::HolderAnchorEnded)
            .all(|g| g.holds(subject));
        state.history.takeover_missed |= really_ended && otherwise && !takes;
        takes
    }

    /// Records that ACQUIRE took over `old`, the row of `shard`, from its holder. Each replica
    /// that runs a tick of that lease is counted as one whose lease was taken away unknown to it
    /// (`revoked`, as after a failover) when its anchor has ended and it has not heard, or has
    /// already stopped: it stops the moment it hears. One whose anchor lives, or that heard
    /// and works on, is not: for it the takeover is a second holder.
    pub(crate) fn record_takeover(&self, state: &mut State, shard: ShardIndex, old: &Row) {
        state.history.dead_holder_taken_over = true;
        if let Some(holder) = old.holder {
            let taken = &mut state.replicas[usize::from(holder)].taken_over[usize::from(shard)];
            *taken = (*taken).max(Some(old.token));
        }
        let now = state.now;
        for i in 0..state.replicas.len() {
            let r = &state.replicas[i];
            let (tick_shard, token, session, stopped) = match r.phase {
                Phase::Working(tick) => (
                    tick.shard,
                    tick.token,
                    tick.session,
                    tick.cancelled.is_some(),
                ),
                Phase::Acquiring(_, s, session, Reply::Ran(Acquired::Granted(token))) => (
                    s,
                    token,
                    session,
                    self.granted_under_ended_anchor(r, session),
                ),
                _ => continue,
            };
            if tick_shard != shard || token != old.token {
                continue;
            }
            let ended = session.is_some_and(|s| !alive_on_server(state, s, false));
            let unaware = session == r.anchor.map(|a| a.session);
            if ended && (unaware || stopped) {
                let r = &mut state.replicas[i];
                r.revoked = Some((token, r.clock(now)));
            }
        }
    }
}

#[cfg(test)]
mod tests {
    use stateright::Model;

    use super::*;
    use crate::config::Config;
    use crate::model::Delivery;

    fn after(model: &LeaseModel, actions: &[Action]) -> State {
        let mut state = model.init_states().remove(0);
        for &action in actions {
            state = model
                .next_state(&state, action)
                .expect("the action applies");
        }
        state
    }

    #[test]
    fn symmetric_states_with_anchors_have_one_representative() {
        let model = LeaseModel::new(Config::dead_holders(2)).expect("the model builds");
        let run = |r: ReplicaId| {
            after(
                &model,
                &[
                    Action::SendAcquire(r, Delivery::Prompt, None, 0),
                    Action::LoseAnchor(r),
                    Action::NoticeAnchorLost(r, NewPid::Reuse(r)),
                ],
            )
        };
        let (a, b) = (run(0), run(1));
        assert_ne!(a, b);
        assert_eq!(a.representative(), b.representative());
    }

    #[test]
    fn a_reused_pid_is_one_session_for_the_pid_only_test_and_another_for_the_full_identity() {
        let model = LeaseModel::new(Config::dead_holders(2)).expect("the model builds");
        let state = after(
            &model,
            &[
                Action::SendAcquire(0, Delivery::Prompt, None, 0),
                Action::LoseAnchor(0),
                Action::NoticeAnchorLost(0, NewPid::Reuse(0)),
            ],
        );
        let recorded = state.rows[0]
            .anchor
            .expect("the grant records r0's first anchor");
        let current = state.replicas[0].anchor.expect("r0 re-anchored");
        assert_eq!(recorded.pid, current.session.pid);
        assert_ne!(recorded, current.session);
        assert!(!alive_on_server(&state, recorded, false));
        assert!(alive_on_server(&state, recorded, true));
    }
}
