//! `leaderctl roles add NAME... --dir DIR`: writes the next migration of an application's folder
//! registering roles, in the shape the README shows: the role CHECK re-created with every role the
//! folder's migrations already register (read as `#[leader_role]` reads them,
//! [`leader_role_check`]) plus the new ones, and a row seeded per role.

use std::fs;
use std::io::Write;
use std::path::Path;

use leader_role_check::{CONSTRAINT, find_role_check};

use crate::failure::Failure;

/// Writes the migration registering `names` in `dir`.
pub fn add(dir: &Path, names: &[String]) -> Result<(), Failure> {
    for name in names {
        leader_core::validate_role_name(name).map_err(|e| Failure::refused(e.to_string()))?;
    }
    if !dir.is_dir() {
        return Err(Failure::refused(format!(
            "{} is not a folder: pass your migrations folder (`leaderctl migrations write {0}` \
             creates it with the framework's migrations)",
            dir.display()
        )));
    }
    let existing = find_role_check(dir, dir)
        .map_err(|e| Failure::refused(format!("{}: {e}", dir.display())))?;
    let before: Vec<String> = existing
        .as_ref()
        .map(|c| c.roles.clone())
        .unwrap_or_default();
    let mut added: Vec<&str> = Vec::new();
    for name in names {
        if !before.contains(name) && !added.contains(&name.as_str()) {
            added.push(name);
        }
    }
    if added.is_empty() {
        return Err(Failure::refused(format!(
            "every role given is already registered by {}: nothing to write",
            existing.map_or_else(String::new, |c| c.shown)
        )));
    }
    let after: Vec<&str> = before
        .iter()
        .map(String::as_str)
        .chain(added.iter().copied())
        .collect();
    let files = sql_files(dir)?;
    let version = next_version(&files);
    let reversible = files.iter().any(|f| f.ends_with(".up.sql"));
    let stem = format!("{version}_leader_roles");
    let up_name = format!("{stem}{}", if reversible { ".up.sql" } else { ".sql" });
    write_new(dir, &up_name, &up(&after, &added))?;
    if reversible {
        write_new(dir, &format!("{stem}.down.sql"), &down(&before, &added))?;
    }
    println!(
        "wrote {}{}: registers {}{}",
        dir.join(&up_name).display(),
        if reversible { " and its .down.sql" } else { "" },
        added.join(", "),
        if before.is_empty() {
            String::new()
        } else {
            format!("; keeps {}", before.join(", "))
        }
    );
    Ok(())
}

fn list(roles: &[&str]) -> String {
    roles
        .iter()
        .map(|r| format!("'{r}'"))
        .collect::<Vec<_>>()
        .join(", ")
}

fn up(after: &[&str], added: &[&str]) -> String {
    let seeds = after
        .iter()
        .map(|r| format!("('{r}', leader_seed_token())"))
        .collect::<Vec<_>>()
        .join(",\n       ");
    format!(
        "-- Registers the leader roles {} (written by `leaderctl roles add`): the role CHECK is\n\
         -- re-created with every role registered so far, and each role has a row.\n\
         ALTER TABLE leader_leases DROP CONSTRAINT IF EXISTS {CONSTRAINT};\n\
         ALTER TABLE leader_leases ADD CONSTRAINT {CONSTRAINT}\n    CHECK (role IN ({}));\n\n\
         INSERT INTO leader_leases (role, holder_token)\nVALUES {seeds}\nON CONFLICT (role) DO NOTHING;\n",
        added.join(", "),
        list(after),
    )
}

fn down(before: &[String], added: &[&str]) -> String {
    let before: Vec<&str> = before.iter().map(String::as_str).collect();
    let restore = if before.is_empty() {
        String::new()
    } else {
        format!(
            "ALTER TABLE leader_leases ADD CONSTRAINT {CONSTRAINT}\n    CHECK (role IN ({}));\n",
            list(&before)
        )
    };
    format!(
        "DELETE FROM leader_leases WHERE role IN ({});\n\
         ALTER TABLE leader_leases DROP CONSTRAINT IF EXISTS {CONSTRAINT};\n{restore}",
        list(added)
    )
}

fn sql_files(dir: &Path) -> Result<Vec<String>, Failure> {
    let entries = fs::read_dir(dir)
        .map_err(|e| Failure::refused(format!("cannot read {}: {e}", dir.display())))?;
    Ok(entries
        .filter_map(Result::ok)
        .filter_map(|e| e.file_name().into_string().ok())
        .filter(|name| name.ends_with(".sql"))
        .collect())
}

/// Now as `YYYYMMDDHHMMSS`, or one past the folder's latest version if that is later, so the
/// new migration runs (and is read by `#[leader_role]`) after every one already there.
fn next_version(files: &[String]) -> u64 {
    let now: u64 = chrono::Utc::now()
        .format("%Y%m%d%H%M%S")
        .to_string()
        .parse()
        .unwrap_or(0);
    let latest = files
        .iter()
        .filter_map(|name| name.split('_').next()?.parse::<u64>().ok())
        .max()
        .unwrap_or(0);
    now.max(latest + 1)
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
