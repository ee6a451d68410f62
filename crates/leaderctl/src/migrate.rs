//! `leaderctl migrate [--dir DIR]`: applies migrations over one direct connection, printing each
//! one applied or already applied.
//!
//! **Which migrations.** Without `--dir`, the framework's, embedded in this binary
//! ([`leader_core::schema::MIGRATOR`]). With `--dir DIR`, DIR's alone (`Migrator::new(DIR)`), which
//! must hold the framework's files as `leaderctl migrations write DIR` writes them: it is refused
//! otherwise. Never both: sqlx keeps one table of applied migrations (`_sqlx_migrations`), keyed
//! by version, and a migrator refuses a database where a version it knows was applied with other
//! contents, or (unless told to ignore them) where a version it does not know is applied. DIR's
//! copies of the framework's files carry the framework's versions, so applying the embedded set
//! and then DIR would at best find them applied already and at worst (a copy that differs) stop
//! halfway; applying DIR alone is exactly what the application's own runner (`sqlx::migrate!`,
//! `sqlx migrate run`) does, so the two cannot disagree. Without `--dir`, versions the framework
//! does not know (the application's) are left alone.
//!
//! **Why a direct connection.** sqlx serializes migrators with a session advisory lock
//! (`pg_advisory_lock`), held from before the first migration to after the last. Through a
//! transaction-mode pooler (PgBouncer, RDS Proxy) each transaction may run on another server
//! session: the lock is taken on one, the migrations run on others, and the unlock misses it, so
//! the lock stays with a pooled server connection and the next migrator through it waits. So
//! `migrate` connects as `leader_core::pooler::DirectOptions` connects: with a nonce in the
//! startup options, which a pooler refuses or drops and PostgreSQL answers, and stops (exit 1)
//! before sending anything when the session does not answer it. A pooler's prepared-statement
//! errors are recognised too. It waits at most `--lock-timeout-secs` for the lock.
//!
//! Every migration runs in its own transaction with its bookkeeping (sqlx's `Migrate::apply`), so
//! a failed one leaves nothing behind and the next `migrate` starts from it.

use std::collections::HashMap;
use std::fs;
use std::io::ErrorKind;
use std::path::Path;
use std::time::Duration;

use leader_core::schema::{MIGRATION_FILES, MIGRATOR};
use sqlx::migrate::{Migrate, MigrateError, Migrator};

use crate::connect;
use crate::failure::Failure;

/// sqlx's table of applied migrations: the default, which both [`MIGRATOR`] and
/// `Migrator::new(DIR)` use (an application whose `sqlx.toml` renames it is not supported).
const TABLE: &str = "_sqlx_migrations";

/// What to tell someone whose URL goes through a transaction-mode pooler.
const USE_A_DIRECT_URL: &str = "--database-url goes through a transaction-mode pooler \
     (PgBouncer, RDS Proxy), and sqlx's migration lock is a session advisory lock: run \
     `leaderctl migrate` with a URL to PostgreSQL itself (the host and port the pooler connects \
     to)";

/// Applies the framework's migrations, or `dir`'s, to the database at `url`.
pub async fn run(url: &str, dir: Option<&Path>, lock_timeout: Duration) -> Result<(), Failure> {
    let from_dir;
    let (migrator, source): (&Migrator, String) = match dir {
        Some(dir) => {
            holds_the_framework(dir)?;
            from_dir = Migrator::new(dir).await.map_err(|e| {
                Failure::refused(format!(
                    "cannot read the migrations in {}: {e}: name them \
                     VERSION_DESCRIPTION.sql or .up.sql/.down.sql, as sqlx reads them",
                    dir.display()
                ))
            })?;
            (&from_dir, dir.display().to_string())
        }
        None => (&MIGRATOR, "the framework's migrations".to_owned()),
    };
    let mut conn = connect::connect_session(url).await?;
    match tokio::time::timeout(lock_timeout, conn.lock()).await {
        Err(_) => {
            return Err(Failure::refused(format!(
                "waited {}s for sqlx's migration lock without getting it: another migrator holds \
                 it (an application starting with sqlx::migrate!, `sqlx migrate run`, another \
                 `leaderctl migrate`), or an earlier migration through a pooler left it with a \
                 pooled server connection; SELECT pid, backend_start FROM pg_locks JOIN \
                 pg_stat_activity USING (pid) WHERE locktype = 'advisory' shows who, then run \
                 again (--lock-timeout-secs waits longer)",
                lock_timeout.as_secs()
            )));
        }
        Ok(locked) => locked.map_err(|e| failed("taking sqlx's migration lock", e))?,
    }
    conn.ensure_migrations_table(TABLE)
        .await
        .map_err(|e| failed("creating _sqlx_migrations", e))?;
    if let Some(version) = conn
        .dirty_version(TABLE)
        .await
        .map_err(|e| failed("reading _sqlx_migrations", e))?
    {
        return Err(Failure::refused(format!(
            "migration {version} is marked failed (success = false) in _sqlx_migrations: a \
             runner without transactions left it half applied; repair what it did, delete its \
             row, and run again"
        )));
    }
    let applied: HashMap<i64, Vec<u8>> = conn
        .list_applied_migrations(TABLE)
        .await
        .map_err(|e| failed("reading _sqlx_migrations", e))?
        .into_iter()
        .map(|m| (m.version, m.checksum.into_owned()))
        .collect();

    let ups: Vec<_> = migrator
        .iter()
        .filter(|m| !m.migration_type.is_down_migration())
        .collect();
    let mut others: Vec<i64> = applied
        .keys()
        .copied()
        .filter(|v| !migrator.version_exists(*v))
        .collect();
    others.sort_unstable();
    if let Some(dir) = dir
        && !others.is_empty()
    {
        return Err(Failure::refused(format!(
            "the database has migration(s) {} applied that {} lacks, so sqlx refuses to run the \
             folder there: pass the folder they came from, or put them back in this one",
            join(&others),
            dir.display()
        )));
    }
    for m in &ups {
        if applied
            .get(&m.version)
            .is_some_and(|sum| sum[..] != m.checksum[..])
        {
            return Err(Failure::refused(format!(
                "migration {} ({}) was applied with other contents than {source} has now: an \
                 applied migration must not change (sqlx refuses a changed checksum), so put \
                 back the file as it was applied",
                m.version, m.description
            )));
        }
    }

    let mut newly = 0usize;
    for m in &ups {
        let label = format!("{} {}", m.version, m.description);
        if applied.contains_key(&m.version) {
            println!("{label:<48} already applied");
            continue;
        }
        let took = conn
            .apply(TABLE, m)
            .await
            .map_err(|e| failed(&format!("applying migration {label}"), e))?;
        println!("{label:<48} applied in {}ms", took.as_millis());
        newly += 1;
    }
    conn.unlock()
        .await
        .map_err(|e| failed("releasing sqlx's migration lock", e))?;
    println!(
        "{newly} applied, {} already applied: the database has every migration of {source}",
        ups.len() - newly
    );
    if dir.is_none() && newly > 0 && !others.is_empty() {
        println!(
            "note: the database also has {} migration(s) that are not the framework's (your \
             application's): if the application runs its folder with sqlx, that folder needs the \
             framework's files too (`leaderctl migrations write DIR`), or sqlx refuses the \
             versions applied here as missing from it",
            others.len()
        );
    }
    Ok(())
}

