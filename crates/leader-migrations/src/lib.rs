//! Reads an application's migrations to find the roles its database registers: `#[leader_role]`
//! does it at compile time, `leaderctl roles add` before writing the next roles migration.
//!
//! An application lists its roles in its own migration:
//!
//! ```sql
//! ALTER TABLE leader_leases ADD CONSTRAINT leader_leases_role_registered
//!     CHECK (role IN ('billing', 'dunning'));
//! ```
//!
//! A later migration may drop the constraint and add it again with more roles, so the last file
//! (in file-name order, which is the order migrations run in) that defines it wins. Down
//! migrations (`*.down.sql`) are skipped: they undo, they do not define the current schema.

#![warn(missing_docs)]

use std::fs;
use std::path::{Path, PathBuf};

/// The constraint's name, fixed by the framework's schema.
pub use leader_role_name::ROLE_CONSTRAINT as CONSTRAINT;

/// The role CHECK constraint found in a migration.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct RoleCheck {
    /// The migration file, absolute (for `include_bytes!`).
    pub path: PathBuf,
    /// The migration file relative to the crate's manifest dir, `/`-separated (for messages).
    pub shown: String,
    /// The role names listed in the CHECK.
    pub roles: Vec<String>,
}

/// Why the migrations could not be read.
#[derive(Debug)]
#[non_exhaustive]
pub enum RoleCheckError {
    /// The folder, or a file in it, could not be read.
    Read {
        /// What could not be read: `the migrations folder`, or the file's name.
        what: String,
        /// The operating system's reason.
        source: std::io::Error,
    },
    /// PostgreSQL's scanner could not split a file into tokens.
    Scan {
        /// The file's name.
        file: String,
        /// The scanner's message.
        message: String,
    },
}

impl std::fmt::Display for RoleCheckError {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        match self {
            RoleCheckError::Read { what, source } => write!(f, "cannot read {what}: {source}"),
            RoleCheckError::Scan { file, message } => write!(f, "cannot read `{file}`: {message}"),
        }
    }
}

impl std::error::Error for RoleCheckError {
    fn source(&self) -> Option<&(dyn std::error::Error + 'static)> {
        match self {
            RoleCheckError::Read { source, .. } => Some(source),
            RoleCheckError::Scan { .. } => None,
        }
    }
}

/// One up (or plain) migration of a folder, read.
#[derive(Debug, Clone, PartialEq, Eq)]
#[non_exhaustive]
pub struct MigrationFile {
    /// The file's name, e.g. `20260101000000_jobs.sql`.
    pub name: String,
    /// The file, absolute when the folder was given absolute (for `include_bytes!`).
    pub path: PathBuf,
    /// The file relative to `manifest_dir`, `/`-separated (for messages).
    pub shown: String,
    /// The file's text.
    pub sql: String,
}

/// The up and plain migrations of `dir` (`*.sql` but not `*.down.sql`), in the order they run
/// (file-name order); `Ok(None)` when the folder does not exist.
///
/// # Errors
///
/// [`RoleCheckError::Read`] when the folder or a file in it cannot be read.
pub fn migration_files(
    dir: &Path,
    manifest_dir: &Path,
) -> Result<Option<Vec<MigrationFile>>, RoleCheckError> {
    let entries = match fs::read_dir(dir) {
        Ok(entries) => entries,
        Err(e) if e.kind() == std::io::ErrorKind::NotFound => return Ok(None),
        Err(source) => {
            return Err(RoleCheckError::Read {
                what: "the migrations folder".into(),
                source,
            });
        }
    };
    let mut files: Vec<(String, PathBuf)> = entries
        .filter_map(Result::ok)
        .filter(|entry| entry.file_type().is_ok_and(|t| t.is_file()))
        .filter_map(|entry| Some((entry.file_name().into_string().ok()?, entry.path())))
        .filter(|(name, _)| name.ends_with(".sql") && !name.ends_with(".down.sql"))
        .collect();
    files.sort();
    files
        .into_iter()
        .map(|(name, path)| {
            let sql = fs::read_to_string(&path).map_err(|source| RoleCheckError::Read {
                what: format!("`{name}`"),
                source,
            })?;
            let shown = path
                .strip_prefix(manifest_dir)
                .unwrap_or(&path)
                .components()
                .map(|c| c.as_os_str().to_string_lossy())
                .collect::<Vec<_>>()
                .join("/");
            Ok(MigrationFile {
                name,
                path,
                shown,
                sql,
            })
        })
        .collect::<Result<Vec<_>, _>>()
        .map(Some)
}

