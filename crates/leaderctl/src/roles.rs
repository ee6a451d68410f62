//! `leaderctl roles add NAME... --dir DIR` (and `migrations write DIR --role NAME`): writes the
//! next migration of an application's folder with whatever registering the roles still takes,
//! in the shape `docs/leaderctl.md` shows:
//!
//! * the role CHECK re-created with every role the folder's migrations already register (read as
//!   `#[leader_role]` reads them, [`leader_migrations`]) plus the new ones, if any role is
//!   missing from it;
//! * a row seeded per role (`ON CONFLICT DO NOTHING`) unless the folder's migrations
//!   already seed it ([`Folder::seeded_by`] says how that is read);
//! * and a `.down.sql` undoing both when the folder's migrations are reversible.
//!
//! So a role someone added to the CHECK by hand (to get past `#[leader_role]`'s compile error)
//! but never seeded gets its row, and nothing is written twice.

use std::fs;
use std::io::Write;
use std::path::Path;

use leader_migrations::CONSTRAINT;

use crate::failure::Failure;
use leader_migrations::Folder;

/// Refuses a malformed role name, saying what is wrong with it.
pub fn validate(names: &[String]) -> Result<(), Failure> {
    for name in names {
        leader_core::validate_role_name(name).map_err(|e| Failure::refused(e.to_string()))?;
    }
    Ok(())
}

/// A role that needs nothing, and the files that already register and seed it.
#[derive(Debug)]
pub struct Done {
    /// The role.
    pub role: String,
    /// The file whose role CHECK lists it.
    pub check_file: String,
    /// The file that seeds its row.
    pub seed_file: String,
}

/// What registering some roles in a folder still takes.
#[derive(Debug)]
pub struct Plan {
    /// The roles the folder's role CHECK lists now, if it defines one.
    before: Option<Vec<String>>,
    /// The roles the re-created CHECK keeps: the CHECK's, or without one the roles the folder
    /// seeds (their rows must pass the new CHECK).
    kept: Vec<String>,
    /// Roles to add to the CHECK.
    added: Vec<String>,
    /// Roles to seed a row for.
    seeded: Vec<String>,
    /// Roles given that need nothing.
    pub done: Vec<Done>,
}

impl Plan {
    /// What registering `names` (validated) in `folder` takes.
    pub fn new(folder: &Folder, names: &[String]) -> Plan {
        let check = folder.role_check();
        let before = check.map(|c| c.roles.clone());
        let kept = before.clone().unwrap_or_else(|| folder.seeded_roles());
        let mut plan = Plan {
            before,
            kept,
            added: Vec::new(),
            seeded: Vec::new(),
            done: Vec::new(),
        };
        let mut seen: Vec<&String> = Vec::new();
        for name in names {
            if seen.contains(&name) {
                continue;
            }
            seen.push(name);
            let in_check = check
                .filter(|c| c.roles.contains(name))
                .map(|c| c.shown.clone());
            let seed_file = folder.seeded_by(name);
            match (in_check, seed_file) {
                (Some(check_file), Some(seed_file)) => plan.done.push(Done {
                    role: name.clone(),
                    check_file,
                    seed_file: seed_file.to_owned(),
                }),
                (in_check, seed_file) => {
                    if in_check.is_none() {
                        plan.added.push(name.clone());
                    }
                    if seed_file.is_none() {
                        plan.seeded.push(name.clone());
                    }
                }
            }
        }
        plan
    }

    /// True when every role given is registered and seeded already.
    pub fn is_empty(&self) -> bool {
        self.added.is_empty() && self.seeded.is_empty()
    }

    /// What the migration does, e.g. `registers email_outbox; keeps billing; seeds email_outbox`.
    pub fn summary(&self) -> String {
        let mut parts = Vec::new();
        if !self.added.is_empty() {
            parts.push(format!("registers {}", self.added.join(", ")));
            if !self.kept.is_empty() {
                parts.push(format!("keeps {}", self.kept.join(", ")));
            }
        }
        if !self.seeded.is_empty() {
            parts.push(format!("seeds {}", self.seeded.join(", ")));
        }
        let only_seeds: Vec<&str> = self
            .seeded
            .iter()
            .filter(|r| !self.added.contains(r))
            .map(String::as_str)
            .collect();
        if !only_seeds.is_empty() {
            parts.push(format!(
                "{} already in the role CHECK, never seeded",
                only_seeds.join(", ")
            ));
        }
        parts.join("; ")
    }

    /// The roles this plan touches, for the migration's comment.
    fn touched(&self) -> Vec<&str> {
        let mut roles: Vec<&str> = self.added.iter().map(String::as_str).collect();
        for role in &self.seeded {
            if !roles.contains(&role.as_str()) {
                roles.push(role);
            }
        }
        roles
    }

