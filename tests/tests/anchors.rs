//! Anchors on PostgreSQL (issue 33): ACQUIRE takes over a lease before its expiry exactly when the
//! server no longer has the anchor session its holder named, as the application's least-privilege
//! role, and never from a caller whose own anchor has ended.
//!
//! The leases here last an hour: every takeover below happens long before any expiry, so no test
//! depends on how fast the machine is. A terminated anchor is waited for with
//! `pg_terminate_backend(pid, timeout)`, which returns once the backend has exited.

mod common;

use std::str::FromStr;
use std::time::Duration;

use chrono::{DateTime, Utc};

use common::{ALPHA, anchored, app_database as database, claim, direct_as_app, terminate};
use leader_runtime::protocol::lease::{
    self, Acquired, Anchor, AnchorError, AnchorWait, RefusalReason, Wanted,
};
use leader_runtime::{Fence, Shard, Timings};
use leader_testkit::TestDb;
use sqlx::postgres::PgConnectOptions;
use sqlx::{Connection, PgConnection, PgPool};

const HOUR: Duration = Duration::from_secs(3600);

fn hour_lease() -> Timings {
    Timings::scaled_to_ttl(HOUR).unwrap()
}

async fn acquire(pool: &PgPool, holder: &str, anchor: Option<&Anchor>) -> Acquired {
    let wanted = [Wanted::every(ALPHA, HOUR)];
    let mut answers = lease::acquire_anchored(pool, &wanted, holder, anchor, 1, &hour_lease())
        .await
        .expect("ACQUIRE runs");
    answers.remove(0)
}

/// ALPHA's `acquired_at` and `expires_at`.
async fn expiry_of_alpha(db: &TestDb) -> (DateTime<Utc>, DateTime<Utc>) {
    sqlx::query_as("SELECT acquired_at, expires_at FROM leader_leases WHERE role = 'alpha'")
        .fetch_one(db.admin())
        .await
        .unwrap()
}

fn granted(acquired: Acquired) -> Fence {
    match acquired {
        Acquired::Granted(grant) => grant.fence,
        Acquired::Refused(refusal) => panic!("expected a grant, got {refusal:?}"),
    }
}

fn refused(acquired: Acquired) -> RefusalReason {
    match acquired {
        Acquired::Refused(refusal) => refusal.reason,
        Acquired::Granted(grant) => panic!("expected a refusal, got {grant:?}"),
    }
}

/// The takeover of a dead holder's lease by `holder`: its first ACQUIRE ends the lease early,
/// and its next is granted it.
async fn take_over(pool: &PgPool, holder: &str, anchor: Option<&Anchor>) -> Fence {
    assert_eq!(
        refused(acquire(pool, holder, anchor).await),
        RefusalReason::HolderAnchorEnded
    );
    granted(acquire(pool, holder, anchor).await)
}

#[tokio::test]
async fn a_lease_whose_holders_anchor_ended_is_taken_over_at_once_with_a_larger_token() {
    let (db, app) = database().await;
    let (_a_session, a) = anchored(&db, "a").await;
    let (_b_session, b) = anchored(&db, "b").await;
    let old = granted(acquire(&app, "a", Some(&a)).await);
    assert_eq!(
        db.count("SELECT count(*) FROM leader_leases WHERE holder_anchor_pid IS NOT NULL")
            .await,
        1,
        "the grant records its holder's anchor"
    );

    terminate(&db, &a).await;
    let (granted_before, old_expiry) = expiry_of_alpha(&db).await;
    let new = take_over(&app, "b", Some(&b)).await;
    assert!(new.token() > old.token(), "{new:?} after {old:?}");
    let (granted_at, _) = expiry_of_alpha(&db).await;
    assert!(
        granted_at > granted_before && granted_at < old_expiry,
        "b was granted at {granted_at}, before a's lease would have expired at {old_expiry}"
    );
    assert_eq!(claim(&app, old).await, 0, "the old holder's fence is false");
    assert_eq!(claim(&app, new).await, 10);
}

