//! The fence rules of `#[fenced]`, as a pure function of a claim's SQL text.
//!
//! # The contract
//!
//! A **claim** is a statement that changes or locks rows, or may: an `UPDATE`, `DELETE`,
//! `INSERT` or `MERGE` anywhere in it, a locking clause (`FOR UPDATE`, `FOR NO KEY UPDATE`,
//! `FOR SHARE`, `FOR KEY SHARE`), a call of a function the rules cannot see into, or a statement
//! of another kind they do not analyse. [`check`] accepts a claim only if, run with a
//! superseded fence token, it changes no row, locks no row and returns no row. Statements that
//! only read (and transaction control, `SET`, `SHOW`) are not claims and are accepted as they
//! are. The SQL is parsed with PostgreSQL's own parser (`pg_query`, the server's grammar
//! compiled as a library), so what is analysed is what the server runs.
//!
//! # The boundary, in terms of what PostgreSQL does
//!
//! **A node that changes or locks rows is accepted only if PostgreSQL evaluates a gate that
//! proves the fence before that node changes or locks any row.** Whatever the rules cannot
//! place in PostgreSQL's order of evaluation is refused, with a message that says why and shows
//! the accepted shape. PostgreSQL evaluates a statement as a tree of query levels (the
//! statement, each `WITH` query, each sub-select, each arm of a set operation), and:
//!
//! * **A one-time fence.** `leader_fence($i, $j)` as a top-level `AND` conjunct of a level's own
//!   `WHERE` reads no column and takes bind parameters, so PostgreSQL evaluates it once, as a
//!   One-Time Filter above everything the level reads. So does a conjunct that is a gate (below)
//!   and reads no column of the level: outside its sub-selects only constants, bind parameters,
//!   built-in comparisons, boolean logic, `CASE`, null tests and the fence; inside them only
//!   their own columns (`EXISTS (SELECT 1 FROM lanes WHERE leader_fence($1, $2))`, which
//!   PostgreSQL runs as an init plan). When it is false the level reads no row,
//!   and nothing evaluated on its rows (its `FROM` items, the sub-selects of conditions on its
//!   columns, its select list, `SET` and `RETURNING`) runs. Not covered: its `LIMIT` and
//!   `OFFSET` (evaluated before it), and conditions that read no column of the level
//!   (PostgreSQL may evaluate them up front, beside the fence, in any order). What a condition
//!   reads is judged as the planner sees it: a column of a sub-select, view or `WITH` query
//!   PostgreSQL pulls up into the level is that column's expression there (`1` for
//!   `(SELECT 1 AS id FROM q) t`), and folding constants takes columns out of `CASE WHEN true
//!   …`, `coalesce(1, …)` and a strict operator given a bind parameter (a NULL when PostgreSQL
//!   plans for the statement's values). A condition counts as reading a column only where one
//!   is left after both (and, without a [`Schema`], a name may be a view of constants: no
//!   column of it counts). A condition that calls a `VOLATILE` function outside its
//!   sub-selects is never evaluated up front (PostgreSQL keeps it a filter on the rows, below
//!   the One-Time Filter), so that call is covered wherever the condition stands; the
//!   sub-selects of a condition that reads no column are not. A `LIMIT` of a
//!   sub-select in its `FROM` is covered unless the level's plan may be rescanned (a
//!   correlated sub-select's plan is rescanned at each run, and a rescanned Limit recomputes
//!   its count whether or not it then runs). A `WITH` query that changes rows runs to
//!   completion whatever reads it; one that only reads runs as far as a query reads it, so it
//!   is covered where every query that reads it in its `FROM` is (in a `WITH RECURSIVE` whose
//!   queries read one declared after them, none is).
//! * **A limit of 0.** A `LIMIT` that is a scalar sub-select of one `count(..)` over a gated
//!   query (no `GROUP BY`, no `HAVING`) is 0 for a superseded leader, and PostgreSQL's Limit
//!   node, above everything else of its level, then returns at once: the level reads no row
//!   and evaluates nothing but its `LIMIT`, `OFFSET` and `WITH` queries. (Any other value of an
//!   empty query is NULL, which is no limit.) PostgreSQL also flattens a sub-select in `FROM` (one without
//!   `LIMIT`, `OFFSET`, `ORDER BY`, `DISTINCT`, `GROUP BY`, `HAVING`, `WITH` or a locking
//!   clause), and the sub-select of an `EXISTS` or `IN` condition (a semi-join), into the level
//!   around it: a condition of such a sub-select that reads none of its columns becomes one
//!   more up-front condition of the outer level, beside its fence, and is not covered either.
//! * **A gate on rows.** A level produces and changes no row when a top-level conjunct of its
//!   `WHERE` is false or null for every row: the fence; `x IN (q)`, `x op ANY (q)`,
//!   `EXISTS (q)`, `x op ANY (ARRAY (q))`, or `x op (q)` with a comparison operator (an empty
//!   scalar sub-select is null), where `q` returns no row; `x op (q)`, or `(q)` alone, where `q`
//!   is gated, has no `GROUP BY` or `HAVING`, and selects just one call of an aggregate that
//!   returns NULL from no rows (every known aggregate but `count`; `coalesce(min(..), 0)` is no
//!   such call); `x op ANY (q)`, `x IN (q)`, `x op ALL (q)`, `x NOT IN (q)` (or over
//!   `ARRAY (q)`) where `q` returns just that NULL row (comparisons with NULL are null; an empty
//!   `ALL` or `NOT IN` is true, so those gate only on the NULL row); `a AND b` where either
//!   side is such a condition, `a OR b` where both are, `NOT a` where `a` is always null;
//!   `CASE` where every arm is never chosen (its `WHEN` condition is such a condition) or yields
//!   `false`, `NULL` or such a condition, and so does its `ELSE` (a missing `ELSE` is `NULL`);
//!   or when an inner-joined `FROM` item
//!   returns no row (a gated sub-select or `WITH` query; a join an empty side or a fenced `ON`
//!   empties). Such a level may still *read* rows while it finds that out.
//! * **Rows from no rows.** A `SELECT` forms a group from an empty input when it aggregates
//!   without `GROUP BY` (an aggregate, or `HAVING`), when its grouping sets include the empty set
//!   (`GROUP BY ()`, `ROLLUP`, `CUBE`), and when a sub-select in its select list holds an
//!   aggregate whose arguments may all be its columns (the aggregate is then its). It returns
//!   that group as a row unless a conjunct of its `HAVING` is false or null on it: a strict
//!   comparison of integer or NULL constants and its own aggregates, `count` being 0 there and
//!   the others NULL (`HAVING count(*) > 1`, `HAVING min(due) < 5`). Such a level returns no
//!   row only if it is never evaluated or its `HAVING` removes that group. A `HAVING` conjunct
//!   that is a gate (as in `WHERE`) removes every group; the level still reads its rows and
//!   evaluates its aggregates' arguments on them.
//!
//! The rules:
//!
//! 1. **Changes.** An `UPDATE`, `DELETE`, `INSERT … SELECT` or `MERGE` (at the top or in a `WITH`
//!    query, which PostgreSQL runs to completion whatever the rest of the statement does) is
//!    gated on its rows: it changes only rows that pass every condition of its level.
//!    `INSERT … SELECT` is gated when its `SELECT` returns no row; `MERGE` when every `WHEN`
//!    clause acts on no row: it is `DO NOTHING`, its own condition is gated, it is `WHEN
//!    MATCHED` and the source is empty or the join condition `ON` is gated (no target row is
//!    then matched), or it is `WHEN NOT MATCHED [BY TARGET]` and the source is empty.
//!    `INSERT … VALUES` never is.
//! 2. **Locks, where PostgreSQL takes them.** A locking clause locks the rows of the tables of
//!    its level as the level reads them, and pushes itself into each sub-select of its `FROM`,
//!    which locks its rows as *it* reads them, before any condition of the outer level removes
//!    them; a table may be a view PostgreSQL cannot flatten, locked the same way. So every level
//!    a lock lands in must read no row for a superseded leader: it has a one-time fence, or it
//!    is never evaluated (an enclosing level's one-time fence covers it). A gate on rows (`IN`, a
//!    join) is too late for such a lock. On a relation the [`Schema`] knows as a table
//!    (`CREATE TABLE`, not a view, a foreign table or a table with rules), PostgreSQL locks the
//!    rows the level returns, after every condition of it, so there a gate on rows is in time;
//!    so does it on a view PostgreSQL reads as its one table's rows (automatically updatable,
//!    no `security_barrier`, its columns made of columns, constants, casts and `coalesce`: the
//!    planner pulls it up into the query that reads it).
//! 3. **The result.** A claim returns no row to a superseded leader.
//! 4. **Calls.** A function can change or lock rows. A call is resolved as PostgreSQL resolves
//!    it, against the [`Schema`] (PostgreSQL's catalog, prepared): the functions of that name
//!    (in the schema written, or in any schema for an unqualified name, since the session's
//!    `search_path` decides), taking that many arguments (defaults and `VARIADIC` counted), whose
//!    argument types accept the types the SQL shows (a literal's, a cast's, a column's; a string
//!    literal, a bind parameter or an expression is taken to fit any). Where one of them is an
//!    aggregate or a window function (evaluated once even on no rows) the call is refused;
//!    where any is `VOLATILE`, it counts as `VOLATILE`; where all are `STABLE` or `IMMUTABLE`
//!    (PostgreSQL refuses to change or lock rows in those) it stands anywhere, as do the
//!    built-ins in [`KNOWN_FUNCTIONS`] no function of the schema may stand for, and
//!    `leader_fence`. A `VOLATILE` call, and the [`VOLATILE_BUILTINS`] (`pg_notify`, `nextval`,
//!    …), may stand only where PostgreSQL does not evaluate it for a superseded leader: on the
//!    rows of a gated level, as a column reference may. Any other call (a function neither the
//!    schema nor the built-ins know) is refused. PostgreSQL also calls a function without a call
//!    in the text: `t.f` and `(t).f` are the column `f` of `t` where `t` has one, and a call
//!    `f(t)` otherwise (attribute notation). PostgreSQL decides by the table's columns, and so
//!    does this rule: `t.f` is a column where `t` is a table or view the [`Schema`] gives a
//!    column `f` (or a system column; every relation of that name, where the name is
//!    unqualified and several schemas have one; an alias's column names `AS t (a, b)` rename the
//!    first ones), or a sub-select or `WITH` query that names `f` among its columns, named as
//!    PostgreSQL names a select list's columns (`id::bigint` is `id`, `coalesce(..)` is
//!    `coalesce`, a recursive `WITH` query's by its column list). Any other such reference is a
//!    call `f(t)`, resolved as above with `t`'s row for its argument: where no function of the
//!    schema takes it (PostgreSQL then refuses the statement) or only `STABLE` and `IMMUTABLE`
//!    ones do, it changes nothing; otherwise it is refused wherever PostgreSQL may evaluate it
//!    for a superseded leader, with a message that says which table and column were looked for
//!    and where.
//! 5. **Fence arguments.** `leader_fence` takes two bind parameters (`$i`, `$j`, optionally
//!    cast), or four for a shard's fence (`$i`, `$k`, `$c`, `$j`), never literals; the caller
//!    checks what is bound to them ([`FenceCall`]).
//! 6. **Other statements.** A claim is a `SELECT`, `UPDATE`, `DELETE`, `INSERT` or `MERGE`;
//!    any other statement that may change rows (DDL, `COPY`, `CALL`, `DO`, `EXPLAIN ANALYZE`,
//!    `TRUNCATE`, `SELECT … INTO`) is refused.
//! 7. **Shards.** A shard's fence (`leader_fence($i, $k, $c, $j)`, four bind parameters) proves
//!    one shard's leadership, and gates as the two-argument fence does. The rows a shard's claim
//!    changes, locks or inserts must be that shard's, by the **declared shard key** of their
//!    table (`leader_shard_key`, in the [`Schema`]; a partition's or inheriting table's is its
//!    parent's, a view's is its table's): every shard claim on a table selects its rows by the
//!    same column, so two claims cannot split one table by different columns, and two shards'
//!    live leaders never claim one row. The rows of a level are selected by a column when a
//!    top-level `AND` conjunct of its `WHERE` (or of an inner join's `ON`) is the filter
//!    `leader_shard_of(col, $c) = $k` on the index and count placeholders of a shard fence of
//!    the statement (either side of `=`, not `IS DISTINCT FROM`; `col` a plain column: a cast
//!    would pick another `leader_shard_of` and another shard), or a funnel `col IN (S)`, `col =
//!    ANY (S)`, `col = ANY (ARRAY (S))`, `col = (S)` whose `S` returns one such column, or when a
//!    top-level `col = other` equates it with one, or when it is a column of a sub-select or
//!    `WITH` query of the level that is selected so in it (its `RETURNING` for a data-modifying
//!    one). An `UPDATE`, `DELETE` or locking `SELECT` acts on a table's rows whose key is so
//!    selected at its level (a lock on a view PostgreSQL cannot read as its table lands in the
//!    view's own query and is refused; one pushed into a sub-select is followed there; a `WITH`
//!    query nothing reads locks nothing); an `INSERT … SELECT` inserts rows whose key is such a
//!    column of its `SELECT`, or such a column plus or minus an integer constant (distinct keys
//!    stay distinct), with `ON CONFLICT DO UPDATE` only on the key; a `MERGE` matches target
//!    rows whose key its join condition so selects and inserts rows keyed so (`WHEN NOT MATCHED
//!    BY SOURCE` and `INSERT … VALUES` are refused). A table without a declared key is refused
//!    with the command that declares it. Rows a claim only returns, without locking or changing
//!    them, are reads, as a plain `SELECT`'s are: the rule does not follow them.
//!    `leader_shard_of` is the framework's immutable SQL helper and may be called anywhere.
//! 8. **Statement-level triggers and rules.** PostgreSQL fires a `FOR EACH STATEMENT` trigger
//!    once per statement, even one that changes no row, so a superseded leader's claim would run
//!    it however the claim is fenced: an `UPDATE`, `DELETE`, `INSERT` (and `ON CONFLICT DO
//!    UPDATE`'s update) or `MERGE` (each of its actions) that fires an enabled statement-level
//!    trigger, or a rule, of its table (or of the table a view it changes is rewritten into) is
//!    refused. A row-level trigger fires only for the rows the claim changes, none for a
//!    superseded leader.
//!
//! What lies outside: a schema that is not the one prepared (changed by hand after the
//! migrations, or a database whose migrations are not the crate's: `leaderctl schema prepare`
//! reads PostgreSQL's own catalog after them, `DO` blocks and dynamic DDL included),
//! user-defined operators and casts with side effects, a `leader_fence` that is not the
//! framework's (earlier on the `search_path`, or in the schema named), functions that lie about
//! their volatility in C, functions of `pg_catalog` a claim calls that are not in
//! [`KNOWN_FUNCTIONS`] or [`VOLATILE_BUILTINS`] (refused), and the SQL of the functions the
//! caller's code calls.
//!
//! `tests/tests/fenced_sql.rs` runs every accepted case and funnel against PostgreSQL with a
//! superseded token, and `fence-differential` runs generated statements through [`check`] and
//! through PostgreSQL as a superseded leader: any statement accepted here that changes, locks or
//! returns a row there is a failure.
//!
//! # Example
//!
//! ```
//! use leader_fence_check::check;
//!
//! let claim = "UPDATE jobs SET owner = $3
//!               WHERE id IN (SELECT id FROM jobs
//!                             WHERE owner IS NULL AND leader_fence($1, $2)
//!                             LIMIT 10 FOR UPDATE SKIP LOCKED)
//!           RETURNING id";
//! let checked = check(claim);
//! assert!(checked.errors.is_empty());
//! assert_eq!((checked.fences[0].role, checked.fences[0].token), (1, 2));
//!
//! // The fenced sub-select is under OR, so the other arm claims rows without it.
//! let unsound = "UPDATE jobs SET owner = $3
//!                 WHERE owner IS NULL
//!                    OR id IN (SELECT id FROM jobs WHERE leader_fence($1, $2) FOR UPDATE)";
//! let checked = check(unsound);
//! assert!(checked.errors[0].message.contains("not gated by the fence"));
//! ```