    fn up(&self) -> String {
        let mut sql = format!(
            "-- Registers the leader roles {} (written by leaderctl): {}.\n",
            self.touched().join(", "),
            match (self.added.is_empty(), self.seeded.is_empty()) {
                (false, false) => {
                    "the role CHECK is re-created with every role registered so far, and each \
                     new role has a row"
                }
                (false, true) => {
                    "the role CHECK is re-created with every role registered so far (their rows \
                     are seeded by an earlier migration)"
                }
                (true, _) => "a row for each (the role CHECK already lists them)",
            }
        );
        if !self.added.is_empty() {
            let after: Vec<&str> = self
                .kept
                .iter()
                .chain(&self.added)
                .map(String::as_str)
                .collect();
            sql += &format!(
                "ALTER TABLE leader_leases DROP CONSTRAINT IF EXISTS {CONSTRAINT};\n\
                 ALTER TABLE leader_leases ADD CONSTRAINT {CONSTRAINT}\n    CHECK (role IN ({}));\n",
                list(&after)
            );
        }
        if !self.seeded.is_empty() {
            if !self.added.is_empty() {
                sql.push('\n');
            }
            let seeds = self
                .seeded
                .iter()
                .map(|r| format!("({}, leader_seed_token())", literal(r)))
                .collect::<Vec<_>>()
                .join(",\n       ");
            sql += &format!(
                "INSERT INTO leader_leases (role, holder_token)\nVALUES {seeds}\n\
                 ON CONFLICT DO NOTHING;\n"
            );
        }
        sql
    }

    fn down(&self) -> String {
        // The rows go first: a row of a role the restored CHECK does not list would fail it.
        let mut removed: Vec<&str> = self.touched();
        removed.sort_unstable();
        let mut sql = format!(
            "DELETE FROM leader_leases WHERE role IN ({});\n",
            list(&removed)
        );
        if !self.added.is_empty() {
            sql += &format!("ALTER TABLE leader_leases DROP CONSTRAINT IF EXISTS {CONSTRAINT};\n");
            if let Some(before) = &self.before {
                let before: Vec<&str> = before.iter().map(String::as_str).collect();
                sql += &format!(
                    "ALTER TABLE leader_leases ADD CONSTRAINT {CONSTRAINT}\n    CHECK (role IN ({}));\n",
                    list(&before)
                );
            }
        }
        sql
    }

    /// Writes the migration as version `version` of `dir` (a `.down.sql` too when `reversible`),
    /// returning the up file's name.
    pub fn write(&self, dir: &Path, version: u64, reversible: bool) -> Result<String, Failure> {
        write_migration(
            dir,
            &format!("{version}_leader_roles"),
            reversible,
            &self.up(),
            &self.down(),
        )
    }
}

/// `leaderctl roles add`: writes the migration registering `names` in `dir`, refusing when every
/// role is registered and seeded already.
pub fn add(dir: &Path, names: &[String]) -> Result<(), Failure> {
    validate(names)?;
    if !dir.is_dir() {
        return Err(Failure::refused(format!(
            "{} is not a folder: pass your migrations folder (`leaderctl migrations write {0}` \
             creates it with the framework's migrations)",
            dir.display()
        )));
    }
    let folder = Folder::read(dir).map_err(|e| Failure::unreadable_folder(dir, &e))?;
    let plan = Plan::new(&folder, names);
    for done in &plan.done {
        println!("{}", done_line(done));
    }
    if plan.is_empty() {
        let roles: Vec<&str> = plan.done.iter().map(|d| d.role.as_str()).collect();
        return Err(Failure::refused(format!(
            "every role given ({}) is already registered and seeded by the migrations in {}: nothing \
             to write (`leaderctl check --role ROLE` says whether a database has it)",
            roles.join(", "),
            dir.display()
        )));
    }
    let reversible = folder.reversible();
    let up = plan.write(
        dir,
        folder.next_version(crate::migrations::version_now()),
        reversible,
    )?;
    println!(
        "wrote {}{}: {}",
        dir.join(&up).display(),
        if reversible { " and its .down.sql" } else { "" },
        plan.summary()
    );
    Ok(())
}

/// The line saying a role needs nothing, and which files do it.
pub fn done_line(done: &Done) -> String {
    let files = if done.check_file == done.seed_file {
        done.check_file.clone()
    } else {
        format!(
            "CHECK in {}, row seeded by {}",
            done.check_file, done.seed_file
        )
    };
    format!(
        "{:<48} already registered and seeded ({files})",
        format!("role {}", done.role)
    )
}

