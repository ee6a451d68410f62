//! `sqlx::migrate!("./migrations")` embeds the folder's files when the crate compiles, but cargo
//! does not know a file added to the folder is an input: without this, a migration copied in
//! later is left out of an incremental build until some source file changes.
fn main() {
    println!("cargo:rerun-if-changed=migrations");
}
