//! Counterexamples and examples as readable traces: one line per step, then the state after it.

use std::fmt::Write;

use stateright::Model;
use stateright::Path;

use crate::anchor::{NewPid, Session};
use crate::model::{Action, Delivery, LeaseModel};
use crate::state::{Acquired, Fence, Phase, Renewed, Reply, Row, ShardIndex, State, Statement};

fn delivery(d: Delivery) -> &'static str {
    match d {
        Delivery::Prompt => "",
        Delivery::Delayed => " [DELAYED: it runs later or never]",
    }
}

/// ` of shard N` for a role in `shards` shards; nothing for an unsharded role.
fn of_shard(shard: ShardIndex, shards: usize) -> String {
    if shards > 1 {
        format!(" of shard {shard}")
    } else {
        String::new()
    }
}

/// ` of shard N's keys`, what a claim filtered by shard `filter` selects; nothing for an
/// unsharded role.
fn keys_of(filter: ShardIndex, shards: usize) -> String {
    if shards > 1 {
        format!(" of shard {filter}'s keys")
    } else {
        String::new()
    }
}

/// A fence as a statement or claim carries it: the token, and the shard if the role has several.
fn fence(fence: Fence, shards: usize) -> String {
    if shards > 1 {
        format!("shard {}, {}", fence.shard, fence.token)
    } else {
        fence.token.to_string()
    }
}

/// One step of a role in `shards` shards, in words.
pub fn action(action: &Action, shards: u8) -> String {
    let shards = usize::from(shards);
    match *action {
        Action::Tick { slow: 0, fast: 0 } => "the clock advances".into(),
        Action::Tick { slow, fast } => {
            let names = |mask: u8| -> Vec<String> {
                (0..8)
                    .filter(|i| mask & (1 << i) != 0)
                    .map(|i| format!("r{i}"))
                    .collect()
            };
            let mut drift = Vec::new();
            if slow != 0 {
                drift.push(format!("{} loses the tick", names(slow).join(" and ")));
            }
            if fast != 0 {
                drift.push(format!("{} gains a tick", names(fast).join(" and ")));
            }
            format!("the clock advances; by its own clock {}", drift.join(", "))
        }
        Action::SendAcquire(r, d, instant, shard) => {
            let instant = instant.map_or(String::new(), |i| format!(" for instant {i}"));
            let shard = of_shard(shard, shards);
            format!("r{r} sends ACQUIRE{shard}{instant}{}", delivery(d))
        }
        Action::RunAcquire(r) => format!("the server runs r{r}'s ACQUIRE"),
        Action::AnswerAcquire(r) => format!("r{r} reads its ACQUIRE's answer"),
        Action::SendRenew(r, d) => format!("r{r} sends RENEW{}", delivery(d)),
        Action::RunRenew(r) => format!("the server runs r{r}'s RENEW"),
        Action::AnswerRenew(r) => format!("r{r} reads its RENEW's answer"),
        Action::GiveUpWaiting(r) => format!("r{r} stops waiting (statement timeout)"),
        Action::Abandon(r) => format!("r{r}'s heartbeat abandons the tick"),
        Action::SendClaim(r, d, filter) => format!(
            "r{r}'s job sends a fenced claim{}{}",
            keys_of(filter, shards),
            delivery(d)
        ),
        Action::RunClaim(r) => format!("the server runs r{r}'s claim"),
        Action::WorkEnds(r, end, d) => {
            format!("r{r}'s job ends ({end:?}); RELEASE sent{}", delivery(d))
        }
        Action::WorkStops(r, d) => format!("r{r}'s cancelled job stops{}", delivery(d)),
        Action::RunRelease(r) => format!("the server runs r{r}'s RELEASE"),
        Action::AnswerRelease(r) => format!("r{r} reads its RELEASE's answer"),
        Action::RunOrphan(r) => format!("the server runs r{r}'s abandoned statement late"),
        Action::Freeze(r) => format!("r{r} freezes"),
        Action::Resume(r) => format!("r{r} resumes"),
        Action::Pause if shards > 1 => "an operator pauses the role (every shard)".into(),
        Action::Pause => "an operator pauses the role".into(),
        Action::Unpause => "an operator unpauses the role".into(),
        Action::Failover => {
            "the primary fails over to a standby that lacks the last grant (one tick)".into()
        }
        Action::Crash(r) => format!("r{r}'s process dies (SIGKILL), and its anchor with it"),
        Action::LoseAnchor(r) => format!("r{r}'s anchor session ends; its process lives on"),
        Action::NoticeAnchorLost(r, pid) => format!(
            "r{r} learns its anchor ended: it cancels a tick granted under it and re-anchors{}",
            match pid {
                NewPid::Fresh => String::new(),
                NewPid::Reuse(pid) => format!(" (the server gives it pid {pid} again)"),
            }
        ),
    }
}

fn opt(t: Option<u8>) -> String {
    t.map_or("-".into(), |t| t.to_string())
}

