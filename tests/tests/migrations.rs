//! The framework's migrations as an application already running upgrades through them.

mod common;

use std::time::Duration;

use chrono::{DateTime, Utc};
use common::{ALPHA, FAST, ROLES_UP};
use leader_runtime::protocol::lease::{self, Acquired};
use leader_runtime::protocol::operator;
use leader_runtime::schema::{ExpectedRole, check_schema_ready};
use leader_testkit::TestDb;

const FIRST: &str = include_str!("../../migrations/20261201000000_leader_leases.up.sql");
const SECOND: &str = include_str!("../../migrations/20261202000000_leader_clear_cooldown.up.sql");
const THIRD: &str = include_str!("../../migrations/20261204000000_leader_pause_floor.up.sql");
const THIRD_DOWN: &str =
    include_str!("../../migrations/20261204000000_leader_pause_floor.down.sql");
const FOURTH: &str = include_str!("../../migrations/20261205000000_leader_schedules.up.sql");
const FOURTH_DOWN: &str = include_str!("../../migrations/20261205000000_leader_schedules.down.sql");
const FIFTH: &str = include_str!("../../migrations/20261206000000_leader_shards.up.sql");
const FIFTH_DOWN: &str = include_str!("../../migrations/20261206000000_leader_shards.down.sql");
const SIXTH: &str = include_str!("../../migrations/20261207000000_leader_presence.up.sql");
const SIXTH_DOWN: &str = include_str!("../../migrations/20261207000000_leader_presence.down.sql");
const EIGHTH: &str = include_str!("../../migrations/20261209000000_leader_anchors.up.sql");
const EIGHTH_DOWN: &str = include_str!("../../migrations/20261209000000_leader_anchors.down.sql");
const NAMES: &str = include_str!("../../migrations/20261208000000_leader_status_names.up.sql");
const PAUSE_NOTICE: &str =
    include_str!("../../migrations/20261209100000_leader_pause_notice.up.sql");
const PAUSE_NOTICE_DOWN: &str =
    include_str!("../../migrations/20261209100000_leader_pause_notice.down.sql");
const NINTH: &str = include_str!("../../migrations/20261211000000_leader_tick_history.up.sql");
const NINTH_DOWN: &str =
    include_str!("../../migrations/20261211000000_leader_tick_history.down.sql");

async fn app_role(db: &TestDb) -> sqlx::PgPool {
    db.exec(
        "DO $$ BEGIN
             CREATE ROLE leader_app LOGIN;
         EXCEPTION WHEN duplicate_object OR unique_violation THEN NULL;
         END $$;
         SELECT leader_grant_app_role('leader_app');",
    )
    .await;
    db.pool_as("leader_app", 1).await
}

