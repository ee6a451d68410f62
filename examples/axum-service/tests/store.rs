//! The store against PostgreSQL: each claim funnel claims nothing with a superseded fence and
//! claims with the live one, and each completion applies once.

use std::time::Duration;

use axum_service::jobs::{DAILY_REPORT, EMAIL_OUTBOX};
use axum_service::store::{NewEmail, Store};
use leader_runtime::protocol::lease::{self, Acquired};
use leader_runtime::{Fence, Role, Timings};
use leader_testkit::TestDb;

async fn app_db() -> TestDb {
    let db = TestDb::unmigrated().await;
    axum_service::MIGRATOR
        .run(db.admin())
        .await
        .expect("the service's migrations apply");
    db
}

async fn grant(db: &TestDb, role: Role) -> Fence {
    let every = Duration::from_millis(1);
    match lease::acquire_one(db.pool(), role, "test", every, &Timings::DEFAULT)
        .await
        .unwrap()
    {
        Acquired::Granted(grant) => grant.fence,
        Acquired::Refused(refusal) => panic!("{role}: {refusal:?}"),
    }
}

/// An old fence of `role` and the fence that superseded it (the old lease expired).
async fn superseded_and_live(db: &TestDb, role: Role) -> (Fence, Fence) {
    let old = grant(db, role).await;
    sqlx::query("UPDATE leader_leases SET expires_at = now() - interval '1 ms' WHERE role = $1")
        .bind(role)
        .execute(db.admin())
        .await
        .unwrap();
    (old, grant(db, role).await)
}

#[tokio::test]
async fn the_outbox_funnel_claims_nothing_for_a_superseded_leader_and_each_email_is_sent_once() {
    let db = app_db().await;
    let store = Store::new(db.pool().clone());
    for i in 0..3 {
        let email = NewEmail {
            to: format!("user{i}@example.com"),
            subject: "hello".into(),
            body: String::new(),
        };
        store.enqueue(&email).await.unwrap();
    }
    let (old, live) = superseded_and_live(&db, EMAIL_OUTBOX).await;
    assert!(store.claim_emails(old, 10).await.unwrap().is_empty());
    assert_eq!(
        db.count("SELECT count(*) FROM emails WHERE claimed_token IS NOT NULL")
            .await,
        0,
        "a superseded leader stamps nothing"
    );
    let claimed = store.claim_emails(live, 10).await.unwrap();
    assert_eq!(claimed.len(), 3);
    let email = &claimed[0];
    assert!(
        !store.mark_sent(email, old, "old").await.unwrap(),
        "only the claiming token completes"
    );
    assert!(store.mark_sent(email, live, "live").await.unwrap());
    assert!(
        !store.mark_sent(email, live, "live").await.unwrap(),
        "a second completion sends nothing"
    );
    assert_eq!(
        db.count("SELECT count(*) FROM email_deliveries").await,
        1,
        "one delivery"
    );
}

#[tokio::test]
async fn the_report_funnel_claims_nothing_for_a_superseded_leader_and_each_report_is_written_once()
{
    let db = app_db().await;
    let store = Store::new(db.pool().clone());
    db.exec(
        "INSERT INTO emails (recipient, subject, body, sent_at, sent_by)
         VALUES ('a@example.com', 's', '', now(), 'r'), ('b@example.com', 's', '', NULL, NULL)",
    )
    .await;
    let (old, live) = superseded_and_live(&db, DAILY_REPORT).await;
    assert_eq!(store.claim_report(old).await.unwrap(), None);
    let written = store.claim_report(live).await.unwrap();
    assert_eq!(written, Some(0));
    assert_eq!(
        store.write_report(0, live, "r").await.unwrap(),
        Some(1),
        "the one sent email is counted"
    );
    assert_eq!(
        store.write_report(0, live, "r").await.unwrap(),
        None,
        "a second write from the same read writes nothing"
    );
    assert_eq!(
        db.count("SELECT count(*) FROM email_reports").await,
        1,
        "one report"
    );
    assert_eq!(
        db.count("SELECT count(*) FROM emails WHERE reported_in = 1")
            .await,
        1,
        "the sent email is stamped with its report, the unsent one is not"
    );
}
