//! The crate's prepared schema, `leader-schema.json` next to `Cargo.toml`, as `#[fenced]` and
//! `#[leader_role]` read it: loaded, checked against the migrations it was prepared from, and
//! built into the fence rules' [`Schema`] once per crate per compiler process.
//!
//! A proc-macro stays loaded while rustc compiles the crate (and in an IDE's macro server for
//! longer), so the first expansion reads and checks the file and the others reuse it. Each use
//! looks at the files' sizes and modification times first, so an edit (or a new migration) is
//! seen by the next expansion.

use std::collections::HashMap;
use std::path::{Path, PathBuf};
use std::sync::{Arc, Mutex};
use std::time::SystemTime;

use leader_fence_check::Schema;
use leader_schema::{DECLARED_TABLES, FILE_NAME, LoadError, PREPARE_COMMAND};
use proc_macro2::Span;
use syn::LitStr;

/// A crate's prepared schema, and the files it stands for.
pub struct Prepared {
    pub schema: Schema,
    /// The file, the migrations and `leader-tables.sql`: an expansion includes them, so that
    /// editing one rebuilds the crate and checks the file again (see [`Prepared::includes`]).
    pub files: Vec<PathBuf>,
}

thread_local! {
    /// The crates (by their file) whose migrations an expansion on this thread included already.
    static INCLUDED: std::cell::RefCell<std::collections::HashSet<PathBuf>> =
        std::cell::RefCell::default();
}

impl Prepared {
    /// The files an expansion includes: the prepared file always, so that a new prepare
    /// rebuilds the crate; the migrations and `leader-tables.sql` in the first expansion of the
    /// crate only. Cargo records every file a crate's compilation included, so one include
    /// makes an edit of a migration rebuild the crate (and check the file against it) as well as
    /// one in every function would, without rustc reading each file again for each function
    /// (measured in `docs/benchmarks/prepared-schema.md`). rustc expands a crate's macros on one
    /// thread, so "first" is per thread.
    pub fn includes(&self) -> Vec<PathBuf> {
        let Some(file) = self.files.first() else {
            return Vec::new();
        };
        let first = INCLUDED.with(|included| included.borrow_mut().insert(file.clone()));
        if first {
            self.files.clone()
        } else {
            vec![file.clone()]
        }
    }
}

/// Forgets which crates' migrations this thread included, so that the next expansion includes
/// them as a crate's first does (the expansion snapshots show that one).
#[cfg(test)]
pub fn forget_includes() {
    INCLUDED.with(|included| included.borrow_mut().clear());
}

/// The size and modification time of each file the schema stands for, to tell whether it is
/// still the one cached.
type Stamp = Vec<(PathBuf, u64, Option<SystemTime>)>;

/// Each crate's schema, by its directory, with the stamp of the files it was read from.
type Cache = HashMap<PathBuf, (Stamp, Arc<Prepared>)>;

static CACHE: Mutex<Option<Cache>> = Mutex::new(None);

/// What a macro does without a file.
#[derive(Clone, Copy, PartialEq, Eq)]
pub enum Needed {
    /// `#[fenced]`: the file is required.
    Required,
    /// `#[leader_role]`: without a file nothing is pinned (the runtime still checks the
    /// database at start-up).
    IfPresent,
}