/// A database that ran `migrations` (an application as an earlier version left it), and a pool
/// of an application role granted then.
async fn upgrading(migrations: &[&'static str]) -> (TestDb, sqlx::PgPool) {
    let db = TestDb::unmigrated().await;
    for migration in migrations {
        db.exec(migration).await;
    }
    let app = app_role(&db).await;
    (db, app)
}

/// Asserts that the schema check refused `err`, naming `object` out of date and `migration` as
/// the fix.
fn asks_for(err: leader_runtime::schema::SchemaError, object: &str, migration: &str) {
    let text = err.to_string();
    assert!(
        text.contains(&format!("{object} is out of date"))
            && text.contains(&format!("apply the framework migration {migration}")),
        "{text}"
    );
}

#[tokio::test]
async fn the_upgrade_grants_leader_clear_cooldown_to_app_roles_granted_before_it() {
    let db = TestDb::unmigrated().await;
    db.exec(FIRST).await;
    db.exec(ROLES_UP).await;
    let app = app_role(&db).await;
    db.exec("UPDATE leader_leases SET not_before = now() + interval '1 hour' WHERE role = 'alpha'")
        .await;
    db.exec(SECOND).await;
    operator::clear_cooldown(&app, "alpha", &FAST)
        .await
        .expect("the role granted before the upgrade may clear a cooldown after it");
    let cooling = db
        .count("SELECT count(*) FROM leader_leases WHERE not_before IS NOT NULL")
        .await;
    assert_eq!(cooling, 0);
    let public = db
        .count(
            "SELECT count(*) FROM pg_proc p, aclexplode(p.proacl) a
              WHERE p.oid = 'leader_clear_cooldown(text)'::regprocedure AND a.grantee = 0",
        )
        .await;
    assert_eq!(public, 0, "PUBLIC may not execute it");
}

/// ALPHA granted to `app` (which must find it claimable), then paused by `app`: the lease's
/// expiry and the `not_before` the pause left.
async fn pause_held(db: &TestDb, app: &sqlx::PgPool) -> (DateTime<Utc>, Option<DateTime<Utc>>) {
    let Acquired::Granted(grant) =
        lease::acquire_one(app, ALPHA, "held", Duration::from_millis(1), &FAST)
            .await
            .unwrap()
    else {
        panic!("alpha is claimable");
    };
    operator::pause(app, "alpha", "ops", None, &FAST)
        .await
        .unwrap();
    let not_before: Option<DateTime<Utc>> =
        sqlx::query_scalar("SELECT not_before FROM leader_leases WHERE role = 'alpha'")
            .fetch_one(db.admin())
            .await
            .unwrap();
    operator::unpause(app, "alpha", &FAST).await.unwrap();
    operator::clear_cooldown(app, "alpha", &FAST).await.unwrap();
    (grant.expires_at, not_before)
}

#[tokio::test]
async fn the_pause_floor_upgrade_keeps_leader_pauses_grants_and_the_schema_check_asks_for_it() {
    let db = TestDb::unmigrated().await;
    db.exec(FIRST).await;
    db.exec(SECOND).await;
    // The lease statements of this version need the fourth, fifth and sixth migrations' objects;
    // they touch nothing the third changes, so they can run first here.
    db.exec(FOURTH).await;
    db.exec(FIFTH).await;
    db.exec(SIXTH).await;
    db.exec(EIGHTH).await;
    db.exec(NINTH).await;
    db.exec(ROLES_UP).await;
    let app = app_role(&db).await;
    let before = |err| {
        asks_for(
            err,
            "function leader_pause(text, text, text)",
            "20261204000000_leader_pause_floor.up.sql",
        );
    };
    before(check_schema_ready(&app, &[ALPHA]).await.unwrap_err());
    assert_eq!(pause_held(&db, &app).await.1, None, "no floor before it");

    db.exec(THIRD).await;
    db.exec(PAUSE_NOTICE).await;
    check_schema_ready(&app, &[ALPHA])
        .await
        .expect("the schema check passes once it ran");
    let (expires_at, floor) = pause_held(&db, &app).await;
    assert_eq!(
        floor,
        Some(expires_at),
        "the role granted before the upgrade may still pause, and the pause sets the floor"
    );
    let public = db
        .count(
            "SELECT count(*) FROM pg_proc p, aclexplode(p.proacl) a
              WHERE p.oid = 'leader_pause(text, text, text)'::regprocedure AND a.grantee = 0",
        )
        .await;
    assert_eq!(public, 0, "PUBLIC still may not execute it");

    db.exec(THIRD_DOWN).await;
    before(check_schema_ready(&app, &[ALPHA]).await.unwrap_err());
    assert_eq!(
        pause_held(&db, &app).await.1,
        None,
        "the down migration restores the pause without a floor, still granted"
    );
    db.exec(THIRD).await;
    db.exec(PAUSE_NOTICE).await;
    check_schema_ready(&app, &[ALPHA]).await.unwrap();
}

#[tokio::test]
async fn the_schedules_upgrade_keeps_leader_status_readable_and_the_schema_check_asks_for_it() {
    let (db, app) = upgrading(&[FIRST, SECOND, THIRD, ROLES_UP]).await;
    let out_of_date = |err| {
        asks_for(
            err,
            "table leader_leases",
            "20261205000000_leader_schedules.up.sql",
        )
    };
    out_of_date(check_schema_ready(&app, &[ALPHA]).await.unwrap_err());

    db.exec(FOURTH).await;
    // The lease statements of this version need the fifth and sixth migrations' objects too.
    db.exec(FIFTH).await;
    db.exec(SIXTH).await;
    db.exec(EIGHTH).await;
    db.exec(PAUSE_NOTICE).await;
    db.exec(NINTH).await;
    check_schema_ready(&app, &[ALPHA])
        .await
        .expect("the schema check passes once it ran");
    let cron = leader_runtime::schedule::CronSchedule::new("*/2 * * * * *", "UTC").unwrap();
    let now: DateTime<Utc> = sqlx::query_scalar("SELECT now()")
        .fetch_one(db.admin())
        .await
        .unwrap();
    let planned = cron.plan(None, now).unwrap();
    let wanted = [lease::Wanted::instant(ALPHA, &cron, Some(&planned))];
    let granted = lease::acquire(&app, &wanted, "app", 1, &FAST)
        .await
        .unwrap();
    assert!(matches!(granted[0], Acquired::Granted(_)), "{granted:?}");
    let next: Option<DateTime<Utc>> =
        sqlx::query_scalar("SELECT next_instant FROM leader_status WHERE role = 'alpha'")
            .fetch_one(&app)
            .await
            .expect("the role granted before the upgrade still reads leader_status");
    assert_eq!(
        next,
        Some(planned.instant),
        "the instant in progress is the next one"
    );

    db.exec(NINTH_DOWN).await;

    db.exec(EIGHTH_DOWN).await;
    db.exec(SIXTH_DOWN).await;
    db.exec(FIFTH_DOWN).await;
    db.exec(FOURTH_DOWN).await;
    out_of_date(check_schema_ready(db.admin(), &[ALPHA]).await.unwrap_err());
    db.exec(FOURTH).await;
    db.exec(FIFTH).await;
    db.exec(SIXTH).await;
    db.exec(EIGHTH).await;
    db.exec(PAUSE_NOTICE).await;
    db.exec(NINTH).await;
    check_schema_ready(db.admin(), &[ALPHA]).await.unwrap();
}

/// Whether `leader_fence(role, token)` holds for `fence`, as `app` sees it.
async fn two_argument_fence(app: &sqlx::PgPool, fence: leader_runtime::Fence) -> bool {
    sqlx::query_scalar("SELECT leader_fence($1, $2)")
        .bind(fence.role())
        .bind(fence.token())
        .fetch_one(app)
        .await
        .unwrap()
}

#[tokio::test]
async fn the_shards_upgrade_keeps_seeding_grants_and_the_fence_and_the_schema_check_asks_for_it() {
    let (db, app) = upgrading(&[FIRST, SECOND, THIRD, FOURTH, ROLES_UP]).await;
    let out_of_date = |err| {
        asks_for(
            err,
            "table leader_leases",
            "20261206000000_leader_shards.up.sql",
        )
    };
    out_of_date(check_schema_ready(&app, &[ALPHA]).await.unwrap_err());

    db.exec(FIFTH).await;
    db.exec(SIXTH).await;
    db.exec(EIGHTH).await;
    db.exec(PAUSE_NOTICE).await;
    db.exec(NINTH).await;
    check_schema_ready(&app, &[ALPHA])
        .await
        .expect("the schema check passes once it ran");
    // An application's roles migration dated after this one still seeds with ON CONFLICT (role).
    db.exec(
        "INSERT INTO leader_leases (role, holder_token) VALUES ('beta', leader_seed_token())
         ON CONFLICT (role) DO NOTHING",
    )
    .await;
    let Acquired::Granted(grant) =
        lease::acquire_one(&app, ALPHA, "app", Duration::from_millis(1), &FAST)
            .await
            .unwrap()
    else {
        panic!("alpha is claimable");
    };
    assert_eq!(grant.fence.shard(), None);
    assert!(
        two_argument_fence(&app, grant.fence).await,
        "an unsharded role's fence holds as before, for the role granted before the upgrade"
    );
    let four: bool = sqlx::query_scalar("SELECT leader_fence('alpha', 0, 1, $1)")
        .bind(grant.fence.token())
        .fetch_one(&app)
        .await
        .expect("the role granted before the upgrade may call the sharded fence");
    assert!(four, "an unsharded role is its shard 0 of 1");

    db.exec("SELECT leader_reshard('alpha', 4)").await;
    assert!(
        !two_argument_fence(&app, grant.fence).await,
        "a fence from before the role was sharded claims nothing after"
    );
    check_schema_ready(&app, &[ALPHA])
        .await
        .expect("a role without a count in code accepts any (leaderctl check)");
    let text = check_schema_ready(&app, &[ExpectedRole::sharded(ALPHA, 1)])
        .await
        .unwrap_err()
        .to_string();
    assert!(
        text.contains("role `alpha` has 4 shard(s) in leader_leases but the code leads it with 1")
            && text.contains("SELECT leader_reshard('alpha', 1)"),
        "{text}"
    );
    let refused = sqlx::raw_sql(FIFTH_DOWN).execute(db.admin()).await;
    assert!(
        refused.is_err_and(|e| e.to_string().contains("a role is still sharded")),
        "the down migration refuses while a role is sharded"
    );

    db.exec("SELECT leader_reshard('alpha', 1)").await;
    check_schema_ready(&app, &[ExpectedRole::sharded(ALPHA, 1)])
        .await
        .unwrap();
    db.exec(NINTH_DOWN).await;
    db.exec(EIGHTH_DOWN).await;
    db.exec(SIXTH_DOWN).await;
    db.exec(FIFTH_DOWN).await;
    out_of_date(check_schema_ready(&app, &[ALPHA]).await.unwrap_err());
    db.exec(FIFTH).await;
    db.exec(SIXTH).await;
    db.exec(EIGHTH).await;
    db.exec(PAUSE_NOTICE).await;
    db.exec(NINTH).await;
    check_schema_ready(&app, &[ALPHA])
        .await
        .expect("the app role keeps its grants across down and up");
}

#[tokio::test]
async fn the_presence_upgrade_grants_the_table_and_the_shard_pause_and_the_schema_check_asks_for_it()
 {
    let (db, app) = upgrading(&[FIRST, SECOND, THIRD, FOURTH, FIFTH, ROLES_UP]).await;
    let out_of_date = |err| {
        asks_for(
            err,
            "table leader_presence",
            "20261207000000_leader_presence.up.sql",
        )
    };
    out_of_date(check_schema_ready(&app, &[ALPHA]).await.unwrap_err());

    db.exec(SIXTH).await;
    db.exec(EIGHTH).await;
    db.exec(PAUSE_NOTICE).await;
    db.exec(NINTH).await;
    db.exec("SELECT leader_reshard('alpha', 2)").await;
    check_schema_ready(&app, &[ExpectedRole::sharded(ALPHA, 2)])
        .await
        .expect("the schema check passes once it ran");
    let shard = leader_runtime::Shard::new(1, 2).unwrap();
    let wanted = [lease::Wanted::every(ALPHA, Duration::from_millis(1)).in_shard(shard)];
    let granted = lease::acquire(&app, &wanted, "app", 1, &FAST)
        .await
        .expect("the role granted before the upgrade records its presence");
    assert!(matches!(granted[0], Acquired::Granted(_)), "{granted:?}");
    assert_eq!(
        db.count("SELECT count(*) FROM leader_presence WHERE holder_id = 'app'")
            .await,
        1
    );
    sqlx::query("SELECT leader_pause_shard('alpha', 1, 'ops')")
        .execute(&app)
        .await
        .expect("and may pause one shard");
    let paused = db
        .count("SELECT count(*) FROM leader_status WHERE role = 'alpha' AND state = 'paused'")
        .await;
    assert_eq!(paused, 1, "only that shard");
    sqlx::query("SELECT leader_unpause_shard('alpha', 1)")
        .execute(&app)
        .await
        .expect("and unpause it");
    let public = db
        .count(
            "SELECT count(*) FROM pg_proc p, aclexplode(p.proacl) a
              WHERE p.oid = 'leader_pause_shard(text, integer, text, text)'::regprocedure
                AND a.grantee = 0",
        )
        .await;
    assert_eq!(public, 0, "PUBLIC may not execute it");

    db.exec(NINTH_DOWN).await;

    db.exec(EIGHTH_DOWN).await;
    db.exec(SIXTH_DOWN).await;
    out_of_date(check_schema_ready(&app, &[ALPHA]).await.unwrap_err());
    db.exec(SIXTH).await;
    db.exec(EIGHTH).await;
    db.exec(PAUSE_NOTICE).await;
    db.exec(NINTH).await;
    check_schema_ready(&app, &[ALPHA])
        .await
        .expect("the app role keeps its grants across down and up");
    lease::acquire(&app, &wanted, "app", 1, &FAST)
        .await
        .expect("and may still record its presence");
}

#[tokio::test]
async fn the_anchors_upgrade_keeps_grants_and_a_lease_held_across_it_and_the_schema_check_asks_for_it()
 {
    let (db, app) = upgrading(&[FIRST, SECOND, THIRD, FOURTH, FIFTH, SIXTH, ROLES_UP]).await;
    let out_of_date = |err| {
        asks_for(
            err,
            "tables leader_leases and leader_presence",
            "20261209000000_leader_anchors.up.sql",
        )
    };
    out_of_date(check_schema_ready(&app, &[ALPHA]).await.unwrap_err());
    // A lease granted before the upgrade records no anchor: only its expiry frees it.
    let held = db
        .count(
            "WITH held AS (UPDATE leader_leases SET holder_id = 'old', acquired_at = now(),
                                                    expires_at = now() + interval '1 hour'
                            WHERE role = 'alpha' RETURNING 1)
             SELECT count(*) FROM held",
        )
        .await;
    assert_eq!(held, 1);

    db.exec(EIGHTH).await;

    db.exec(PAUSE_NOTICE).await;
    db.exec(NINTH).await;
    check_schema_ready(&app, &[ALPHA])
        .await
        .expect("the schema check passes once it ran");
    let wanted = [lease::Wanted::every(ALPHA, Duration::from_millis(1))];
    let answer = lease::acquire(&app, &wanted, "app", 1, &FAST)
        .await
        .expect("the role granted before the upgrade may still ACQUIRE");
    assert!(
        matches!(&answer[0], Acquired::Refused(r) if r.reason == lease::RefusalReason::Held),
        "{answer:?}"
    );

    db.exec(NINTH_DOWN).await;

    db.exec(EIGHTH_DOWN).await;
    out_of_date(check_schema_ready(&app, &[ALPHA]).await.unwrap_err());
    db.exec(EIGHTH).await;
    db.exec(PAUSE_NOTICE).await;
    db.exec(NINTH).await;
    check_schema_ready(&app, &[ALPHA])
        .await
        .expect("the app role keeps its grants across down and up");
}

