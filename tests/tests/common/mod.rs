//! Shared set-up for the integration tests.
#![allow(dead_code)]

use std::time::Duration;

use leader_runtime::{Role, TimingParts, Timings};
use leader_testkit::TestDb;

pub const ALPHA: Role = Role::from_static("alpha");
pub const BETA: Role = Role::from_static("beta");
pub const GAMMA: Role = Role::from_static("gamma");

pub const ROLES_UP: &str = include_str!("../../migrations/20261201000100_roles.up.sql");
pub const ROLES_DOWN: &str = include_str!("../../migrations/20261201000100_roles.down.sql");

/// Short timings so expiry-based tests take about a second.
pub const FAST: Timings = Timings::new_or_panic(TimingParts {
    ttl: Duration::from_millis(1_000),
    heartbeat: Duration::from_millis(200),
    statement_timeout: Duration::from_millis(300),
    abandon_after: Duration::from_millis(600),
    max_poll: Duration::from_millis(500),
});

/// A migrated database with the test roles and an `outbox` of 100 unclaimed rows.
pub async fn database() -> TestDb {
    let db = TestDb::new().await;
    db.exec(ROLES_UP).await;
    db.exec(
        "CREATE TABLE outbox (id bigserial PRIMARY KEY, claimed_by bigint);
         INSERT INTO outbox (claimed_by) SELECT NULL FROM generate_series(1, 100);",
    )
    .await;
    db
}

/// The fenced claim a leader's job makes: up to 10 unclaimed rows, stamped with the token.
pub const CLAIM: &str = "
UPDATE outbox SET claimed_by = $2
 WHERE id IN (SELECT id FROM outbox
               WHERE claimed_by IS NULL AND leader_fence($1, $2)
               ORDER BY id LIMIT 10 FOR UPDATE SKIP LOCKED)
RETURNING id";

/// Runs [`CLAIM`] with `fence` in its own transaction and returns how many rows it claimed.
///
/// A claim with bind parameters runs inside a transaction, as an application's claims do behind
/// a transaction-mode pooler: sqlx's Parse and Bind then reach the same server connection.
pub async fn claim(pool: &sqlx::PgPool, fence: leader_runtime::Fence) -> usize {
    claim_as(pool, fence.role(), fence.token()).await
}

/// [`claim`] with any role and token, to try forged proofs.
pub async fn claim_as(pool: &sqlx::PgPool, role: Role, token: i64) -> usize {
    let mut tx = pool.begin().await.expect("BEGIN");
    let claimed = claim_in(&mut tx, role, token).await;
    tx.commit().await.expect("COMMIT");
    claimed
}

/// Runs [`CLAIM`] inside an open transaction.
pub async fn claim_in(tx: &mut sqlx::PgConnection, role: Role, token: i64) -> usize {
    sqlx::query_scalar::<_, i64>(CLAIM)
        .persistent(false)
        .bind(role)
        .bind(token)
        .fetch_all(tx)
        .await
        .expect("the claim query runs")
        .len()
}

/// Moves a role's expiry into the past, as if its TTL had run out.
pub async fn expire(db: &TestDb, role: Role) {
    sqlx::query("UPDATE leader_leases SET expires_at = now() - interval '1 ms' WHERE role = $1 AND holder_id IS NOT NULL")
        .bind(role)
        .execute(db.admin())
        .await
        .unwrap();
}

/// Clears a role's cooldown and completion stamp so it is due again at once.
pub async fn make_due(db: &TestDb, role: Role) {
    sqlx::query(
        "UPDATE leader_leases SET not_before = NULL, last_tick_ended_at = NULL WHERE role = $1",
    )
    .bind(role)
    .execute(db.admin())
    .await
    .unwrap();
}

