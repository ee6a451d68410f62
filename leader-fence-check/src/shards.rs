//! The shard rule: a shard's fence (`leader_fence` with four bind parameters) stands as a
//! top-level `AND` conjunct of a `WHERE` beside its filter, `leader_shard_of(key, $count) =
//! $index`, on the very placeholders the fence takes for the shard's index and count, with a key
//! that reads a column. So a claim that proves one shard's fence selects only that shard's rows:
//! a filter that is missing, bound to other placeholders or literals, or under `OR` or `NOT`, is
//! refused.

use std::ops::Range;

use serde_json::Value;

use crate::levels::{ConjunctOf, Levels};
use crate::rules::param_number;
use crate::tree::enums::AEXPR_OP;
use crate::tree::{children, function_name, int, location, node, text};
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
