//! The SQL `#[fenced]` accepts really is fenced: every claim statement of every accepted
//! `ui-tests/pass` case and of every fenced funnel of the reference application runs against
//! PostgreSQL twice, each time in a transaction that is rolled back: with a superseded token it
//! returns, changes and locks no row; with the live token it claims rows. A shard's claim runs
//! on a role of two shards, for shard 0: also with shard 1's live token (nothing), and with the
//! live token it returns only rows of shard 0.
//!
//! The statements are read from the sources (string literals of `#[fenced]` functions that parse
//! as SQL), so a new accepted case without a table set-up here fails this test.

mod common;

use std::path::{Path, PathBuf};
use std::time::Duration;

use common::*;
use leader_runtime::protocol::lease::{self, Acquired};
use leader_runtime::{Fence, Role, Shard};
use leader_testkit::TestDb;
use sqlx::{Connection, Row};
use syn::visit::{self, Visit};

/// A claim statement and where it was found.
struct Found {
    sql: String,
    file: PathBuf,
}

impl Found {
    /// The claim checked as `#[fenced]` checks it: with the prepared schema of the crate it is
    /// in (`leader-schema.json`, checked against the crate's migrations).
    fn check(&self) -> leader_fence_check::Checked {
        let crate_dir = self
            .file
            .ancestors()
            .find(|dir| dir.join("Cargo.toml").is_file())
            .expect("a source file is inside a crate");
        let prepared = leader_schema::load(crate_dir)
            .unwrap_or_else(|e| panic!("{}: {e}", crate_dir.display()));
        let schema = leader_fence_check::Schema::new(prepared, crate_dir.display().to_string());
        leader_fence_check::check_with(
            &self.sql,
            &leader_fence_check::Hints::default().with_schema(&schema),
        )
    }
}

/// How to run the claims that contain `marker`: the tables to make, and the values of the
/// placeholders that are not the fence's.
struct Case {
    marker: &'static str,
    setup: &'static str,
    tables: &'static [&'static str],
    params: &'static [(usize, i64)],
}

const OUTBOX: &str = "CREATE TABLE outbox (id bigserial PRIMARY KEY, status text NOT NULL);
    INSERT INTO outbox (status) SELECT 'pending' FROM generate_series(1, 20);";
const INVOICES: &str = "CREATE TABLE invoices (id bigserial PRIMARY KEY, state text NOT NULL);
    INSERT INTO invoices (state) SELECT 'due' FROM generate_series(1, 5);";
const DUE_JOBS: &str = "CREATE TABLE jobs (id bigserial PRIMARY KEY, due timestamptz NOT NULL,
        done boolean NOT NULL);
    INSERT INTO jobs (due, done) SELECT now() - interval '1 hour', i % 2 = 0
      FROM generate_series(1, 10) i;";
const WEBHOOKS: &str = "CREATE TABLE webhooks (id bigserial PRIMARY KEY, status text NOT NULL);
    INSERT INTO webhooks (status) SELECT 'pending' FROM generate_series(1, 5);";
const TENANT_JOBS: &str = "CREATE TABLE tenants (id bigint PRIMARY KEY, active boolean NOT NULL);
    CREATE TABLE jobs (id bigserial PRIMARY KEY, tenant_id bigint NOT NULL REFERENCES tenants);
    INSERT INTO tenants VALUES (1, true), (2, false);
    INSERT INTO jobs (tenant_id) SELECT 1 + i % 2 FROM generate_series(1, 10) i;";
const OWNED_JOBS: &str = "CREATE TABLE jobs (id bigserial PRIMARY KEY, owner_token bigint);
    INSERT INTO jobs (owner_token) SELECT NULL FROM generate_series(1, 5);";
const RUN_JOBS: &str = "CREATE TABLE jobs (id bigserial PRIMARY KEY, due timestamptz NOT NULL,
        runs integer NOT NULL DEFAULT 0);
    CREATE TABLE runs (job_id bigint NOT NULL, started_at timestamptz);
    INSERT INTO jobs (due) SELECT now() - interval '1 hour' FROM generate_series(1, 5);
    INSERT INTO runs (job_id) VALUES (1), (2);";
const QUEUE: &str = "CREATE TABLE queue (id bigserial PRIMARY KEY, taken_by bigint);
    INSERT INTO queue (taken_by) SELECT NULL FROM generate_series(1, 5);";