/// Starts recording every change of a lease's holder in `holder_changes`, so a test can read what
/// happened to the row even after another replica has moved it on: a release is a change from the
/// holder to NULL (expiry writes nothing; a takeover goes from one holder straight to the next).
/// `at` is the changing statement's `now()`: for a grant, the clock ACQUIRE's guards read.
///
/// The trigger's function runs as its owner, so the runtime's own grants need not cover the table.
pub async fn record_holder_changes(db: &TestDb) {
    db.exec(
        "CREATE TABLE holder_changes (id bigserial PRIMARY KEY, role text NOT NULL,
                                      from_holder text, to_holder text, not_before timestamptz,
                                      at timestamptz NOT NULL DEFAULT now());
         CREATE FUNCTION record_holder_change() RETURNS trigger
         LANGUAGE plpgsql SECURITY DEFINER SET search_path = public
         AS $$
         BEGIN
             INSERT INTO holder_changes (role, from_holder, to_holder, not_before)
             VALUES (NEW.role, OLD.holder_id, NEW.holder_id, NEW.not_before);
             RETURN NULL;
         END
         $$;
         CREATE TRIGGER record_holder_change AFTER UPDATE OF holder_id ON leader_leases
             FOR EACH ROW WHEN (NEW.holder_id IS DISTINCT FROM OLD.holder_id)
             EXECUTE FUNCTION record_holder_change();",
    )
    .await;
}

/// Starts recording every ACQUIRE sent in `acquires`: its text and its `now()` (`started_at`, the
/// clock its guards read; the statement runs in a transaction of its own). A test that must show
/// that something did *not* happen (no grant while paused, no takeover while the leader renews)
/// waits for an ACQUIRE that would have brought it about, then checks the row: it does not wait a
/// fixed time, which on a slow machine may end before anyone asked.
///
/// A statement-level trigger on `leader_leases` records it: ACQUIRE's UPDATE fires it even when
/// it grants nothing. ACQUIRE inlines its values ([`acquires_by`] reads the holder from the text).
pub async fn record_acquires(db: &TestDb) {
    db.exec(
        "CREATE TABLE acquires (id bigserial PRIMARY KEY, started_at timestamptz NOT NULL,
                                query text NOT NULL);
         CREATE FUNCTION record_acquire() RETURNS trigger
         LANGUAGE plpgsql SECURITY DEFINER SET search_path = public
         AS $$
         BEGIN
             IF current_query() LIKE '/* leader:acquire */%' THEN
                 INSERT INTO acquires (started_at, query) VALUES (now(), current_query());
             END IF;
             RETURN NULL;
         END
         $$;
         CREATE TRIGGER record_acquire AFTER UPDATE ON leader_leases
             FOR EACH STATEMENT EXECUTE FUNCTION record_acquire();",
    )
    .await;
}

/// How many ACQUIREs (recorded by [`record_acquires`]) `holder` sent for `role` that started
/// after `since` on the database clock.
pub async fn acquires_by(
    db: &TestDb,
    holder: &str,
    role: Role,
    since: chrono::DateTime<chrono::Utc>,
) -> i64 {
    // ACQUIRE renders the holder as convert_from(decode('<hex>', 'hex'), 'UTF8') and each
    // wanted role as '<role>'::text.
    sqlx::query_scalar(
        "SELECT count(*) FROM acquires
          WHERE started_at > $3
            AND position(format('decode(%L, ''hex'')', encode(convert_to($1, 'UTF8'), 'hex'))
                         IN query) > 0
            AND position(format('%L::text', $2) IN query) > 0",
    )
    .bind(holder)
    .bind(role)
    .bind(since)
    .fetch_one(db.admin())
    .await
    .unwrap()
}

/// Waits until `holder` has sent `times` ACQUIREs for `role` that started after `since` (see
/// [`acquires_by`]). A liveness wait: a runtime that polls reaches it, however slow the machine;
/// two minutes without is a failure.
pub async fn wait_for_acquires(
    db: &TestDb,
    holder: &str,
    role: Role,
    times: i64,
    since: chrono::DateTime<chrono::Utc>,
) {
    let deadline = tokio::time::Instant::now() + Duration::from_secs(120);
    while acquires_by(db, holder, role, since).await < times {
        assert!(
            tokio::time::Instant::now() < deadline,
            "{holder} sent no {times} ACQUIRE(s) for {role} after {since} within two minutes"
        );
        tokio::time::sleep(Duration::from_millis(20)).await;
    }
}

