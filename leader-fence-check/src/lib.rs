//! The fence rules of `#[fenced]`, as a pure function of a claim's SQL text.
//!
//! # The contract
//!
//! [`check`] accepts a statement only if, run with a superseded fence token, it changes no row
//! and locks no row, and returns nothing. It parses the SQL with PostgreSQL's own parser
//! (`pg_query`, the server's grammar compiled as a library), so what it analyses is what the
//! server will run. A statement it cannot analyse is an error that says what it can analyse.
//!
//! A query node is **gated** when a false `leader_fence($i, $j)` empties its row set:
//!
//! * the fence is a top-level `AND` conjunct of its own `WHERE` (not under `OR`, `NOT`, `CASE`
//!   or any other expression), or
//! * a top-level conjunct empties the row set when a gated sub-query returns nothing:
//!   `x IN (gated)`, `x = ANY (gated)`, `x = ANY (ARRAY (gated))`, `EXISTS (gated)`, or
//! * an item of its `FROM` (of `UPDATE … FROM`, of `DELETE … USING`) is gated: a gated
//!   sub-select, a gated `WITH` query named there, or a join that an empty side or a fenced
//!   `ON` empties (an inner join with either side gated, a left join with its left side gated,
//!   a right join with its right side, a full join with both);
//! * a set operation is gated when its result is empty: `UNION` of two gated queries,
//!   `INTERSECT` with one, `EXCEPT` with a gated left side;
//! * `INSERT … SELECT` is gated when its `SELECT` is; `MERGE` when its `USING` source is gated
//!   and it has no `WHEN NOT MATCHED BY SOURCE`, or when every `WHEN` condition is gated.
//!
//! A `SELECT` that aggregates without `GROUP BY` (`count(*)`, `HAVING`) returns a row even
//! when its `WHERE` matches nothing, so it is never gated; neither is `VALUES`.
//!
//! The rules:
//!
//! 1. Every node that changes or locks rows is gated, wherever it stands: the top level, any
//!    `WITH` query (PostgreSQL runs a data-modifying `WITH` query to completion whatever the
//!    rest of the statement does), a sub-select, a `FROM` item, `INSERT … SELECT`, `MERGE`.
//!    Those nodes are `UPDATE`, `DELETE`, `INSERT`, `MERGE` and any `SELECT … FOR UPDATE |
//!    FOR NO KEY UPDATE | FOR SHARE | FOR KEY SHARE`.
//! 2. The statement itself is gated: a superseded leader's claim returns nothing.
//! 3. A claim is `SELECT`, `UPDATE`, `DELETE`, `INSERT` or `MERGE`; anything else (DDL, `COPY`,
//!    `CALL`, `DO`, `EXPLAIN`, transaction control, `SELECT … INTO`) is refused.
//! 4. Functions it cannot see into are refused, since a function can change or lock rows:
//!    only the built-in functions in [`KNOWN_FUNCTIONS`] and `leader_fence` may be called.
//! 5. `leader_fence` takes two bind parameters (`$i`, `$j`, optionally cast), never literals;
//!    the caller checks that they are bound to the fence's role and token ([`FenceCall`]).
//!
//! What lies outside: triggers (a statement-level trigger fires even when no row qualifies),
//! rules, user-defined operators and casts with side effects, and a `leader_fence` other than
//! the framework's earlier on the `search_path`.
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

mod functions;
mod gate;
mod position;
mod tree;

use std::ops::Range;

pub use functions::KNOWN_FUNCTIONS;

/// One `leader_fence($role, $token)` call: the numbers of its two bind parameters.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct FenceCall {
    /// `i` in `leader_fence($i, $j)`: must be bound to the fence's role.
    pub role: usize,
    /// `j` in `leader_fence($i, $j)`: must be bound to the fence's token.
    pub token: usize,
    /// The call's byte range in the SQL text.
    pub at: Range<usize>,
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
pub struct Checked {
    /// How many statements the text holds (`sqlx::raw_sql` may send several, a prepared
    /// statement only one).
    pub statements: usize,
    /// Every `leader_fence` call, for the caller to check what is bound to it.
    pub fences: Vec<FenceCall>,
    /// Every broken rule; empty when every statement is gated.
    pub errors: Vec<SqlError>,
}

/// Checks every statement of `sql` against the fence rules (see the crate docs).
pub fn check(sql: &str) -> Checked {
    match tree::parse(sql) {
        Ok(statements) => gate::check_statements(sql, &statements),
        Err(message) => Checked {
            statements: 0,
            fences: Vec::new(),
            errors: vec![SqlError {
                message: format!("the claim's SQL does not parse as PostgreSQL: {message}"),
                at: None,
            }],
        },
    }
}

/// The byte ranges of every row-locking clause target (`FOR UPDATE`, `FOR NO KEY UPDATE`,
/// `FOR SHARE`, `FOR KEY SHARE`) in `sql`, each given as the range of the locking query's first
/// table; `Err` with PostgreSQL's message when `sql` does not parse.
///
/// ```
/// let found = leader_fence_check::row_locking_queries(
///     "SELECT id FROM jobs WHERE due FOR UPDATE SKIP LOCKED",
/// );
/// assert_eq!(found.unwrap().len(), 1);
/// assert!(leader_fence_check::row_locking_queries("SELECT 1").unwrap().is_empty());
/// ```
pub fn row_locking_queries(sql: &str) -> Result<Vec<Range<usize>>, String> {
    let statements = tree::parse(sql)?;
    Ok(gate::row_locking_queries(sql, &statements))
}