/// The ACQUIRE that ends a dead holder's lease early tells every listening replica, as the ended
/// anchor's watcher does: it may not be the one to take the lease (a sharded role's caller may
/// hold its share already), and a concurrent ACQUIRE skipped the rows it locked.
///
/// Without a clock: notifications arrive in commit order, so the test's own marker, sent after
/// the ACQUIRE, comes first only if the ACQUIRE sent nothing.
#[tokio::test]
async fn an_acquire_that_ends_a_lease_early_wakes_the_other_replicas() {
    let (db, app) = database().await;
    let (_a_session, a) = anchored(&db, "a").await;
    let (_b_session, b) = anchored(&db, "b").await;
    granted(acquire(&app, "a", Some(&a)).await);
    let mut listener = listen_for_ended_anchors(&db).await;
    terminate(&db, &a).await;
    assert_eq!(
        refused(acquire(&app, "b", Some(&b)).await),
        RefusalReason::HolderAnchorEnded
    );
    tell_ended_anchors(&db, "marker").await;
    let a_key: i32 = sqlx::query_scalar("SELECT hashtext('a')")
        .fetch_one(db.admin())
        .await
        .unwrap();
    let first = listener.recv().await.unwrap();
    assert_eq!(
        first.payload(),
        a_key.to_string(),
        "the early end told of a's anchor"
    );
}

#[tokio::test]
async fn no_lease_is_taken_over_while_its_holders_anchor_lives() {
    let (db, app) = database().await;
    let (_a_session, a) = anchored(&db, "a").await;
    let (_b_session, b) = anchored(&db, "b").await;
    let old = granted(acquire(&app, "a", Some(&a)).await);

    assert_eq!(
        refused(acquire(&app, "b", Some(&b)).await),
        RefusalReason::Held
    );
    assert_eq!(refused(acquire(&app, "b", None).await), RefusalReason::Held);
    assert_eq!(claim(&app, old).await, 10, "the holder still leads");
}

#[tokio::test]
async fn a_lease_granted_without_an_anchor_frees_only_at_its_expiry() {
    let (db, app) = database().await;
    let (_b_session, b) = anchored(&db, "b").await;
    granted(acquire(&app, "a", None).await);
    assert_eq!(
        refused(acquire(&app, "b", Some(&b)).await),
        RefusalReason::Held
    );
}

#[tokio::test]
async fn a_live_pid_with_another_backend_start_is_not_the_anchor() {
    let (db, app) = database().await;
    let (_a_session, a) = anchored(&db, "a").await;
    let (_b_session, b) = anchored(&db, "b").await;
    let old = granted(acquire(&app, "a", Some(&a)).await);
    // The row now names a's pid with an earlier start: the identity of an ended session whose
    // pid the server gave to a's.
    db.exec(
        "UPDATE leader_leases
            SET holder_anchor_start = holder_anchor_start - interval '1 second'
          WHERE role = 'alpha'",
    )
    .await;

    let new = take_over(&app, "b", Some(&b)).await;
    assert!(new.token() > old.token());
}

#[tokio::test]
async fn a_caller_whose_own_anchor_ended_is_granted_nothing() {
    let (db, app) = database().await;
    let (_a_session, a) = anchored(&db, "a").await;
    let (_b_session, b) = anchored(&db, "b").await;
    terminate(&db, &a).await;
    assert_eq!(
        refused(acquire(&app, "a", Some(&a)).await),
        RefusalReason::AnchorEnded
    );
    let reused_pid = Anchor::forge(b.pid(), a.backend_start());
    assert_eq!(
        refused(acquire(&app, "a", Some(&reused_pid)).await),
        RefusalReason::AnchorEnded
    );
    assert_eq!(
        db.count("SELECT count(*) FROM leader_leases WHERE holder_id IS NOT NULL")
            .await,
        0
    );
    granted(acquire(&app, "b", Some(&b)).await);
}

