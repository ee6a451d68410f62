//! Many replicas racing for many roles: 16 runtimes in this process, each with its own holder id
//! and pool, lead 100 roles while replicas are restarted (cleanly, or dropped as a crash would)
//! throughout. Every tick records its fenced claims in a ledger; the check reads the ledger.
//!
//! `LEADER_SCALE_SECS` sets how long the race runs (default 60 s; the run is 180).

mod common;

use std::collections::BTreeMap;
use std::time::Duration;

use common::*;
use leader_runtime::{JobError, Role, Runtime, TickContext, Timings};
use leader_testkit::TestDb;
use rand::Rng;
use tokio::task::JoinHandle;
use tokio_util::sync::CancellationToken;

const REPLICAS: usize = 16;
const ROLES: usize = 100;
const EVERY: Duration = Duration::from_millis(300);
/// How often one replica is restarted.
const CHURN: Duration = Duration::from_secs(3);

/// A fenced claim: a ledger row exists only if the token held the role when the statement ran.
const LEDGER_CLAIM: &str = "
INSERT INTO ledger (role, token, holder, claimed_at)
SELECT $1, $2, $3, statement_timestamp()
 WHERE leader_fence($1, $2)";

fn timings() -> Timings {
    Timings::scaled_to_ttl(Duration::from_secs(2)).expect("valid timings")
}

fn race_for() -> Duration {
    let secs = std::env::var("LEADER_SCALE_SECS")
        .ok()
        .and_then(|s| s.parse().ok())
        .unwrap_or(60);
    Duration::from_secs(secs)
}

async fn claim(tick: &TickContext, holder: &str) -> Result<(), JobError> {
    let fence = tick.fence();
    let mut tx = tick.pool().begin().await?;
    sqlx::query(LEDGER_CLAIM)
        .persistent(false)
        .bind(fence.role())
        .bind(fence.token())
        .bind(holder)
        .execute(&mut *tx)
        .await?;
    tx.commit().await?;
    Ok(())
}

fn replica(db_pool: sqlx::PgPool, holder: String, roles: &[Role]) -> Runtime {
    let mut builder = Runtime::builder(db_pool)
        .timings(timings())
        .holder_id(holder.clone())
        .shutdown_grace(Duration::from_secs(1));
    for &role in roles {
        let holder = holder.clone();
        builder = builder.role(role, EVERY, move |tick: TickContext| {
            let holder = holder.clone();
            async move {
                // A few claims spread over the tick, stopping early when cancelled.
                for _ in 0..3 {
                    claim(&tick, &holder).await?;
                    let pause = Duration::from_millis(rand::rng().random_range(20..200));
                    tokio::select! {
                        () = tokio::time::sleep(pause) => {}
                        _ = tick.cancelled() => return Ok(()),
                    }
                }
                claim(&tick, &holder).await
            }
        });
    }
    builder.build().expect("a valid runtime")
}

type Running = (
    JoinHandle<Result<(), leader_runtime::RunError>>,
    CancellationToken,
);

async fn start(db: &TestDb, holder: String, roles: &[Role]) -> Running {
    let pool = db.pool_as("postgres", 3).await;
    let stop = CancellationToken::new();
    let runtime = replica(pool, holder, roles);
    (
        tokio::spawn(runtime.run_until_cancelled(stop.clone())),
        stop,
    )
}

#[tokio::test(flavor = "multi_thread", worker_threads = 4)]
async fn sixteen_replicas_racing_for_a_hundred_roles_keep_one_holder_per_role_and_lead_every_role()
{
    let logged = Logged::capture_warnings();

    let db = database().await;
    let roles: Vec<Role> = (0..ROLES)
        .map(|i| Role::new(&format!("s{i:03}")).expect("a valid name"))
        .collect();
    seed(&db, &roles).await;
    db.exec(
        "CREATE TABLE ledger (id bigserial PRIMARY KEY, role text NOT NULL, token bigint NOT NULL,
                              holder text NOT NULL, claimed_at timestamptz NOT NULL)",
    )
    .await;

    let mut running = Vec::with_capacity(REPLICAS);
    for i in 0..REPLICAS {
        running.push(start(&db, format!("replica-{i}"), &roles).await);
    }
    let until = tokio::time::Instant::now() + race_for();
    let mut generation = REPLICAS;
    let mut returned = Vec::new();
    while tokio::time::Instant::now() < until {
        tokio::time::sleep(CHURN).await;
        let victim = rand::rng().random_range(0..REPLICAS);
        let (handle, stop) = std::mem::replace(
            &mut running[victim],
            start(&db, format!("replica-{generation}"), &roles).await,
        );
        if generation.is_multiple_of(2) {
            stop.cancel();
            returned.push(handle.await.expect("the runtime task"));
        } else {
            // As a crash: its leases run out after their TTL.
            handle.abort();
        }
        generation += 1;
    }
    for (handle, stop) in running {
        stop.cancel();
        returned.push(handle.await.expect("the runtime task"));
    }
    for result in returned {
        result.expect("run() returns Ok after shutdown");
    }

    // Exactly one holder per role at every instant: each token's claims come from one holder,
    // and ordered by when each claim's statement ran, a role's claims never go back to an older
    // token.
    let rows: Vec<(String, i64, String)> =
        sqlx::query_as("SELECT role, token, holder FROM ledger ORDER BY role, claimed_at, id")
            .fetch_all(db.admin())
            .await
            .unwrap();
    let mut last: BTreeMap<&str, (i64, &str)> = BTreeMap::new();
    let mut token_holder: BTreeMap<(&str, i64), &str> = BTreeMap::new();
    for (role, token, holder) in &rows {
        let first = *token_holder.entry((role, *token)).or_insert(holder);
        assert_eq!(
            first, holder,
            "{role}: token {token} passed the fence for two holders"
        );
        if let Some(&(before, by)) = last.get(role.as_str()) {
            assert!(
                *token >= before,
                "{role}: a claim by token {token} ({holder}) came after one by the newer token {before} ({by})"
            );
        }
        last.insert(role, (*token, holder));
    }
    for role in &roles {
        assert!(
            last.contains_key(role.as_str()),
            "{role} was never led ({} claims in all)",
            rows.len()
        );
    }
    let holders: std::collections::HashSet<&str> =
        rows.iter().map(|(_, _, holder)| holder.as_str()).collect();
    assert!(
        holders.len() > REPLICAS / 2,
        "roles spread across replicas: only {holders:?} led"
    );

    // No deadlock, as the runtimes saw it or as the server counted it.
    let logs = logged.lines().join("");
    assert!(
        !logs.contains("40P01") && !logs.contains("deadlock"),
        "a deadlock was reported:\n{logs}"
    );
    let deadlocks: i64 = sqlx::query_scalar(
        "SELECT deadlocks FROM pg_stat_database WHERE datname = current_database()",
    )
    .fetch_one(db.admin())
    .await
    .unwrap();
    assert_eq!(deadlocks, 0, "the server detected deadlocks");
}
