//! Sharded roles at the statement level, against a real PostgreSQL: each shard is its own lease
//! row with its own token, a claim with a shard's fence selects only that shard's rows, and after
//! a change of the shard count no fence or grant of the old count holds.

mod common;

use std::collections::HashSet;
use std::time::Duration;

use common::*;
use leader_runtime::protocol::lease::{self, Acquired, LossReason, RefusalReason, Renewed, Wanted};
use leader_runtime::protocol::{ReleaseOutcome, StatementError};
use leader_runtime::{Fence, Role, Shard, ShardFence};
use leader_testkit::TestDb;

const HOUR: Duration = Duration::from_secs(3600);

/// The documented claim form: the shard's fence and its filter, on the same placeholders.
const SHARD_CLAIM: &str = "
UPDATE outbox SET claimed_by = $4
 WHERE id IN (SELECT id FROM outbox
               WHERE claimed_by IS NULL
                 AND leader_fence($1, $2, $3, $4)
                 AND leader_shard_of(id, $3) = $2
               ORDER BY id FOR UPDATE SKIP LOCKED)
RETURNING id";

fn shard(index: u32, count: u32) -> Shard {
    Shard::new(index, count).unwrap()
}

/// The shards of ALPHA among `count`, each an hourly interval lease.
fn shards_of_alpha(count: u32) -> Vec<Wanted> {
    (0..count)
        .map(|index| Wanted::every(ALPHA, HOUR).in_shard(shard(index, count)))
        .collect()
}

async fn acquire(db: &TestDb, wanted: &[Wanted], who: &str) -> Vec<Acquired> {
    lease::acquire(db.pool(), wanted, who, wanted.len(), &FAST)
        .await
        .expect("ACQUIRE runs")
}

/// [`acquire`] with a TTL of a minute: the caller stays present (and its leases live) for the
/// whole test, however slow the machine, so the shares a test asserts do not depend on timing.
async fn acquire_long(db: &TestDb, wanted: &[Wanted], who: &str) -> Vec<Acquired> {
    let minute = leader_runtime::Timings::scaled_to_ttl(Duration::from_secs(60)).unwrap();
    lease::acquire(db.pool(), wanted, who, wanted.len(), &minute)
        .await
        .expect("ACQUIRE runs")
}

fn fence_of(acquired: &Acquired) -> Fence {
    match acquired {
        Acquired::Granted(grant) => grant.fence,
        Acquired::Refused(refusal) => panic!("expected a grant, got {refusal:?}"),
    }
}

fn reason_of(acquired: &Acquired) -> RefusalReason {
    match acquired {
        Acquired::Refused(refusal) => refusal.reason,
        Acquired::Granted(grant) => panic!("expected a refusal, got {grant:?}"),
    }
}

/// The ids [`SHARD_CLAIM`] claims with `fence`, in its own transaction.
async fn claim(db: &TestDb, fence: ShardFence) -> Vec<i64> {
    claim_as(
        db,
        fence.role(),
        fence.shard_index(),
        fence.shard_count(),
        fence.token(),
    )
    .await
}

/// [`claim`] with any role, shard and token, to try forged or mixed proofs.
async fn claim_as(db: &TestDb, role: Role, index: i32, count: i32, token: i64) -> Vec<i64> {
    let mut tx = db.pool().begin().await.unwrap();
    let ids = sqlx::query_scalar::<_, i64>(SHARD_CLAIM)
        .persistent(false)
        .bind(role)
        .bind(index)
        .bind(count)
        .bind(token)
        .fetch_all(&mut *tx)
        .await
        .expect("the claim query runs");
    tx.commit().await.unwrap();
    ids
}

/// The shard of `id` among `count`, as the database computes it.
async fn shard_of(db: &TestDb, id: i64, count: i32) -> i32 {
    sqlx::query_scalar("SELECT leader_shard_of($1::bigint, $2)")
        .bind(id)
        .bind(count)
        .fetch_one(db.admin())
        .await
        .unwrap()
}

