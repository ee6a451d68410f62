//! The prepared schema of a leader-runtime application: what PostgreSQL's catalog says once the
//! application's migrations have run, written down next to `Cargo.toml` as `leader-schema.json`.
//!
//! `#[fenced]` must know the application's tables, columns and functions to judge a claim (is
//! `t.f` a column or a call `f(t)`; is a function `VOLATILE`; is a locked relation a table;
//! which statement-level triggers a change fires; which column a sharded table is keyed by), and
//! `#[leader_role]` which roles the database registers. Only the server knows its catalog after
//! a history of renames, partitions, overloads, `DO` blocks and dynamic DDL, so, as `cargo sqlx
//! prepare` does for `query!`, `leaderctl schema prepare` applies the migrations to a throwaway
//! PostgreSQL exactly as sqlx runs them, reads the catalog, and writes this file; the macros
//! read it offline. The file holds a [`fingerprint`] of the migrations it came from,
//! and a build whose migrations changed since fails with the command that refreshes it.
//!
//! * [`PreparedSchema`] and the types of [`model`]: the file's content, as data.
//! * [`PreparedSchema::to_file_text`], [`PreparedSchema::from_file_text`]: the file, written
//!   deterministically (sorted, one relation or function a line, so a change is a one-line
//!   diff) and read back.
//! * [`load`]: the file of a crate, checked against its migrations ([`LoadError`] says what to
//!   run when it is missing or out of date).
//!
//! ```
//! use leader_schema::model::{Column, QualifiedName, Relation, RelationKind};
//! use leader_schema::PreparedSchema;
//!
//! let mut schema = PreparedSchema::new("migrations", "sha256:00");
//! schema.relations.push(Relation::new(
//!     QualifiedName::new("public", "jobs"),
//!     RelationKind::Table,
//!     vec![Column::new("id", "bigint"), Column::new("owner", "text")],
//! ));
//! let text = schema.to_file_text();
//! assert!(text.contains(r#"{"relation":["public","jobs"],"kind":"table","columns":[["id","bigint"],["owner","text"]]"#));
//! assert_eq!(PreparedSchema::from_file_text(&text).unwrap(), schema);
//! ```

#![warn(missing_docs)]

mod file;
mod freshness;
pub mod model;

use model::{Cast, Function, Relation, RoleShards, ShardKey, TypeInfo};

pub use freshness::{LoadError, fingerprint, load};

/// The file's name, next to the crate's `Cargo.toml`.
pub const FILE_NAME: &str = "leader-schema.json";

/// The file, next to `Cargo.toml`, declaring tables no migration creates (created by another
/// team's tooling, say): `leaderctl schema prepare` runs it after the migrations.
pub const DECLARED_TABLES: &str = "leader-tables.sql";

/// The command that writes the file, for messages.
pub const PREPARE_COMMAND: &str = "leaderctl schema prepare";

/// The file format's version: a file of another version is refused with the command that
/// rewrites it.
pub const FORMAT: u64 = 1;

/// The catalog of an application's database after its migrations, as far as the framework reads
/// it: see the [crate docs](crate).
#[derive(Debug, Clone, Default, PartialEq, Eq)]
#[non_exhaustive]
pub struct PreparedSchema {
    /// The migrations folder it was prepared from, relative to the crate's directory and
    /// `/`-separated (`migrations`).
    pub migrations: String,
    /// The [fingerprint] of that folder and of [`DECLARED_TABLES`] when it was prepared.
    pub fingerprint: String,
    /// The schemas an unqualified name is looked up in, in order (`current_schemas(true)` of a
    /// new session: `pg_catalog` first).
    pub search_path: Vec<String>,
    /// The roles the `leader_leases_role_registered` CHECK lists; `None` without that
    /// constraint (the framework's tables alone register no role).
    pub role_check: Option<Vec<String>>,
    /// The roles with rows in `leader_leases`, and their shard counts.
    pub role_shards: Vec<RoleShards>,
    /// The tables' declared shard keys.
    pub shard_keys: Vec<ShardKey>,
    /// Every table, view, foreign table and composite type outside `pg_catalog` and
    /// `information_schema`.
    pub relations: Vec<Relation>,
    /// Every function, aggregate and procedure outside `pg_catalog` and `information_schema`.
    pub functions: Vec<Function>,
    /// The types the columns and the functions' arguments have.
    pub types: Vec<TypeInfo>,
    /// The implicit casts between those types.
    pub casts: Vec<Cast>,
}

impl PreparedSchema {
    /// An empty schema prepared from the folder `migrations` whose fingerprint is `fingerprint`.
    pub fn new(migrations: impl Into<String>, fingerprint: impl Into<String>) -> PreparedSchema {
        PreparedSchema {
            migrations: migrations.into(),
            fingerprint: fingerprint.into(),
            search_path: vec!["pg_catalog".to_owned(), "public".to_owned()],
            ..PreparedSchema::default()
        }
    }

    /// Sorts every list, so that equal catalogs write equal files.
    pub fn normalize(&mut self) {
        self.role_shards.sort();
        self.shard_keys.sort();
        self.relations.sort_by(|a, b| a.name.cmp(&b.name));
        for relation in &mut self.relations {
            relation.system_columns.sort();
            relation.parents.sort();
            relation.reads.sort();
            relation.reads.dedup();
            relation
                .statement_triggers
                .sort_by(|a, b| a.name.cmp(&b.name));
            for trigger in &mut relation.statement_triggers {
                trigger.events.sort();
            }
            relation.rules.sort();
            relation.rules.dedup();
        }
        self.functions
            .sort_by(|a, b| (&a.name, &a.args).cmp(&(&b.name, &b.args)));
        self.types.sort_by(|a, b| a.name.cmp(&b.name));
        self.types.dedup();
        self.casts.sort();
        self.casts.dedup();
    }
}
