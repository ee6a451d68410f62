//! The runtime against a real PostgreSQL (and through PgBouncer on the pooler pass): contention,
//! takeover, pause, shutdown and panics. Figures (takeover times) are printed, never asserted.

mod common;

use std::sync::{Arc, Mutex};
use std::time::Duration;

use common::*;
use leader_runtime::metrics;
use leader_runtime::panic_guard::Steps;
use leader_runtime::{CancelCause, JobError, Role, Runtime, TickContext};
use leader_testkit::TestDb;
use metrics_util::debugging::DebugValue;
use sqlx::PgPool;
use tokio::task::JoinHandle;
use tokio::time::Instant;
use tokio_util::sync::CancellationToken;

/// Records every tick's holder, token and span in `ticks`, inside a transaction (bind parameters
/// behind a transaction-mode pooler need one).
async fn record_start(tick: &TickContext, holder: &str) -> Result<i64, JobError> {
    let mut tx = tick.pool().begin().await?;
    let id: i64 = sqlx::query_scalar(
        "INSERT INTO ticks (role, holder, token, started_at) VALUES ($1, $2, $3, clock_timestamp()) RETURNING id",
    )
    .persistent(false)
    .bind(tick.role())
    .bind(holder)
    .bind(tick.fence().token())
    .fetch_one(&mut *tx)
    .await?;
    tx.commit().await?;
    Ok(id)
}

async fn record_end(pool: &PgPool, id: i64, note: &str) -> Result<(), JobError> {
    let mut tx = pool.begin().await?;
    sqlx::query("UPDATE ticks SET ended_at = clock_timestamp(), note = $2 WHERE id = $1")
        .persistent(false)
        .bind(id)
        .bind(note)
        .execute(&mut *tx)
        .await?;
    tx.commit().await?;
    Ok(())
}

async fn tick_db() -> TestDb {
    let db = database().await;
    db.exec(
        "CREATE TABLE ticks (id bigserial PRIMARY KEY, role text NOT NULL, holder text NOT NULL,
                             token bigint NOT NULL, started_at timestamptz NOT NULL,
                             ended_at timestamptz, note text)",
    )
    .await;
    db
}

fn start(runtime: Runtime) -> Started {
    let shutdown = CancellationToken::new();
    (
        tokio::spawn(runtime.run_until_cancelled(shutdown.clone())),
        shutdown,
    )
}

/// A job that records its tick and works for `work` (stopping early if cancelled).
fn recording_job(
    holder: &'static str,
    work: Duration,
) -> impl Fn(TickContext) -> std::pin::Pin<Box<dyn Future<Output = Result<(), JobError>> + Send>>
+ Send
+ Sync
+ 'static {
    move |tick: TickContext| {
        Box::pin(async move {
            let id = record_start(&tick, holder).await?;
            let note = tokio::select! {
                () = tokio::time::sleep(work) => "done".to_owned(),
                cause = tick.cancelled() => cause.to_string(),
            };
            record_end(tick.pool(), id, &note).await
        })
    }
}

fn runtime(
    db: &TestDb,
    holder: &'static str,
    roles: &[Role],
    every: Duration,
    work: Duration,
) -> Runtime {
    let mut builder = Runtime::builder(db.pool().clone())
        .timings(FAST)
        .holder_id(holder)
        .shutdown_grace(Duration::from_secs(2));
    for &role in roles {
        builder = builder.role(role, every, recording_job(holder, work));
    }
    builder.build().unwrap()
}

type Started = (
    JoinHandle<Result<(), leader_runtime::RunError>>,
    CancellationToken,
);

/// Starts replica-a on `ALPHA` with one long tick per grant, waits until it leads, then starts
/// replica-b, which follows.
async fn leader_and_follower(db: &TestDb, every: Duration) -> [Started; 2] {
    let long = Duration::from_secs(3_600);
    let a = start(runtime(db, "replica-a", &[ALPHA], every, long));
    assert!(
        db.eventually(
            "SELECT count(*) FROM ticks WHERE holder = 'replica-a'",
            Duration::from_secs(10)
        )
        .await
    );
    let b = start(runtime(db, "replica-b", &[ALPHA], every, long));
    [a, b]
}

