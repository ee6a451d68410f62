//! `leaderctl` as an operator runs it: the built binary, spawned against a real PostgreSQL (a
//! fresh database per test), for every command and every way each can fail.
//!
//! On a pooler run (`LEADER_TEST_VIA_POOLER=1`, pass 2 of `scripts/test`) every database command
//! goes through PgBouncer in transaction mode; `the_commands_work_through_a_transaction_pooler`
//! goes through it on every run that has one.

use std::path::Path;
use std::process::Stdio;
use std::time::Duration;

use leader_core::lease::{self, Acquired};
use leader_core::schema::MIGRATION_FILES;
use leader_core::{Role, Timings};
use leader_testkit::TestDb;
use sqlx::Row;
use tokio::io::AsyncReadExt;
use tokio::process::Command;

const ALPHA: Role = Role::from_static("alpha");
const BETA: Role = Role::from_static("beta");

/// The test application's roles migration.
const ROLES: &str = "
ALTER TABLE leader_leases ADD CONSTRAINT leader_leases_role_registered
    CHECK (role IN ('alpha', 'beta', 'gamma'));
INSERT INTO leader_leases (role, holder_token)
VALUES ('alpha', leader_seed_token()), ('beta', leader_seed_token()), ('gamma', leader_seed_token());
";

/// What a run of the binary did.
#[derive(Debug)]
struct Run {
    code: Option<i32>,
    stdout: String,
    stderr: String,
}

impl Run {
    /// Asserts the exit code, and for a failure that stderr is one line naming `needle`.
    #[track_caller]
    fn expect(&self, code: i32, needle: &str) -> &Run {
        assert_eq!(self.code, Some(code), "{self:#?}");
        let text = if code == 0 {
            &self.stdout
        } else {
            &self.stderr
        };
        assert!(text.contains(needle), "expected {needle:?} in {self:#?}");
        if code != 0 {
            assert_eq!(self.stderr.lines().count(), 1, "one line: {self:#?}");
            assert!(!self.stderr.contains("panicked"), "{self:#?}");
        }
        self
    }
}

fn command(url: Option<&str>, args: &[&str]) -> Command {
    let mut command = Command::new(env!("CARGO_BIN_EXE_leaderctl"));
    command
        .args(args)
        .env_remove("DATABASE_URL")
        .env("RUST_BACKTRACE", "1");
    if let Some(url) = url {
        command.env("DATABASE_URL", url);
    }
    command.kill_on_drop(true);
    command
}

async fn ctl(url: Option<&str>, args: &[&str]) -> Run {
    let out = command(url, args).output().await.expect("leaderctl runs");
    Run {
        code: out.status.code(),
        stdout: String::from_utf8_lossy(&out.stdout).into_owned(),
        stderr: String::from_utf8_lossy(&out.stderr).into_owned(),
    }
}

/// A migrated database with the roles alpha, beta and gamma.
async fn database() -> TestDb {
    let db = TestDb::new().await;
    sqlx::raw_sql(ROLES).execute(db.admin()).await.unwrap();
    db
}

