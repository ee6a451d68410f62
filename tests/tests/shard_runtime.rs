//! Sharded roles led by runtimes, against a real PostgreSQL: replicas spread a role's shards,
//! each shard has one holder at every instant (from a fenced ledger, as `scale.rs` checks roles),
//! a killed replica's shards move to the survivors, a joining replica takes shards at the others'
//! tick boundaries, and replicas running an old and a new shard count side by side never both
//! claim a key.
//!
//! Each wait below waits for something the protocol must bring about, with a timeout that only a
//! broken protocol reaches; no assertion is about how long anything took (the benchmark,
//! `docs/benchmarks/shards.md`, measures that).

mod common;

use std::collections::{BTreeMap, HashMap};
use std::future::Future;
use std::time::Duration;

use common::*;
use leader_runtime::{JobError, Runtime, TickContext, Timings};
use leader_testkit::TestDb;
use tokio::task::JoinHandle;
use tokio_util::sync::CancellationToken;

const EVERY: Duration = Duration::from_millis(100);

/// A fenced claim of one shard: a ledger row exists only if the token held that shard, under
/// that shard count, when the statement ran.
const LEDGER_CLAIM: &str = "
INSERT INTO ledger (role, shard_index, shard_count, token, holder, claimed_at)
SELECT $1, $2, $3, $4, $5, statement_timestamp()
 WHERE leader_fence($1, $2, $3, $4)";

/// The keys 1..=400 of `work`, claimed by shard: the documented claim form, fenced and filtered.
const WORK_CLAIM: &str = "
UPDATE work SET claimed_by = $5, claimed_count = claimed_count + 1
 WHERE key IN (SELECT key FROM work
                WHERE leader_fence($1, $2, $3, $4)
                  AND leader_shard_of(key, $3) = $2
                FOR UPDATE)";

fn timings() -> Timings {
    Timings::scaled_to_ttl(Duration::from_secs(2)).expect("valid timings")
}

/// A shard's tick: one ledger row, and its shard's keys of `work` stamped with the holder.
async fn deliver(tick: TickContext, holder: String) -> Result<(), JobError> {
    let fence = tick
        .shard_fence()
        .expect("a sharded role's tick holds a shard");
    let mut tx = tick.pool().begin().await?;
    for sql in [LEDGER_CLAIM, WORK_CLAIM] {
        sqlx::query(sql)
            .persistent(false)
            .bind(fence.role())
            .bind(fence.shard_index())
            .bind(fence.shard_count())
            .bind(fence.token())
            .bind(&holder)
            .execute(&mut *tx)
            .await?;
    }
    tx.commit().await?;
    tokio::select! {
        () = tokio::time::sleep(Duration::from_millis(20)) => {}
        _ = tick.cancelled() => {}
    }
    Ok(())
}

fn replica(pool: sqlx::PgPool, holder: &str, shards: u32, timings: Timings) -> Runtime {
    let name = holder.to_owned();
    Runtime::builder(pool)
        .timings(timings)
        .holder_id(holder)
        .shutdown_grace(Duration::from_secs(1))
        .sharded_role(ALPHA, EVERY, shards, move |tick: TickContext| {
            deliver(tick, name.clone())
        })
        .build()
        .expect("a valid runtime")
}

struct Running {
    handle: JoinHandle<Result<(), leader_runtime::RunError>>,
    stop: CancellationToken,
}

impl Running {
    async fn start(db: &TestDb, holder: &str, shards: u32, timings: Timings) -> Running {
        let pool = db.pool_as("postgres", 3).await;
        let stop = CancellationToken::new();
        let runtime = replica(pool, holder, shards, timings);
        Running {
            handle: tokio::spawn(runtime.run_until_cancelled(stop.clone())),
            stop,
        }
    }

    async fn stop(self) {
        self.stop.cancel();
        self.handle
            .await
            .expect("the runtime task")
            .expect("run() returns Ok after shutdown");
    }

    /// Stops it as a crash would: nothing more is sent, its leases run out after their TTL.
    fn kill(self) {
        self.handle.abort();
    }
}

