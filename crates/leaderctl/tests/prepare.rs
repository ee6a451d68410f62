//! `leaderctl schema prepare` and `schema shard-key`, as a developer runs them: the built binary
//! against a real PostgreSQL (`DATABASE_URL`, where it creates and drops a scratch database).
//!
//! * Every `leader-schema.json` of the repository is what a prepare writes now.
//! * A migration history is read as PostgreSQL runs it: by integer version, up files only,
//!   renames, partitions, `ALTER FUNCTION`, `IF NOT EXISTS`, a `DO` block's dynamic DDL, a view's
//!   column names, a migration's own `SET search_path`.

use std::fs;
use std::path::{Path, PathBuf};

use leader_schema::PreparedSchema;
use leader_schema::model::{FunctionKind, QualifiedName, Volatility};
use leader_testkit::TestDb;
use tokio::process::Command;

/// What a run of the binary did.
#[derive(Debug)]
struct Run {
    code: Option<i32>,
    stdout: String,
    stderr: String,
}

async fn ctl(url: &str, args: &[&str]) -> Run {
    let out = Command::new(env!("CARGO_BIN_EXE_leaderctl"))
        .args(args)
        .env("DATABASE_URL", url)
        .kill_on_drop(true)
        .output()
        .await
        .expect("leaderctl runs");
    Run {
        code: out.status.code(),
        stdout: String::from_utf8_lossy(&out.stdout).into_owned(),
        stderr: String::from_utf8_lossy(&out.stderr).into_owned(),
    }
}

/// A URL of the test server: `prepare` creates its scratch database there.
async fn server() -> (TestDb, String) {
    let db = TestDb::unmigrated().await;
    let url = db.url();
    (db, url)
}

/// Every `leader-schema.json` under `dir`, outside `target/` and hidden folders.
fn prepared_files(dir: &Path, found: &mut Vec<PathBuf>) {
    for entry in fs::read_dir(dir).expect("read a folder of the repository") {
        let path = entry.expect("a directory entry").path();
        let name = path.file_name().and_then(|n| n.to_str()).unwrap_or("");
        if path.is_dir() {
            if name != "target" && !name.starts_with('.') {
                prepared_files(&path, found);
            }
        } else if name == leader_schema::FILE_NAME {
            found.push(path);
        }
    }
}

#[tokio::test]
async fn every_prepared_schema_of_the_repository_is_what_a_prepare_writes_now() {
    let (_db, url) = server().await;
    let root = Path::new(env!("CARGO_MANIFEST_DIR")).join("../..");
    let mut files = Vec::new();
    prepared_files(&root, &mut files);
    for expected in [
        "ui-tests",
        "tests",
        "leader-macros",
        "leader-runtime",
        "examples/billing-demo",
        "examples/axum-service",
        "tools/leader-readme-examples",
        "tools/leader-drills",
    ] {
        let file = root.join(expected).join(leader_schema::FILE_NAME);
        assert!(
            files
                .iter()
                .any(|f| f.canonicalize().ok() == file.canonicalize().ok()),
            "{expected} has no prepared schema"
        );
    }
    for file in files {
        let dir = file.parent().expect("a file is in a folder");
        let text = fs::read_to_string(&file).expect("read the prepared schema");
        let schema = PreparedSchema::from_file_text(&text)
            .unwrap_or_else(|e| panic!("{}: {e}", file.display()));
        let manifest_dir = dir.to_str().expect("a UTF-8 path");
        let run = ctl(
            &url,
            &[
                "schema",
                "prepare",
                "--check",
                "--manifest-dir",
                manifest_dir,
                "--dir",
                &schema.migrations,
            ],
        )
        .await;
        assert_eq!(
            run.code,
            Some(0),
            "{} is not what a prepare writes now: run `leaderctl schema prepare --dir {}` in {}\n{run:#?}",
            file.display(),
            schema.migrations,
            dir.display()
        );
    }
}

/// A crate whose migrations are `files` (name, SQL), in a scratch folder.
fn crate_with(files: &[(&str, &str)]) -> tempfile::TempDir {
    let dir = tempfile::Builder::new()
        .prefix("leaderctl-prepare-")
        .tempdir()
        .expect("a scratch folder");
    fs::write(
        dir.path().join("Cargo.toml"),
        "[package]\nname = \"app\"\nversion = \"0.0.0\"\n",
    )
    .unwrap();
    fs::create_dir(dir.path().join("migrations")).unwrap();
    for (name, sql) in files {
        fs::write(dir.path().join("migrations").join(name), sql).unwrap();
    }
    dir
}