#[tokio::test]
async fn the_tick_history_upgrade_keeps_grants_and_a_lease_held_across_it_and_the_schema_check_asks_for_it()
 {
    let (db, app) = upgrading(&[
        FIRST,
        SECOND,
        THIRD,
        FOURTH,
        FIFTH,
        SIXTH,
        NAMES,
        EIGHTH,
        PAUSE_NOTICE,
        ROLES_UP,
    ])
    .await;
    let out_of_date = |err| {
        asks_for(
            err,
            "table leader_tick_history",
            "20261211000000_leader_tick_history.up.sql",
        )
    };
    out_of_date(check_schema_ready(&app, &[ALPHA]).await.unwrap_err());
    // A lease granted before the upgrade has no slot in the history.
    let wanted = [lease::Wanted::every(ALPHA, Duration::from_millis(1))];
    db.exec(NINTH).await;
    check_schema_ready(&app, &[ALPHA])
        .await
        .expect("the schema check passes once it ran");
    db.exec(NINTH_DOWN).await;
    out_of_date(check_schema_ready(&app, &[ALPHA]).await.unwrap_err());
    let before = match lease::acquire(&app, &wanted, "app", 1, &FAST).await {
        Err(_) => {
            // The lease statements of this version need the history: grant by hand, as an
            // earlier version's ACQUIRE would have.
            db.exec(
                "UPDATE leader_leases SET holder_id = 'old', acquired_at = now(),
                        expires_at = now() + interval '1 hour', holder_token = holder_token + 1
                  WHERE role = 'alpha'",
            )
            .await;
            sqlx::query_scalar::<_, i64>(
                "SELECT holder_token FROM leader_leases WHERE role = 'alpha'",
            )
            .fetch_one(db.admin())
            .await
            .unwrap()
        }
        Ok(answer) => panic!("ACQUIRE needs the history table: {answer:?}"),
    };

    db.exec(NINTH).await;
    let fence = leader_runtime::Fence::forge(ALPHA, before);
    let released = lease::release(
        &app,
        fence,
        leader_runtime::protocol::ReleaseOutcome::Completed,
        Duration::from_millis(1),
        &FAST,
    )
    .await
    .expect("the app role granted before the upgrade may release a lease granted before it");
    assert!(released.changed);
    assert_eq!(
        db.count("SELECT count(*) FROM leader_tick_history").await,
        0
    );
    db.exec("UPDATE leader_leases SET last_tick_ended_at = NULL WHERE role = 'alpha'")
        .await;
    let answer = lease::acquire(&app, &wanted, "app", 1, &FAST)
        .await
        .expect("and ACQUIRE, which writes the history, with the grant the upgrade re-ran");
    assert!(matches!(&answer[0], Acquired::Granted(_)), "{answer:?}");
    assert_eq!(
        db.count(
            "SELECT count(*) FROM leader_tick_history WHERE tick_number = 1 AND holder_id = 'app'"
        )
        .await,
        1
    );
}