const WEBHOOK_QUEUE: &str =
    "CREATE TABLE webhook_queue (id bigserial PRIMARY KEY, taken_by bigint);
    INSERT INTO webhook_queue (taken_by) SELECT NULL FROM generate_series(1, 20);";
const BATCHES: &str = "CREATE TABLE queue (id bigserial PRIMARY KEY, taken_by bigint);
    CREATE TABLE batches (id bigserial PRIMARY KEY, size bigint NOT NULL);
    INSERT INTO queue (taken_by) SELECT NULL FROM generate_series(1, 5);";
const TASKS: &str = "CREATE TABLE tasks (id bigserial PRIMARY KEY);
    INSERT INTO tasks SELECT FROM generate_series(1, 5);";
const TAKEN_JOBS: &str = "CREATE TABLE jobs (id bigserial PRIMARY KEY,
        taken boolean NOT NULL DEFAULT false);
    INSERT INTO jobs SELECT FROM generate_series(1, 5);";
const SEND_FORMS: &str = "CREATE TABLE send_forms (id bigserial PRIMARY KEY,
        taken boolean NOT NULL);
    INSERT INTO send_forms (taken) SELECT i % 2 = 0 FROM generate_series(1, 10) i;";
const BILLING: &str = concat!(
    include_str!("../../examples/billing-demo/migrations/20261201000200_billing.up.sql"),
    "
    INSERT INTO subscriptions (customer, amount_cents, period_secs, billed_until)
    SELECT 'c' || i, 100, 60, now() - interval '1 hour' FROM generate_series(1, 5) i;
    INSERT INTO invoices (subscription_id, period_start, period_end, amount_cents)
    SELECT id, billed_until, billed_until + interval '1 minute', 100 FROM subscriptions;
    INSERT INTO dunning_runs (invoice_id, next_attempt_at)
    SELECT id, now() - interval '1 minute' FROM invoices;
    INSERT INTO webhook_outbox (event, payload) SELECT 'e', 'p' FROM generate_series(1, 5);
    INSERT INTO email_outbox (recipient, subject) SELECT 'r', 's' FROM generate_series(1, 5);
    INSERT INTO webhook_deliveries (outbox_id, next_retry_at)
    SELECT id, now() - interval '1 minute' FROM webhook_outbox;"
);
const BILLING_TABLES: &[&str] = &[
    "subscriptions",
    "invoices",
    "dunning_runs",
    "webhook_outbox",
    "email_outbox",
    "webhook_deliveries",
];

/// The tables and function of `ui-tests/migrations/0004_tables.sql` and
/// `ui-tests/leader-tables.sql`, seeded so that each claim on them claims rows live.
const SCHEMA_TABLES: &str = "CREATE TABLE jobs (id bigint PRIMARY KEY, owner text,
        runs int NOT NULL DEFAULT 0, due timestamptz);
    CREATE TABLE runs (job_id bigint NOT NULL, started_at timestamptz);
    CREATE TABLE batch (id bigint NOT NULL);
    CREATE TABLE notes (job_id bigint NOT NULL);
    CREATE FUNCTION note_claimed(bigint) RETURNS bigint LANGUAGE sql
        AS $$ INSERT INTO notes VALUES ($1) RETURNING job_id $$;
    CREATE SCHEMA audit;
    CREATE TABLE audit.events (id bigint, seen boolean);
    INSERT INTO jobs (id, due) SELECT i, now() - interval '1 hour' FROM generate_series(1, 5) i;
    INSERT INTO runs (job_id) VALUES (1), (2);
    INSERT INTO batch VALUES (1), (3);
    INSERT INTO audit.events VALUES (1, false), (3, false);";
const SCHEMA_TABLE_NAMES: &[&str] = &["jobs", "runs", "batch", "notes", "audit.events"];

