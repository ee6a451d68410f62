//! Calendar schedules against a real PostgreSQL (and through PgBouncer on the pooler pass): each
//! scheduled instant is completed at most once cluster-wide, never before it is due on the
//! database clock, over a graceful shutdown, a kill mid-tick, and a pause; the two missed-instant
//! policies; what `leader_status` shows.

mod common;

use std::sync::Arc;
use std::sync::atomic::{AtomicBool, Ordering};
use std::time::Duration;

use chrono::{DateTime, Utc};
use common::*;
use leader_runtime::protocol::lease::{self, Acquired, RefusalReason, Wanted};
use leader_runtime::protocol::{ReleaseOutcome, operator};
use leader_runtime::schedule::{CronSchedule, Missed};
use leader_runtime::{JobError, Runtime, State, TickContext};
use leader_testkit::TestDb;
use tokio::task::JoinHandle;
use tokio_util::sync::CancellationToken;

/// Every two seconds, with seconds (croner's optional sixth field, first).
const EVERY_TWO_SECONDS: &str = "*/2 * * * * *";

/// One replica's state: its name, and whether its next tick hangs (to be killed mid-tick).
#[derive(Clone)]
struct Replica {
    holder: &'static str,
    hang: Arc<AtomicBool>,
    hanging: Arc<AtomicBool>,
}

impl Replica {
    fn new(holder: &'static str) -> Replica {
        Replica {
            holder,
            hang: Arc::new(AtomicBool::new(false)),
            hanging: Arc::new(AtomicBool::new(false)),
        }
    }
}

/// Bills the instant the tick serves, fenced, stamped with the database clock at the claim, once:
/// an instant already billed is not billed again. The framework completes each instant at most
/// once, but a tick's effect and its completion are two statements: a tick that billed and then
/// lost its lease (a pause, an expiry) before RELEASE leaves the instant due, and the next tick
/// serves it again, as a job must expect. The job makes its effect idempotent, as a billing job
/// does; what the test then checks is that no two holders bill an instant at once (the fence) and
/// that none is skipped or billed early.
async fn bill(tick: TickContext, State(replica): State<Replica>) -> Result<(), JobError> {
    let instant = tick
        .tick_instant()
        .expect("a calendar role's tick serves an instant")
        .with_timezone(&Utc);
    if replica.hang.load(Ordering::SeqCst) {
        replica.hanging.store(true, Ordering::SeqCst);
        std::future::pending::<()>().await;
    }
    let mut tx = tick.pool().begin().await?;
    let billed = sqlx::query(
        "INSERT INTO billed (instant, token, holder, billed_at)
         SELECT $3, $2, $4, clock_timestamp()
          WHERE leader_fence($1, $2) AND NOT EXISTS (SELECT 1 FROM billed WHERE instant = $3)",
    )
    .persistent(false)
    .bind(tick.role())
    .bind(tick.fence().token())
    .bind(instant)
    .bind(replica.holder)
    .execute(&mut *tx)
    .await?
    .rows_affected();
    let already: bool =
        sqlx::query_scalar("SELECT EXISTS (SELECT 1 FROM billed WHERE instant = $1)")
            .persistent(false)
            .bind(instant)
            .fetch_one(&mut *tx)
            .await?;
    tx.commit().await?;
    if billed == 1 || already {
        Ok(())
    } else {
        Err("the fence refused the claim".into())
    }
}

async fn billing_db() -> TestDb {
    let db = database().await;
    db.exec(
        "CREATE TABLE billed (instant timestamptz NOT NULL, token bigint NOT NULL,
                              holder text NOT NULL, billed_at timestamptz NOT NULL)",
    )
    .await;
    db
}

type Started = (
    JoinHandle<Result<(), leader_runtime::RunError>>,
    CancellationToken,
);

fn start(db: &TestDb, replica: Replica, missed: Missed) -> Started {
    let schedule = CronSchedule::new(EVERY_TWO_SECONDS, "UTC")
        .unwrap()
        .missed(missed);
    let runtime = Runtime::builder(db.pool().clone())
        .timings(FAST)
        .holder_id(replica.holder)
        .shutdown_grace(Duration::from_secs(2))
        .with_state(replica)
        .role(ALPHA, schedule, bill)
        .build()
        .unwrap();
    let shutdown = CancellationToken::new();
    (
        tokio::spawn(runtime.run_until_cancelled(shutdown.clone())),
        shutdown,
    )
}

