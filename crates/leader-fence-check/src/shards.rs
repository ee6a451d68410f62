//! The shard rule: a shard's fence (`leader_fence` with four bind parameters) stands as a
//! top-level `AND` conjunct of a `WHERE` beside its filter, `leader_shard_of(key, $count) =
//! $index`, on the very placeholders the fence takes for the shard's index and count, with a key
//! that reads a column. So a claim that proves one shard's fence selects only that shard's rows:
//! a filter that is missing, bound to other placeholders or literals, or under `OR` or `NOT`, is
//! refused.

use std::ops::Range;

use serde_json::Value;

use crate::levels::{ConjunctOf, Kind, Levels, Source, strings};
use crate::rules::param_number;
use crate::tree::enums::{AEXPR_OP, ANY_SUBLINK, EXPR_SUBLINK};
use crate::tree::{child, children, function_name, int, location, node, text};
use crate::{FenceCall, ShardParams, functions, position};

/// Whether `name` is the shard helper: `leader_shard_of`, bare or schema-qualified.
pub fn is_shard_of(name: &[String]) -> bool {
    matches!(name, [bare] | [_, bare] if bare == "leader_shard_of")
}

/// The shard fences of `fences` that no filter stands beside, each with its byte range, for
/// every level of `levels`.
pub fn unfiltered<'f>(
    sql: &str,
    levels: &Levels<'_>,
    fences: &'f [FenceCall],
) -> Vec<&'f FenceCall> {
    let mut filtered: Vec<Range<usize>> = Vec::new();
    for level in &levels.levels {
        let conjuncts: Vec<&Value> = level
            .conjuncts
            .iter()
            .filter(|(of, _)| *of == ConjunctOf::Where)
            .map(|(_, conjunct)| *conjunct)
            .collect();
        let filters: Vec<ShardParams> = conjuncts.iter().filter_map(|c| filter(c)).collect();
        for conjunct in &conjuncts {
            let Some(("FuncCall", call)) = node(conjunct) else {
                continue;
            };
            if !functions::is_fence(&function_name(call)) {
                continue;
            }
            let at = position::call(sql, location(call).unwrap_or(0));
            let Some(fence) = fences.iter().find(|f| f.at == at) else {
                continue;
            };
            if fence.shard.is_some_and(|shard| filters.contains(&shard)) {
                filtered.push(at);
            }
        }
    }
    fences
        .iter()
        .filter(|fence| fence.shard.is_some() && !filtered.contains(&fence.at))
        .collect()
}

/// `leader_shard_of(key, $count) = $index` (either side of `=`, placeholders optionally cast,
/// `key` reading a column): its placeholders.
fn filter(conjunct: &Value) -> Option<ShardParams> {
    let ("A_Expr" | "AExpr", expr) = node(conjunct)? else {
        return None;
    };
    // `IS DISTINCT FROM` is an `=` of another kind.
    if int(expr, "kind") != AEXPR_OP {
        return None;
    }
    let operator: Vec<&str> = children(expr, "name")
        .filter(|(kind, _)| *kind == "String")
        .map(|(_, s)| text(s, "sval"))
        .collect();
    if !matches!(operator.as_slice(), ["="] | ["pg_catalog", "="]) {
        return None;
    }
    let (left, right) = (expr.get("lexpr")?, expr.get("rexpr")?);
    shard_of_call(left)
        .zip(param_number(right))
        .or_else(|| shard_of_call(right).zip(param_number(left)))
        .map(|(count, index)| ShardParams { index, count })
}

/// `leader_shard_of(key, $count)` with a key that reads a column: the count's placeholder.
fn shard_of_call(value: &Value) -> Option<usize> {
    let ("FuncCall", call) = node(value)? else {
        return None;
    };
    if !is_shard_of(&function_name(call)) {
        return None;
    }
    match call.get("args").and_then(Value::as_array)?.as_slice() {
        [key, count] if reads_a_column(key) => param_number(count),
        _ => None,
    }
}

/// Whether `value` holds a column reference anywhere.
fn reads_a_column(value: &Value) -> bool {
    match value {
        Value::Object(map) => map
            .iter()
            .any(|(key, inner)| key == "ColumnRef" || reads_a_column(inner)),
        Value::Array(items) => items.iter().any(reads_a_column),
        _ => false,
    }
}

/// A level of a shard's claim whose rows no filter of the shard is shown to cover.
pub struct Uncovered {
    pub level: usize,
    /// What the level does with its rows, for the message: "updates", "locks", …
    pub does: &'static str,
    /// The relation it locks, where that is not a table the schema knows.
    pub not_a_table: Option<String>,
}