mod arg_types;
mod colnames;
mod functions;
mod levels;
mod messages;
mod names;
mod position;
mod props;
mod routines;
mod rules;
mod schema;
mod shards;
mod tree;

use std::ops::Range;

pub use functions::{KNOWN_FUNCTIONS, VOLATILE_BUILTINS};
pub use schema::Schema;

/// One `leader_fence($role, $token)` or `leader_fence($role, $index, $count, $token)` call: the
/// numbers of its bind parameters.
#[derive(Debug, Clone, PartialEq, Eq)]
#[non_exhaustive]
pub struct FenceCall {
    /// `i` in `leader_fence($i, $j)`: must be bound to the fence's role.
    pub role: usize,
    /// `j` in `leader_fence($i, $j)`: must be bound to the fence's token.
    pub token: usize,
    /// A shard's fence: the placeholders of the shard's index and count, which its filter
    /// `leader_shard_of(key, $count) = $index` shares; `None` for the two-argument fence.
    pub shard: Option<ShardParams>,
    /// The call's byte range in the SQL text.
    pub at: Range<usize>,
}

/// The placeholders of a shard's fence for the shard's index and count.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub struct ShardParams {
    /// `k` in `leader_fence($i, $k, $c, $j)`: bound to the fence's shard index.
    pub index: usize,
    /// `c` in `leader_fence($i, $k, $c, $j)`: bound to the fence's shard count.
    pub count: usize,
}

