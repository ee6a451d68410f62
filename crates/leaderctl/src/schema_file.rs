//! `leaderctl schema prepare [--dir DIR] [--check]` and `leaderctl schema shard-key TABLE COLUMN
//! --dir DIR`.
//!
//! **prepare** applies the crate's migrations (`DIR`, `migrations/` by default, relative to the
//! crate's directory) and its `leader-tables.sql` to an empty database, as sqlx runs them
//! ([`leaderctl::prepare`]), reads the catalog, and writes `leader-schema.json` next to
//! `Cargo.toml`, which `#[fenced]` and `#[leader_role]` read. The database is a throwaway
//! PostgreSQL cluster started from the machine's binaries, or, with `--database-url` /
//! `DATABASE_URL`, a fresh database created on that server (and dropped after): the URL's own
//! database is never touched. With `--check` it writes nothing and fails unless the file is what
//! a prepare writes now: for CI.
//!
//! **shard-key** writes the next migration of `DIR` declaring `COLUMN` the shard key of `TABLE`
//! (`SELECT leader_shard_key('TABLE', 'COLUMN')`), with a `.down.sql` restoring the declaration
//! before it when the folder is reversible.

use std::path::{Component, Path};
use std::str::FromStr;

use leader_migrations::Folder;
use leader_schema::{FILE_NAME, PREPARE_COMMAND, PreparedSchema};
use leaderctl::prepare::{self, Applied, PrepareError};
use sqlx::postgres::PgConnectOptions;
use sqlx::{ConnectOptions, Connection};

use crate::failure::Failure;
use crate::roles::{literal, write_migration};

/// Prepares the schema of the crate in `manifest_dir` from `migrations`, and writes it, or with
/// `check` compares it with the file there.
pub async fn prepare(
    manifest_dir: &Path,
    migrations: &str,
    database_url: Option<&str>,
    check: bool,
) -> Result<(), Failure> {
    let migrations = relative_folder(migrations)?;
    if !manifest_dir.join("Cargo.toml").is_file() {
        return Err(Failure::refused(format!(
            "{} holds no Cargo.toml: run `{PREPARE_COMMAND}` in the crate's directory, or name \
             it with --manifest-dir",
            manifest_dir.display()
        )));
    }
    let (schema, applied) = on_a_scratch_database(database_url, |options| {
        let migrations = migrations.clone();
        async move { prepare::prepare(&options, manifest_dir, &migrations).await }
    })
    .await?;
    let text = schema.to_file_text();
    let path = manifest_dir.join(FILE_NAME);
    let shown = path.display();
    if check {
        let command = leader_schema::LoadError::command(&migrations);
        return match std::fs::read_to_string(&path) {
            Ok(current) if current == text => {
                println!("{shown} is current");
                Ok(())
            }
            Ok(current) => Err(Failure::refused(format!(
                "{shown} is out of date ({}): run `{command}` in {} and commit it",
                first_difference(&current, &text),
                manifest_dir.display()
            ))),
            Err(e) => Err(Failure::refused(format!(
                "{shown} cannot be read ({e}): run `{command}` in {} and commit it",
                manifest_dir.display()
            ))),
        };
    }
    std::fs::write(&path, &text)
        .map_err(|e| Failure::refused(format!("cannot write {shown}: {e}")))?;
    println!("wrote {shown}: {}", summary(&schema, &applied, &migrations));
    Ok(())
}

/// `DIR`, checked to be relative and `/`-separated, without `.` steps or a trailing `/`.
fn relative_folder(dir: &str) -> Result<String, Failure> {
    let path = Path::new(dir);
    let mut parts = Vec::new();
    for component in path.components() {
        match component {
            Component::Normal(part) => parts.push(part.to_string_lossy().into_owned()),
            Component::CurDir => {}
            _ => {
                return Err(Failure::refused(format!(
                    "--dir {dir}: name the migrations folder relative to the crate's directory \
                     (`--dir db/migrations`), as `#[fenced]` and sqlx::migrate! resolve it"
                )));
            }
        }
    }
    if parts.is_empty() {
        return Err(Failure::refused(
            "--dir is empty: name the migrations folder, `migrations` by default",
        ));
    }
    Ok(parts.join("/"))
}