#[tokio::test(flavor = "multi_thread", worker_threads = 4)]
async fn two_runtimes_never_lead_a_role_at_the_same_time() {
    let db = tick_db().await;
    let (a, stop_a) = start(runtime(
        &db,
        "replica-a",
        &[ALPHA, BETA],
        Duration::from_millis(20),
        Duration::from_millis(60),
    ));
    let (b, stop_b) = start(runtime(
        &db,
        "replica-b",
        &[ALPHA, BETA],
        Duration::from_millis(20),
        Duration::from_millis(60),
    ));
    // Many ticks of each role, however slowly the machine runs them.
    assert!(
        db.eventually(
            "SELECT count(*) FROM (SELECT count(*) FILTER (WHERE role = 'alpha') AS a,
                                          count(*) FILTER (WHERE role = 'beta') AS b
                                     FROM ticks) t
              WHERE a >= 20 AND b >= 20",
            Duration::from_secs(60)
        )
        .await,
        "each role ticks again and again"
    );
    stop_a.cancel();
    stop_b.cancel();
    a.await.unwrap().unwrap();
    b.await.unwrap().unwrap();

    let overlaps = db
        .count(
            "SELECT count(*) FROM ticks x JOIN ticks y
             ON x.role = y.role AND x.id < y.id
            AND tstzrange(x.started_at, x.ended_at) && tstzrange(y.started_at, y.ended_at)",
        )
        .await;
    assert_eq!(overlaps, 0, "two ticks of one role overlapped");
    let unfinished = db
        .count("SELECT count(*) FROM ticks WHERE ended_at IS NULL")
        .await;
    assert_eq!(unfinished, 0, "every tick ended before shutdown returned");
    let out_of_order = db.count("SELECT count(*) FROM (SELECT token, lag(token) OVER (PARTITION BY role ORDER BY started_at) AS prev
                                 FROM ticks) t WHERE token <= prev",
    )
    .await;
    assert_eq!(out_of_order, 0, "tokens grow from tick to tick");
    let holders = db.count("SELECT count(DISTINCT holder) FROM ticks").await;
    println!("ticks by {holders} replica(s); no overlap");
    let released = db
        .count("SELECT count(*) FROM leader_leases WHERE holder_id IS NOT NULL")
        .await;
    assert_eq!(released, 0, "shutdown released every lease");
}

#[tokio::test(flavor = "multi_thread", worker_threads = 4)]
async fn a_leader_stopped_without_releasing_is_replaced_once_its_lease_expires() {
    let db = tick_db().await;
    record_acquires(&db).await;
    let [(a, _stop_a), (b, stop_b)] = leader_and_follower(&db, Duration::from_millis(10)).await;
    // Unrenewed, a's lease would run out one TTL after its grant: b asks after that, and is
    // refused because a renewed (b asks at the expiry each refusal gives, and at max_poll).
    let (token, granted): (i64, chrono::DateTime<chrono::Utc>) = sqlx::query_as(
        "SELECT holder_token, acquired_at FROM leader_leases
          WHERE role = 'alpha' AND holder_id = 'replica-a'",
    )
    .fetch_one(db.admin())
    .await
    .expect("a leads");
    let unrenewed_expiry = granted + chrono::Duration::from_std(FAST.ttl()).unwrap();
    wait_for_acquires(&db, "replica-b", ALPHA, 1, unrenewed_expiry).await;
    let row = lease(&db, ALPHA).await;
    assert_eq!(
        (row.holder_id.as_deref(), row.holder_token),
        (Some("replica-a"), token),
        "b waits while a renews"
    );

    // The leader dies: its tasks stop, nothing is released.
    a.abort();
    let killed = Instant::now();
    assert!(a.await.unwrap_err().is_cancelled());
    assert_eq!(
        db.count(
            "SELECT count(*) FROM leader_leases WHERE role = 'alpha' AND holder_id = 'replica-a'"
        )
        .await,
        1
    );
    assert!(
        db.eventually(
            "SELECT count(*) FROM ticks WHERE holder = 'replica-b'",
            Duration::from_secs(30)
        )
        .await,
        "b takes over once a's lease runs out"
    );
    println!(
        "takeover after the leader stopped: {:?} (TTL {:?}, max poll {:?})",
        killed.elapsed(),
        FAST.ttl(),
        FAST.max_poll()
    );
    stop_b.cancel();
    b.await.unwrap().unwrap();
}

