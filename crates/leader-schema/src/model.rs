//! What the file holds: the catalog of the database the migrations made, as plain data.

/// A name in a schema: `public.jobs`.
#[derive(Debug, Clone, PartialEq, Eq, PartialOrd, Ord, Hash)]
pub struct QualifiedName {
    /// The schema (PostgreSQL's namespace).
    pub schema: String,
    /// The name in it.
    pub name: String,
}

impl QualifiedName {
    /// `schema.name`.
    pub fn new(schema: impl Into<String>, name: impl Into<String>) -> QualifiedName {
        QualifiedName {
            schema: schema.into(),
            name: name.into(),
        }
    }
}

impl std::fmt::Display for QualifiedName {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        write!(f, "{}.{}", self.schema, self.name)
    }
}

/// What a relation is (`pg_class.relkind`).
#[derive(Debug, Clone, Copy, PartialEq, Eq, PartialOrd, Ord, Hash)]
#[non_exhaustive]
pub enum RelationKind {
    /// `CREATE TABLE`: a locking query locks the rows it returns, after its conditions.
    Table,
    /// `CREATE TABLE … PARTITION BY`: its rows are its partitions'.
    PartitionedTable,
    /// `CREATE VIEW`: PostgreSQL reads its query in place of its name.
    View,
    /// `CREATE MATERIALIZED VIEW`.
    MaterializedView,
    /// `CREATE FOREIGN TABLE`: its rows are another server's.
    ForeignTable,
    /// `CREATE TYPE … AS (…)`: a row type, no rows.
    CompositeType,
}

impl RelationKind {
    /// The word the file writes.
    pub const fn word(self) -> &'static str {
        match self {
            RelationKind::Table => "table",
            RelationKind::PartitionedTable => "partitioned table",
            RelationKind::View => "view",
            RelationKind::MaterializedView => "materialized view",
            RelationKind::ForeignTable => "foreign table",
            RelationKind::CompositeType => "composite type",
        }
    }

    /// Every kind, for reading the file's words back.
    pub const ALL: [RelationKind; 6] = [
        RelationKind::Table,
        RelationKind::PartitionedTable,
        RelationKind::View,
        RelationKind::MaterializedView,
        RelationKind::ForeignTable,
        RelationKind::CompositeType,
    ];
}

/// A column: its name and type (`format_type`, without a type modifier: `bigint`,
/// `timestamp with time zone`, `public.mood`).
#[derive(Debug, Clone, PartialEq, Eq, Hash)]
pub struct Column {
    /// The column's name.
    pub name: String,
    /// Its type.
    pub type_name: String,
}

impl Column {
    /// A column `name` of type `type_name`.
    pub fn new(name: impl Into<String>, type_name: impl Into<String>) -> Column {
        Column {
            name: name.into(),
            type_name: type_name.into(),
        }
    }
}

/// A data-changing event a trigger or a rule fires on.
#[derive(Debug, Clone, Copy, PartialEq, Eq, PartialOrd, Ord, Hash)]
#[non_exhaustive]
pub enum Event {
    /// `INSERT` (also an `INSERT … ON CONFLICT` and a `MERGE`'s insert).
    Insert,
    /// `UPDATE` (also `ON CONFLICT DO UPDATE` and a `MERGE`'s update).
    Update,
    /// `DELETE` (also a `MERGE`'s delete).
    Delete,
    /// `TRUNCATE`.
    Truncate,
}

impl Event {
    /// The word the file writes: `insert`, `update`, `delete`, `truncate`.
    pub const fn word(self) -> &'static str {
        match self {
            Event::Insert => "insert",
            Event::Update => "update",
            Event::Delete => "delete",
            Event::Truncate => "truncate",
        }
    }

    /// Every event.
    pub const ALL: [Event; 4] = [Event::Insert, Event::Update, Event::Delete, Event::Truncate];
}

/// An enabled statement-level trigger (`FOR EACH STATEMENT`): PostgreSQL fires it once per
/// statement of its events, even one that changes no row.
#[derive(Debug, Clone, PartialEq, Eq, Hash)]
pub struct Trigger {
    /// The trigger's name.
    pub name: String,
    /// The events it fires on.
    pub events: Vec<Event>,
}