/// `ui-tests`' own migrations (its roles aside: the test's role is `alpha`) and
/// `leader-tables.sql`, as `leaderctl schema prepare` applied them for its `leader-schema.json`,
/// seeded so that each claim on them claims rows live.
const UI_SCHEMA: &str = concat!(
    include_str!("../../ui-tests/migrations/0004_tables.sql"),
    include_str!("../../ui-tests/migrations/0006_audit_triggers.sql"),
    include_str!("../../ui-tests/migrations/0007_history.sql"),
    include_str!("../../ui-tests/migrations/0008_shard_tables.sql"),
    include_str!("../../ui-tests/migrations/9_scores.sql"),
    include_str!("../../ui-tests/migrations/10_scores_stable.sql"),
    include_str!("../../ui-tests/leader-tables.sql"),
    "
    INSERT INTO jobs (id, due) SELECT i, now() - interval '1 hour' FROM generate_series(1, 5) i;
    INSERT INTO batch VALUES (1), (3);
    INSERT INTO events VALUES (1, 'mail'), (2, 'mail');
    INSERT INTO billing.invoices VALUES (1, 'due');
    INSERT INTO row_audited (id) SELECT i FROM generate_series(1, 5) i;
    INSERT INTO endpoints (id) SELECT i FROM generate_series(1, 4) i;
    INSERT INTO webhook_queue (id, taken_by, endpoint_id)
    SELECT i, CASE WHEN i % 2 = 0 THEN 7 END, 1 + i % 4 FROM generate_series(1, 20) i;
    INSERT INTO webhook_attempts SELECT i, 1 FROM generate_series(1, 20) i;"
);
const UI_TABLES: &[&str] = &[
    "jobs",
    "runs",
    "batch",
    "notes",
    "audit_log",
    "row_audited",
    "events",
    "billing.invoices",
    "webhook_queue",
    "endpoints",
    "webhook_attempts",
];

/// A case of a claim on [`UI_SCHEMA`].
const fn ui(marker: &'static str) -> Case {
    Case {
        marker,
        setup: UI_SCHEMA,
        tables: UI_TABLES,
        params: &[],
    }
}