/// Finds the last migration in `dir` that defines the role constraint.
///
/// `Ok(None)` when the folder does not exist or no migration defines the constraint: there is
/// then nothing to pin at compile time (the runtime's start-up check still runs).
pub fn find_role_check(
    dir: &Path,
    manifest_dir: &Path,
) -> Result<Option<RoleCheck>, RoleCheckError> {
    let mut found = None;
    for file in migration_files(dir, manifest_dir)?.unwrap_or_default() {
        let roles = roles_in_sql(&file.sql).map_err(|message| RoleCheckError::Scan {
            file: file.name.clone(),
            message,
        })?;
        if let Some(roles) = roles {
            found = Some(RoleCheck {
                path: file.path,
                shown: file.shown,
                roles,
            });
        }
    }
    Ok(found)
}

/// The roles listed by the last definition of the role constraint in `sql`, if it defines it.
///
/// Looks for `CONSTRAINT leader_leases_role_registered CHECK ( ... )` (as in `ALTER TABLE .. ADD
/// CONSTRAINT` or `CREATE TABLE`) outside comments, and takes the string literals inside the
/// parentheses: `role IN ('a', 'b')` and `role = ANY (ARRAY['a', 'b'])` both work. The SQL is
/// split into tokens by PostgreSQL's own scanner (`pg_query`), so comments, quoted identifiers and
/// escaped quotes are read as PostgreSQL reads them.
///
/// # Errors
///
/// The tokenizer's message, for SQL it cannot split (an unterminated string or comment).
fn roles_in_sql(sql: &str) -> Result<Option<Vec<String>>, String> {
    use pg_query::protobuf::Token as Kind;
    let scanned = pg_query::scan(sql).map_err(|e| e.to_string())?;
    let tokens: Vec<(i32, &str)> = scanned
        .tokens
        .iter()
        .filter(|t| t.token != Kind::SqlComment as i32 && t.token != Kind::CComment as i32)
        .filter_map(|t| {
            let start = usize::try_from(t.start).ok()?;
            let end = usize::try_from(t.end).ok()?;
            Some((t.token, sql.get(start..end)?))
        })
        .collect();
    let word = |(_, text): &(i32, &str), expected: &str| match text.strip_prefix('"') {
        Some(quoted) => quoted.strip_suffix('"') == Some(expected),
        None => text.eq_ignore_ascii_case(expected),
    };
    let is = |(kind, _): &(i32, &str), wanted: Kind| *kind == wanted as i32;
    let mut found = None;
    let mut i = 0;
    while i + 3 < tokens.len() {
        let defines = word(&tokens[i], "constraint")
            && word(&tokens[i + 1], CONSTRAINT)
            && word(&tokens[i + 2], "check")
            && is(&tokens[i + 3], Kind::Ascii40);
        if !defines {
            i += 1;
            continue;
        }
        // The roles are read from the CHECK's string constants by the one reader the runtime's
        // start-up check also uses on the constraint PostgreSQL prints.
        let mut depth = 0usize;
        let mut literals = String::new();
        let mut j = i + 3;
        while j < tokens.len() {
            let token = &tokens[j];
            if is(token, Kind::Ascii40) {
                depth += 1;
            } else if is(token, Kind::Ascii41) {
                depth -= 1;
                if depth == 0 {
                    break;
                }
            } else if is(token, Kind::Sconst) {
                literals.push_str(token.1);
                literals.push(' ');
            }
            j += 1;
        }
        found = Some(leader_role_name::roles_in_check(&literals));
        i = j;
    }
    Ok(found)
}

#[cfg(test)]
mod tests {
    use super::*;

    fn roles(sql: &str) -> Option<Vec<String>> {
        roles_in_sql(sql).unwrap()
    }

    #[test]
    fn alter_table_add_constraint() {
        let sql = "ALTER TABLE leader_leases ADD CONSTRAINT leader_leases_role_registered \
                   CHECK (role IN ('billing', 'dunning'));";
        assert_eq!(roles(sql), Some(vec!["billing".into(), "dunning".into()]));
    }

