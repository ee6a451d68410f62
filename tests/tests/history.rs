//! The tick history on PostgreSQL (issue 42): the ring keeps exactly the last ticks of each lease
//! under racing replicas, each tick's lease is recorded as ended by what ended it (a release, an
//! expiry, a dead holder's takeover, a pause) with the holder's outcome, all written by the lease
//! statements themselves as the application's least-privilege role.
//!
//! Time is moved by editing the lease row from the admin pool where a test needs an expiry, and
//! anchors are ended with `pg_terminate_backend(pid, timeout)`, so no verdict depends on the
//! machine's speed.

mod common;

use std::collections::BTreeMap;
use std::time::Duration;

use common::{ALPHA, BETA, anchored, app_database, expire, terminate};
use leader_runtime::protocol::history::{self, EndedBy, TickRecord};
use leader_runtime::protocol::lease::{self, Acquired, Anchor, LeaseEnd, RefusalReason, Wanted};
use leader_runtime::protocol::{ReleaseOutcome, operator};
use leader_runtime::{Fence, Role, Shard, TimingParts, Timings};
use leader_testkit::TestDb;
use sqlx::PgPool;

const HOUR: Duration = Duration::from_secs(3600);
const EVERY_MS: Duration = Duration::from_millis(1);

/// Hour-long leases and a minute's statement timeout: nothing here runs out unless a test moves
/// the expiry, however loaded the machine.
const T: Timings = Timings::new_or_panic(TimingParts {
    ttl: HOUR,
    heartbeat: Duration::from_secs(60),
    statement_timeout: Duration::from_secs(60),
    abandon_after: Duration::from_secs(600),
    max_poll: Duration::from_secs(5),
});

/// The history of `role`, oldest tick first.
async fn ticks(pool: &PgPool, role: Role) -> Vec<TickRecord> {
    let mut ticks = history::read(pool, Some(role), &T)
        .await
        .expect("the history reads")
        .ticks;
    ticks.reverse();
    ticks
}

async fn acquire(pool: &PgPool, holder: &str, anchor: Option<&Anchor>) -> Acquired {
    let wanted = [Wanted::every(ALPHA, HOUR)];
    lease::acquire_anchored(pool, &wanted, holder, anchor, 1, &T)
        .await
        .expect("ACQUIRE runs")
        .remove(0)
}

fn granted(acquired: Acquired) -> Fence {
    match acquired {
        Acquired::Granted(grant) => grant.fence,
        Acquired::Refused(refusal) => panic!("expected a grant, got {refusal:?}"),
    }
}

async fn release(pool: &PgPool, fence: Fence, outcome: ReleaseOutcome) -> bool {
    lease::release(pool, fence, outcome, HOUR, &T)
        .await
        .expect("RELEASE runs")
        .changed
}

/// The lease's expiry, as the admin reads it.
async fn expires_at(db: &TestDb, role: Role) -> chrono::DateTime<chrono::Utc> {
    sqlx::query_scalar("SELECT expires_at FROM leader_leases WHERE role = $1")
        .bind(role)
        .fetch_one(db.admin())
        .await
        .unwrap()
}

/// One replica's loop: ACQUIRE every lease in `wanted`, RELEASE what it was granted as
/// completed, until every lease has had `target` grants in all (read from the lease rows);
/// returns each grant it was given, as (role, shard index, token).
async fn replica(
    pool: PgPool,
    holder: String,
    wanted: Vec<Wanted>,
    target: i64,
) -> Vec<(String, i32, i64)> {
    let mut grants = Vec::new();
    loop {
        let fewest: i64 = sqlx::raw_sql(
            "SELECT min(ticks_granted) FROM leader_leases WHERE role IN ('alpha', 'beta')",
        )
        .fetch_one(&pool)
        .await
        .map(|row| sqlx::Row::get(&row, 0))
        .expect("the lease rows read");
        if fewest >= target {
            return grants;
        }
        let answers = lease::acquire(&pool, &wanted, &holder, wanted.len(), &T)
            .await
            .expect("ACQUIRE runs");
        let ends: Vec<LeaseEnd> = answers
            .into_iter()
            .filter_map(|answer| match answer {
                Acquired::Granted(grant) => Some(grant.fence),
                Acquired::Refused(_) => None,
            })
            .map(|fence| {
                let shard = fence.shard().map_or(0, |s| s.index() as i32);
                grants.push((fence.role().as_str().to_owned(), shard, fence.token()));
                LeaseEnd::new(fence, ReleaseOutcome::Completed, EVERY_MS)
            })
            .collect();
        let released = lease::release_many(&pool, &ends, &T, false)
            .await
            .expect("RELEASE runs");
        assert!(released.iter().all(|r| r.changed), "{released:?}");
    }
}

