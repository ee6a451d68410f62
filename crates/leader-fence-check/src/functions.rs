//! The functions a claim may call: built-ins that neither change nor lock rows.
//!
//! A function call is code `#[fenced]` cannot see into, and a function can change or lock rows
//! (a PL/pgSQL function that updates a table, `SELECT … FOR UPDATE` in its body). So a claim may
//! call only the functions listed here, unqualified or qualified with `pg_catalog`, and
//! `leader_fence`, and the functions the schema has `STABLE` or `IMMUTABLE`. The
//! [`VOLATILE_BUILTINS`] stand, as the schema's `VOLATILE` functions do, only where PostgreSQL
//! never evaluates them for a superseded leader. Anything else is refused: compute the value
//! before the claim and bind it.
//! A call written in attribute notation (`t.f`, `(t).f`) is a call too: see `names`.

/// A built-in function a claim may call.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
#[non_exhaustive]
pub struct KnownFunction {
    /// The name as PostgreSQL folds it (lower case).
    pub name: &'static str,
    /// Whether it is an aggregate: a `SELECT` that aggregates without `GROUP BY` returns a row
    /// even when its `WHERE` matches nothing, so it is never empty.
    pub aggregate: bool,
    /// Whether it is an aggregate that returns NULL from no input rows (every built-in one but
    /// `count`, as PostgreSQL documents for its aggregates). Such a row gates like no row where
    /// it is compared: `x < (SELECT min(..) … AND leader_fence($1, $2))` is null.
    pub null_on_no_rows: bool,
}

const fn scalar(name: &'static str) -> KnownFunction {
    KnownFunction {
        name,
        aggregate: false,
        null_on_no_rows: false,
    }
}

/// An aggregate that returns a value other than NULL from no rows (`count` returns 0).
const fn aggregate(name: &'static str) -> KnownFunction {
    KnownFunction {
        name,
        aggregate: true,
        null_on_no_rows: false,
    }
}

/// An aggregate that returns NULL from no rows.
const fn null_aggregate(name: &'static str) -> KnownFunction {
    KnownFunction {
        name,
        aggregate: true,
        null_on_no_rows: true,
    }
}

/// Every function a claim may call besides `leader_fence`.
pub const KNOWN_FUNCTIONS: &[KnownFunction] = &[
    // Time.
    scalar("now"),
    scalar("clock_timestamp"),
    scalar("statement_timestamp"),
    scalar("transaction_timestamp"),
    scalar("timeofday"),
    scalar("date_trunc"),
    scalar("date_part"),
    scalar("date_bin"),
    scalar("extract"),
    scalar("age"),
    scalar("make_interval"),
    scalar("make_date"),
    scalar("make_time"),
    scalar("make_timestamp"),
    scalar("make_timestamptz"),
    scalar("justify_interval"),
    scalar("justify_days"),
    scalar("justify_hours"),
    scalar("to_timestamp"),
    scalar("to_date"),
    scalar("to_char"),
    scalar("to_number"),
    scalar("timezone"),
    scalar("isfinite"),
    scalar("overlaps"),
    // Numbers.
    scalar("abs"),
    scalar("ceil"),
    scalar("ceiling"),
    scalar("floor"),
    scalar("round"),
    scalar("trunc"),
    scalar("mod"),
    scalar("power"),
    scalar("sqrt"),
    scalar("exp"),
    scalar("ln"),
    scalar("log"),
    scalar("sign"),
    scalar("div"),
    scalar("width_bucket"),
    scalar("random"),
    // Text.
    scalar("length"),
    scalar("char_length"),
    scalar("octet_length"),
    scalar("lower"),
    scalar("upper"),
    scalar("initcap"),
    scalar("btrim"),
    scalar("ltrim"),
    scalar("rtrim"),
    scalar("substr"),
    scalar("substring"),
    scalar("replace"),
    scalar("translate"),
    scalar("concat"),
    scalar("concat_ws"),
    scalar("left"),
    scalar("right"),
    scalar("lpad"),
    scalar("rpad"),
    scalar("position"),
    scalar("strpos"),
    scalar("split_part"),
    scalar("starts_with"),
    scalar("format"),
    scalar("md5"),
    scalar("encode"),
    scalar("decode"),
    scalar("regexp_replace"),
    scalar("regexp_match"),
    scalar("hashtext"),
    // Arrays, JSON, identifiers.
    scalar("array_length"),
    scalar("array_position"),
    scalar("array_append"),
    scalar("array_prepend"),
    scalar("array_cat"),
    scalar("array_remove"),
    scalar("cardinality"),
    scalar("unnest"),
    scalar("generate_series"),
    scalar("jsonb_build_object"),
    scalar("json_build_object"),
    scalar("jsonb_build_array"),
    scalar("json_build_array"),
    scalar("jsonb_set"),
    scalar("jsonb_extract_path_text"),
    scalar("jsonb_array_length"),
    scalar("to_jsonb"),
    scalar("to_json"),
    scalar("gen_random_uuid"),
    // Transaction-level advisory locks: they lock no row and end with the transaction.
    scalar("pg_advisory_xact_lock"),
    scalar("pg_advisory_xact_lock_shared"),
    scalar("pg_try_advisory_xact_lock"),
    scalar("pg_try_advisory_xact_lock_shared"),
    // Window functions (they never add rows).
    scalar("row_number"),
    scalar("rank"),
    scalar("dense_rank"),
    scalar("percent_rank"),
    scalar("cume_dist"),
    scalar("ntile"),
    scalar("lag"),
    scalar("lead"),
    scalar("first_value"),
    scalar("last_value"),
    // Aggregates: `count` returns 0 from no rows, every other one NULL.
    aggregate("count"),
    null_aggregate("sum"),
    null_aggregate("avg"),
    null_aggregate("min"),
    null_aggregate("max"),
    null_aggregate("array_agg"),
    null_aggregate("string_agg"),
    null_aggregate("bool_and"),
    null_aggregate("bool_or"),
    null_aggregate("every"),
    null_aggregate("bit_and"),
    null_aggregate("bit_or"),
    null_aggregate("json_agg"),
    null_aggregate("jsonb_agg"),
    null_aggregate("json_object_agg"),
    null_aggregate("jsonb_object_agg"),
];

