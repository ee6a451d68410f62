//! ACQUIRE, RENEW and RELEASE over many roles in one statement, against a real PostgreSQL (and through
//! PgBouncer on the pooler pass).

mod common;

use std::collections::HashMap;
use std::time::Duration;

use common::*;
use leader_runtime::protocol::lease::{self, Acquired, LossReason, RefusalReason, Renewed};
use leader_runtime::protocol::{ReleaseOutcome, StatementError};
use leader_runtime::{Fence, Role};
use leader_testkit::TestDb;

const HOUR: Duration = Duration::from_secs(3600);

/// A database with `n` extra roles `r000`, `r001`, … seeded (the test roles' CHECK dropped).
async fn many_roles(n: usize) -> (TestDb, Vec<Role>) {
    let db = database().await;
    let roles: Vec<Role> = (0..n)
        .map(|i| Role::new(&format!("r{i:03}")).expect("a valid name"))
        .collect();
    seed(&db, &roles).await;
    (db, roles)
}

async fn acquire(db: &TestDb, roles: &[Role], who: &str, max_grants: usize) -> Vec<Acquired> {
    let wanted: Vec<(Role, Duration)> = roles.iter().map(|&r| (r, HOUR)).collect();
    lease::acquire(db.pool(), &wanted, who, max_grants, &FAST)
        .await
        .expect("ACQUIRE runs")
}

/// Lets `role`'s lease run out and grants it to the holder `taker`, so that the old token no
/// longer holds it.
async fn take_over(db: &TestDb, role: Role) {
    expire(db, role).await;
    let taker = granted(&acquire(db, &[role], "taker", 1).await);
    assert_eq!(taker.len(), 1);
}

/// Asserts that `role` is still held by `taker` (see [`take_over`]).
async fn assert_taker_holds(db: &TestDb, role: Role) {
    assert_eq!(
        lease(db, role).await.holder_id.as_deref(),
        Some("taker"),
        "the new holder's lease is untouched"
    );
}

fn granted(answers: &[Acquired]) -> Vec<Fence> {
    answers
        .iter()
        .filter_map(|a| match a {
            Acquired::Granted(grant) => Some(grant.fence),
            Acquired::Refused(_) => None,
        })
        .collect()
}

#[tokio::test]
async fn one_statement_grants_due_roles_once_and_refuses_held_ones_as_acquire_does() {
    let (db, roles) = many_roles(6).await;
    let first = acquire(&db, &roles, "alone", 100).await;
    assert_eq!(first.len(), 6);
    let fences = granted(&first);
    assert_eq!(fences.len(), 6, "alone, it takes every due role: {first:?}");
    for (fence, role) in fences.iter().zip(&roles) {
        assert_eq!(fence.role(), *role, "answers come in the order asked");
    }
    let again = acquire(&db, &roles, "second", 100).await;
    for answer in &again {
        let Acquired::Refused(refusal) = answer else {
            panic!("a held role was granted again: {answer:?}");
        };
        assert_eq!(refusal.reason, RefusalReason::Held);
        assert_eq!(refusal.holder_id.as_deref(), Some("alone"));
        assert!(refusal.retry_after.is_some_and(|d| d > Duration::ZERO));
    }
    for role in &roles {
        assert_eq!(
            lease(&db, *role).await.holder_id.as_deref(),
            Some("alone"),
            "{role}"
        );
    }
}

#[tokio::test]
async fn with_another_live_holder_one_poll_takes_only_its_share_and_at_most_max_grants() {
    let (db, roles) = many_roles(9).await;
    // Another replica leads one role: 8 due, 1 other live holder, so at most ceil(8 / 2) = 4.
    let other = granted(&acquire(&db, &roles[..1], "other", 1).await);
    assert_eq!(other.len(), 1);
    let share = granted(&acquire(&db, &roles, "me", 100).await);
    assert_eq!(share.len(), 4, "{share:?}");
    // The rest are left to the next polls, answered as contended with no wait.
    let next = acquire(&db, &roles, "third", 1).await;
    assert_eq!(granted(&next).len(), 1, "max_grants bounds a poll");
    let contended = next
        .iter()
        .filter(|a| {
            matches!(a, Acquired::Refused(r)
            if r.reason == RefusalReason::Contended && r.retry_after == Some(Duration::ZERO))
        })
        .count();
    assert_eq!(contended, 3, "{next:?}");
}