#[tokio::test(flavor = "multi_thread", worker_threads = 4)]
async fn the_ring_keeps_exactly_the_last_ticks_of_each_lease_under_racing_replicas() {
    let (db, app) = app_database().await;
    db.exec("SELECT leader_reshard('beta', 2)").await;
    let slots = history::read_slots(&app, &T).await.unwrap();
    // More than twice round the ring, and not a multiple of it.
    let target = 2 * slots + 17;
    let shards = [Shard::new(0, 2).unwrap(), Shard::new(1, 2).unwrap()];
    let wanted = vec![
        Wanted::every(ALPHA, EVERY_MS),
        Wanted::every(BETA, EVERY_MS).in_shard(shards[0]),
        Wanted::every(BETA, EVERY_MS).in_shard(shards[1]),
    ];
    let replicas: Vec<_> = (0..4)
        .map(|i| {
            tokio::spawn(replica(
                app.clone(),
                format!("replica-{i}"),
                wanted.clone(),
                target,
            ))
        })
        .collect();
    // Every grant any replica was given, per lease: token → holder.
    let mut given: BTreeMap<(String, i32), BTreeMap<i64, String>> = BTreeMap::new();
    for (i, task) in replicas.into_iter().enumerate() {
        for (role, shard, token) in task.await.unwrap() {
            let earlier = given
                .entry((role, shard))
                .or_default()
                .insert(token, format!("replica-{i}"));
            assert!(earlier.is_none(), "token {token} granted twice");
        }
    }
    let holders: std::collections::BTreeSet<&String> = given
        .values()
        .flat_map(|by_token| by_token.values())
        .collect();
    assert!(holders.len() > 1, "the replicas raced: {holders:?}");

    let mut all = ticks(&app, ALPHA).await;
    all.extend(ticks(&app, BETA).await);
    assert_eq!(given.len(), 3, "alpha and beta's two shards were granted");
    for ((role, shard), by_token) in &given {
        let ring: Vec<&TickRecord> = all
            .iter()
            .filter(|t| &t.role == role && t.shard_index == *shard)
            .collect();
        let granted = by_token.len() as i64;
        assert!(granted >= target, "{role}/{shard}: {granted} grants");
        assert_eq!(
            ring.len() as i64,
            slots,
            "{role}/{shard}: the ring holds `slots` ticks"
        );
        // Exactly the last `slots` grants: their tick numbers, in the order of their tokens.
        let numbers: Vec<i64> = ring.iter().map(|t| t.tick_number).collect();
        assert_eq!(
            numbers,
            ((granted - slots + 1)..=granted).collect::<Vec<_>>(),
            "{role}/{shard}: the tick numbers are the last ones, oldest first"
        );
        let last_tokens: Vec<(&i64, &String)> =
            by_token.iter().skip((granted - slots) as usize).collect();
        let in_ring: Vec<(&i64, &String)> = ring.iter().map(|t| (&t.token, &t.holder_id)).collect();
        assert_eq!(
            in_ring, last_tokens,
            "{role}/{shard}: the last grants' tokens and holders"
        );
        for tick in ring {
            assert_eq!(tick.ended_by, Some(EndedBy::Release), "{tick:?}");
            assert_eq!(tick.outcome.as_deref(), Some("completed"), "{tick:?}");
            assert!(
                tick.duration()
                    .is_some_and(|d| d >= chrono::TimeDelta::zero()),
                "{tick:?}"
            );
            assert!(!tick.anchored, "{tick:?}");
        }
    }
}