/// A history that a reader of DDL text gets wrong, and PostgreSQL does not.
const HISTORY: &[(&str, &str)] = &[
    (
        "1_tables.sql",
        "CREATE TABLE parent (id bigint NOT NULL, kind text NOT NULL) PARTITION BY LIST (kind);
         CREATE TABLE child PARTITION OF parent FOR VALUES IN ('a');",
    ),
    ("1_tables.down.sql", "DROP TABLE parent;"),
    (
        "2_functions.sql",
        "CREATE FUNCTION f(integer) RETURNS integer LANGUAGE sql VOLATILE AS $$ SELECT $1 $$;
         CREATE FUNCTION g(integer) RETURNS integer LANGUAGE sql VOLATILE AS $$ SELECT $1 $$;
         CREATE FUNCTION h(integer) RETURNS integer LANGUAGE sql IMMUTABLE AS $$ SELECT $1 $$;",
    ),
    (
        "3_renames.sql",
        "ALTER TABLE parent RENAME COLUMN kind TO category;
         CREATE TABLE IF NOT EXISTS parent (other integer);
         CREATE VIEW v AS SELECT id::bigint, coalesce(category, '') FROM parent;
         CREATE SCHEMA billing;
         DO $$ BEGIN EXECUTE 'CREATE TABLE billing.made_by_do (z integer)'; END $$;
         CREATE FUNCTION note() RETURNS trigger LANGUAGE plpgsql
             AS $f$ BEGIN RETURN NULL; END $f$;
         CREATE TRIGGER each_statement AFTER UPDATE OR DELETE ON child
             FOR EACH STATEMENT EXECUTE FUNCTION note();
         CREATE TRIGGER each_row AFTER UPDATE ON child FOR EACH ROW EXECUTE FUNCTION note();
         SET search_path = billing, public;",
    ),
    (
        // Runs last (10 > 3), though it sorts first by name: `f` ends STABLE, and `g` takes
        // the name `h` had.
        "10_functions_again.sql",
        "ALTER FUNCTION f(integer) STABLE;
         DROP FUNCTION h(integer);
         ALTER FUNCTION g(integer) RENAME TO h;
         SELECT leader_shard_key('parent', 'id');",
    ),
];

#[tokio::test]
async fn a_migration_history_is_read_as_postgresql_runs_it() {
    let (_db, url) = server().await;
    let app = crate_with(HISTORY);
    let dir = app.path().to_str().unwrap();
    let run = ctl(&url, &["schema", "prepare", "--manifest-dir", dir]).await;
    assert_eq!(run.code, Some(0), "{run:#?}");
    assert!(
        run.stdout
            .contains("from the framework's migrations, then 4 migration(s) of migrations/"),
        "{run:#?}"
    );
    let schema = leader_schema::load(app.path()).expect("the file is current");
    let function = |name: &str| {
        schema
            .functions
            .iter()
            .find(|f| f.name == QualifiedName::new("public", name))
    };
    assert_eq!(function("f").unwrap().volatility, Volatility::Stable);
    assert!(function("g").is_none(), "renamed away");
    assert_eq!(function("h").unwrap().volatility, Volatility::Volatile);
    assert_eq!(function("h").unwrap().kind, FunctionKind::Function);
    let relation = |schema_name: &str, name: &str| {
        schema
            .relations
            .iter()
            .find(|r| r.name == QualifiedName::new(schema_name, name))
            .unwrap_or_else(|| panic!("{schema_name}.{name} is there"))
    };
    let columns = |schema_name: &str, name: &str| -> Vec<String> {
        relation(schema_name, name)
            .columns
            .iter()
            .map(|c| c.name.clone())
            .collect()
    };
    assert_eq!(columns("public", "child"), ["id", "category"]);
    assert_eq!(columns("public", "parent"), ["id", "category"]);
    assert_eq!(columns("public", "v"), ["id", "coalesce"]);
    assert_eq!(columns("billing", "made_by_do"), ["z"]);
    assert_eq!(
        relation("public", "child").parents,
        [QualifiedName::new("public", "parent")]
    );
    let triggers = &relation("public", "child").statement_triggers;
    assert_eq!(
        triggers.len(),
        1,
        "the row-level one is not listed: {triggers:?}"
    );
    assert_eq!(triggers[0].name, "each_statement");
    assert_eq!(
        triggers[0].events,
        [
            leader_schema::model::Event::Update,
            leader_schema::model::Event::Delete
        ]
    );
    assert!(
        relation("public", "v").updatable,
        "a view of one table, plain"
    );
    assert_eq!(schema.search_path, ["pg_catalog", "public"]);
    assert_eq!(schema.shard_keys.len(), 1);
    assert_eq!(schema.shard_keys[0].column, "id");

    // The file is current until a migration changes.
    let run = ctl(
        &url,
        &["schema", "prepare", "--check", "--manifest-dir", dir],
    )
    .await;
    assert_eq!(run.code, Some(0), "{run:#?}");
    fs::write(
        app.path().join("migrations/11_more.sql"),
        "CREATE TABLE later (id bigint);",
    )
    .unwrap();
    let run = ctl(
        &url,
        &["schema", "prepare", "--check", "--manifest-dir", dir],
    )
    .await;
    assert_eq!(run.code, Some(1), "{run:#?}");
    assert!(
        run.stderr.contains("is out of date") && run.stderr.contains("leaderctl schema prepare"),
        "{run:#?}"
    );
    assert!(matches!(
        leader_schema::load(app.path()),
        Err(leader_schema::LoadError::Stale { .. })
    ));
}

