//! docs/names.md's table of names, checked against a migrated database, the typed row of
//! `leader_status` and the built `leaderctl`: each name is where its row says, and no former name
//! is in any of those places, except the `leader_status` aliases the page lists.

use std::collections::BTreeSet;
use std::time::Duration;

use leader_core::lease::{self, Acquired};
use leader_core::{Role, Timings};
use leader_testkit::TestDb;
use sqlx::Row;

const ALPHA: Role = Role::from_static("alpha");

const PAGE: &str = include_str!("../../../docs/names.md");

/// One row of the names table.
#[derive(Debug)]
struct Name {
    name: String,
    places: Vec<String>,
    former: Vec<String>,
}

/// The words in backticks in `cell`.
fn quoted(cell: &str) -> Vec<String> {
    cell.split('`')
        .skip(1)
        .step_by(2)
        .map(str::to_owned)
        .collect()
}

/// The rows of the table headed by `header`, as their cells.
fn table(header: &str) -> Vec<Vec<String>> {
    let mut lines = PAGE.lines().skip_while(|line| *line != header);
    assert!(
        lines.next().is_some(),
        "docs/names.md has no table `{header}`"
    );
    lines
        .skip(1)
        .take_while(|line| line.starts_with('|'))
        .map(|line| {
            line.trim_matches('|')
                .split('|')
                .map(|cell| cell.trim().to_owned())
                .collect()
        })
        .collect()
}

fn names() -> Vec<Name> {
    let rows: Vec<Name> = table("| concept | name | where it appears | former names |")
        .into_iter()
        .map(|cells| {
            let [name] = <[String; 1]>::try_from(quoted(&cells[1]))
                .unwrap_or_else(|_| panic!("one name per concept: {cells:?}"));
            Name {
                name,
                places: quoted(&cells[2]),
                former: quoted(&cells[3]),
            }
        })
        .collect();
    assert!(rows.len() >= 10, "{rows:?}");
    rows
}

/// The `leader_status` aliases: former column, and the column it has the value of.
fn aliases() -> Vec<(String, String)> {
    table("| former column | same as |")
        .into_iter()
        .map(|cells| (quoted(&cells[0]).remove(0), quoted(&cells[1]).remove(0)))
        .collect()
}

async fn columns(db: &TestDb, relation: &str) -> BTreeSet<String> {
    sqlx::query_scalar(
        "SELECT column_name::text FROM information_schema.columns WHERE table_name = $1",
    )
    .bind(relation)
    .fetch_all(db.admin())
    .await
    .unwrap()
    .into_iter()
    .collect()
}

/// The field names in a struct's `Debug` output (`Name { a: 1, b: Some(2) }`): the words before
/// `: ` at the struct's own nesting level.
fn debug_fields(debug: &str) -> BTreeSet<String> {
    let body = &debug[debug.find('{').unwrap() + 1..debug.rfind('}').unwrap()];
    let mut fields = BTreeSet::new();
    let (mut depth, mut start, mut quoted) = (0, 0, false);
    for (i, c) in body.char_indices() {
        match c {
            '"' => quoted = !quoted,
            _ if quoted => {}
            '{' | '(' | '[' => depth += 1,
            '}' | ')' | ']' => depth -= 1,
            ',' if depth == 0 => start = i + 1,
            ':' if depth == 0
                && body[start..i]
                    .trim()
                    .chars()
                    .all(|c| c == '_' || c.is_ascii_lowercase()) =>
            {
                fields.insert(body[start..i].trim().to_owned());
                start = i + 1;
            }
            _ => {}
        }
    }
    fields
}

async fn leaderctl(url: &str, args: &[&str]) -> String {
    let out = tokio::process::Command::new(env!("CARGO_BIN_EXE_leaderctl"))
        .args(args)
        .env("DATABASE_URL", url)
        .output()
        .await
        .unwrap();
    assert!(out.status.success(), "{out:?}");
    String::from_utf8(out.stdout).unwrap()
}