#[tokio::test]
async fn a_takeover_from_a_dead_anchor_and_an_expiry_are_told_apart() {
    let (db, app) = app_database().await;

    // An expiry: `a` (no anchor) stops renewing; its lease runs out; `b` is granted it.
    let a = granted(acquire(&app, "a", None).await);
    expire(&db, ALPHA).await;
    let ran_out_at = expires_at(&db, ALPHA).await;
    let b = granted(acquire(&app, "b", None).await);
    let history = ticks(&app, ALPHA).await;
    assert_eq!(history.len(), 2, "{history:?}");
    assert_eq!(
        (history[0].token, history[0].holder_id.as_str()),
        (a.token(), "a")
    );
    assert_eq!(history[0].ended_by, Some(EndedBy::Expiry));
    assert_eq!(
        history[0].ended_at,
        Some(ran_out_at),
        "ended when its lease ran out"
    );
    assert_eq!(
        history[0].outcome, None,
        "its holder never said how the tick ended"
    );
    assert_eq!((history[1].token, history[1].ended_by), (b.token(), None));
    assert!(release(&app, b, ReleaseOutcome::Completed).await);

    // A takeover: `c`'s anchor ends while its hour-long lease has 59 minutes left; `d` ends it
    // early, then is granted it.
    let (_c_session, c_anchor) = anchored(&db, "c").await;
    let (_d_session, d_anchor) = anchored(&db, "d").await;
    db.exec("UPDATE leader_leases SET last_tick_ended_at = NULL WHERE role = 'alpha'")
        .await;
    let c = granted(acquire(&app, "c", Some(&c_anchor)).await);
    terminate(&db, &c_anchor).await;
    match acquire(&app, "d", Some(&d_anchor)).await {
        Acquired::Refused(refusal) => assert_eq!(refusal.reason, RefusalReason::HolderAnchorEnded),
        other => panic!("expected the early end, got {other:?}"),
    }
    let ended_early_at = expires_at(&db, ALPHA).await;
    let d = granted(acquire(&app, "d", Some(&d_anchor)).await);
    let history = ticks(&app, ALPHA).await;
    assert_eq!(history.len(), 4, "{history:?}");
    let (taken, taker) = (&history[2], &history[3]);
    assert_eq!((taken.token, taken.holder_id.as_str()), (c.token(), "c"));
    assert!(taken.anchored);
    assert_eq!(taken.ended_by, Some(EndedBy::Takeover));
    assert_eq!(
        taken.ended_at,
        Some(ended_early_at),
        "ended by the early end, not at expiry"
    );
    assert!(
        taken.ended_at.unwrap() < taken.acquired_at + chrono::TimeDelta::minutes(59),
        "long before its expiry"
    );
    assert_eq!(
        (taker.token, taker.anchored, taker.ended_by),
        (d.token(), true, None)
    );
    assert_eq!(
        history[1].ended_by,
        Some(EndedBy::Release),
        "{:?}",
        history[1]
    );
}