/// Runs `work` on a fresh database: one created on `url`'s server and dropped after, or a
/// throwaway cluster's.
async fn on_a_scratch_database<F, Fut>(
    url: Option<&str>,
    work: F,
) -> Result<(PreparedSchema, Applied), Failure>
where
    F: FnOnce(PgConnectOptions) -> Fut,
    Fut: std::future::Future<Output = Result<(PreparedSchema, Applied), PrepareError>>,
{
    let (server, _cluster) = match url {
        Some(url) => {
            let options = PgConnectOptions::from_str(url).map_err(|e| {
                Failure::unreachable(format!(
                    "--database-url / DATABASE_URL is not a PostgreSQL URL ({e}): use \
                     postgres://USER:PASSWORD@HOST:PORT/DATABASE of a server where this user may \
                     create a database"
                ))
            })?;
            (options, None)
        }
        None => {
            let cluster = tokio::task::spawn_blocking(leader_throwaway_pg::Cluster::start)
                .await
                .map_err(|e| Failure::unreachable(format!("cannot start PostgreSQL: {e}")))?
                .map_err(|e| {
                    Failure::unreachable(format!(
                        "cannot start a throwaway PostgreSQL to prepare on ({e}): install \
                         PostgreSQL's server binaries, or pass --database-url (DATABASE_URL) of a \
                         server where this user may create a database"
                    ))
                })?;
            let options = PgConnectOptions::from_str(&cluster.url())
                .map_err(|e| Failure::unreachable(e.to_string()))?;
            (options, Some(cluster))
        }
    };
    let name = format!(
        "leader_prepare_{}_{:08x}",
        std::process::id(),
        rand_suffix()
    );
    let mut admin = server.connect().await.map_err(|e| {
        Failure::unreachable(format!(
            "cannot reach the server to prepare on: {}: check --database-url / DATABASE_URL",
            e.to_string().replace('\n', " ")
        ))
    })?;
    sqlx::raw_sql(sqlx::AssertSqlSafe(format!("CREATE DATABASE {name}")))
        .execute(&mut admin)
        .await
        .map_err(|e| {
            Failure::refused(format!(
                "cannot create a scratch database on the server to prepare on ({e}): connect as a \
                 user with CREATEDB, or leave --database-url unset to use a throwaway PostgreSQL"
            ))
        })?;
    let outcome = work(server.clone().database(&name)).await;
    let dropped = sqlx::raw_sql(sqlx::AssertSqlSafe(format!(
        "DROP DATABASE IF EXISTS {name} WITH (FORCE)"
    )))
    .execute(&mut admin)
    .await;
    let _ = admin.close().await;
    let schema = outcome.map_err(|e| match e {
        PrepareError::Refused(why) => Failure::refused(why),
        other => Failure::unreachable(other.to_string()),
    })?;
    if let Err(e) = dropped {
        eprintln!("leaderctl: could not drop the scratch database {name}: {e}");
    }
    Ok(schema)
}

/// A random suffix for the scratch database's name, from the clock (two prepares on one server
/// in one process never run at once).
fn rand_suffix() -> u32 {
    std::time::SystemTime::now()
        .duration_since(std::time::UNIX_EPOCH)
        .map_or(0, |d| d.subsec_nanos())
}

/// One line: what the file holds and where it came from.
fn summary(schema: &PreparedSchema, applied: &Applied, migrations: &str) -> String {
    let mut from = format!("{} migration(s) of {migrations}/", applied.migrations.len());
    if applied.framework_first {
        from = format!("the framework's migrations, then {from}");
    }
    if applied.declared_tables {
        from.push_str(&format!(" and {}", leader_schema::DECLARED_TABLES));
    }
    format!(
        "{} relation(s), {} function(s), {} shard key(s), {} role(s) registered, from {from}",
        schema.relations.len(),
        schema.functions.len(),
        schema.shard_keys.len(),
        schema.role_check.as_ref().map_or(0, Vec::len),
    )
}

