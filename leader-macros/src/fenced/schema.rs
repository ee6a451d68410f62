//! The columns `#[fenced]` tells a qualified column (`t.f`) from a call `f(t)` by: the tables,
//! views and composite types the crate's migrations create (read in the order they run), then
//! those declared in `leader-tables.sql` next to `Cargo.toml`, for tables the migrations do not
//! create.

use std::path::PathBuf;

use leader_fence_check::Schema;
use proc_macro2::Span;
use syn::LitStr;

use crate::migrations_folder;

/// The file, in the crate's directory, that declares tables the migrations do not create.
pub const DECLARED_TABLES: &str = "leader-tables.sql";

/// The schema, and the files it was read from (the expansion includes them, so that editing
/// one re-runs the check).
pub struct ReadSchema {
    pub schema: Option<Schema>,
    pub files: Vec<PathBuf>,
}

/// Reads the migrations folder (`migrations = "…"`, else `migrations/`) and
/// [`DECLARED_TABLES`]; `at` is where a folder that cannot be read is reported.
pub fn read(dir: Option<&LitStr>, at: Span) -> syn::Result<ReadSchema> {
    let Some((manifest_dir, folder)) = migrations_folder::resolve(dir)? else {
        return Ok(ReadSchema {
            schema: None,
            files: Vec::new(),
        });
    };
    let shown = migrations_folder::shown(dir);
    let at = dir.map_or(at, LitStr::span);
    let migrations = leader_migrations::migration_files(&folder, &manifest_dir)
        .map_err(|why| syn::Error::new(at, format!("`#[fenced]` cannot read `{shown}/`: {why}")))?;
    let declared_path = manifest_dir.join(DECLARED_TABLES);
    let declared = match std::fs::read_to_string(&declared_path) {
        Ok(text) => Some(text),
        Err(e) if e.kind() == std::io::ErrorKind::NotFound => None,
        Err(why) => {
            return Err(syn::Error::new(
                at,
                format!("`#[fenced]` cannot read `{DECLARED_TABLES}`: {why}"),
            ));
        }
    };
    let mut read_from = match &migrations {
        Some(files) => format!("the {} migrations in `{shown}/`", files.len()),
        None => format!("no migrations (`{shown}/` does not exist)"),
    };
    if declared.is_some() {
        read_from.push_str(&format!(" and `{DECLARED_TABLES}`"));
    }
    let mut schema = Schema::new(read_from).with_declare_hint(format!(
        "declare a table the migrations do not create in `{DECLARED_TABLES}` next to \
         `Cargo.toml`, as `CREATE TABLE name (column type, …);` (read by `#[fenced]`, never run), \
         or name the folder that creates it with `#[fenced(migrations = \"db/migrations\")]`"
    ));
    let mut files = Vec::new();
    for file in migrations.into_iter().flatten() {
        // A file that does not parse leaves the schema's columns unknown, and the message of
        // any qualified column then says so: nothing to report here.
        let _ = schema.read(&file.shown, &file.sql);
        files.push(file.path);
    }
    if let Some(text) = declared {
        let _ = schema.read(DECLARED_TABLES, &text);
        files.push(declared_path);
    }
    Ok(ReadSchema {
        schema: Some(schema),
        files,
    })
}