/// A table, view, foreign table or composite type.
#[derive(Debug, Clone, PartialEq, Eq)]
#[non_exhaustive]
pub struct Relation {
    /// Its schema and name.
    pub name: QualifiedName,
    /// What it is.
    pub kind: RelationKind,
    /// Its columns, in order, as PostgreSQL names them (a view's too).
    pub columns: Vec<Column>,
    /// Its system columns (`ctid`, `xmin`, …), which `t.xmin` names as any column.
    pub system_columns: Vec<String>,
    /// The tables it inherits from or is a partition of.
    pub parents: Vec<QualifiedName>,
    /// For a view, the relations its query reads.
    pub reads: Vec<QualifiedName>,
    /// Its enabled statement-level triggers.
    pub statement_triggers: Vec<Trigger>,
    /// The events a rule (`CREATE RULE`, not a view's own) rewrites.
    pub rules: Vec<Event>,
    /// For a view, its query as PostgreSQL prints it (`pg_get_viewdef`).
    pub definition: Option<String>,
    /// For a view: PostgreSQL rewrites an `UPDATE` or `DELETE` of it into one of its one table
    /// (it is automatically updatable, without `INSTEAD OF` triggers), and it is no
    /// `security_barrier` view, so the planner also reads it as that table's rows.
    pub updatable: bool,
}

impl Relation {
    /// A relation of `kind` with these columns, and nothing else known of it.
    pub fn new(name: QualifiedName, kind: RelationKind, columns: Vec<Column>) -> Relation {
        Relation {
            name,
            kind,
            columns,
            system_columns: Vec::new(),
            parents: Vec::new(),
            reads: Vec::new(),
            statement_triggers: Vec::new(),
            rules: Vec::new(),
            definition: None,
            updatable: false,
        }
    }
}

/// What kind of routine a function is (`pg_proc.prokind`).
#[derive(Debug, Clone, Copy, PartialEq, Eq, PartialOrd, Ord, Hash)]
#[non_exhaustive]
pub enum FunctionKind {
    /// A plain function.
    Function,
    /// An aggregate: evaluated once even on no rows.
    Aggregate,
    /// A window function.
    Window,
    /// A procedure (`CALL` only).
    Procedure,
}

impl FunctionKind {
    /// The word the file writes.
    pub const fn word(self) -> &'static str {
        match self {
            FunctionKind::Function => "function",
            FunctionKind::Aggregate => "aggregate",
            FunctionKind::Window => "window",
            FunctionKind::Procedure => "procedure",
        }
    }

    /// Every kind.
    pub const ALL: [FunctionKind; 4] = [
        FunctionKind::Function,
        FunctionKind::Aggregate,
        FunctionKind::Window,
        FunctionKind::Procedure,
    ];
}

/// A function's volatility (`pg_proc.provolatile`). PostgreSQL refuses a statement that changes
/// or locks rows inside a `STABLE` or `IMMUTABLE` function.
#[derive(Debug, Clone, Copy, PartialEq, Eq, PartialOrd, Ord, Hash)]
#[non_exhaustive]
pub enum Volatility {
    /// `IMMUTABLE`.
    Immutable,
    /// `STABLE`.
    Stable,
    /// `VOLATILE`, the default: it may change or lock rows.
    Volatile,
}

impl Volatility {
    /// The word the file writes.
    pub const fn word(self) -> &'static str {
        match self {
            Volatility::Immutable => "immutable",
            Volatility::Stable => "stable",
            Volatility::Volatile => "volatile",
        }
    }

    /// Every volatility.
    pub const ALL: [Volatility; 3] = [
        Volatility::Immutable,
        Volatility::Stable,
        Volatility::Volatile,
    ];
}