/// A database with ALPHA in `shards` shards, the ledger, and 400 keys of work.
async fn sharded_database(shards: u32) -> TestDb {
    let db = database().await;
    sqlx::query("SELECT leader_reshard('alpha', $1)")
        .bind(i32::try_from(shards).expect("a shard count"))
        .execute(db.admin())
        .await
        .unwrap();
    db.exec(
        "CREATE TABLE ledger (id bigserial PRIMARY KEY, role text NOT NULL,
                              shard_index integer NOT NULL, shard_count integer NOT NULL,
                              token bigint NOT NULL, holder text NOT NULL,
                              claimed_at timestamptz NOT NULL);
         CREATE TABLE work (key bigint PRIMARY KEY, claimed_by text,
                            claimed_count integer NOT NULL DEFAULT 0);
         INSERT INTO work (key) SELECT generate_series(1, 400);",
    )
    .await;
    db
}

/// Unexpired leases of ALPHA per holder, now.
async fn held_by(db: &TestDb) -> HashMap<String, i64> {
    sqlx::query_as::<_, (String, i64)>(
        "SELECT holder_id, count(*) FROM leader_leases
          WHERE role = 'alpha' AND expires_at > now() GROUP BY holder_id",
    )
    .fetch_all(db.admin())
    .await
    .unwrap()
    .into_iter()
    .collect()
}

/// Waits until `done` says yes, checking every 50 ms; a timeout is a failure naming `what`.
async fn eventually<F, Fut>(what: &str, mut done: F)
where
    F: FnMut() -> Fut,
    Fut: Future<Output = bool>,
{
    tokio::time::timeout(Duration::from_secs(120), async {
        while !done().await {
            tokio::time::sleep(Duration::from_millis(50)).await;
        }
    })
    .await
    .unwrap_or_else(|_| panic!("within two minutes: {what}"));
}

/// Waits until the lease of every one of `shards` shards goes to `holders` alone, each taking
/// part and holding at most `share` at once: ten snapshots of the leases over half a second see
/// no other holder and none above its share, and the ledger rows claimed meanwhile cover every
/// shard and every one of `holders`. (Leases are held for a tick only, so no one snapshot shows
/// every shard held.)
async fn spread(db: &TestDb, holders: &[&str], shards: i32, share: i64) {
    let what = format!("{holders:?} lead all {shards} shards, each at most {share} at once");
    eventually(&what, || async {
        let mark = last_ledger_id(db).await;
        for _ in 0..10 {
            let held = held_by(db).await;
            if held
                .iter()
                .any(|(holder, &n)| !holders.contains(&holder.as_str()) || n > share)
            {
                return false;
            }
            tokio::time::sleep(Duration::from_millis(50)).await;
        }
        let claimed: Vec<(String, i32)> = sqlx::query_as(
            "SELECT DISTINCT holder, shard_index FROM ledger WHERE id > $1 AND shard_count = $2",
        )
        .bind(mark)
        .bind(shards)
        .fetch_all(db.admin())
        .await
        .unwrap();
        let shards_led: std::collections::HashSet<i32> =
            claimed.iter().map(|(_, shard)| *shard).collect();
        let claimers: std::collections::HashSet<&str> =
            claimed.iter().map(|(holder, _)| holder.as_str()).collect();
        shards_led.len() == usize::try_from(shards).unwrap_or(0)
            && claimers.len() == holders.len()
            && claimers.iter().all(|holder| holders.contains(holder))
    })
    .await;
}

/// The ledger's check: for each shard (of each count), each token's claims come from one
/// holder, and ordered by when each claim's statement ran, a shard's claims never go back to an
/// older token. Returns how many claims it read.
async fn one_holder_per_shard_at_every_instant(db: &TestDb) -> usize {
    let rows: Vec<(i32, i32, i64, String)> = sqlx::query_as(
        "SELECT shard_count, shard_index, token, holder FROM ledger
          ORDER BY shard_count, shard_index, claimed_at, id",
    )
    .fetch_all(db.admin())
    .await
    .unwrap();
    let mut last: BTreeMap<(i32, i32), (i64, &str)> = BTreeMap::new();
    let mut token_holder: BTreeMap<i64, &str> = BTreeMap::new();
    for (count, index, token, holder) in &rows {
        let first = *token_holder.entry(*token).or_insert(holder);
        assert_eq!(
            first, holder,
            "shard {index}/{count}: token {token} passed the fence for two holders"
        );
        if let Some(&(before, by)) = last.get(&(*count, *index)) {
            assert!(
                *token >= before,
                "shard {index}/{count}: a claim by token {token} ({holder}) came after one by the newer token {before} ({by})"
            );
        }
        last.insert((*count, *index), (*token, holder));
    }
    rows.len()
}

