//! The framework's migration and the start-up check that the database matches the code.

use std::fmt;

use sqlx::{PgExecutor, Row};

use crate::send::send;
use crate::{Role, Statement, StatementError, Timings};

/// The framework's migrations (this crate's `migrations/` folder): the `leader_leases` table,
/// `leader_fence`, `leader_status`, `leader_pause`, `leader_unpause`, `leader_clear_cooldown`,
/// `leader_seed_token` and `leader_grant_app_role`.
///
/// An application's own migrations, which register its roles, run after these. An application
/// that keeps every migration in one folder has these files written into it instead
/// ([`MIGRATION_FILES`], `leaderctl migrations write DIR`), so that `sqlx migrate run` sees them
/// too.
pub static MIGRATOR: sqlx::migrate::Migrator = sqlx::migrate!("./migrations");

/// One file of the framework's migrations, embedded in the binary.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub struct MigrationFile {
    /// The file name, in sqlx's `<version>_<description>.{up,down}.sql` form.
    pub name: &'static str,
    /// The file's contents, byte for byte.
    pub sql: &'static str,
}

macro_rules! migration_files {
    ($($name:literal),* $(,)?) => {
        &[$(MigrationFile {
            name: $name,
            sql: include_str!(concat!("../migrations/", $name)),
        }),*]
    };
}

/// Every file of [`MIGRATOR`]'s folder, in the order they run: what an application that keeps all
/// its migrations in one folder copies there (`leaderctl migrations write DIR` does it).
///
/// ```
/// let names: Vec<_> = leader_core::schema::MIGRATION_FILES.iter().map(|f| f.name).collect();
/// assert!(names.contains(&"20261201000000_leader_leases.up.sql"));
/// ```
pub const MIGRATION_FILES: &[MigrationFile] = migration_files![
    "20261201000000_leader_leases.down.sql",
    "20261201000000_leader_leases.up.sql",
    "20261202000000_leader_clear_cooldown.down.sql",
    "20261202000000_leader_clear_cooldown.up.sql",
    "20261204000000_leader_pause_floor.down.sql",
    "20261204000000_leader_pause_floor.up.sql",
    "20261205000000_leader_schedules.down.sql",
    "20261205000000_leader_schedules.up.sql",
    "20261206000000_leader_shards.down.sql",
    "20261206000000_leader_shards.up.sql",
    "20261207000000_leader_presence.down.sql",
    "20261207000000_leader_presence.up.sql",
    "20261208000000_leader_status_names.down.sql",
    "20261208000000_leader_status_names.up.sql",
    "20261209000000_leader_anchors.down.sql",
    "20261209000000_leader_anchors.up.sql",
    "20261209100000_leader_pause_notice.down.sql",
    "20261209100000_leader_pause_notice.up.sql",
    "20261211000000_leader_tick_history.down.sql",
    "20261211000000_leader_tick_history.up.sql",
    "20261212000000_leader_shard_keys.down.sql",
    "20261212000000_leader_shard_keys.up.sql",
];

pub use leader_role_name::ROLE_CONSTRAINT;

/// A role as the code leads it, for [`check_schema_ready`]: its name and, when the code fixes it,
/// its shard count. A [`Role`] converts into one that accepts the role's rows with any count
/// (what `leaderctl check` asks); the runtime checks each role with the count it leads it with.
///
/// ```
/// use leader_core::{Role, schema::ExpectedRole};
/// const WEBHOOKS: Role = Role::from_static("webhook_delivery");
/// let sharded = ExpectedRole::sharded(WEBHOOKS, 8);
/// assert_eq!(sharded.shard_count(), Some(8));
/// assert_eq!(ExpectedRole::from(WEBHOOKS).shard_count(), None);
/// ```
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub struct ExpectedRole {
    role: Role,
    shard_count: Option<u32>,
}

impl ExpectedRole {
    /// `role`, led with `shard_count` shards (1: unsharded).
    pub const fn sharded(role: Role, shard_count: u32) -> ExpectedRole {
        ExpectedRole {
            role,
            shard_count: Some(shard_count),
        }
    }

    /// The role.
    pub const fn role(&self) -> Role {
        self.role
    }

    /// The shard count its rows must have; `None` accepts any.
    pub const fn shard_count(&self) -> Option<u32> {
        self.shard_count
    }
}

impl From<Role> for ExpectedRole {
    fn from(role: Role) -> ExpectedRole {
        ExpectedRole {
            role,
            shard_count: None,
        }
    }
}