const CASES: &[Case] = &[
    Case {
        marker: "UPDATE jobs j SET runs = $3",
        setup: SCHEMA_TABLES,
        tables: SCHEMA_TABLE_NAMES,
        params: &[(3, 7)],
    },
    Case {
        marker: "MERGE INTO jobs t USING runs r ON t.id = r.job_id",
        setup: SCHEMA_TABLES,
        tables: SCHEMA_TABLE_NAMES,
        params: &[],
    },
    Case {
        marker: "UPDATE audit.events e SET seen = true",
        setup: SCHEMA_TABLES,
        tables: SCHEMA_TABLE_NAMES,
        params: &[],
    },
    Case {
        marker: "RETURNING note_claimed(id)",
        setup: SCHEMA_TABLES,
        tables: SCHEMA_TABLE_NAMES,
        params: &[],
    },
    Case {
        marker: "AND note_claimed(0) = 0",
        setup: SCHEMA_TABLES,
        tables: SCHEMA_TABLE_NAMES,
        params: &[],
    },
    Case {
        marker: "WHERE id IN (SELECT job_id FROM runs WHERE started_at IS NULL AND leader_fence",
        setup: SCHEMA_TABLES,
        tables: SCHEMA_TABLE_NAMES,
        params: &[],
    },
    Case {
        marker: "MERGE INTO jobs AS target USING runs r",
        setup: SCHEMA_TABLES,
        tables: SCHEMA_TABLE_NAMES,
        params: &[],
    },
    Case {
        marker: "UPDATE outbox o SET status = 'sending' FROM c",
        setup: OUTBOX,
        tables: &["outbox"],
        params: &[],
    },
    Case {
        marker: "FOR NO KEY UPDATE SKIP LOCKED) RETURNING id",
        setup: OUTBOX,
        tables: &["outbox"],
        params: &[(1, 5)],
    },
    Case {
        marker: "UPDATE invoices SET state = 'billing'",
        setup: INVOICES,
        tables: &["invoices"],
        params: &[],
    },
    Case {
        marker: "SELECT id FROM jobs WHERE leader_fence($1, $2) AND due <= now()",
        setup: DUE_JOBS,
        tables: &["jobs"],
        params: &[(3, 5)],
    },
    Case {
        marker: "DELETE FROM jobs WHERE done AND leader_fence($1, $2)",
        setup: DUE_JOBS,
        tables: &["jobs"],
        params: &[],
    },
    Case {
        marker: "UPDATE \"webhooks\"",
        setup: WEBHOOKS,
        tables: &["webhooks"],
        params: &[],
    },
    Case {
        marker: "FOR UPDATE OF j, t SKIP LOCKED",
        setup: TENANT_JOBS,
        tables: &["jobs", "tenants"],
        params: &[],
    },
    Case {
        marker: "WITH claimed AS (",
        setup: OWNED_JOBS,
        tables: &["jobs"],
        params: &[],
    },
    Case {
        marker: "INSERT INTO runs (job_id)",
        setup: RUN_JOBS,
        tables: &["jobs", "runs"],
        params: &[(3, 5)],
    },
    Case {
        marker: "MERGE INTO jobs j",
        setup: RUN_JOBS,
        tables: &["jobs", "runs"],
        params: &[],
    },
    Case {
        marker: "UPDATE queue SET taken_by = $2",
        setup: QUEUE,
        tables: &["queue"],
        params: &[],
    },
    Case {
        marker: "FROM tasks WHERE public.leader_fence($1, $2)",
        setup: TASKS,
        tables: &["tasks"],
        params: &[],
    },
    Case {
        marker: "FROM tasks WHERE leader_fence($1, $2) LIMIT $3",
        setup: TASKS,
        tables: &["tasks"],
        params: &[(3, 5)],
    },
    Case {
        marker: "FROM tasks WHERE leader_fence($1, $2) FOR UPDATE",
        setup: TASKS,
        tables: &["tasks"],
        params: &[],
    },
    Case {
        marker: "UPDATE jobs SET taken = true",
        setup: TAKEN_JOBS,
        tables: &["jobs"],
        params: &[],
    },
    Case {
        marker: "WHERE EXISTS (SELECT 1 FROM tasks g WHERE leader_fence($1, $2))",
        setup: TASKS,
        tables: &["tasks"],
        params: &[],
    },
    Case {
        marker: "WITH due AS (SELECT id FROM jobs WHERE NOT taken",
        setup: TAKEN_JOBS,
        tables: &["jobs"],
        params: &[],
    },
    Case {
        marker: "UPDATE tasks SET id = id",
        setup: TASKS,
        tables: &["tasks"],
        params: &[],
    },
    Case {
        marker: "FROM tasks WHERE id > 0 AND leader_fence($1, $2) FOR NO KEY UPDATE",
        setup: TASKS,
        tables: &["tasks"],
        params: &[],
    },
    Case {
        marker: "(SELECT max(id) FROM queue",
        setup: QUEUE,
        tables: &["queue"],
        params: &[],
    },
    Case {
        marker: "WHERE CASE WHEN taken_by IS NULL",
        setup: QUEUE,
        tables: &["queue"],
        params: &[],
    },
    Case {
        marker: "max(id) AS newest",
        setup: QUEUE,
        tables: &["queue"],
        params: &[],
    },
    Case {
        marker: "INSERT INTO batches",
        setup: BATCHES,
        tables: &["queue", "batches"],
        params: &[],
    },
    Case {
        marker: "SELECT bool_and(id > 0) FROM tasks",
        setup: TASKS,
        tables: &["tasks"],
        params: &[],
    },
    // The reference application's funnels.
    Case {
        marker: "FROM subscriptions",
        setup: BILLING,
        tables: BILLING_TABLES,
        params: &[(1, 10)],
    },
    Case {
        marker: "FROM dunning_runs",
        setup: BILLING,
        tables: BILLING_TABLES,
        params: &[(3, 10)],
    },
    Case {
        marker: "UPDATE webhook_outbox o",
        setup: BILLING,
        tables: BILLING_TABLES,
        params: &[(3, 10)],
    },
    Case {
        marker: "UPDATE email_outbox",
        setup: BILLING,
        tables: BILLING_TABLES,
        params: &[(1, 10)],
    },
    Case {
        marker: "WHERE id IN (SELECT id FROM webhook_queue",
        setup: WEBHOOK_QUEUE,
        tables: &["webhook_queue"],
        params: &[],
    },
    // What only PostgreSQL's catalog tells (`ui-tests/pass/schema_from_postgres.rs`).
    ui("WHERE score(5) > 0"),
    ui("FROM job_due d, events_mail e, billing.invoices i"),
    ui("UPDATE row_audited"),
    // Shard claims by the declared key (`ui-tests/pass/shard_claims_by_the_declared_key.rs`).
    ui("FROM webhook_queue w JOIN endpoints e"),
    ui("WITH batch AS (SELECT id FROM webhook_queue"),
    ui("DELETE FROM webhook_attempts a USING webhook_queue w"),
    ui("UPDATE webhook_attempts a SET attempt"),
    // Columns named as PostgreSQL names them (`ui-tests/pass/claims_named_as_postgresql_names_them.rs`).
    ui("FROM (SELECT id::bigint, coalesce(id, 0) FROM batch"),
    ui("WITH RECURSIVE chain (job, depth)"),
    ui("WHERE due BETWEEN"),
    ui("SELECT pg_notify('claimed'"),
    Case {
        marker: "FROM webhook_deliveries",
        setup: BILLING,
        tables: BILLING_TABLES,
        params: &[(5, 10)],
    },
    Case {
        marker: "send_forms",
        setup: SEND_FORMS,
        tables: &["send_forms"],
        params: &[],
    },
];

