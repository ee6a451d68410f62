//! The lease protocol against a real PostgreSQL (and, on the pooler pass, through PgBouncer in
//! transaction mode). Time is moved by editing the lease row from the admin pool where a test
//! needs an expiry, so nothing here depends on the machine's speed.

mod common;

use std::collections::HashSet;
use std::time::Duration;

use common::*;
use leader_runtime::protocol::lease::{self, Acquired, LossReason, RefusalReason, Renewed};
use leader_runtime::protocol::{ReleaseOutcome, StatementError, operator};
use leader_runtime::schema::{SchemaError, SchemaProblem, check_schema_ready};
use leader_runtime::{Fence, Role, TimingParts, Timings};
use leader_testkit::TestDb;
use sqlx::Row;

const HOUR: Duration = Duration::from_secs(3600);
const T: &Timings = &FAST;

/// For the tests that race many statements at once: what they check is who wins, not how fast,
/// and on this shared machine (load average 8 to 12 while others build) FAST's 300 ms statement
/// timeout ran out for racers queued behind the others.
const RACE: &Timings = &Timings::new_or_panic(TimingParts {
    ttl: Duration::from_secs(60),
    heartbeat: Duration::from_secs(10),
    statement_timeout: Duration::from_secs(10),
    abandon_after: Duration::from_secs(30),
    max_poll: Duration::from_secs(5),
});

async fn acquire(db: &TestDb, role: Role, who: &str, interval: Duration) -> Acquired {
    lease::acquire_one(db.pool(), role, who, interval, T)
        .await
        .expect("ACQUIRE runs")
}

async fn grant(db: &TestDb, role: Role, who: &str) -> Fence {
    match acquire(db, role, who, HOUR).await {
        Acquired::Granted(grant) => grant.fence,
        Acquired::Refused(refusal) => panic!("expected a grant, got {refusal:?}"),
    }
}

async fn refusal(db: &TestDb, role: Role, interval: Duration) -> lease::Refusal {
    match acquire(db, role, "follower", interval).await {
        Acquired::Refused(refusal) => refusal,
        Acquired::Granted(grant) => panic!("expected a refusal, got {grant:?}"),
    }
}

async fn release(db: &TestDb, fence: Fence, outcome: ReleaseOutcome, interval: Duration) -> bool {
    lease::release(db.pool(), fence, outcome, interval, T)
        .await
        .expect("RELEASE runs")
        .changed
}

async fn race_round(db: &TestDb, racers: usize) -> Vec<Fence> {
    let tasks: Vec<_> = (0..racers)
        .map(|i| {
            let pool = db.pool().clone();
            tokio::spawn(async move {
                lease::acquire_one(
                    &pool,
                    ALPHA,
                    &format!("racer-{i}"),
                    Duration::from_millis(1),
                    RACE,
                )
                .await
                .expect("ACQUIRE runs")
            })
        })
        .collect();
    let mut granted = Vec::new();
    for task in tasks {
        if let Acquired::Granted(grant) = task.await.unwrap() {
            granted.push(grant.fence);
        }
    }
    granted
}

#[tokio::test(flavor = "multi_thread", worker_threads = 4)]
async fn racing_acquirers_get_one_grant_per_round_and_tokens_only_grow() {
    let db = database().await;
    let mut tokens = Vec::new();
    let round = async |db: &TestDb, tokens: &mut Vec<i64>| {
        let granted = race_round(db, 16).await;
        assert_eq!(
            granted.len(),
            1,
            "exactly one of 16 racers leads: {granted:?}"
        );
        tokens.push(granted[0].token());
        let every = Duration::from_millis(1);
        let released = lease::release(
            db.pool(),
            granted[0],
            ReleaseOutcome::Completed,
            every,
            RACE,
        )
        .await
        .expect("RELEASE runs");
        assert!(released.changed);
        make_due(db, ALPHA).await;
    };
    for _ in 0..5 {
        round(&db, &mut tokens).await;
    }
    // The row is deleted and re-seeded: its new tokens stay above every token issued before.
    db.exec("DELETE FROM leader_leases WHERE role = 'alpha'")
        .await;
    db.exec("INSERT INTO leader_leases (role, holder_token) VALUES ('alpha', leader_seed_token())")
        .await;
    for _ in 0..3 {
        round(&db, &mut tokens).await;
    }
    // The roles migration is rolled back and applied again.
    db.exec(ROLES_DOWN).await;
    db.exec(ROLES_UP).await;
    for _ in 0..3 {
        round(&db, &mut tokens).await;
    }
    assert!(
        tokens.windows(2).all(|w| w[0] < w[1]),
        "tokens strictly increase across rounds: {tokens:?}"
    );
}

#[tokio::test]
async fn renew_extends_the_holders_lease_and_reports_a_superseded_token_as_lost() {
    let db = database().await;
    let old = grant(&db, ALPHA, "old").await;
    let before = lease(&db, ALPHA).await.expires_at.unwrap();
    tokio::time::sleep(Duration::from_millis(20)).await;
    match lease::renew_one(db.pool(), old, T).await.unwrap() {
        Renewed::Extended { expires_at, .. } => {
            assert!(expires_at > before, "{expires_at} > {before}");
            assert_eq!(lease(&db, ALPHA).await.expires_at, Some(expires_at));
        }
        lost => panic!("the holder's RENEW was refused: {lost:?}"),
    }
    expire(&db, ALPHA).await;
    assert_eq!(
        lease::renew_one(db.pool(), old, T).await.unwrap(),
        Renewed::Lost(LossReason::Expired),
        "an expired lease stays lost even before anyone takes it"
    );
    let new = grant(&db, ALPHA, "new").await;
    assert!(new.token() > old.token());
    assert_eq!(
        lease::renew_one(db.pool(), old, T).await.unwrap(),
        Renewed::Lost(LossReason::TakenOver)
    );
    assert!(matches!(
        lease::renew_one(db.pool(), new, T).await.unwrap(),
        Renewed::Extended { .. }
    ));
    assert!(release(&db, new, ReleaseOutcome::Completed, HOUR).await);
    assert_eq!(
        lease::renew_one(db.pool(), new, T).await.unwrap(),
        Renewed::Lost(LossReason::Released)
    );
}