#[tokio::test]
async fn each_shard_is_its_own_lease_with_its_own_token_renewal_and_release() {
    let db = database().await;
    db.exec("SELECT leader_reshard('alpha', 4)").await;
    let wanted = shards_of_alpha(4);
    let granted = acquire(&db, &wanted, "a").await;
    let fences: Vec<Fence> = granted.iter().map(fence_of).collect();
    for (index, fence) in fences.iter().enumerate() {
        assert_eq!(fence.shard(), Some(shard(index as u32, 4)));
        let shard_fence = fence.shard_fence().expect("a shard's fence");
        assert_eq!(shard_fence.shard_index(), index as i32);
        assert_eq!(shard_fence.shard_count(), 4);
    }
    assert!(
        acquire(&db, &wanted, "b")
            .await
            .iter()
            .all(|answer| reason_of(answer) == RefusalReason::Held),
        "no shard has two holders"
    );

    let renewed = lease::renew(db.pool(), &fences, &FAST).await.unwrap();
    assert!(
        renewed
            .iter()
            .all(|answer| matches!(answer, Renewed::Extended { .. })),
        "{renewed:?}"
    );
    let released = lease::release(db.pool(), fences[1], ReleaseOutcome::Shutdown, HOUR, &FAST)
        .await
        .unwrap();
    assert!(released.changed);
    let held: Vec<i32> = sqlx::query_scalar(
        "SELECT shard_index FROM leader_status WHERE role = 'alpha' AND state = 'leading'
          ORDER BY shard_index",
    )
    .fetch_all(db.admin())
    .await
    .unwrap();
    assert_eq!(
        held,
        [0, 2, 3],
        "releasing one shard leaves the others held"
    );
    let after = lease::renew(db.pool(), &fences, &FAST).await.unwrap();
    assert_eq!(after[1], Renewed::Lost(LossReason::Released));
    assert!(matches!(after[0], Renewed::Extended { .. }));

    // Another holder takes the released shard: its token is new, the old one claims nothing.
    let taken = acquire(&db, &wanted[1..2], "b").await;
    let taken = fence_of(&taken[0]);
    assert_ne!(taken.token(), fences[1].token());
    assert!(
        claim(&db, fences[1].shard_fence().unwrap())
            .await
            .is_empty()
    );
    assert!(!claim(&db, taken.shard_fence().unwrap()).await.is_empty());
}

#[tokio::test]
async fn a_shards_fence_claims_only_its_shards_rows_and_a_mixed_or_unsharded_proof_claims_none() {
    let db = database().await;
    db.exec("SELECT leader_reshard('alpha', 4)").await;
    // As if the rows had been seeded by hand in one statement: the same token on every shard.
    db.exec("UPDATE leader_leases SET holder_token = leader_seed_token() WHERE role = 'alpha'")
        .await;
    let fences: Vec<ShardFence> = acquire(&db, &shards_of_alpha(4), "a")
        .await
        .iter()
        .map(|answer| fence_of(answer).shard_fence().unwrap())
        .collect();

    // Proofs that mix one shard's token with another shard's index, or another count, or carry
    // no shard at all, hold nothing.
    let tokens: HashSet<i64> = fences.iter().map(ShardFence::token).collect();
    assert_eq!(
        tokens.len(),
        4,
        "shards granted in one statement hold distinct tokens"
    );
    let zero = fences[0];
    for (index, count) in [(1, 4), (2, 4), (3, 4), (0, 8), (0, 2)] {
        assert!(
            claim_as(&db, ALPHA, index, count, zero.token())
                .await
                .is_empty(),
            "shard 0's token with shard {index} of {count}"
        );
    }
    assert_eq!(
        common::claim_as(db.pool(), ALPHA, zero.token()).await,
        0,
        "leader_fence(role, token) is false for a sharded role"
    );

    let mut claimed = HashSet::new();
    for fence in &fences {
        let ids = claim(&db, *fence).await;
        assert!(!ids.is_empty(), "100 rows leave no shard of 4 empty");
        for id in ids {
            assert_eq!(
                shard_of(&db, id, 4).await,
                fence.shard_index(),
                "row {id} claimed by shard {}",
                fence.shard()
            );
            assert!(claimed.insert(id), "row {id} claimed twice");
        }
    }
    assert_eq!(
        claimed.len(),
        100,
        "the shards together claim every row once"
    );
}

