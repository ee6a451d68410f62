//! The optional wake channel: a follower hears a release on its own direct connection and polls at
//! once; without that connection it still leads by polling.

mod common;

use std::str::FromStr;
use std::sync::Arc;
use std::sync::atomic::{AtomicUsize, Ordering};
use std::time::Duration;

use common::*;
use leader_runtime::{JobError, Runtime, TickContext, TimingParts, Timings};
use leader_testkit::TestDb;
use sqlx::postgres::PgConnectOptions;
use tokio::task::JoinHandle;
use tokio_util::sync::CancellationToken;

/// A lease of a minute and polls two minutes apart: a follower that learns of a release only by
/// polling would not poll again for about a minute after its first refusal.
const SLOW_POLL: Timings = Timings::new_or_panic(TimingParts {
    ttl: Duration::from_secs(60),
    heartbeat: Duration::from_secs(3),
    statement_timeout: Duration::from_secs(2),
    abandon_after: Duration::from_secs(6),
    max_poll: Duration::from_secs(120),
});

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

async fn ticks_db() -> TestDb {
    let db = database().await;
    db.exec("CREATE TABLE ticks (holder text NOT NULL, started_at timestamptz NOT NULL)")
        .await;
    db
}

fn runtime(
    db: &TestDb,
    holder: &'static str,
    timings: Timings,
    wake: Option<PgConnectOptions>,
) -> Started {
    let mut builder = Runtime::builder(db.pool().clone())
        .timings(timings)
        .holder_id(holder)
        .role(
            ALPHA,
            Duration::from_secs(3600),
            move |tick: TickContext| async move {
                // In a transaction, so its Parse and Bind reach one server connection behind
                // PgBouncer.
                let mut tx = tick.pool().begin().await?;
                sqlx::query("INSERT INTO ticks VALUES ($1, clock_timestamp())")
                    .persistent(false)
                    .bind(holder)
                    .execute(&mut *tx)
                    .await?;
                tx.commit().await?;
                tick.cancelled().await;
                Ok::<(), JobError>(())
            },
        );
    if let Some(options) = wake {
        builder = builder.wake_on_release(options);
    }
    let stop = CancellationToken::new();
    let runtime = builder.build().expect("a valid runtime");
    (
        tokio::spawn(runtime.run_until_cancelled(stop.clone())),
        stop,
    )
}

#[tokio::test(flavor = "multi_thread", worker_threads = 4)]
async fn with_wake_a_follower_takes_a_released_role_without_waiting_for_its_poll() {
    let logged = Logged::capture(tracing::Level::DEBUG);
    let db = ticks_db().await;
    let (a, stop_a) = runtime(&db, "a", SLOW_POLL, Some(direct(&db)));
    assert!(
        db.eventually(
            "SELECT count(*) FROM ticks WHERE holder = 'a'",
            Duration::from_secs(30)
        )
        .await
    );
    let (b, stop_b) = runtime(&db, "b", SLOW_POLL, Some(direct(&db)));
    // b has polled and been refused: its next poll is at a's expiry, about a minute away.
    assert!(
        db.eventually(
            "SELECT (count(*) >= 2)::int::bigint FROM pg_stat_activity
              WHERE query LIKE '%LISTEN \"leader_released\"%' AND backend_type = 'client backend'
                AND pid <> pg_backend_pid()",
            Duration::from_secs(30)
        )
        .await,
        "both runtimes listen"
    );
    // b polls at start and again once its listener is connected, and a, which leads, does not
    // poll: two refusals are b's, and after them b's next poll is at a's expiry.
    let refusals = logged
        .wait_for("not leading", 2, Duration::from_secs(30))
        .await;
    assert!(refusals >= 2, "b was refused {refusals} times, not twice");
    stop_a.cancel();
    a.await.unwrap().unwrap();
    // Well inside the minute before b's next scheduled poll: only the wake can explain a grant.
    assert!(
        db.eventually(
            "SELECT count(*) FROM ticks WHERE holder = 'b'",
            Duration::from_secs(30)
        )
        .await,
        "b took the role on the release's notification"
    );
    stop_b.cancel();
    b.await.unwrap().unwrap();
}

/// A server that never answers: it accepts every connection and holds it without a word, so each
/// attempt of a wake listener pointed at it fails at its connect timeout, and it counts them.
struct Unanswering {
    port: u16,
    attempts: Arc<AtomicUsize>,
    task: JoinHandle<()>,
}

impl Unanswering {
    async fn start() -> Unanswering {
        let listener = tokio::net::TcpListener::bind("127.0.0.1:0").await.unwrap();
        let port = listener.local_addr().unwrap().port();
        let attempts = Arc::new(AtomicUsize::new(0));
        let counted = attempts.clone();
        let task = tokio::spawn(async move {
            let mut held = Vec::new();
            while let Ok((socket, _)) = listener.accept().await {
                held.push(socket);
                counted.fetch_add(1, Ordering::SeqCst);
            }
        });
        Unanswering {
            port,
            attempts,
            task,
        }
    }