#[tokio::test]
async fn the_fence_admits_only_the_live_holder_in_a_real_claim() {
    let db = database().await;
    let first = grant(&db, ALPHA, "first").await;
    assert_eq!(claim(db.pool(), first).await, 10, "the holder claims");

    expire(&db, ALPHA).await;
    assert_eq!(claim(db.pool(), first).await, 0, "after expiry");

    let second = grant(&db, ALPHA, "second").await;
    assert_eq!(
        claim(db.pool(), first).await,
        0,
        "after a takeover, the old token"
    );
    assert_eq!(
        claim(db.pool(), second).await,
        10,
        "after a takeover, the new token"
    );

    operator::pause(db.pool(), "alpha", "tests", Some("fence check"), T)
        .await
        .unwrap();
    assert_eq!(claim(db.pool(), second).await, 0, "after a pause");
    operator::unpause(db.pool(), "alpha", T).await.unwrap();
    assert_eq!(
        claim(db.pool(), second).await,
        0,
        "unpause does not revive a lease"
    );

    // The pause left second's expiry as a floor under the next grant; skip it, as an operator who
    // knows the holder is gone would.
    operator::clear_cooldown(db.pool(), "alpha", T)
        .await
        .unwrap();
    let third = grant(&db, ALPHA, "third").await;
    assert_eq!(claim(db.pool(), third).await, 10);
    assert!(release(&db, third, ReleaseOutcome::Completed, HOUR).await);
    assert_eq!(claim(db.pool(), third).await, 0, "after a release");
    let stamped = lease(&db, ALPHA).await.last_tick_ended_at;
    assert!(
        !release(&db, third, ReleaseOutcome::Panicked, HOUR).await,
        "a second release of the same tick changes nothing"
    );
    assert_eq!(lease(&db, ALPHA).await.last_tick_ended_at, stamped);
    assert!(lease(&db, ALPHA).await.not_before.is_none());

    let other_role = grant(&db, BETA, "beta").await;
    assert_eq!(
        claim_as(db.pool(), ALPHA, other_role.token()).await,
        0,
        "a token proves only its own role"
    );
    let claimed: i64 =
        sqlx::query_scalar("SELECT count(*) FROM outbox WHERE claimed_by IS NOT NULL")
            .fetch_one(db.admin())
            .await
            .unwrap();
    assert_eq!(claimed, 30);
}

#[tokio::test]
async fn each_release_outcome_records_what_the_design_says() {
    let db = database().await;
    let interval = Duration::from_secs(300);

    // Completed: stamped, no cooldown; the next tick is due one interval after it ended.
    let fence = grant(&db, ALPHA, "holder-a").await;
    assert!(release(&db, fence, ReleaseOutcome::Completed, interval).await);
    let row = lease(&db, ALPHA).await;
    assert!(row.holder_id.is_none() && row.expires_at.is_none());
    assert!(row.last_tick_ended_at.is_some());
    assert_eq!(row.last_tick_holder.as_deref(), Some("holder-a"));
    assert!(row.not_before.is_none());
    let refused = refusal(&db, ALPHA, interval).await;
    assert_eq!(refused.reason, RefusalReason::NotDue);
    let wait = refused.retry_after.unwrap();
    assert!(
        wait > Duration::from_secs(290) && wait <= interval,
        "{wait:?}"
    );
    assert!(
        matches!(
            acquire(&db, ALPHA, "short-interval", Duration::from_millis(1)).await,
            Acquired::Granted(_)
        ),
        "due under a shorter interval"
    );

    for (outcome, expected_ms) in [
        (ReleaseOutcome::Failed, 60_000.0),
        (ReleaseOutcome::Lost, 60_000.0),
        (ReleaseOutcome::Panicked, 300_000.0),
    ] {
        make_due(&db, BETA).await;
        let stamp_before = lease(&db, BETA).await.last_tick_ended_at;
        let fence = grant(&db, BETA, "holder-b").await;
        assert!(release(&db, fence, outcome, interval).await);
        let row = lease(&db, BETA).await;
        assert!(row.holder_id.is_none(), "{outcome}: holder cleared");
        assert_eq!(
            row.last_tick_ended_at, stamp_before,
            "{outcome}: not a completion"
        );
        let cooldown = row.cooldown_ms.unwrap();
        assert!(
            (expected_ms - 5_000.0..=expected_ms).contains(&cooldown),
            "{outcome}: cooldown {cooldown} ms, expected about {expected_ms}"
        );
        let refused = refusal(&db, BETA, Duration::from_millis(1)).await;
        assert_eq!(refused.reason, RefusalReason::CoolingDown, "{outcome}");
    }

    // An interval shorter than 60 s bounds the interruption cooldown.
    make_due(&db, GAMMA).await;
    let fence = grant(&db, GAMMA, "holder-c").await;
    assert!(release(&db, fence, ReleaseOutcome::Failed, Duration::from_secs(5)).await);
    let cooldown = lease(&db, GAMMA).await.cooldown_ms.unwrap();
    assert!((0.0..=5_000.0).contains(&cooldown), "{cooldown}");

    // A release by a superseded token changes nothing.
    let live = {
        make_due(&db, GAMMA).await;
        grant(&db, GAMMA, "live").await
    };
    assert!(!release(&db, fence, ReleaseOutcome::Completed, interval).await);
    assert_eq!(lease(&db, GAMMA).await.holder_id.as_deref(), Some("live"));
    assert!(release(&db, live, ReleaseOutcome::Completed, interval).await);
}

