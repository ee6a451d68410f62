//! The README's claims and completion, run as a user copies them, behind the project's PgBouncer
//! 1.18 in transaction mode with one server session shared by a pool of several client
//! connections, each with sqlx's statement cache on (the default a user starts with).
//!
//! Every call succeeds and every row is claimed and stamped exactly once. Without
//! `.persistent(false)`, the clients' named statements meet on the one server session
//! (`prepared statement "sqlx_s_1" already exists`); outside a transaction, a query's `Bind`
//! reaches the session after another client's `Parse` (`bind message supplies 4 parameters, but
//! prepared statement "" requires 3`, or another client's statement run with these values).

use std::str::FromStr;
use std::time::Duration;

use leader_readme_examples::readme::claim_webhooks;
use leader_readme_examples::scaffold::Store;
use leader_runtime::Shard;
use leader_runtime::protocol::lease::{self, Acquired, Wanted};
use leader_runtime::{Role, Timings};
use leader_testkit::{Pooler, PoolerSettings, TestDb};
use sqlx::postgres::{PgConnectOptions, PgPoolOptions};

const EMAIL_OUTBOX: Role = Role::from_static("email_outbox");
const WEBHOOK_DELIVERY: Role = Role::from_static("webhook_delivery");
const SHARDS: u32 = 8;
const ROWS: i64 = 400;

/// The README's tables, its two roles (webhook_delivery in 8 shards), and `ROWS` rows in each.
async fn database() -> TestDb {
    let db = TestDb::new().await;
    db.exec(
        "ALTER TABLE leader_leases ADD CONSTRAINT leader_leases_role_registered
             CHECK (role IN ('email_outbox', 'webhook_delivery'));
         INSERT INTO leader_leases (role, holder_token)
         VALUES ('email_outbox', leader_seed_token()), ('webhook_delivery', leader_seed_token());
         SELECT leader_reshard('webhook_delivery', 8);
         CREATE TABLE email_outbox (id bigserial PRIMARY KEY, recipient text NOT NULL,
                                    sent_at timestamptz, claimed_token bigint);
         INSERT INTO email_outbox (recipient) SELECT 'user' || n FROM generate_series(1, 400) n;
         CREATE TABLE webhooks (id bigint PRIMARY KEY, delivered_at timestamptz,
                                claimed_token bigint);
         INSERT INTO webhooks (id) SELECT generate_series(1, 400);",
    )
    .await;
    db
}

/// The pool a user has: sqlx's defaults (statement cache on), several client connections, all
/// through PgBouncer with one server session.
async fn pool_through_one_server_session(db: &TestDb) -> (Pooler, sqlx::PgPool) {
    let server = PgConnectOptions::from_str(&db.url()).unwrap();
    let pooler = Pooler::start_with(
        server.get_host(),
        server.get_port(),
        PoolerSettings {
            pool_size: 1,
            ..PoolerSettings::default()
        },
    )
    .unwrap_or_else(|e| panic!("this test needs PgBouncer (apt-get install pgbouncer): {e}"));
    let options = PgConnectOptions::from_str(&pooler.url())
        .unwrap()
        .database(db.name());
    let pool = PgPoolOptions::new()
        .max_connections(4)
        .min_connections(4)
        .connect_with(options)
        .await
        .unwrap();
    (pooler, pool)
}

/// Records the delivery of `ids`, as the README's job does after its claim: a compare-and-set
/// write of the rows this token claimed, in a transaction, non-persistent, as the README's are.
async fn delivered(pool: &sqlx::PgPool, ids: &[i64], token: i64) -> u64 {
    let mut tx = pool.begin().await.unwrap();
    let done = sqlx::query(
        "UPDATE webhooks SET delivered_at = now()
          WHERE id = ANY ($1) AND claimed_token = $2 AND delivered_at IS NULL",
    )
    .persistent(false)
    .bind(ids)
    .bind(token)
    .execute(&mut *tx)
    .await
    .unwrap()
    .rows_affected();
    tx.commit().await.unwrap();
    done
}

fn hour() -> Timings {
    Timings::scaled_to_ttl(Duration::from_secs(3600)).unwrap()
}

#[tokio::test(flavor = "multi_thread", worker_threads = 4)]
async fn the_readme_claims_work_as_copied_behind_pgbouncer_1_18() {
    let db = database().await;
    let (_pooler, pool) = pool_through_one_server_session(&db).await;
    let store = Store::new(pool.clone());

    let Acquired::Granted(email) = lease::acquire_one(
        db.admin(),
        EMAIL_OUTBOX,
        "replica-1",
        Duration::from_secs(5),
        &hour(),
    )
    .await
    .unwrap() else {
        panic!("email_outbox is free");
    };
    let shards: Vec<Wanted> = (0..SHARDS)
        .map(|index| {
            Wanted::every(WEBHOOK_DELIVERY, Duration::from_millis(200))
                .in_shard(Shard::new(index, SHARDS).unwrap())
        })
        .collect();
    let granted = lease::acquire(db.admin(), &shards, "replica-1", shards.len(), &hour())
        .await
        .unwrap();
    let shard_fences: Vec<_> = granted
        .iter()
        .map(|answer| match answer {
            Acquired::Granted(grant) => grant.fence.shard_fence().expect("a shard's fence"),
            Acquired::Refused(refusal) => panic!("every shard is free: {refusal:?}"),
        })
        .collect();

    // The outbox's tick and each shard's tick at once, as the runtime runs them (one tick per
    // lease, each sequential), over the pool's four client connections: each drains its rows.
    let outbox = {
        let (store, fence) = (store.clone(), email.fence);
        tokio::spawn(async move {
            let mut sent = 0_i64;
            loop {
                let claimed = store.claim_emails(fence, 7).await.expect("the claim runs");
                if claimed.is_empty() {
                    return sent;
                }
                for email in &claimed {
                    assert!(store.mark_sent(email, fence).await.expect("the stamp runs"));
                    sent += 1;
                }
            }
        })
    };
    let deliveries: Vec<_> = shard_fences
        .iter()
        .map(|&fence| {
            let pool = pool.clone();
            tokio::spawn(async move {
                let mut claimed = 0_i64;
                loop {
                    let ids = claim_webhooks(&pool, fence).await.expect("the claim runs");
                    if ids.is_empty() {
                        return claimed;
                    }
                    claimed += ids.len() as i64;
                    assert_eq!(
                        delivered(&pool, &ids, fence.token()).await,
                        ids.len() as u64
                    );
                }
            })
        })
        .collect();
    let emails = outbox.await.unwrap();
    let mut webhooks = 0;
    for delivery in deliveries {
        webhooks += delivery.await.unwrap();
    }
    assert_eq!(emails, ROWS, "every email claimed once");
    assert_eq!(webhooks, ROWS, "every webhook claimed and delivered once");
    let unsent = db
        .count("SELECT count(*) FROM email_outbox WHERE sent_at IS NULL OR claimed_token IS NULL")
        .await;
    assert_eq!(
        unsent, 0,
        "every email stamped sent under the claiming token"
    );
    let tokens: Vec<i64> = shard_fences.iter().map(|fence| fence.token()).collect();
    let misplaced: i64 = sqlx::query_scalar(
        "SELECT count(*) FROM webhooks WHERE claimed_token IS NULL
            OR NOT (claimed_token = ANY ($1))",
    )
    .bind(&tokens)
    .fetch_one(db.admin())
    .await
    .unwrap();
    assert_eq!(
        misplaced, 0,
        "every webhook claimed under one of its shards' tokens"
    );
}