async fn scalar<T>(db: &TestDb, sql: &'static str) -> T
where
    T: for<'r> sqlx::Decode<'r, sqlx::Postgres> + sqlx::Type<sqlx::Postgres> + Send + Unpin,
{
    sqlx::raw_sql(sql)
        .fetch_one(db.admin())
        .await
        .and_then(|row| row.try_get(0))
        .unwrap_or_else(|e| panic!("{e}\n{sql}"))
}

async fn lead(db: &TestDb, role: Role, holder: &str) -> i64 {
    match lease::acquire_one(
        db.admin(),
        role,
        holder,
        Duration::from_secs(60),
        &Timings::default(),
    )
    .await
    .unwrap()
    {
        Acquired::Granted(grant) => grant.fence.token(),
        refused => panic!("{role} not granted: {refused:?}"),
    }
}

/// A fresh, empty folder under the system's temp dir, removed when dropped (also when the test
/// fails).
fn temp_dir(tag: &str) -> tempfile::TempDir {
    tempfile::Builder::new()
        .prefix(&format!("leaderctl-{tag}-"))
        .tempdir()
        .unwrap()
}

/// A URL on which nothing listens: a port the OS handed out, then closed.
fn closed_port_url() -> String {
    let listener = std::net::TcpListener::bind("127.0.0.1:0").unwrap();
    let port = listener.local_addr().unwrap().port();
    drop(listener);
    format!("postgres://postgres@127.0.0.1:{port}/postgres")
}

#[tokio::test]
async fn status_shows_each_role_its_leader_pause_and_cooldown_in_one_table() {
    let db = database().await;
    let token = lead(&db, ALPHA, "replica-7").await;
    db.exec("SELECT leader_pause('beta', 'alice', 'SMTP key rotation')")
        .await;
    db.exec("UPDATE leader_leases SET not_before = now() + interval '1 hour' WHERE role = 'gamma'")
        .await;
    let url = db.app_url();
    let run = ctl(Some(&url), &["status"]).await;
    run.expect(0, "role");
    let lines: Vec<&str> = run.stdout.lines().collect();
    assert_eq!(lines.len(), 4, "{}", run.stdout);
    for word in [
        "role",
        "state",
        "holder_id",
        "token",
        "expires_in",
        "last_tick",
        "not_before_in",
        "paused",
    ] {
        assert!(lines[0].contains(word), "{}", lines[0]);
    }
    let alpha: Vec<&str> = lines[1].split_whitespace().collect();
    assert_eq!(
        alpha[..4],
        ["alpha", "leading", "replica-7", &token.to_string()]
    );
    assert!(
        lines[2].starts_with("beta") && lines[2].contains("paused"),
        "{}",
        lines[2]
    );
    assert!(
        lines[2].contains("alice: SMTP key rotation"),
        "{}",
        lines[2]
    );
    let gamma: Vec<&str> = lines[3].split_whitespace().collect();
    assert_eq!(gamma[1], "cooldown");
    assert!(
        gamma[7].starts_with("59m") || gamma[7] == "1h00m",
        "{}",
        lines[3]
    );
    let column = lines[0].find("holder_id").unwrap();
    assert_eq!(
        lines[1].find("replica-7"),
        Some(column),
        "aligned:\n{}",
        run.stdout
    );
}

/// Every statement `status` sends that reads `leader_status` carries its `/* leader:… */` name,
/// as every statement of the framework does: the view, wrapped in a filter that records the text
/// of each statement that reads it, says which statements those were.
#[tokio::test]
async fn status_sends_only_named_statements() {
    let db = database().await;
    lead(&db, ALPHA, "replica-1").await;
    db.exec(
        "CREATE TABLE seen (query text);
         CREATE FUNCTION note_query() RETURNS boolean LANGUAGE plpgsql VOLATILE SECURITY DEFINER
         AS $$ BEGIN INSERT INTO seen VALUES (current_query()); RETURN true; END $$;
         DO $do$ BEGIN
             EXECUTE 'CREATE OR REPLACE VIEW leader_status AS SELECT s.* FROM ('
                 || rtrim(pg_get_viewdef('leader_status'), '; ') || ') s WHERE note_query()';
         END $do$;",
    )
    .await;
    let url = db.app_url();
    ctl(Some(&url), &["status"]).await.expect(0, "alpha");
    ctl(Some(&url), &["status", "--json"])
        .await
        .expect(0, "alpha");
    let seen: Vec<String> = sqlx::query_scalar("SELECT DISTINCT query FROM seen")
        .fetch_all(db.admin())
        .await
        .unwrap();
    assert!(!seen.is_empty(), "the policy recorded nothing");
    for query in &seen {
        assert_eq!(
            leader_core::Statement::of_sql(query),
            Some(leader_core::Statement::StatusView),
            "an unnamed statement: {query}"
        );
    }
}

#[tokio::test]
async fn status_json_parses_and_matches_the_view() {
    let db = database().await;
    let token = lead(&db, ALPHA, "replica-1").await;
    db.exec("SELECT leader_pause('beta', 'bob')").await;
    let url = db.app_url();
    let run = ctl(Some(&url), &["status", "--json"]).await;
    run.expect(0, "[");
    let rows: serde_json::Value = serde_json::from_str(&run.stdout).expect("valid JSON");
    let rows = rows.as_array().expect("an array");
    assert_eq!(rows.len(), 3);
    let alpha = &rows[0];
    assert_eq!(alpha["role"], "alpha");
    assert_eq!(alpha["state"], "leading");
    assert_eq!(alpha["holder_id"], "replica-1");
    assert_eq!(alpha["token"], token);
    assert!(alpha["expires_in_ms"].as_i64().unwrap() > 0, "{alpha}");
    assert!(
        alpha["expires_at"].as_str().unwrap().ends_with('Z'),
        "{alpha}"
    );
    let beta = &rows[1];
    assert_eq!(beta["state"], "paused");
    assert_eq!(beta["paused_by"], "bob");
    assert_eq!(beta["pause_reason"], serde_json::Value::Null);
    assert_eq!(rows[2]["last_tick_age_ms"], serde_json::Value::Null);
}

#[cfg(unix)]
#[tokio::test]
async fn status_watch_redraws_in_place_until_ctrl_c() {
    const REDRAW: &str = "\x1b[H\x1b[2J";
    let db = database().await;
    let url = db.app_url();
    let mut child = command(Some(&url), &["status", "--watch", "--interval-ms", "100"])
        .stdout(Stdio::piped())
        .stderr(Stdio::piped())
        .spawn()
        .unwrap();
    let mut stdout = child.stdout.take().unwrap();
    let mut seen = String::new();
    let mut buf = [0u8; 4096];
    while seen.matches(REDRAW).count() < 3 {
        let n = stdout.read(&mut buf).await.unwrap();
        assert!(n > 0, "leaderctl ended before redrawing: {seen}");
        seen.push_str(&String::from_utf8_lossy(&buf[..n]));
    }
    let frames: Vec<&str> = seen.split(REDRAW).filter(|f| !f.is_empty()).collect();
    assert!(
        frames[1].contains("alpha") && frames[1].contains("gamma"),
        "{seen}"
    );
    let pid = child.id().unwrap().to_string();
    let kill = std::process::Command::new("kill")
        .args(["-INT", &pid])
        .status()
        .unwrap();
    assert!(kill.success());
    let status = child.wait().await.unwrap();
    assert_eq!(status.code(), Some(0), "Ctrl-C ends the watch cleanly");
}

#[cfg(unix)]
#[tokio::test]
async fn status_watch_json_prints_one_array_per_line_without_redrawing() {
    let db = database().await;
    let url = db.app_url();
    let mut child = command(
        Some(&url),
        &["status", "--watch", "--json", "--interval-ms", "100"],
    )
    .stdout(Stdio::piped())
    .stderr(Stdio::piped())
    .spawn()
    .unwrap();
    let mut stdout = child.stdout.take().unwrap();
    let mut seen = String::new();
    let mut buf = [0u8; 4096];
    while seen.matches('\n').count() < 3 {
        let n = stdout.read(&mut buf).await.unwrap();
        assert!(n > 0, "leaderctl ended before three lines: {seen}");
        seen.push_str(&String::from_utf8_lossy(&buf[..n]));
    }
    assert!(
        !seen.contains('\x1b'),
        "no terminal escapes in JSON mode: {seen:?}"
    );
    for line in seen.lines().take(3) {
        let rows: serde_json::Value = serde_json::from_str(line).expect("each line is JSON");
        let roles: Vec<&str> = rows
            .as_array()
            .expect("an array")
            .iter()
            .map(|row| row["role"].as_str().unwrap())
            .collect();
        assert_eq!(roles, ["alpha", "beta", "gamma"], "{line}");
    }
    let pid = child.id().unwrap().to_string();
    let kill = std::process::Command::new("kill")
        .args(["-INT", &pid])
        .status()
        .unwrap();
    assert!(kill.success());
    let status = child.wait().await.unwrap();
    assert_eq!(status.code(), Some(0), "Ctrl-C ends the watch cleanly");
}

#[tokio::test]
async fn pause_records_who_and_why_and_refuses_a_paused_role() {
    let db = database().await;
    let url = db.app_url();
    let token = lead(&db, ALPHA, "replica-1").await;
    ctl(
        Some(&url),
        &[
            "pause",
            "alpha",
            "--by",
            "alice",
            "--reason",
            "key rotation",
        ],
    )
    .await
    .expect(0, "paused alpha");
    let (by, why, holder): (String, String, Option<String>) = sqlx::raw_sql(
        "SELECT paused_by, pause_reason, holder_id FROM leader_leases WHERE role = 'alpha'",
    )
    .fetch_one(db.admin())
    .await
    .map(|r| (r.get(0), r.get(1), r.get(2)))
    .unwrap();
    assert_eq!(
        (by.as_str(), why.as_str(), holder),
        ("alice", "key rotation", None)
    );
    assert!(
        !scalar::<bool>(&db, "SELECT leader_fence('alpha', (SELECT holder_token FROM leader_leases WHERE role = 'alpha'))").await,
        "the holder's fence ({token}) is false once paused"
    );

    ctl(
        Some(&url),
        &["pause", "alpha", "--by", "bob", "--reason", "other"],
    )
    .await
    .expect(1, "already paused, by alice");
    let by: String = scalar(
        &db,
        "SELECT paused_by FROM leader_leases WHERE role = 'alpha'",
    )
    .await;
    assert_eq!(by, "alice", "a refused pause changes nothing");

    ctl(Some(&url), &["pause", "beta", "--by", " "])
        .await
        .expect(1, "--by is empty");
}

#[tokio::test]
async fn unpause_lifts_a_pause() {
    let db = database().await;
    let url = db.app_url();
    db.exec("SELECT leader_pause('alpha', 'alice')").await;
    ctl(Some(&url), &["unpause", "alpha"])
        .await
        .expect(0, "unpaused alpha");
    let paused: i64 = db
        .count("SELECT count(*) FROM leader_leases WHERE paused_at IS NOT NULL")
        .await;
    assert_eq!(paused, 0);
    lead(&db, ALPHA, "replica-1").await;
}

#[tokio::test]
async fn clear_cooldown_lets_the_next_acquire_run_the_role() {
    let db = database().await;
    let url = db.app_url();
    db.exec("UPDATE leader_leases SET not_before = now() + interval '1 hour' WHERE role = 'alpha'")
        .await;
    let refused = lease::acquire_one(
        db.admin(),
        ALPHA,
        "r",
        Duration::from_secs(1),
        &Timings::default(),
    )
    .await
    .unwrap();
    assert!(matches!(refused, Acquired::Refused(_)), "{refused:?}");
    ctl(Some(&url), &["clear-cooldown", "alpha"])
        .await
        .expect(0, "cleared the cooldown of alpha");
    let cooling = db
        .count("SELECT count(*) FROM leader_leases WHERE not_before IS NOT NULL")
        .await;
    assert_eq!(cooling, 0);
    lead(&db, ALPHA, "replica-1").await;
}

#[tokio::test]
async fn an_unknown_role_is_refused_by_each_role_command() {
    let db = database().await;
    let url = db.app_url();
    for args in [
        &["pause", "delta", "--by", "alice"][..],
        &["unpause", "delta"],
        &["clear-cooldown", "delta"],
    ] {
        ctl(Some(&url), args)
            .await
            .expect(1, "unknown role `delta`");
    }
    let rows = db.count("SELECT count(*) FROM leader_leases").await;
    assert_eq!(rows, 3);
}

#[tokio::test]
async fn a_malformed_role_name_is_refused_before_anything_is_sent() {
    let db = database().await;
    let url = db.app_url();
    for args in [
        &["pause", "Bad-Name", "--by", "alice"][..],
        &["unpause", "Bad-Name"],
        &["clear-cooldown", "Bad-Name"],
        &["check", "--role", "Bad-Name"],
    ] {
        ctl(Some(&url), args).await.expect(1, "Bad-Name");
    }
    let scratch = temp_dir("badname");
    let dir = scratch.path();
    ctl(
        None,
        &[
            "roles",
            "add",
            "ok_role",
            "Bad-Name",
            "--dir",
            dir.to_str().unwrap(),
        ],
    )
    .await
    .expect(1, "Bad-Name");
    assert_eq!(
        std::fs::read_dir(dir).unwrap().count(),
        0,
        "nothing written"
    );
}

#[tokio::test]
async fn an_unreachable_database_exits_2_for_every_database_command() {
    let url = closed_port_url();
    for args in [
        &["status"][..],
        &["status", "--json"],
        &["pause", "alpha", "--by", "alice"],
        &["unpause", "alpha"],
        &["clear-cooldown", "alpha"],
        &["check"],
        &["dashboard", "--listen", "127.0.0.1:0"],
    ] {
        ctl(Some(&url), args)
            .await
            .expect(2, "cannot reach the database");
    }
    ctl(Some("not a url"), &["status"])
        .await
        .expect(2, "not a PostgreSQL URL");
    ctl(None, &["status"]).await.expect(1, "--database-url");
}

#[tokio::test]
async fn a_database_without_the_migration_exits_2_and_check_names_the_fix() {
    let db = TestDb::unmigrated().await;
    let url = db.app_url();
    for args in [
        &["status"][..],
        &["pause", "alpha", "--by", "alice"],
        &["unpause", "alpha"],
        &["clear-cooldown", "alpha"],
    ] {
        ctl(Some(&url), args)
            .await
            .expect(2, "framework schema is missing");
    }
    let run = ctl(Some(&url), &["check"]).await;
    run.expect(2, "not ready");
    assert!(
        run.stdout
            .contains("table leader_leases is missing: apply the framework migrations"),
        "{run:#?}"
    );
}

#[tokio::test]
async fn check_passes_a_ready_database_and_names_a_role_it_lacks() {
    let db = database().await;
    let url = db.app_url();
    ctl(Some(&url), &["check", "--role", "alpha", "--role", "gamma"])
        .await
        .expect(0, "role gamma is registered");
    let run = ctl(Some(&url), &["check", "--role", "alpha", "--role", "delta"]).await;
    run.expect(2, "1 problem(s)");
    assert!(
        run.stdout.contains("role `delta` is not in the")
            && run
                .stdout
                .contains("`leaderctl roles add delta --dir MIGRATIONS` writes the migration"),
        "the fix is the command that writes it: {run:#?}"
    );

    db.exec("DROP FUNCTION leader_clear_cooldown(text)").await;
    let run = ctl(Some(&url), &["check"]).await;
    run.expect(2, "not ready");
    assert!(
        run.stdout
            .contains("function leader_clear_cooldown(text) is missing"),
        "{run:#?}"
    );
}

/// `check --role NAME:COUNT` refuses rows with another shard count, as the runtime leading the
/// role with COUNT shards refuses to start, and names the command that writes the fix.
#[tokio::test]
async fn check_compares_the_shard_count_the_code_leads_a_role_with() {
    let db = database().await;
    let url = db.app_url();
    let run = ctl(
        Some(&url),
        &["check", "--role", "alpha:4", "--role", "beta:1"],
    )
    .await;
    run.expect(2, "1 problem(s)");
    assert!(
        run.stdout.contains(
            "problem: role `alpha` has 1 shard(s) in leader_leases but the code leads it with 4: \
             `leaderctl roles reshard alpha 4 --dir MIGRATIONS` writes the migration"
        ) && !run.stdout.contains("docs/design"),
        "{run:#?}"
    );
    ctl(
        Some(&url),
        &["check", "--role", "alpha:1", "--role", "beta"],
    )
    .await
    .expect(
        0,
        "ok: role alpha is registered and seeded, with 1 shard(s)",
    )
    .expect(
        0,
        "ok: role beta is registered and seeded (its shard count is not checked",
    );

    db.exec("SELECT leader_reshard('alpha', 4)").await;
    ctl(Some(&url), &["check", "--role", "alpha:4"])
        .await
        .expect(0, "with 4 shard(s)");
    ctl(Some(&url), &["check", "--role", "alpha:1"])
        .await
        .expect(2, "1 problem(s)");
    ctl(Some(&url), &["check", "--role", "alpha:0"])
        .await
        .expect(
            1,
            "the shard count after `:` must be a number from 1 to 1024",
        );
}

fn read(dir: &Path, name: &str) -> String {
    std::fs::read_to_string(dir.join(name)).unwrap()
}

#[tokio::test]
async fn migrations_write_says_new_unchanged_or_out_of_date_and_overwrites_only_with_force() {
    let scratch = temp_dir("write");
    let dir = scratch.path().join("migrations");
    let dir_arg = dir.to_str().unwrap();
    let run = ctl(None, &["migrations", "write", dir_arg]).await;
    run.expect(0, "new, written");
    for file in MIGRATION_FILES {
        assert_eq!(read(&dir, file.name), file.sql, "{}", file.name);
        assert!(run.stdout.contains(file.name), "{run:#?}");
    }
    let run = ctl(None, &["migrations", "write", dir_arg]).await;
    run.expect(0, "unchanged");
    assert_eq!(
        run.stdout.matches("unchanged").count(),
        MIGRATION_FILES.len()
    );

    let edited = MIGRATION_FILES[1].name;
    let removed = MIGRATION_FILES[0].name;
    std::fs::write(dir.join(edited), "-- an older copy\n").unwrap();
    std::fs::remove_file(dir.join(removed)).unwrap();
    let run = ctl(None, &["migrations", "write", dir_arg]).await;
    run.expect(1, "--force");
    assert!(run.stdout.contains("OUT OF DATE"), "{run:#?}");
    assert_eq!(
        read(&dir, edited),
        "-- an older copy\n",
        "not overwritten without --force"
    );
    assert!(
        !dir.join(removed).exists(),
        "nothing written while a file is refused"
    );

    ctl(None, &["migrations", "write", dir_arg, "--force"])
        .await
        .expect(0, "overwritten (--force)");
    for file in MIGRATION_FILES {
        assert_eq!(read(&dir, file.name), file.sql, "{}", file.name);
    }
}

#[tokio::test]
async fn roles_add_writes_migrations_that_apply_and_keep_the_roles_registered_before() {
    let scratch = temp_dir("roles");
    let dir = scratch.path().join("migrations");
    let dir_arg = dir.to_str().unwrap();
    ctl(None, &["migrations", "write", dir_arg])
        .await
        .expect(0, "new");
    ctl(
        None,
        &["roles", "add", "billing", "dunning", "--dir", dir_arg],
    )
    .await
    .expect(0, "registers billing, dunning");
    ctl(
        None,
        &["roles", "add", "dunning", "email_outbox", "--dir", dir_arg],
    )
    .await
    .expect(0, "registers email_outbox; keeps billing, dunning");
    ctl(None, &["roles", "add", "billing", "--dir", dir_arg])
        .await
        .expect(1, "already registered");

    let db = TestDb::unmigrated().await;
    let migrator = sqlx::migrate::Migrator::new(dir).await.unwrap();
    migrator
        .run(db.admin())
        .await
        .expect("the written migrations apply");
    let roles: String = scalar(
        &db,
        "SELECT string_agg(role, ',' ORDER BY role) FROM leader_leases",
    )
    .await;
    assert_eq!(roles, "billing,dunning,email_outbox");
    let url = db.app_url();
    ctl(
        Some(&url),
        &[
            "check",
            "--role",
            "billing",
            "--role",
            "dunning",
            "--role",
            "email_outbox",
        ],
    )
    .await
    .expect(0, "role email_outbox is registered");

    let mut versions: Vec<i64> = migrator.iter().map(|m| m.version).collect();
    versions.dedup();
    let first_roles = versions[versions.len() - 2];
    migrator
        .undo(db.admin(), first_roles)
        .await
        .expect("the second one undoes");
    let roles: String = scalar(
        &db,
        "SELECT string_agg(role, ',' ORDER BY role) FROM leader_leases",
    )
    .await;
    assert_eq!(roles, "billing,dunning");
    let refused =
        sqlx::raw_sql("INSERT INTO leader_leases (role, holder_token) VALUES ('email_outbox', 1)")
            .execute(db.admin())
            .await;
    assert!(refused.is_err(), "the CHECK is back to the earlier roles");
}

#[tokio::test]
async fn the_commands_work_through_a_transaction_pooler() {
    let db = database().await;
    let Some(url) = db.pooler_url() else {
        assert!(
            std::env::var("LEADER_REQUIRE_POOLER").is_err(),
            "LEADER_REQUIRE_POOLER is set but LEADER_POOLER_URL is not: run under with-postgres"
        );
        eprintln!("skipped: no LEADER_POOLER_URL (PgBouncer is not installed)");
        return;
    };
    lead(&db, ALPHA, "replica-1").await;
    ctl(Some(&url), &["status"]).await.expect(0, "replica-1");
    ctl(Some(&url), &["pause", "beta", "--by", "alice"])
        .await
        .expect(0, "paused beta");
    ctl(Some(&url), &["pause", "beta", "--by", "bob"])
        .await
        .expect(1, "already paused");
    ctl(Some(&url), &["unpause", "beta"])
        .await
        .expect(0, "unpaused beta");
    db.exec("UPDATE leader_leases SET not_before = now() + interval '1 hour' WHERE role = 'gamma'")
        .await;
    ctl(Some(&url), &["clear-cooldown", "gamma"])
        .await
        .expect(0, "cleared");
    ctl(Some(&url), &["check", "--role", "alpha"])
        .await
        .expect(0, "ok");
    let changed = db
        .count("SELECT count(*) FROM leader_leases WHERE paused_at IS NOT NULL OR not_before IS NOT NULL")
        .await;
    assert_eq!(changed, 0);
}

#[tokio::test]
async fn an_app_role_granted_by_leader_grant_app_role_can_run_every_command() {
    let db = database().await;
    db.exec(
        "DO $$ BEGIN
             CREATE ROLE leader_app LOGIN;
         EXCEPTION WHEN duplicate_object OR unique_violation THEN NULL;
         END $$;
         SELECT leader_grant_app_role('leader_app');",
    )
    .await;
    db.exec("UPDATE leader_leases SET not_before = now() + interval '1 hour' WHERE role = 'gamma'")
        .await;
    let url = db.app_url_as("leader_app");
    ctl(Some(&url), &["status"]).await.expect(0, "gamma");
    ctl(Some(&url), &["check", "--role", "alpha"])
        .await
        .expect(0, "ok");
    ctl(Some(&url), &["pause", "beta", "--by", "alice"])
        .await
        .expect(0, "paused beta");
    ctl(Some(&url), &["pause", "beta", "--by", "bob"])
        .await
        .expect(1, "already paused");
    ctl(Some(&url), &["unpause", "beta"])
        .await
        .expect(0, "unpaused beta");
    ctl(Some(&url), &["clear-cooldown", "gamma"])
        .await
        .expect(0, "cleared");
    let changed = db
        .count("SELECT count(*) FROM leader_leases WHERE paused_at IS NOT NULL OR not_before IS NOT NULL")
        .await;
    assert_eq!(changed, 0);
}

#[tokio::test]
async fn roles_add_writes_one_plain_file_where_the_folder_has_no_down_migrations() {
    let scratch = temp_dir("plain");
    let dir = scratch.path();
    std::fs::write(
        dir.join("0001_roles.sql"),
        "ALTER TABLE leader_leases ADD CONSTRAINT leader_leases_role_registered CHECK (role IN ('a'));",
    )
    .unwrap();
    ctl(None, &["roles", "add", "b", "--dir", dir.to_str().unwrap()])
        .await
        .expect(0, "registers b; keeps a");
    let mut names: Vec<String> = std::fs::read_dir(dir)
        .unwrap()
        .map(|e| e.unwrap().file_name().into_string().unwrap())
        .collect();
    names.sort();
    assert_eq!(names.len(), 2, "{names:?}");
    assert!(names[1].ends_with("_leader_roles.sql"), "{names:?}");
    assert!(read(dir, &names[1]).contains("CHECK (role IN ('a', 'b'))"));
    ctl(
        None,
        &[
            "roles",
            "add",
            "c",
            "--dir",
            dir.join("missing").to_str().unwrap(),
        ],
    )
    .await
    .expect(1, "is not a folder");
}

/// `url` logged in as `user` instead.
fn as_user(url: &str, user: &str) -> String {
    let start = url.find("://").map_or(0, |scheme| scheme + 3);
    let rest = &url[start..];
    let host = rest.find('@').map_or(rest, |at| &rest[at + 1..]);
    format!("{}{user}@{host}", &url[..start])
}

/// The `.sql` files in `dir`, sorted.
fn sql_files(dir: &Path) -> Vec<String> {
    let mut names: Vec<String> = std::fs::read_dir(dir)
        .unwrap()
        .map(|e| e.unwrap().file_name().into_string().unwrap())
        .filter(|n| n.ends_with(".sql"))
        .collect();
    names.sort();
    names
}

/// The one file in `dir` whose name ends with `suffix`.
fn the_file(dir: &Path, suffix: &str) -> String {
    let found: Vec<String> = sql_files(dir)
        .into_iter()
        .filter(|n| n.ends_with(suffix))
        .collect();
    assert_eq!(found.len(), 1, "one *{suffix} in {:?}", sql_files(dir));
    found.into_iter().next().unwrap()
}

/// The login role the grant tests use (cluster-wide, so created if missing).
async fn create_login(db: &TestDb) {
    db.exec(
        "DO $$ BEGIN
             CREATE ROLE leader_app LOGIN;
         EXCEPTION WHEN duplicate_object OR unique_violation THEN NULL;
         END $$;",
    )
    .await;
}

async fn applied_versions(db: &TestDb) -> Vec<i64> {
    sqlx::raw_sql("SELECT version FROM _sqlx_migrations WHERE success ORDER BY version")
        .fetch_all(db.admin())
        .await
        .unwrap()
        .iter()
        .map(|row| row.get(0))
        .collect()
}

#[tokio::test]
async fn migrations_write_with_roles_and_a_grant_writes_every_migration_once() {
    let scratch = temp_dir("onestep");
    let dir = scratch.path().join("migrations");
    let dir_arg = dir.to_str().unwrap();
    let args = [
        "migrations",
        "write",
        dir_arg,
        "--role",
        "billing",
        "--role",
        "email_outbox",
        "--grant",
        "leader_app",
    ];
    let run = ctl(None, &args).await;
    run.expect(0, "new, written: registers billing, email_outbox");
    assert!(
        run.stdout
            .contains("new, written: SELECT leader_grant_app_role('leader_app')"),
        "{run:#?}"
    );
    let written = sql_files(&dir);
    assert_eq!(written.len(), MIGRATION_FILES.len() + 4, "{written:?}");
    let roles_up = the_file(&dir, "_leader_roles.up.sql");
    let grant_up = the_file(&dir, "_leader_grant_leader_app.up.sql");
    the_file(&dir, "_leader_roles.down.sql");
    the_file(&dir, "_leader_grant_leader_app.down.sql");
    assert!(
        MIGRATION_FILES.iter().all(|f| f.name < roles_up.as_str()) && roles_up < grant_up,
        "the framework's run first, then the roles, then the grant: {written:?}"
    );
    let roles_sql = read(&dir, &roles_up);
    assert!(
        roles_sql.contains("CHECK (role IN ('billing', 'email_outbox'))"),
        "{roles_sql}"
    );
    assert!(roles_sql.contains("ON CONFLICT DO NOTHING;"), "{roles_sql}");
    assert!(
        read(&dir, &grant_up).contains("SELECT leader_grant_app_role('leader_app');"),
        "{}",
        read(&dir, &grant_up)
    );

    // The same command again writes nothing, and says why per file and role.
    let again = ctl(None, &args).await;
    again.expect(0, "unchanged");
    assert_eq!(
        again.stdout.matches("unchanged").count(),
        MIGRATION_FILES.len()
    );
    for line in ["role billing", "role email_outbox", "grant to leader_app"] {
        assert!(again.stdout.contains(line), "{line}: {again:#?}");
    }
    assert_eq!(
        again
            .stdout
            .matches("already registered and seeded")
            .count(),
        2
    );
    assert!(
        again
            .stdout
            .contains(&format!("already granted ({grant_up})")),
        "{again:#?}"
    );
    assert!(!again.stdout.contains("new, written"), "{again:#?}");
    assert_eq!(sql_files(&dir), written, "nothing new");

    // One role more and a second login: only those are written.
    let more = ctl(
        None,
        &[
            "migrations",
            "write",
            dir_arg,
            "--role",
            "billing",
            "--role",
            "dunning",
            "--grant",
            "leader_app",
            "--grant",
            "other_app",
        ],
    )
    .await;
    more.expect(
        0,
        "registers dunning; keeps billing, email_outbox; seeds dunning",
    );
    assert!(more.stdout.contains("already granted"), "{more:#?}");
    assert!(
        more.stdout
            .contains("SELECT leader_grant_app_role('other_app')"),
        "{more:#?}"
    );
    assert_eq!(sql_files(&dir).len(), written.len() + 4);

    // They apply, and the login role can run the service's check.
    let db = TestDb::unmigrated().await;
    create_login(&db).await;
    db.exec(
        "DO $$ BEGIN
             CREATE ROLE other_app LOGIN;
         EXCEPTION WHEN duplicate_object OR unique_violation THEN NULL;
         END $$;",
    )
    .await;
    ctl(Some(&db.url()), &["migrate", "--dir", dir_arg])
        .await
        .expect(0, "applied");
    let roles: String = scalar(
        &db,
        "SELECT string_agg(role, ',' ORDER BY role) FROM leader_leases",
    )
    .await;
    assert_eq!(roles, "billing,dunning,email_outbox");
    ctl(
        Some(&db.app_url_as("leader_app")),
        &["check", "--role", "billing", "--role", "dunning"],
    )
    .await
    .expect(0, "role dunning is registered and seeded");
}

#[tokio::test]
async fn migrations_write_refuses_a_bad_role_or_login_before_writing_anything() {
    let scratch = temp_dir("onestep-bad");
    let dir = scratch.path().join("migrations");
    let dir_arg = dir.to_str().unwrap();
    ctl(
        None,
        &["migrations", "write", dir_arg, "--role", "Bad-Name"],
    )
    .await
    .expect(1, "Bad-Name");
    ctl(None, &["migrations", "write", dir_arg, "--grant", ""])
        .await
        .expect(1, "is empty");
    let long = "x".repeat(64);
    ctl(None, &["migrations", "write", dir_arg, "--grant", &long])
        .await
        .expect(1, "63 bytes");
    assert!(!dir.exists(), "nothing written");

    // A framework file that differs refuses the roles and the grant too.
    ctl(None, &["migrations", "write", dir_arg])
        .await
        .expect(0, "new, written");
    std::fs::write(dir.join(MIGRATION_FILES[1].name), "-- edited\n").unwrap();
    ctl(
        None,
        &[
            "migrations",
            "write",
            dir_arg,
            "--role",
            "billing",
            "--grant",
            "leader_app",
        ],
    )
    .await
    .expect(1, "--force");
    assert_eq!(sql_files(&dir).len(), MIGRATION_FILES.len());
}

/// The issue's sequence: `#[leader_role]` refused a role missing from the CHECK, someone added it
/// to the CHECK by hand and nothing else, start-up refused the role for its missing row.
#[tokio::test]
async fn roles_add_seeds_a_role_the_check_lists_but_no_migration_seeds() {
    let scratch = temp_dir("seed-only");
    let dir = scratch.path().join("migrations");
    let dir_arg = dir.to_str().unwrap();
    ctl(None, &["migrations", "write", dir_arg])
        .await
        .expect(0, "new");
    std::fs::write(
        dir.join("20270101000000_roles.up.sql"),
        "ALTER TABLE leader_leases ADD CONSTRAINT leader_leases_role_registered
             CHECK (role IN ('alpha', 'beta'));
         INSERT INTO leader_leases (role, holder_token) VALUES ('alpha', leader_seed_token());",
    )
    .unwrap();
    std::fs::write(
        dir.join("20270101000000_roles.down.sql"),
        "DELETE FROM leader_leases;",
    )
    .unwrap();

    let run = ctl(None, &["roles", "add", "alpha", "beta", "--dir", dir_arg]).await;
    run.expect(
        0,
        "seeds beta; beta already in the role CHECK, never seeded",
    );
    assert!(
        run.stdout
            .contains("role alpha                                       already registered and seeded (20270101000000_roles.up.sql)"),
        "{run:#?}"
    );
    let up = the_file(&dir, "_leader_roles.up.sql");
    let sql = read(&dir, &up);
    assert!(
        !sql.contains("CONSTRAINT"),
        "the CHECK is left alone: {sql}"
    );
    assert!(
        sql.contains("VALUES ('beta', leader_seed_token())\nON CONFLICT DO NOTHING;"),
        "{sql}"
    );
    let down = read(&dir, &up.replace(".up.sql", ".down.sql"));
    assert_eq!(down, "DELETE FROM leader_leases WHERE role IN ('beta');\n");

    // Now nothing is missing, and it says exactly that.
    ctl(None, &["roles", "add", "beta", "--dir", dir_arg])
        .await
        .expect(
            1,
            "every role given (beta) is already registered and seeded",
        );

    let db = TestDb::unmigrated().await;
    ctl(Some(&db.url()), &["migrate", "--dir", dir_arg])
        .await
        .expect(0, "applied");
    ctl(
        Some(&db.app_url()),
        &["check", "--role", "alpha", "--role", "beta"],
    )
    .await
    .expect(0, "role beta is registered and seeded");
}

#[tokio::test]
async fn roles_add_registers_a_seeded_role_the_check_lacks_without_seeding_it_again() {
    let scratch = temp_dir("check-only");
    let dir = scratch.path();
    std::fs::write(
        dir.join("0001_roles.sql"),
        "INSERT INTO leader_leases (role, holder_token) VALUES ('a', 1), ('b', 2);
         ALTER TABLE leader_leases ADD CONSTRAINT leader_leases_role_registered
             CHECK (role IN ('a'));",
    )
    .unwrap();
    ctl(None, &["roles", "add", "b", "--dir", dir.to_str().unwrap()])
        .await
        .expect(0, "registers b; keeps a");
    let sql = read(dir, &the_file(dir, "_leader_roles.sql"));
    assert!(sql.contains("CHECK (role IN ('a', 'b'))"), "{sql}");
    assert!(!sql.contains("INSERT"), "b is seeded already: {sql}");
}

#[tokio::test]
async fn migrate_applies_the_framework_migrations_once_and_says_so_per_migration() {
    let db = TestDb::unmigrated().await;
    let url = db.url();
    let ups = MIGRATION_FILES
        .iter()
        .filter(|f| !f.name.ends_with(".down.sql"))
        .count();
    let run = ctl(Some(&url), &["migrate"]).await;
    run.expect(0, &format!("{ups} applied, 0 already applied"));
    assert_eq!(run.stdout.matches(" applied in ").count(), ups, "{run:#?}");
    assert_eq!(applied_versions(&db).await.len(), ups);
    let again = ctl(Some(&url), &["migrate"]).await;
    again.expect(0, &format!("0 applied, {ups} already applied"));
    assert_eq!(again.stdout.matches("already applied\n").count(), ups);
    let run = ctl(Some(&db.app_url()), &["check"]).await;
    assert!(
        !run.stdout.contains("is missing") && !run.stdout.contains("out of date"),
        "{run:#?}"
    );
}

/// The embedded set and a folder holding the framework's files share their versions and
/// checksums, so either applies after the other without conflict; a folder that lacks what was
/// applied, or changed it, is refused before anything runs.
#[tokio::test]
async fn migrate_dir_applies_the_folder_alone_and_refuses_one_sqlx_would_refuse() {
    let scratch = temp_dir("migrate-dir");
    let dir = scratch.path().join("migrations");
    let dir_arg = dir.to_str().unwrap();
    let db = TestDb::unmigrated().await;
    let url = db.url();

    let bare_scratch = temp_dir("migrate-bare");
    let bare = bare_scratch.path();
    std::fs::write(
        bare.join("0001_app.sql"),
        "CREATE TABLE app_table (id int);",
    )
    .unwrap();
    ctl(Some(&url), &["migrate", "--dir", bare.to_str().unwrap()])
        .await
        .expect(1, "does not hold this leaderctl's framework migrations");
    ctl(
        Some(&url),
        &["migrate", "--dir", &format!("{dir_arg}-missing")],
    )
    .await
    .expect(1, "is not a folder");
    assert_eq!(
        db.count("SELECT count(*) FROM pg_tables WHERE tablename = '_sqlx_migrations'")
            .await,
        0,
        "nothing ran"
    );

    // The embedded set first, then the folder: the folder's copies are found applied.
    ctl(Some(&url), &["migrate"]).await.expect(0, "applied");
    ctl(None, &["migrations", "write", dir_arg, "--role", "alpha"])
        .await
        .expect(0, "new, written");
    let run = ctl(Some(&url), &["migrate", "--dir", dir_arg]).await;
    run.expect(0, "1 applied");
    assert!(run.stdout.contains("leader roles"), "{run:#?}");
    // And the embedded set after the folder leaves the application's migration alone.
    ctl(Some(&url), &["migrate"]).await.expect(0, "0 applied");

    // The folder without the roles migration that was applied from it (both its files: sqlx
    // counts a version as known while its .down.sql is there).
    let roles = the_file(&dir, "_leader_roles.up.sql");
    let roles_down = roles.replace(".up.sql", ".down.sql");
    let (kept, kept_down) = (read(&dir, &roles), read(&dir, &roles_down));
    std::fs::remove_file(dir.join(&roles)).unwrap();
    std::fs::remove_file(dir.join(&roles_down)).unwrap();
    ctl(Some(&url), &["migrate", "--dir", dir_arg])
        .await
        .expect(1, "applied that");
    // ...or with it changed.
    std::fs::write(dir.join(&roles), format!("{kept}\n-- edited\n")).unwrap();
    std::fs::write(dir.join(&roles_down), kept_down).unwrap();
    ctl(Some(&url), &["migrate", "--dir", dir_arg])
        .await
        .expect(1, "was applied with other contents");
}

#[tokio::test]
async fn migrate_rolls_back_a_failing_migration_and_says_which() {
    let scratch = temp_dir("migrate-fail");
    let dir = scratch.path().join("migrations");
    let dir_arg = dir.to_str().unwrap();
    ctl(
        None,
        &[
            "migrations",
            "write",
            dir_arg,
            "--grant",
            "no_such_login_role",
        ],
    )
    .await
    .expect(0, "new, written");
    let grant = the_file(&dir, "_leader_grant_no_such_login_role.up.sql");
    let version: i64 = grant.split('_').next().unwrap().parse().unwrap();
    let db = TestDb::unmigrated().await;
    let run = ctl(Some(&db.url()), &["migrate", "--dir", dir_arg]).await;
    run.expect(
        1,
        &format!("migration {version} failed and was rolled back"),
    );
    assert!(
        run.stderr.contains("no_such_login_role"),
        "names the cause: {run:#?}"
    );
    let applied = applied_versions(&db).await;
    assert!(!applied.contains(&version), "{applied:?}");
    assert_eq!(
        applied.len(),
        MIGRATION_FILES.len() / 2,
        "the ones before it stay"
    );
}

#[tokio::test]
async fn migrate_waits_for_the_migration_lock_at_most_lock_timeout_secs() {
    use sqlx::Connection;
    use sqlx::migrate::Migrate;

    let db = TestDb::unmigrated().await;
    let mut holder = sqlx::PgConnection::connect(&db.url()).await.unwrap();
    holder.lock().await.unwrap();
    let started = std::time::Instant::now();
    ctl(Some(&db.url()), &["migrate", "--lock-timeout-secs", "1"])
        .await
        .expect(1, "waited 1s for sqlx's migration lock");
    assert!(started.elapsed() < Duration::from_secs(10));
    holder.unlock().await.unwrap();
    ctl(Some(&db.url()), &["migrate", "--lock-timeout-secs", "1"])
        .await
        .expect(0, "applied");
}

#[tokio::test]
async fn migrate_as_the_application_role_is_refused_with_who_should_run_it() {
    let db = TestDb::new().await;
    sqlx::raw_sql(ROLES).execute(db.admin()).await.unwrap();
    create_login(&db).await;
    db.exec("SELECT leader_grant_app_role('leader_app')").await;
    ctl(Some(&as_user(&db.url(), "leader_app")), &["migrate"])
        .await
        .expect(1, "as the role that owns the schema");
    ctl(Some(&closed_port_url()), &["migrate"])
        .await
        .expect(2, "cannot reach the database");
    ctl(None, &["migrate"]).await.expect(1, "--database-url");
}

/// Through PgBouncer in transaction mode the migration lock would be taken on one server session
/// and the migrations run on others, leaving the lock with a pooled connection. `migrate` is
/// refused every time, before it sends anything: nothing applied, no lock left; a direct run
/// afterwards applies everything.
#[tokio::test]
async fn migrate_through_a_transaction_pooler_is_refused_before_it_sends_anything() {
    let db = TestDb::unmigrated().await;
    let Some(pooled) = db.pooler_url() else {
        assert!(
            std::env::var("LEADER_REQUIRE_POOLER").is_err(),
            "LEADER_REQUIRE_POOLER is set but LEADER_POOLER_URL is not: run under with-postgres"
        );
        eprintln!("skipped: no LEADER_POOLER_URL (PgBouncer is not installed)");
        return;
    };
    for _ in 0..3 {
        ctl(Some(&pooled), &["migrate", "--lock-timeout-secs", "5"])
            .await
            .expect(1, "is a pooler, not PostgreSQL itself");
    }
    let tables = db
        .count("SELECT count(*) FROM pg_tables WHERE tablename IN ('_sqlx_migrations', 'leader_leases')")
        .await;
    assert_eq!(tables, 0, "nothing was applied");
    let locks = db
        .count(
            "SELECT count(*) FROM pg_locks WHERE locktype = 'advisory'
                AND database = (SELECT oid FROM pg_database WHERE datname = current_database())",
        )
        .await;
    assert_eq!(locks, 0, "no advisory lock was left on a pooled session");
    ctl(Some(&db.url()), &["migrate"])
        .await
        .expect(0, "the database has every migration");
}

/// Ends `role`'s tick held under `fence` with `outcome`, for a role ticking every `interval`.
async fn end_tick(
    db: &TestDb,
    fence: leader_core::Fence,
    outcome: leader_core::ReleaseOutcome,
    interval: Duration,
) {
    lease::release(db.admin(), fence, outcome, interval, &Timings::default())
        .await
        .unwrap();
}

/// Grants `role` to `holder` as an interval role ticking every `interval`.
async fn grant_every(
    db: &TestDb,
    role: Role,
    holder: &str,
    interval: Duration,
) -> leader_core::Fence {
    match lease::acquire_one(db.admin(), role, holder, interval, &Timings::default())
        .await
        .unwrap()
    {
        Acquired::Granted(grant) => grant.fence,
        refused => panic!("{role} not granted: {refused:?}"),
    }
}

/// `next_due` is the view's `next_due_at`: one interval (as the last grant ran it) after the last
/// completed tick, not before `not_before`; `-` where the view cannot tell. Read in the same
/// statement as the rest of the row.
#[tokio::test]
async fn status_shows_when_each_interval_role_is_next_due() {
    let db = database().await;
    let hour = Duration::from_secs(3600);
    // alpha: leading, so running.
    lead(&db, ALPHA, "replica-1").await;
    // beta: completed a tick just now, every hour: due in about an hour.
    let fence = grant_every(&db, BETA, "replica-1", hour).await;
    end_tick(&db, fence, leader_core::ReleaseOutcome::Completed, hour).await;
    // gamma: completed a tick every 1500 ms, the tick's end moved ten minutes back: late.
    let gamma = Role::from_static("gamma");
    let every = Duration::from_millis(1500);
    let fence = grant_every(&db, gamma, "replica-1", every).await;
    end_tick(&db, fence, leader_core::ReleaseOutcome::Completed, every).await;
    db.exec(
        "UPDATE leader_leases SET last_tick_ended_at = last_tick_ended_at - interval '10 minutes'
          WHERE role = 'gamma'",
    )
    .await;
    let url = db.app_url();
    let run = ctl(Some(&url), &["status"]).await;
    run.expect(0, "next_due");
    let lines: Vec<&str> = run.stdout.lines().collect();
    assert!(lines[1].ends_with(" running"), "alpha leads: {}", lines[1]);
    assert!(
        lines[2].contains("every 1h") && lines[2].contains(" in "),
        "beta is due later: {}",
        lines[2]
    );
    assert!(
        lines[3].contains("every 1500ms") && lines[3].contains(" late "),
        "gamma is late: {}",
        lines[3]
    );
    let run = ctl(Some(&url), &["status", "--json"]).await;
    let rows: serde_json::Value = serde_json::from_str(&run.stdout).unwrap();
    let rows = rows.as_array().unwrap();
    let on_time: Vec<&serde_json::Value> = rows.iter().map(|row| &row["on_time"]).collect();
    assert_eq!(on_time, [true, true, false]);
    let at = |row: &serde_json::Value, name: &str| {
        chrono::DateTime::parse_from_rfc3339(row[name].as_str().unwrap()).unwrap()
    };
    for (row, interval) in [(&rows[1], 3_600_000), (&rows[2], 1_500)] {
        assert_eq!(
            at(row, "next_due_at") - at(row, "last_tick_ended_at"),
            chrono::TimeDelta::milliseconds(interval),
            "{row}"
        );
    }

    // A cooldown later than the interval's end: due at not_before.
    let cooled = "UPDATE leader_leases SET not_before = last_tick_ended_at + interval '2 hours'
                   WHERE role = 'beta'";
    db.exec(cooled).await;
    let run = ctl(Some(&url), &["status", "--json"]).await;
    let rows: serde_json::Value = serde_json::from_str(&run.stdout).unwrap();
    let beta = &rows.as_array().unwrap()[1];
    assert_eq!(beta["next_due_at"], beta["not_before"], "{beta}");

    // Never granted, or paused: the view cannot say, and neither does the table.
    db.exec("SELECT leader_pause('beta', 'ops')").await;
    let fresh = TestDb::new().await;
    sqlx::raw_sql(ROLES).execute(fresh.admin()).await.unwrap();
    for (url, role) in [(url.clone(), "beta"), (fresh.app_url(), "alpha")] {
        let run = ctl(Some(&url), &["status", "--json"]).await;
        let rows: serde_json::Value = serde_json::from_str(&run.stdout).unwrap();
        let row = rows
            .as_array()
            .unwrap()
            .iter()
            .find(|row| row["role"] == role)
            .unwrap();
        assert_eq!(row["next_due_at"], serde_json::Value::Null, "{row}");
        assert_eq!(row["on_time"], serde_json::Value::Null, "{row}");
    }
}

/// A role on a cron schedule: `status` shows its schedule, and its next instant as next due.
#[tokio::test]
async fn status_shows_a_cron_role_s_schedule_and_next_instant() {
    let db = database().await;
    let cron = leader_schedule::CronSchedule::new("0 2 * * *", "Europe/Berlin").unwrap();
    let now: chrono::DateTime<chrono::Utc> = sqlx::query_scalar("SELECT now()")
        .fetch_one(db.admin())
        .await
        .unwrap();
    let planned = cron.plan(None, now).unwrap();
    let wanted = [lease::Wanted::instant(BETA, &cron, Some(&planned))];
    let Acquired::Granted(grant) =
        lease::acquire(db.admin(), &wanted, "replica-1", 1, &Timings::default())
            .await
            .unwrap()
            .remove(0)
    else {
        panic!("the latest past instant is due");
    };
    lease::release(
        db.admin(),
        grant.fence,
        leader_core::ReleaseOutcome::Completed,
        Duration::from_secs(86_400),
        &Timings::default(),
    )
    .await
    .unwrap();
    let url = db.app_url();
    let run = ctl(Some(&url), &["status"]).await;
    run.expect(0, "schedule");
    let beta = run
        .stdout
        .lines()
        .find(|line| line.starts_with("beta"))
        .unwrap();
    assert!(
        beta.contains("cron \"0 2 * * *\" in Europe/Berlin") && beta.contains(" in "),
        "beta shows its schedule and is next due at its next instant: {beta}"
    );
    let run = ctl(Some(&url), &["status", "--json"]).await;
    let rows: serde_json::Value = serde_json::from_str(&run.stdout).unwrap();
    let beta = rows
        .as_array()
        .unwrap()
        .iter()
        .find(|row| row["role"] == "beta")
        .unwrap();
    let at = |name: &str| {
        chrono::DateTime::parse_from_rfc3339(beta[name].as_str().unwrap())
            .unwrap()
            .to_utc()
    };
    assert_eq!(at("last_completed_instant"), planned.instant, "{beta}");
    assert_eq!(Some(at("next_due_at")), planned.following, "{beta}");
    assert_eq!(beta["on_time"], true, "{beta}");
}

#[tokio::test]
async fn a_sharded_role_shows_its_shards_under_it_and_pauses_whole_or_by_shard() {
    let db = database().await;
    let url = db.app_url();
    db.exec("SELECT leader_reshard('alpha', 3)").await;
    let wanted = lease::Wanted::every(ALPHA, Duration::from_secs(60))
        .in_shard(leader_core::Shard::new(1, 3).unwrap());
    let granted = lease::acquire(db.admin(), &[wanted], "replica-1", 1, &Timings::default())
        .await
        .unwrap();
    assert!(matches!(granted[0], Acquired::Granted(_)), "{granted:?}");

    let status = ctl(Some(&url), &["status"]).await;
    status.expect(0, "");
    let lines: Vec<&str> = status.stdout.lines().collect();
    let at = lines
        .iter()
        .position(|line| line.starts_with("alpha "))
        .unwrap_or_else(|| panic!("alpha's line:\n{}", status.stdout));
    assert!(
        lines[at].contains("3 shards: 2 idle, 1 leading") && lines[at].contains("replica-1"),
        "{}",
        status.stdout
    );
    for (i, shard) in ["0/3", "1/3", "2/3"].iter().enumerate() {
        assert!(
            lines[at + 1 + i].starts_with(&format!("  {shard} ")),
            "{}",
            status.stdout
        );
    }
    let json = ctl(Some(&url), &["status", "--json"]).await;
    json.expect(0, "");
    let rows: serde_json::Value = serde_json::from_str(&json.stdout).unwrap();
    let shards: Vec<(i64, i64)> = rows
        .as_array()
        .unwrap()
        .iter()
        .filter(|row| row["role"] == "alpha")
        .map(|row| {
            (
                row["shard_index"].as_i64().unwrap(),
                row["shard_count"].as_i64().unwrap(),
            )
        })
        .collect();
    assert_eq!(shards, [(0, 3), (1, 3), (2, 3)]);

    ctl(
        Some(&url),
        &["pause", "alpha", "--shard", "1", "--by", "alice"],
    )
    .await
    .expect(0, "paused shard 1 of alpha");
    let paused: Vec<i32> = sqlx::query_scalar(
        "SELECT shard_index FROM leader_leases WHERE role = 'alpha' AND paused_at IS NOT NULL",
    )
    .fetch_all(db.admin())
    .await
    .unwrap();
    assert_eq!(paused, [1], "only that shard");
    ctl(
        Some(&url),
        &["pause", "alpha", "--shard", "7", "--by", "alice"],
    )
    .await
    .expect(1, "role `alpha` has no shard 7");
    ctl(Some(&url), &["unpause", "alpha", "--shard", "1"])
        .await
        .expect(0, "unpaused shard 1 of alpha");

    // The whole role: every shard, and a second pause is refused.
    ctl(Some(&url), &["pause", "alpha", "--by", "bob"])
        .await
        .expect(0, "paused alpha");
    assert_eq!(
        db.count(
            "SELECT count(*) FROM leader_leases WHERE role = 'alpha' AND paused_at IS NOT NULL"
        )
        .await,
        3
    );
    ctl(Some(&url), &["pause", "alpha", "--by", "carol"])
        .await
        .expect(1, "already paused, by bob");
}

#[tokio::test]
async fn roles_reshard_writes_a_migration_that_applies() {
    let scratch = temp_dir("reshard");
    let dir = scratch.path();
    ctl(
        None,
        &[
            "migrations",
            "write",
            dir.to_str().unwrap(),
            "--role",
            "alpha",
        ],
    )
    .await
    .expect(0, "");
    ctl(
        None,
        &[
            "roles",
            "reshard",
            "alpha",
            "4",
            "--dir",
            dir.to_str().unwrap(),
        ],
    )
    .await
    .expect(0, "alpha from 1 to 4 shard(s)");
    ctl(
        None,
        &[
            "roles",
            "reshard",
            "alpha",
            "4",
            "--dir",
            dir.to_str().unwrap(),
        ],
    )
    .await
    .expect(1, "already has 4 shard(s)");
    let db = TestDb::unmigrated().await;
    let migrator = sqlx::migrate::Migrator::new(dir).await.unwrap();
    migrator.run(db.admin()).await.expect("the folder applies");
    assert_eq!(
        db.count("SELECT count(*) FROM leader_leases WHERE role = 'alpha' AND shard_count = 4")
            .await,
        4
    );
}

#[tokio::test]
async fn pause_shard_refuses_a_paused_shard_and_tells_an_unknown_role_from_an_unknown_shard() {
    let db = database().await;
    let url = db.app_url();
    db.exec("SELECT leader_reshard('alpha', 2)").await;
    let pauses = "SELECT shard_index, paused_by, pause_reason FROM leader_leases \
                  WHERE role = 'alpha' AND paused_at IS NOT NULL ORDER BY shard_index";

    ctl(
        Some(&url),
        &[
            "pause",
            "alpha",
            "--shard",
            "1",
            "--by",
            "alice",
            "--reason",
            "replaying",
        ],
    )
    .await
    .expect(0, "paused shard 1 of alpha");
    ctl(
        Some(&url),
        &["pause", "alpha", "--shard", "1", "--by", "bob"],
    )
    .await
    .expect(1, "shard 1 of `alpha` is already paused, by alice since")
    .expect(
        1,
        "(replaying): nothing changed; `leaderctl unpause alpha --shard 1`",
    );
    let rows: Vec<(i32, String, Option<String>)> =
        sqlx::query_as(pauses).fetch_all(db.admin()).await.unwrap();
    assert_eq!(
        rows,
        [(1, "alice".to_owned(), Some("replaying".to_owned()))],
        "the first pause stands"
    );

    // A shard paused with its whole role is paused too; unpausing it leaves the other paused.
    ctl(Some(&url), &["unpause", "alpha", "--shard", "1"])
        .await
        .expect(0, "unpaused shard 1 of alpha");
    ctl(Some(&url), &["pause", "alpha", "--by", "carol"])
        .await
        .expect(0, "paused alpha");
    ctl(
        Some(&url),
        &["pause", "alpha", "--shard", "0", "--by", "bob"],
    )
    .await
    .expect(1, "shard 0 of `alpha` is already paused, by carol");
    ctl(Some(&url), &["unpause", "alpha", "--shard", "0"])
        .await
        .expect(0, "unpaused shard 0 of alpha");
    let rows: Vec<(i32, String, Option<String>)> =
        sqlx::query_as(pauses).fetch_all(db.admin()).await.unwrap();
    assert_eq!(rows, [(1, "carol".to_owned(), None)]);

    // An unsharded role has shard 0 alone; a role without rows is an unknown role.
    ctl(
        Some(&url),
        &["pause", "beta", "--shard", "0", "--by", "alice"],
    )
    .await
    .expect(0, "paused shard 0 of beta");
    for args in [
        &["pause", "beta", "--shard", "1", "--by", "alice"][..],
        &["unpause", "beta", "--shard", "1"][..],
    ] {
        ctl(Some(&url), args).await.expect(
            1,
            "role `beta` has no shard 1: `leaderctl status` lists its shards",
        );
    }
    db.exec("DELETE FROM leader_leases WHERE role = 'gamma'")
        .await;
    for args in [
        &["pause", "gamma", "--shard", "0", "--by", "alice"][..],
        &["unpause", "gamma", "--shard", "0"][..],
    ] {
        ctl(Some(&url), args).await.expect(
            1,
            "unknown role `gamma`: `leaderctl status` lists the registered roles",
        );
    }
}
