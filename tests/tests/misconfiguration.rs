//! A misconfiguration is an error or a warning that names the fix, never a quiet loop: a pooler
//! given as the direct connection, a pool whose statements break behind its pooler, a one-worker
//! tokio runtime, and the anchor watcher's waits logged as slow statements.
//!
//! Each pooler here is the project's PgBouncer 1.18 in transaction mode, started by the test:
//! one that refuses startup options (PgBouncer's default), and one told to ignore them, which
//! drops them silently.

mod common;

use std::str::FromStr;
use std::time::Duration;

use common::*;
use leader_runtime::pooler::{DirectError, DirectOptions, PoolError, PoolPath, check_pool};
use leader_runtime::protocol::lease::{ANCHOR_LOCK_CLASS, Anchor, AnchorError};
use leader_runtime::{JobError, RunError, Runtime, TickContext, TimingParts, Timings};
use leader_testkit::{Pooler, PoolerSettings, TestDb};
use sqlx::postgres::{PgConnectOptions, PgPoolOptions};
use sqlx::{Connection, PgConnection};
use tokio_util::sync::CancellationToken;

/// PgBouncer 1.18 in transaction mode in front of `db`'s server; with `ignore_options`, told to
/// drop startup options rather than refuse them.
fn pooler(db: &TestDb, ignore_options: bool) -> Pooler {
    let server = PgConnectOptions::from_str(&db.url()).unwrap();
    Pooler::start_with(
        server.get_host(),
        server.get_port(),
        PoolerSettings {
            ignore_startup_options: ignore_options,
            ..PoolerSettings::default()
        },
    )
    .unwrap_or_else(|e| panic!("this test needs PgBouncer (apt-get install pgbouncer): {e}"))
}

/// `db` through `pooler`.
fn through(pooler: &Pooler, db: &TestDb) -> PgConnectOptions {
    PgConnectOptions::from_str(&pooler.url())
        .unwrap()
        .database(db.name())
}

/// `db` on its server, not through any pooler.
fn direct(db: &TestDb) -> PgConnectOptions {
    PgConnectOptions::from_str(&db.url()).unwrap()
}

/// The anchor locks granted in `db`: the ring of live replicas.
async fn anchor_locks(db: &TestDb) -> i64 {
    let sql = format!(
        "SELECT count(*) FROM pg_locks
          WHERE locktype = 'advisory' AND classid = {ANCHOR_LOCK_CLASS}::oid AND granted
            AND database = (SELECT oid FROM pg_database WHERE datname = current_database())"
    );
    sqlx::query_scalar(sqlx::AssertSqlSafe(sql))
        .fetch_one(db.admin())
        .await
        .unwrap()
}

/// A runtime leading alpha with a job that holds its tick until cancelled, taking over dead
/// replicas through `direct`.
fn taking_over(db: &TestDb, holder: &str, direct: PgConnectOptions) -> Runtime {
    Runtime::builder(db.pool().clone())
        .timings(FAST)
        .holder_id(holder)
        .role(
            ALPHA,
            Duration::from_secs(3600),
            |tick: TickContext| async move {
                tick.cancelled().await;
                Ok::<(), JobError>(())
            },
        )
        .wake_on_release(direct)
        .take_over_when_dead()
        .build()
        .unwrap()
}

/// What `runtime.run` returns when its start-up checks refuse it; a runtime that starts instead
/// is stopped after a minute (the bound turns a start that should not happen into a failure, and
/// a refusal returns at once).
async fn refused_at_start_up(runtime: Runtime) -> Result<(), RunError> {
    runtime
        .run(tokio::time::sleep(Duration::from_secs(60)))
        .await
}