/// Refuses a folder that lacks the framework's migrations or has them changed: applying it alone
/// would then leave the framework's migrations unapplied, or differently applied.
fn holds_the_framework(dir: &Path) -> Result<(), Failure> {
    if !dir.is_dir() {
        return Err(Failure::refused(format!(
            "{} is not a folder: pass your migrations folder (`leaderctl migrations write {0}` \
             writes the framework's migrations into it), or leave out --dir to apply the \
             framework's alone",
            dir.display()
        )));
    }
    let mut wrong = Vec::new();
    for file in MIGRATION_FILES {
        match fs::read(dir.join(file.name)) {
            Ok(bytes) if bytes == file.sql.as_bytes() => {}
            Ok(_) => wrong.push(format!("{} (differs)", file.name)),
            Err(e) if e.kind() == ErrorKind::NotFound => {
                wrong.push(format!("{} (missing)", file.name));
            }
            Err(e) => {
                return Err(Failure::refused(format!(
                    "cannot read {}: {e}",
                    dir.join(file.name).display()
                )));
            }
        }
    }
    if wrong.is_empty() {
        return Ok(());
    }
    Err(Failure::refused(format!(
        "{} does not hold this leaderctl's framework migrations: {}; `migrate --dir` applies the \
         folder alone, as your application's sqlx::migrate! does, so run `leaderctl migrations \
         write {0}` first (it says what differs), or leave out --dir to apply the framework's \
         alone",
        dir.display(),
        wrong.join(", ")
    )))
}

/// A failure of `what`, with what to do about it.
fn failed(what: &str, err: MigrateError) -> Failure {
    let (sql_err, version) = match &err {
        MigrateError::Execute(e) => (Some(e), None),
        MigrateError::ExecuteMigration(e, version) => (Some(e), Some(*version)),
        _ => (None, None),
    };
    let one_line = |e: &dyn std::fmt::Display| e.to_string().replace('\n', " ");
    if let Some(sqlx::Error::Database(db)) = sql_err {
        match db.code().as_deref() {
            // duplicate_prepared_statement, invalid_sql_statement_name: sqlx's named statements
            // meeting a pooler that moves them between server sessions.
            Some("42P05" | "26000") => {
                return Failure::refused(format!(
                    "{what} failed ({}): {USE_A_DIRECT_URL}",
                    db.message()
                ));
            }
            Some("42501") => {
                return Failure::refused(format!(
                    "{what} was refused ({}): run `leaderctl migrate` as the role that owns the \
                     schema (the one that may create tables and functions here), not as the \
                     application's login role",
                    db.message()
                ));
            }
            _ => {}
        }
        return Failure::refused(match version {
            Some(version) => format!(
                "migration {version} failed and was rolled back ({}): fix it, then run \
                 `leaderctl migrate` again",
                one_line(db)
            ),
            None => format!("{what} failed: {}", one_line(db)),
        });
    }
    if let Some(e) = sql_err {
        return Failure::unreachable(format!(
            "{what} failed: {}: check that the database is up and run `leaderctl migrate` again \
             (a migration cut off midway was rolled back)",
            one_line(e)
        ));
    }
    Failure::refused(format!("{what} failed: {}", one_line(&err)))
}

fn join(versions: &[i64]) -> String {
    versions
        .iter()
        .map(i64::to_string)
        .collect::<Vec<_>>()
        .join(", ")
}