const ROLE: Role = ALPHA;

#[tokio::test]
async fn every_accepted_claim_changes_and_locks_nothing_under_a_superseded_token() {
    let root = Path::new(env!("CARGO_MANIFEST_DIR")).join("..");
    let mut sources: Vec<PathBuf> = std::fs::read_dir(root.join("ui-tests/pass"))
        .expect("read ui-tests/pass")
        .map(|entry| entry.expect("a directory entry").path())
        .filter(|path| path.extension().is_some_and(|e| e == "rs"))
        .collect();
    sources.sort();
    sources.push(root.join("examples/billing-demo/src/store.rs"));
    let claims: Vec<Found> = sources.iter().flat_map(|file| fenced_sql(file)).collect();
    assert!(
        claims.len() >= CASES.len(),
        "found only {} claims in {sources:?}",
        claims.len()
    );

    let mut used = vec![false; CASES.len()];
    for claim in &claims {
        let matching: Vec<usize> = (0..CASES.len())
            .filter(|&i| claim.sql.contains(CASES[i].marker))
            .collect();
        let [case] = matching[..] else {
            panic!(
                "{} has a claim that matches {} cases here; give it exactly one (a marker, its \
                 tables and its parameters):\n{}",
                claim.file.display(),
                matching.len(),
                claim.sql
            );
        };
        used[case] = true;
        run_case(claim, &CASES[case]).await;
    }
    for (case, used) in CASES.iter().zip(used) {
        assert!(
            used,
            "no claim in the sources matches the case {:?}",
            case.marker
        );
    }
}

/// Runs one claim with a superseded and then with the live token.
async fn run_case(claim: &Found, case: &Case) {
    let db = TestDb::new().await;
    db.exec(ROLES_UP).await;
    db.exec(case.setup).await;
    let sharded = claim.check().fences.iter().any(|f| f.shard.is_some());
    let shard = |index| sharded.then(|| Shard::new(index, 2).unwrap());
    if sharded {
        db.exec("SELECT leader_reshard('alpha', 2)").await;
    }
    let superseded = grant(&db, "old-leader", shard(0)).await;
    expire(&db, ROLE).await;
    let live = grant(&db, "new-leader", shard(0)).await;
    assert!(live.token() > superseded.token());
    if sharded {
        let other = grant(&db, "other-shard", shard(1)).await;
        let crossed = effect(&db, claim, case, Proof::Crossed(live, other)).await;
        assert_eq!(
            crossed,
            Effect::default(),
            "with shard 1's live token bound as shard 0's, this claim from {} had an effect:\n{}",
            claim.file.display(),
            claim.sql
        );
    }

    let stale = effect(&db, claim, case, Proof::Fence(superseded)).await;
    assert_eq!(
        stale,
        Effect::default(),
        "with a superseded token, this claim from {} had an effect:\n{}",
        claim.file.display(),
        claim.sql
    );
    let fresh = effect(&db, claim, case, Proof::Fence(live)).await;
    if let Some(shard) = live.shard() {
        assert!(
            fresh.foreign_rows == 0,
            "with shard {shard}'s live token, this claim from {} returned {} rows of other shards:\n{}",
            claim.file.display(),
            fresh.foreign_rows,
            claim.sql
        );
    }
    assert!(
        fresh.returned > 0 || fresh.changed > 0 || !fresh.locked.is_empty(),
        "with the live token, this claim from {} claimed nothing, so the superseded run proves \
         nothing (seed its tables so it claims rows):\n{}",
        claim.file.display(),
        claim.sql
    );
    let locks = leader_fence_check::row_locking_queries(&claim.sql).expect("it parses");
    assert!(
        locks.is_empty() || !fresh.locked.is_empty(),
        "with the live token, this row-locking claim from {} locked nothing, so the probe for \
         locks proves nothing here:\n{}",
        claim.file.display(),
        claim.sql
    );
}

