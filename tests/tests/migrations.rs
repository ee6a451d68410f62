//! The framework's migrations as an application already running upgrades through them.

mod common;

use common::{FAST, ROLES_UP};
use leader_runtime::lease;
use leader_testkit::TestDb;

const FIRST: &str = include_str!("../../migrations/20261201000000_leader_leases.up.sql");
const SECOND: &str = include_str!("../../migrations/20261202000000_leader_clear_cooldown.up.sql");

#[tokio::test]
async fn the_upgrade_grants_leader_clear_cooldown_to_app_roles_granted_before_it() {
    let db = TestDb::unmigrated().await;
    db.exec(FIRST).await;
    db.exec(ROLES_UP).await;
    db.exec(
        "DO $$ BEGIN
             CREATE ROLE leader_app LOGIN;
         EXCEPTION WHEN duplicate_object OR unique_violation THEN NULL;
         END $$;
         SELECT leader_grant_app_role('leader_app');
         UPDATE leader_leases SET not_before = now() + interval '1 hour' WHERE role = 'alpha';",
    )
    .await;
    db.exec(SECOND).await;
    let app = db.pool_as("leader_app", 1).await;
    lease::clear_cooldown(&app, "alpha", &FAST)
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
