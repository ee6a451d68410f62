//! Every way sqlx 0.9 takes SQL, and what `#[fenced]` does with each: the one table the send
//! finder ([`super`]) reads its names from.
//!
//! The macro sees names, not types, so an entry is matched by its name and its number of
//! arguments (`self` counted when the call is by path, `Executor::execute(ex, q)`; not when it is
//! a method call, `ex.execute(q)`), whatever it is called on: a pool, a connection, a
//! transaction, a generic `E`. `leader-macros/tests/sqlx_api.rs` reads the pinned sqlx's sources
//! and fails when sqlx declares a function that takes SQL and is not here, or when an entry names
//! something sqlx no longer declares (with that many arguments).

/// One function, method or macro of sqlx that takes SQL.
#[derive(Debug)]
pub struct Api {
    /// The package that declares it: `sqlx-core`, `sqlx-postgres`, or `sqlx` for the macros.
    #[allow(
        dead_code,
        reason = "read by tests/sqlx_api.rs, which finds it in sqlx's sources"
    )]
    pub krate: &'static str,
    /// `Owner::name` for a method (the trait or type that declares it), `name` for a free
    /// function, `name!` for a macro.
    pub item: &'static str,
    /// How many parameters it declares, `self` included (0 for a macro).
    pub arity: usize,
    /// Other names the `sqlx` facade exports it under.
    pub also: &'static [&'static str],
    pub handling: Handling,
}

/// How `#[fenced]` finds the SQL and binds of a call, or why it refuses it.
#[derive(Debug)]
pub enum Handling {
    /// Makes a query from the SQL in its first argument, a string literal or a `concat!` of
    /// literals, checked by the fence rules; its binds are the `.bind(..)` calls chained on it,
    /// or, when `arguments` is set, that argument (`PgArguments`), which the macro cannot read.
    Query {
        protocol: Protocol,
        arguments: Option<usize>,
    },
    /// Sends what parameter `sql` (counted with `self`) is given: a query made here by a
    /// [`Handling::Query`] function or a query macro is followed; a literal or `concat!` of
    /// literals is checked as one message of the simple query protocol (called by a path other
    /// than `Executor::…`, as a string the body holds: the path may not be sqlx's); anything
    /// else is refused, since its SQL cannot be seen.
    Sends { sql: usize },
    /// A `query!`-family macro: its SQL (or, for `query_file*!`, the file it names) is read and
    /// checked, its binds are the arguments after the SQL.
    Macro { typed: bool, file: bool },
    /// Refused wherever it is called: what the macro says (the first line), why (a `note:`),
    /// and what to write instead (a `help:`).
    Refused {
        why: &'static str,
        note: &'static str,
        help: &'static str,
    },
    /// Takes SQL but sends none itself; why it needs no handling of its own.
    NotASend {
        #[allow(
            dead_code,
            reason = "documentation, checked present by tests/sqlx_api.rs"
        )]
        why: &'static str,
    },
}

/// How a query reaches PostgreSQL.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum Protocol {
    /// A prepared statement: one statement, with bind parameters.
    Prepared,
    /// The simple query protocol: any number of statements, no bind parameters.
    Simple,
}

const fn query(item: &'static str, arity: usize) -> Api {
    Api {
        krate: "sqlx-core",
        item,
        arity,
        also: &[],
        handling: Handling::Query {
            protocol: Protocol::Prepared,
            arguments: if arity == 2 { Some(1) } else { None },
        },
    }
}

const fn sends(krate: &'static str, item: &'static str, arity: usize, sql: usize) -> Api {
    Api {
        krate,
        item,
        arity,
        also: &[],
        handling: Handling::Sends { sql },
    }
}

const fn query_macro(item: &'static str, typed: bool, file: bool) -> Api {
    Api {
        krate: "sqlx",
        item,
        arity: 0,
        also: &[],
        handling: Handling::Macro { typed, file },
    }
}