/// Rule 7's provenance: in a statement with a shard's fence, the rows each level changes,
/// locks or returns (as the statement's result) must be its shard's rows, by the shard of their
/// own key. A level is covered when its own `WHERE` holds the shard's filter on a key that
/// reads only the rows it acts on, or a conjunct `key IN (…)` (`= ANY (…)`, `= (…)`) whose
/// sub-select is covered so, returns just that filter's key, and `key` is the same column of
/// the rows it acts on. Anything else (a join to a filtered sub-select, a sub-select that
/// returns another column than its key, a `MERGE`, a set operation) is not shown to stay in
/// the shard.
pub fn uncovered(levels: &Levels<'_>, fences: &[FenceCall]) -> Vec<Uncovered> {
    let shards: Vec<ShardParams> = fences.iter().filter_map(|f| f.shard).collect();
    if shards.is_empty() {
        return Vec::new();
    }
    let mut found = Vec::new();
    for (n, level) in levels.levels.iter().enumerate() {
        let does = match level.kind {
            Kind::Update => "updates",
            Kind::Delete => "deletes",
            Kind::Merge => "merges",
            Kind::Insert => "inserts",
            Kind::Select if !level.locking.is_empty() => "locks",
            Kind::Select | Kind::SetOp(_) | Kind::Values if n == 0 => "returns",
            _ => continue,
        };
        let covered = match level.kind {
            Kind::Merge | Kind::SetOp(_) | Kind::Values => false,
            Kind::Insert => child(level.fields, "select_stmt")
                .and_then(|(_, source)| levels.of(source))
                .is_some_and(|source| inserts_by_key(levels, source, &shards)),
            // A lock lands where the level reads its rows: on a table, at this level, after
            // its conditions; anywhere else (a view, a sub-select the lock is pushed into)
            // before them, on any shard's rows.
            Kind::Select if !level.locking.is_empty() && !locks_a_table(levels, n) => false,
            _ => filtered_key(levels, n, &shards).is_some() || funnelled(levels, n, &shards),
        };
        if !covered {
            let not_a_table = match (level.locking.is_empty(), level.items.as_slice()) {
                (false, [item]) => match item.source {
                    Source::Table(table) if !is_table(levels, table) => {
                        Some(levels.tables[table].name.clone())
                    }
                    _ => None,
                },
                _ => None,
            };
            found.push(Uncovered {
                level: n,
                does,
                not_a_table,
            });
        }
    }
    found
}

/// The key of a shard filter in the level's own `WHERE` that reads only the rows the level
/// acts on: an `UPDATE`'s or `DELETE`'s target (bare names where it reads no other table,
/// else names qualified by the target), or a `SELECT`'s one table or view.
fn filtered_key<'a>(
    levels: &Levels<'a>,
    level: usize,
    shards: &[ShardParams],
) -> Option<&'a Value> {
    let l = &levels.levels[level];
    let own = match l.kind {
        Kind::Update | Kind::Delete => {
            let target = l.items.first()?;
            if l.items.len() == 1 {
                None
            } else {
                Some(target.name.clone())
            }
        }
        // Where the level locks a view, or a relation the schema does not know as a table, the
        // lock may land in the view's own query, on rows of every shard: `uncovered` refuses
        // that level itself, whatever its filter.
        Kind::Select => match l.items.as_slice() {
            [item] => match item.source {
                Source::Table(_) => None,
                _ => return None,
            },
            _ => return None,
        },
        _ => return None,
    };
    l.conjuncts
        .iter()
        .filter(|(of, _)| *of == ConjunctOf::Where)
        .find_map(|(_, conjunct)| {
            let (params, key) = filter_and_key(conjunct)?;
            let reads_own = column_refs(key)
                .iter()
                .all(|names| match (&own, names.as_slice()) {
                    (None, [_]) => true,
                    (Some(target), [qualifier, _]) => qualifier == target,
                    (None, [qualifier, _]) => l.items.first().is_some_and(|i| &i.name == qualifier),
                    _ => false,
                });
            (shards.contains(&params) && reads_own).then_some(key)
        })
}

/// Whether a locking level reads one relation, which the schema knows as a table.
fn locks_a_table(levels: &Levels<'_>, level: usize) -> bool {
    match levels.levels[level].items.as_slice() {
        [item] => matches!(item.source, Source::Table(table) if is_table(levels, table)),
        _ => false,
    }
}

/// Whether an `INSERT`'s source makes one row of each of its shard's rows and carries that
/// row's key: filtered by the shard of its own key, with no grouping, aggregate or `DISTINCT`
/// (which make one row of rows of several shards), and the key itself in its select list (so
/// two shards never insert a row made from the same values).
fn inserts_by_key(levels: &Levels<'_>, source: usize, shards: &[ShardParams]) -> bool {
    let l = &levels.levels[source];
    let Some(key) = filtered_key(levels, source, shards) else {
        return false;
    };
    let one_row_per_row = l.aggregates.is_empty()
        && ["group_clause", "distinct_clause", "having_clause"]
            .iter()
            .all(|field| !crate::tree::has(l.fields, field));
    let carries_key = l
        .fields
        .get("target_list")
        .and_then(Value::as_array)
        .into_iter()
        .flatten()
        .filter_map(|target| node(target).and_then(|(_, target)| target.get("val")))
        .any(|val| same_column(val, key));
    one_row_per_row && carries_key
}