/// Polls `done` until it says true; a liveness wait with ample time, not a timing assertion.
async fn wait_until<F: Future<Output = bool>>(what: &str, mut done: impl FnMut() -> F) {
    let deadline = tokio::time::Instant::now() + Duration::from_secs(120);
    while !done().await {
        assert!(tokio::time::Instant::now() < deadline, "{what}");
        tokio::time::sleep(Duration::from_millis(20)).await;
    }
}

/// The instants billed, in order.
async fn billed(db: &TestDb) -> Vec<DateTime<Utc>> {
    sqlx::query_scalar("SELECT instant FROM billed ORDER BY instant")
        .fetch_all(db.admin())
        .await
        .unwrap()
}

/// No instant billed twice, none before it was due on the database clock.
async fn assert_once_and_never_early(db: &TestDb) {
    let twice = db
        .count("SELECT count(*) FROM (SELECT instant FROM billed GROUP BY instant HAVING count(*) > 1) t")
        .await;
    assert_eq!(twice, 0, "an instant was billed twice");
    let early = db
        .count("SELECT count(*) FROM billed WHERE billed_at < instant")
        .await;
    assert_eq!(early, 0, "an instant was billed before it was due");
}

#[tokio::test(flavor = "multi_thread", worker_threads = 4)]
async fn three_replicas_complete_each_instant_once_over_a_shutdown_a_kill_and_a_pause() {
    let db = billing_db().await;
    record_acquires(&db).await;
    record_holder_changes(&db).await;
    let (a, b, victim) = (
        Replica::new("replica-a"),
        Replica::new("replica-b"),
        Replica::new("victim"),
    );
    let (a_task, a_stop) = start(&db, a, Missed::Each);
    let (b_task, b_stop) = start(&db, b, Missed::Each);
    let (victim_task, _victim_stop) = start(&db, victim.clone(), Missed::Each);
    assert!(
        db.eventually(
            "SELECT (count(*) >= 3)::int::bigint FROM billed",
            Duration::from_secs(60)
        )
        .await
    );

    // SIGTERM's path: a graceful shutdown releases what replica-a holds.
    a_stop.cancel();
    a_task.await.unwrap().unwrap();

    // A kill mid-tick: the victim's next tick hangs, and its task is dropped without a RELEASE.
    victim.hang.store(true, Ordering::SeqCst);
    wait_until("the victim never got a tick", || async {
        victim.hanging.load(Ordering::SeqCst)
    })
    .await;
    let hung_on: DateTime<Utc> = sqlx::query_scalar(
        "SELECT tick_instant FROM leader_leases WHERE role = 'alpha' AND holder_id = 'victim'",
    )
    .fetch_one(db.admin())
    .await
    .expect("the victim holds the instant it hangs on");
    victim_task.abort();
    let _ = victim_task.await;

    // The instant the victim never completed is billed by replica-b once the lease runs out.
    wait_until("the killed tick's instant was never run", || async {
        billed(&db).await.contains(&hung_on)
    })
    .await;

    // A pause: nothing is billed while paused; with `missed = each`, every instant the pause
    // covered is billed after it, in order.
    operator::pause(db.pool(), "alpha", "test", Some("schedule test"), &FAST)
        .await
        .unwrap();
    let paused = db_now(&db).await;
    let (paused_at, floor): (DateTime<Utc>, Option<DateTime<Utc>>) =
        sqlx::query_as("SELECT paused_at, not_before FROM leader_leases WHERE role = 'alpha'")
            .fetch_one(db.admin())
            .await
            .unwrap();
    // The pause lasts until replica-b has asked twice once an instant was due but for the pause:
    // the next instant is at most one period after the pause, and the first refusal tells b the
    // last completed instant, so its second ACQUIRE asks for the next one.
    let due = (paused + chrono::Duration::seconds(2)).max(floor.unwrap_or(paused));
    assert_eq!(
        wait_for_refusals(&db, &["replica-b"], ALPHA, 2, due, paused).await,
        0,
        "an instant was granted while the role was paused"
    );
    let unpausing = db_now(&db).await;
    operator::unpause(db.pool(), "alpha", &FAST).await.unwrap();
    let unpaused_at = db_now(&db).await;
    assert_eq!(
        grants_since(&db, ALPHA, paused, Some(unpausing)).await,
        0,
        "an instant was granted while the role was paused"
    );
    wait_until("billing never caught up after the unpause", || async {
        billed(&db)
            .await
            .last()
            .is_some_and(|last| *last > unpaused_at)
    })
    .await;
    b_stop.cancel();
    b_task.await.unwrap().unwrap();

    assert_once_and_never_early(&db).await;
    let during_pause: i64 = sqlx::query_scalar(
        // A claim that started before the pause committed may stamp its clock just after it.
        "SELECT count(*) FROM billed WHERE billed_at > $1 + interval '1 second' AND billed_at < $2",
    )
    .bind(paused_at)
    .bind(unpaused_at)
    .fetch_one(db.admin())
    .await
    .unwrap();
    assert_eq!(
        during_pause, 0,
        "an instant was billed while the role was paused"
    );
    let instants = billed(&db).await;
    let gaps: Vec<_> = instants
        .windows(2)
        .filter(|pair| pair[1] - pair[0] != chrono::Duration::seconds(2))
        .collect();
    assert!(
        gaps.is_empty(),
        "with missed = each no instant is skipped, across the kill and the pause: {gaps:?}"
    );
    let last: Option<DateTime<Utc>> =
        sqlx::query_scalar("SELECT last_completed_instant FROM leader_leases WHERE role = 'alpha'")
            .fetch_one(db.admin())
            .await
            .unwrap();
    assert_eq!(
        last,
        instants.last().copied(),
        "the row records the last billed instant"
    );
    println!(
        "{} instants billed once each, none early, none skipped",
        instants.len()
    );
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn latest_runs_the_latest_missed_instant_once_and_skips_the_older() {
    let db = billing_db().await;
    record_acquires(&db).await;
    let (task, stop) = start(&db, Replica::new("replica-a"), Missed::Latest);
    assert!(
        db.eventually(
            "SELECT (count(*) >= 2)::int::bigint FROM billed",
            Duration::from_secs(60)
        )
        .await
    );
    operator::pause(db.pool(), "alpha", "test", None, &FAST)
        .await
        .unwrap();
    // The replica asks for the role only between ticks, so an ACQUIRE of its after the pause
    // shows that whatever tick the pause caught has ended and billed what it billed. Asked six
    // seconds after the pause, three instants have passed meanwhile: the older two are skipped.
    let paused = db_now(&db).await;
    wait_for_acquires(
        &db,
        "replica-a",
        ALPHA,
        1,
        paused + chrono::Duration::seconds(6),
    )
    .await;
    let before: i64 = db.count("SELECT count(*) FROM billed").await;
    operator::unpause(db.pool(), "alpha", &FAST).await.unwrap();
    operator::clear_cooldown(db.pool(), "alpha", &FAST)
        .await
        .unwrap();
    let unpaused_at = db_now(&db).await;
    wait_until("billing never resumed", || async {
        db.count("SELECT count(*) FROM billed").await >= before + 2
    })
    .await;
    stop.cancel();
    task.await.unwrap().unwrap();

    assert_once_and_never_early(&db).await;
    let instants = billed(&db).await;
    let resumed = usize::try_from(before).unwrap();
    let (last_before, first_after) = (instants[resumed - 1], instants[resumed]);
    // The last instant billed before the pause is at or before it; the first after is no older
    // than the instant just before the unpause (at least 6 s later), so at least one instant
    // between was skipped.
    assert!(
        first_after >= unpaused_at - chrono::Duration::seconds(2),
        "the first instant billed after the unpause is not an older missed one ({first_after}, unpaused at {unpaused_at})"
    );
    assert!(
        first_after - last_before >= chrono::Duration::seconds(4),
        "the pause's older instants were skipped: {last_before} then {first_after}"
    );
}

/// The statement itself, with no runtime: an instant is granted only once due and only once.
#[tokio::test]
async fn acquire_grants_an_instant_only_once_it_is_due_and_only_until_it_completes() {
    let db = database().await;
    let cron = CronSchedule::new(EVERY_TWO_SECONDS, "UTC").unwrap();
    let now = db_now(&db).await;

    // An instant still to come is refused as not due, with how long until it is.
    let future = cron
        .plan(None, now + chrono::Duration::seconds(10))
        .unwrap();
    let answer = acquire(&db, &cron, Some(&future)).await;
    let Acquired::Refused(refusal) = answer else {
        panic!("granted before it was due: {answer:?}")
    };
    assert_eq!(refusal.reason, RefusalReason::NotDue);
    assert!(
        refusal.retry_after.unwrap() > Duration::from_secs(5),
        "{refusal:?}"
    );

    // Asking without an instant grants nothing and says what completed last (nothing yet).
    let answer = acquire(&db, &cron, None).await;
    let Acquired::Refused(refusal) = answer else {
        panic!("granted without an instant")
    };
    assert_eq!(
        (refusal.reason, refusal.last_completed_instant),
        (RefusalReason::InstantCompleted, None)
    );

    // A due instant is granted; a failed tick leaves it due; a completed one is not granted again.
    let due = cron.plan(None, now).unwrap();
    let grant = granted(acquire(&db, &cron, Some(&due)).await);
    assert_eq!(grant.tick_instant, Some(due.instant));
    lease::release(
        db.pool(),
        grant.fence,
        ReleaseOutcome::Failed,
        Duration::from_secs(2),
        &FAST,
    )
    .await
    .unwrap();
    operator::clear_cooldown(db.pool(), "alpha", &FAST)
        .await
        .unwrap();
    let grant = granted(acquire(&db, &cron, Some(&due)).await);
    lease::release(
        db.pool(),
        grant.fence,
        ReleaseOutcome::Completed,
        Duration::from_secs(2),
        &FAST,
    )
    .await
    .unwrap();
    let answer = acquire(&db, &cron, Some(&due)).await;
    let Acquired::Refused(refusal) = answer else {
        panic!("an instant completed twice: {answer:?}")
    };
    assert_eq!(
        (refusal.reason, refusal.last_completed_instant),
        (RefusalReason::InstantCompleted, Some(due.instant))
    );
    // An earlier instant than the last completed one is refused too.
    let earlier = cron
        .plan(None, due.instant - chrono::Duration::seconds(4))
        .unwrap();
    let answer = acquire(&db, &cron, Some(&earlier)).await;
    assert!(
        matches!(answer, Acquired::Refused(ref r) if r.reason == RefusalReason::InstantCompleted),
        "{answer:?}"
    );

    let status: (Option<String>, Option<DateTime<Utc>>, Option<DateTime<Utc>>) = sqlx::query_as(
        "SELECT schedule, next_instant, last_completed_instant FROM leader_status WHERE role = 'alpha'",
    )
    .fetch_one(db.admin())
    .await
    .unwrap();
    assert_eq!(
        status,
        (Some(cron.to_string()), due.following, Some(due.instant)),
        "leader_status shows the schedule, the next instant and the last completed one"
    );
}

async fn acquire(
    db: &TestDb,
    cron: &CronSchedule,
    planned: Option<&leader_runtime::schedule::Planned>,
) -> Acquired {
    let wanted = [Wanted::instant(ALPHA, cron, planned)];
    lease::acquire(db.pool(), &wanted, "tester", 1, &FAST)
        .await
        .unwrap()
        .remove(0)
}

fn granted(answer: Acquired) -> lease::Grant {
    match answer {
        Acquired::Granted(grant) => grant,
        Acquired::Refused(refusal) => panic!("refused: {refusal:?}"),
    }
}

/// `missed = each`: an instant is granted only when the one before it in the schedule is the last
/// completed, so a replica whose plan is ahead of the row (it saw completions that a failover to
/// an asynchronous standby lost) is refused instead of skipping the instants between.
#[tokio::test]
async fn with_each_acquire_refuses_an_instant_that_skips_one_not_completed() {
    let db = database().await;
    let cron = CronSchedule::new(EVERY_TWO_SECONDS, "UTC")
        .unwrap()
        .missed(Missed::Each);
    let now = db_now(&db).await;
    // Instant i completed; the replica plans as if i + 1 had completed too, and asks for i + 2.
    let first = cron.plan(None, now - chrono::Duration::seconds(6)).unwrap();
    let grant = granted(acquire(&db, &cron, Some(&first)).await);
    lease::release(
        db.pool(),
        grant.fence,
        ReleaseOutcome::Completed,
        Duration::from_secs(2),
        &FAST,
    )
    .await
    .unwrap();
    let second = cron.plan(Some(first.instant), now).unwrap();
    let ahead = cron.plan(Some(second.instant), now).unwrap();
    assert!(ahead.instant <= now, "the skipping instant is due");
    let answer = acquire(&db, &cron, Some(&ahead)).await;
    let Acquired::Refused(refusal) = answer else {
        panic!("granted past an instant not completed: {answer:?}")
    };
    assert_eq!(
        (refusal.reason, refusal.last_completed_instant),
        (RefusalReason::InstantNotNext, Some(first.instant))
    );
    // The instant after the last completed one is granted.
    let grant = granted(acquire(&db, &cron, Some(&second)).await);
    assert_eq!(grant.tick_instant, Some(second.instant));
}
