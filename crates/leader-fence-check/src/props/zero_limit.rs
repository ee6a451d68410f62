//! Zero limits: a `LIMIT` that is 0 for a superseded leader, below which PostgreSQL reads
//! nothing.
//!
//! PostgreSQL's Limit node stands above everything else of its query level: its scans and
//! joins, its conditions and their sub-selects, its locks (`LockRows`), its aggregates, its
//! select list, the arms of its set operation. On its first call it evaluates `LIMIT` and
//! `OFFSET`, and when the limit is 0 it returns at once, without running any of them. A count of
//! the rows of a gated query is 0 for a superseded leader:
//!
//! ```sql
//! SELECT id FROM jobs ORDER BY id
//!  LIMIT (SELECT count(*) FROM lanes WHERE leader_fence($1, $2))
//!    FOR UPDATE SKIP LOCKED
//! ```
//!
//! Only a count counts (`count(*)`, or `count(x)` of the query's own columns: one of outer
//! columns only is the outer query's aggregate): any other value of an empty query is NULL
//! (`max(..)`, a column of no row, a count with a `GROUP BY` or `HAVING`, which may leave no
//! row), and a NULL limit is no limit at all.

use super::Props;
use crate::levels::Kind;
use crate::tree::enums::*;
use crate::tree::{child, function_name, int};

impl Props<'_, '_> {
    /// Whether the level's `LIMIT` is 0 when the fence is false: a scalar sub-select of a
    /// count alone over a gated query, without `GROUP BY` or `HAVING`.
    pub fn zero_limit(&self, level: usize) -> bool {
        let l = &self.levels.levels[level];
        if !matches!(l.kind, Kind::Select | Kind::SetOp(_)) {
            return false;
        }
        let Some(("SubLink", link)) = child(l.fields, "limit_count") else {
            return false;
        };
        if int(link, "sub_link_type") != EXPR_SUBLINK {
            return false;
        }
        let Some(count) = child(link, "subselect").and_then(|(_, query)| self.levels.of(query))
        else {
            return false;
        };
        self.aggregate_of_no_rows(count).is_some_and(|call| {
            matches!(function_name(call).as_slice(), [name] if name == "count")
                && self
                    .aggregate_owners
                    .get(&(count, 0))
                    .is_some_and(|owners| owners.as_slice() == [count])
        })
    }
}
