//! The billing service against a real PostgreSQL: its five fenced funnels, three replicas
//! together, and a panic on one subscription.

use std::time::Duration;

use billing_demo::demo::{DemoConfig, Victim, run_demo};
use billing_demo::jobs;
use billing_demo::outbound::SendPoint;
use billing_demo::seed::{SeedSize, seed};
use billing_demo::store::Store;
use leader_runtime::protocol::lease::{self, Acquired};
use leader_runtime::{Fence, Role, Runtime, Shard, Timings};
use leader_testkit::TestDb;
use tokio_util::sync::CancellationToken;

async fn app_db() -> TestDb {
    let db = TestDb::unmigrated().await;
    billing_demo::MIGRATOR
        .run(db.admin())
        .await
        .expect("the app's migrations apply");
    db
}

/// A grant of `role`, or of its shard `shard` for a sharded role.
async fn grant(db: &TestDb, role: Role, shard: Option<Shard>) -> Fence {
    let wanted = lease::Wanted::every(role, Duration::from_millis(1));
    let wanted = match shard {
        Some(shard) => wanted.in_shard(shard),
        None => wanted,
    };
    match lease::acquire(db.pool(), &[wanted], "test", 1, &Timings::DEFAULT)
        .await
        .unwrap()
        .remove(0)
    {
        Acquired::Granted(grant) => grant.fence,
        Acquired::Refused(refusal) => panic!("{role}: {refusal:?}"),
    }
}

/// An old fence and the fence that superseded it.
async fn superseded_and_live(db: &TestDb, role: Role, shard: Option<Shard>) -> (Fence, Fence) {
    let old = grant(db, role, shard).await;
    sqlx::query(
        "UPDATE leader_leases SET expires_at = now() - interval '1 ms'
          WHERE role = $1 AND holder_id IS NOT NULL",
    )
    .bind(role)
    .execute(db.admin())
    .await
    .unwrap();
    let live = grant(db, role, shard).await;
    (old, live)
}

#[tokio::test]
async fn each_funnel_claims_nothing_with_a_superseded_fence_and_rows_with_the_live_one() {
    let db = app_db().await;
    seed(
        db.admin(),
        SeedSize {
            subscriptions: 50,
            webhooks: 50,
            emails: 50,
        },
    )
    .await
    .unwrap();
    db.exec(
        "UPDATE subscriptions SET billed_until = now() - interval '1 hour';
         INSERT INTO invoices (subscription_id, period_start, period_end, amount_cents)
              SELECT id, now() - interval '2 hours', now() - interval '1 hour', 100 FROM subscriptions WHERE id <= 5;
         INSERT INTO dunning_runs (invoice_id) SELECT id FROM invoices;
         INSERT INTO webhook_deliveries (outbox_id) SELECT id FROM webhook_outbox WHERE id <= 5;",
    )
    .await;
    let store = Store::new(db.pool().clone());
    type Claimed = usize;
    let funnels: [(Role, &str); 5] = [
        (jobs::BILLING, "due_subscriptions"),
        (jobs::DUNNING, "due_dunning_runs"),
        (jobs::WEBHOOK_OUTBOX, "claim_webhooks"),
        (jobs::EMAIL_OUTBOX, "claim_emails"),
        (jobs::WEBHOOK_DELIVERY, "due_deliveries"),
    ];
    // webhook_delivery has 8 shards: the shard of delivery 1 is tried.
    let delivery_shard: i32 = sqlx::query_scalar("SELECT leader_shard_of(1::bigint, 8)")
        .fetch_one(db.admin())
        .await
        .unwrap();
    let delivery_shard = Shard::new(u32::try_from(delivery_shard).unwrap(), 8).unwrap();
    for (role, funnel) in funnels {
        let shard = (role == jobs::WEBHOOK_DELIVERY).then_some(delivery_shard);
        let (old, live) = superseded_and_live(&db, role, shard).await;
        let claim = async |fence: Fence| -> Claimed {
            match funnel {
                "due_subscriptions" => store.due_subscriptions(fence, 10).await.unwrap().len(),
                "due_dunning_runs" => store.due_dunning_runs(fence, 10).await.unwrap().len(),
                "claim_webhooks" => store.claim_webhooks(fence, 10).await.unwrap().len(),
                "claim_emails" => store.claim_emails(&fence, 10).await.unwrap().len(),
                "due_deliveries" => {
                    let fence = fence.shard_fence().expect("webhook_delivery is sharded");
                    store.due_deliveries(fence, 10).await.unwrap().len()
                }
                other => unreachable!("{other}"),
            }
        };
        assert_eq!(
            claim(old).await,
            0,
            "{funnel}: a superseded fence claims nothing"
        );
        assert!(
            claim(live).await > 0,
            "{funnel}: the live fence claims rows"
        );
    }
}