/// A rule the SQL breaks: the message names the node, quotes it with its line in the SQL, and
/// says the fix.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct SqlError {
    /// What is wrong and how to fix it.
    pub message: String,
    /// The byte range in the SQL text of what is wrong, where one is known.
    pub at: Option<Range<usize>>,
}

/// The result of [`check`].
#[derive(Debug, Clone, Default, PartialEq, Eq)]
#[non_exhaustive]
pub struct Checked {
    /// How many statements the text holds (`sqlx::raw_sql` may send several, a prepared
    /// statement only one).
    pub statements: usize,
    /// How many of them are claims: they change or lock rows, or may (through a function
    /// call, or a statement kind the rules do not analyse). The others only read.
    pub claims: usize,
    /// Every `leader_fence` call, for the caller to check what is bound to it.
    pub fences: Vec<FenceCall>,
    /// Every broken rule; empty when every statement is gated.
    pub errors: Vec<SqlError>,
}

/// Checks every statement of `sql` against the fence rules (see the crate docs).
pub fn check(sql: &str) -> Checked {
    check_with(sql, &Hints::default())
}

/// What the caller knows of the SQL's binds and of the schema it runs on.
#[derive(Debug, Clone, Copy, Default)]
#[non_exhaustive]
pub struct Hints<'s> {
    /// The placeholders already bound to the fence's role and token, `(i, j)` for `$i` and
    /// `$j`: a missing fence is then suggested as `leader_fence($i, $j)`.
    pub fence_binds: Option<(usize, usize)>,
    /// The application's schema as PostgreSQL's catalog gives it (rules 2, 4, 7 and 8): a
    /// qualified column (`t.f`) told from a call of a function `f(t)`, a function's volatility,
    /// a table told from a view, the shard keys, the statement-level triggers.
    pub schema: Option<&'s Schema>,
}

