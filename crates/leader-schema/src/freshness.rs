//! Whether a crate's file is the one its migrations make: the fingerprint of the files it was
//! prepared from, and the crate's file loaded and checked against it.

use std::fmt;
use std::path::{Path, PathBuf};

use sha2::{Digest, Sha256};

use crate::{DECLARED_TABLES, FILE_NAME, PREPARE_COMMAND, PreparedSchema};

/// The fingerprint of what a schema is prepared from: every up and plain migration of
/// `migrations` (`*.sql` but `*.down.sql`, which sqlx never runs forward), by name and content,
/// and [`DECLARED_TABLES`] next to `Cargo.toml` when there is one. `sha256:` and the hex digest.
///
/// A folder that does not exist has no migrations.
///
/// # Errors
///
/// If the folder or a file in it cannot be read.
pub fn fingerprint(manifest_dir: &Path, migrations: &str) -> std::io::Result<String> {
    let folder = manifest_dir.join(migrations);
    let mut names: Vec<String> = match std::fs::read_dir(&folder) {
        Ok(entries) => entries
            .filter_map(Result::ok)
            .filter(|entry| entry.file_type().is_ok_and(|t| t.is_file()))
            .filter_map(|entry| entry.file_name().into_string().ok())
            .filter(|name| name.ends_with(".sql") && !name.ends_with(".down.sql"))
            .collect(),
        Err(e) if e.kind() == std::io::ErrorKind::NotFound => Vec::new(),
        Err(e) => return Err(e),
    };
    names.sort();
    let mut hash = Sha256::new();
    hash.update(format!("leader-schema {}\n", crate::FORMAT));
    let mut add = |label: &str, bytes: &[u8]| {
        hash.update(format!("{label}\n{}\n", bytes.len()));
        hash.update(bytes);
    };
    for name in &names {
        add(
            &format!("migrations/{name}"),
            &std::fs::read(folder.join(name))?,
        );
    }
    match std::fs::read(manifest_dir.join(DECLARED_TABLES)) {
        Ok(bytes) => add(DECLARED_TABLES, &bytes),
        Err(e) if e.kind() == std::io::ErrorKind::NotFound => {}
        Err(e) => return Err(e),
    }
    let digest = hash.finalize();
    let hex: String = digest.iter().map(|b| format!("{b:02x}")).collect();
    Ok(format!("sha256:{hex}"))
}

/// Why a crate's prepared schema cannot be used.
#[derive(Debug)]
#[non_exhaustive]
pub enum LoadError {
    /// There is no file.
    Missing {
        /// Where it was looked for.
        path: PathBuf,
    },
    /// The file, or a migration it is checked against, cannot be read.
    Unreadable {
        /// What could not be read.
        path: PathBuf,
        /// The operating system's reason.
        source: std::io::Error,
    },
    /// The file is not what `leaderctl schema prepare` writes.
    Malformed {
        /// Its reason.
        message: String,
    },
    /// The migrations (or `leader-tables.sql`) changed since the file was prepared.
    Stale {
        /// The migrations folder, as the file names it.
        migrations: String,
    },
}

impl LoadError {
    /// The command that writes the file, with `--dir` where the folder is not `migrations`.
    pub fn command(migrations: &str) -> String {
        if migrations == "migrations" {
            PREPARE_COMMAND.to_owned()
        } else {
            format!("{PREPARE_COMMAND} --dir {migrations}")
        }
    }
}

impl fmt::Display for LoadError {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        match self {
            LoadError::Missing { .. } => write!(
                f,
                "`{FILE_NAME}` is missing next to `Cargo.toml`: it holds the schema your \
                 migrations make, as PostgreSQL reports it. Run `{PREPARE_COMMAND}` in the \
                 crate's directory (it applies `migrations/` and `{DECLARED_TABLES}`, as sqlx \
                 runs them, to a throwaway PostgreSQL or to a fresh database on the server in \
                 DATABASE_URL, and writes the file; `--dir` names another folder) and commit \
                 the file"
            ),
            LoadError::Unreadable { path, source } => {
                write!(f, "cannot read `{}`: {source}", path.display())
            }
            LoadError::Malformed { message } => write!(
                f,
                "`{FILE_NAME}` is not a prepared schema ({message}): run `{PREPARE_COMMAND}` \
                 in the crate's directory to write it again"
            ),
            LoadError::Stale { migrations } => write!(
                f,
                "`{FILE_NAME}` is out of date: `{migrations}/` or `{DECLARED_TABLES}` changed \
                 since it was prepared. Run `{}` in the crate's directory and commit the file \
                 (`{PREPARE_COMMAND} --check` in CI says whether it is current)",
                LoadError::command(migrations)
            ),
        }
    }
}