#[tokio::test(flavor = "multi_thread", worker_threads = 4)]
async fn three_replicas_bill_each_period_and_dispatch_each_row_once() {
    let db = app_db().await;
    let options = db.admin().connect_options().as_ref().clone();
    let config = DemoConfig {
        replicas: 3,
        run_for: Duration::from_secs(10),
        drain_stall_limit: Duration::from_secs(10),
        timings: Timings::scaled_to_ttl(Duration::from_secs(2)).unwrap(),
        seed: SeedSize {
            subscriptions: 100,
            webhooks: 300,
            emails: 150,
        },
        kill_replicas: true,
        status_every: None,
        take_over: None,
    };
    let summary = run_demo(db.admin(), || options.clone(), &config)
        .await
        .unwrap();
    for line in summary.report.lines() {
        println!("{line}");
    }
    println!("{}; {:?}", summary.drained, summary.mail);
    assert!(summary.passed(), "{:#?}", summary.report);
    let mut victims: Vec<String> = summary.kills.iter().map(|k| k.victim.to_string()).collect();
    victims.sort();
    assert_eq!(
        victims,
        [
            Victim::Sending(SendPoint::AfterAccepted).to_string(),
            Victim::Sending(SendPoint::BeforeAccepted).to_string(),
            Victim::BillingLeader.to_string(),
        ],
        "each planned kill found its victim: {:#?}",
        summary.kills
    );
    // The kill after the provider accepted an email and before it was stamped sent leaves it
    // owed: the next leader sends it again, so the key check above compared a real repeat.
    assert!(
        summary.mail.repeats >= 1,
        "the email whose sender was killed after the provider accepted it was sent again: {:?}",
        summary.mail
    );
    assert!(
        summary.invoices >= 100,
        "every subscription billed: {}",
        summary.invoices
    );
    let multi_period = db.count("SELECT count(*) FROM (SELECT subscription_id FROM invoices GROUP BY 1 HAVING count(*) > 1) t").await;
    assert!(
        multi_period > 0,
        "many ticks: subscriptions were billed for several periods"
    );
    let replicas = db.count("SELECT count(DISTINCT holder_id) FROM (SELECT last_tick_holder AS holder_id FROM leader_leases) t").await;
    println!(
        "roles last completed by {replicas} distinct replica(s); kills {:?}",
        summary.kills
    );
}