/// The first line where two files differ, for `--check`'s message.
fn first_difference(current: &str, fresh: &str) -> String {
    let line = current
        .lines()
        .zip(fresh.lines())
        .position(|(a, b)| a != b)
        .unwrap_or_else(|| current.lines().count().min(fresh.lines().count()));
    let shorten = |text: Option<&str>| {
        let text = text.unwrap_or("(nothing)");
        if text.len() > 100 {
            format!("{}…", &text[..text.floor_char_boundary(100)])
        } else {
            text.to_owned()
        }
    };
    format!(
        "line {} is `{}`, a prepare now writes `{}`",
        line + 1,
        shorten(current.lines().nth(line)),
        shorten(fresh.lines().nth(line))
    )
}

/// Writes the migration declaring `column` the shard key of `table` into `dir`.
pub fn shard_key(dir: &Path, table: &str, column: &str) -> Result<(), Failure> {
    if table.trim().is_empty() || column.is_empty() {
        return Err(Failure::refused(
            "name the table and its key column: `leaderctl schema shard-key webhooks id --dir \
             migrations`",
        ));
    }
    if !dir.is_dir() {
        return Err(Failure::refused(format!(
            "{} is not a folder: pass your migrations folder",
            dir.display()
        )));
    }
    let folder = Folder::read(dir).map_err(|e| Failure::unreadable_folder(dir, &e))?;
    let before = folder.shard_key(table).map(str::to_owned);
    if before.as_deref() == Some(column) {
        return Err(Failure::refused(format!(
            "`{column}` is already the shard key of `{table}` by the migrations in {}: nothing \
             to write",
            dir.display()
        )));
    }
    let up = format!(
        "-- Declares `{column}` the shard key of `{table}`, written by `leaderctl schema \
         shard-key`: every shard\n\
         -- claim on the table must select its rows by `leader_shard_of({column}, $count) = \
         $index`, which\n\
         -- `#[fenced]` checks against the prepared schema (`{PREPARE_COMMAND}` after this \
         migration).\n\
         SELECT leader_shard_key({}, {});\n",
        literal(table),
        literal(column)
    );
    let down = match &before {
        Some(before) => format!(
            "-- Declares `{before}` the shard key of `{table}` again.\n\
             SELECT leader_shard_key({}, {});\n",
            literal(table),
            literal(before)
        ),
        None => format!(
            "-- `{table}` has no declared shard key again.\n\
             DELETE FROM leader_shard_keys WHERE relation = {}::regclass;\n",
            literal(table)
        ),
    };
    let stem: String = table
        .chars()
        .map(|c| if c.is_ascii_alphanumeric() { c } else { '_' })
        .collect();
    let reversible = folder.reversible();
    let name = write_migration(
        dir,
        &format!(
            "{}_leader_shard_key_{stem}",
            folder.next_version(crate::migrations::version_now())
        ),
        reversible,
        &up,
        &down,
    )?;
    println!(
        "wrote {}{}: `{column}` is the shard key of `{table}`; apply it, then run `{PREPARE_COMMAND}`",
        dir.join(&name).display(),
        if reversible { " and its .down.sql" } else { "" },
    );
    Ok(())
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn the_folder_is_relative_and_normalized() {
        assert_eq!(relative_folder("migrations").unwrap(), "migrations");
        assert_eq!(
            relative_folder("./db/migrations/").unwrap(),
            "db/migrations"
        );
        for bad in ["/abs/migrations", "../elsewhere", "", "."] {
            assert!(relative_folder(bad).is_err(), "{bad}");
        }
    }

    #[test]
    fn the_check_names_the_first_line_that_differs() {
        assert_eq!(
            first_difference("a\nb\nc\n", "a\nB\nc\n"),
            "line 2 is `b`, a prepare now writes `B`"
        );
        assert_eq!(
            first_difference("a\n", "a\nb\n"),
            "line 2 is `(nothing)`, a prepare now writes `b`"
        );
    }
}