/// Why [`check_schema_ready`] refused.
#[derive(Debug, thiserror::Error)]
#[non_exhaustive]
pub enum SchemaError {
    /// The database lacks part of the framework's schema, or a role the code leads.
    #[error("{0}")]
    NotReady(SchemaReport),
    /// The check's read of the catalog failed.
    #[error(transparent)]
    Statement(#[from] StatementError),
}

/// What [`check_schema_ready`] found wrong, one line per problem with its fix.
#[derive(Debug, Clone, PartialEq, Eq)]
#[non_exhaustive]
pub struct SchemaReport {
    /// Every problem found, in the order checked.
    pub problems: Vec<SchemaProblem>,
}

/// One mismatch between the database and the code.
#[derive(Debug, Clone, PartialEq, Eq)]
#[non_exhaustive]
pub enum SchemaProblem {
    /// A framework object is missing: the framework migration has not run.
    MissingObject(&'static str),
    /// A framework object is there as an earlier migration left it: a later one has not run.
    OutOfDate {
        /// The object.
        object: &'static str,
        /// What the later migration changes in it.
        change: &'static str,
        /// The migration to apply, as its `.up.sql` file is named.
        migration: &'static str,
    },
    /// No `leader_leases_role_registered` constraint: the application's roles migration has not run.
    NoRoleConstraint,
    /// The role is not listed in `leader_leases_role_registered`.
    RoleNotInCheck {
        /// The role the code uses.
        role: Role,
        /// The roles the constraint lists.
        registered: Vec<String>,
    },
    /// The role is allowed but has no row.
    RoleNotSeeded(Role),
    /// The database gives the role another shard count than the code.
    ShardCount {
        /// The role.
        role: Role,
        /// The shard count the code leads the role with (1: unsharded).
        code: u32,
        /// The shard count of the role's rows.
        database: u32,
    },
}

impl fmt::Display for SchemaProblem {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        match self {
            SchemaProblem::MissingObject(what) => write!(
                f,
                "{what} is missing: apply the framework migrations before starting \
                 (`leaderctl migrate` applies them; `leaderctl migrations write DIR` copies them \
                 into your migrations folder)"
            ),
            SchemaProblem::OutOfDate {
                object,
                change,
                migration,
            } => write!(
                f,
                "{object} is out of date ({change}): apply the framework migration {migration} \
                 (`leaderctl migrations write DIR` copies it into your migrations folder) before \
                 starting"
            ),
            SchemaProblem::NoRoleConstraint => write!(
                f,
                "no roles are registered: add a migration with ALTER TABLE leader_leases ADD \
                 CONSTRAINT {ROLE_CONSTRAINT} CHECK (role IN ('your_role', ...)) and seed a row \
                 per role with leader_seed_token()"
            ),
            SchemaProblem::RoleNotInCheck { role, registered } => write!(
                f,
                "role `{role}` is not in the {ROLE_CONSTRAINT} CHECK (it lists {}): \
                 `leaderctl roles add {role} --dir MIGRATIONS` writes the migration that \
                 re-creates the CHECK with '{role}' added and seeds its row",
                if registered.is_empty() {
                    "no role".to_owned()
                } else {
                    registered.join(", ")
                }
            ),
            SchemaProblem::RoleNotSeeded(role) => write!(
                f,
                "role `{role}` has no row in leader_leases: `leaderctl roles add {role} --dir \
                 MIGRATIONS` writes the migration that seeds it"
            ),
            SchemaProblem::ShardCount {
                role,
                code,
                database,
            } => write!(
                f,
                "role `{role}` has {database} shard(s) in leader_leases but the code leads it with \
                 {code}: `leaderctl roles reshard {role} {code} --dir MIGRATIONS` writes the \
                 migration (SELECT leader_reshard('{role}', {code})) and says in it how to change \
                 the count safely"
            ),
        }
    }
}

impl fmt::Display for SchemaReport {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        write!(f, "the database is not ready for leader-runtime:")?;
        for problem in &self.problems {
            write!(f, "\n  - {problem}")?;
        }
        Ok(())
    }
}

