//! Each state word and each "why" sentence, from forged rows: what the page says for a paused, a
//! cooling-down, an expired, an overdue, a never-granted, a not-yet-due and an unseeded role, and
//! for replicas asking with another shard count.

use std::collections::{HashMap, HashSet};
use std::time::Duration;

use chrono::{DateTime, TimeDelta, Utc};
use leader_core::history::{EndedBy, TickRecord};
use leader_core::status::{LeaseState, RoleStatus};

use super::*;
use crate::snapshot::{Lease, Presence, Snapshot};

const GRACE: Duration = Duration::from_secs(30);

fn now() -> DateTime<Utc> {
    DateTime::parse_from_rfc3339("2026-12-07T12:00:00Z")
        .unwrap()
        .to_utc()
}

fn lease(state: LeaseState, edit: impl FnOnce(&mut RoleStatus)) -> Lease {
    let mut status = RoleStatus::forge("billing", state, 42, now());
    edit(&mut status);
    Lease {
        status,
        holder_anchor_pid: None,
        shard_index: 0,
        shard_count: 1,
    }
}

fn snapshot(leases: Vec<Lease>, ticks: Vec<TickRecord>) -> Snapshot {
    let mut latest = HashMap::new();
    let mut last_ended = HashMap::new();
    for t in ticks {
        let key = (t.role.clone(), t.shard_index);
        if t.ended_at.is_some() {
            last_ended.insert(key.clone(), t.clone());
        }
        latest.insert(key, t);
    }
    Snapshot {
        db_now: now(),
        leases,
        latest,
        last_ended,
        presence: Vec::new(),
        live_pids: HashSet::from([7]),
        registered: Some(vec!["billing".to_owned(), "dunning".to_owned()]),
        seen: HashMap::new(),
        actions: Vec::new(),
        slots: 100,
    }
}

fn ended(holder: &str, secs_ago: i64, by: EndedBy, outcome: Option<&str>) -> TickRecord {
    let mut t = TickRecord::forge(
        "billing",
        0,
        9,
        holder,
        41,
        now() - TimeDelta::seconds(secs_ago + 5),
    );
    t.ended_at = Some(now() - TimeDelta::seconds(secs_ago));
    t.ended_by = Some(by);
    t.outcome = outcome.map(str::to_owned);
    t
}

fn said(snap: &Snapshot) -> (Word, Why) {
    let v = view(&snap.leases[0], snap, GRACE);
    (v.word, v.why.expect("a lease not leading says why"))
}

#[test]
fn a_paused_role_says_who_paused_it_when_and_why_and_offers_unpause() {
    let snap = snapshot(
        vec![lease(LeaseState::Paused, |s| {
            s.paused_at = Some(now() - TimeDelta::minutes(12));
            s.paused_by = Some("alice".into());
            s.pause_reason = Some("SMTP key rotation".into());
        })],
        vec![],
    );
    let (word, why) = said(&snap);
    assert_eq!(word, Word::Paused);
    assert_eq!(
        why.sentence,
        "Paused by alice 12 min 00 s ago: \u{201c}SMTP key rotation\u{201d}. No replica is \
         granted a paused role."
    );
    let fix = why.fix.unwrap();
    assert_eq!(fix.command, "leaderctl unpause billing");
    assert_eq!(fix.button, Some(Button::Unpause));
}

#[test]
fn a_cooling_down_role_says_until_when_and_which_tick_caused_it() {
    let cooling = |outcome: Option<&str>, by: EndedBy| {
        let snap = snapshot(
            vec![lease(LeaseState::Cooldown, |s| {
                s.not_before = Some(now() + TimeDelta::seconds(42));
            })],
            vec![ended("replica-2", 18, by, outcome)],
        );
        said(&snap)
    };
    let (word, why) = cooling(Some("failed"), EndedBy::Release);
    assert_eq!(word, Word::CoolingDown);
    assert_eq!(
        why.sentence,
        "Cooling down until 12:00:42 UTC (in 42.0 s): its last tick, by replica-2 18.0 s ago, \
         failed (its job returned an error)."
    );
    let fix = why.fix.unwrap();
    assert_eq!(fix.button, Some(Button::ClearCooldown));
    assert!(
        fix.command.ends_with("leaderctl clear-cooldown billing"),
        "{}",
        fix.command
    );
    assert!(
        cooling(Some("panicked"), EndedBy::Release)
            .1
            .sentence
            .contains(", panicked.")
    );
    let paused = cooling(None, EndedBy::Pause).1.sentence;
    assert!(
        paused.contains("a pause took the lease from replica-2"),
        "{paused}"
    );
}

