//! What an application's migrations folder already does for the framework, read from its files:
//! the roles its CHECK registers, the roles it seeds a row for, the login roles it grants, the
//! shard counts it gives roles, its next version, and whether it writes reversible migrations.
//!
//! The CHECK is read by [`leader_migrations`], as `#[leader_role]` reads it. Seeds and grants are
//! read here with the same scanner (PostgreSQL's own, through `pg_query`), so comments, quoted
//! names and escaped quotes are read as PostgreSQL reads them:
//!
//! * a role is **seeded** by a file when one of its statements starts `INSERT INTO leader_leases`
//!   (schema-qualified or not) and has the role's name as a string constant anywhere before the
//!   statement's `;` (`VALUES ('billing', ...)`, `SELECT 'billing', ...`, `ARRAY['billing', ...]`);
//! * a login role is **granted** by a file that calls `leader_grant_app_role('my_app')` (the
//!   first argument a string constant naming it, `::name` cast or not);
//! * a role is **resharded** by a call `leader_reshard('webhooks', 8)` (the first argument a
//!   string constant, cast or not, the second an integer constant); the last such call in the
//!   order the files run gives the role's count.
//!
//! Only a file's own statements are read: SQL inside a `DO` block or a function body is one
//! string constant to the scanner, so a seed or a grant written there is not seen (and is written
//! again). Down migrations (`*.down.sql`) are skipped: they undo, they do not define the schema.
//! A statement that later deletes a seeded row is not followed either.

use std::fs;
use std::path::Path;

use leader_migrations::{RoleCheck, find_role_check};
use pg_query::protobuf::Token as Kind;

use crate::failure::Failure;

/// One up (or plain) migration of the folder.
#[derive(Debug)]
struct File {
    name: String,
    /// Roles seeded by this file's `INSERT INTO leader_leases` statements.
    seeds: Vec<String>,
    /// Login roles this file calls `leader_grant_app_role` for.
    grants: Vec<String>,
    /// The `leader_reshard(role, count)` calls of this file, in order.
    reshards: Vec<(String, u32)>,
}

/// The folder's migrations, as far as the framework is concerned.
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
    /// Reads `dir`'s migrations; a folder that does not exist reads as empty.
    pub fn read(dir: &Path) -> Result<Folder, Failure> {
        let check = find_role_check(dir, dir)
            .map_err(|e| Failure::refused(format!("{}: {e}", dir.display())))?;
        let mut names: Vec<String> = match fs::read_dir(dir) {
            Ok(entries) => entries
                .filter_map(Result::ok)
                .filter(|entry| entry.file_type().is_ok_and(|t| t.is_file()))
                .filter_map(|entry| entry.file_name().into_string().ok())
                .filter(|name| name.ends_with(".sql"))
                .collect(),
            Err(e) if e.kind() == std::io::ErrorKind::NotFound => Vec::new(),
            Err(e) => {
                return Err(Failure::refused(format!(
                    "cannot read {}: {e}",
                    dir.display()
                )));
            }
        };
        names.sort();
        let mut files = Vec::new();
        for name in names.iter().filter(|n| !n.ends_with(".down.sql")) {
            let path = dir.join(name);
            let sql = fs::read_to_string(&path)
                .map_err(|e| Failure::refused(format!("cannot read {}: {e}", path.display())))?;
            let tokens = scan(&sql).map_err(|message| {
                Failure::refused(format!(
                    "cannot read {}: {message}: fix the file's SQL first",
                    path.display()
                ))
            })?;
            files.push(File {
                name: name.clone(),
                seeds: seeds(&tokens),
                grants: grants(&tokens),
                reshards: reshards(&tokens),
            });
        }
        Ok(Folder {
            names,
            files,
            check,
        })
    }

    /// The roles the folder's last role CHECK lists, and that file's name; `None` if no
    /// migration defines the CHECK.
    pub fn check(&self) -> Option<(&[String], String)> {
        self.check.as_ref().map(|c| {
            let file = c
                .path
                .file_name()
                .map_or_else(|| c.shown.clone(), |n| n.to_string_lossy().into_owned());
            (c.roles.as_slice(), file)
        })
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

    /// True when the folder's migrations come in `.up.sql`/`.down.sql` pairs, so a new one should
    /// too.
    pub fn reversible(&self) -> bool {
        self.names.iter().any(|f| f.ends_with(".up.sql"))
    }

    /// The version for the folder's next migration: now as `YYYYMMDDHHMMSS`, or one past the
    /// folder's latest version if that is later, so it runs (and is read by `#[leader_role]`)
    /// after every migration already there.
    pub fn next_version(&self) -> u64 {
        let now: u64 = chrono::Utc::now()
            .format("%Y%m%d%H%M%S")
            .to_string()
            .parse()
            .unwrap_or(0);
        let latest = self
            .names
            .iter()
            .filter_map(|name| name.split('_').next()?.parse::<u64>().ok())
            .max()
            .unwrap_or(0);
        now.max(latest + 1)
    }
}

