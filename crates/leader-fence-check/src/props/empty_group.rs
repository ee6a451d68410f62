//! `HAVING`: a conjunct that gates every group, and what the others make of the one group an
//! aggregating level forms from no rows.
//!
//! A `SELECT` that aggregates without `GROUP BY` (or groups by a set that includes the empty
//! set) forms a group even from no input rows, and returns it unless its `HAVING` removes it.
//! On that group `count(..)` is 0 and every aggregate that returns NULL from no rows is NULL, so
//! `HAVING count(*) > 1` or `HAVING min(due) < now()` is false or null there, and the level
//! returns no row from no rows. The rules evaluate a `HAVING` conjunct on the empty group only
//! when it is a built-in strict comparison of such aggregates of this level (one whose arguments
//! read this level's rows: an aggregate of an enclosing query is a constant here) and integer or
//! NULL constants; anything else is unknown, and the group is taken to stay.

use std::cmp::Ordering;

use serde_json::Value;

use super::Props;
use super::gates::strict_operator;
use crate::functions;
use crate::tree::enums::*;
use crate::tree::{Fields, function_name, has, int, node, text};

/// A value on the empty group, where the rules know it.
#[derive(Debug, Clone, Copy, PartialEq)]
pub(super) enum Known {
    Null,
    Int(i64),
    Bool(bool),
}

impl Props<'_, '_> {
    /// Whether a conjunct of the level's `HAVING` gates ([`Props::conjunct_gates`]): false or
    /// null whatever the group, so the level returns no row, though it reads and aggregates its
    /// input rows first (the aggregates' arguments are evaluated on every one of them).
    pub fn having_gates(&self, level: usize) -> bool {
        self.levels.levels[level]
            .having
            .iter()
            .any(|c| self.conjunct_gates(c))
    }

    /// Whether a conjunct of the level's `HAVING` is false or null on the group formed from no
    /// rows.
    pub(super) fn having_removes_empty_group(&self, level: usize) -> bool {
        self.levels.levels[level].having.iter().any(|c| {
            matches!(
                self.on_empty_group(level, c),
                Some(Known::Null | Known::Bool(false))
            )
        })
    }

    fn on_empty_group(&self, level: usize, value: &Value) -> Option<Known> {
        let (kind, fields) = node(value)?;
        match kind {
            "A_Const" | "AConst" => constant(fields),
            "FuncCall" => self.aggregate_on_empty_group(level, fields),
            "A_Expr" | "AExpr"
                if int(fields, "kind") == AEXPR_OP && strict_operator(fields.get("name")) =>
            {
                let side = |name: &str| {
                    fields
                        .get(name)
                        .and_then(|side| self.on_empty_group(level, side))
                };
                match (side("lexpr")?, side("rexpr")?) {
                    (Known::Null, _) | (_, Known::Null) => Some(Known::Null),
                    (Known::Int(l), Known::Int(r)) => compare(operator(fields)?, l.cmp(&r)),
                    _ => None,
                }
            }
            _ => None,
        }
    }

    /// `count(..)` is 0 and an aggregate that returns NULL from no rows is NULL, where the
    /// aggregate is this level's.
    fn aggregate_on_empty_group(&self, level: usize, call: &Fields) -> Option<Known> {
        if has(call, "over") || call.get("agg_within_group").and_then(Value::as_bool) == Some(true)
        {
            return None;
        }
        let known = functions::known(&function_name(call)).filter(|f| f.aggregate)?;
        let index = self.levels.aggregate_index(level, call)?;
        let owners = self.aggregate_owners.get(&(level, index))?;
        if owners.as_slice() != [level] {
            return None;
        }
        if known.name == "count" {
            Some(Known::Int(0))
        } else {
            known.null_on_no_rows.then_some(Known::Null)
        }
    }
}

/// An integer, boolean or NULL constant.
pub(super) fn constant(fields: &Fields) -> Option<Known> {
    if fields.get("isnull").and_then(Value::as_bool) == Some(true) {
        return Some(Known::Null);
    }
    let value = fields.get("val").and_then(Value::as_object)?;
    if let Some(int) = value.get("Ival").and_then(Value::as_object) {
        // A zero may be written as an empty object.
        return Some(Known::Int(
            int.get("ival").and_then(Value::as_i64).unwrap_or(0),
        ));
    }
    let boolean = value.get("Boolval").and_then(Value::as_object)?;
    Some(Known::Bool(
        boolean.get("boolval").and_then(Value::as_bool) == Some(true),
    ))
}

/// The operator's symbol, schema aside.
fn operator(expr: &Fields) -> Option<&str> {
    let name = expr.get("name")?.as_array()?;
    let (kind, last) = node(name.last()?)?;
    (kind == "String").then(|| text(last, "sval"))
}

fn compare(operator: &str, ordering: Ordering) -> Option<Known> {
    let holds = match operator {
        "=" => ordering == Ordering::Equal,
        "<>" | "!=" => ordering != Ordering::Equal,
        "<" => ordering == Ordering::Less,
        ">" => ordering == Ordering::Greater,
        "<=" => ordering != Ordering::Greater,
        ">=" => ordering != Ordering::Less,
        _ => return None,
    };
    Some(Known::Bool(holds))
}