#[tokio::test]
async fn a_shutdown_release_leaves_the_role_claimable_at_once_while_an_interrupted_one_cools_down()
{
    let db = database().await;
    let interval = HOUR;

    // A shutdown and an ended anchor say nothing about the job or the database.
    for outcome in [ReleaseOutcome::Shutdown, ReleaseOutcome::AnchorLost] {
        make_due(&db, ALPHA).await;
        let stamp_before = lease(&db, ALPHA).await.last_tick_ended_at;
        let fence = grant(&db, ALPHA, "deployed-away").await;
        assert!(release(&db, fence, outcome, interval).await);
        let row = lease(&db, ALPHA).await;
        assert!(row.holder_id.is_none(), "{outcome}: holder cleared");
        assert_eq!(
            row.last_tick_ended_at, stamp_before,
            "{outcome}: not a completion"
        );
        assert!(
            row.not_before.is_none(),
            "{outcome}: no cooldown: {:?}",
            row.cooldown_ms
        );
        let successor = acquire(&db, ALPHA, "successor", interval).await;
        let Acquired::Granted(successor) = successor else {
            panic!("{outcome}: another replica takes it at once: {successor:?}");
        };
        assert!(release(&db, successor.fence, ReleaseOutcome::Shutdown, interval).await);
    }

    make_due(&db, BETA).await;
    let fence = grant(&db, BETA, "failed-job").await;
    assert!(release(&db, fence, ReleaseOutcome::Failed, interval).await);
    assert_eq!(
        refusal(&db, BETA, interval).await.reason,
        RefusalReason::CoolingDown,
        "an interrupted tick still cools down"
    );
}

#[tokio::test]
async fn a_refusal_says_when_the_role_can_next_be_claimed() {
    let db = database().await;
    let _held = grant(&db, ALPHA, "leader").await;
    let refused = refusal(&db, ALPHA, HOUR).await;
    assert_eq!(refused.reason, RefusalReason::Held);
    assert_eq!(refused.holder_id.as_deref(), Some("leader"));
    let wait = refused.retry_after.unwrap();
    let expires_at = lease(&db, ALPHA).await.expires_at.unwrap();
    let until_expiry = (expires_at - refused.db_now).to_std().unwrap();
    assert!(
        wait.abs_diff(until_expiry) <= Duration::from_millis(1),
        "the wait is the holder's expiry as the statement saw it: {wait:?} vs {until_expiry:?}"
    );
}

#[tokio::test(flavor = "multi_thread", worker_threads = 4)]
async fn racing_pauses_of_an_unpaused_role_pause_it_once_and_refuse_the_rest() {
    // Three pauses are made to wait on the row while another transaction holds its lock, then
    // race when it lets go: exactly one pauses, the others see its pause and change nothing.
    // Four server connections in all, so it also runs through the test pooler's pool of four.
    const RACERS: usize = 3;
    let db = database().await;
    let pool = db.pool_as("postgres", RACERS as u32 + 1).await;
    let mut holder = pool.begin().await.unwrap();
    sqlx::raw_sql("SELECT 1 FROM leader_leases WHERE role = 'alpha' FOR UPDATE")
        .execute(&mut *holder)
        .await
        .unwrap();
    // A statement timeout far beyond the wait below, so none of them gives up first.
    let patient = Timings::scaled_to_ttl(Duration::from_secs(600)).unwrap();
    let racers: Vec<_> = (0..RACERS)
        .map(|i| {
            let pool = pool.clone();
            tokio::spawn(async move {
                let who = format!("operator-{i}");
                let outcome =
                    operator::pause_if_unpaused(&pool, "alpha", &who, Some("race"), &patient).await;
                (who, outcome.unwrap())
            })
        })
        .collect();
    let mut waited = 0;
    while waited < RACERS {
        sqlx::raw_sql("SELECT pg_stat_clear_snapshot()")
            .execute(&mut *holder)
            .await
            .unwrap();
        let row = sqlx::raw_sql(
            "SELECT count(*) FROM pg_stat_activity
              WHERE datname = current_database() AND wait_event_type = 'Lock'",
        )
        .fetch_one(&mut *holder)
        .await
        .unwrap();
        waited = usize::try_from(row.get::<i64, _>(0)).unwrap();
        tokio::time::sleep(Duration::from_millis(20)).await;
    }
    holder.rollback().await.unwrap();
    let mut outcomes = Vec::new();
    for racer in racers {
        outcomes.push(racer.await.unwrap());
    }
    let winners: Vec<&String> = outcomes
        .iter()
        .filter(|(_, outcome)| *outcome == operator::PauseOutcome::Paused)
        .map(|(who, _)| who)
        .collect();
    assert_eq!(
        winners.len(),
        1,
        "exactly one pause takes effect: {outcomes:?}"
    );
    for (_, outcome) in &outcomes {
        if let operator::PauseOutcome::AlreadyPaused { by, reason, .. } = outcome {
            assert_eq!(by, winners[0], "the others see the winner's pause");
            assert_eq!(reason.as_deref(), Some("race"));
        }
    }
    let row = sqlx::raw_sql("SELECT paused_by FROM leader_leases WHERE role = 'alpha'")
        .fetch_one(db.pool())
        .await
        .unwrap();
    assert_eq!(
        &row.get::<String, _>(0),
        winners[0],
        "the winner's pause stands"
    );
}