/// A function, aggregate or procedure of the application's schemas (not `pg_catalog`'s).
#[derive(Debug, Clone, PartialEq, Eq)]
#[non_exhaustive]
pub struct Function {
    /// Its schema and name.
    pub name: QualifiedName,
    /// What it is.
    pub kind: FunctionKind,
    /// Its input arguments' types, in order (a `VARIADIC` one as its array type).
    pub args: Vec<String>,
    /// How many of the last arguments have defaults.
    pub defaults: usize,
    /// Whether the last argument is `VARIADIC`.
    pub variadic: bool,
    /// Its return type.
    pub returns: String,
    /// Whether it returns a set (`RETURNS SETOF`, `RETURNS TABLE`).
    pub returns_set: bool,
    /// Its volatility.
    pub volatility: Volatility,
}

impl Function {
    /// A plain function, without defaults or `VARIADIC`, returning one value.
    pub fn new(
        name: QualifiedName,
        args: Vec<String>,
        returns: impl Into<String>,
        volatility: Volatility,
    ) -> Function {
        Function {
            name,
            kind: FunctionKind::Function,
            args,
            defaults: 0,
            variadic: false,
            returns: returns.into(),
            returns_set: false,
            volatility,
        }
    }

    /// This function as another kind (an aggregate, …).
    #[must_use]
    pub fn with_kind(self, kind: FunctionKind) -> Function {
        Function { kind, ..self }
    }

    /// This function, with `defaults` arguments that have defaults and whether its last is
    /// `VARIADIC`.
    #[must_use]
    pub fn with_optional_args(self, defaults: usize, variadic: bool) -> Function {
        Function {
            defaults,
            variadic,
            ..self
        }
    }
}

/// What a type is (`pg_type.typtype`, arrays apart).
#[derive(Debug, Clone, Copy, PartialEq, Eq, PartialOrd, Ord, Hash)]
#[non_exhaustive]
pub enum TypeKind {
    /// A base type (`integer`, `text`, …).
    Base,
    /// An array type.
    Array,
    /// A domain over another type.
    Domain,
    /// An enum.
    Enum,
    /// A row type (a table's, or `CREATE TYPE … AS`).
    Composite,
    /// A range or multirange.
    Range,
    /// A pseudo-type (`anyelement`, `record`, `"any"`, …).
    Pseudo,
}

impl TypeKind {
    /// The word the file writes.
    pub const fn word(self) -> &'static str {
        match self {
            TypeKind::Base => "base",
            TypeKind::Array => "array",
            TypeKind::Domain => "domain",
            TypeKind::Enum => "enum",
            TypeKind::Composite => "composite",
            TypeKind::Range => "range",
            TypeKind::Pseudo => "pseudo",
        }
    }

    /// Every kind.
    pub const ALL: [TypeKind; 7] = [
        TypeKind::Base,
        TypeKind::Array,
        TypeKind::Domain,
        TypeKind::Enum,
        TypeKind::Composite,
        TypeKind::Range,
        TypeKind::Pseudo,
    ];
}

/// A type a column or a function's argument has.
#[derive(Debug, Clone, PartialEq, Eq, Hash)]
pub struct TypeInfo {
    /// Its name, as [`Column::type_name`] writes it.
    pub name: String,
    /// What it is.
    pub kind: TypeKind,
}

/// An implicit cast (`pg_cast.castcontext = 'i'`) between two types the file names: a value of
/// `source` is accepted where `target` is expected.
#[derive(Debug, Clone, PartialEq, Eq, PartialOrd, Ord, Hash)]
pub struct Cast {
    /// The type cast from.
    pub source: String,
    /// The type cast to.
    pub target: String,
}

/// A table's declared shard key: every shard claim on the table filters its rows by the shard of
/// this column (`leader_shard_key` in a migration; `leaderctl schema shard-key` writes it).
#[derive(Debug, Clone, PartialEq, Eq, PartialOrd, Ord, Hash)]
pub struct ShardKey {
    /// The table.
    pub table: QualifiedName,
    /// Its key column.
    pub column: String,
}

/// A leader role the database has rows for, and its shard count (1: unsharded).
#[derive(Debug, Clone, PartialEq, Eq, PartialOrd, Ord, Hash)]
pub struct RoleShards {
    /// The role.
    pub role: String,
    /// How many shards its rows give it.
    pub shard_count: u32,
}