#[tokio::test]
async fn release_records_the_outcome_and_how_the_lease_ended() {
    let (db, app) = app_database().await;
    let make_due = || {
        db.exec("UPDATE leader_leases SET not_before = NULL, last_tick_ended_at = NULL WHERE role = 'alpha'")
    };

    // Each outcome a RELEASE reports is recorded, with the lease ended by the release.
    let outcomes = [
        ReleaseOutcome::Completed,
        ReleaseOutcome::Failed,
        ReleaseOutcome::Shutdown,
        ReleaseOutcome::Lost,
        ReleaseOutcome::AnchorLost,
        ReleaseOutcome::Panicked,
    ];
    for outcome in outcomes {
        make_due().await;
        let fence = granted(acquire(&app, "a", None).await);
        assert!(release(&app, fence, outcome).await);
    }
    let history = ticks(&app, ALPHA).await;
    let recorded: Vec<(Option<&str>, Option<EndedBy>)> = history
        .iter()
        .map(|t| (t.outcome.as_deref(), t.ended_by))
        .collect();
    let expected: Vec<(Option<&str>, Option<EndedBy>)> = outcomes
        .iter()
        .map(|o| (Some(o.as_str()), Some(EndedBy::Release)))
        .collect();
    assert_eq!(recorded, expected);

    // A lease that ran out before its late RELEASE: ended by its expiry, with the outcome.
    make_due().await;
    let late = granted(acquire(&app, "a", None).await);
    expire(&db, ALPHA).await;
    let ran_out_at = expires_at(&db, ALPHA).await;
    assert!(release(&app, late, ReleaseOutcome::Lost).await);
    let last = ticks(&app, ALPHA).await.pop().unwrap();
    assert_eq!(
        (
            last.token,
            last.ended_by,
            last.ended_at,
            last.outcome.as_deref()
        ),
        (
            late.token(),
            Some(EndedBy::Expiry),
            Some(ran_out_at),
            Some("lost")
        )
    );

    // A pause ends the held lease; the paused holder's RELEASE adds its outcome only.
    make_due().await;
    let paused = granted(acquire(&app, "a", None).await);
    operator::pause(&app, "alpha", "alice", Some("key rotation"), &T)
        .await
        .unwrap();
    let paused_at: chrono::DateTime<chrono::Utc> =
        sqlx::query_scalar("SELECT paused_at FROM leader_leases WHERE role = 'alpha'")
            .fetch_one(db.admin())
            .await
            .unwrap();
    assert!(!release(&app, paused, ReleaseOutcome::Lost).await);
    let last = ticks(&app, ALPHA).await.pop().unwrap();
    assert_eq!(
        (
            last.token,
            last.ended_by,
            last.ended_at,
            last.outcome.as_deref()
        ),
        (
            paused.token(),
            Some(EndedBy::Pause),
            Some(paused_at),
            Some("lost")
        )
    );
    // A second RELEASE of the same tick changes nothing (the first outcome stands).
    assert!(!release(&app, paused, ReleaseOutcome::Failed).await);
    assert_eq!(ticks(&app, ALPHA).await.pop().unwrap(), last);

    // Pausing an unheld role, and a held lease that had already run out, as the pause finds it.
    operator::unpause(&app, "alpha", &T).await.unwrap();
    make_due().await;
    let ran_out = granted(acquire(&app, "a", None).await);
    expire(&db, ALPHA).await;
    let ran_out_at = expires_at(&db, ALPHA).await;
    operator::pause(&app, "alpha", "alice", None, &T)
        .await
        .unwrap();
    let last = ticks(&app, ALPHA).await.pop().unwrap();
    assert_eq!(
        (last.token, last.ended_by, last.ended_at),
        (ran_out.token(), Some(EndedBy::Expiry), Some(ran_out_at))
    );
}

#[tokio::test]
async fn a_reshard_and_a_reseed_continue_the_tick_numbers() {
    let (db, app) = app_database().await;
    let wanted = |count: u32, index: u32| {
        let mut w = Wanted::every(ALPHA, EVERY_MS);
        if count > 1 {
            w = w.in_shard(Shard::new(index, count).unwrap());
        }
        w
    };
    let tick = |count: u32, index: u32| {
        let app = app.clone();
        async move {
            let fence = match lease::acquire(&app, &[wanted(count, index)], "a", 1, &T)
                .await
                .unwrap()
                .remove(0)
            {
                Acquired::Granted(grant) => grant.fence,
                Acquired::Refused(refusal) => panic!("{refusal:?}"),
            };
            let end = LeaseEnd::new(fence, ReleaseOutcome::Failed, EVERY_MS);
            lease::release_many(&app, &[end], &T, false).await.unwrap();
        }
    };
    let cool = "UPDATE leader_leases SET not_before = NULL WHERE role = 'alpha'";
    for _ in 0..3 {
        db.exec(cool).await;
        tick(1, 0).await;
    }
    db.exec("SELECT leader_reshard('alpha', 2)").await;
    db.exec(cool).await;
    tick(2, 0).await;
    db.exec(cool).await;
    tick(2, 1).await;
    let numbers: Vec<(i32, i64)> = ticks(&app, ALPHA)
        .await
        .iter()
        .map(|t| (t.shard_index, t.tick_number))
        .collect();
    assert_eq!(numbers, [(0, 1), (0, 2), (0, 3), (0, 4), (1, 1)]);

    db.exec("SELECT leader_reshard('alpha', 1)").await;
    db.exec(cool).await;
    tick(1, 0).await;
    let newest = ticks(&app, ALPHA).await.pop().unwrap();
    assert_eq!((newest.shard_index, newest.tick_number), (0, 5));
}