#[tokio::test(flavor = "multi_thread", worker_threads = 4)]
async fn a_panicking_subscription_does_not_stop_the_others_and_is_retried_after_the_cooldown() {
    let db = app_db().await;
    seed(
        db.admin(),
        SeedSize {
            subscriptions: 20,
            webhooks: 0,
            emails: 0,
        },
    )
    .await
    .unwrap();
    db.exec(
        "UPDATE subscriptions SET billed_until = now() - interval '3610 seconds', period_secs = 3600;
         UPDATE subscriptions SET panic_on_bill = true WHERE id = 7;",
    )
    .await;
    let every = Duration::from_secs(2);
    let runtime = Runtime::builder(db.pool().clone())
        .timings(Timings::scaled_to_ttl(Duration::from_secs(2)).unwrap())
        .role(jobs::BILLING, every, jobs::bill)
        .build()
        .unwrap();
    let shutdown = CancellationToken::new();
    let handle = tokio::spawn(runtime.run_until_cancelled(shutdown.clone()));

    assert!(
        db.eventually(
            "SELECT count(*) FROM leader_leases WHERE role = 'billing' AND not_before IS NOT NULL",
            Duration::from_secs(20)
        )
        .await,
        "the billing tick never ended as panicked"
    );
    assert_eq!(
        db.count("SELECT count(*) FROM invoices").await,
        19,
        "the others were billed in the same tick"
    );
    assert_eq!(
        db.count("SELECT count(*) FROM invoices WHERE subscription_id = 7")
            .await,
        0
    );
    assert_eq!(
        db.count("SELECT count(*) FROM leader_leases WHERE role = 'billing' AND last_tick_ended_at IS NULL
                      AND not_before > now() + interval '1 second'").await,
        1,
        "released as panicked: no completion, a cooldown of one interval"
    );

    // The defect is fixed (here: the row); after the cooldown the subscription is billed.
    db.exec("UPDATE subscriptions SET panic_on_bill = false WHERE id = 7")
        .await;
    assert!(
        db.eventually(
            "SELECT count(*) FROM invoices WHERE subscription_id = 7",
            Duration::from_secs(20)
        )
        .await,
        "the subscription was not retried after the cooldown"
    );
    assert_eq!(db.count("SELECT count(*) FROM invoices").await, 20);
    shutdown.cancel();
    handle.await.unwrap().unwrap();
}

#[tokio::test]
async fn every_job_is_registered_by_its_attribute() {
    let db = app_db().await;
    let runtime = Runtime::builder(db.pool().clone())
        .registered_jobs()
        .build()
        .unwrap();
    let mut roles: Vec<(&str, String)> = runtime
        .jobs()
        .into_iter()
        .map(|job| (job.role.as_str(), job.schedule.to_string()))
        .collect();
    roles.sort();
    assert_eq!(
        roles,
        [
            (
                "billing",
                "cron \"* * * * * *\" in UTC, missed instants: each".to_owned()
            ),
            ("dunning", "every 1s".to_owned()),
            ("email_outbox", "every 200ms".to_owned()),
            ("webhook_delivery", "every 200ms".to_owned()),
            ("webhook_outbox", "every 200ms".to_owned()),
        ]
    );
    leader_runtime::schema::check_schema_ready(db.pool(), &runtime.roles())
        .await
        .unwrap();
}

#[test]
fn the_copied_framework_migrations_match_the_originals() {
    for file in leader_runtime::schema::MIGRATION_FILES {
        let name = file.name;
        let copy =
            std::fs::read_to_string(format!("{}/migrations/{name}", env!("CARGO_MANIFEST_DIR")))
                .unwrap_or_else(|e| {
                    panic!("examples/billing-demo/migrations/{name}: {e}: copy it from migrations/")
                });
        assert!(
            file.sql == copy,
            "examples/billing-demo/migrations/{name} differs from migrations/{name}: copy it again"
        );
    }
}

#[tokio::test]
async fn the_checks_tell_work_done_twice_from_work_left_undone() {
    use billing_demo::checks::{CHECKS, Kind, run_checks};
    let db = app_db().await;
    seed(
        db.admin(),
        SeedSize {
            subscriptions: 0,
            webhooks: 3,
            emails: 0,
        },
    )
    .await
    .unwrap();
    db.exec("INSERT INTO billing_cutoff (cutoff) VALUES (now())")
        .await;
    let report = run_checks(db.admin(), CHECKS).await.unwrap();
    assert!(report.passed(Kind::Safety), "{report:#?}");
    assert!(!report.passed(Kind::Liveness), "three rows left undone");

    // Everything done, once: both pass.
    db.exec(
        "UPDATE webhook_outbox SET dispatched_at = now();
         INSERT INTO webhook_deliveries (outbox_id, status) SELECT id, 'delivered' FROM webhook_outbox;",
    )
    .await;
    let report = run_checks(db.admin(), CHECKS).await.unwrap();
    assert!(report.all_passed(), "{report:#?}");

    // A lease stamped completed for a tick that never recorded its completion.
    db.exec("UPDATE leader_leases SET last_tick_ended_at = now() WHERE role = 'billing'")
        .await;
    let report = run_checks(db.admin(), CHECKS).await.unwrap();
    assert!(!report.passed(Kind::Safety), "{report:#?}");
    assert!(report.passed(Kind::Liveness), "{report:#?}");
    let failed: Vec<_> = report.checks.iter().filter(|c| !c.passed()).collect();
    assert_eq!(failed.len(), 1, "{failed:#?}");
    assert_eq!(
        failed[0].name,
        "no tick stamped completed that did not complete"
    );
}

#[tokio::test]
async fn the_shard_checks_compare_tokens_within_a_shard_and_find_a_row_of_another_shard() {
    use billing_demo::checks::{CHECKS, run_checks};
    let db = app_db().await;
    let failed = async || -> Vec<String> {
        run_checks(db.admin(), CHECKS)
            .await
            .unwrap()
            .checks
            .iter()
            .filter(|c| !c.passed() && c.name.contains("shard"))
            .map(|c| c.name.to_owned())
            .collect()
    };
    // Two shards of webhook_delivery lead at once, each with its own tokens (shard 1's lower
    // than shard 0's), each claiming its own shard's rows: no violation.
    db.exec(
        "INSERT INTO grants (role, token, holder, granted_at, shard_index, shard_count)
         VALUES ('webhook_delivery', 16, 'a', now() - interval '2 s', 0, 8),
                ('webhook_delivery', 9, 'b', now() - interval '1 s', 1, 8);
         INSERT INTO claims (role, token, row_ids, claimed_at, shard_index, shard_count)
         SELECT 'webhook_delivery', 16, ARRAY[id], now(), 0, 8
           FROM generate_series(1, 1000) id WHERE leader_shard_of(id, 8) = 0
          LIMIT 1;
         INSERT INTO claims (role, token, row_ids, claimed_at, shard_index, shard_count)
         SELECT 'webhook_delivery', 9, ARRAY[id], now(), 1, 8
           FROM generate_series(1, 1000) id WHERE leader_shard_of(id, 8) = 1
          LIMIT 1;",
    )
    .await;
    assert_eq!(failed().await, Vec::<String>::new());
    // Shard 1 claims a row of shard 2.
    db.exec(
        "INSERT INTO claims (role, token, row_ids, claimed_at, shard_index, shard_count)
         SELECT 'webhook_delivery', 9, ARRAY[id], now(), 1, 8
           FROM generate_series(1, 1000) id WHERE leader_shard_of(id, 8) = 2
          LIMIT 1;",
    )
    .await;
    assert_eq!(
        failed().await,
        ["a shard's claims returned only its shard's rows"]
    );
}

#[tokio::test]
async fn the_instant_checks_find_an_instant_completed_twice_early_or_skipped() {
    use billing_demo::checks::{CHECKS, run_checks};
    let db = app_db().await;
    let verdicts = |report: &billing_demo::checks::Report| -> Vec<(String, bool)> {
        report
            .checks
            .iter()
            .filter(|c| c.name.contains("scheduled billing instant"))
            .map(|c| (c.name.to_owned(), c.passed()))
            .collect()
    };
    // Three consecutive seconds, each completed once, granted after its instant.
    db.exec(
        "INSERT INTO instant_stamps (role, token, instant, granted_at)
         SELECT 'billing', g, t, t + interval '10 ms'
           FROM (SELECT g, timestamptz '2026-12-05 00:00:00+00' + g * interval '1 second' AS t
                   FROM generate_series(1, 3) g) s",
    )
    .await;
    let report = run_checks(db.admin(), CHECKS).await.unwrap();
    assert!(
        verdicts(&report).iter().all(|(_, passed)| *passed),
        "{report:#?}"
    );

    let failing = |report: &billing_demo::checks::Report| -> Vec<String> {
        verdicts(report)
            .into_iter()
            .filter(|(_, p)| !p)
            .map(|(n, _)| n)
            .collect()
    };
    const TWICE_OR_EARLY: &str =
        "no scheduled billing instant completed twice, or granted before it was due";
    const SKIPPED: &str =
        "no scheduled billing instant skipped (missed = each runs every one, in order)";
    // Each case: one more stamp (token, instant second, granted at), the check it must fail.
    let cases = [
        // The second instant completed again by a later token.
        (9, "00:00:02", "00:00:05", TWICE_OR_EARLY),
        // The fourth second granted before it came.
        (4, "00:00:04", "00:00:03.9", TWICE_OR_EARLY),
        // The fifth second completed with the fourth never completed.
        (5, "00:00:05", "00:00:05.1", SKIPPED),
    ];
    for (token, instant, granted_at, fails) in cases {
        sqlx::query(
            "INSERT INTO instant_stamps (role, token, instant, granted_at)
             VALUES ('billing', $1, ('2026-12-05 ' || $2 || '+00')::timestamptz,
                     ('2026-12-05 ' || $3 || '+00')::timestamptz)",
        )
        .bind(token)
        .bind(instant)
        .bind(granted_at)
        .execute(db.admin())
        .await
        .unwrap();
        let report = run_checks(db.admin(), CHECKS).await.unwrap();
        assert_eq!(failing(&report), [fails], "stamp {token} at {instant}");
        sqlx::query("DELETE FROM instant_stamps WHERE token = $1")
            .bind(token)
            .execute(db.admin())
            .await
            .unwrap();
    }
}

#[tokio::test]
async fn the_email_checks_find_a_lost_email_a_repeat_under_another_key_and_a_shared_key() {
    use billing_demo::checks::{CHECKS, run_checks};
    let db = app_db().await;
    seed(
        db.admin(),
        SeedSize {
            subscriptions: 0,
            webhooks: 0,
            emails: 2,
        },
    )
    .await
    .unwrap();
    db.exec("INSERT INTO billing_cutoff (cutoff) VALUES (now())")
        .await;
    let failing = async || -> Vec<String> {
        run_checks(db.admin(), CHECKS)
            .await
            .unwrap()
            .checks
            .iter()
            .filter(|c| !c.passed())
            .map(|c| c.name.to_owned())
            .collect()
    };
    const LOST: &str = "no email stamped sent that the provider never received (lost)";
    const KEYS: &str = "every repeated send of an email carries the key of its first send, and no two emails share a key";
    const DELIVERED: &str = "every email received by the provider and stamped sent";
    assert_eq!(failing().await, [DELIVERED], "two emails owed");

    // Each received once, then stamped sent; then email 1 sent again under its key (a retry
    // after a takeover): every check passes.
    db.exec(
        "INSERT INTO mailbox (email_id, idempotency_key, token) VALUES (1, 'email-1', 7), (2, 'email-2', 7);
         UPDATE email_outbox SET sent_at = now();
         INSERT INTO mailbox (email_id, idempotency_key, token) VALUES (1, 'email-1', 8);",
    )
    .await;
    assert_eq!(failing().await, Vec::<String>::new());

    // Each case: a change, the checks it must fail, and its undoing.
    let cases: [(&str, &[&str], &str); 3] = [
        // The repeat carries another key (one with its token): the provider delivers it twice.
        (
            "UPDATE mailbox SET idempotency_key = 'email-1-8' WHERE token = 8",
            &[KEYS],
            "UPDATE mailbox SET idempotency_key = 'email-1' WHERE token = 8",
        ),
        // Email 2 stamped sent but never received: marked before its send, which a kill cut.
        (
            "DELETE FROM mailbox WHERE email_id = 2",
            &[LOST, DELIVERED],
            "INSERT INTO mailbox (email_id, idempotency_key, token) VALUES (2, 'email-2', 7)",
        ),
        // Email 2 sent under email 1's key: the provider drops it as a repeat.
        (
            "UPDATE mailbox SET idempotency_key = 'email-1' WHERE email_id = 2",
            &[KEYS],
            "UPDATE mailbox SET idempotency_key = 'email-2' WHERE email_id = 2",
        ),
    ];
    for (change, fails, undo) in cases {
        db.exec(change).await;
        let mut expected: Vec<&str> = fails.to_vec();
        let mut found = failing().await;
        expected.sort();
        found.sort();
        assert_eq!(found, expected, "after {change}");
        db.exec(undo).await;
        assert_eq!(failing().await, Vec::<String>::new(), "after {undo}");
    }
}