async fn grant(db: &TestDb, who: &str, shard: Option<Shard>) -> Fence {
    let mut wanted = lease::Wanted::every(ROLE, Duration::from_secs(3600));
    if let Some(shard) = shard {
        wanted = wanted.in_shard(shard);
    }
    match lease::acquire(db.pool(), &[wanted], who, 1, &FAST)
        .await
        .expect("ACQUIRE runs")
        .remove(0)
    {
        Acquired::Granted(grant) => grant.fence,
        Acquired::Refused(refusal) => panic!("expected a grant, got {refusal:?}"),
    }
}

/// What a claim's fence placeholders are bound to.
#[derive(Debug, Clone, Copy)]
enum Proof {
    /// A grant's fence, as `#[fenced]` binds it.
    Fence(Fence),
    /// The first fence's shard, with the second's (another shard's) token.
    Crossed(Fence, Fence),
}

/// What a claim did inside its (rolled-back) transaction.
#[derive(Debug, Default, PartialEq, Eq)]
struct Effect {
    /// Rows it returned.
    returned: usize,
    /// Row versions it wrote (updated, inserted, merged) plus rows it deleted.
    changed: i64,
    /// Tables in which it held a row lock, seen from another connection.
    locked: Vec<&'static str>,
    /// For a shard's claim: returned ids that `leader_shard_of` puts in another shard.
    foreign_rows: usize,
}

async fn effect(db: &TestDb, claim: &Found, case: &Case, proof: Proof) -> Effect {
    let (fence, token) = match proof {
        Proof::Fence(fence) => (fence, fence.token()),
        Proof::Crossed(fence, other) => (fence, other.token()),
    };
    let checked = claim.check();
    assert!(checked.errors.is_empty(), "{:#?}", checked.errors);
    let mut conn = sqlx::PgConnection::connect_with(&db.admin().connect_options())
        .await
        .expect("connect");
    let mut tx = conn.begin().await.expect("BEGIN");
    let xid: i64 = sqlx::query_scalar("SELECT txid_current() % 4294967296")
        .fetch_one(&mut *tx)
        .await
        .unwrap();
    let mut before = Vec::new();
    for table in case.tables {
        before.push(count(&mut tx, &format!("SELECT count(*) FROM {table}")).await);
    }

    let placeholders = checked
        .fences
        .iter()
        .flat_map(|f| {
            let shard = f.shard.map(|s| [s.index, s.count]).unwrap_or_default();
            [f.role, f.token].into_iter().chain(shard)
        })
        .chain(case.params.iter().map(|&(n, _)| n))
        .max()
        .unwrap_or(0);
    let mut query = sqlx::query(sqlx::AssertSqlSafe(claim.sql.clone())).persistent(false);
    for n in 1..=placeholders {
        let shard_fence = fence.shard_fence();
        if checked.fences.iter().any(|f| f.role == n) {
            query = query.bind(fence.role());
        } else if checked.fences.iter().any(|f| f.token == n) {
            query = query.bind(token);
        } else if checked
            .fences
            .iter()
            .any(|f| f.shard.is_some_and(|s| s.index == n))
        {
            query = query.bind(shard_fence.expect("a shard's grant").shard_index());
        } else if checked
            .fences
            .iter()
            .any(|f| f.shard.is_some_and(|s| s.count == n))
        {
            query = query.bind(shard_fence.expect("a shard's grant").shard_count());
        } else {
            let value = case.params.iter().find(|&&(p, _)| p == n).map(|&(_, v)| v);
            query =
                query.bind(value.unwrap_or_else(|| {
                    panic!("the case {:?} gives no value for ${n}", case.marker)
                }));
        }
    }
    let rows = query
        .fetch_all(&mut *tx)
        .await
        .unwrap_or_else(|e| panic!("the claim runs: {e}\n{}", claim.sql));
    let returned = rows.len();
    let mut foreign_rows = 0;
    if let Some(shard) = fence.shard() {
        for row in &rows {
            let id: i64 = row.get(0);
            let of: i32 = sqlx::query_scalar("SELECT leader_shard_of($1::bigint, $2)")
                .bind(id)
                .bind(shard.count() as i32)
                .fetch_one(&mut *tx)
                .await
                .unwrap();
            foreign_rows += usize::from(of != shard.index() as i32);
        }
    }

    let mut changed = 0;
    let mut locked = Vec::new();
    for (table, before) in case.tables.iter().zip(before) {
        let after = count(&mut tx, &format!("SELECT count(*) FROM {table}")).await;
        let written: i64 = sqlx::query_scalar(sqlx::AssertSqlSafe(format!(
            "SELECT count(*) FROM {table} WHERE xmin::text::bigint = $1"
        )))
        .bind(xid)
        .fetch_one(&mut *tx)
        .await
        .unwrap();
        changed += written + (before - after).max(0);
        let probe = sqlx::query(sqlx::AssertSqlSafe(format!(
            "SELECT 1 FROM {table} FOR UPDATE NOWAIT"
        )))
        .fetch_all(db.admin())
        .await;
        match probe {
            Ok(_) => {}
            Err(sqlx::Error::Database(e)) if e.code().as_deref() == Some("55P03") => {
                locked.push(*table)
            }
            Err(e) => panic!("probing {table} for row locks: {e}"),
        }
    }
    tx.rollback().await.expect("ROLLBACK");
    Effect {
        returned,
        changed,
        locked,
        foreign_rows,
    }
}