const fn refused(
    krate: &'static str,
    item: &'static str,
    arity: usize,
    (why, note, help): (&'static str, &'static str, &'static str),
) -> Api {
    Api {
        krate,
        item,
        arity,
        also: &[],
        handling: Handling::Refused { why, note, help },
    }
}

const fn not_a_send(item: &'static str, arity: usize, why: &'static str) -> Api {
    Api {
        krate: "sqlx-core",
        item,
        arity,
        also: &[],
        handling: Handling::NotASend { why },
    }
}

const COPY_IN: (&str, &str, &str) = (
    "`copy_in_raw` sends a `COPY … FROM STDIN`, which cannot be fenced",
    "`COPY … FROM` inserts every row it is given, with no WHERE the fence could gate, so a \
     superseded leader would still load its rows",
    "insert with a fenced `INSERT INTO t (…) SELECT … FROM unnest($3::bigint[]) AS v(id) WHERE \
     leader_fence($1, $2)`, binding the rows as arrays",
);
const COPY_OUT: (&str, &str, &str) = (
    "`copy_out_raw` sends a `COPY … TO STDOUT`, which cannot be fenced",
    "`COPY … TO` reads a whole table or query, with no WHERE of its own that the fence could gate",
    "read with a fenced `SELECT … WHERE … AND leader_fence($1, $2)`",
);
const PREPARE: (&str, &str, &str) = (
    "`#[fenced]` cannot follow a statement prepared here to where it runs",
    "a prepared statement is run later (`query_statement`, `Statement::query`) with binds \
     `#[fenced]` cannot tie to its SQL",
    "send the claim with `sqlx::query(\"… AND leader_fence($1, $2)\")` and its `.bind(..)` \
     calls: sqlx prepares and caches the statement itself",
);
const DESCRIBE: (&str, &str, &str) = (
    "`#[fenced]` refuses `describe`, which prepares SQL it cannot follow",
    "`describe` is the hidden API sqlx's query macros use at compile time",
    "send the claim with `sqlx::query(\"… AND leader_fence($1, $2)\")` or `sqlx::query!`",
);
const RUN_PREPARED: (&str, &str, &str) = (
    "`#[fenced]` cannot see the SQL of a statement prepared elsewhere",
    "`query_statement` and its kin run a `Statement` prepared earlier; its SQL is not at the call",
    "send the claim with `sqlx::query(\"… AND leader_fence($1, $2)\")` and its `.bind(..)` \
     calls: sqlx prepares and caches the statement itself",
);
const BUILDER: (&str, &str, &str) = (
    "`QueryBuilder` assembles SQL at run time, which `#[fenced]` cannot check",
    "what is pushed into the builder, and so whether the claim it builds carries the fence, is \
     known only at run time",
    "write the claim as one literal, `sqlx::query(\"… AND leader_fence($1, $2)\")\
     .bind(fence.role()).bind(fence.token())`",
);

const PUSH: &str = "appends to a builder, which sends nothing: what sends it is refused (above)";

/// The table: every function of sqlx 0.9 that takes SQL.
pub const API: &[Api] = &[
    // Query functions: a query from literal SQL, sent by an `Executor` method.
    query("query", 1),
    query("query_as", 1),
    query("query_scalar", 1),
    query("query_with", 2),
    query("query_as_with", 2),
    query("query_scalar_with", 2),
    Api {
        also: &["__query_with_result"],
        ..query("query_with_result", 2)
    },
    query("query_as_with_result", 2),
    Api {
        also: &["__query_scalar_with_result"],
        ..query("query_scalar_with_result", 2)
    },
    Api {
        handling: Handling::Query {
            protocol: Protocol::Simple,
            arguments: None,
        },
        ..query("raw_sql", 1)
    },
    // `Executor`: sends the query or string it is given.
    sends("sqlx-core", "Executor::execute", 2, 1),
    sends("sqlx-core", "Executor::execute_many", 2, 1),
    sends("sqlx-core", "Executor::fetch", 2, 1),
    sends("sqlx-core", "Executor::fetch_many", 2, 1),
    sends("sqlx-core", "Executor::fetch_all", 2, 1),
    sends("sqlx-core", "Executor::fetch_one", 2, 1),
    sends("sqlx-core", "Executor::fetch_optional", 2, 1),
    refused("sqlx-core", "Executor::prepare", 2, PREPARE),
    refused("sqlx-core", "Executor::prepare_with", 3, PREPARE),
    refused("sqlx-core", "Executor::describe", 2, DESCRIBE),
    // The driver interface behind `AnyConnection` (the `any` feature): the same sends, by the
    // same names.
    sends("sqlx-core", "AnyConnectionBackend::fetch_many", 4, 1),
    sends("sqlx-core", "AnyConnectionBackend::fetch_optional", 4, 1),
    refused(
        "sqlx-core",
        "AnyConnectionBackend::prepare_with",
        3,
        PREPARE,
    ),
    refused("sqlx-core", "AnyConnectionBackend::describe", 2, DESCRIBE),
    // A transaction begun with a statement of the caller's (`BEGIN ISOLATION LEVEL …`): a
    // literal is checked (a `BEGIN` is no claim), anything else refused.
    sends("sqlx-core", "Connection::begin_with", 2, 1),
    sends("sqlx-core", "Pool::begin_with", 2, 1),
    sends("sqlx-core", "Pool::try_begin_with", 2, 1),
    sends("sqlx-core", "Transaction::begin", 2, 1),
    sends("sqlx-core", "TransactionManager::begin", 2, 1),
    sends("sqlx-core", "AnyConnectionBackend::begin", 2, 1),
    // Statements prepared earlier.
    refused("sqlx-core", "query_statement", 1, RUN_PREPARED),
    refused("sqlx-core", "query_statement_with", 2, RUN_PREPARED),
    refused("sqlx-core", "query_statement_as", 1, RUN_PREPARED),
    refused("sqlx-core", "query_statement_as_with", 2, RUN_PREPARED),
    refused("sqlx-core", "query_statement_scalar", 1, RUN_PREPARED),
    refused("sqlx-core", "query_statement_scalar_with", 2, RUN_PREPARED),
    // `QueryBuilder`: refused where a builder is made (any path naming `QueryBuilder`); a
    // builder made elsewhere is sent by an `Executor` method given `builder.build()`, which is
    // not a query made here, and so refused there.
    refused("sqlx-core", "QueryBuilder::new", 1, BUILDER),
    refused("sqlx-core", "QueryBuilder::with_arguments", 2, BUILDER),
    not_a_send("QueryBuilder::push", 2, PUSH),
    not_a_send("Separated::push", 2, PUSH),
    not_a_send("Separated::push_unseparated", 2, PUSH),
    // `COPY`: no WHERE to gate.
    refused("sqlx-postgres", "PgConnection::copy_in_raw", 2, COPY_IN),
    refused("sqlx-postgres", "PgPoolCopyExt::copy_in_raw", 2, COPY_IN),
    refused("sqlx-postgres", "PgConnection::copy_out_raw", 2, COPY_OUT),
    refused("sqlx-postgres", "PgPoolCopyExt::copy_out_raw", 2, COPY_OUT),
    // SQL taken but not sent.
    not_a_send(
        "SqlStr::from_static",
        1,
        "makes a `SqlStr`, which is SQL the macro cannot read wherever it is sent",
    ),
    not_a_send(
        "Migration::new",
        5,
        "makes a migration, sent by a `Migrator` from migration files, not from a claim \
         function's SQL",
    ),
    not_a_send("QueryLogger::new", 2, "sqlx's query log"),
    not_a_send("parse_query_summary", 1, "sqlx's query log"),
    not_a_send("checksum", 1, "a migration's checksum"),
    // The query macros.
    query_macro("query!", false, false),
    query_macro("query_unchecked!", false, false),
    query_macro("query_scalar!", false, false),
    query_macro("query_scalar_unchecked!", false, false),
    query_macro("query_as!", true, false),
    query_macro("query_as_unchecked!", true, false),
    query_macro("query_file!", false, true),
    query_macro("query_file_unchecked!", false, true),
    query_macro("query_file_scalar!", false, true),
    query_macro("query_file_scalar_unchecked!", false, true),
    query_macro("query_file_as!", true, true),
    query_macro("query_file_as_unchecked!", true, true),
];

impl Api {
    /// Its own name: `execute` for `Executor::execute`, `query` for `query!`.
    pub fn name(&self) -> &'static str {
        let name = self.item.rsplit("::").next().unwrap_or(self.item);
        name.strip_suffix('!').unwrap_or(name)
    }

    /// Whether it is a method (declared with an owner).
    pub fn is_method(&self) -> bool {
        self.item.contains("::")
    }

    /// Whether it is called as `name` (or one of the names the facade gives it).
    pub fn is_named(&self, name: &str) -> bool {
        self.name() == name || self.also.contains(&name)
    }
}