#[tokio::test]
async fn the_names_page_matches_the_schema_the_row_type_and_leaderctl() {
    let db = TestDb::new().await;
    db.exec(
        "ALTER TABLE leader_leases ADD CONSTRAINT leader_leases_role_registered
             CHECK (role IN ('alpha', 'beta'));
         INSERT INTO leader_leases (role, holder_token)
         VALUES ('alpha', leader_seed_token()), ('beta', leader_seed_token());
         UPDATE leader_leases SET not_before = now() + interval '1 hour' WHERE role = 'beta';",
    )
    .await;
    let Acquired::Granted(grant) = lease::acquire_one(
        db.admin(),
        ALPHA,
        "replica-1",
        Duration::from_secs(60),
        &Timings::default(),
    )
    .await
    .unwrap() else {
        panic!("alpha is claimable");
    };

    let table = columns(&db, "leader_leases").await;
    let view = columns(&db, "leader_status").await;
    let history_table = columns(&db, "leader_tick_history").await;
    let history = leader_core::history::read(db.admin(), None, &Timings::default())
        .await
        .unwrap();
    let tick_fields = debug_fields(&format!("{:?}", history.ticks[0]));
    let rows = leader_core::status::read(db.admin(), &Timings::default())
        .await
        .unwrap();
    let fields = debug_fields(&format!("{:?}", rows[0]));
    let grant_fields = debug_fields(&format!("{grant:?}"));
    assert!(
        fields.contains("db_now") && fields.contains("shard"),
        "{fields:?}"
    );
    let url = db.app_url();
    let headers: BTreeSet<String> = leaderctl(&url, &["status"])
        .await
        .lines()
        .next()
        .unwrap()
        .split_whitespace()
        .map(str::to_owned)
        .collect();
    let json: serde_json::Value =
        serde_json::from_str(&leaderctl(&url, &["status", "--json"]).await).unwrap();
    let keys: BTreeSet<String> = json[0].as_object().unwrap().keys().cloned().collect();
    let types = [
        std::any::type_name::<leader_core::status::LeaseState>(),
        std::any::type_name::<leader_core::history::EndedBy>(),
    ];

    let aliases = aliases();
    assert_eq!(aliases.len(), 3, "{aliases:?}");
    for row in names() {
        let name = &row.name;
        assert!(!row.places.is_empty(), "{row:?}");
        for place in &row.places {
            let found = match place.as_str() {
                "leader_leases" => table.contains(name),
                "leader_status" => view.contains(name),
                "RoleStatus" => fields.contains(name),
                "Grant" => grant_fields.contains(name),
                "leader_core::status" | "leader_core::history" => {
                    types.contains(&format!("{place}::{name}").as_str())
                }
                "leader_tick_history" => history_table.contains(name),
                "TickRecord" => tick_fields.contains(name),
                "leaderctl status" => headers.contains(name),
                "leaderctl status --json" => {
                    keys.contains(name) || keys.contains(&format!("{name}_ms"))
                }
                other => panic!("docs/names.md: unknown place `{other}` for `{name}`"),
            };
            assert!(
                found,
                "docs/names.md says `{name}` is in `{place}`, and it is not"
            );
        }
        for former in &row.former {
            let alias = aliases.iter().any(|(old, _)| old == former);
            for (place, present) in [
                ("leader_leases", table.contains(former)),
                ("leader_status", view.contains(former) && !alias),
                ("RoleStatus", fields.contains(former)),
                ("Grant", grant_fields.contains(former)),
                ("leader_tick_history", history_table.contains(former)),
                ("TickRecord", tick_fields.contains(former)),
                ("leaderctl status", headers.contains(former)),
                (
                    "leaderctl status --json",
                    keys.contains(former) || keys.contains(&format!("{former}_ms")),
                ),
            ] {
                assert!(
                    !present,
                    "the former name `{former}` of `{name}` is still in `{place}`"
                );
            }
        }
    }

    // Each alias is a column of the view with the value of its new name, on every row (alpha is
    // held, beta cooling down).
    for (old, new) in &aliases {
        assert!(
            view.contains(old),
            "the alias `{old}` is gone from leader_status"
        );
        let sql = format!("SELECT count(*) FROM leader_status WHERE {old} IS DISTINCT FROM {new}");
        let differ: i64 = sqlx::raw_sql(sqlx::AssertSqlSafe(sql))
            .fetch_one(db.admin())
            .await
            .and_then(|row| row.try_get(0))
            .unwrap();
        assert_eq!(differ, 0, "{old} differs from {new}");
        let set: i64 = sqlx::raw_sql(sqlx::AssertSqlSafe(format!(
            "SELECT count(*) FROM leader_status WHERE {new} IS NOT NULL"
        )))
        .fetch_one(db.admin())
        .await
        .and_then(|row| row.try_get(0))
        .unwrap();
        assert!(
            set > 0,
            "no row has {new} set, so the comparison proved nothing"
        );
    }
}

const UP: &str = include_str!("../../../migrations/20261208000000_leader_status_names.up.sql");
const DOWN: &str = include_str!("../../../migrations/20261208000000_leader_status_names.down.sql");

/// The names migration's down restores the view as the migration before it left it, still
/// readable by a login granted before, and `status` then says the schema is out of date; up again,
/// `status` reads the new names.
#[tokio::test]
async fn the_names_migration_goes_down_and_up_again_keeping_the_grant() {
    let db = TestDb::new().await;
    db.exec(
        "ALTER TABLE leader_leases ADD CONSTRAINT leader_leases_role_registered
             CHECK (role IN ('alpha'));
         INSERT INTO leader_leases (role, holder_token) VALUES ('alpha', leader_seed_token());
         DO $$ BEGIN
             CREATE ROLE leader_app LOGIN;
         EXCEPTION WHEN duplicate_object OR unique_violation THEN NULL;
         END $$;
         SELECT leader_grant_app_role('leader_app');",
    )
    .await;
    let app = db.app_url_as("leader_app");
    let new = ["holder_id", "acquired_at", "not_before", "next_due_at"];

    db.exec(DOWN).await;
    let view = columns(&db, "leader_status").await;
    assert!(new.iter().all(|name| !view.contains(*name)), "{view:?}");
    assert!(
        view.contains("leader") && view.contains("shard_count"),
        "{view:?}"
    );
    let app_pool = db.pool_as("leader_app", 1).await;
    let leader: Option<String> = sqlx::query_scalar("SELECT leader FROM leader_status")
        .fetch_one(&app_pool)
        .await
        .expect("the login granted before the down may read the view after it");
    assert_eq!(leader, None);
    let out = tokio::process::Command::new(env!("CARGO_BIN_EXE_leaderctl"))
        .arg("status")
        .env("DATABASE_URL", &app)
        .output()
        .await
        .unwrap();
    let stderr = String::from_utf8_lossy(&out.stderr);
    assert_eq!(out.status.code(), Some(2), "{out:?}");
    assert!(
        stderr.contains("the framework schema here is out of date")
            && stderr.contains("leaderctl migrate"),
        "{stderr}"
    );

    db.exec(UP).await;
    let view = columns(&db, "leader_status").await;
    assert!(new.iter().all(|name| view.contains(*name)), "{view:?}");
    assert!(leaderctl(&app, &["status"]).await.starts_with("role "));
}
