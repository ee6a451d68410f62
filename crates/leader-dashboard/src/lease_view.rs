//! A lease as the pages show it: its state in one word, whether its holder is anchored, and for a
//! lease that is not leading, the one sentence that says why, with the fix. Pure functions of a
//! [`Snapshot`], so each sentence is tested without a database.

use std::time::Duration;

use chrono::{DateTime, TimeDelta, Utc};
use leader_core::history::EndedBy;

use crate::format::{ago, at, until};
use crate::snapshot::{Lease, Snapshot};

/// A lease's state in one word (two for "cooling down" and "not registered").
#[derive(Debug, Clone, Copy, PartialEq, Eq, PartialOrd, Ord)]
pub(crate) enum Word {
    Leading,
    Expired,
    Paused,
    CoolingDown,
    Overdue,
    Idle,
    NotRegistered,
}

impl Word {
    pub const ALL: [Word; 7] = [
        Word::Leading,
        Word::Expired,
        Word::Paused,
        Word::CoolingDown,
        Word::Overdue,
        Word::Idle,
        Word::NotRegistered,
    ];

    pub const fn as_str(self) -> &'static str {
        match self {
            Word::Leading => "leading",
            Word::Expired => "expired",
            Word::Paused => "paused",
            Word::CoolingDown => "cooling down",
            Word::Overdue => "overdue",
            Word::Idle => "idle",
            Word::NotRegistered => "not registered",
        }
    }

    /// The CSS class and the filter's value: the word with `-` for the space.
    pub fn slug(self) -> String {
        self.as_str().replace(' ', "-")
    }

    pub fn from_slug(slug: &str) -> Option<Word> {
        Word::ALL.into_iter().find(|w| w.slug() == slug)
    }
}

/// A button that acts on the role.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub(crate) enum Button {
    Pause,
    Unpause,
    ClearCooldown,
}

impl Button {
    pub const ALL: [Button; 3] = [Button::Pause, Button::Unpause, Button::ClearCooldown];

    /// The path segment and the form's name.
    pub const fn slug(self) -> &'static str {
        match self {
            Button::Pause => "pause",
            Button::Unpause => "unpause",
            Button::ClearCooldown => "clear-cooldown",
        }
    }

    pub const fn label(self) -> &'static str {
        match self {
            Button::Pause => "Pause",
            Button::Unpause => "Unpause",
            Button::ClearCooldown => "Clear cooldown",
        }
    }

    pub fn from_slug(slug: &str) -> Option<Button> {
        Button::ALL.into_iter().find(|b| b.slug() == slug)
    }
}

/// What fixes it: the command, and the button that does the same when writes are on.
#[derive(Debug, Clone, PartialEq, Eq)]
pub(crate) struct Fix {
    pub command: String,
    pub button: Option<Button>,
}

/// Why a lease is not running, in one sentence, and its fix.
#[derive(Debug, Clone, PartialEq, Eq)]
pub(crate) struct Why {
    pub sentence: String,
    pub fix: Option<Fix>,
}

/// Whether the holder's grant named an anchor, and whether the server still has that session.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub(crate) enum Anchoring {
    /// Not held.
    Unheld,
    /// Held without an anchor: a dead holder is taken over only at the expiry.
    NoAnchor,
    /// Held under the anchor session `pid`.
    Anchored { pid: i32, alive: bool },
}

impl Anchoring {
    pub fn describe(self) -> String {
        match self {
            Anchoring::Unheld => "-".to_owned(),
            Anchoring::NoAnchor => "no anchor".to_owned(),
            Anchoring::Anchored { pid, alive: true } => format!("anchored (pid {pid})"),
            Anchoring::Anchored { pid, alive: false } => format!("anchor gone (pid {pid})"),
        }
    }
}

/// A lease, as the pages show it.
#[derive(Debug, Clone)]
pub(crate) struct LeaseView<'a> {
    pub lease: &'a Lease,
    pub word: Word,
    pub why: Option<Why>,
    pub anchoring: Anchoring,
}

/// `ROLE`, or `ROLE --shard N` for a shard, as the commands take it.
fn target(lease: &Lease) -> String {
    if lease.shard_count > 1 {
        format!("{} --shard {}", lease.status.role, lease.shard_index)
    } else {
        lease.status.role.clone()
    }
}

