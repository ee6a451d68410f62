//! Prepares an application's schema on an empty database: applies its migrations as sqlx runs
//! them, then its `leader-tables.sql`, and reads the catalog ([`crate::catalog`]). What
//! `leaderctl schema prepare` writes to `leader-schema.json`, and what `fence-differential`
//! checks generated claims against.
//!
//! **As sqlx runs them.** The folder is read by sqlx itself (`Migrator::new`): files named
//! `VERSION_DESCRIPTION.sql` or `.up.sql`, run by integer version (`10_` after `2_`), up files
//! only, each in its own transaction unless it starts with `-- no-transaction`; a file sqlx
//! cannot name is refused as sqlx refuses it. A folder that holds none of the framework's own
//! migrations (an application that runs `leader_core::schema::MIGRATOR` before its own, or a
//! crate without a folder) gets the framework's migrations first, those of this `leaderctl`.

use std::path::Path;

use leader_schema::{DECLARED_TABLES, PreparedSchema};
use sqlx::migrate::Migrator;
use sqlx::postgres::PgConnectOptions;
use sqlx::{ConnectOptions, Connection};

use crate::catalog;

/// Why a schema could not be prepared.
#[derive(Debug)]
#[non_exhaustive]
pub enum PrepareError {
    /// The migrations folder, a migration or `leader-tables.sql` is at fault: what and how.
    Refused(String),
    /// The database could not be reached or read.
    Database(String),
}

impl std::fmt::Display for PrepareError {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        match self {
            PrepareError::Refused(why) | PrepareError::Database(why) => f.write_str(why),
        }
    }
}

impl std::error::Error for PrepareError {}

/// What was applied, for the command's report.
#[derive(Debug, Clone, Default, PartialEq, Eq)]
#[non_exhaustive]
pub struct Applied {
    /// Whether the framework's migrations were applied first (the folder holds none of them).
    pub framework_first: bool,
    /// The folder's migrations applied, `VERSION_DESCRIPTION` each, in the order they ran.
    pub migrations: Vec<String>,
    /// Whether `leader-tables.sql` was applied.
    pub declared_tables: bool,
}

/// Applies the migrations of `manifest_dir`/`migrations` and its `leader-tables.sql` to the empty
/// database `options` connects to, and reads the catalog. The schema's `migrations` and
/// `fingerprint` are filled in.
///
/// # Errors
///
/// [`PrepareError::Refused`] naming the file and PostgreSQL's message when a migration or
/// `leader-tables.sql` fails, or sqlx cannot read the folder; [`PrepareError::Database`] when
/// the database cannot be reached.
pub async fn prepare(
    options: &PgConnectOptions,
    manifest_dir: &Path,
    migrations: &str,
) -> Result<(PreparedSchema, Applied), PrepareError> {
    let folder = manifest_dir.join(migrations);
    let fingerprint = leader_schema::fingerprint(manifest_dir, migrations)
        .map_err(|e| PrepareError::Refused(format!("cannot read {}: {e}", folder.display())))?;
    let mut conn = options.connect().await.map_err(|e| {
        PrepareError::Database(format!("cannot reach the database to prepare on: {e}"))
    })?;
    let mut applied = Applied::default();
    let from_folder = match folder.is_dir() {
        true => Some(Migrator::new(folder.as_path()).await.map_err(|e| {
            PrepareError::Refused(format!(
                "sqlx cannot read the migrations in {}: {e}: name them \
                 VERSION_DESCRIPTION.sql or .up.sql/.down.sql, as sqlx reads them",
                folder.display()
            ))
        })?),
        false => None,
    };
    let holds_framework = from_folder.as_ref().is_some_and(|migrator| {
        migrator.iter().any(|m| {
            leader_core::schema::MIGRATOR
                .iter()
                .any(|f| f.version == m.version && f.description == m.description)
        })
    });
    if !holds_framework {
        if let Some((ours, framework)) = from_folder.as_ref().and_then(clashing_version) {
            return Err(PrepareError::Refused(format!(
                "{ours} in {} has the version of the framework's migration {framework}, which \
                 prepare applies first: sqlx keeps one row per version in _sqlx_migrations, so \
                 it would take yours for that one, modified. Give yours another version (rename \
                 the file), then prepare again",
                folder.display()
            )));
        }
        leader_core::schema::MIGRATOR
            .run(&mut conn)
            .await
            .map_err(|e| failed("the framework's migrations", &e))?;
        applied.framework_first = true;
    }
    if let Some(mut migrator) = from_folder {
        migrator.set_ignore_missing(!holds_framework);
        migrator
            .run(&mut conn)
            .await
            .map_err(|e| failed(&format!("the migrations in {}", folder.display()), &e))?;
        applied.migrations = migrator
            .iter()
            .filter(|m| m.migration_type.is_up_migration())
            .map(migration_name)
            .collect();
    }
    let declared = manifest_dir.join(DECLARED_TABLES);
    if let Ok(sql) = std::fs::read_to_string(&declared) {
        sqlx::raw_sql(sqlx::AssertSqlSafe(sql))
            .execute(&mut conn)
            .await
            .map_err(|e| failed(DECLARED_TABLES, &e))?;
        applied.declared_tables = true;
    }
    let _ = conn.close().await;
    // A session of its own, whose search path is the database's default.
    let mut fresh = options.connect().await.map_err(|e| {
        PrepareError::Database(format!("cannot reach the database to prepare on: {e}"))
    })?;
    let mut schema = catalog::read(&mut fresh)
        .await
        .map_err(|e| PrepareError::Database(format!("cannot read the catalog: {e}")))?;
    let _ = fresh.close().await;
    schema.migrations = migrations.to_owned();
    schema.fingerprint = fingerprint;
    Ok((schema, applied))
}

/// A migration of `folder` with the version of one of the framework's, and that one, each as
/// `VERSION_description`.
fn clashing_version(folder: &Migrator) -> Option<(String, String)> {
    folder.iter().find_map(|ours| {
        leader_core::schema::MIGRATOR
            .iter()
            .find(|framework| framework.version == ours.version)
            .map(|framework| (migration_name(ours), migration_name(framework)))
    })
}

/// A migration as its file names it: `VERSION_description`.
fn migration_name(m: &sqlx::migrate::Migration) -> String {
    format!("{}_{}", m.version, m.description.replace(' ', "_"))
}

fn failed(what: &str, error: &dyn std::fmt::Display) -> PrepareError {
    PrepareError::Refused(format!(
        "{what} failed on an empty database: {}: fix it, then prepare again",
        error.to_string().replace('\n', " ")
    ))
}
