//! What an application's migrations folder already does for the framework, read from its files:
//! the roles its CHECK registers, the roles it seeds a row for, the login roles it grants, the
//! shard counts it gives roles, its next version, and whether it writes reversible migrations.
//!
//! The CHECK is read as [`find_role_check`](crate::find_role_check) reads it. Seeds, grants and
//! reshards are read with the same scanner:
//!
//! * a role is **seeded** by a file when one of its statements starts `INSERT INTO leader_leases`
//!   (schema-qualified or not) and has the role's name as a string constant anywhere before the
//!   statement's `;` (`VALUES ('billing', ...)`, `SELECT 'billing', ...`, `ARRAY['billing', ...]`);
//! * a login role is **granted** by a file that calls `leader_grant_app_role('my_app')` (the
//!   first argument a string constant naming it, `::name` cast or not);
//! * a role is **resharded** by a call `leader_reshard('webhooks', 8)` (the first argument a
//!   string constant, cast or not, the second an integer constant); the last such call in the
//!   order the files run gives the role's count;
//! * a table's shard key is **declared** by a call `leader_shard_key('webhooks', 'id')` (both
//!   arguments string constants, cast or not); the last such call for the table (as written)
//!   wins.
//!
//! Only a file's own statements are read: SQL inside a `DO` block or a function body is one
//! string constant to the scanner, so a seed or a grant written there is not seen (and is written
//! again). Down migrations (`*.down.sql`) are skipped: they undo, they do not define the schema.
//! A statement that later deletes a seeded row is not followed either.

use std::path::Path;

use crate::files::sql_file_names;
use crate::role_check::last_role_check;
use crate::scan::{Kind, Token, is, names, scan, string_value};
use crate::{RoleCheck, RoleCheckError, migration_files};

/// One up (or plain) migration of the folder, as far as the framework is concerned.
#[derive(Debug)]
struct File {
    name: String,
    /// Roles seeded by this file's `INSERT INTO leader_leases` statements.
    seeds: Vec<String>,
    /// Login roles this file calls `leader_grant_app_role` for.
    grants: Vec<String>,
    /// Login roles this file calls `leader_grant_operator_role` for.
    operator_grants: Vec<String>,
    /// The `leader_reshard(role, count)` calls of this file, in order.
    reshards: Vec<(String, u32)>,
    /// The `leader_shard_key(table, column)` calls of this file, in order.
    shard_keys: Vec<(String, String)>,
}

/// A migrations folder, as far as the framework is concerned.
#[derive(Debug)]
pub struct Folder {
    /// Every `.sql` file name in the folder, down migrations included.
    names: Vec<String>,
    /// The up and plain migrations, in the order they run.
    files: Vec<File>,
    /// The last definition of the role CHECK, if any.
    check: Option<RoleCheck>,
}

impl Folder {
    /// Reads `dir`'s migrations; a folder that does not exist reads as empty. The
    /// [`RoleCheck`]'s `shown` is the file's name.
    ///
    /// # Errors
    ///
    /// [`RoleCheckError::Read`] when the folder or a file in it cannot be read,
    /// [`RoleCheckError::Scan`] when PostgreSQL's scanner cannot split a file.
    pub fn read(dir: &Path) -> Result<Folder, RoleCheckError> {
        let names = sql_file_names(dir)?.unwrap_or_default();
        let migrations = migration_files(dir, dir)?.unwrap_or_default();
        let check = last_role_check(&migrations)?;
        let files = migrations
            .into_iter()
            .map(|file| {
                let tokens = scan(&file.sql).map_err(|message| RoleCheckError::Scan {
                    file: file.name.clone(),
                    message,
                })?;
                Ok(File {
                    seeds: seeds(&tokens),
                    grants: grants(&tokens, "leader_grant_app_role"),
                    operator_grants: grants(&tokens, "leader_grant_operator_role"),
                    reshards: reshards(&tokens),
                    shard_keys: shard_keys(&tokens),
                    name: file.name,
                })
            })
            .collect::<Result<_, RoleCheckError>>()?;
        Ok(Folder {
            names,
            files,
            check,
        })
    }