#[tokio::test]
async fn a_direct_connection_at_a_pooler_is_refused_at_start_up_and_no_anchor_is_left_behind() {
    let db = database().await;
    for ignore_options in [false, true] {
        let pooler = pooler(&db, ignore_options);
        for replica in ["replica-1", "replica-2"] {
            let ran = refused_at_start_up(taking_over(&db, replica, through(&pooler, &db))).await;
            let Err(error @ RunError::DirectConnection(DirectError::Pooler { place, .. })) = &ran
            else {
                panic!("expected the pooler refused as the direct connection: {ran:?}");
            };
            assert!(place.ends_with(db.name()), "{place}");
            let message = error.to_string();
            assert!(
                message.contains("give the server's own address"),
                "{message}"
            );
        }
        assert_eq!(anchor_locks(&db).await, 0, "no anchor lock was taken");
        drop(pooler);
    }
    // A replica given the server's own address anchors, and the ring holds only it.
    let stop = CancellationToken::new();
    let runtime = taking_over(&db, "replica-3", direct(&db));
    let running = tokio::spawn(runtime.run(stop.clone().cancelled_owned()));
    assert!(
        db.eventually(
            "SELECT count(*) FROM leader_leases WHERE role = 'alpha' AND holder_anchor_pid IS NOT NULL",
            Duration::from_secs(60),
        )
        .await,
        "the live replica leads under its anchor"
    );
    assert_eq!(
        anchor_locks(&db).await,
        1,
        "the ring is the live replica alone"
    );
    stop.cancel();
    running.await.unwrap().unwrap();
}

#[tokio::test]
async fn an_anchor_is_never_taken_on_a_session_a_pooler_lent() {
    let db = database().await;
    let pooler = pooler(&db, true);
    let options = DirectOptions::new(through(&pooler, &db));
    // The pooler dropped the startup options and connected: the session answers no nonce.
    let mut lent = PgConnection::connect_with(options.connect_options())
        .await
        .expect("a pooler told to ignore options lets the connection in");
    let verified = options.verify(&mut lent).await;
    assert!(
        matches!(verified, Err(DirectError::Pooler { .. })),
        "{verified:?}"
    );
    let opened = Anchor::open(&mut lent, "replica-1", &options, &FAST).await;
    assert!(matches!(opened, Err(AnchorError::NotDirect)), "{opened:?}");
    assert_eq!(
        anchor_locks(&db).await,
        0,
        "the lock statement took nothing"
    );
    lent.close().await.unwrap();
    assert_eq!(
        anchor_locks(&db).await,
        0,
        "nor is any left on the pooled session"
    );
    // PgBouncer's default refuses the options outright, naming them.
    let refusing = pooler_refusal(&db).await;
    assert!(refusing.is_pooler(), "{refusing}");
    assert!(
        refusing
            .to_string()
            .contains("unsupported startup parameter"),
        "{refusing}"
    );
}

/// What connecting a direct connection to a PgBouncer that refuses startup options says.
async fn pooler_refusal(db: &TestDb) -> DirectError {
    let pooler = pooler(db, false);
    DirectOptions::new(through(&pooler, db))
        .connect(Duration::from_secs(60))
        .await
        .expect_err("PgBouncer refuses a connection with startup options")
}

#[tokio::test]
async fn a_pool_whose_named_statements_reach_a_transaction_pooler_is_refused_at_start_up() {
    let db = database().await;
    let pooler = pooler(&db, false);
    let cached = PgPoolOptions::new()
        .max_connections(2)
        .connect_with(through(&pooler, &db))
        .await
        .unwrap();
    let ran = refused_at_start_up(
        Runtime::builder(cached.clone())
            .role(ALPHA, Duration::from_secs(3600), |_: TickContext| async {
                Ok::<(), JobError>(())
            })
            .build()
            .unwrap(),
    )
    .await;
    match ran {
        Err(RunError::Pool(PoolError::NamedStatements { place })) => {
            assert!(place.ends_with(db.name()), "{place}");
        }
        other => panic!("expected the pool refused: {other:?}"),
    }
    let message = check_pool(&cached).await.unwrap_err().to_string();
    assert!(message.contains("statement_cache_capacity(0)"), "{message}");

    let uncached = PgPoolOptions::new()
        .max_connections(2)
        .connect_with(through(&pooler, &db).statement_cache_capacity(0))
        .await
        .unwrap();
    assert_eq!(
        check_pool(&uncached).await.unwrap(),
        PoolPath::TransactionPooler
    );
    let on_the_server = PgPoolOptions::new()
        .max_connections(2)
        .connect_with(direct(&db))
        .await
        .unwrap();
    assert_eq!(
        check_pool(&on_the_server).await.unwrap(),
        PoolPath::Sessions
    );
}