#[tokio::test(flavor = "multi_thread", worker_threads = 4)]
async fn racing_replicas_never_share_a_role_and_never_deadlock() {
    let (db, roles) = many_roles(40).await;
    let mut holders: HashMap<Role, (String, i64)> = HashMap::new();
    for round in 0..5 {
        let tasks: Vec<_> = (0..16)
            .map(|i| {
                let (pool, roles) = (db.pool().clone(), roles.clone());
                tokio::spawn(async move {
                    let wanted: Vec<(Role, Duration)> = roles
                        .iter()
                        .map(|&r| (r, Duration::from_millis(1)))
                        .collect();
                    let who = format!("racer-{i}");
                    let answers = lease::acquire(&pool, &wanted, &who, 8, &FAST)
                        .await
                        .unwrap_or_else(|e| panic!("round {round}, {who}: {e}"));
                    (who, answers)
                })
            })
            .collect();
        holders.clear();
        for task in tasks {
            let (who, answers) = task.await.unwrap();
            for fence in granted(&answers) {
                let earlier = holders.insert(fence.role(), (who.clone(), fence.token()));
                assert!(
                    earlier.is_none(),
                    "round {round}: {} granted to {earlier:?} and {who}",
                    fence.role()
                );
            }
        }
        assert!(!holders.is_empty(), "round {round}: nobody was granted");
        for (role, (who, token)) in &holders {
            let row = lease(&db, *role).await;
            assert_eq!(
                (row.holder_id.as_deref(), row.holder_token),
                (Some(who.as_str()), *token)
            );
        }
        for &role in &roles {
            expire(&db, role).await;
        }
    }
}

#[tokio::test]
async fn one_statement_renews_every_held_lease_and_reports_each_loss() {
    let (db, roles) = many_roles(3).await;
    let fences = granted(&acquire(&db, &roles, "leader", 100).await);
    assert_eq!(fences.len(), 3);
    let before: Vec<_> = futures_util::future::join_all(roles.iter().map(|&r| lease(&db, r)))
        .await
        .into_iter()
        .map(|row| row.expires_at)
        .collect();
    // The second role is taken over, so its old token must not renew it.
    take_over(&db, roles[1]).await;
    tokio::time::sleep(Duration::from_millis(20)).await;
    let renewed = lease::renew(db.pool(), &fences, &FAST)
        .await
        .expect("RENEW runs");
    assert!(
        matches!(renewed[0], Renewed::Extended { .. }),
        "{renewed:?}"
    );
    assert_eq!(renewed[1], Renewed::Lost(LossReason::TakenOver));
    assert!(
        matches!(renewed[2], Renewed::Extended { .. }),
        "{renewed:?}"
    );
    for i in [0, 2] {
        assert!(
            lease(&db, roles[i]).await.expires_at > before[i],
            "extended"
        );
    }
    assert_taker_holds(&db, roles[1]).await;
}

#[tokio::test]
async fn one_statement_releases_every_lease_its_token_holds_each_by_its_outcome() {
    let (db, roles) = many_roles(3).await;
    let fences = granted(&acquire(&db, &roles, "leader", 100).await);
    assert_eq!(fences.len(), 3);
    // The third role is taken over, so its old token must not release it.
    take_over(&db, roles[2]).await;
    let ends = [
        (fences[0], ReleaseOutcome::Completed),
        (fences[1], ReleaseOutcome::Failed),
        (fences[2], ReleaseOutcome::Completed),
    ]
    .map(|(fence, outcome)| lease::LeaseEnd::new(fence, outcome, HOUR));
    let released = lease::release_many(db.pool(), &ends, &FAST, false)
        .await
        .expect("RELEASE runs");
    let changed: Vec<bool> = released.iter().map(|r| r.changed).collect();
    assert_eq!(changed, [true, true, false]);
    let completed = lease(&db, roles[0]).await;
    assert_eq!(completed.holder_id, None);
    assert_eq!(completed.last_tick_holder.as_deref(), Some("leader"));
    assert!(
        completed.not_before.is_none(),
        "a completed tick sets no cooldown"
    );
    let failed = lease(&db, roles[1]).await;
    assert_eq!(failed.holder_id, None);
    assert!(
        failed.last_tick_ended_at.is_none(),
        "a failed tick is not stamped"
    );
    assert!(failed.not_before.is_some(), "a failed tick cools down");
    assert_taker_holds(&db, roles[2]).await;
}

#[tokio::test]
async fn a_release_naming_one_lease_twice_is_refused_before_it_is_sent() {
    let (db, roles) = many_roles(1).await;
    let fences = granted(&acquire(&db, &roles, "leader", 100).await);
    let twice = [ReleaseOutcome::Completed, ReleaseOutcome::Failed]
        .map(|outcome| lease::LeaseEnd::new(fences[0], outcome, HOUR));
    let refused = lease::release_many(db.pool(), &twice, &FAST, false).await;
    assert!(
        matches!(refused, Err(StatementError::LeaseListedTwice { .. })),
        "{refused:?}"
    );
    let message = refused.unwrap_err().to_string();
    assert!(message.contains("listed twice"), "{message}");
    assert_eq!(
        lease(&db, roles[0]).await.holder_id.as_deref(),
        Some("leader"),
        "nothing was released"
    );
}