    /// The folder's last definition of the role CHECK; `None` if no migration defines it.
    pub fn role_check(&self) -> Option<&RoleCheck> {
        self.check.as_ref()
    }

    /// The first file that seeds `role`.
    pub fn seeded_by(&self, role: &str) -> Option<&str> {
        self.files
            .iter()
            .find(|f| f.seeds.iter().any(|r| r == role))
            .map(|f| f.name.as_str())
    }

    /// Every role some file seeds, in the order first seeded.
    pub fn seeded_roles(&self) -> Vec<String> {
        let mut roles: Vec<String> = Vec::new();
        for role in self.files.iter().flat_map(|f| &f.seeds) {
            if !roles.contains(role) {
                roles.push(role.clone());
            }
        }
        roles
    }

    /// The first file that grants `login` the operator's grants (`leader_grant_operator_role`).
    pub fn operator_granted_by(&self, login: &str) -> Option<&str> {
        self.files
            .iter()
            .find(|f| f.operator_grants.iter().any(|g| g == login))
            .map(|f| f.name.as_str())
    }

    /// The first file that grants `login`.
    pub fn granted_by(&self, login: &str) -> Option<&str> {
        self.files
            .iter()
            .find(|f| f.grants.iter().any(|g| g == login))
            .map(|f| f.name.as_str())
    }

    /// The shard count the folder's migrations last gave `role` with `leader_reshard`, in the
    /// order they run; 1 (unsharded) when none did.
    pub fn shard_count(&self, role: &str) -> u32 {
        self.files
            .iter()
            .flat_map(|file| &file.reshards)
            .rfind(|(resharded, _)| resharded == role)
            .map_or(1, |&(_, count)| count)
    }

    /// The column the folder's migrations last declared the shard key of `table` (as written in
    /// the call) with `leader_shard_key`, in the order they run.
    pub fn shard_key(&self, table: &str) -> Option<&str> {
        self.files
            .iter()
            .flat_map(|file| &file.shard_keys)
            .rfind(|(declared, _)| declared == table)
            .map(|(_, column)| column.as_str())
    }

    /// True when the folder's migrations come in `.up.sql`/`.down.sql` pairs, so a new one should
    /// too.
    pub fn reversible(&self) -> bool {
        self.names.iter().any(|f| f.ends_with(".up.sql"))
    }

    /// The version for the folder's next migration: `now` (the time as `YYYYMMDDHHMMSS`), or one
    /// past the folder's latest version if that is later, so it runs (and is read by
    /// `#[leader_role]`) after every migration already there.
    pub fn next_version(&self, now: u64) -> u64 {
        let latest = self
            .names
            .iter()
            .filter_map(|name| name.split('_').next()?.parse::<u64>().ok())
            .max()
            .unwrap_or(0);
        now.max(latest + 1)
    }
}