#[tokio::test(flavor = "multi_thread", worker_threads = 4)]
async fn pause_cancels_the_running_tick_and_unpause_resumes_at_the_next_poll() {
    let db = tick_db().await;
    record_acquires(&db).await;
    record_holder_changes(&db).await;
    let (a, stop_a) = start(runtime(
        &db,
        "replica-a",
        &[ALPHA],
        Duration::from_millis(10),
        Duration::from_secs(3_600),
    ));
    let (b, stop_b) = start(runtime(
        &db,
        "replica-b",
        &[ALPHA],
        Duration::from_millis(10),
        Duration::from_secs(3_600),
    ));
    assert!(
        db.eventually("SELECT count(*) FROM ticks", Duration::from_secs(10))
            .await
    );
    let paused_at = Instant::now();
    db.exec("SELECT leader_pause('alpha', 'tests', 'mid-tick')")
        .await;
    let paused = db_now(&db).await;
    assert!(
        db.eventually(
            "SELECT count(*) FROM ticks WHERE note = 'paused'",
            Duration::from_secs(10)
        )
        .await,
        "the running tick is cancelled with cause paused"
    );
    println!(
        "pause to cancelled work: {:?} (heartbeat {:?})",
        paused_at.elapsed(),
        FAST.heartbeat()
    );
    // Both runtimes ask once the role would be due but for the pause (past the pause's floor,
    // the old lease's expiry): nobody is granted it.
    let floor = lease(&db, ALPHA).await.not_before;
    let due = floor.map_or(paused, |floor| floor.max(paused));
    assert_eq!(
        wait_for_refusals(&db, &["replica-a", "replica-b"], ALPHA, 1, due, paused).await,
        0,
        "no ACQUIRE is granted while paused"
    );
    assert_eq!(db.count("SELECT count(*) FROM ticks").await, 1);
    assert_eq!(
        db.count("SELECT count(*) FROM leader_leases WHERE holder_id IS NOT NULL")
            .await,
        0
    );

    db.exec("SELECT leader_unpause('alpha')").await;
    db.exec("UPDATE leader_leases SET not_before = NULL WHERE role = 'alpha'")
        .await;
    assert!(
        db.eventually(
            "SELECT count(*) FROM ticks WHERE id > 1",
            Duration::from_secs(30)
        )
        .await,
        "a runtime leads again after unpause"
    );
    stop_a.cancel();
    stop_b.cancel();
    a.await.unwrap().unwrap();
    b.await.unwrap().unwrap();
}

#[tokio::test(flavor = "multi_thread", worker_threads = 4)]
async fn a_clean_shutdown_releases_at_once_and_the_other_replica_leads_next() {
    let db = tick_db().await;
    record_holder_changes(&db).await;
    let every = Duration::from_millis(200);
    let [(a, stop_a), (b, stop_b)] = leader_and_follower(&db, every).await;

    let stopping = Instant::now();
    stop_a.cancel();
    a.await.unwrap().unwrap();
    // Read from the record, not the row: b may already have taken the released row.
    assert_eq!(
        db.count(
            "SELECT count(*) FROM holder_changes
              WHERE role = 'alpha' AND from_holder = 'replica-a' AND to_holder IS NULL"
        )
        .await,
        1,
        "released when run() returned, not left to expire"
    );
    assert_eq!(
        db.count("SELECT count(*) FROM ticks WHERE note = 'shutdown'")
            .await,
        1
    );
    assert_eq!(
        db.count(
            "SELECT count(*) FROM holder_changes
              WHERE from_holder = 'replica-a' AND to_holder IS NULL AND not_before IS NOT NULL"
        )
        .await,
        0,
        "a shutdown sets no cooldown"
    );
    assert!(
        db.eventually(
            "SELECT count(*) FROM ticks WHERE holder = 'replica-b'",
            Duration::from_secs(30)
        )
        .await,
        "b leads next (the release itself is proven by the record above)"
    );
    println!(
        "shutdown to the other replica leading: {:?}",
        stopping.elapsed()
    );
    stop_b.cancel();
    b.await.unwrap().unwrap();
}