#[tokio::test]
async fn after_a_shard_count_change_the_old_count_is_refused_and_its_fences_and_renewals_fail() {
    let db = database().await;
    db.exec("SELECT leader_reshard('alpha', 2)").await;
    let old_wanted = shards_of_alpha(2);
    let old: Vec<Fence> = acquire(&db, &old_wanted, "old")
        .await
        .iter()
        .map(fence_of)
        .collect();

    // The count changes while the old replica holds both shards of 2.
    db.exec("SELECT leader_reshard('alpha', 4)").await;
    for fence in &old {
        assert!(claim(&db, fence.shard_fence().unwrap()).await.is_empty());
    }
    let renewed = lease::renew(db.pool(), &old, &FAST).await.unwrap();
    assert!(
        renewed
            .iter()
            .all(|answer| matches!(answer, Renewed::Lost(_))),
        "{renewed:?}"
    );
    let again = acquire(&db, &old_wanted, "old").await;
    assert!(
        again
            .iter()
            .all(|answer| reason_of(answer) == RefusalReason::ShardCountChanged),
        "{again:?}"
    );

    // The old replica may still work without a claim until it learns its leases are gone, so
    // the new rows are not granted before the old leases' expiry.
    let floor = acquire(&db, &shards_of_alpha(4), "new").await;
    assert!(
        floor
            .iter()
            .all(|answer| reason_of(answer) == RefusalReason::CoolingDown),
        "{floor:?}"
    );
    db.exec(
        "UPDATE leader_leases SET not_before = now() - interval '1 ms'
          WHERE role = 'alpha' AND not_before > now()",
    )
    .await;
    // Past the floor, the rows are free and due: only the count keeps the old replica out.
    let free = acquire(&db, &old_wanted, "old").await;
    assert!(
        free.iter()
            .all(|answer| reason_of(answer) == RefusalReason::ShardCountChanged),
        "{free:?}"
    );
    let new: Vec<Fence> = acquire(&db, &shards_of_alpha(4), "new")
        .await
        .iter()
        .map(fence_of)
        .collect();
    let oldest_new = new.iter().map(Fence::token).min().unwrap();
    let newest_old = old.iter().map(Fence::token).max().unwrap();
    assert!(
        oldest_new > newest_old,
        "tokens only grow across a count change"
    );

    // The old replica's grants keep being refused while the new count's replica leads.
    let side_by_side = acquire(&db, &old_wanted, "old").await;
    assert!(
        side_by_side
            .iter()
            .all(|answer| reason_of(answer) == RefusalReason::ShardCountChanged)
    );
    let claimed: usize = {
        let mut total = 0;
        for fence in &new {
            total += claim(&db, fence.shard_fence().unwrap()).await.len();
        }
        total
    };
    assert_eq!(claimed, 100);
}

#[tokio::test]
async fn a_shard_the_database_does_not_have_is_an_error_naming_leader_reshard() {
    let db = database().await;
    db.exec("SELECT leader_reshard('alpha', 4)").await;
    let wanted = [Wanted::every(ALPHA, HOUR).in_shard(shard(5, 8))];
    let err = lease::acquire(db.pool(), &wanted, "a", 1, &FAST)
        .await
        .unwrap_err();
    assert!(
        matches!(err, StatementError::ShardNotSeeded { .. }),
        "{err:?}"
    );
    assert!(
        err.to_string()
            .contains("SELECT leader_reshard('alpha', 8)"),
        "{err}"
    );
    // An unsharded caller of a sharded role finds its shard 0 under another count.
    let unsharded = lease::acquire_one(db.pool(), ALPHA, "a", HOUR, &FAST)
        .await
        .unwrap();
    assert_eq!(reason_of(&unsharded), RefusalReason::ShardCountChanged);
}