/// Waits until each of `holders` has sent `times` ACQUIREs for `role` that started after `due`
/// (see [`wait_for_acquires`]), or until `role` was granted after `since`; returns how many grants
/// of `role` ACQUIREs made after `since`, for the caller to assert none where none may be. A grant
/// ends the wait at once: its holder asks no more while it runs the tick.
pub async fn wait_for_refusals(
    db: &TestDb,
    holders: &[&str],
    role: Role,
    times: i64,
    due: chrono::DateTime<chrono::Utc>,
    since: chrono::DateTime<chrono::Utc>,
) -> i64 {
    let deadline = tokio::time::Instant::now() + Duration::from_secs(120);
    loop {
        let granted = grants_since(db, role, since, None).await;
        let mut asked = true;
        for holder in holders {
            asked &= acquires_by(db, holder, role, due).await >= times;
        }
        if granted > 0 || asked {
            return granted;
        }
        assert!(
            tokio::time::Instant::now() < deadline,
            "{holders:?} sent no {times} ACQUIRE(s) each for {role} after {due} within two minutes"
        );
        tokio::time::sleep(Duration::from_millis(20)).await;
    }
}

/// The database clock, read after everything committed before the call.
pub async fn db_now(db: &TestDb) -> chrono::DateTime<chrono::Utc> {
    sqlx::query_scalar("SELECT now()")
        .fetch_one(db.admin())
        .await
        .unwrap()
}

/// How many grants of `role` (holder changes to a holder, recorded by [`record_holder_changes`])
/// ACQUIREs made that started after `since`, and before `until` when given.
pub async fn grants_since(
    db: &TestDb,
    role: Role,
    since: chrono::DateTime<chrono::Utc>,
    until: Option<chrono::DateTime<chrono::Utc>>,
) -> i64 {
    sqlx::query_scalar(
        "SELECT count(*) FROM holder_changes
          WHERE role = $1 AND to_holder IS NOT NULL AND at > $2 AND ($3::timestamptz IS NULL OR at < $3)",
    )
    .bind(role)
    .bind(since)
    .bind(until)
    .fetch_one(db.admin())
    .await
    .unwrap()
}

#[derive(Debug, sqlx::FromRow)]
pub struct LeaseRow {
    pub holder_token: i64,
    pub holder_id: Option<String>,
    pub expires_at: Option<chrono::DateTime<chrono::Utc>>,
    pub last_tick_ended_at: Option<chrono::DateTime<chrono::Utc>>,
    pub last_tick_holder: Option<String>,
    pub not_before: Option<chrono::DateTime<chrono::Utc>>,
    pub paused_at: Option<chrono::DateTime<chrono::Utc>>,
    /// not_before - now(), in milliseconds.
    pub cooldown_ms: Option<f64>,
}

pub async fn lease(db: &TestDb, role: Role) -> LeaseRow {
    sqlx::query_as(
        "SELECT holder_token, holder_id, expires_at, last_tick_ended_at, last_tick_holder,
                not_before, paused_at,
                (extract(epoch FROM not_before - now()) * 1000)::float8 AS cooldown_ms
           FROM leader_leases WHERE role = $1",
    )
    .bind(role)
    .fetch_one(db.admin())
    .await
    .unwrap()
}

/// Registers and seeds `roles` beside the test roles, as an application's roles migration would.
pub async fn seed(db: &TestDb, roles: &[Role]) {
    let listed: Vec<String> = ["alpha", "beta", "gamma"]
        .into_iter()
        .chain(roles.iter().map(|role| role.as_str()))
        .map(|name| format!("'{name}'"))
        .collect();
    // The names are validated roles ([a-z][a-z0-9_]*), so they cannot escape their quotes.
    let sql = format!(
        "ALTER TABLE leader_leases DROP CONSTRAINT leader_leases_role_registered;
         ALTER TABLE leader_leases ADD CONSTRAINT leader_leases_role_registered
             CHECK (role IN ({}));
         INSERT INTO leader_leases (role, holder_token)
         SELECT name, leader_seed_token() FROM unnest(ARRAY[{}]) AS name
          WHERE name NOT IN ('alpha', 'beta', 'gamma');",
        listed.join(", "),
        listed.join(", ")
    );
    sqlx::raw_sql(sqlx::AssertSqlSafe(sql))
        .execute(db.admin())
        .await
        .unwrap();
}