#[tokio::test]
async fn pause_stops_the_holder_at_once_and_unpause_leaves_the_cooldown_alone() {
    let db = database().await;
    let fence = grant(&db, ALPHA, "holder").await;
    assert_eq!(claim(db.pool(), fence).await, 10);
    operator::pause(
        db.pool(),
        "alpha",
        "ops@example",
        Some("SMTP key rotation"),
        T,
    )
    .await
    .unwrap();
    assert_eq!(
        claim(db.pool(), fence).await,
        0,
        "the fence is false at once"
    );
    assert_eq!(
        lease::renew_one(db.pool(), fence, T).await.unwrap(),
        Renewed::Lost(LossReason::Paused)
    );
    let other = db.pool_as("postgres", 2).await;
    for pool in [db.pool(), &other] {
        let refused = lease::acquire_one(pool, ALPHA, "anyone", Duration::from_millis(1), T)
            .await
            .unwrap();
        assert!(
            matches!(&refused, Acquired::Refused(r) if r.reason == RefusalReason::Paused && r.retry_after.is_none()),
            "{refused:?}"
        );
    }
    let status: (String, Option<String>, Option<String>) = sqlx::query_as(
        "SELECT state, paused_by, pause_reason FROM leader_status WHERE role = 'alpha'",
    )
    .fetch_one(db.admin())
    .await
    .unwrap();
    assert_eq!(
        status,
        (
            "paused".into(),
            Some("ops@example".into()),
            Some("SMTP key rotation".into())
        )
    );

    db.exec("UPDATE leader_leases SET not_before = now() + interval '1 hour' WHERE role = 'alpha'")
        .await;
    operator::unpause(db.pool(), "alpha", T).await.unwrap();
    let row = lease(&db, ALPHA).await;
    assert!(row.paused_at.is_none());
    assert!(
        row.cooldown_ms.unwrap() > 3_000_000.0,
        "unpause leaves not_before alone"
    );
    assert_eq!(
        refusal(&db, ALPHA, Duration::from_millis(1)).await.reason,
        RefusalReason::CoolingDown
    );
    db.exec("UPDATE leader_leases SET not_before = NULL WHERE role = 'alpha'")
        .await;
    assert!(
        matches!(
            acquire(&db, ALPHA, "next", Duration::from_millis(1)).await,
            Acquired::Granted(_)
        ),
        "due at the next ACQUIRE after unpause"
    );
}

/// A holder whose tick ends before its next RENEW learns of a pause from RELEASE: nothing is
/// recorded (the pause ended the lease), and the answer says why, as RENEW's would.
#[tokio::test]
async fn release_after_a_pause_records_nothing_and_says_the_role_was_paused() {
    let db = database().await;
    let fence = grant(&db, ALPHA, "holder").await;
    operator::pause(db.pool(), "alpha", "ops@example", None, T)
        .await
        .unwrap();
    let released = lease::release(db.pool(), fence, ReleaseOutcome::Completed, HOUR, T)
        .await
        .unwrap();
    assert_eq!(
        (released.changed, released.lost),
        (false, Some(LossReason::Paused))
    );
    assert_eq!(lease(&db, ALPHA).await.last_tick_ended_at, None);

    operator::unpause(db.pool(), "alpha", T).await.unwrap();
    make_due(&db, ALPHA).await;
    let next = grant(&db, ALPHA, "next").await;
    let stale = lease::release(db.pool(), fence, ReleaseOutcome::Completed, HOUR, T)
        .await
        .unwrap();
    assert_eq!(stale.lost, Some(LossReason::TakenOver));
    let live = lease::release(db.pool(), next, ReleaseOutcome::Completed, HOUR, T)
        .await
        .unwrap();
    assert_eq!((live.changed, live.lost), (true, None));
    let again = lease::release(db.pool(), next, ReleaseOutcome::Completed, HOUR, T)
        .await
        .unwrap();
    assert_eq!(again.lost, Some(LossReason::Released));
}