fn statement(s: &Statement, shards: usize) -> String {
    match *s {
        Statement::Acquire(shard, _) => format!("ACQUIRE{}", of_shard(shard, shards)),
        Statement::Renew(f) => format!("RENEW({})", fence(f, shards)),
        Statement::Release {
            fence: f, outcome, ..
        } => {
            format!("RELEASE({}, {outcome:?})", fence(f, shards))
        }
    }
}

fn reply<T: std::fmt::Debug>(reply: &Reply<T>) -> String {
    match reply {
        Reply::Pending => "not run yet".into(),
        Reply::Ran(answer) => format!("answered {answer:?}"),
    }
}

/// An anchor session's identity: its pid and, standing for `backend_start`, its serial.
fn session(s: Session) -> String {
    format!("pid {} start #{}", s.pid, s.serial)
}

fn row(row: &Row, now: u8) -> String {
    format!(
        "token {}, holder {}{}, expires {}, not_before {}, last tick {}{}",
        row.token,
        row.holder.map_or("-".into(), |h| format!("r{h}")),
        row.anchor
            .map_or(String::new(), |s| format!(" (anchor {})", session(s))),
        match row.expires {
            Some(e) if e <= now => "passed".into(),
            other => opt(other),
        },
        opt(row.not_before),
        match row.last_tick_ended {
            Some(0) => "long ago".into(),
            other => opt(other),
        },
        if row.paused { ", PAUSED" } else { "" },
    )
}

/// The state, on a few lines: the database clock and rows, each replica, then each key's claim
/// (when keys are watched).
pub fn state(state: &State) -> String {
    let shards = state.rows.len();
    let mut out = format!("db clock {}", state.now);
    for (shard, r) in state.rows.iter().enumerate() {
        let name = if shards > 1 {
            format!("shard {shard}")
        } else {
            "row".into()
        };
        let _ = write!(out, " | {name}: {}", row(r, state.now));
    }
    for (i, r) in state.replicas.iter().enumerate() {
        let phase = match &r.phase {
            Phase::Idle => "idle".to_string(),
            Phase::Acquiring(sent, shard, _, Reply::Ran(Acquired::Granted(token))) => format!(
                "ACQUIRE{} sent at {sent}, granted token {token} (answer on its way)",
                of_shard(*shard, shards)
            ),
            Phase::Acquiring(sent, shard, _, answer) => format!(
                "ACQUIRE{} sent at {sent}, {}",
                of_shard(*shard, shards),
                reply(answer)
            ),
            Phase::Working(tick) => {
                let mut s = format!(
                    "in tick{}, token {}, last ack sent at {}, next beat {}",
                    of_shard(tick.shard, shards),
                    tick.token,
                    tick.anchor,
                    tick.next_beat
                );
                if let Some((sent, answer)) = &tick.renew {
                    let answer = match answer {
                        Reply::Ran(Renewed::Lost(cause)) => format!("answered lost ({cause:?})"),
                        other => reply(other),
                    };
                    let _ = write!(s, ", RENEW sent at {sent} {answer}");
                }
                if let Some(cause) = tick.cancelled {
                    let _ = write!(s, ", CANCELLED ({cause:?})");
                }
                s
            }
            Phase::Releasing(sent, s, answer) => {
                format!("{} sent at {sent}, {}", statement(s, shards), reply(answer))
            }
            Phase::Crashed => "CRASHED".to_string(),
        };
        let anchor = match r.anchor {
            Some(a) if a.alive => format!(", anchor {}", session(a.session)),
            Some(a) => format!(", anchor {} ENDED", session(a.session)),
            None => String::new(),
        };
        let _ = write!(
            out,
            "\n    r{i} (clock {}{}{anchor}): {phase}",
            r.clock(state.now),
            if r.frozen { ", FROZEN" } else { "" }
        );
        if let Some(claim) = r.claim {
            let _ = write!(
                out,
                "; claim({}){} not run yet",
                fence(claim.fence, shards),
                keys_of(claim.filter, shards)
            );
        }
        if let Some(s) = &r.orphan {
            let _ = write!(out, "; {} given up on, not run yet", statement(s, shards));
        }
    }
    let claims: Vec<String> = state
        .history
        .key_claims
        .iter()
        .enumerate()
        .filter_map(|(key, claim)| {
            claim.map(|c| format!("key {key} by shard {}'s lease {}", c.shard, c.token))
        })
        .collect();
    if !claims.is_empty() {
        let _ = write!(out, "\n    claimed: {}", claims.join(", "));
    }
    out
}

/// A whole path: the initial state, then each step and the state after it.
pub fn path(model: &LeaseModel, path: &Path<State, Action>) -> String {
    let steps = path.clone().into_vec();
    let mut out = String::new();
    for (n, (s, act)) in steps.iter().enumerate() {
        if n == 0 {
            let _ = writeln!(out, "  0. start\n    {}", self::state(s));
        }
        if let Some(act) = act {
            let next = steps.get(n + 1).map(|(s, _)| s);
            let _ = writeln!(out, "{:>3}. {}", n + 1, model.format_action(act));
            if let Some(next) = next {
                let _ = writeln!(out, "    {}", self::state(next));
            }
        }
    }
    out
}
