//! `leaderctl migrations write DIR [--role NAME]... [--grant LOGIN]... [--operator LOGIN]...`:
//! every migration a service
//! needs, in one step and idempotently:
//!
//! 1. the framework's migrations, embedded in this binary
//!    ([`leader_core::schema::MIGRATION_FILES`]), written into the application's migrations folder
//!    so `sqlx migrate run`, `sqlx::migrate!` and `leaderctl migrate --dir` see them and nobody
//!    copies them by hand;
//! 2. with `--role`, the roles migration `leaderctl roles add` writes, holding only what the
//!    folder does not do yet ([`crate::roles`]);
//! 3. with `--grant`, `SELECT leader_grant_app_role('LOGIN');` unless a migration of the folder
//!    already calls it for that login role, and with `--operator`, `SELECT
//!    leader_grant_operator_role('LOGIN');` (the dashboard's login) likewise ([`crate::grant`]).
//!
//! Run again, it writes nothing and says of each file or role why (unchanged, already registered
//! and seeded, already granted).

use std::fs;
use std::io::ErrorKind;
use std::path::Path;

use leader_core::schema::{MIGRATION_FILES, MigrationFile};

use crate::failure::Failure;
use crate::grant::Grantee;
use crate::{grant, roles};
use leader_migrations::Folder;

/// What a framework file's copy in the folder is.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
enum Copy {
    /// Not there yet.
    New,
    /// There, byte for byte.
    Unchanged,
    /// There, with other contents (an older framework version, or an edit).
    OutOfDate,
}

fn compare(dir: &Path, file: &MigrationFile) -> Result<Copy, Failure> {
    match fs::read(dir.join(file.name)) {
        Ok(bytes) if bytes == file.sql.as_bytes() => Ok(Copy::Unchanged),
        Ok(_) => Ok(Copy::OutOfDate),
        Err(e) if e.kind() == ErrorKind::NotFound => Ok(Copy::New),
        Err(e) => Err(Failure::refused(format!(
            "cannot read {}: {e}",
            dir.join(file.name).display()
        ))),
    }
}

/// Writes every framework file missing from `dir`, then the roles and grant migrations `dir`
/// still lacks; refuses, writing nothing, if a framework file there differs, unless `force`.
pub fn write(
    dir: &Path,
    force: bool,
    role_names: &[String],
    logins: &[String],
    operators: &[String],
) -> Result<(), Failure> {
    roles::validate(role_names)?;
    grant::validate(logins, Grantee::App)?;
    grant::validate(operators, Grantee::Operator)?;
    write_framework(dir, force)?;
    if !role_names.is_empty() {
        let folder = Folder::read(dir).map_err(|e| Failure::unreadable_folder(dir, &e))?;
        let plan = roles::Plan::new(&folder, role_names);
        for done in &plan.done {
            println!("{}", roles::done_line(done));
        }
        if !plan.is_empty() {
            let up = plan.write(dir, folder.next_version(version_now()), folder.reversible())?;
            roles::print_written(&up, &plan.summary());
        }
    }
    for (logins, grantee) in [(logins, Grantee::App), (operators, Grantee::Operator)] {
        if !logins.is_empty() {
            let folder = Folder::read(dir).map_err(|e| Failure::unreadable_folder(dir, &e))?;
            grant::write(
                dir,
                &folder,
                logins,
                folder.next_version(version_now()),
                grantee,
            )?;
        }
    }
    Ok(())
}

/// Writes every framework file missing from `dir`; refuses, writing nothing, if a file there
/// differs, unless `force`.
/// Now, as the version of a migration written now: `YYYYMMDDHHMMSS` in UTC.
pub fn version_now() -> u64 {
    chrono::Utc::now()
        .format("%Y%m%d%H%M%S")
        .to_string()
        .parse()
        .unwrap_or(0)
}

fn write_framework(dir: &Path, force: bool) -> Result<(), Failure> {
    fs::create_dir_all(dir)
        .map_err(|e| Failure::refused(format!("cannot create {}: {e}", dir.display())))?;
    let copies: Vec<(&MigrationFile, Copy)> = MIGRATION_FILES
        .iter()
        .map(|file| Ok((file, compare(dir, file)?)))
        .collect::<Result<_, Failure>>()?;
    let out_of_date = copies.iter().filter(|(_, c)| *c == Copy::OutOfDate).count();
    // All or nothing: while a differing file is refused, no other file is written either.
    let refused = out_of_date > 0 && !force;
    for (file, copy) in &copies {
        let (write, said) = match copy {
            Copy::New if refused => (false, "new, not written (an out-of-date file is refused)"),
            Copy::New => (true, "new, written"),
            Copy::Unchanged => (false, "unchanged"),
            Copy::OutOfDate if force => (true, "out of date, overwritten (--force)"),
            Copy::OutOfDate => (false, "OUT OF DATE, left as it is"),
        };
        if write {
            let path = dir.join(file.name);
            fs::write(&path, file.sql)
                .map_err(|e| Failure::refused(format!("cannot write {}: {e}", path.display())))?;
        }
        println!("{:<48} {said}", file.name);
    }
    if refused {
        return Err(Failure::refused(format!(
            "{out_of_date} file(s) in {} differ from this leaderctl's framework migrations and \
             were not overwritten, nor was anything else written: an applied migration must not \
             change (sqlx refuses a changed checksum), so compare them, then pass --force to \
             overwrite",
            dir.display()
        )));
    }
    Ok(())
}
