//! Reads an application's migrations folder, as the framework needs it read: `#[leader_role]`
//! and `#[fenced]` at compile time, `leaderctl` before it writes the folder's next migration.
//!
//! * [`migration_files`]: the folder's up and plain migrations, in the order they run.
//! * [`find_role_check`]: the roles the folder registers in the role CHECK ([`RoleCheck`]).
//! * [`Folder`]: everything the framework reads from the folder at once: the role CHECK, the
//!   roles it seeds a row for, the login roles it grants, the shard counts it gives roles, the
//!   version its next migration takes and whether its migrations are reversible.
//!
//! An application lists its roles in its own migration:
//!
//! ```sql
//! ALTER TABLE leader_leases ADD CONSTRAINT leader_leases_role_registered
//!     CHECK (role IN ('billing', 'dunning'));
//! ```
//!
//! A later migration may drop the constraint and add it again with more roles, so the last file
//! (in the order sqlx runs them: by integer version, `2_` before `10_`) that defines it wins. Down
//! migrations (`*.down.sql`) are skipped: they undo, they do not define the current schema.
//!
//! Every file is split into tokens by PostgreSQL's own scanner (`pg_query`), so comments, quoted
//! names and escaped quotes are read as PostgreSQL reads them.

#![warn(missing_docs)]

mod files;
mod folder;
mod role_check;
mod scan;

pub use files::{MigrationFile, migration_files};
pub use folder::Folder;
pub use role_check::{RoleCheck, find_role_check};

/// The constraint's name, fixed by the framework's schema.
pub use leader_role_name::ROLE_CONSTRAINT as CONSTRAINT;

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