#[tokio::test]
async fn the_shards_of_a_calendar_role_each_serve_the_instant_they_ask_for() {
    let db = database().await;
    db.exec("SELECT leader_reshard('alpha', 3)").await;
    let cron = leader_runtime::schedule::CronSchedule::new("*/2 * * * * *", "UTC").unwrap();
    let now: chrono::DateTime<chrono::Utc> = sqlx::query_scalar("SELECT now()")
        .fetch_one(db.admin())
        .await
        .unwrap();
    // Three past instants, one per shard, each due and none completed.
    let plans: Vec<_> = (0..3)
        .map(|k| {
            cron.plan(None, now - chrono::TimeDelta::seconds(2 * k))
                .unwrap()
        })
        .collect();
    let wanted: Vec<Wanted> = plans
        .iter()
        .enumerate()
        .map(|(index, plan)| {
            Wanted::instant(ALPHA, &cron, Some(plan)).in_shard(shard(index as u32, 3))
        })
        .collect();
    let granted = acquire(&db, &wanted, "a").await;
    for (index, answer) in granted.iter().enumerate() {
        let Acquired::Granted(grant) = answer else {
            panic!("shard {index}: {answer:?}");
        };
        assert_eq!(
            grant.tick_instant,
            Some(plans[index].instant),
            "shard {index}"
        );
    }
    let rows: Vec<(i32, chrono::DateTime<chrono::Utc>)> = sqlx::query_as(
        "SELECT shard_index, tick_instant FROM leader_leases WHERE role = 'alpha' ORDER BY 1",
    )
    .fetch_all(db.admin())
    .await
    .unwrap();
    let recorded: Vec<_> = rows.into_iter().map(|(_, instant)| instant).collect();
    let asked: Vec<_> = plans.iter().map(|plan| plan.instant).collect();
    assert_eq!(recorded, asked, "each shard's row records its own instant");
}

/// The indexes of the shards `answers` granted.
fn granted_indexes(answers: &[Acquired]) -> Vec<u32> {
    answers
        .iter()
        .filter_map(|answer| match answer {
            Acquired::Granted(grant) => grant.fence.shard().map(Shard::index),
            Acquired::Refused(_) => None,
        })
        .collect()
}

/// Releases each granted lease of `answers` as shut down (no cooldown, nothing completed), so
/// the shards are due again at once.
async fn shut_down(db: &TestDb, answers: &[Acquired]) {
    for answer in answers {
        if let Acquired::Granted(grant) = answer {
            let released = lease::release(
                db.pool(),
                grant.fence,
                ReleaseOutcome::Shutdown,
                HOUR,
                &FAST,
            )
            .await
            .unwrap();
            assert!(released.changed);
        }
    }
}

#[tokio::test]
async fn a_replica_is_granted_at_most_its_share_of_the_live_replicas_and_the_rest_say_share_held() {
    let db = database().await;
    db.exec("SELECT leader_reshard('alpha', 8)").await;
    let wanted = shards_of_alpha(8);
    // Alone, a replica takes every shard.
    let alone = acquire_long(&db, &wanted, "a").await;
    assert_eq!(granted_indexes(&alone).len(), 8);
    // b and c ask while a holds them all: refused, but now present.
    for who in ["b", "c"] {
        let answers = acquire_long(&db, &wanted, who).await;
        assert!(answers.iter().all(|a| reason_of(a) == RefusalReason::Held));
    }
    shut_down(&db, &alone).await;

    // Three live replicas, eight shards: a share is ceil(8 / 3) = 3.
    let a = acquire_long(&db, &wanted, "a").await;
    assert_eq!(granted_indexes(&a).len(), 3, "{a:?}");
    assert_eq!(
        a.iter()
            .filter(|answer| matches!(answer, Acquired::Refused(r) if r.reason == RefusalReason::ShareHeld))
            .count(),
        5,
        "the shards above a's share say so: {a:?}"
    );
    let b = acquire_long(&db, &wanted, "b").await;
    assert_eq!(granted_indexes(&b).len(), 3, "{b:?}");
    let c = acquire_long(&db, &wanted, "c").await;
    assert_eq!(granted_indexes(&c).len(), 2, "{c:?}");
    let mut all: Vec<u32> = [&a, &b, &c]
        .into_iter()
        .flat_map(|x| granted_indexes(x))
        .collect();
    all.sort_unstable();
    assert_eq!(all, (0..8).collect::<Vec<_>>(), "every shard, once");

    // A replica at its share asks again: nothing more, even for a shard that falls free.
    shut_down(&db, &c).await;
    let again = acquire_long(&db, &wanted, "a").await;
    assert!(granted_indexes(&again).is_empty(), "{again:?}");
}