    /// Waits until `times` connection attempts have reached it; two minutes without is a failure.
    async fn wait_for_attempts(&self, times: usize) {
        let deadline = tokio::time::Instant::now() + Duration::from_secs(120);
        while self.attempts.load(Ordering::SeqCst) < times {
            assert!(
                tokio::time::Instant::now() < deadline,
                "no {times} wake connection attempts within two minutes"
            );
            tokio::time::sleep(Duration::from_millis(20)).await;
        }
    }
}

impl Drop for Unanswering {
    fn drop(&mut self) {
        self.task.abort();
    }
}

#[tokio::test(flavor = "multi_thread", worker_threads = 4)]
async fn without_its_wake_connection_a_runtime_still_leads_by_polling_and_says_so_once() {
    let logged = Logged::capture_warnings();
    let db = ticks_db().await;
    let (silent_a, silent_b) = (Unanswering::start().await, Unanswering::start().await);
    let (a, stop_a) = runtime(&db, "a", FAST, Some(direct(&db).port(silent_a.port)));
    let (b, stop_b) = runtime(&db, "b", FAST, Some(direct(&db).port(silent_b.port)));
    const LOST: &str = "wake connection lost or refused";
    assert_eq!(
        logged.wait_for(LOST, 2, Duration::from_secs(60)).await,
        2,
        "each runtime says its wake connection failed"
    );
    assert!(
        db.eventually("SELECT count(*) FROM ticks", Duration::from_secs(30))
            .await
    );
    let first: String = sqlx::query_scalar("SELECT holder FROM ticks")
        .fetch_one(db.admin())
        .await
        .unwrap();
    let (leader, follower) = if first == "a" {
        ((a, stop_a), (b, stop_b))
    } else {
        ((b, stop_b), (a, stop_a))
    };
    // The first attempt is the start-up check's; each runtime's third wake attempt (the fourth
    // in all) starts only after its second failed and was logged, or not.
    silent_a.wait_for_attempts(4).await;
    silent_b.wait_for_attempts(4).await;
    leader.1.cancel();
    leader.0.await.unwrap().unwrap();
    assert!(
        db.eventually(
            "SELECT (count(DISTINCT holder) = 2)::int::bigint FROM ticks",
            Duration::from_secs(30)
        )
        .await,
        "the follower took over by polling"
    );
    follower.1.cancel();
    follower.0.await.unwrap().unwrap();
    let logs = logged.lines().join("");
    assert_eq!(
        logged.count(LOST),
        2,
        "one line per runtime, however many reconnects:\n{logs}"
    );
}

/// Beats five minutes apart: a tick that hears of a pause only at its next RENEW would run on
/// for minutes after it.
const SLOW_BEAT: Timings = Timings::new_or_panic(TimingParts {
    ttl: Duration::from_secs(900),
    heartbeat: Duration::from_secs(300),
    statement_timeout: Duration::from_secs(2),
    abandon_after: Duration::from_secs(600),
    max_poll: Duration::from_secs(5),
});

#[tokio::test(flavor = "multi_thread", worker_threads = 4)]
async fn with_a_direct_connection_a_pause_cancels_the_running_tick_at_once() {
    let db = ticks_db().await;
    let (causes_tx, mut causes) = tokio::sync::mpsc::unbounded_channel();
    let runtime = Runtime::builder(db.pool().clone())
        .timings(SLOW_BEAT)
        .role(
            ALPHA,
            Duration::from_secs(3600),
            move |tick: TickContext| {
                let causes = causes_tx.clone();
                async move {
                    let mut tx = tick.pool().begin().await?;
                    sqlx::query("INSERT INTO ticks VALUES ('a', clock_timestamp())")
                        .persistent(false)
                        .execute(&mut *tx)
                        .await?;
                    tx.commit().await?;
                    tick.cancelled().await;
                    let _ = causes.send(tick.cancel_cause());
                    Ok::<(), JobError>(())
                }
            },
        )
        .wake_on_release(direct(&db))
        .build()
        .unwrap();
    let stop = CancellationToken::new();
    let running = tokio::spawn(runtime.run_until_cancelled(stop.clone()));
    assert!(
        db.eventually("SELECT count(*) FROM ticks", Duration::from_secs(60))
            .await,
        "the tick runs"
    );
    assert!(
        db.eventually(
            "SELECT count(*) FROM pg_stat_activity
              WHERE query LIKE '%LISTEN \"leader_paused\"%' AND pid <> pg_backend_pid()",
            Duration::from_secs(60)
        )
        .await,
        "the runtime listens for pauses"
    );
    leader_runtime::protocol::operator::pause(db.admin(), "alpha", "alice", None, &FAST)
        .await
        .unwrap();
    // The next heartbeat is minutes away: only the pause's notice can end the tick within this
    // bound, which otherwise only turns a hang into a failure.
    let cause = tokio::time::timeout(Duration::from_secs(60), causes.recv())
        .await
        .expect("the tick is cancelled on the pause's notice, not at its next heartbeat");
    assert_eq!(cause, Some(Some(leader_runtime::CancelCause::Paused)));
    stop.cancel();
    running.await.unwrap().unwrap();
}