/// The known function called `name` (a dotted, lower-cased name from the parse tree).
pub fn known(name: &[String]) -> Option<KnownFunction> {
    let bare = match name {
        [bare] => bare,
        [schema, bare] if schema == "pg_catalog" => bare,
        _ => return None,
    };
    KNOWN_FUNCTIONS.iter().copied().find(|f| f.name == bare)
}

/// The built-ins that change something other than rows (they are `VOLATILE`), each with what it
/// does: a claim may call them only where PostgreSQL never evaluates them for a superseded
/// leader, as a `VOLATILE` function of the schema.
pub const VOLATILE_BUILTINS: &[(&str, &str)] = &[
    (
        "pg_notify",
        "sends a notification when the transaction commits",
    ),
    ("nextval", "advances a sequence, which no rollback undoes"),
    ("setval", "sets a sequence, which no rollback undoes"),
    (
        "set_config",
        "changes a setting of the session or transaction",
    ),
    (
        "pg_advisory_lock",
        "takes an advisory lock held past the transaction",
    ),
    (
        "pg_advisory_lock_shared",
        "takes an advisory lock held past the transaction",
    ),
    (
        "pg_try_advisory_lock",
        "takes an advisory lock held past the transaction",
    ),
    (
        "pg_try_advisory_lock_shared",
        "takes an advisory lock held past the transaction",
    ),
    (
        "pg_advisory_unlock",
        "releases an advisory lock held past the transaction",
    ),
];

/// What a volatile built-in called `name` does ([`VOLATILE_BUILTINS`]).
pub fn volatile_builtin(name: &[String]) -> Option<&'static str> {
    let bare = match name {
        [bare] => bare,
        [schema, bare] if schema == "pg_catalog" => bare,
        _ => return None,
    };
    VOLATILE_BUILTINS
        .iter()
        .find(|(known, _)| known == bare)
        .map(|(_, what)| *what)
}

/// Whether `name` is the fence: `leader_fence`, or `leader_fence` in the schema the
/// framework's migrations were applied to (`public.leader_fence`).
pub fn is_fence(name: &[String]) -> bool {
    matches!(name, [bare] | [_, bare] if bare == "leader_fence")
}