#[tokio::test]
async fn a_migration_that_fails_or_a_folder_sqlx_refuses_is_refused_naming_it() {
    let (_db, url) = server().await;
    let app = crate_with(&[(
        "1_broken.sql",
        "CREATE TABLE t (id bigint REFERENCES nowhere);",
    )]);
    let dir = app.path().to_str().unwrap();
    let run = ctl(&url, &["schema", "prepare", "--manifest-dir", dir]).await;
    assert_eq!(run.code, Some(1), "{run:#?}");
    assert!(
        run.stderr.contains("failed on an empty database") && run.stderr.contains("nowhere"),
        "{run:#?}"
    );
    assert!(!app.path().join(leader_schema::FILE_NAME).exists());
    // A migration numbered as one of the framework's (`sqlx migrate add` at that second): sqlx
    // alone says "previously applied but has been modified", which names neither file.
    let app = crate_with(&[("20261208000000_jobs.sql", "CREATE TABLE jobs (id bigint);")]);
    let dir = app.path().to_str().unwrap();
    let run = ctl(&url, &["schema", "prepare", "--manifest-dir", dir]).await;
    assert_eq!(run.code, Some(1), "{run:#?}");
    assert!(
        run.stderr.contains("20261208000000_jobs in")
            && run
                .stderr
                .contains("has the version of the framework's migration 20261208000000_")
            && run.stderr.contains("Give yours another version"),
        "{run:#?}"
    );
    let app = crate_with(&[("notes.sql", "SELECT 1;")]);
    let dir = app.path().to_str().unwrap();
    let run = ctl(&url, &["schema", "prepare", "--manifest-dir", dir]).await;
    assert_eq!(run.code, Some(1), "{run:#?}");
    assert!(
        run.stderr.contains("sqlx cannot read the migrations"),
        "{run:#?}"
    );
    let run = ctl(
        &url,
        &["schema", "prepare", "--manifest-dir", dir, "--dir", "/abs"],
    )
    .await;
    assert_eq!(run.code, Some(1), "{run:#?}");
    assert!(
        run.stderr.contains("relative to the crate's directory"),
        "{run:#?}"
    );
}

#[tokio::test]
async fn shard_key_writes_the_migration_that_declares_a_key_once() {
    let app = crate_with(&[(
        "20260101000000_jobs.up.sql",
        "CREATE TABLE jobs (id bigint, tenant bigint);",
    )]);
    let dir = app.path().join("migrations");
    let dir = dir.to_str().unwrap();
    let run = ctl("", &["schema", "shard-key", "jobs", "tenant", "--dir", dir]).await;
    assert_eq!(run.code, Some(0), "{run:#?}");
    let written: Vec<String> = fs::read_dir(dir)
        .unwrap()
        .map(|e| e.unwrap().file_name().to_string_lossy().into_owned())
        .filter(|name| name.contains("leader_shard_key_jobs"))
        .collect();
    assert_eq!(written.len(), 2, "an up and a down: {written:?}");
    let up = written.iter().find(|n| n.ends_with(".up.sql")).unwrap();
    let up = fs::read_to_string(Path::new(dir).join(up)).unwrap();
    assert!(
        up.contains("SELECT leader_shard_key('jobs', 'tenant');"),
        "{up}"
    );
    let run = ctl("", &["schema", "shard-key", "jobs", "tenant", "--dir", dir]).await;
    assert_eq!(run.code, Some(1), "{run:#?}");
    assert!(run.stderr.contains("already the shard key"), "{run:#?}");
    // Another key later: the down restores the first.
    let run = ctl("", &["schema", "shard-key", "jobs", "id", "--dir", dir]).await;
    assert_eq!(run.code, Some(0), "{run:#?}");
}