async fn last_ledger_id(db: &TestDb) -> i64 {
    sqlx::query_scalar("SELECT coalesce(max(id), 0) FROM ledger")
        .fetch_one(db.admin())
        .await
        .unwrap()
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn three_replicas_spread_eight_shards_and_a_killed_replicas_shards_move_to_the_survivors() {
    let db = sharded_database(8).await;
    let mut running = Vec::new();
    for holder in ["r0", "r1", "r2"] {
        running.push(Running::start(&db, holder, 8, timings()).await);
    }
    // Steady state: ceil(8 / 3) = 3 shards at most each, every shard held.
    spread(&db, &["r0", "r1", "r2"], 8, 3).await;
    eventually("every key of work is claimed", || async {
        db.count("SELECT count(*) FROM work WHERE claimed_by IS NULL")
            .await
            == 0
    })
    .await;

    // r2 is killed: its shards run out after their TTL and the survivors take them, 4 each.
    running.pop().expect("r2").kill();
    spread(&db, &["r0", "r1"], 8, 4).await;

    for replica in running {
        replica.stop().await;
    }
    let claims = one_holder_per_shard_at_every_instant(&db).await;
    assert!(claims > 0);
    // Each key belongs to one shard: it was stamped only by that shard's holders, and every key
    // was reached.
    let wrong_shard = db
        .count(
            "SELECT count(*) FROM work w
              WHERE NOT EXISTS (SELECT 1 FROM ledger l
                                 WHERE l.holder = w.claimed_by
                                   AND l.shard_index = leader_shard_of(w.key, 8))",
        )
        .await;
    assert_eq!(
        wrong_shard, 0,
        "a key was claimed by a holder of another shard"
    );
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn a_joining_replica_takes_shards_at_the_others_tick_boundaries_before_any_lease_expires() {
    // A TTL of a minute, so an expiry is rare within the test; the proof is the record below.
    let slow_expiry = Timings::scaled_to_ttl(Duration::from_secs(60)).expect("valid timings");
    let db = sharded_database(8).await;
    record_holder_changes(&db).await;
    let first = Running::start(&db, "first", 8, slow_expiry).await;
    spread(&db, &["first"], 8, 8).await;
    let second = Running::start(&db, "second", 8, slow_expiry).await;
    spread(&db, &["first", "second"], 8, 4).await;
    // Every shard the second replica took, it took from a lease its holder had released: no
    // grant replaced a holder (a takeover of an expired lease goes from one holder straight to
    // the next; a release sets the holder to NULL first).
    let takeovers = db
        .count(
            "SELECT count(*) FROM holder_changes
              WHERE from_holder IS NOT NULL AND to_holder IS NOT NULL",
        )
        .await;
    assert_eq!(takeovers, 0, "a shard moved by expiry, not by a release");
    let taken = db
        .count("SELECT count(*) FROM holder_changes WHERE to_holder = 'second'")
        .await;
    assert!(taken > 0, "the second replica was granted no shard");
    // A clean stop leaves: the first replica's share counts only itself at its next poll, not
    // after the second's presence runs out a TTL later.
    second.stop().await;
    let present: Vec<String> = sqlx::query_scalar("SELECT holder_id FROM leader_presence")
        .fetch_all(db.admin())
        .await
        .unwrap();
    assert_eq!(
        present,
        ["first"],
        "the stopped replica left; the running one is present"
    );
    first.stop().await;
    one_holder_per_shard_at_every_instant(&db).await;
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn replicas_with_the_old_and_the_new_shard_count_side_by_side_never_claim_a_key_twice_at_once()
 {
    let db = sharded_database(4).await;
    record_acquires(&db).await;
    record_holder_changes(&db).await;
    let old: Vec<Running> = futures_util::future::join_all(
        ["old0", "old1"].map(|holder| Running::start(&db, holder, 4, timings())),
    )
    .await;
    spread(&db, &["old0", "old1"], 4, 2).await;

    // The migration runs while the old replicas lead; then replicas with the new count start
    // beside them.
    db.exec("SELECT leader_reshard('alpha', 6)").await;
    let resharded = db_now(&db).await;
    let new: Vec<Running> = futures_util::future::join_all(
        ["new0", "new1"].map(|holder| Running::start(&db, holder, 6, timings())),
    )
    .await;
    spread(&db, &["new0", "new1"], 6, 3).await;
    eventually("the new replicas claim under the new count", || async {
        db.count("SELECT count(*) FROM ledger WHERE shard_count = 6")
            .await
            > 12
    })
    .await;
    // The old replicas keep asking after the new count led, and are refused every shard.
    let new_led: chrono::DateTime<chrono::Utc> =
        sqlx::query_scalar("SELECT min(claimed_at) FROM ledger WHERE shard_count = 6")
            .fetch_one(db.admin())
            .await
            .unwrap();
    for holder in ["old0", "old1"] {
        wait_for_acquires(&db, holder, ALPHA, 2, new_led).await;
    }
    let old_granted: i64 = sqlx::query_scalar(
        "SELECT count(*) FROM holder_changes
          WHERE to_holder IN ('old0', 'old1') AND at > $1",
    )
    .bind(resharded)
    .fetch_one(db.admin())
    .await
    .unwrap();
    assert_eq!(
        old_granted, 0,
        "a replica with the old count was granted a shard"
    );
    let old_after = db
        .count(
            "SELECT count(*) FROM ledger
              WHERE shard_count = 4
                AND claimed_at > (SELECT min(claimed_at) FROM ledger WHERE shard_count = 6)",
        )
        .await;
    assert_eq!(
        old_after, 0,
        "an old-count claim passed after the new count led"
    );
    for replica in old.into_iter().chain(new) {
        replica.stop().await;
    }
    one_holder_per_shard_at_every_instant(&db).await;
}

#[tokio::test]
async fn start_up_refuses_a_shard_count_the_database_does_not_have_naming_the_migration() {
    let db = sharded_database(4).await;
    let err = replica(db.pool().clone(), "r", 8, timings())
        .run(std::future::ready(()))
        .await
        .expect_err("the counts differ");
    let text = err.to_string();
    assert!(
        text.contains("role `alpha` has 4 shard(s) in leader_leases but the code leads it with 8")
            && text.contains("SELECT leader_reshard('alpha', 8)"),
        "{text}"
    );
}

#[tokio::test]
async fn a_shard_count_out_of_range_is_refused_at_build() {
    let pool = sqlx::postgres::PgPoolOptions::new()
        .connect_lazy("postgres://unused@localhost:1/unused")
        .unwrap();
    for count in [0, leader_runtime::MAX_SHARDS + 1] {
        let err = Runtime::builder(pool.clone())
            .sharded_role(ALPHA, EVERY, count, |_: TickContext| async {
                Ok::<(), JobError>(())
            })
            .build()
            .expect_err("out of range");
        assert_eq!(
            err.to_string(),
            format!("role `alpha` has {count} shards: a sharded role has 1 to 1024 shards")
        );
    }
}

/// How long the sixteen-replica race runs: `LEADER_SHARD_SCALE_SECS` (default 20 s).
fn race_for() -> Duration {
    let secs = std::env::var("LEADER_SHARD_SCALE_SECS")
        .ok()
        .and_then(|s| s.parse().ok())
        .unwrap_or(20);
    Duration::from_secs(secs)
}

#[tokio::test(flavor = "multi_thread", worker_threads = 4)]
async fn sixteen_replicas_with_restarts_keep_one_holder_per_shard_of_sixty_four_and_even_out() {
    const REPLICAS: usize = 16;
    let db = sharded_database(64).await;
    let holders: Vec<String> = (0..REPLICAS).map(|i| format!("replica-{i}")).collect();
    let mut running = Vec::with_capacity(REPLICAS);
    for holder in &holders {
        running.push(Running::start(&db, holder, 64, timings()).await);
    }
    // Replicas restart throughout, each under a new holder id: every second one cleanly, the
    // others as a crash.
    let until = tokio::time::Instant::now() + race_for();
    let mut current = holders.clone();
    let mut generation = REPLICAS;
    while tokio::time::Instant::now() < until {
        tokio::time::sleep(Duration::from_secs(2)).await;
        let victim = generation % REPLICAS;
        let holder = format!("replica-{generation}");
        let replaced = std::mem::replace(
            &mut running[victim],
            Running::start(&db, &holder, 64, timings()).await,
        );
        current[victim] = holder;
        if generation.is_multiple_of(2) {
            replaced.stop().await;
        } else {
            replaced.kill();
        }
        generation += 1;
    }
    // Once the churn stops, the live replicas hold all 64 shards, ceil(64 / 16) = 4 at most each.
    let current: Vec<&str> = current.iter().map(String::as_str).collect();
    spread(&db, &current, 64, 4).await;
    for replica in running {
        replica.stop().await;
    }
    let claims = one_holder_per_shard_at_every_instant(&db).await;
    let led = db
        .count("SELECT count(DISTINCT shard_index) FROM ledger WHERE shard_count = 64")
        .await;
    assert_eq!(led, 64, "every shard was led ({claims} claims)");
}