/// The payload of the next notice `listener` hears; the bound only turns a lost notice's hang into
/// a failure (a sent notice is in the socket before the pause returns).
async fn heard(listener: &mut sqlx::postgres::PgListener) -> String {
    let notice = tokio::time::timeout(Duration::from_secs(60), listener.recv())
        .await
        .expect("the pause was notified")
        .unwrap();
    notice.payload().to_owned()
}

#[tokio::test]
async fn the_pause_notice_upgrade_notifies_each_pause_keeps_the_grants_and_the_schema_check_asks_for_it()
 {
    let (db, app) = upgrading(&[
        FIRST, SECOND, THIRD, FOURTH, FIFTH, SIXTH, NAMES, EIGHTH, NINTH, ROLES_UP,
    ])
    .await;
    let out_of_date = |err| {
        asks_for(
            err,
            "function leader_pause(text, text, text)",
            "20261209100000_leader_pause_notice.up.sql",
        )
    };
    out_of_date(check_schema_ready(&app, &[ALPHA]).await.unwrap_err());

    db.exec(PAUSE_NOTICE).await;
    check_schema_ready(&app, &[ALPHA])
        .await
        .expect("the schema check passes once it ran");
    let mut listener = sqlx::postgres::PgListener::connect(&db.url())
        .await
        .unwrap();
    listener.listen("leader_paused").await.unwrap();
    // The role granted before the upgrade may still pause, and the pause is heard: its notice
    // is sent at the pause's commit, before `pause` returns.
    operator::pause(&app, "alpha", "ops", None, &FAST)
        .await
        .unwrap();
    assert_eq!(heard(&mut listener).await, "alpha");
    operator::unpause(&app, "alpha", &FAST).await.unwrap();
    operator::pause_shard(&app, "alpha", 0, "ops", None, &FAST)
        .await
        .unwrap();
    assert_eq!(
        heard(&mut listener).await,
        "alpha",
        "a shard's pause names its role"
    );

    db.exec(PAUSE_NOTICE_DOWN).await;
    out_of_date(check_schema_ready(&app, &[ALPHA]).await.unwrap_err());
    db.exec(PAUSE_NOTICE).await;
    check_schema_ready(&app, &[ALPHA]).await.unwrap();
}