    #[test]
    fn any_array_form_and_case() {
        let sql = "alter table leader_leases add constraint \"leader_leases_role_registered\" \
                   check ((role = ANY (ARRAY['a'::text, 'b_2'::text])));";
        assert_eq!(roles(sql), Some(vec!["a".into(), "b_2".into()]));
    }

    #[test]
    fn drop_then_add_takes_the_added_one() {
        let sql = "ALTER TABLE leader_leases DROP CONSTRAINT leader_leases_role_registered;\n\
                   ALTER TABLE leader_leases ADD CONSTRAINT leader_leases_role_registered\n\
                   CHECK (role IN ('billing', 'dunning', 'webhooks'));";
        assert_eq!(
            roles(sql),
            Some(vec!["billing".into(), "dunning".into(), "webhooks".into()])
        );
    }

    #[test]
    fn comments_and_other_constraints_ignored() {
        let sql = "-- ADD CONSTRAINT leader_leases_role_registered CHECK (role IN ('x'))\n\
                   /* CONSTRAINT leader_leases_role_registered CHECK (role IN ('y')) */\n\
                   ALTER TABLE t ADD CONSTRAINT other CHECK (role IN ('z'));\n\
                   ALTER TABLE leader_leases DROP CONSTRAINT leader_leases_role_registered;";
        assert_eq!(roles(sql), None);
    }

    #[test]
    fn only_the_check_parentheses_are_read() {
        let sql = "ALTER TABLE leader_leases ADD CONSTRAINT leader_leases_role_registered \
                   CHECK (role IN ('a')); INSERT INTO leader_leases (role) VALUES ('a'), ('zz');";
        assert_eq!(roles(sql), Some(vec!["a".into()]));
    }

    #[test]
    fn strings_and_identifiers_are_read_as_postgresql_reads_them() {
        let sql = "SELECT 'CONSTRAINT leader_leases_role_registered CHECK (role IN (''s''))';\n\
                   ALTER TABLE leader_leases ADD CONSTRAINT \"Leader_leases_role_registered\" \
                   CHECK (role IN ('q'));";
        assert_eq!(roles(sql), None, "a string and a differently quoted name");
        let sql = "ALTER TABLE leader_leases ADD CONSTRAINT leader_leases_role_registered \
                   CHECK (role IN ('it''s', /* ('c') */ 'b'));";
        assert_eq!(roles(sql), Some(vec!["it's".into(), "b".into()]));
    }

    #[test]
    fn sql_the_tokenizer_cannot_split_is_an_error() {
        let err = roles_in_sql("ALTER TABLE leader_leases ADD CONSTRAINT x CHECK (role IN ('a")
            .unwrap_err();
        assert!(err.contains("unterminated quoted string"), "{err}");
    }

    #[test]
    fn last_defining_file_wins_and_down_files_are_skipped() {
        let dir = std::env::temp_dir().join(format!("leader-migrations-{}", std::process::id()));
        let _ = fs::remove_dir_all(&dir);
        fs::create_dir_all(dir.join("migrations")).unwrap();
        let add = |roles: &str| {
            format!(
                "ALTER TABLE leader_leases ADD CONSTRAINT {CONSTRAINT} CHECK (role IN ({roles}));"
            )
        };
        fs::write(dir.join("migrations/0001_a.up.sql"), add("'a'")).unwrap();
        fs::write(dir.join("migrations/0002_b.sql"), add("'a', 'b'")).unwrap();
        fs::write(dir.join("migrations/0003_c.up.sql"), "SELECT 1;").unwrap();
        fs::write(dir.join("migrations/0009_z.down.sql"), add("'z'")).unwrap();
        fs::write(dir.join("migrations/notes.txt"), add("'t'")).unwrap();
        let check = find_role_check(&dir.join("migrations"), &dir)
            .unwrap()
            .unwrap();
        assert_eq!(check.roles, vec!["a".to_owned(), "b".to_owned()]);
        assert_eq!(check.shown, "migrations/0002_b.sql");
        assert!(check.path.is_absolute());
        assert!(matches!(
            find_role_check(&dir.join("missing"), &dir),
            Ok(None)
        ));
        fs::remove_dir_all(&dir).unwrap();
    }
}