/// A pause then an unpause does not hand the role on while the paused holder may still work
/// without a claim: the pause sets `not_before` to the held lease's expiry, and ACQUIRE waits for
/// it as it waits for a crashed holder's expiry. Both pause paths (`leader_pause` directly, and
/// through `pause_if_unpaused`, leaderctl's) set it; a role held by nobody gets no floor.
#[tokio::test]
async fn after_a_pause_and_unpause_acquire_waits_for_the_paused_lease_to_expire() {
    let db = database().await;
    // A lease far longer than the test, so that its expiry is ahead whatever the machine's load.
    let long = Timings::scaled_to_ttl(HOUR).unwrap();
    let Acquired::Granted(held) = lease::acquire_one(db.pool(), ALPHA, "paused", HOUR, &long)
        .await
        .unwrap()
    else {
        panic!("a fresh role is granted");
    };
    operator::pause(db.pool(), "alpha", "ops", Some("floor"), T)
        .await
        .unwrap();
    let row = lease(&db, ALPHA).await;
    assert!(row.holder_id.is_none() && row.expires_at.is_none());
    assert_eq!(
        row.not_before,
        Some(held.expires_at),
        "the pause keeps the held lease's expiry as the floor"
    );
    operator::unpause(db.pool(), "alpha", T).await.unwrap();
    assert_eq!(lease(&db, ALPHA).await.not_before, Some(held.expires_at));
    let refused = refusal(&db, ALPHA, Duration::from_millis(1)).await;
    assert_eq!(refused.reason, RefusalReason::CoolingDown, "{refused:?}");
    let until_expiry = (held.expires_at - refused.db_now).to_std().unwrap();
    let wait = refused.retry_after.unwrap();
    assert!(
        wait.abs_diff(until_expiry) <= Duration::from_millis(1),
        "the next claimable time is the paused lease's expiry: {wait:?} vs {until_expiry:?}"
    );
    let status: (String, Option<chrono::DateTime<chrono::Utc>>) =
        sqlx::query_as("SELECT state, cooldown_until FROM leader_status WHERE role = 'alpha'")
            .fetch_one(db.admin())
            .await
            .unwrap();
    assert_eq!(status, ("cooldown".into(), Some(held.expires_at)));

    // Through pause_if_unpaused, and with a real expiry: the floor is the lease's expiry, and once
    // the database clock has passed it the next ACQUIRE is granted. Nothing here races the clock:
    // the test waits for the floor to pass before it asks.
    let Acquired::Granted(short) = acquire(&db, BETA, "paused", Duration::from_millis(1)).await
    else {
        panic!("a fresh role is granted");
    };
    assert_eq!(
        operator::pause_if_unpaused(db.pool(), "beta", "ops", None, T)
            .await
            .unwrap(),
        operator::PauseOutcome::Paused
    );
    assert_eq!(lease(&db, BETA).await.not_before, Some(short.expires_at));
    operator::unpause(db.pool(), "beta", T).await.unwrap();
    assert!(
        db.eventually(
            "SELECT count(*) FROM leader_leases WHERE role = 'beta' AND not_before < now()",
            FAST.ttl() * 10
        )
        .await,
        "the floor passes on the database clock"
    );
    assert!(
        matches!(
            acquire(&db, BETA, "next", Duration::from_millis(1)).await,
            Acquired::Granted(_)
        ),
        "granted once the paused lease's expiry has passed"
    );

    // No live lease, no floor: pausing an unheld or a paused role leaves not_before as it was, a
    // cooldown included; an expired lease's expiry is past, so it holds nothing off.
    db.exec("UPDATE leader_leases SET not_before = now() + interval '1 hour' WHERE role = 'gamma'")
        .await;
    let cooldown = lease(&db, GAMMA).await.not_before;
    operator::pause(db.pool(), "gamma", "ops", None, T)
        .await
        .unwrap();
    assert_eq!(lease(&db, GAMMA).await.not_before, cooldown, "unheld");
    operator::pause(db.pool(), "gamma", "ops", Some("again"), T)
        .await
        .unwrap();
    assert_eq!(
        lease(&db, GAMMA).await.not_before,
        cooldown,
        "already paused"
    );
    operator::unpause(db.pool(), "gamma", T).await.unwrap();
    db.exec("UPDATE leader_leases SET not_before = NULL WHERE role = 'gamma'")
        .await;
    operator::pause(db.pool(), "gamma", "ops", None, T)
        .await
        .unwrap();
    assert_eq!(
        lease(&db, GAMMA).await.not_before,
        None,
        "unheld, no cooldown"
    );
    operator::unpause(db.pool(), "gamma", T).await.unwrap();
    let _expired = grant(&db, GAMMA, "expired").await;
    expire(&db, GAMMA).await;
    operator::pause(db.pool(), "gamma", "ops", None, T)
        .await
        .unwrap();
    operator::unpause(db.pool(), "gamma", T).await.unwrap();
    assert!(
        matches!(
            acquire(&db, GAMMA, "next", HOUR).await,
            Acquired::Granted(_)
        ),
        "an expired lease's expiry delays nothing"
    );
}

#[tokio::test]
async fn the_whole_protocol_runs_with_only_the_documented_grants() {
    let db = database().await;
    db.exec(
        "DO $$ BEGIN
             CREATE ROLE leader_app LOGIN;
         EXCEPTION WHEN duplicate_object OR unique_violation THEN NULL;
         END $$;",
    )
    .await;
    db.exec(
        "SELECT leader_grant_app_role('leader_app'); GRANT SELECT, UPDATE ON outbox TO leader_app;",
    )
    .await;
    let app = db.pool_as("leader_app", 4).await;

    let fence = match lease::acquire_one(&app, ALPHA, "app", HOUR, T)
        .await
        .unwrap()
    {
        Acquired::Granted(grant) => grant.fence,
        other => panic!("{other:?}"),
    };
    assert!(matches!(
        lease::renew_one(&app, fence, T).await.unwrap(),
        Renewed::Extended { .. }
    ));
    assert_eq!(claim(&app, fence).await, 10);
    let state: String = sqlx::raw_sql("SELECT state FROM leader_status WHERE role = 'alpha'")
        .fetch_one(&app)
        .await
        .unwrap()
        .get("state");
    assert_eq!(state, "leading");
    assert!(
        lease::release(&app, fence, ReleaseOutcome::Completed, HOUR, T)
            .await
            .unwrap()
            .changed
    );
    operator::pause(&app, "alpha", "app", None, T)
        .await
        .unwrap();
    operator::unpause(&app, "alpha", T).await.unwrap();
    check_schema_ready(&app, &[ALPHA, BETA]).await.unwrap();

    // And nothing more: no INSERT, no DELETE, no DDL.
    for forbidden in [
        "INSERT INTO leader_leases (role, holder_token) VALUES ('gamma', 1)",
        "DELETE FROM leader_leases WHERE role = 'gamma'",
        "ALTER TABLE leader_leases DROP CONSTRAINT leader_leases_role_registered",
    ] {
        let err = sqlx::raw_sql(forbidden).execute(&app).await.unwrap_err();
        assert!(
            err.to_string().contains("permission denied")
                || err.to_string().contains("must be owner"),
            "{forbidden}: {err}"
        );
    }
}