#[tokio::test]
async fn the_operator_role_reads_everything_and_acts_only_through_recorded_functions() {
    let (db, app) = app_database().await;
    db.exec(
        "DO $$ BEGIN
             CREATE ROLE leader_operator LOGIN;
         EXCEPTION WHEN duplicate_object OR unique_violation THEN NULL;
         END $$;
         SELECT leader_grant_operator_role('leader_operator');",
    )
    .await;
    let operator_pool = db.pool_as("leader_operator", 2).await;
    let fence = granted(acquire(&app, "a", None).await);

    for read in [
        "SELECT * FROM leader_leases",
        "SELECT * FROM leader_status",
        "SELECT * FROM leader_presence",
        "SELECT * FROM leader_tick_history",
        "SELECT * FROM leader_operator_actions",
    ] {
        sqlx::raw_sql(read)
            .execute(&operator_pool)
            .await
            .unwrap_or_else(|e| panic!("{read}: {e}"));
    }
    for forbidden in [
        "UPDATE leader_leases SET paused_at = now(), paused_by = 'x', holder_id = NULL, acquired_at = NULL, expires_at = NULL",
        "SELECT leader_pause('alpha', 'x', 'y')",
        "SELECT leader_clear_cooldown('alpha')",
        "INSERT INTO leader_operator_actions (action, role, who, why) VALUES ('pause', 'alpha', 'x', 'y')",
        "DELETE FROM leader_tick_history",
        "UPDATE leader_tick_history SET outcome = 'completed'",
    ] {
        let err = sqlx::raw_sql(forbidden)
            .execute(&operator_pool)
            .await
            .unwrap_err();
        assert!(
            err.to_string().contains("permission denied"),
            "{forbidden}: {err}"
        );
    }

    // Refused before anything is written: a blank why (saying so), an unknown role, an unknown
    // shard.
    let blank = sqlx::raw_sql("SELECT leader_operator_pause('alpha', NULL, 'alice', '')")
        .execute(&operator_pool)
        .await
        .unwrap_err();
    assert!(blank.to_string().contains("say why"), "{blank}");
    for refused in [
        "SELECT leader_operator_pause('alpha', NULL, 'alice', ' ')",
        "SELECT leader_operator_pause('nope', NULL, 'alice', 'why')",
        "SELECT leader_operator_pause('alpha', 7, 'alice', 'why')",
        "SELECT leader_operator_unpause('alpha', NULL, '', 'why')",
        "SELECT leader_operator_clear_cooldown('alpha''; DROP TABLE leader_leases; --', 'a', 'b')",
    ] {
        sqlx::raw_sql(refused)
            .execute(&operator_pool)
            .await
            .expect_err(refused);
    }
    assert_eq!(
        db.count("SELECT count(*) FROM leader_operator_actions")
            .await,
        0
    );
    assert_eq!(
        db.count("SELECT count(*) FROM leader_leases WHERE paused_at IS NOT NULL")
            .await,
        0
    );

    sqlx::raw_sql("SELECT leader_operator_pause('alpha', NULL, 'alice', 'SMTP key rotation')")
        .execute(&operator_pool)
        .await
        .unwrap();
    let (who, why, login, pause_reason): (String, String, String, String) = sqlx::query_as(
        "SELECT a.who, a.why, a.login::text, l.pause_reason
           FROM leader_operator_actions a JOIN leader_leases l ON l.role = a.role
          WHERE a.action = 'pause'",
    )
    .fetch_one(db.admin())
    .await
    .unwrap();
    assert_eq!(
        (
            who.as_str(),
            why.as_str(),
            login.as_str(),
            pause_reason.as_str()
        ),
        (
            "alice",
            "SMTP key rotation",
            "leader_operator",
            "SMTP key rotation"
        )
    );
    let last = ticks(&app, ALPHA).await.pop().unwrap();
    assert_eq!(
        (last.token, last.ended_by),
        (fence.token(), Some(EndedBy::Pause))
    );
    for action in [
        "SELECT leader_operator_unpause('alpha', NULL, 'bob', 'rotated')",
        "SELECT leader_operator_clear_cooldown('alpha', 'bob', 'the pause floor is moot')",
    ] {
        sqlx::raw_sql(action).execute(&operator_pool).await.unwrap();
    }
    let actions: Vec<String> =
        sqlx::query_scalar("SELECT action FROM leader_operator_actions ORDER BY id")
            .fetch_all(db.admin())
            .await
            .unwrap();
    assert_eq!(actions, ["pause", "unpause", "clear_cooldown"]);
    assert_eq!(
        db.count(
            "SELECT count(*) FROM leader_leases WHERE paused_at IS NULL AND not_before IS NULL"
        )
        .await,
        3
    );
}