/// PostgreSQL reads `pg_stat_activity` once per transaction. An ACQUIRE in a transaction that read
/// it before the holder's anchor opened must not take that holder's lease for a dead one's.
#[tokio::test]
async fn a_view_of_the_sessions_older_than_the_grant_takes_nothing_over() {
    let (db, app) = database().await;
    let (_b_session, b) = anchored(&db, "b").await;
    let mut tx = app.begin().await.unwrap();
    let _: i64 = sqlx::query_scalar("SELECT count(*) FROM pg_stat_activity")
        .fetch_one(&mut *tx)
        .await
        .unwrap();

    let (_a_session, a) = anchored(&db, "a").await;
    let old = granted(acquire(&app, "a", Some(&a)).await);
    let wanted = [Wanted::every(ALPHA, HOUR)];
    let answer = lease::acquire_anchored(&mut *tx, &wanted, "b", Some(&b), 1, &hour_lease())
        .await
        .expect("ACQUIRE runs")
        .remove(0);
    tx.commit().await.unwrap();
    assert_eq!(refused(answer), RefusalReason::Held);
    assert_eq!(claim(&app, old).await, 10, "a still leads");
}

#[tokio::test]
async fn a_release_forgets_the_anchor() {
    let (db, app) = database().await;
    let (_a_session, a) = anchored(&db, "a").await;
    let fence = granted(acquire(&app, "a", Some(&a)).await);
    let released = lease::release(
        &app,
        fence,
        leader_runtime::protocol::ReleaseOutcome::Completed,
        HOUR,
        &hour_lease(),
    )
    .await
    .unwrap();
    assert!(released.changed);
    assert_eq!(
        db.count(
            "SELECT count(*) FROM leader_leases
              WHERE holder_anchor_pid IS NOT NULL OR holder_anchor_start IS NOT NULL"
        )
        .await,
        0
    );
}

#[tokio::test]
async fn a_second_process_with_the_same_holder_id_cannot_anchor() {
    let (db, _app) = database().await;
    let (_first, _) = anchored(&db, "a").await;
    let direct = direct_as_app(&db);
    let mut second = direct.connect(HOUR).await.unwrap();
    let refused = Anchor::open(&mut second, "a", &direct, &hour_lease()).await;
    assert!(
        matches!(&refused, Err(AnchorError::HolderIdInUse { holder_id }) if holder_id == "a"),
        "{refused:?}"
    );
}

/// A dead replica counts no more toward the spread of a sharded role: its shards all move to the
/// survivor in one ACQUIRE, not one share at a time as its presence runs out.
#[tokio::test]
async fn a_dead_replicas_shards_all_move_in_one_acquire() {
    let (db, app) = database().await;
    db.exec("SELECT leader_reshard('alpha', 4)").await;
    let shards: Vec<Wanted> = (0..4)
        .map(|index| Wanted::every(ALPHA, HOUR).in_shard(Shard::new(index, 4).unwrap()))
        .collect();
    let (_a_session, a) = anchored(&db, "a").await;
    let (_b_session, b) = anchored(&db, "b").await;
    let a_took = lease::acquire_anchored(&app, &shards, "a", Some(&a), 4, &hour_lease())
        .await
        .unwrap();
    assert!(a_took.iter().all(|x| matches!(x, Acquired::Granted(_))));
    let b_took = lease::acquire_anchored(&app, &shards, "b", Some(&b), 4, &hour_lease())
        .await
        .unwrap();
    assert!(b_took.iter().all(|x| matches!(x, Acquired::Refused(_))));

    terminate(&db, &a).await;
    let ended = lease::acquire_anchored(&app, &shards, "b", Some(&b), 4, &hour_lease())
        .await
        .unwrap();
    assert!(
        ended
            .into_iter()
            .all(|x| refused(x) == RefusalReason::HolderAnchorEnded),
        "the first ACQUIRE ends each of a's leases"
    );
    let b_took = lease::acquire_anchored(&app, &shards, "b", Some(&b), 4, &hour_lease())
        .await
        .unwrap();
    assert!(
        b_took.iter().all(|x| matches!(x, Acquired::Granted(_))),
        "{b_took:?}"
    );
}