#[tokio::test]
async fn a_claim_in_a_transaction_older_than_the_expiry_is_refused() {
    let db = database().await;
    let timings = Timings::new_or_panic(TimingParts {
        ttl: Duration::from_millis(400),
        heartbeat: Duration::from_millis(100),
        statement_timeout: Duration::from_millis(100),
        abandon_after: Duration::from_millis(200),
        max_poll: Duration::from_millis(100),
    });
    let fence = match lease::acquire_one(db.pool(), ALPHA, "slow", HOUR, &timings)
        .await
        .unwrap()
    {
        Acquired::Granted(grant) => grant.fence,
        other => panic!("{other:?}"),
    };
    // The transaction starts while the lease is live, then outlives it.
    let mut tx = db.admin().begin().await.unwrap();
    assert_eq!(
        claim_in(&mut tx, ALPHA, fence.token()).await,
        10,
        "claims while live"
    );
    let live_until = lease(&db, ALPHA).await.expires_at.unwrap();
    loop {
        let expired: bool = sqlx::query_scalar("SELECT now() > $1")
            .bind(live_until)
            .fetch_one(db.admin())
            .await
            .unwrap();
        if expired {
            break;
        }
        tokio::time::sleep(Duration::from_millis(50)).await;
    }
    assert_eq!(
        claim_in(&mut tx, ALPHA, fence.token()).await,
        0,
        "the same transaction, after the expiry"
    );
    tx.commit().await.unwrap();

    // Under REPEATABLE READ the fence refuses to answer from an old snapshot.
    let fresh = grant(&db, BETA, "rr").await;
    let mut tx = db.admin().begin().await.unwrap();
    sqlx::query("SET TRANSACTION ISOLATION LEVEL REPEATABLE READ")
        .execute(&mut *tx)
        .await
        .unwrap();
    let err = sqlx::query("SELECT leader_fence($1, $2)")
        .bind(fresh.role())
        .bind(fresh.token())
        .execute(&mut *tx)
        .await
        .unwrap_err();
    assert!(err.to_string().contains("needs READ COMMITTED"), "{err}");
}

#[tokio::test]
async fn the_fence_is_a_one_time_filter_and_a_stale_token_never_scans() {
    let db = database().await;
    let fence = grant(&db, ALPHA, "planner").await;
    let plan: Vec<String> = sqlx::query_scalar(
        "EXPLAIN (ANALYZE, COSTS OFF, TIMING OFF, SUMMARY OFF)
         SELECT id FROM outbox WHERE claimed_by IS NULL AND leader_fence('alpha', $1)
          ORDER BY id LIMIT 10 FOR UPDATE SKIP LOCKED",
    )
    .bind(fence.token() - 1)
    .fetch_all(db.admin())
    .await
    .unwrap();
    let plan = plan.join("\n");
    assert!(plan.contains("One-Time Filter"), "{plan}");
    assert!(plan.contains("never executed"), "{plan}");
}

#[tokio::test]
async fn renew_and_release_stop_waiting_for_a_locked_row_on_the_server() {
    let db = database().await;
    let fence = grant(&db, ALPHA, "holder").await;
    let mut blocker = db.admin().begin().await.unwrap();
    sqlx::query("SELECT 1 FROM leader_leases WHERE role = 'alpha' FOR UPDATE")
        .execute(&mut *blocker)
        .await
        .unwrap();
    let slow_client = Timings::new_or_panic(TimingParts {
        ttl: Duration::from_secs(30),
        heartbeat: Duration::from_secs(1),
        statement_timeout: Duration::from_millis(300),
        abandon_after: Duration::from_secs(2),
        max_poll: Duration::from_secs(1),
    });
    // The server gives up on the lock after the statement timeout.
    let err = lease::renew_one(db.pool(), fence, &slow_client)
        .await
        .unwrap_err();
    let text = err.to_string();
    assert!(
        matches!(&err, StatementError::Database { .. }) && text.contains("lock timeout"),
        "the server, not only the client, stopped: {text}"
    );
    blocker.rollback().await.unwrap();
    // Nothing was left on the connections: the next statements wait normally.
    let setting: String = sqlx::raw_sql("SELECT current_setting('lock_timeout') AS v")
        .fetch_one(db.pool())
        .await
        .unwrap()
        .get("v");
    assert_eq!(setting, "0");
    assert!(matches!(
        lease::renew_one(db.pool(), fence, T).await.unwrap(),
        Renewed::Extended { .. }
    ));
}