#[tokio::test]
async fn a_joining_replica_lowers_the_others_share_and_takes_the_shards_they_release() {
    let db = database().await;
    db.exec("SELECT leader_reshard('alpha', 8)").await;
    let wanted = shards_of_alpha(8);
    let first = acquire_long(&db, &wanted, "a").await;
    assert_eq!(granted_indexes(&first).len(), 8);
    // b joins: everything is held, so it is only present.
    assert!(granted_indexes(&acquire_long(&db, &wanted, "b").await).is_empty());
    // a's ticks end (a tick boundary, no lease expiry): a takes back only its share of two live
    // replicas, preferring the shards it ran; b takes the rest at once.
    shut_down(&db, &first).await;
    let a = acquire_long(&db, &wanted, "a").await;
    assert_eq!(granted_indexes(&a).len(), 4, "{a:?}");
    let b = acquire_long(&db, &wanted, "b").await;
    assert_eq!(granted_indexes(&b).len(), 4, "{b:?}");
}

#[tokio::test]
async fn a_dead_replicas_share_goes_to_the_survivors_once_its_presence_and_leases_expire() {
    let db = database().await;
    db.exec("SELECT leader_reshard('alpha', 8)").await;
    let wanted = shards_of_alpha(8);
    // a and b lease and stay present for a minute; c, which dies, for one second.
    let first = acquire_long(&db, &wanted, "a").await;
    acquire_long(&db, &wanted, "b").await;
    acquire(&db, &wanted, "c").await;
    shut_down(&db, &first).await;
    let mut held: Vec<(&str, Vec<Acquired>)> = Vec::new();
    for who in ["a", "b"] {
        held.push((who, acquire_long(&db, &wanted, who).await));
    }
    held.push(("c", acquire(&db, &wanted, "c").await));
    // c dies: it sends nothing more; its presence and leases run out after one second.
    let waited = tokio::time::Instant::now();
    loop {
        let c_live: bool = sqlx::query_scalar(
            "SELECT EXISTS (SELECT 1 FROM leader_leases WHERE holder_id = 'c' AND expires_at > now())
                 OR EXISTS (SELECT 1 FROM leader_presence WHERE holder_id = 'c' AND seen_until > now())",
        )
        .fetch_one(db.admin())
        .await
        .unwrap();
        if !c_live {
            break;
        }
        assert!(
            waited.elapsed() < Duration::from_secs(60),
            "c never expired"
        );
        tokio::time::sleep(Duration::from_millis(100)).await;
    }
    // Two live replicas: a share is 4. Each survivor had 3 or fewer, and takes c's.
    let a = acquire_long(&db, &wanted, "a").await;
    let b = acquire_long(&db, &wanted, "b").await;
    let (had_a, had_b) = (
        granted_indexes(&held[0].1).len(),
        granted_indexes(&held[1].1).len(),
    );
    assert_eq!(had_a + granted_indexes(&a).len(), 4, "{a:?}");
    assert_eq!(had_b + granted_indexes(&b).len(), 4, "{b:?}");
}

#[tokio::test]
async fn a_replica_that_leaves_no_longer_counts_in_the_others_share() {
    let db = database().await;
    db.exec("SELECT leader_reshard('alpha', 8)").await;
    let wanted = shards_of_alpha(8);
    let first = acquire_long(&db, &wanted, "a").await;
    assert_eq!(granted_indexes(&first).len(), 8);
    // b is present for a minute, so a's share is four of eight.
    assert!(granted_indexes(&acquire_long(&db, &wanted, "b").await).is_empty());
    shut_down(&db, &first).await;
    // b stops cleanly: it leaves, and a takes every shard at once.
    let left = lease::leave(db.pool(), "b", &[ALPHA], &FAST).await.unwrap();
    assert_eq!(left, 1, "b's one presence row");
    let a = acquire_long(&db, &wanted, "a").await;
    assert_eq!(granted_indexes(&a).len(), 8, "{a:?}");
    let again = lease::leave(db.pool(), "b", &[ALPHA], &FAST).await.unwrap();
    assert_eq!(again, 0, "nothing left to delete");
}