/// Every metric a debugging recorder reported, over several snapshots (each snapshot resets
/// counters and gauges to zero): counters summed, gauges at their last non-zero value.
#[derive(Default)]
struct SeenMetrics(Vec<(String, Labels, DebugValue)>);

type Labels = Vec<(String, String)>;

impl SeenMetrics {
    fn add(&mut self, snapshot: metrics_util::debugging::Snapshot) {
        for (key, _, _, value) in snapshot.into_vec() {
            let name = key.key().name().to_owned();
            let labels: Labels = key
                .key()
                .labels()
                .map(|l| (l.key().to_owned(), l.value().to_owned()))
                .collect();
            let known = self
                .0
                .iter_mut()
                .find(|(n, l, _)| *n == name && *l == labels);
            match (known, value) {
                (None, value) => self.0.push((name, labels, value)),
                (Some((.., DebugValue::Counter(sum))), DebugValue::Counter(more)) => *sum += more,
                (Some((.., last)), DebugValue::Gauge(g)) if g.into_inner() != 0.0 => {
                    *last = DebugValue::Gauge(g);
                }
                (Some(_), _) => {}
            }
        }
    }

    fn get(&self, name: &str, labels: &[(&str, &str)]) -> Option<&DebugValue> {
        self.0
            .iter()
            .find(|(n, l, _)| {
                n == name
                    && labels
                        .iter()
                        .all(|(k, v)| l.iter().any(|(lk, lv)| lk == k && lv == v))
            })
            .map(|(.., value)| value)
    }
}