async fn count(tx: &mut sqlx::PgConnection, sql: &str) -> i64 {
    sqlx::query(sqlx::AssertSqlSafe(sql.to_owned()))
        .fetch_one(tx)
        .await
        .unwrap()
        .get(0)
}

/// The string literals of every `#[fenced]` function in `file` that parse as SQL.
fn fenced_sql(file: &Path) -> Vec<Found> {
    let text = std::fs::read_to_string(file).expect("read a source file");
    let ast = syn::parse_file(&text).expect("parse a source file");
    let mut finder = FencedLiterals {
        inside: false,
        sql: Vec::new(),
    };
    finder.visit_file(&ast);
    finder
        .sql
        .into_iter()
        .map(|sql| Found {
            sql,
            file: file.to_owned(),
        })
        .filter(|found| {
            let checked = found.check();
            checked.statements > 0 && !checked.fences.is_empty()
        })
        .collect()
}

struct FencedLiterals {
    inside: bool,
    sql: Vec<String>,
}

fn is_fenced(attrs: &[syn::Attribute]) -> bool {
    attrs.iter().any(|a| {
        a.path()
            .segments
            .last()
            .is_some_and(|s| s.ident == "fenced")
    })
}

impl<'ast> Visit<'ast> for FencedLiterals {
    fn visit_item_fn(&mut self, f: &'ast syn::ItemFn) {
        let was = std::mem::replace(&mut self.inside, is_fenced(&f.attrs));
        visit::visit_item_fn(self, f);
        self.inside = was;
    }

    fn visit_impl_item_fn(&mut self, f: &'ast syn::ImplItemFn) {
        let was = std::mem::replace(&mut self.inside, is_fenced(&f.attrs));
        visit::visit_impl_item_fn(self, f);
        self.inside = was;
    }

    fn visit_lit_str(&mut self, lit: &'ast syn::LitStr) {
        if self.inside {
            self.sql.push(lit.value());
        }
    }

    /// `concat!` of literals is a claim's SQL too (`#[fenced]` reads it).
    fn visit_macro(&mut self, mac: &'ast syn::Macro) {
        if self.inside
            && let Some(text) = concatenated(mac)
        {
            self.sql.push(text);
        }
        visit::visit_macro(self, mac);
    }
}

/// The text of `concat!(..)` of literals and nested `concat!`s.
fn concatenated(mac: &syn::Macro) -> Option<String> {
    if mac.path.segments.last()?.ident != "concat" {
        return None;
    }
    let args = mac
        .parse_body_with(syn::punctuated::Punctuated::<syn::Expr, syn::Token![,]>::parse_terminated)
        .ok()?;
    let mut text = String::new();
    for arg in args {
        match arg {
            syn::Expr::Lit(lit) => match lit.lit {
                syn::Lit::Str(s) => text.push_str(&s.value()),
                syn::Lit::Int(i) => text.push_str(i.base10_digits()),
                _ => return None,
            },
            syn::Expr::Macro(inner) => text.push_str(&concatenated(&inner.mac)?),
            _ => return None,
        }
    }
    Some(text)
}
