//! A job that blocks its thread keeps its lease: the job runs on a task of its own, so RENEW
//! goes on from another worker thread however the job waits.
//!
//! Before, the job and its heartbeat were polled in one `select!` on one task: a job calling
//! blocking code stopped RENEW too, the lease ran out while the work went on, and the role
//! started on another replica with the first still working.

mod common;

use std::sync::{Arc, Mutex, mpsc};
use std::time::Duration;

use chrono::{DateTime, Utc};
use common::*;
use leader_runtime::{JobError, Runtime, TickContext, TimingParts, Timings};
use leader_testkit::TestDb;
use tokio_util::sync::CancellationToken;

/// Roomy timings: the test needs RENEW to keep up on a loaded machine, as it must in production;
/// what it checks is that a blocked job does not stop it.
const ROOMY: Timings = Timings::new_or_panic(TimingParts {
    ttl: Duration::from_millis(4_000),
    heartbeat: Duration::from_millis(400),
    statement_timeout: Duration::from_millis(1_000),
    abandon_after: Duration::from_millis(2_500),
    max_poll: Duration::from_millis(500),
});

/// The lease row of `alpha`, with the database clock.
async fn alpha(db: &TestDb) -> (i64, Option<DateTime<Utc>>, DateTime<Utc>) {
    sqlx::query_as(
        "SELECT holder_token, expires_at, now() FROM leader_leases WHERE role = 'alpha' \
         AND holder_id IS NOT NULL",
    )
    .fetch_optional(db.admin())
    .await
    .unwrap()
    .map_or((0, None, Utc::now()), |row| row)
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn a_job_blocking_its_thread_past_the_ttl_keeps_its_lease_renewed() {
    let db = database().await;
    // The job tells its token, then blocks its worker thread until the test lets it go.
    let (started_tx, started_rx) = mpsc::channel::<i64>();
    let (release_tx, release_rx) = mpsc::channel::<()>();
    let started = Mutex::new(Some(started_tx));
    let release = Arc::new(Mutex::new(release_rx));
    let job = move |tick: TickContext| {
        let started = started.lock().unwrap().take();
        let release = release.clone();
        async move {
            if let Some(started) = started {
                started.send(tick.fence().token()).unwrap();
                release.lock().unwrap().recv().unwrap();
            }
            Ok::<(), JobError>(())
        }
    };
    let runtime = Runtime::builder(db.pool().clone())
        .role(ALPHA, Duration::from_secs(3_600), job)
        .timings(ROOMY)
        .build()
        .unwrap();
    let shutdown = CancellationToken::new();
    let run = tokio::spawn(runtime.run_until_cancelled(shutdown.clone()));

    let token = tokio::task::spawn_blocking(move || started_rx.recv().unwrap())
        .await
        .unwrap();
    let (_, first_expiry, _) = alpha(&db).await;
    let first_expiry = first_expiry.expect("the job runs under a held lease");
    // Watch the row on the database clock until the first grant's expiry has passed: the lease
    // is then alive only because RENEW went on while the job blocked. A lease that runs out
    // first fails the test, whatever the machine's speed.
    loop {
        let (holder_token, expires_at, now) = alpha(&db).await;
        assert_eq!(
            holder_token, token,
            "the lease was lost while the job blocked its thread"
        );
        let expires_at = expires_at.expect("held");
        assert!(
            expires_at > now,
            "the lease ran out at {expires_at} while the job blocked its thread"
        );
        if now > first_expiry {
            break;
        }
        tokio::time::sleep(Duration::from_millis(100)).await;
    }

    release_tx.send(()).unwrap();
    // The tick completes under the same token: RELEASE stamps it.
    while lease(&db, ALPHA).await.last_tick_ended_at.is_none() {
        tokio::time::sleep(Duration::from_millis(20)).await;
    }
    assert_eq!(lease(&db, ALPHA).await.holder_token, token);
    shutdown.cancel();
    run.await.unwrap().unwrap();
}