const OBJECTS: &str = "
SELECT to_regclass('leader_leases') IS NOT NULL                         AS leader_leases,
       to_regclass('leader_status') IS NOT NULL                         AS leader_status,
       to_regprocedure('leader_fence(text, bigint)') IS NOT NULL        AS leader_fence,
       to_regprocedure('leader_pause(text, text, text)') IS NOT NULL    AS leader_pause,
       coalesce((SELECT strpos(prosrc, 'not_before = greatest(not_before, expires_at)') > 0
                   FROM pg_proc
                  WHERE oid = to_regprocedure('leader_pause(text, text, text)')), false)
                                                                        AS pause_floor,
       coalesce((SELECT strpos(prosrc, 'pg_notify(''leader_paused''') > 0
                   FROM pg_proc
                  WHERE oid = to_regprocedure('leader_pause(text, text, text)')), false)
                                                                        AS pause_notice,
       to_regprocedure('leader_unpause(text)') IS NOT NULL              AS leader_unpause,
       to_regprocedure('leader_clear_cooldown(text)') IS NOT NULL       AS leader_clear_cooldown,
       EXISTS (SELECT 1 FROM pg_attribute
                WHERE attrelid = to_regclass('leader_leases')
                  AND attname = 'not_before' AND NOT attisdropped)      AS not_before,
       EXISTS (SELECT 1 FROM pg_attribute
                WHERE attrelid = to_regclass('leader_leases')
                  AND attname = 'last_completed_instant' AND NOT attisdropped)
                                                                        AS schedules,
       EXISTS (SELECT 1 FROM pg_attribute
                WHERE attrelid = to_regclass('leader_leases')
                  AND attname = 'shard_count' AND NOT attisdropped)     AS shards,
       to_regclass('leader_presence') IS NOT NULL                       AS presence,
       to_regprocedure('leader_anchor_ended(integer, timestamptz, timestamptz)') IS NOT NULL
       AND EXISTS (SELECT 1 FROM pg_attribute
                    WHERE attrelid = to_regclass('leader_leases')
                      AND attname = 'holder_anchor_pid' AND NOT attisdropped)
       AND EXISTS (SELECT 1 FROM pg_attribute
                    WHERE attrelid = to_regclass('leader_presence')
                      AND attname = 'anchor_recorded_at' AND NOT attisdropped) AS anchors,
       to_regclass('leader_tick_history') IS NOT NULL
       AND EXISTS (SELECT 1 FROM pg_attribute
                    WHERE attrelid = to_regclass('leader_leases')
                      AND attname = 'ticks_granted' AND NOT attisdropped) AS tick_history,
       (SELECT pg_get_constraintdef(oid) FROM pg_constraint
         WHERE conrelid = to_regclass('leader_leases')
           AND conname = 'leader_leases_role_registered') AS role_check
";