/// A watcher's session, as the runtime opens one: to PostgreSQL itself, named for the ring.
async fn watcher(db: &TestDb) -> PgConnection {
    let options = PgConnectOptions::from_str(&db.url())
        .unwrap()
        .username("leader_app")
        .application_name(lease::WATCHER_APPLICATION_NAME);
    PgConnection::connect_with(&options).await.unwrap()
}

/// A replica that joins between another watcher's reading of the ring and the start of its wait
/// finds nobody waiting to turn: the wait reads the ring again in its own statement and returns
/// at once, rather than watching a gap (here, its own anchor, while it is no longer alone).
///
/// Without a clock: if the wait blocks on a lock instead (watching the gap), the test ends a's
/// anchor, so the wait returns `Ended` and the assertion fails, where it would otherwise hang.
#[tokio::test]
async fn a_wait_on_a_ring_read_before_a_replica_joined_reads_the_ring_again() {
    let (db, _app) = database().await;
    let (_a, a) = anchored(&db, "a").await;
    let mut watcher_a = watcher(&db).await;
    let watcher_pid = backend_pid(&mut watcher_a).await;
    let alone = lease::next_in_ring(&mut watcher_a, "a", &hour_lease())
        .await
        .unwrap();
    assert!(alone.is_own());
    let (_b, _) = anchored(&db, "b").await;
    let mut watcher_b = watcher(&db).await;
    let after_b = lease::next_in_ring(&mut watcher_b, "b", &hour_lease())
        .await
        .unwrap();
    assert!(!after_b.is_own());
    let waiting = tokio::spawn(async move {
        let wait = lease::await_anchor_end(&mut watcher_a, "a", alone, HOUR).await;
        (wait, watcher_a)
    });
    while !waiting.is_finished() {
        if waits_on_a_lock(&db, watcher_pid).await {
            terminate(&db, &a).await;
            break;
        }
        tokio::time::sleep(Duration::from_millis(10)).await;
    }
    let (wait, mut watcher_a) = waiting.await.unwrap();
    assert_eq!(
        wait.unwrap(),
        AnchorWait::RingChanged,
        "the wait read the ring again instead of watching a's own anchor"
    );
    let after_a = lease::next_in_ring(&mut watcher_a, "a", &hour_lease())
        .await
        .unwrap();
    assert!(!after_a.is_own(), "a now watches b");
}

/// A backend that exits frees its anchor lock before it leaves `pg_stat_activity`, where ACQUIRE
/// looks for it: a watcher granted the lock tells the others only once the session it waited on
/// has left, or its ACQUIRE would still count the anchor as alive. Here the anchor's session frees
/// its lock itself and lives on, as an exiting backend does for a moment, until the test ends it.
///
/// Without a clock: the test sends its own marker once the watcher has the lock and looks at
/// `pg_stat_activity`, then ends the session; notifications arrive in commit order, so the marker
/// comes first unless the watcher told the others while the session was still listed.
#[tokio::test]
async fn a_watcher_tells_of_an_end_only_once_the_session_has_left_pg_stat_activity() {
    let (db, _app) = database().await;
    let (mut a, a_anchor) = anchored(&db, "a").await;
    let (_b, _) = anchored(&db, "b").await;
    let mut watcher_b = watcher(&db).await;
    let watcher_pid = backend_pid(&mut watcher_b).await;
    let next = lease::next_in_ring(&mut watcher_b, "b", &hour_lease())
        .await
        .unwrap();
    let mut listener = listen_for_ended_anchors(&db).await;
    let waiting =
        tokio::spawn(async move { lease::await_anchor_end(&mut watcher_b, "b", next, HOUR).await });
    while !waits_on_a_lock(&db, watcher_pid).await {
        tokio::time::sleep(Duration::from_millis(10)).await;
    }
    sqlx::query("SELECT pg_advisory_unlock_all()")
        .execute(&mut a)
        .await
        .unwrap();
    // The watcher is granted the lock at once; then it either told the others already or looks
    // at pg_stat_activity, where a's session is listed.
    loop {
        let looking: bool = sqlx::query_scalar(
            "SELECT EXISTS (SELECT 1 FROM pg_stat_activity
                             WHERE pid = $1 AND query LIKE '%AS listed%')",
        )
        .bind(watcher_pid)
        .fetch_one(db.admin())
        .await
        .unwrap();
        if looking || waiting.is_finished() {
            break;
        }
        tokio::time::sleep(Duration::from_millis(10)).await;
    }
    tell_ended_anchors(&db, "marker").await;
    terminate(&db, &a_anchor).await;
    assert_eq!(waiting.await.unwrap().unwrap(), AnchorWait::Ended);
    tell_ended_anchors(&db, "after").await;
    let first = listener.recv().await.unwrap();
    assert_eq!(
        first.payload(),
        "marker",
        "the watcher told the others while the ended session was still listed"
    );
    let second = listener.recv().await.unwrap();
    assert_ne!(
        second.payload(),
        "after",
        "then it told them, before it returned"
    );
}