/// Where the statement goes on after `INSERT INTO [schema.]leader_leases` starting at `i`, if one
/// does.
fn after_insert_into_leases(tokens: &[Token<'_>], i: usize) -> Option<usize> {
    let t = tokens.get(i..)?;
    if t.len() < 3 || !is(&t[0], Kind::Insert) || !is(&t[1], Kind::Into) {
        return None;
    }
    // INSERT INTO schema . leader_leases
    let table = if t.len() >= 5 && is(&t[3], Kind::Ascii46) {
        4
    } else {
        2
    };
    names(&t[table], "leader_leases").then_some(i + table + 1)
}

/// The roles named by string constants in `INSERT INTO [schema.]leader_leases` statements.
fn seeds(tokens: &[Token<'_>]) -> Vec<String> {
    let mut roles = Vec::new();
    let mut i = 0;
    while i < tokens.len() {
        let Some(mut j) = after_insert_into_leases(tokens, i) else {
            i += 1;
            continue;
        };
        while j < tokens.len() && !is(&tokens[j], Kind::Ascii59) {
            if is(&tokens[j], Kind::Sconst)
                && let Some(value) = string_value(tokens[j].1)
                && !roles.contains(&value)
            {
                roles.push(value);
            }
            j += 1;
        }
        i = j;
    }
    roles
}

/// The login roles named by the first argument of `function(...)` calls (`leader_grant_app_role`,
/// `leader_grant_operator_role`).
fn grants(tokens: &[Token<'_>], function: &str) -> Vec<String> {
    (0..tokens.len())
        .filter_map(|i| string_argument(tokens, i, function))
        .map(|(role, _)| role)
        .collect()
}

/// For a call `function('text'[::type] ...` whose name is token `i`: the first argument's text
/// and the index of the token after it (and after its cast, if any).
fn string_argument(tokens: &[Token<'_>], i: usize, function: &str) -> Option<(String, usize)> {
    if !names(&tokens[i], function) || !tokens.get(i + 1).is_some_and(|t| is(t, Kind::Ascii40)) {
        return None;
    }
    let text = tokens
        .get(i + 2)
        .filter(|t| is(t, Kind::Sconst))
        .and_then(|t| string_value(t.1))?;
    let after_cast = if tokens.get(i + 3).is_some_and(|t| is(t, Kind::Typecast)) {
        i + 5
    } else {
        i + 3
    };
    Some((text, after_cast))
}

/// The (role, count) of each `leader_reshard('role'[::type], count)` call.
fn reshards(tokens: &[Token<'_>]) -> Vec<(String, u32)> {
    (0..tokens.len())
        .filter_map(|i| {
            let (role, j) = string_argument(tokens, i, "leader_reshard")?;
            if !tokens.get(j).is_some_and(|t| is(t, Kind::Ascii44)) {
                return None;
            }
            let count = tokens
                .get(j + 1)
                .filter(|t| is(t, Kind::Iconst))
                .and_then(|t| t.1.parse().ok())?;
            Some((role, count))
        })
        .collect()
}

/// The (table, column) of each `leader_shard_key('table'[::type], 'column'[::type])` call.
fn shard_keys(tokens: &[Token<'_>]) -> Vec<(String, String)> {
    (0..tokens.len())
        .filter_map(|i| {
            let (table, j) = string_argument(tokens, i, "leader_shard_key")?;
            if !tokens.get(j).is_some_and(|t| is(t, Kind::Ascii44)) {
                return None;
            }
            let column = tokens
                .get(j + 1)
                .filter(|t| is(t, Kind::Sconst))
                .and_then(|t| string_value(t.1))?;
            Some((table, column))
        })
        .collect()
}

#[cfg(test)]
mod tests {
    use super::*;

    fn seeded(sql: &str) -> Vec<String> {
        seeds(&scan(sql).unwrap())
    }

    fn granted(sql: &str) -> Vec<String> {
        grants(&scan(sql).unwrap(), "leader_grant_app_role")
    }

    #[test]
    fn a_values_list_seeds_each_role_it_names() {
        let sql = "INSERT INTO leader_leases (role, holder_token)\n\
                   VALUES ('billing', leader_seed_token()), ('it''s', leader_seed_token())\n\
                   ON CONFLICT (role) DO NOTHING;";
        assert_eq!(seeded(sql), ["billing", "it's"]);
    }

    #[test]
    fn schema_qualified_quoted_and_select_forms_seed() {
        assert_eq!(
            seeded("insert into public.leader_leases (role, holder_token) select 'a', 1;"),
            ["a"]
        );
        assert_eq!(
            seeded("INSERT INTO \"leader_leases\" VALUES (E'b', 1)"),
            ["b"]
        );
        assert_eq!(
            seeded("INSERT INTO leader_leases SELECT unnest(ARRAY[$$c$$, 'd']), 1;"),
            ["c", "d"]
        );
    }

    #[test]
    fn only_inserts_into_leader_leases_are_read_to_their_semicolon() {
        let sql = "-- INSERT INTO leader_leases VALUES ('in_a_comment', 1);\n\
                   INSERT INTO other (role) VALUES ('other_table');\n\
                   ALTER TABLE leader_leases ADD CONSTRAINT leader_leases_role_registered \
                   CHECK (role IN ('only_in_check'));\n\
                   INSERT INTO leader_leases VALUES ('seeded', 1);\n\
                   SELECT 'after_the_insert';\n\
                   DO $$ BEGIN INSERT INTO leader_leases VALUES ('in_a_do_block', 1); END $$;";
        assert_eq!(seeded(sql), ["seeded"]);
    }

    #[test]
    fn grants_are_read_from_calls_only() {
        let sql = "SELECT leader_grant_app_role('my_app');\n\
                   SELECT public.leader_grant_app_role('Other-App'::name);\n\
                   -- SELECT leader_grant_app_role('commented');\n\
                   REVOKE EXECUTE ON FUNCTION leader_grant_app_role(name) FROM PUBLIC;\n\
                   SELECT 'leader_grant_app_role(''in_a_string'')';";
        assert_eq!(granted(sql), ["my_app", "Other-App"]);
        let operators =
            "SELECT leader_grant_operator_role('ops'); SELECT leader_grant_app_role('app');";
        assert_eq!(
            grants(&scan(operators).unwrap(), "leader_grant_operator_role"),
            ["ops"]
        );
    }

    #[test]
    fn shard_key_declarations_are_read_and_the_last_one_wins() {
        let tokens = scan(
            "SELECT leader_shard_key('webhooks', 'id');
             -- SELECT leader_shard_key('webhooks', 'commented');
             SELECT leader_shard_key('app.jobs'::regclass, 'tenant'::name);
             SELECT leader_shard_key('webhooks', 'endpoint_id');",
        )
        .unwrap();
        assert_eq!(
            shard_keys(&tokens),
            [
                ("webhooks".to_owned(), "id".to_owned()),
                ("app.jobs".to_owned(), "tenant".to_owned()),
                ("webhooks".to_owned(), "endpoint_id".to_owned()),
            ]
        );
    }

    #[test]
    fn reshard_calls_are_read_as_postgresql_reads_them() {
        let sql = "SELECT leader_reshard('webhooks', 4);\n\
                   /* SELECT leader_reshard('webhooks', 99); */\n\
                   -- SELECT leader_reshard('webhooks', 98);\n\
                   SELECT public.leader_reshard ( 'webhooks'::text ,\n  8 );\n\
                   SELECT 'leader_reshard(''webhooks'', 97)';\n\
                   DO $$ BEGIN PERFORM leader_reshard('webhooks', 96); END $$;\n\
                   SELECT leader_reshard(E'it''s', 2);";
        assert_eq!(
            reshards(&scan(sql).unwrap()),
            [
                ("webhooks".to_owned(), 4),
                ("webhooks".to_owned(), 8),
                ("it's".to_owned(), 2)
            ]
        );
    }

    #[test]
    fn a_folder_reads_its_check_its_versions_and_whether_it_is_reversible() {
        let dir =
            std::env::temp_dir().join(format!("leader-migrations-folder-{}", std::process::id()));
        let _ = std::fs::remove_dir_all(&dir);
        std::fs::create_dir_all(&dir).unwrap();
        let folder = Folder::read(&dir.join("missing")).unwrap();
        assert!(folder.role_check().is_none() && !folder.reversible());
        assert_eq!(folder.next_version(20260101000000), 20260101000000);
        std::fs::write(
            dir.join("20270101000000_roles.up.sql"),
            "ALTER TABLE leader_leases ADD CONSTRAINT leader_leases_role_registered \
             CHECK (role IN ('a'));\nINSERT INTO leader_leases VALUES ('a', 1);",
        )
        .unwrap();
        std::fs::write(dir.join("20270101000000_roles.down.sql"), "SELECT 1;").unwrap();
        let folder = Folder::read(&dir).unwrap();
        let check = folder.role_check().unwrap();
        assert_eq!(
            (check.roles.as_slice(), check.shown.as_str()),
            (&["a".to_owned()][..], "20270101000000_roles.up.sql")
        );
        assert_eq!(folder.seeded_by("a"), Some("20270101000000_roles.up.sql"));
        assert!(folder.reversible());
        assert_eq!(
            folder.next_version(20260101000000),
            20270101000001,
            "past the latest"
        );
        assert_eq!(
            folder.next_version(20280101000000),
            20280101000000,
            "now, when later"
        );
        std::fs::remove_dir_all(&dir).unwrap();
    }
}
