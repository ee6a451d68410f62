//! `leaderctl dashboard` as an operator runs it: the built binary, against a real PostgreSQL
//! (through PgBouncer on the pooler pass). It serves the pages as the operator's login that
//! `migrations write --operator` grants, and refuses, in one line with exit code 1, the
//! application's login, writes without a token in the environment, and an address it cannot
//! listen on.

use std::process::Stdio;
use std::time::Duration;

use leader_testkit::TestDb;
use tokio::io::{AsyncBufReadExt, AsyncReadExt, AsyncWriteExt, BufReader};
use tokio::process::Command;

const ROLES: &str = "
ALTER TABLE leader_leases ADD CONSTRAINT leader_leases_role_registered
    CHECK (role IN ('alpha', 'beta'));
INSERT INTO leader_leases (role, holder_token)
VALUES ('alpha', leader_seed_token()), ('beta', leader_seed_token());
DO $$ BEGIN CREATE ROLE leader_app LOGIN;
EXCEPTION WHEN duplicate_object OR unique_violation THEN NULL; END $$;
DO $$ BEGIN CREATE ROLE leader_operator LOGIN;
EXCEPTION WHEN duplicate_object OR unique_violation THEN NULL; END $$;
SELECT leader_grant_app_role('leader_app');
";

fn leaderctl(url: &str, args: &[&str]) -> Command {
    let mut command = Command::new(env!("CARGO_BIN_EXE_leaderctl"));
    command
        .arg("dashboard")
        .args(args)
        .env("DATABASE_URL", url)
        .env_remove("LEADER_DASHBOARD_TOKEN")
        .stdin(Stdio::null())
        .stdout(Stdio::piped())
        .stderr(Stdio::piped())
        .kill_on_drop(true);
    command
}

/// Runs it to its end and returns its exit code and stderr.
async fn refused(mut command: Command) -> (Option<i32>, String) {
    let out = tokio::time::timeout(Duration::from_secs(120), command.output())
        .await
        .expect("it ends")
        .expect("it runs");
    (
        out.status.code(),
        String::from_utf8_lossy(&out.stderr).into_owned(),
    )
}

/// One GET, its status line and body.
async fn get(addr: &str, path: &str) -> String {
    let mut stream = tokio::net::TcpStream::connect(addr).await.unwrap();
    stream
        .write_all(
            format!("GET {path} HTTP/1.1\r\nHost: {addr}\r\nConnection: close\r\n\r\n").as_bytes(),
        )
        .await
        .unwrap();
    let mut text = String::new();
    stream.read_to_string(&mut text).await.unwrap();
    text
}

#[tokio::test]
async fn the_operators_login_granted_by_migrations_write_serves_the_pages_and_others_are_refused() {
    let db = TestDb::new().await;
    db.exec(ROLES).await;
    let app = db.app_url_as("leader_app");
    let (code, stderr) = refused(leaderctl(&app, &["--listen", "127.0.0.1:0"])).await;
    assert_eq!(code, Some(1), "{stderr}");
    assert!(
        stderr.contains("may write leader_leases directly") && stderr.lines().count() == 1,
        "{stderr}"
    );

    // The grant `migrations write --operator` writes, applied as the owner.
    let dir = tempfile::tempdir().unwrap();
    let out = Command::new(env!("CARGO_BIN_EXE_leaderctl"))
        .args(["migrations", "write"])
        .arg(dir.path())
        .args(["--operator", "leader_operator"])
        .output()
        .await
        .unwrap();
    assert!(out.status.success(), "{out:?}");
    let grant = std::fs::read_dir(dir.path())
        .unwrap()
        .map(|e| e.unwrap().path())
        .find(|p| {
            p.file_name().is_some_and(|n| {
                let name = n.to_string_lossy();
                name.contains("_leader_grant_operator_leader_operator")
                    && !name.ends_with(".down.sql")
            })
        })
        .expect("the operator's grant migration");
    let sql = std::fs::read_to_string(&grant).unwrap();
    assert!(
        sql.contains("SELECT leader_grant_operator_role('leader_operator');"),
        "{sql}"
    );
    sqlx::raw_sql(sqlx::AssertSqlSafe(sql))
        .execute(db.admin())
        .await
        .unwrap();

    let operator = db.app_url_as("leader_operator");
    let (code, stderr) = refused(leaderctl(
        &operator,
        &["--listen", "127.0.0.1:0", "--allow-writes"],
    ))
    .await;
    assert_eq!(code, Some(1), "{stderr}");
    assert!(stderr.contains("LEADER_DASHBOARD_TOKEN"), "{stderr}");
    let (code, stderr) = refused({
        let mut c = leaderctl(&operator, &["--listen", "127.0.0.1:0", "--allow-writes"]);
        c.env("LEADER_DASHBOARD_TOKEN", "short");
        c
    })
    .await;
    assert_eq!(code, Some(1), "{stderr}");
    assert!(stderr.contains("shorter than 16"), "{stderr}");

    let mut served = leaderctl(&operator, &["--listen", "127.0.0.1:0"])
        .spawn()
        .unwrap();
    let mut lines = BufReader::new(served.stdout.take().unwrap()).lines();
    let line = tokio::time::timeout(Duration::from_secs(120), lines.next_line())
        .await
        .expect("it says where it listens")
        .unwrap()
        .expect("a line");
    assert!(line.contains("read-only"), "{line}");
    let addr = line
        .split("http://")
        .nth(1)
        .and_then(|rest| rest.split('/').next())
        .expect("its address")
        .to_owned();
    let page = get(&addr, "/roles/alpha").await;
    assert!(page.starts_with("HTTP/1.1 200"), "{page}");
    assert!(page.contains("Role <code>alpha</code>"), "{page}");

    // An address already taken is refused in one line.
    let (code, stderr) = refused(leaderctl(&operator, &["--listen", &addr])).await;
    assert_eq!(code, Some(1), "{stderr}");
    assert!(stderr.contains("cannot listen on"), "{stderr}");
    served.kill().await.unwrap();
}