/// A token the scanner found: its kind and its text.
type Token<'a> = (i32, &'a str);

/// `sql` split into tokens by PostgreSQL's scanner, comments left out.
fn scan(sql: &str) -> Result<Vec<Token<'_>>, String> {
    let scanned = pg_query::scan(sql).map_err(|e| e.to_string())?;
    Ok(scanned
        .tokens
        .iter()
        .filter(|t| t.token != Kind::SqlComment as i32 && t.token != Kind::CComment as i32)
        .filter_map(|t| {
            let start = usize::try_from(t.start).ok()?;
            let end = usize::try_from(t.end).ok()?;
            Some((t.token, sql.get(start..end)?))
        })
        .collect())
}

fn is(token: &Token<'_>, kind: Kind) -> bool {
    token.0 == kind as i32
}

/// The token is the name `expected`, as PostgreSQL reads names: folded to lower case unless
/// double-quoted.
fn names(token: &Token<'_>, expected: &str) -> bool {
    match token.1.strip_prefix('"') {
        Some(quoted) => quoted.strip_suffix('"') == Some(expected),
        None => token.1.eq_ignore_ascii_case(expected),
    }
}

/// The value of a string constant token: `'it''s'` is `it's`, `E'..'` and `$tag$..$tag$` are
/// read without their quotes (a role name has no backslash or dollar in it to unescape).
fn string_value(text: &str) -> Option<String> {
    if let Some(body) = text.strip_prefix('\'').and_then(|t| t.strip_suffix('\'')) {
        return Some(body.replace("''", "'"));
    }
    if let Some(rest) = text.strip_prefix(['E', 'e']) {
        return string_value(rest);
    }
    let tag_end = text.strip_prefix('$')?.find('$')? + 2;
    let tag = &text[..tag_end];
    text.strip_prefix(tag)?.strip_suffix(tag).map(str::to_owned)
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

/// The login roles named by the first argument of `leader_grant_app_role(...)` calls.
fn grants(tokens: &[Token<'_>]) -> Vec<String> {
    (0..tokens.len())
        .filter_map(|i| string_argument(tokens, i, "leader_grant_app_role"))
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

#[cfg(test)]
mod tests {
    use super::*;

    fn seeded(sql: &str) -> Vec<String> {
        seeds(&scan(sql).unwrap())
    }

    fn granted(sql: &str) -> Vec<String> {
        grants(&scan(sql).unwrap())
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
    fn string_values() {
        assert_eq!(string_value("'a''b'").as_deref(), Some("a'b"));
        assert_eq!(string_value("e'x'").as_deref(), Some("x"));
        assert_eq!(string_value("$q$y$q$").as_deref(), Some("y"));
        assert_eq!(string_value("$$z$$").as_deref(), Some("z"));
        assert_eq!(string_value("U&'w'"), None);
    }
}