#[tokio::test]
async fn the_schema_check_names_what_is_missing_and_how_to_add_it() {
    let empty = TestDb::unmigrated().await;
    let err = check_schema_ready(empty.pool(), &[ALPHA])
        .await
        .unwrap_err();
    let SchemaError::NotReady(report) = &err else {
        panic!("{err}")
    };
    assert!(
        report
            .problems
            .contains(&SchemaProblem::MissingObject("table leader_leases"))
    );
    assert!(
        err.to_string().contains("apply the framework migration"),
        "{err}"
    );

    let bare = TestDb::new().await;
    let err = check_schema_ready(bare.pool(), &[ALPHA]).await.unwrap_err();
    assert!(err.to_string().contains("no roles are registered"), "{err}");

    let db = database().await;
    check_schema_ready(db.pool(), &[ALPHA, BETA, GAMMA])
        .await
        .unwrap();
    let delta = Role::from_static("delta");
    let err = check_schema_ready(db.pool(), &[ALPHA, delta])
        .await
        .unwrap_err();
    let SchemaError::NotReady(report) = &err else {
        panic!("{err}")
    };
    assert_eq!(report.problems.len(), 1, "{err}");
    let text = err.to_string();
    assert!(
        text.contains("role `delta` is not in the leader_leases_role_registered CHECK"),
        "{text}"
    );
    assert!(text.contains("alpha, beta, gamma"), "{text}");

    db.exec("DELETE FROM leader_leases WHERE role = 'gamma'")
        .await;
    let err = check_schema_ready(db.pool(), &[GAMMA]).await.unwrap_err();
    assert!(err.to_string().contains("role `gamma` has no row"), "{err}");
    assert!(matches!(
        lease::acquire_one(db.pool(), GAMMA, "x", HOUR, T).await,
        Err(StatementError::RoleNotSeeded { role }) if role == GAMMA
    ));
}

#[tokio::test]
async fn bad_input_gets_an_error_that_names_it() {
    let db = database().await;
    let err = operator::pause(db.pool(), "omega", "ops", None, T)
        .await
        .unwrap_err();
    assert!(
        matches!(&err, StatementError::UnknownRole { role, .. } if role == "omega"),
        "{err}"
    );
    assert!(err.to_string().contains("unknown role `omega`"));
    let err = operator::unpause(db.pool(), "omega", T).await.unwrap_err();
    assert!(matches!(err, StatementError::UnknownRole { .. }));
    let err = sqlx::query("SELECT leader_pause('omega', 'ops')")
        .execute(db.admin())
        .await
        .unwrap_err();
    assert!(
        err.to_string().contains("unknown role 'omega'"),
        "from psql too: {err}"
    );
    let err = sqlx::query("SELECT leader_pause('alpha', '')")
        .execute(db.admin())
        .await
        .unwrap_err();
    assert!(err.to_string().contains("say who is pausing"), "{err}");

    for (name, expect) in [
        ("", "empty"),
        ("Billing", "must start with a lowercase"),
        ("bill-ing", "has `-` at byte 4"),
    ] {
        let err = operator::pause(db.pool(), name, "ops", None, T)
            .await
            .unwrap_err();
        assert!(err.to_string().contains(expect), "{name:?}: {err}");
        assert!(Role::new(name).is_err());
    }
    let err = lease::acquire_one(db.pool(), ALPHA, "x", Duration::ZERO, T)
        .await
        .unwrap_err();
    assert!(matches!(err, StatementError::Interval { .. }));
    assert!(err.to_string().contains("must be at least 1 ms"), "{err}");
    let err = db_insert_role(&db, "Not A Role").await;
    assert!(err.contains("leader_leases_role_format"), "{err}");
}

async fn db_insert_role(db: &TestDb, role: &str) -> String {
    sqlx::query("INSERT INTO leader_leases (role, holder_token) VALUES ($1, 1)")
        .bind(role)
        .execute(db.admin())
        .await
        .unwrap_err()
        .to_string()
}

#[tokio::test(flavor = "multi_thread", worker_threads = 4)]
async fn many_rounds_through_a_shared_pool_leave_no_state_behind() {
    // Sixty-four acquirers, many rounds: on the pooler pass these share four server connections,
    // which breaks any statement that relies on session state or named prepared statements.
    let db = database().await;
    let pool = db.pool_as("postgres", 16).await;
    // What this checks is that nothing is left on a server connection, not speed: 64 statements
    // queue for 4 server connections, so FAST's 300 ms statement timeout failed it on a loaded
    // machine (load average 8) while it passed 10 runs of 10 at load 2.
    let mut seen = HashSet::new();
    for _ in 0..10 {
        let tasks: Vec<_> = (0..64)
            .map(|i| {
                let pool = pool.clone();
                tokio::spawn(async move {
                    let every = Duration::from_millis(1);
                    lease::acquire_one(&pool, BETA, &format!("r{i}"), every, RACE).await
                })
            })
            .collect();
        let mut granted = Vec::new();
        for task in tasks {
            if let Acquired::Granted(g) = task.await.unwrap().expect("no statement fails") {
                granted.push(g.fence);
            }
        }
        assert_eq!(granted.len(), 1);
        assert!(seen.insert(granted[0].token()));
        lease::release(
            &pool,
            granted[0],
            ReleaseOutcome::Completed,
            Duration::from_millis(1),
            RACE,
        )
        .await
        .unwrap();
        make_due(&db, BETA).await;
    }
}