/// A lease of 3 s: a job that blocks the only worker thread for longer than `abandon_after`
/// starves its heartbeat whatever the machine's load.
const THREE_SECONDS: Timings = Timings::new_or_panic(TimingParts {
    ttl: Duration::from_millis(3_000),
    heartbeat: Duration::from_millis(500),
    statement_timeout: Duration::from_millis(600),
    abandon_after: Duration::from_millis(1_500),
    max_poll: Duration::from_millis(500),
});

#[tokio::test(flavor = "current_thread")]
async fn a_runtime_with_one_worker_says_so_and_blames_itself_for_a_starved_heartbeat() {
    let logged = Logged::capture_warnings();
    let db = database().await;
    let stop = CancellationToken::new();
    let blocked = stop.clone();
    let runtime = Runtime::builder(db.pool().clone())
        .timings(THREE_SECONDS)
        .role(
            ALPHA,
            Duration::from_secs(3600),
            move |tick: TickContext| {
                let blocked = blocked.clone();
                async move {
                    // Blocks the only worker thread for twice the give-up time, then waits for the
                    // heartbeat, which runs only now, to give the tick up.
                    std::thread::sleep(Duration::from_millis(3_000));
                    tick.cancelled().await;
                    blocked.cancel();
                    Ok::<(), JobError>(())
                }
            },
        )
        .build()
        .unwrap();
    runtime.run(stop.cancelled_owned()).await.unwrap();
    let lines = logged.lines().join("");
    assert!(
        lines.contains("this tokio runtime has one worker thread"),
        "{lines}"
    );
    assert!(
        lines.contains("worker_threads = 2"),
        "the warning shows the fix: {lines}"
    );
    assert!(
        lines.contains("the heartbeat was not run for"),
        "the abandoned tick names the scheduler: {lines}"
    );
    assert!(
        !lines.contains("the database is slow"),
        "nothing blames the database: {lines}"
    );
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn a_runtime_with_two_workers_does_not_warn_about_them() {
    let logged = Logged::capture_warnings();
    let db = database().await;
    let ran = Runtime::builder(db.pool().clone())
        .role(ALPHA, Duration::from_secs(3600), |_: TickContext| async {
            Ok::<(), JobError>(())
        })
        .build()
        .unwrap()
        .run(std::future::ready(()))
        .await;
    assert!(ran.is_ok(), "{ran:?}");
    let lines = logged.lines().join("");
    assert!(!lines.contains("one worker thread"), "{lines}");
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn the_watchers_waits_are_not_logged_as_slow_statements() {
    let logged = Logged::capture_warnings();
    let db = database().await;
    let first_stop = CancellationToken::new();
    let first = tokio::spawn(
        taking_over(&db, "replica-1", direct(&db)).run(first_stop.clone().cancelled_owned()),
    );
    assert!(
        db.eventually(
            "SELECT count(*) FROM pg_stat_activity
              WHERE application_name = 'leader-anchor-watcher' AND wait_event_type = 'Lock'",
            Duration::from_secs(60),
        )
        .await,
        "the first replica's watcher waits on its own anchor"
    );
    // sqlx calls a statement slow after 1 s: this wait has lasted longer when it ends.
    tokio::time::sleep(Duration::from_millis(1_500)).await;
    let second_stop = CancellationToken::new();
    let second = tokio::spawn(
        taking_over(&db, "replica-2", direct(&db)).run(second_stop.clone().cancelled_owned()),
    );
    assert!(
        db.eventually(
            "SELECT count(*) - 1 FROM pg_stat_activity
              WHERE application_name = 'leader-anchor-watcher' AND wait_event_type = 'Lock'",
            Duration::from_secs(60),
        )
        .await,
        "both watchers wait, the first one's wait ended by the join"
    );
    tokio::time::sleep(Duration::from_millis(1_500)).await;
    second_stop.cancel();
    second.await.unwrap().unwrap();
    first_stop.cancel();
    first.await.unwrap().unwrap();
    let lines = logged.lines().join("");
    assert!(!lines.contains("slow statement"), "{lines}");
}
