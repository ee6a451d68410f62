//! A job the runtime drops at the end of the shutdown grace while its `BEGIN` waits for a server
//! connection leaves no transaction open on the connection it used.
//!
//! A CI run found the opposite with sqlx 0.9.0 (launchbadge/sqlx#4393): a cancelled `BEGIN` left
//! the session inside a transaction that nothing rolled back, and the pool handed that
//! connection on. Behind PgBouncer it kept one of the pool's server connections for good; the
//! framework's own statements on such a connection ran inside the stale transaction, held the
//! lease rows' locks uncommitted, and every replica's ACQUIRE and RENEW timed out. sqlx 0.9.1
//! rolls a cancelled `BEGIN` back; this test pins that, through PgBouncer, where the runtime
//! drops jobs that are queued for a server connection.

mod common;

use std::str::FromStr;
use std::time::Duration;

use common::*;
use leader_runtime::{JobError, Runtime, State, TickContext};
use leader_testkit::Pooler;
use sqlx::postgres::{PgConnectOptions, PgPoolOptions};
use sqlx::{Connection, PgConnection, PgPool, Row};
use tokio_util::sync::CancellationToken;

/// Clients PgBouncer has queued for a server connection of `database`.
async fn clients_waiting(pooler: &Pooler, database: &str) -> i32 {
    let console = PgConnectOptions::from_str(&pooler.url())
        .unwrap()
        .database("pgbouncer");
    let mut console = PgConnection::connect_with(&console).await.unwrap();
    let rows = sqlx::raw_sql("SHOW POOLS")
        .fetch_all(&mut console)
        .await
        .unwrap();
    rows.iter()
        .filter(|row| row.try_get::<String, _>("database").unwrap() == database)
        .map(|row| row.try_get::<i32, _>("cl_waiting").unwrap())
        .sum()
}

#[tokio::test]
async fn a_job_dropped_while_its_begin_waits_leaves_no_transaction_open() {
    let db = database().await;
    let server = PgConnectOptions::from_str(&db.url()).unwrap();
    let pooler = Pooler::start_with_pool_size(server.get_host(), server.get_port(), 1)
        .unwrap_or_else(|e| panic!("this test needs PgBouncer (apt-get install pgbouncer): {e}"));
    let through_pooler = PgConnectOptions::from_str(&pooler.url())
        .unwrap()
        .database(db.name());
    // The job's pool: one client connection through a pooler of one server connection. No
    // ping before a connection is handed out, so the job's BEGIN is what PgBouncer queues.
    let jobs: PgPool = PgPoolOptions::new()
        .max_connections(1)
        .test_before_acquire(false)
        .connect_with(through_pooler.clone())
        .await
        .unwrap();
    sqlx::raw_sql("SELECT 1").execute(&jobs).await.unwrap();
    // Another client takes that server connection and keeps it inside a transaction.
    let mut holder = PgConnection::connect_with(&through_pooler).await.unwrap();
    sqlx::raw_sql("BEGIN; SELECT 1")
        .execute(&mut holder)
        .await
        .unwrap();

    let runtime = Runtime::builder(db.pool().clone())
        .with_state(jobs.clone())
        .role(
            ALPHA,
            Duration::from_secs(3600),
            |_tick: TickContext, State(jobs): State<PgPool>| async move {
                let mut tx = jobs.begin().await?;
                sqlx::raw_sql("SELECT 1").execute(&mut *tx).await?;
                tx.commit().await?;
                Ok::<(), JobError>(())
            },
        )
        .timings(FAST)
        .shutdown_grace(Duration::from_millis(100))
        .build()
        .unwrap();
    let shutdown = CancellationToken::new();
    let run = tokio::spawn(runtime.run_until_cancelled(shutdown.clone()));
    // The job's BEGIN is queued in PgBouncer behind the holder. A hang here is a failure.
    let queued = tokio::time::timeout(Duration::from_secs(120), async {
        while clients_waiting(&pooler, db.name()).await == 0 {
            tokio::time::sleep(Duration::from_millis(20)).await;
        }
    })
    .await;
    assert!(queued.is_ok(), "the job's BEGIN never queued in PgBouncer");

    // Shutdown: the job does not return within the grace, so the runtime drops it mid-BEGIN.
    shutdown.cancel();
    run.await.unwrap().unwrap();
    // The holder lets go: PgBouncer hands the server connection to the dropped job's client,
    // and its queued BEGIN runs.
    sqlx::raw_sql("COMMIT").execute(&mut holder).await.unwrap();

    // The pool's one connection, once it is back: two statements on it must be two transactions.
    let mut conn = jobs.acquire().await.unwrap();
    let xact = "SELECT pg_current_xact_id()::text";
    let first: String = sqlx::query_scalar(xact)
        .persistent(false)
        .fetch_one(&mut *conn)
        .await
        .unwrap();
    let second: String = sqlx::query_scalar(xact)
        .persistent(false)
        .fetch_one(&mut *conn)
        .await
        .unwrap();
    assert_ne!(
        first, second,
        "the dropped job's connection came back to the pool inside its transaction"
    );
}