/// The prepared schema of the crate being compiled; `None` without `CARGO_MANIFEST_DIR` (a build
/// system other than Cargo: the runtime's start-up check still runs), or without a file where
/// it is not [`Needed::Required`]. `at` is where a missing or stale file is reported, and
/// `migrations` the folder a `migrations = "…"` option names (the file must have been prepared
/// from it).
pub fn load(
    at: Span,
    migrations: Option<&LitStr>,
    needed: Needed,
    macro_name: &str,
) -> syn::Result<Option<Arc<Prepared>>> {
    let Some(manifest_dir) = std::env::var_os("CARGO_MANIFEST_DIR").map(PathBuf::from) else {
        return Ok(None);
    };
    if let Some(dir) = migrations
        && Path::new(&dir.value()).is_absolute()
    {
        return Err(syn::Error::new(
            dir.span(),
            "the migrations folder must be relative to the crate's directory \
             (CARGO_MANIFEST_DIR), e.g. `migrations = \"db/migrations\"`, so the build works on \
             every machine",
        ));
    }
    let prepared = match cached(&manifest_dir) {
        Some(prepared) => prepared,
        None => match read(&manifest_dir) {
            Ok((stamp, prepared)) => {
                let prepared = Arc::new(prepared);
                let mut cache = CACHE.lock().unwrap_or_else(|e| e.into_inner());
                cache
                    .get_or_insert_with(HashMap::new)
                    .insert(manifest_dir.clone(), (stamp, prepared.clone()));
                prepared
            }
            Err(LoadError::Missing { .. }) if needed == Needed::IfPresent => return Ok(None),
            Err(error) => {
                return Err(syn::Error::new(
                    migrations.map_or(at, LitStr::span),
                    format!("`#[{macro_name}]` cannot use the prepared schema: {error}"),
                ));
            }
        },
    };
    if let Some(dir) = migrations {
        let wanted = dir
            .value()
            .trim_end_matches('/')
            .trim_start_matches("./")
            .to_owned();
        let from = &prepared.schema.prepared().migrations;
        if wanted != *from {
            return Err(syn::Error::new(
                dir.span(),
                format!(
                    "`{FILE_NAME}` was prepared from `{from}/`, and this names `{wanted}/`: run \
                     `{}` in the crate's directory, or drop the option (the macros read the \
                     folder the file was prepared from)",
                    LoadError::command(&wanted)
                ),
            ));
        }
    }
    Ok(Some(prepared))
}

/// The cached schema of `manifest_dir`, if its files are unchanged since it was read.
fn cached(manifest_dir: &Path) -> Option<Arc<Prepared>> {
    let cache = CACHE.lock().unwrap_or_else(|e| e.into_inner());
    let (stamp, prepared) = cache.as_ref()?.get(manifest_dir)?;
    let folder = manifest_dir.join(&prepared.schema.prepared().migrations);
    (stamp_of(manifest_dir, &folder).as_ref() == Some(stamp)).then(|| prepared.clone())
}

/// Reads and checks the file, and builds the rules' schema.
fn read(manifest_dir: &Path) -> Result<(Stamp, Prepared), LoadError> {
    let prepared = leader_schema::load(manifest_dir)?;
    let folder = manifest_dir.join(&prepared.migrations);
    let stamp = stamp_of(manifest_dir, &folder).unwrap_or_default();
    let files = stamp.iter().map(|(path, _, _)| path.clone()).collect();
    let read_from = format!("`{FILE_NAME}` (prepared from `{}/`)", prepared.migrations);
    let schema = Schema::new(prepared, read_from).with_declare_hint(format!(
        "a table the migrations do not create (made by another team's tooling, say) is declared \
         in `{DECLARED_TABLES}` next to `Cargo.toml` (`CREATE TABLE name (column type, …);`), \
         which `{PREPARE_COMMAND}` runs after the migrations on its scratch database; then \
         prepare again"
    ));
    Ok((stamp, Prepared { schema, files }))
}

/// The stamps of the file, the folder's `.sql` files and `leader-tables.sql`, where they exist.
fn stamp_of(manifest_dir: &Path, folder: &Path) -> Option<Stamp> {
    let mut paths = vec![manifest_dir.join(FILE_NAME)];
    if let Ok(entries) = std::fs::read_dir(folder) {
        let mut names: Vec<PathBuf> = entries
            .filter_map(Result::ok)
            .map(|entry| entry.path())
            .filter(|path| path.extension().is_some_and(|e| e == "sql"))
            .filter(|path| !path.to_string_lossy().ends_with(".down.sql"))
            .collect();
        names.sort();
        paths.extend(names);
    }
    let declared = manifest_dir.join(DECLARED_TABLES);
    if declared.is_file() {
        paths.push(declared);
    }
    paths
        .into_iter()
        .map(|path| {
            let meta = std::fs::metadata(&path).ok()?;
            let modified = meta.modified().ok();
            Some((path, meta.len(), modified))
        })
        .collect()
}
