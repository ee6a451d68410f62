//! The migration files of a folder, in the order they run.

use std::fs;
use std::path::{Path, PathBuf};

use crate::RoleCheckError;

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

/// The up and plain migrations of `dir` (`*.sql` but not `*.down.sql`), in the order sqlx runs
/// them: by the integer version before the first `_` (`2_b.sql` before `10_a.sql`), then by name;
/// a file without a version (which sqlx refuses) last. `Ok(None)` when the folder does not exist.
///
/// # Errors
///
/// [`RoleCheckError::Read`] when the folder or a file in it cannot be read.
pub fn migration_files(
    dir: &Path,
    manifest_dir: &Path,
) -> Result<Option<Vec<MigrationFile>>, RoleCheckError> {
    let Some(names) = sql_file_names(dir)? else {
        return Ok(None);
    };
    let mut names: Vec<String> = names
        .into_iter()
        .filter(|name| !name.ends_with(".down.sql"))
        .collect();
    names.sort_by_key(|name| (version(name).ok_or(()), name.clone()));
    names
        .into_iter()
        .map(|name| {
            let path = dir.join(&name);
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

/// The integer version sqlx reads from a migration's name: what comes before its first `_`.
pub(crate) fn version(name: &str) -> Option<i64> {
    name.split_once('_')?.0.parse().ok()
}

/// The names of every `.sql` file in `dir`, down migrations included, sorted; `Ok(None)` when
/// the folder does not exist.
pub(crate) fn sql_file_names(dir: &Path) -> Result<Option<Vec<String>>, RoleCheckError> {
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
    let mut names: Vec<String> = entries
        .filter_map(Result::ok)
        .filter(|entry| entry.file_type().is_ok_and(|t| t.is_file()))
        .filter_map(|entry| entry.file_name().into_string().ok())
        .filter(|name| name.ends_with(".sql"))
        .collect();
    names.sort();
    Ok(Some(names))
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn migrations_run_by_integer_version_as_sqlx_runs_them() {
        let dir =
            std::env::temp_dir().join(format!("leader-migrations-order-{}", std::process::id()));
        fs::create_dir_all(&dir).unwrap();
        for name in [
            "10_c.sql",
            "2_b.up.sql",
            "1_a.sql",
            "2_b.down.sql",
            "notes.sql",
        ] {
            fs::write(dir.join(name), "SELECT 1;").unwrap();
        }
        let names: Vec<String> = migration_files(&dir, &dir)
            .unwrap()
            .unwrap()
            .into_iter()
            .map(|f| f.name)
            .collect();
        fs::remove_dir_all(&dir).unwrap();
        assert_eq!(names, ["1_a.sql", "2_b.up.sql", "10_c.sql", "notes.sql"]);
    }
}
