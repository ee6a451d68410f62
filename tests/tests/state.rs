//! A `#[leader_role]` job that takes the application's state: refused at build without the
//! state (naming the job and the call that adds it), and given it each tick with it, against a
//! real PostgreSQL.

mod common;

use std::sync::Arc;
use std::time::Duration;

use common::*;
use leader_runtime::{BuildError, JobError, Runtime, State, TickContext, leader_role};
use tokio_util::sync::CancellationToken;

/// The application's state: where the job writes, and what.
#[derive(Clone)]
struct App {
    greeting: Arc<str>,
}

#[leader_role("alpha", every = "1h")]
async fn greet(tick: TickContext, State(app): State<App>) -> Result<(), JobError> {
    let mut tx = tick.pool().begin().await?;
    sqlx::query("INSERT INTO greetings (token, greeting) VALUES ($1, $2)")
        .persistent(false)
        .bind(tick.fence().token())
        .bind(app.greeting.as_ref())
        .execute(&mut *tx)
        .await?;
    tx.commit().await?;
    Ok(())
}

#[tokio::test]
async fn a_job_whose_state_the_builder_lacks_is_refused_at_build_naming_it() {
    let db = database().await;
    let err = Runtime::builder(db.pool().clone())
        .registered_jobs()
        .build()
        .unwrap_err();
    assert!(
        matches!(err, BuildError::StateType { role, .. } if role == ALPHA),
        "{err}"
    );
    let text = err.to_string();
    assert!(
        text.contains("::greet` (role `alpha`) takes `State<"),
        "{text}"
    );
    assert!(text.contains("state::App>`"), "{text}");
    assert!(text.contains("call `.with_state(..)`"), "{text}");
    let err = Runtime::builder(db.pool().clone())
        .with_state(42_u32)
        .registered_jobs()
        .build()
        .unwrap_err();
    assert!(
        err.to_string().contains("this runtime's state is `u32`"),
        "{err}"
    );
}

#[tokio::test]
async fn a_job_gets_the_state_given_to_the_builder() {
    let db = database().await;
    db.exec("CREATE TABLE greetings (token bigint NOT NULL, greeting text NOT NULL)")
        .await;
    let runtime = Runtime::builder(db.pool().clone())
        .with_state(App {
            greeting: Arc::from("hello from the state"),
        })
        .registered_jobs()
        .timings(FAST)
        .build()
        .unwrap();
    let shutdown = CancellationToken::new();
    let run = tokio::spawn(runtime.run_until_cancelled(shutdown.clone()));
    // A hang here is a failure, not a slow machine: the role is free and due at once.
    let greeting = tokio::time::timeout(
        Duration::from_secs(120),
        wait_for(db.pool(), "SELECT greeting FROM greetings LIMIT 1"),
    )
    .await
    .expect("the job ran within two minutes");
    assert_eq!(greeting, "hello from the state");
    shutdown.cancel();
    run.await.unwrap().unwrap();
}

/// Polls `sql` until it returns a row; its first column. A simple query (no Parse and Bind), so
/// that behind a transaction-mode pooler the statement cannot be split across server connections.
async fn wait_for(pool: &sqlx::PgPool, sql: &'static str) -> String {
    use sqlx::Row;
    loop {
        if let Some(row) = sqlx::raw_sql(sql).fetch_optional(pool).await.unwrap() {
            return row.get(0);
        }
        tokio::time::sleep(Duration::from_millis(20)).await;
    }
}