/// When the lease became (or becomes) due, as far as the database says.
fn due_at(lease: &Lease, snap: &Snapshot) -> Option<DateTime<Utc>> {
    lease.status.next_due_at.or_else(|| {
        // An interval role that never completed a tick and has no cooldown is due whenever a
        // replica asks: since its last tick ended, if it had one.
        snap.last_ended(lease).and_then(|t| t.ended_at)
    })
}

pub(crate) fn view<'a>(
    lease: &'a Lease,
    snap: &Snapshot,
    overdue_after: Duration,
) -> LeaseView<'a> {
    let status = &lease.status;
    let now = snap.db_now;
    let held = status.holder_id.is_some();
    let live = held && status.expires_at.is_some_and(|e| e > now);
    let grace = TimeDelta::from_std(overdue_after).unwrap_or(TimeDelta::MAX);
    let word = if status.paused_at.is_some() {
        Word::Paused
    } else if live {
        Word::Leading
    } else if held {
        Word::Expired
    } else if status.not_before.is_some_and(|nb| nb > now) {
        Word::CoolingDown
    } else if due_at(lease, snap).is_some_and(|d| d + grace < now) {
        Word::Overdue
    } else {
        Word::Idle
    };
    let anchoring = match (held, lease.holder_anchor_pid) {
        (false, _) => Anchoring::Unheld,
        (true, None) => Anchoring::NoAnchor,
        (true, Some(pid)) => Anchoring::Anchored {
            pid,
            alive: snap.session_lives(pid),
        },
    };
    let why = (word != Word::Leading).then(|| why(lease, snap, word, anchoring));
    LeaseView {
        lease,
        word,
        why,
        anchoring,
    }
}