/// What the runtimes log at WARN and above, kept for a test to search (a deadlock, a lost wake
/// connection).
#[derive(Clone, Default)]
pub struct Logged(std::sync::Arc<std::sync::Mutex<Vec<String>>>);

impl Logged {
    /// [`Logged::capture`] of WARN and above.
    pub fn capture_warnings() -> Logged {
        Logged::capture(tracing::Level::WARN)
    }

    /// Installs a global subscriber writing `level` and above here, so the runtimes' tasks on
    /// every worker thread log into it (nextest runs each test in its own process).
    pub fn capture(level: tracing::Level) -> Logged {
        let logged = Logged::default();
        let writer = logged.clone();
        tracing::subscriber::set_global_default(
            tracing_subscriber::fmt()
                .with_max_level(level)
                .with_writer(move || writer.clone())
                .finish(),
        )
        .expect("the only subscriber");
        logged
    }

    /// Every line logged so far.
    pub fn lines(&self) -> Vec<String> {
        self.0.lock().unwrap().clone()
    }

    /// How many times `text` has been logged so far.
    pub fn count(&self, text: &str) -> usize {
        self.lines().join("").matches(text).count()
    }

    /// Waits until `text` has been logged `times` times, or `within` has passed; returns the
    /// count then.
    pub async fn wait_for(&self, text: &str, times: usize, within: Duration) -> usize {
        let deadline = tokio::time::Instant::now() + within;
        while self.count(text) < times && tokio::time::Instant::now() < deadline {
            tokio::time::sleep(Duration::from_millis(20)).await;
        }
        self.count(text)
    }
}

impl std::io::Write for Logged {
    fn write(&mut self, buf: &[u8]) -> std::io::Result<usize> {
        self.0
            .lock()
            .unwrap()
            .push(String::from_utf8_lossy(buf).into_owned());
        Ok(buf.len())
    }
    fn flush(&mut self) -> std::io::Result<()> {
        Ok(())
    }
}

/// A migrated database ([`database`]) with an application role, `leader_app`, granted as the
/// README says (and the outbox), and that role's pool (through PgBouncer when the suite runs
/// through it).
pub async fn app_database() -> (TestDb, sqlx::PgPool) {
    let db = database().await;
    db.exec(
        "DO $$ BEGIN
             CREATE ROLE leader_app LOGIN;
         EXCEPTION WHEN duplicate_object OR unique_violation THEN NULL;
         END $$;
         SELECT leader_grant_app_role('leader_app');
         GRANT SELECT, UPDATE ON outbox TO leader_app;",
    )
    .await;
    let app = db.pool_as("leader_app", 4).await;
    (db, app)
}

/// A session of `leader_app` to PostgreSQL itself (an anchor never goes through a pooler),
/// anchored as `holder`.
pub async fn anchored(
    db: &TestDb,
    holder: &str,
) -> (sqlx::PgConnection, leader_runtime::protocol::lease::Anchor) {
    let direct = direct_as_app(db);
    let mut session = direct.connect(Duration::from_secs(3600)).await.unwrap();
    let timings = Timings::scaled_to_ttl(Duration::from_secs(3600)).unwrap();
    let anchor =
        leader_runtime::protocol::lease::Anchor::open(&mut session, holder, &direct, &timings)
            .await
            .expect("the anchor opens");
    (session, anchor)
}

/// The options of a direct connection of `leader_app` to PostgreSQL itself.
pub fn direct_as_app(db: &TestDb) -> leader_runtime::pooler::DirectOptions {
    use std::str::FromStr;
    leader_runtime::pooler::DirectOptions::new(
        sqlx::postgres::PgConnectOptions::from_str(&db.url())
            .unwrap()
            .username("leader_app"),
    )
}

/// Ends `anchor`'s session from the server's side and waits until its backend has exited.
pub async fn terminate(db: &TestDb, anchor: &leader_runtime::protocol::lease::Anchor) {
    let ended: bool = sqlx::query_scalar("SELECT pg_terminate_backend($1, 60000)")
        .bind(anchor.pid())
        .fetch_one(db.admin())
        .await
        .unwrap();
    assert!(ended, "the anchor's backend exits");
}
