//! The role CHECK an application's migrations define: the roles its database registers.

use std::path::{Path, PathBuf};

use crate::scan::{Kind, is, names, scan};
use crate::{CONSTRAINT, MigrationFile, RoleCheckError, migration_files};

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

/// Finds the last migration in `dir` that defines the role constraint.
///
/// `Ok(None)` when the folder does not exist or no migration defines the constraint: there is
/// then nothing to pin at compile time (the runtime's start-up check still runs).
///
/// # Errors
///
/// [`RoleCheckError::Read`] when the folder or a file in it cannot be read,
/// [`RoleCheckError::Scan`] when PostgreSQL's scanner cannot split a file.
pub fn find_role_check(
    dir: &Path,
    manifest_dir: &Path,
) -> Result<Option<RoleCheck>, RoleCheckError> {
    last_role_check(&migration_files(dir, manifest_dir)?.unwrap_or_default())
}

/// The last of `files` (in the order they run) that defines the role constraint.
pub(crate) fn last_role_check(
    files: &[MigrationFile],
) -> Result<Option<RoleCheck>, RoleCheckError> {
    let mut found = None;
    for file in files {
        let roles = roles_in_sql(&file.sql).map_err(|message| RoleCheckError::Scan {
            file: file.name.clone(),
            message,
        })?;
        if let Some(roles) = roles {
            found = Some(RoleCheck {
                path: file.path.clone(),
                shown: file.shown.clone(),
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
/// parentheses: `role IN ('a', 'b')` and `role = ANY (ARRAY['a', 'b'])` both work.
///
/// # Errors
///
/// The tokenizer's message, for SQL it cannot split (an unterminated string or comment).
fn roles_in_sql(sql: &str) -> Result<Option<Vec<String>>, String> {
    let tokens = scan(sql)?;
    let mut found = None;
    let mut i = 0;
    while i + 3 < tokens.len() {
        let defines = names(&tokens[i], "constraint")
            && names(&tokens[i + 1], CONSTRAINT)
            && names(&tokens[i + 2], "check")
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
    use std::fs;

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