impl std::error::Error for LoadError {
    fn source(&self) -> Option<&(dyn std::error::Error + 'static)> {
        match self {
            LoadError::Unreadable { source, .. } => Some(source),
            _ => None,
        }
    }
}

/// The prepared schema of the crate in `manifest_dir`, checked against the migrations it names.
///
/// # Errors
///
/// [`LoadError`]: the file is missing, unreadable, malformed or out of date; each says the
/// command that fixes it.
pub fn load(manifest_dir: &Path) -> Result<PreparedSchema, LoadError> {
    let path = manifest_dir.join(FILE_NAME);
    let text = match std::fs::read_to_string(&path) {
        Ok(text) => text,
        Err(e) if e.kind() == std::io::ErrorKind::NotFound => {
            return Err(LoadError::Missing { path });
        }
        Err(source) => return Err(LoadError::Unreadable { path, source }),
    };
    let schema = PreparedSchema::from_file_text(&text)
        .map_err(|message| LoadError::Malformed { message })?;
    let now =
        fingerprint(manifest_dir, &schema.migrations).map_err(|source| LoadError::Unreadable {
            path: manifest_dir.join(&schema.migrations),
            source,
        })?;
    if now != schema.fingerprint {
        return Err(LoadError::Stale {
            migrations: schema.migrations,
        });
    }
    Ok(schema)
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn the_fingerprint_follows_up_migrations_and_the_declared_tables_only() {
        let dir = tempfile::tempdir().unwrap();
        let root = dir.path();
        std::fs::create_dir(root.join("migrations")).unwrap();
        let empty = fingerprint(root, "migrations").unwrap();
        assert_eq!(empty, fingerprint(root, "nowhere").unwrap());
        std::fs::write(root.join("migrations/1_a.sql"), "CREATE TABLE a ();").unwrap();
        let one = fingerprint(root, "migrations").unwrap();
        assert_ne!(one, empty);
        std::fs::write(root.join("migrations/1_a.down.sql"), "DROP TABLE a;").unwrap();
        std::fs::write(root.join("migrations/notes.txt"), "not SQL").unwrap();
        assert_eq!(fingerprint(root, "migrations").unwrap(), one);
        std::fs::write(root.join(DECLARED_TABLES), "CREATE TABLE b ();").unwrap();
        let declared = fingerprint(root, "migrations").unwrap();
        assert_ne!(declared, one);
        std::fs::write(root.join("migrations/1_a.sql"), "CREATE TABLE a (x int);").unwrap();
        assert_ne!(fingerprint(root, "migrations").unwrap(), declared);
        assert!(declared.starts_with("sha256:") && declared.len() == 7 + 64);
    }

    #[test]
    fn a_missing_stale_or_current_file_is_told_apart() {
        let dir = tempfile::tempdir().unwrap();
        let root = dir.path();
        std::fs::create_dir(root.join("db")).unwrap();
        std::fs::write(root.join("db/1_a.sql"), "CREATE TABLE a ();").unwrap();
        let error = load(root).unwrap_err();
        assert!(matches!(error, LoadError::Missing { .. }));
        assert!(error.to_string().contains("Run `leaderctl schema prepare`"));

        let schema = PreparedSchema::new("db", fingerprint(root, "db").unwrap());
        std::fs::write(root.join(FILE_NAME), schema.to_file_text()).unwrap();
        assert_eq!(load(root).unwrap(), schema);

        std::fs::write(root.join("db/2_b.sql"), "CREATE TABLE b ();").unwrap();
        let error = load(root).unwrap_err();
        assert!(matches!(error, LoadError::Stale { .. }), "{error}");
        assert!(
            error
                .to_string()
                .contains("Run `leaderctl schema prepare --dir db`"),
            "{error}"
        );
    }
}