impl<'s> Hints<'s> {
    /// Hints with the placeholders bound to the fence's role and token.
    pub fn fence_binds(role: usize, token: usize) -> Hints<'s> {
        Hints {
            fence_binds: Some((role, token)),
            schema: None,
        }
    }

    /// These hints, with the application's schema.
    #[must_use]
    pub fn with_schema(self, schema: &'s Schema) -> Hints<'s> {
        Hints {
            schema: Some(schema),
            ..self
        }
    }
}

/// [`check`], with what the caller knows of the binds and the schema.
pub fn check_with(sql: &str, hints: &Hints<'_>) -> Checked {
    match tree::parse(sql) {
        Ok(statements) => {
            let mut checked = Checked {
                statements: statements.len(),
                ..Checked::default()
            };
            for statement in &statements {
                let outcome = rules::check(sql, statement, hints);
                checked.claims += usize::from(outcome.claim);
                checked.fences.extend(outcome.fences);
                checked.errors.extend(outcome.errors);
            }
            checked
        }
        Err(message) => Checked {
            statements: 0,
            claims: 0,
            fences: Vec::new(),
            errors: vec![SqlError {
                message: format!("the claim's SQL does not parse as PostgreSQL: {message}"),
                at: None,
            }],
        },
    }
}

/// SQL that PostgreSQL's parser refuses, with its message.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct ParseError {
    /// The parser's message.
    pub message: String,
}