#[tokio::test]
async fn a_promoted_standby_that_missed_the_last_grant_never_reissues_its_token() {
    // An asynchronous standby promoted after a failover can lack the last ACQUIRE: its row still
    // carries the token before the one the old leader holds. The next grant there must not
    // re-issue the old leader's token, or its fence would be true on the new primary.
    let db = database().await;
    let before = grant(&db, ALPHA, "old-leader").await;
    release(
        &db,
        before,
        ReleaseOutcome::Completed,
        Duration::from_millis(1),
    )
    .await;
    make_due(&db, ALPHA).await;
    let old_leader = grant(&db, ALPHA, "old-leader").await;
    db.exec(
        "UPDATE leader_leases
            SET holder_token = holder_token - 1, holder_id = NULL, acquired_at = NULL, expires_at = NULL
          WHERE role = 'alpha'",
    )
    .await;
    let after_failover = grant(&db, ALPHA, "new-leader").await;
    assert!(
        after_failover.token() > old_leader.token(),
        "{} must be above the old leader's {}",
        after_failover.token(),
        old_leader.token()
    );
}

#[tokio::test]
async fn leader_status_names_each_state_in_one_word() {
    let db = database().await;
    let state = async |role: &str| -> (String, Option<String>) {
        sqlx::query_as("SELECT state, leader FROM leader_status WHERE role = $1")
            .bind(role)
            .fetch_one(db.admin())
            .await
            .unwrap()
    };
    assert_eq!(state("alpha").await, ("idle".into(), None));
    let fence = grant(&db, ALPHA, "replica-1").await;
    assert_eq!(
        state("alpha").await,
        ("leading".into(), Some("replica-1".into()))
    );
    expire(&db, ALPHA).await;
    assert_eq!(
        state("alpha").await,
        ("expired".into(), Some("replica-1".into())),
        "a holder that went silent"
    );
    release(&db, fence, ReleaseOutcome::Failed, HOUR).await;
    assert_eq!(state("alpha").await, ("cooldown".into(), None));
    operator::pause(db.pool(), "alpha", "ops", None, T)
        .await
        .unwrap();
    assert_eq!(state("alpha").await, ("paused".into(), None));
    let (age, cooldown_until): (Option<String>, Option<chrono::DateTime<chrono::Utc>>) =
        sqlx::query_as(
            "SELECT last_tick_age::text, cooldown_until FROM leader_status WHERE role = 'alpha'",
        )
        .fetch_one(db.admin())
        .await
        .unwrap();
    assert!(age.is_none(), "no completed tick, so no age");
    assert!(cooldown_until.is_some());
}

#[tokio::test]
async fn each_statement_names_itself_to_an_operator_reading_pg_stat_activity() {
    use leader_runtime::protocol::Statement;

    let db = database().await;
    let mut conn = db.admin().acquire().await.unwrap();
    let pid: i32 = sqlx::query_scalar("SELECT pg_backend_pid()")
        .fetch_one(&mut *conn)
        .await
        .unwrap();
    let last_statement = || async {
        let query: String = sqlx::query_scalar("SELECT query FROM pg_stat_activity WHERE pid = $1")
            .bind(pid)
            .fetch_one(db.admin())
            .await
            .unwrap();
        Statement::of_sql(&query).ok_or(query)
    };

    let Acquired::Granted(grant) = lease::acquire_one(&mut *conn, ALPHA, "ops", HOUR, T)
        .await
        .unwrap()
    else {
        panic!("a fresh role is granted");
    };
    assert_eq!(last_statement().await, Ok(Statement::Acquire));
    let renewed = lease::renew_one(&mut *conn, grant.fence, T).await.unwrap();
    assert!(matches!(renewed, Renewed::Extended { .. }), "{renewed:?}");
    assert_eq!(last_statement().await, Ok(Statement::Renew));
    lease::release(&mut *conn, grant.fence, ReleaseOutcome::Completed, HOUR, T)
        .await
        .unwrap();
    assert_eq!(last_statement().await, Ok(Statement::Release));
    operator::pause(&mut *conn, "alpha", "ops", None, T)
        .await
        .unwrap();
    assert_eq!(last_statement().await, Ok(Statement::Pause));
    operator::unpause(&mut *conn, "alpha", T).await.unwrap();
    assert_eq!(last_statement().await, Ok(Statement::Unpause));
}

/// The table's `leader_leases_role_format` CHECK and the `leader-role-name` rule (behind
/// `Role::new` and `#[leader_role]`) accept exactly the same names.
#[tokio::test]
async fn the_tables_role_check_agrees_with_the_role_name_rule() {
    // Only the framework migration: no registered-roles constraint to refuse the names first.
    let db = TestDb::new().await;
    let names = [
        "billing".to_owned(),
        "webhook_outbox".to_owned(),
        "a".to_owned(),
        "r2d2".to_owned(),
        "z_".to_owned(),
        "a".repeat(63),
        "b".repeat(64),
        String::new(),
        "Billing".to_owned(),
        "bILLING".to_owned(),
        "9lives".to_owned(),
        "_x".to_owned(),
        "bill-ing".to_owned(),
        "bill ing".to_owned(),
        "billing\n".to_owned(),
        "billé".to_owned(),
        "état".to_owned(),
        "ǆ".to_owned(),
        "a\u{0131}".to_owned(),
        "a$".to_owned(),
    ];
    for name in names {
        let stored = sqlx::query("INSERT INTO leader_leases (role, holder_token) VALUES ($1, 1)")
            .bind(&name)
            .execute(db.admin())
            .await;
        let refused_by_check = match &stored {
            Ok(_) => false,
            Err(sqlx::Error::Database(e))
                if e.constraint() == Some("leader_leases_role_format") =>
            {
                true
            }
            Err(e) => panic!("{name:?}: {e}"),
        };
        assert_eq!(
            !refused_by_check,
            Role::new(&name).is_ok(),
            "{name:?}: the CHECK and the rule disagree"
        );
    }
}