/// Refuses to start unless the database has the framework schema, as the latest framework
/// migration leaves it, and every role in `roles` is listed in the role CHECK constraint, has
/// its rows, and, when the code fixes it ([`ExpectedRole::sharded`]), has the code's shard count.
///
/// Runs a handful of catalog reads; call it once at start-up, before the first ACQUIRE. The
/// runtime calls it for every registered role, always.
///
/// # Errors
///
/// [`SchemaError::NotReady`] listing every problem with its fix, or [`SchemaError::Statement`].
pub async fn check_schema_ready<'e, E, R>(db: E, roles: &[R]) -> Result<(), SchemaError>
where
    E: PgExecutor<'e> + Copy,
    R: Copy + Into<ExpectedRole>,
{
    // Sent as simple queries (no bind parameters), like the lease statements, so the check works
    // through a transaction-mode pooler.
    let timeout = Timings::DEFAULT.statement_timeout() * 5;
    let field = StatementError::database(Statement::SchemaCheck);
    let rows = send(db, Statement::SchemaCheck, timeout, OBJECTS.to_owned()).await?;
    let objects = crate::send::single(Statement::SchemaCheck, rows)?;
    let get = |name: &str| objects.try_get::<bool, _>(name).map_err(&field);
    let (table, view, fence, pause, unpause, clear_cooldown, not_before) = (
        get("leader_leases")?,
        get("leader_status")?,
        get("leader_fence")?,
        get("leader_pause")?,
        get("leader_unpause")?,
        get("leader_clear_cooldown")?,
        get("not_before")?,
    );
    let pause_floor = get("pause_floor")?;
    let pause_notice = get("pause_notice")?;
    let schedules = get("schedules")?;
    let shards = get("shards")?;
    let presence = get("presence")?;
    let anchors = get("anchors")?;
    let tick_history = get("tick_history")?;
    let role_check: Option<String> = objects.try_get("role_check").map_err(&field)?;
    let mut problems: Vec<SchemaProblem> = [
        (table, "table leader_leases"),
        (not_before, "column leader_leases.not_before"),
        (view, "view leader_status"),
        (fence, "function leader_fence(text, bigint)"),
        (pause, "function leader_pause(text, text, text)"),
        (unpause, "function leader_unpause(text)"),
        (clear_cooldown, "function leader_clear_cooldown(text)"),
    ]
    .into_iter()
    .filter(|(present, _)| !present)
    .map(|(_, what)| SchemaProblem::MissingObject(what))
    .collect();
    // leader_pause's body is the one sign the third migration leaves: it re-creates the function.
    if pause && !pause_floor {
        problems.push(SchemaProblem::OutOfDate {
            object: "function leader_pause(text, text, text)",
            change: "a pause sets no floor under the next grant, so the paused holder's work \
                     can overlap the next holder's",
            migration: "20261204000000_leader_pause_floor.up.sql",
        });
    }
    if pause && pause_floor && !pause_notice {
        problems.push(SchemaProblem::OutOfDate {
            object: "function leader_pause(text, text, text)",
            change: "a pause sends no notice, so a running tick hears of it only at its next \
                     RENEW instead of at once",
            migration: "20261209100000_leader_pause_notice.up.sql",
        });
    }
    if table && !schedules {
        problems.push(SchemaProblem::OutOfDate {
            object: "table leader_leases",
            change: "it has no columns for calendar schedules, so no role can run on a cron \
                     schedule and the lease statements fail",
            migration: "20261205000000_leader_schedules.up.sql",
        });
    }
    if table && !shards {
        problems.push(SchemaProblem::OutOfDate {
            object: "table leader_leases",
            change: "it has no shard columns, so the lease statements fail",
            migration: "20261206000000_leader_shards.up.sql",
        });
    }
    if table && !presence {
        problems.push(SchemaProblem::OutOfDate {
            object: "table leader_presence",
            change: "it is missing, so ACQUIRE fails",
            migration: "20261207000000_leader_presence.up.sql",
        });
    }
    if table && presence && !anchors {
        problems.push(SchemaProblem::OutOfDate {
            object: "tables leader_leases and leader_presence",
            change: "they have no anchor columns (or leader_anchor_ended is missing), so ACQUIRE \
                     fails",
            migration: "20261209000000_leader_anchors.up.sql",
        });
    }
    if table && !tick_history {
        problems.push(SchemaProblem::OutOfDate {
            object: "table leader_tick_history",
            change: "it is missing (or leader_leases.ticks_granted is), so ACQUIRE and RELEASE \
                     fail",
            migration: "20261211000000_leader_tick_history.up.sql",
        });
    }
    if !table || !shards || !presence || !anchors || !tick_history {
        return Err(SchemaError::NotReady(SchemaReport { problems }));
    }
    let Some(role_check) = role_check else {
        problems.push(SchemaProblem::NoRoleConstraint);
        return Err(SchemaError::NotReady(SchemaReport { problems }));
    };
    let registered = leader_role_name::roles_in_check(&role_check);
    let rows = send(
        db,
        Statement::SchemaCheck,
        timeout,
        "SELECT role, max(shard_count) AS shard_count FROM leader_leases GROUP BY role".to_owned(),
    )
    .await?;
    let seeded: Vec<(String, i32)> = rows
        .iter()
        .map(|row| Ok((row.try_get("role")?, row.try_get("shard_count")?)))
        .collect::<Result<_, sqlx::Error>>()
        .map_err(&field)?;
    for &expected in roles {
        let ExpectedRole { role, shard_count } = expected.into();
        if !registered.iter().any(|r| r == role.as_str()) {
            problems.push(SchemaProblem::RoleNotInCheck {
                role,
                registered: registered.clone(),
            });
        } else {
            match seeded.iter().find(|(r, _)| r == role.as_str()) {
                None => problems.push(SchemaProblem::RoleNotSeeded(role)),
                Some(&(_, count))
                    if shard_count.is_some_and(|code| i64::from(code) != i64::from(count)) =>
                {
                    problems.push(SchemaProblem::ShardCount {
                        role,
                        code: shard_count.unwrap_or(1),
                        database: u32::try_from(count).unwrap_or(0),
                    });
                }
                Some(_) => {}
            }
        }
    }
    if problems.is_empty() {
        Ok(())
    } else {
        Err(SchemaError::NotReady(SchemaReport { problems }))
    }
}

#[cfg(test)]
mod tests {
    use super::MIGRATION_FILES;

    #[test]
    fn the_embedded_files_are_exactly_the_migrations_folder() {
        let dir = concat!(env!("CARGO_MANIFEST_DIR"), "/migrations");
        let mut on_disk: Vec<String> = std::fs::read_dir(dir)
            .unwrap()
            .map(|entry| entry.unwrap().file_name().into_string().unwrap())
            .collect();
        on_disk.sort();
        let embedded: Vec<&str> = MIGRATION_FILES.iter().map(|f| f.name).collect();
        assert_eq!(
            embedded, on_disk,
            "leader-core's MIGRATION_FILES must list every file of migrations/, sorted"
        );
    }
}
