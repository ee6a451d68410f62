//! The messages of the shard rule and of statement-level triggers: what the claim does that
//! the rules cannot keep to the shard, or that fires whatever the fence says, and the fix.

use serde_json::Value;

use super::{Messages, first_table};
use crate::levels::Levels;
use crate::shards::{Uncovered, Why};
use crate::tree::location;
use crate::{FenceCall, ShardParams, SqlError, position};

impl Messages<'_> {
    /// The error for rows of a shard's claim that are not shown to be the shard's.
    pub fn shard_rows(
        &self,
        levels: &Levels,
        uncovered: &Uncovered,
        fence: &FenceCall,
        shard: ShardParams,
    ) -> SqlError {
        let fields = levels.levels[uncovered.level].fields;
        let start = fields
            .get("relation")
            .and_then(Value::as_object)
            .and_then(location)
            .or_else(|| first_table(fields));
        let at = start.map(|start| position::word(self.sql, start));
        let place = at
            .as_ref()
            .map_or_else(String::new, |at| format!("\nnote: at {}", self.place(at)));
        let (role, index, count, token) = (fence.role, shard.index, shard.count, fence.token);
        let (does, table) = (uncovered.does, &uncovered.table);
        let message = match &uncovered.why {
            Why::NoKey(why) => format!(
                "this shard's claim {does} rows of `{table}`, whose shard key `#[fenced]` does not \
                 know, so it cannot tell this claim's rows from another shard's\n\
                 note: {why}{place}\n\
                 help: declare the table's shard key once: `leaderctl schema shard-key {table} \
                 KEY_COLUMN --dir migrations` writes the migration (`SELECT \
                 leader_shard_key('{table}', 'KEY_COLUMN')`); apply it with the others and run \
                 `leaderctl schema prepare`. Every shard claim on the table then selects its rows \
                 by `leader_shard_of(KEY_COLUMN, ${count}) = ${index}`"
            ),
            Why::NotByKey(key) => format!(
                "this shard's claim {does} rows of `{table}` that no filter on its shard key \
                 `{key}` keeps in the shard, so two shards' live leaders could claim the same \
                 rows\n\
                 note: the rows a shard's claim changes, locks or inserts must be selected by the \
                 shard of the table's declared key: `leader_shard_of({key}, ${count}) = ${index}` \
                 as a top-level AND condition of the query that acts on them (the key a plain \
                 column, not cast), or `{key} IN (SELECT …)`, `{key} = (SELECT …)`, or a join \
                 `… = {key}` (in WHERE or an inner join's ON) to a sub-select or WITH query \
                 that returns such a filtered key{place}\n\
                 help: claim by the key, e.g. `UPDATE {table} SET … WHERE {key} IN (SELECT {key} \
                 FROM {table} WHERE leader_fence(${role}, ${index}, ${count}, ${token}) AND \
                 leader_shard_of({key}, ${count}) = ${index} … FOR UPDATE SKIP LOCKED)`"
            ),
            Why::NotATable => format!(
                "this shard's claim {does} rows of `{table}`, which the schema does not know as \
                 a table: a lock on a view lands in the view's own query, on every shard's rows, \
                 before any filter of this one{place}\n\
                 help: lock the table itself, selecting its rows by its declared shard key: \
                 `SELECT … FROM the_table WHERE leader_fence(${role}, ${index}, ${count}, \
                 ${token}) AND leader_shard_of(key, ${count}) = ${index} … FOR UPDATE`"
            ),
            Why::Unkeyed(what) => format!(
                "this shard's claim {does} rows of `{table}` that no shard key ties to the \
                 shard: {what}{place}\n\
                 help: act only on rows selected by the table's declared shard key, \
                 `leader_shard_of(key, ${count}) = ${index}`, taking the key from them (`INSERT \
                 … SELECT key, … FROM … WHERE leader_shard_of(key, ${count}) = ${index}`)"
            ),
        };
        SqlError { message, at }
    }

    /// The error for a change whose statement-level triggers or rules run whatever the fence
    /// says.
    pub fn fires(&self, levels: &Levels, level: usize, fired: &[String]) -> SqlError {
        let fields = levels.levels[level].fields;
        let at = fields
            .get("relation")
            .and_then(Value::as_object)
            .and_then(location)
            .map(|start| position::word(self.sql, start));
        let table = at.as_ref().map_or("…", |at| &self.sql[at.clone()]);
        let place = at
            .as_ref()
            .map_or_else(String::new, |at| format!("\nnote: at {}", self.place(at)));
        SqlError {
            message: format!(
                "this claim's change of `{table}` fires {}, which PostgreSQL runs once per \
                 statement even when the statement changes no row: a superseded leader's claim \
                 would run it, however the claim is fenced{place}\n\
                 help: make the trigger `FOR EACH ROW` (it then runs only for rows the claim \
                 changes, and none for a superseded leader), or claim rows of a table without \
                 statement-level triggers or rules",
                fired.join(" and ")
            ),
            at,
        }
    }
}
