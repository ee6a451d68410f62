//! `Runtime::leadership` says which roles the runtime leads while a tick runs, and none after
//! its shutdown released them, against a real PostgreSQL.

mod common;

use std::time::Duration;

use common::*;
use leader_runtime::{JobError, Runtime, TickContext};
use tokio_util::sync::CancellationToken;

/// Runs until its tick is cancelled.
async fn hold(tick: TickContext) -> Result<(), JobError> {
    tick.cancelled().await;
    Ok(())
}

#[tokio::test]
async fn leadership_lists_a_role_while_its_tick_runs() {
    let db = database().await;
    let runtime = Runtime::builder(db.pool().clone())
        .role(ALPHA, Duration::from_secs(3600), hold)
        .timings(FAST)
        .build()
        .unwrap();
    let leadership = runtime.leadership();
    assert!(leadership.leading().is_empty());
    let shutdown = CancellationToken::new();
    let run = tokio::spawn(runtime.run_until_cancelled(shutdown.clone()));
    // A hang here is a failure, not a slow machine: the role is free and due at once.
    tokio::time::timeout(Duration::from_secs(120), async {
        while !leadership.is_leading(ALPHA) {
            tokio::time::sleep(Duration::from_millis(10)).await;
        }
    })
    .await
    .expect("the runtime leads alpha within two minutes");
    // A simple query: behind a transaction-mode pooler, an unprepared statement's Parse and Bind
    // outside a transaction may reach two server connections.
    let token: i64 = sqlx::Row::get(
        &sqlx::raw_sql("SELECT holder_token FROM leader_leases WHERE role = 'alpha'")
            .fetch_one(db.pool())
            .await
            .unwrap(),
        0,
    );
    let leading: Vec<_> = leadership
        .leading()
        .iter()
        .map(|lead| (lead.role, lead.shard, lead.token))
        .collect();
    assert_eq!(leading, [(ALPHA, None, token)]);
    shutdown.cancel();
    run.await.unwrap().unwrap();
    assert!(leadership.leading().is_empty(), "released at shutdown");
}