#[tokio::test(flavor = "multi_thread", worker_threads = 4)]
async fn a_panicking_tick_is_not_a_completion_and_everything_else_goes_on() {
    let recorder = metrics_util::debugging::DebuggingRecorder::new();
    let snapshotter = recorder.snapshotter();
    recorder.install().unwrap();

    let db = tick_db().await;
    record_acquires(&db).await;
    record_holder_changes(&db).await;
    let every = Duration::from_secs(120);
    let steps_ran = Arc::new(Mutex::new(Vec::<&'static str>::new()));
    let log = steps_ran.clone();
    let runtime = Runtime::builder(db.pool().clone())
        .timings(FAST)
        .holder_id("replica-a")
        .status_every(Duration::from_millis(100))
        .role(ALPHA, every, move |tick: TickContext| {
            let log = log.clone();
            async move {
                record_start(&tick, "replica-a").await?;
                let mut steps = Steps::new("alpha");
                steps
                    .run("first", async { log.lock().unwrap().push("first") })
                    .await;
                steps
                    .run("second", async { panic!("subscription 17 has no plan") })
                    .await;
                steps
                    .run("third", async { log.lock().unwrap().push("third") })
                    .await;
                steps.finish();
                Ok::<(), JobError>(())
            }
        })
        .role(
            BETA,
            Duration::from_millis(50),
            recording_job("replica-a", Duration::from_millis(10)),
        )
        .build()
        .unwrap();
    let (handle, stop) = start(runtime);
    assert!(
        db.eventually(
            "SELECT count(*) FROM ticks WHERE role = 'alpha'",
            Duration::from_secs(10)
        )
        .await
    );
    assert!(
        db.eventually(
            "SELECT count(*) FROM leader_leases WHERE role = 'alpha' AND not_before IS NOT NULL",
            Duration::from_secs(30)
        )
        .await
    );
    // Released with its cooldown: the poller asks for the role again at once, and is refused.
    let released = db_now(&db).await;
    wait_for_acquires(&db, "replica-a", ALPHA, 1, released).await;
    assert_eq!(
        grants_since(&db, ALPHA, released, None).await,
        0,
        "not granted again before the cooldown"
    );
    let betas_before = db
        .count("SELECT count(*) FROM ticks WHERE role = 'beta'")
        .await;
    let deadline = Instant::now() + Duration::from_secs(30);
    while db
        .count("SELECT count(*) FROM ticks WHERE role = 'beta'")
        .await
        <= betas_before
    {
        assert!(Instant::now() < deadline, "the other role keeps ticking");
        tokio::time::sleep(Duration::from_millis(20)).await;
    }
    assert_eq!(
        *steps_ran.lock().unwrap(),
        ["first", "third"],
        "the later step ran"
    );
    let row = lease(&db, ALPHA).await;
    assert!(
        row.last_tick_ended_at.is_none() && row.last_tick_holder.is_none(),
        "not a completion"
    );
    let cooldown = row.cooldown_ms.unwrap();
    assert!(
        cooldown > 110_000.0 && cooldown <= 120_000.0,
        "one full interval: {cooldown} ms"
    );
    assert_eq!(
        db.count("SELECT count(*) FROM ticks WHERE role = 'alpha'")
            .await,
        1,
        "not retried before the cooldown"
    );

    // The status metrics are published by a read every 100 ms: wait for one that ran after
    // beta's first completed tick.
    let mut seen = SeenMetrics::default();
    let deadline = Instant::now() + Duration::from_secs(30);
    loop {
        seen.add(snapshotter.snapshot());
        if seen
            .get(metrics::LAST_TICK_AGE_SECONDS, &[("role", "beta")])
            .is_some()
        {
            break;
        }
        assert!(
            Instant::now() < deadline,
            "the completed role's age is published"
        );
        tokio::time::sleep(Duration::from_millis(20)).await;
    }
    let value = |name: &str, labels: &[(&str, &str)]| seen.get(name, labels);
    assert_eq!(
        value(
            metrics::LEASE_LOST_TOTAL,
            &[("role", "alpha"), ("reason", "panicked")]
        ),
        Some(&DebugValue::Counter(1))
    );
    assert_eq!(
        value(
            metrics::LEASE_LOST_TOTAL,
            &[("role", "beta"), ("reason", "panicked")]
        ),
        Some(&DebugValue::Counter(0)),
        "the panicked series exists from the start"
    );
    assert_eq!(
        value(
            metrics::LAST_TICK_UNKNOWN,
            &[("role", "alpha"), ("reason", "never_ran")]
        ),
        Some(&DebugValue::Gauge(1.0.into())),
        "a role that never completed has no age, only the never_ran series"
    );
    assert!(value(metrics::LAST_TICK_AGE_SECONDS, &[("role", "alpha")]).is_none());
    stop.cancel();
    handle.await.unwrap().unwrap();
}

#[tokio::test(flavor = "multi_thread", worker_threads = 4)]
async fn the_status_gauges_give_each_roles_interval_and_how_long_it_has_been_paused() {
    let recorder = metrics_util::debugging::DebuggingRecorder::new();
    let snapshotter = recorder.snapshotter();
    recorder.install().unwrap();

    let db = tick_db().await;
    db.exec(
        "SELECT leader_pause('alpha', 'alice', 'SMTP key rotation');
         UPDATE leader_leases SET paused_at = now() - interval '2 hours' WHERE role = 'alpha';",
    )
    .await;
    let runtime = Runtime::builder(db.pool().clone())
        .timings(FAST)
        .holder_id("replica-a")
        .status_every(Duration::from_millis(50))
        .role(
            ALPHA,
            Duration::from_secs(90),
            recording_job("replica-a", Duration::ZERO),
        )
        .role(
            BETA,
            Duration::from_millis(250),
            recording_job("replica-a", Duration::ZERO),
        )
        .build()
        .unwrap();
    let (handle, stop) = start(runtime);
    // A snapshot drains what it reads; `SeenMetrics` keeps each series' last non-zero value.
    let mut seen = SeenMetrics::default();
    let gauge = |seen: &SeenMetrics, name: &str, role: &str| match seen.get(name, &[("role", role)])
    {
        Some(DebugValue::Gauge(g)) => Some(g.into_inner()),
        _ => None,
    };
    while gauge(&seen, metrics::PAUSED_SECONDS, "alpha").is_none_or(|age| age == 0.0)
        || gauge(&seen, metrics::PAUSED_SECONDS, "beta").is_none()
    {
        tokio::time::sleep(Duration::from_millis(20)).await;
        seen.add(snapshotter.snapshot());
    }
    let gauge = |name: &str, role: &str| gauge(&seen, name, role);
    let paused_for = gauge(metrics::PAUSED_SECONDS, "alpha").unwrap();
    assert!(paused_for >= 7_200.0, "paused two hours ago: {paused_for}");
    assert_eq!(gauge(metrics::PAUSED, "alpha"), Some(1.0));
    assert_eq!(
        gauge(metrics::PAUSED_SECONDS, "beta"),
        Some(0.0),
        "not paused"
    );
    assert_eq!(gauge(metrics::PAUSED, "beta"), Some(0.0));
    assert_eq!(gauge(metrics::INTERVAL_SECONDS, "alpha"), Some(90.0));
    assert_eq!(gauge(metrics::INTERVAL_SECONDS, "beta"), Some(0.25));
    stop.cancel();
    handle.await.unwrap().unwrap();
}

#[tokio::test(flavor = "multi_thread", worker_threads = 4)]
async fn a_sharded_roles_status_gauges_report_its_stalest_shard() {
    let recorder = metrics_util::debugging::DebuggingRecorder::new();
    let snapshotter = recorder.snapshotter();
    recorder.install().unwrap();

    let db = tick_db().await;
    // Shard 1 is paused, shard 2 ran longest ago: no one shard has both, so only gauges taken
    // over all shards report both. A daily interval keeps every shard from ticking meanwhile.
    db.exec(
        "SELECT leader_reshard('alpha', 4);
         UPDATE leader_leases SET last_tick_ended_at = now() - interval '10 minutes'
          WHERE role = 'alpha';
         UPDATE leader_leases SET last_tick_ended_at = now() - interval '3 hours'
          WHERE role = 'alpha' AND shard_index = 2;
         SELECT leader_pause_shard('alpha', 1, 'alice', 'one endpoint is down');
         UPDATE leader_leases SET paused_at = now() - interval '2 hours'
          WHERE role = 'alpha' AND shard_index = 1;",
    )
    .await;
    let runtime = Runtime::builder(db.pool().clone())
        .timings(FAST)
        .holder_id("replica-a")
        .status_every(Duration::from_millis(50))
        .sharded_role(
            ALPHA,
            Duration::from_secs(86_400),
            4,
            recording_job("replica-a", Duration::ZERO),
        )
        .build()
        .unwrap();
    let (handle, stop) = start(runtime);
    let mut seen = SeenMetrics::default();
    let gauge = |seen: &SeenMetrics, name: &str| match seen.get(name, &[("role", "alpha")]) {
        Some(DebugValue::Gauge(g)) => Some(g.into_inner()),
        _ => None,
    };
    // A hang here is a failure, not a slow machine: the gauges are read every 50 ms.
    let waited = tokio::time::Instant::now();
    while gauge(&seen, metrics::PAUSED_SECONDS).is_none_or(|age| age == 0.0)
        || gauge(&seen, metrics::LAST_TICK_AGE_SECONDS).is_none_or(|age| age < 3_600.0)
    {
        assert!(
            waited.elapsed() < Duration::from_secs(120),
            "within two minutes, the gauges show the paused shard and the stalest one: {:?}",
            (
                gauge(&seen, metrics::PAUSED_SECONDS),
                gauge(&seen, metrics::LAST_TICK_AGE_SECONDS)
            )
        );
        tokio::time::sleep(Duration::from_millis(20)).await;
        seen.add(snapshotter.snapshot());
    }
    assert_eq!(
        gauge(&seen, metrics::PAUSED),
        Some(1.0),
        "a shard is paused"
    );
    let paused_for = gauge(&seen, metrics::PAUSED_SECONDS).unwrap();
    assert!(paused_for >= 7_200.0, "paused two hours ago: {paused_for}");
    let age = gauge(&seen, metrics::LAST_TICK_AGE_SECONDS).unwrap();
    assert!(
        age >= 10_800.0,
        "the stalest shard ran three hours ago: {age}"
    );
    stop.cancel();
    handle.await.unwrap().unwrap();
}

#[tokio::test(flavor = "multi_thread", worker_threads = 4)]
async fn a_panic_after_shutdown_is_released_as_shut_down() {
    let db = tick_db().await;
    let every = Duration::from_secs(600);
    let runtime = Runtime::builder(db.pool().clone())
        .timings(FAST)
        .holder_id("replica-a")
        .role(ALPHA, every, |tick: TickContext| async move {
            record_start(&tick, "replica-a").await?;
            let cause = tick.cancelled().await;
            assert_eq!(cause, CancelCause::Shutdown);
            panic!("panicked while shutting down");
            #[allow(unreachable_code)]
            Ok::<(), JobError>(())
        })
        .build()
        .unwrap();
    let (handle, stop) = start(runtime);
    assert!(
        db.eventually("SELECT count(*) FROM ticks", Duration::from_secs(10))
            .await
    );
    stop.cancel();
    handle.await.unwrap().unwrap();
    let row = lease(&db, ALPHA).await;
    assert!(row.holder_id.is_none());
    assert!(
        row.not_before.is_none(),
        "released as shut down (no cooldown), not panicked (600 s): {:?} ms",
        row.cooldown_ms
    );
}

#[tokio::test]
async fn start_up_refuses_roles_the_database_does_not_list() {
    let db = tick_db().await;
    let runtime = Runtime::builder(db.pool().clone())
        .role(
            Role::from_static("delta"),
            Duration::from_secs(1),
            recording_job("x", Duration::ZERO),
        )
        .build()
        .unwrap();
    let err = runtime
        .run_until_cancelled(CancellationToken::new())
        .await
        .unwrap_err();
    assert!(
        err.to_string()
            .contains("role `delta` is not in the leader_leases_role_registered CHECK"),
        "{err}"
    );

    let err = Runtime::builder(db.pool().clone())
        .role(
            ALPHA,
            Duration::from_secs(1),
            recording_job("x", Duration::ZERO),
        )
        .role(
            ALPHA,
            Duration::from_secs(2),
            recording_job("y", Duration::ZERO),
        )
        .build()
        .err()
        .unwrap();
    assert!(
        err.to_string().contains("role `alpha` is led by two jobs"),
        "{err}"
    );
    let err = Runtime::builder(db.pool().clone())
        .role(ALPHA, Duration::ZERO, recording_job("x", Duration::ZERO))
        .build()
        .err()
        .unwrap();
    assert!(err.to_string().contains("must be at least 1 ms"), "{err}");
}

/// A job's own test runs it on a context built from a grant: with a real grant its fenced claims
/// land; with a forged fence (the `test-support` feature) they are refused, as a replaced
/// leader's are.
#[tokio::test]
async fn a_job_test_runs_the_job_on_a_context_built_from_a_grant() {
    use leader_runtime::protocol::lease::{self, Acquired, Grant};

    async fn job(tick: TickContext) -> Result<usize, JobError> {
        Ok(claim(tick.pool(), tick.fence()).await)
    }

    let db = database().await;
    let Acquired::Granted(grant) = lease::acquire_one(
        db.pool(),
        ALPHA,
        "job-test",
        Duration::from_secs(3_600),
        &FAST,
    )
    .await
    .unwrap() else {
        panic!("a fresh role is granted");
    };
    let tick = TickContext::from_grant(grant.clone(), db.pool().clone());
    assert_eq!(
        (tick.fence(), tick.acquired_at()),
        (grant.fence, grant.acquired_at)
    );
    assert!(!tick.is_cancelled());
    assert_eq!(job(tick).await.unwrap(), 10, "the real fence claims");

    let forged = Grant::forge(
        leader_runtime::Fence::forge(ALPHA, grant.fence.token() + 1),
        grant.acquired_at,
        grant.expires_at,
    );
    let tick = TickContext::from_grant(forged, db.pool().clone());
    assert_eq!(job(tick).await.unwrap(), 0, "a forged fence claims nothing");
}