/// Prints the lines for a migration just written: the up (or plain) file with what it does, and
/// its down file.
pub fn print_written(up: &str, what: &str) {
    println!("{up:<48} new, written: {what}");
    if let Some(stem) = up.strip_suffix(".up.sql") {
        println!("{:<48} new, written", format!("{stem}.down.sql"));
    }
}

/// `'name'`, quotes doubled.
pub fn literal(text: &str) -> String {
    format!("'{}'", text.replace('\'', "''"))
}

fn list(roles: &[&str]) -> String {
    roles
        .iter()
        .map(|r| literal(r))
        .collect::<Vec<_>>()
        .join(", ")
}

/// Writes `{stem}.up.sql` and `{stem}.down.sql` when `reversible`, else `{stem}.sql`, never over
/// an existing file; returns the up (or plain) file's name.
pub fn write_migration(
    dir: &Path,
    stem: &str,
    reversible: bool,
    up: &str,
    down: &str,
) -> Result<String, Failure> {
    let up_name = format!("{stem}{}", if reversible { ".up.sql" } else { ".sql" });
    write_new(dir, &up_name, up)?;
    if reversible {
        write_new(dir, &format!("{stem}.down.sql"), down)?;
    }
    Ok(up_name)
}

fn write_new(dir: &Path, name: &str, sql: &str) -> Result<(), Failure> {
    let path = dir.join(name);
    fs::OpenOptions::new()
        .write(true)
        .create_new(true)
        .open(&path)
        .and_then(|mut file| file.write_all(sql.as_bytes()))
        .map_err(|e| Failure::refused(format!("cannot write {}: {e}", path.display())))
}

#[cfg(test)]
mod tests {
    use super::*;

    fn plan(before: Option<&[&str]>, added: &[&str], seeded: &[&str]) -> Plan {
        let own = |v: &[&str]| v.iter().map(|s| (*s).to_owned()).collect::<Vec<_>>();
        Plan {
            before: before.map(own),
            kept: before.map(own).unwrap_or_default(),
            added: own(added),
            seeded: own(seeded),
            done: Vec::new(),
        }
    }

    #[test]
    fn a_new_role_gets_the_check_and_its_row_and_the_down_restores_the_check() {
        let p = plan(Some(&["a"]), &["b"], &["b"]);
        assert_eq!(
            p.up(),
            "-- Registers the leader roles b (written by leaderctl): the role CHECK is re-created \
             with every role registered so far, and each new role has a row.\n\
             ALTER TABLE leader_leases DROP CONSTRAINT IF EXISTS leader_leases_role_registered;\n\
             ALTER TABLE leader_leases ADD CONSTRAINT leader_leases_role_registered\n    \
             CHECK (role IN ('a', 'b'));\n\n\
             INSERT INTO leader_leases (role, holder_token)\nVALUES ('b', leader_seed_token())\n\
             ON CONFLICT DO NOTHING;\n"
        );
        assert_eq!(
            p.down(),
            "DELETE FROM leader_leases WHERE role IN ('b');\n\
             ALTER TABLE leader_leases DROP CONSTRAINT IF EXISTS leader_leases_role_registered;\n\
             ALTER TABLE leader_leases ADD CONSTRAINT leader_leases_role_registered\n    \
             CHECK (role IN ('a'));\n"
        );
        assert_eq!(p.summary(), "registers b; keeps a; seeds b");
    }

    #[test]
    fn a_role_in_the_check_but_never_seeded_gets_only_its_row() {
        let p = plan(Some(&["a", "b"]), &[], &["b"]);
        let up = p.up();
        assert!(!up.contains("CONSTRAINT"), "{up}");
        assert!(up.contains("VALUES ('b', leader_seed_token())"), "{up}");
        assert!(up.contains("ON CONFLICT DO NOTHING;"), "{up}");
        assert_eq!(p.down(), "DELETE FROM leader_leases WHERE role IN ('b');\n");
        assert_eq!(
            p.summary(),
            "seeds b; b already in the role CHECK, never seeded"
        );
    }

    #[test]
    fn a_seeded_role_missing_from_the_check_gets_only_the_check() {
        let p = plan(Some(&["a"]), &["b"], &[]);
        let up = p.up();
        assert!(up.contains("CHECK (role IN ('a', 'b'))"), "{up}");
        assert!(!up.contains("INSERT"), "{up}");
        assert_eq!(p.summary(), "registers b; keeps a");
    }

    #[test]
    fn without_an_earlier_check_the_down_drops_it() {
        let p = plan(None, &["a"], &["a"]);
        assert_eq!(
            p.down(),
            "DELETE FROM leader_leases WHERE role IN ('a');\n\
             ALTER TABLE leader_leases DROP CONSTRAINT IF EXISTS leader_leases_role_registered;\n"
        );
    }
}