impl std::fmt::Display for ParseError {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        write!(f, "the SQL does not parse as PostgreSQL: {}", self.message)
    }
}

impl std::error::Error for ParseError {}

/// The byte ranges of every row-locking clause target (`FOR UPDATE`, `FOR NO KEY UPDATE`,
/// `FOR SHARE`, `FOR KEY SHARE`) in `sql`, each given as the range of the locking query's first
/// table; [`ParseError`] when `sql` does not parse.
///
/// ```
/// let found = leader_fence_check::row_locking_queries(
///     "SELECT id FROM jobs WHERE due FOR UPDATE SKIP LOCKED",
/// );
/// assert_eq!(found.unwrap().len(), 1);
/// assert!(leader_fence_check::row_locking_queries("SELECT 1").unwrap().is_empty());
/// ```
pub fn row_locking_queries(sql: &str) -> Result<Vec<Range<usize>>, ParseError> {
    let mut found = Vec::new();
    let statements = tree::parse(sql).map_err(|message| ParseError { message })?;
    for statement in statements {
        messages::for_each_node(&statement.kind, &statement.fields, &mut |kind, fields| {
            if kind == "SelectStmt" && tree::has(fields, "locking_clause") {
                let at = messages::first_table(fields).unwrap_or(0);
                found.push(position::word(sql, at));
            }
        });
    }
    Ok(found)
}