/// Whether the schema knows the relation as a table.
fn is_table(levels: &Levels<'_>, table: usize) -> bool {
    let table = &levels.tables[table];
    levels
        .schema
        .is_some_and(|schema| schema.is_table(table.namespace.as_deref(), &table.name))
}

/// Whether a conjunct of the level's own `WHERE` is `col IN (S)`, `col = ANY (S)` or
/// `col = (S)`, with `S` a sub-select that returns just the key of its own shard filter, and
/// `col` that key's column in the rows the level acts on.
fn funnelled(levels: &Levels<'_>, level: usize, shards: &[ShardParams]) -> bool {
    let l = &levels.levels[level];
    let target = l.items.first().map(|item| item.name.as_str());
    l.conjuncts
        .iter()
        .filter(|(of, _)| *of == ConjunctOf::Where)
        .any(|(_, conjunct)| {
            let Some((column, sub)) = compared_with_sub_select(conjunct) else {
                return false;
            };
            let Some(sub) = levels.of(sub) else {
                return false;
            };
            let Some(key) = filtered_key(levels, sub, shards) else {
                return false;
            };
            let returns_key = match levels.levels[sub].fields.get("target_list") {
                Some(Value::Array(targets)) if targets.len() == 1 => node(&targets[0])
                    .and_then(|(_, target)| target.get("val"))
                    .is_some_and(|val| same_column(val, key)),
                _ => false,
            };
            let own_column = match column.as_slice() {
                [_] => l.items.len() == 1,
                [qualifier, _] => Some(qualifier.as_str()) == target,
                _ => false,
            };
            let key_column = column_refs(key);
            returns_key
                && own_column
                && matches!(key_column.as_slice(), [names] if names.last() == column.last())
        })
}

/// `col IN (S)`, `col = ANY (S)` or `col = (S)` / `(S) = col`: the column's names and `S`.
fn compared_with_sub_select(conjunct: &Value) -> Option<(Vec<String>, &crate::tree::Fields)> {
    let (kind, fields) = node(conjunct)?;
    let (column, link) = match kind {
        "SubLink" if int(fields, "sub_link_type") == ANY_SUBLINK => {
            let operator: Vec<String> = strings(fields.get("oper_name"));
            if !(operator.is_empty() || operator == ["="]) {
                return None;
            }
            (fields.get("testexpr")?, fields)
        }
        "A_Expr" | "AExpr" if int(fields, "kind") == AEXPR_OP => {
            let operator: Vec<String> = strings(fields.get("name"));
            if operator != ["="] {
                return None;
            }
            let (left, right) = (fields.get("lexpr")?, fields.get("rexpr")?);
            match (node(left)?, node(right)?) {
                ((_, _), ("SubLink", link)) if int(link, "sub_link_type") == EXPR_SUBLINK => {
                    (left, link)
                }
                (("SubLink", link), _) if int(link, "sub_link_type") == EXPR_SUBLINK => {
                    (right, link)
                }
                _ => return None,
            }
        }
        _ => return None,
    };
    let [names] = column_refs(column).try_into().ok()?;
    let ("ColumnRef", _) = node(column)? else {
        return None;
    };
    Some((names, child(link, "subselect")?.1))
}

/// `leader_shard_of(key, $count) = $index`: its placeholders and its key.
fn filter_and_key(conjunct: &Value) -> Option<(ShardParams, &Value)> {
    let params = filter(conjunct)?;
    let (_, expr) = node(conjunct)?;
    let key = [expr.get("lexpr")?, expr.get("rexpr")?]
        .into_iter()
        .find_map(|side| match node(side)? {
            ("FuncCall", call) if is_shard_of(&function_name(call)) => {
                call.get("args")?.as_array()?.first()
            }
            _ => None,
        })?;
    Some((params, key))
}

/// Whether `value` is a column reference with the same last name as `key`, itself one.
fn same_column(value: &Value, key: &Value) -> bool {
    matches!(node(value), Some(("ColumnRef", _)))
        && matches!(node(key), Some(("ColumnRef", _)))
        && match (column_refs(value).as_slice(), column_refs(key).as_slice()) {
            ([a], [b]) => a.last() == b.last(),
            _ => false,
        }
}

/// The dotted names of every column reference in `value`.
fn column_refs(value: &Value) -> Vec<Vec<String>> {
    let mut found = Vec::new();
    fn visit(value: &Value, found: &mut Vec<Vec<String>>) {
        if let Some(("ColumnRef", fields)) = node(value) {
            found.push(strings(fields.get("fields")));
            return;
        }
        match value {
            Value::Object(map) => map.values().for_each(|v| visit(v, found)),
            Value::Array(items) => items.iter().for_each(|v| visit(v, found)),
            _ => {}
        }
    }
    visit(value, &mut found);
    found
}