fn why(lease: &Lease, snap: &Snapshot, word: Word, anchoring: Anchoring) -> Why {
    let status = &lease.status;
    let now = snap.db_now;
    let role = &status.role;
    if word == Word::Paused {
        let by = status.paused_by.as_deref().unwrap_or("someone");
        let when = status
            .paused_at
            .map_or_else(String::new, |t| format!(" {}", ago(t, now)));
        let reason = status
            .pause_reason
            .as_deref()
            .map_or_else(String::new, |r| format!(": \u{201c}{r}\u{201d}"));
        return Why {
            sentence: format!("Paused by {by}{when}{reason}. No replica is granted a paused role."),
            fix: Some(Fix {
                command: format!("leaderctl unpause {}", target(lease)),
                button: Some(Button::Unpause),
            }),
        };
    }
    let asking_elsewhere: Vec<&str> = snap
        .presence
        .iter()
        .filter(|p| p.role == *role && p.seen_until > now && p.shard_count != lease.shard_count)
        .map(|p| p.holder_id.as_str())
        .collect();
    if !asking_elsewhere.is_empty() && word != Word::Expired {
        let counts: Vec<String> = snap
            .presence
            .iter()
            .filter(|p| p.role == *role && p.seen_until > now && p.shard_count != lease.shard_count)
            .map(|p| p.shard_count.to_string())
            .collect();
        return Why {
            sentence: format!(
                "Replica {} asks for it with {} shard(s), but the database has {}: ACQUIRE \
                 refuses a replica running another shard count until it restarts with {}.",
                asking_elsewhere.join(", "),
                counts.join(" / "),
                lease.shard_count,
                lease.shard_count
            ),
            fix: Some(Fix {
                command: format!(
                    "deploy the replicas leading `{role}` with {} shard(s), or give the role \
                     theirs with `leaderctl roles reshard {role} {} --dir MIGRATIONS`",
                    lease.shard_count, counts[0]
                ),
                button: None,
            }),
        };
    }
    if word == Word::Expired {
        let holder = status.holder_id.as_deref().unwrap_or("?");
        let ran_out = status.expires_at.map_or_else(String::new, |e| {
            format!(" {} (at {})", ago(e, now), at(e, now))
        });
        let anchor = match anchoring {
            Anchoring::Anchored { alive: false, .. } => {
                ", and the server no longer has its anchor session"
            }
            _ => "",
        };
        return Why {
            sentence: format!(
                "Its holder {holder} stopped renewing: the lease ran out{ran_out}{anchor}; the \
                 next replica to ask takes it over."
            ),
            fix: Some(Fix {
                command: format!(
                    "nothing to do if another replica runs `{role}`: it takes over at its next \
                     poll; otherwise start one, and look at why {holder} stopped (its log, \
                     its process)"
                ),
                button: None,
            }),
        };
    }
    if word == Word::CoolingDown {
        let until_text = status.not_before.map_or_else(String::new, |t| {
            format!(" until {} ({})", at(t, now), until(t, now))
        });
        let cause = match snap.last_ended(lease) {
            Some(t) if t.ended_by == Some(EndedBy::Pause) => format!(
                "a pause took the lease from {} {}, and the role stays unclaimed until that \
                 lease would have run out (the holder learns of the pause only at its next \
                 RENEW)",
                t.holder_id,
                t.ended_at.map_or_else(String::new, |e| ago(e, now))
            ),
            Some(t) => {
                let what = match t.outcome.as_deref() {
                    Some("failed") => "failed (its job returned an error)",
                    Some("panicked") => "panicked",
                    Some("lost") => "lost its lease",
                    _ => "did not complete",
                };
                format!(
                    "its last tick, by {} {}, {what}",
                    t.holder_id,
                    t.ended_at.map_or_else(String::new, |e| ago(e, now))
                )
            }
            None => "a tick did not complete".to_owned(),
        };
        return Why {
            sentence: format!("Cooling down{until_text}: {cause}."),
            fix: Some(Fix {
                command: format!(
                    "wait, or once the cause is fixed: leaderctl clear-cooldown {role}"
                ),
                button: Some(Button::ClearCooldown),
            }),
        };
    }
    let latest = snap.latest(lease);
    let last_grant = latest.map_or_else(
        || "it was never granted".to_owned(),
        |t| {
            format!(
                "the last grant was {} to {}",
                ago(t.acquired_at, now),
                t.holder_id
            )
        },
    );
    let start_one = Fix {
        command: format!(
            "start a replica whose code leads `{role}` (#[leader_role(\"{role}\")] or \
             .role(..)); `leaderctl check --role {role}` says whether the database is ready \
             for it"
        ),
        button: None,
    };
    let nobody_leads_anything =
        !snap.leases.iter().any(|l| l.status.holder_id.is_some()) && snap.presence.is_empty();
    let nobody = if nobody_leads_anything {
        " No replica leads any role now: are the replicas running?"
    } else {
        ""
    };
    if word == Word::Overdue {
        let since = due_at(lease, snap).map_or_else(String::new, |d| {
            format!(" since {} ({})", at(d, now), ago(d, now))
        });
        return Why {
            sentence: format!(
                "Due{since} but not taken, and {last_grant}: no live replica asks for it, or \
                 every ACQUIRE for it fails.{nobody}"
            ),
            fix: Some(start_one),
        };
    }
    // Idle.
    match (latest, due_at(lease, snap)) {
        (None, None) => Why {
            sentence: format!(
                "Never granted since it was seeded: no replica has asked for it yet.{nobody}"
            ),
            fix: Some(start_one),
        },
        (_, Some(due)) if due > now => {
            let calendar = status
                .schedule
                .as_deref()
                .is_some_and(|s| s.starts_with("cron"));
            let sentence = if calendar {
                format!(
                    "Its next instant, {}, is not due yet ({}).",
                    at(due, now),
                    until(due, now)
                )
            } else {
                let last = status.last_tick_ended_at.map_or_else(String::new, |e| {
                    format!(
                        "; the last tick completed {} by {}",
                        ago(e, now),
                        status.last_tick_holder.as_deref().unwrap_or("?")
                    )
                });
                format!(
                    "Not due yet: next tick {} ({}){last}.",
                    until(due, now),
                    status.schedule.as_deref().unwrap_or("its interval")
                )
            };
            Why {
                sentence,
                fix: None,
            }
        }
        _ => Why {
            sentence: format!("Due now, and {last_grant}: a replica's next poll takes it.{nobody}"),
            fix: None,
        },
    }
}

/// Why a role the CHECK registers, with no lease row, does not run.
pub(crate) fn why_unseeded(role: &str) -> Why {
    Why {
        sentence: format!(
            "`{role}` is in the role CHECK but has no lease row: a replica that leads it refuses \
             to start (\"role `{role}` has no row in leader_leases\")."
        ),
        fix: Some(Fix {
            command: format!(
                "leaderctl roles add {role} --dir MIGRATIONS (writes the migration seeding its \
                 row), then leaderctl migrate --dir MIGRATIONS"
            ),
            button: None,
        }),
    }
}

#[cfg(test)]
mod tests;
