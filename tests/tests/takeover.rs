//! The takeover of a dead holder with the runtime (`take_over_when_dead`): a replica that dies
//! leaves its role to a live one before its lease expires, and a holder whose anchor the server
//! ends stops its tick and leads again only through a new ACQUIRE.
//!
//! The leases last a minute, so nothing here moves by expiry:
//! each assertion reads the database clock (a grant before the old lease's expiry) rather than
//! timing the takeover; the figures are the drills' (`leader-drills`).

mod common;

use std::str::FromStr;
use std::sync::Arc;
use std::sync::atomic::{AtomicBool, Ordering};
use std::time::Duration;

use chrono::{DateTime, Utc};
use common::*;
use leader_runtime::{CancelCause, JobError, Runtime, TickContext, TimingParts, Timings};
use leader_testkit::TestDb;
use sqlx::postgres::PgConnectOptions;
use sqlx::{Connection, Row};
use tokio::sync::mpsc;
use tokio::task::JoinHandle;
use tokio_util::sync::CancellationToken;

const MINUTE_LEASE: Timings = Timings::new_or_panic(TimingParts {
    ttl: Duration::from_secs(60),
    heartbeat: Duration::from_secs(3),
    statement_timeout: Duration::from_secs(2),
    abandon_after: Duration::from_secs(6),
    max_poll: Duration::from_secs(120),
});

/// How long a liveness wait may take before the test gives up: ample, not a timing target.
const PATIENCE: Duration = Duration::from_secs(120);

type Started = (
    JoinHandle<Result<(), leader_runtime::RunError>>,
    CancellationToken,
);

/// A direct connection to the test database, bypassing any pooler.
fn direct(db: &TestDb) -> PgConnectOptions {
    let url = std::env::var("DATABASE_URL").expect("DATABASE_URL (run under with-postgres)");
    PgConnectOptions::from_str(&url)
        .expect("a valid DATABASE_URL")
        .database(db.name())
}

/// A runtime leading ALPHA as `holder`, with anchors. Its first tick runs until it is cancelled
/// and then sends the cause on `causes`; later ticks return at once, and the interval is short, so
/// the role is granted again and again after that.
fn runtime(
    db: &TestDb,
    holder: &'static str,
    causes: mpsc::UnboundedSender<CancelCause>,
) -> Started {
    let first = Arc::new(AtomicBool::new(true));
    let runtime = Runtime::builder(db.pool().clone())
        .timings(MINUTE_LEASE)
        .holder_id(holder)
        .wake_on_release(direct(db))
        .take_over_when_dead()
        .role(
            ALPHA,
            Duration::from_millis(200),
            move |tick: TickContext| {
                let causes = causes.clone();
                let first = first.swap(false, Ordering::SeqCst);
                async move {
                    if first {
                        let cause = tick.cancelled().await;
                        let _ = causes.send(cause);
                    }
                    Ok::<(), JobError>(())
                }
            },
        )
        .build()
        .expect("the runtime builds");
    let stop = CancellationToken::new();
    let handle = tokio::spawn(runtime.run_until_cancelled(stop.clone()));
    (handle, stop)
}

/// The lease row of ALPHA: its holder, anchor pid, token and expiry.
async fn lease_of_alpha(db: &TestDb) -> (Option<String>, Option<i32>, i64, Option<DateTime<Utc>>) {
    let row = sqlx::query(
        "SELECT holder_id, holder_anchor_pid, holder_token, expires_at
           FROM leader_leases WHERE role = 'alpha'",
    )
    .fetch_one(db.admin())
    .await
    .unwrap();
    (
        row.get("holder_id"),
        row.get("holder_anchor_pid"),
        row.get("holder_token"),
        row.get("expires_at"),
    )
}

/// Waits until the ring is formed: `replicas` anchors, each watched by exactly one watcher (the
/// first replica watched itself until the second joined and cancelled its wait).
async fn ring_formed(db: &TestDb, replicas: i64) {
    let formed = db
        .eventually(
            Box::leak(
                format!(
                    "SELECT (count(*) FILTER (WHERE granted) = {replicas}
                             AND count(*) FILTER (WHERE NOT granted) = {replicas}
                             AND count(DISTINCT objid) FILTER (WHERE NOT granted) = {replicas}
                            )::int::int8
                       FROM pg_locks
                      WHERE locktype = 'advisory' AND objsubid = 2
                        AND classid = {}::oid",
                    leader_runtime::protocol::lease::ANCHOR_LOCK_CLASS
                )
                .into_boxed_str(),
            ),
            PATIENCE,
        )
        .await;
    assert!(formed, "{replicas} anchors, each watched once");
}