/// The query function called `name`.
pub fn query_fn(name: &str) -> Option<&'static Api> {
    API.iter().find(|api| {
        !api.is_method() && matches!(api.handling, Handling::Query { .. }) && api.is_named(name)
    })
}

/// The query macro called `name`.
pub fn query_macro_by_name(name: &str) -> Option<&'static Api> {
    API.iter()
        .find(|api| matches!(api.handling, Handling::Macro { .. }) && api.is_named(name))
}

/// The method called `name` with `args` arguments besides its receiver.
pub fn method(name: &str, args: usize) -> Option<&'static Api> {
    API.iter()
        .find(|api| api.is_method() && api.is_named(name) && api.arity == args + 1)
}

/// What a call by path ending in `name` with `args` arguments is: a method called by its path
/// (`E::execute(ex, q)`, `self` counted) or a free function.
pub fn path_call(name: &str, args: usize) -> Option<&'static Api> {
    API.iter().find(|api| {
        api.is_named(name)
            && api.arity == args
            && !matches!(
                api.handling,
                Handling::Query { .. } | Handling::Macro { .. }
            )
    })
}

/// Whether `name` is a method that sends the query it is given ([`Handling::Sends`]), by any
/// number of arguments.
pub fn sends_named(name: &str) -> bool {
    API.iter()
        .any(|api| matches!(api.handling, Handling::Sends { .. }) && api.is_named(name))
}

/// The entry for `item`.
pub fn entry(item: &str) -> &'static Api {
    API.iter()
        .find(|api| api.item == item)
        .unwrap_or_else(|| panic!("`{item}` is in the table"))
}

/// Whether a macro whose arguments the finder cannot read names a send by `name`: the query
/// functions, and the methods that send SQL or are refused. `begin` is left out: it names the
/// common `pool.begin()`, which sends no SQL of the caller's.
pub fn is_send_name(name: &str) -> bool {
    name != "begin"
        && API.iter().any(|api| {
            api.is_named(name)
                && matches!(
                    api.handling,
                    Handling::Query { .. } | Handling::Sends { .. } | Handling::Refused { .. }
                )
                && !api.item.starts_with("QueryBuilder::")
        })
}