#[test]
fn an_expired_lease_names_its_silent_holder_and_its_dead_anchor() {
    let mut expired = lease(LeaseState::Expired, |s| {
        s.holder_id = Some("replica-1".into());
        s.acquired_at = Some(now() - TimeDelta::seconds(20));
        s.expires_at = Some(now() - TimeDelta::seconds(3));
    });
    expired.holder_anchor_pid = Some(99);
    let snap = snapshot(vec![expired], vec![]);
    let v = view(&snap.leases[0], &snap, GRACE);
    assert_eq!(v.word, Word::Expired);
    assert_eq!(
        v.anchoring,
        Anchoring::Anchored {
            pid: 99,
            alive: false
        }
    );
    let sentence = v.why.unwrap().sentence;
    assert!(
        sentence.starts_with("Its holder replica-1 stopped renewing: the lease ran out 3.0 s ago")
            && sentence.contains("no longer has its anchor session"),
        "{sentence}"
    );
}

#[test]
fn a_due_role_nobody_takes_is_overdue_only_after_the_grace() {
    let due = |secs: i64| {
        let snap = snapshot(
            vec![lease(LeaseState::Idle, |s| {
                s.next_due_at = Some(now() - TimeDelta::seconds(secs));
                s.schedule = Some("every 5s".into());
            })],
            vec![ended(
                "replica-1",
                secs + 5,
                EndedBy::Release,
                Some("completed"),
            )],
        );
        said(&snap)
    };
    let (word, why) = due(10);
    assert_eq!(word, Word::Idle);
    assert!(why.sentence.starts_with("Due now"), "{}", why.sentence);
    let (word, why) = due(300);
    assert_eq!(word, Word::Overdue);
    assert!(
        why.sentence
            .starts_with("Due since 11:55:00 UTC (5 min 00 s ago) but not taken")
            && why
                .sentence
                .contains("the last grant was 5 min 10 s ago to replica-1")
            && why.sentence.contains("are the replicas running?"),
        "{}",
        why.sentence
    );
    assert!(
        why.fix
            .unwrap()
            .command
            .contains("#[leader_role(\"billing\")]")
    );
}

#[test]
fn a_role_never_granted_and_one_not_due_yet_say_so() {
    let never = snapshot(vec![lease(LeaseState::Idle, |_| {})], vec![]);
    let (word, why) = said(&never);
    assert_eq!(word, Word::Idle);
    assert!(
        why.sentence
            .starts_with("Never granted since it was seeded"),
        "{}",
        why.sentence
    );

    let calendar = snapshot(
        vec![lease(LeaseState::Idle, |s| {
            s.next_due_at = Some(now() + TimeDelta::hours(2));
            s.schedule = Some("cron \"0 14 * * *\" in UTC".into());
        })],
        vec![ended(
            "replica-1",
            3600,
            EndedBy::Release,
            Some("completed"),
        )],
    );
    let (_, why) = said(&calendar);
    assert_eq!(
        why.sentence,
        "Its next instant, 14:00:00 UTC, is not due yet (in 2 h 00 min)."
    );
    assert_eq!(why.fix, None);
}

#[test]
fn replicas_asking_with_another_shard_count_are_named() {
    let mut snap = snapshot(vec![lease(LeaseState::Idle, |_| {})], vec![]);
    snap.leases[0].shard_count = 8;
    snap.presence.push(Presence {
        role: "billing".into(),
        holder_id: "replica-3".into(),
        shard_count: 4,
        seen_until: now() + TimeDelta::seconds(5),
        anchor_pid: None,
    });
    let (_, why) = said(&snap);
    assert!(
        why.sentence
            .starts_with("Replica replica-3 asks for it with 4 shard(s), but the database has 8"),
        "{}",
        why.sentence
    );
    assert!(
        why.fix
            .unwrap()
            .command
            .contains("leaderctl roles reshard billing 4")
    );
}

#[test]
fn a_role_in_the_check_without_a_row_says_how_to_seed_it() {
    let snap = snapshot(vec![lease(LeaseState::Idle, |_| {})], vec![]);
    assert_eq!(snap.unseeded(), ["dunning"]);
    let why = why_unseeded("dunning");
    assert!(
        why.sentence
            .contains("in the role CHECK but has no lease row"),
        "{}",
        why.sentence
    );
    assert!(
        why.fix
            .unwrap()
            .command
            .starts_with("leaderctl roles add dunning --dir MIGRATIONS")
    );
}

#[test]
fn a_live_lease_says_nothing_and_shows_its_anchor() {
    let mut held = lease(LeaseState::Leading, |s| {
        s.holder_id = Some("replica-1".into());
        s.acquired_at = Some(now() - TimeDelta::seconds(2));
        s.expires_at = Some(now() + TimeDelta::seconds(8));
    });
    held.holder_anchor_pid = Some(7);
    let snap = snapshot(vec![held], vec![]);
    let v = view(&snap.leases[0], &snap, GRACE);
    assert_eq!((v.word, v.why), (Word::Leading, None));
    assert_eq!(v.anchoring.describe(), "anchored (pid 7)");
}