#[tokio::test]
async fn a_dead_replicas_role_moves_before_its_lease_expires() {
    let db = database().await;
    let (a_causes, _a_heard) = mpsc::unbounded_channel();
    let (a, _a_stop) = runtime(&db, "a", a_causes);
    assert!(
        db.eventually(
            "SELECT count(*) FROM leader_leases
              WHERE role = 'alpha' AND holder_id = 'a' AND holder_anchor_pid IS NOT NULL",
            PATIENCE,
        )
        .await,
        "a leads, anchored: {:?}",
        lease_of_alpha(&db).await
    );
    let (b_causes, _b_heard) = mpsc::unbounded_channel();
    let (b, b_stop) = runtime(&db, "b", b_causes);
    ring_formed(&db, 2).await;
    let (_, _, a_token, a_expires) = lease_of_alpha(&db).await;

    // a dies: its tasks end and its connections close, as when its process is killed.
    a.abort();
    assert!(
        db.eventually(
            "SELECT count(*) FROM leader_leases WHERE role = 'alpha' AND holder_id = 'b'",
            PATIENCE,
        )
        .await,
        "b takes the role over"
    );
    let granted: DateTime<Utc> =
        sqlx::query_scalar("SELECT acquired_at FROM leader_leases WHERE role = 'alpha'")
            .fetch_one(db.admin())
            .await
            .unwrap();
    assert!(
        granted < a_expires.unwrap(),
        "b was granted at {granted}, before a's lease expired at {a_expires:?}"
    );
    assert_eq!(
        claim_as(db.pool(), ALPHA, a_token).await,
        0,
        "a's fence is false"
    );
    b_stop.cancel();
    b.await.unwrap().unwrap();
}

#[tokio::test]
async fn a_holder_whose_anchor_the_server_ends_stops_its_tick_and_anchors_again() {
    let db = database().await;
    let (causes, mut heard) = mpsc::unbounded_channel();
    let (a, stop) = runtime(&db, "a", causes);
    assert!(
        db.eventually(
            "SELECT count(*) FROM leader_leases
              WHERE role = 'alpha' AND holder_id = 'a' AND holder_anchor_pid IS NOT NULL",
            PATIENCE,
        )
        .await
    );
    let (_, anchor_pid, _, _) = lease_of_alpha(&db).await;
    let mut blocker = sqlx::PgConnection::connect_with(&direct(&db))
        .await
        .unwrap();
    sqlx::query("SELECT pg_terminate_backend($1, 60000)")
        .bind(anchor_pid)
        .execute(db.admin())
        .await
        .unwrap();
    // Keep a from anchoring again (it waits a second before it reconnects) until its tick has
    // stopped: the tick must stop because its anchor ended, not because another replaced it.
    let _: bool = sqlx::query_scalar("SELECT pg_try_advisory_lock($1, hashtext('a'))")
        .bind(leader_runtime::protocol::lease::ANCHOR_LOCK_CLASS)
        .fetch_one(&mut blocker)
        .await
        .unwrap();

    let cause = tokio::time::timeout(PATIENCE, heard.recv())
        .await
        .expect("the tick is cancelled")
        .expect("the job reports its cause");
    assert_eq!(cause, CancelCause::AnchorLost);
    blocker.close().await.unwrap();
    let again = format!(
        "SELECT count(*) FROM leader_leases
          WHERE role = 'alpha' AND holder_id = 'a' AND holder_anchor_pid <> {}",
        anchor_pid.unwrap()
    );
    assert!(
        db.eventually(Box::leak(again.into_boxed_str()), PATIENCE)
            .await,
        "a leads again under a new anchor"
    );
    stop.cancel();
    a.await.unwrap().unwrap();
}

/// A shutdown ends the anchor only once the ticks granted under it are released: until then no
/// replica may take their leases over.
#[tokio::test]
async fn a_shutdown_keeps_the_anchor_until_its_ticks_are_released() {
    let db = database().await;
    let (finish, finished) = tokio::sync::oneshot::channel::<()>();
    let finished = Arc::new(tokio::sync::Mutex::new(Some(finished)));
    let (causes, mut heard) = mpsc::unbounded_channel();
    let runtime = Runtime::builder(db.pool().clone())
        .timings(MINUTE_LEASE)
        .holder_id("a")
        .shutdown_grace(Duration::from_secs(3600))
        .wake_on_release(direct(&db))
        .take_over_when_dead()
        .role(
            ALPHA,
            Duration::from_secs(3600),
            move |tick: TickContext| {
                let (causes, finished) = (causes.clone(), finished.clone());
                async move {
                    let _ = causes.send(tick.cancelled().await);
                    if let Some(finished) = finished.lock().await.take() {
                        let _ = finished.await;
                    }
                    Ok::<(), JobError>(())
                }
            },
        )
        .build()
        .unwrap();
    let stop = CancellationToken::new();
    let a = tokio::spawn(runtime.run_until_cancelled(stop.clone()));
    assert!(
        db.eventually(
            "SELECT count(*) FROM leader_leases
              WHERE role = 'alpha' AND holder_id = 'a' AND holder_anchor_pid IS NOT NULL",
            PATIENCE,
        )
        .await
    );
    let (_, anchor_pid, _, _) = lease_of_alpha(&db).await;

    stop.cancel();
    let cause = tokio::time::timeout(PATIENCE, heard.recv()).await.unwrap();
    assert_eq!(cause, Some(CancelCause::Shutdown));
    let gone = format!(
        "SELECT count(*) FROM (SELECT 1 WHERE NOT EXISTS
             (SELECT 1 FROM pg_stat_activity WHERE pid = {})) AS gone",
        anchor_pid.unwrap()
    );
    let gone: &'static str = Box::leak(gone.into_boxed_str());
    assert!(
        !db.eventually(gone, Duration::from_secs(5)).await,
        "the anchor lives while the tick winds down"
    );
    finish.send(()).unwrap();
    a.await.unwrap().unwrap();
    assert!(
        db.eventually(gone, PATIENCE).await,
        "and ends with the runtime"
    );
}