/// A watcher on its way to a wait (its statement running, no lock requested yet) is cancelled by
/// a replica that joins, whatever it was about to watch: it then reads the ring again.
///
/// The statement on its way is a `COPY … FROM STDIN` that the test feeds, so that no clock decides
/// the outcome: `pg_cancel_backend` has signalled the backend by the time the joining replica's
/// statement returns, and COPY checks for a cancel at each row; so once the test sends the row and
/// ends the copy, it fails as cancelled if the joining replica cancelled it, and succeeds if it did
/// not.
#[tokio::test]
async fn a_joining_replica_turns_a_watcher_on_its_way_to_a_wait() {
    let (db, _app) = database().await;
    let (_a, _) = anchored(&db, "a").await;
    let mut on_its_way = watcher(&db).await;
    sqlx::query("CREATE TEMPORARY TABLE way (x integer)")
        .execute(&mut on_its_way)
        .await
        .unwrap();
    let mut copy = on_its_way.copy_in_raw("COPY way FROM STDIN").await.unwrap();
    let (_b, _) = anchored(&db, "b").await;
    let mut watcher_b = watcher(&db).await;
    lease::next_in_ring(&mut watcher_b, "b", &hour_lease())
        .await
        .unwrap();
    let ended = match copy.send(b"1\n".as_slice()).await {
        Ok(_) => copy.finish().await.map(|_| ()),
        Err(e) => Err(e),
    };
    let code = ended
        .expect_err("the joining replica cancelled the statement")
        .as_database_error()
        .and_then(|e| e.code())
        .map(|c| c.into_owned());
    assert_eq!(code.as_deref(), Some("57014"));
}

async fn backend_pid(session: &mut PgConnection) -> i32 {
    sqlx::query_scalar("SELECT pg_backend_pid()")
        .fetch_one(session)
        .await
        .unwrap()
}

/// Whether the backend `pid` is waiting to be granted a heavyweight lock.
async fn waits_on_a_lock(db: &TestDb, pid: i32) -> bool {
    sqlx::query_scalar::<_, bool>(
        "SELECT EXISTS (SELECT 1 FROM pg_locks WHERE pid = $1 AND NOT granted)",
    )
    .bind(pid)
    .fetch_one(db.admin())
    .await
    .unwrap()
}

/// A session to PostgreSQL itself that listens on the channel of ended anchors.
async fn listen_for_ended_anchors(db: &TestDb) -> sqlx::postgres::PgListener {
    let mut listener = sqlx::postgres::PgListener::connect(&db.url())
        .await
        .unwrap();
    listener.listen(lease::ANCHOR_ENDED_CHANNEL).await.unwrap();
    listener
}

/// Sends `payload` on the channel of ended anchors, as the test's own marker.
async fn tell_ended_anchors(db: &TestDb, payload: &str) {
    sqlx::query("SELECT pg_notify($1, $2)")
        .bind(lease::ANCHOR_ENDED_CHANNEL)
        .bind(payload)
        .execute(db.admin())
        .await
        .unwrap();
}
