//! Where a crate's migrations are: `migrations = "db/migrations"` relative to the crate's
//! directory, else its `migrations/` folder. Shared by `#[leader_role]` (the role CHECK) and
//! `#[fenced]` (the tables' columns).

use std::path::{Path, PathBuf};

use syn::LitStr;

/// The folder's name as the user wrote it (or the default), for messages.
pub fn shown(dir: Option<&LitStr>) -> String {
    dir.map_or_else(|| "migrations".to_owned(), LitStr::value)
}

/// The crate's directory and its migrations folder; `None` without `CARGO_MANIFEST_DIR`.
///
/// Cargo sets it for every crate it compiles; without it (a build system other than Cargo)
/// there is nothing to resolve against, and the runtime's start-up check still runs.
pub fn resolve(dir: Option<&LitStr>) -> syn::Result<Option<(PathBuf, PathBuf)>> {
    let Some(manifest_dir) = std::env::var_os("CARGO_MANIFEST_DIR").map(PathBuf::from) else {
        return Ok(None);
    };
    let folder = match dir {
        Some(dir) if Path::new(&dir.value()).is_absolute() => {
            return Err(syn::Error::new(
                dir.span(),
                "the migrations folder must be relative to the crate's directory \
                 (CARGO_MANIFEST_DIR), e.g. `migrations = \"db/migrations\"`, so the build \
                 works on every machine",
            ));
        }
        Some(dir) => manifest_dir.join(dir.value()),
        None => manifest_dir.join("migrations"),
    };
    Ok(Some((manifest_dir, folder)))
}