/// Who each refused shard of `answers` is kept by, by shard index.
fn kept_by(answers: &[Acquired]) -> Vec<(u32, Option<String>)> {
    answers
        .iter()
        .enumerate()
        .filter_map(|(index, answer)| match answer {
            Acquired::Refused(refusal) => Some((
                u32::try_from(index).expect("a shard index"),
                refusal.kept_by.clone(),
            )),
            Acquired::Granted(_) => None,
        })
        .collect()
}

#[tokio::test]
async fn a_shard_is_kept_by_the_present_replica_that_ran_it_and_by_nobody_once_that_one_left() {
    let db = database().await;
    db.exec("SELECT leader_reshard('alpha', 2)").await;
    let wanted = shards_of_alpha(2);
    // a and b present; b runs shard 1 and completes it (not due again for an hour).
    let first = acquire_long(&db, &wanted, "a").await;
    acquire_long(&db, &wanted, "b").await;
    shut_down(&db, &first).await;
    assert_eq!(granted_indexes(&acquire_long(&db, &wanted, "a").await), [0]);
    let b = acquire_long(&db, &wanted, "b").await;
    assert_eq!(granted_indexes(&b), [1]);
    let released = lease::release(
        db.pool(),
        fence_of(&b[1]),
        ReleaseOutcome::Completed,
        HOUR,
        &FAST,
    )
    .await
    .unwrap();
    assert!(released.changed);
    let asked = acquire_long(&db, &wanted[1..], "a").await;
    assert_eq!(kept_by(&asked), [(0, Some("b".to_owned()))], "{asked:?}");
    lease::leave(db.pool(), "b", &[ALPHA], &FAST).await.unwrap();
    let asked = acquire_long(&db, &wanted[1..], "a").await;
    assert_eq!(kept_by(&asked), [(0, None)], "b left: {asked:?}");
}

#[tokio::test]
async fn an_unsharded_role_leaves_no_presence_row() {
    let db = database().await;
    let answers = lease::acquire(db.pool(), &[Wanted::every(ALPHA, HOUR)], "a", 1, &FAST)
        .await
        .unwrap();
    assert!(matches!(answers[0], Acquired::Granted(_)));
    let rows: i64 = sqlx::query_scalar("SELECT count(*) FROM leader_presence")
        .fetch_one(db.admin())
        .await
        .unwrap();
    assert_eq!(rows, 0);
}

#[tokio::test]
async fn a_replica_takes_back_the_shards_it_ran_before_others() {
    let db = database().await;
    db.exec("SELECT leader_reshard('alpha', 8)").await;
    let wanted: Vec<Wanted> = (0..8)
        .map(|index| Wanted::every(ALPHA, Duration::from_millis(1)).in_shard(shard(index, 8)))
        .collect();
    // A TTL of a minute keeps a present for the whole test, however slow the machine.
    let minute = leader_runtime::Timings::scaled_to_ttl(Duration::from_secs(60)).unwrap();
    let acquire = |wanted: &'static [Wanted], who: &'static str| {
        lease::acquire(db.pool(), wanted, who, wanted.len(), &minute)
    };
    let wanted: &'static [Wanted] = Vec::leak(wanted);
    // a runs shards 0..4 and b shards 4..8, each tick completed.
    for (who, range) in [("a", 0..4), ("b", 4..8)] {
        let answers = acquire(&wanted[range], who).await.unwrap();
        for answer in &answers {
            let released = lease::release(
                db.pool(),
                fence_of(answer),
                ReleaseOutcome::Completed,
                Duration::from_millis(1),
                &FAST,
            )
            .await
            .unwrap();
            assert!(released.changed);
        }
    }
    tokio::time::sleep(Duration::from_millis(5)).await;
    // Every shard is due; b's share is four, and it takes back its own.
    let b = acquire(wanted, "b").await.unwrap();
    assert_eq!(granted_indexes(&b), [4, 5, 6, 7], "{b:?}");
}
