//! Gates: conditions that are false or null for every row when the fence is false, so the level
//! they stand in produces no row.
//!
//! A condition *gates* when, for a superseded leader, it is never true:
//!
//! * the fence itself;
//! * `EXISTS (q)`, `x IN (q)`, `x op ANY (q)` and `x op ANY (ARRAY (q))` where `q` returns no row;
//! * a condition that is *null* for every row ([`Props::always_null`]): a strict comparison
//!   (`=`, `<>`, `<`, …) with an empty scalar sub-select or with the one NULL row of an aggregate
//!   that returns NULL from no rows (`x < (SELECT min(..) … fenced)`), and `x op ANY (q)` or
//!   `x op ALL (q)` (or over `ARRAY (q)`) where `q` returns just that NULL row (`x = NULL` is
//!   null, and so is `ANY` or `ALL` of nulls; an *empty* `ALL` is true, so it gates only so);
//! * `x BETWEEN a AND b` (or `SYMMETRIC`) where `x`, `a` or `b` is such a null scalar sub-select
//!   (a range whose bound is a fenced `max(..)` of no rows);
//! * `a AND b` where either gates, `a OR b` where both do, `NOT a` where `a` is always null;
//! * `CASE WHEN c₁ THEN r₁ … ELSE e END` where every arm is never chosen (its `cᵢ` gates) or
//!   yields false or null (its `rᵢ` gates, or is the constant `false` or `NULL`), and so does
//!   `e` (a missing `ELSE` is `NULL`). In `CASE x WHEN v THEN r …` only the results count.
//!
//! Comparisons are the built-in operators, strict (null on a null argument); user-defined
//! operators lie outside the rules (see the crate's docs).

use serde_json::Value;

use super::Props;
use super::empty_group::{self, Known};
use crate::functions;
use crate::tree::enums::*;
use crate::tree::{Fields, child, children, function_name, has, int, node, text};

/// The comparison operators that are null when either side is (an empty scalar sub-select).
const STRICT_COMPARISONS: [&str; 7] = ["=", "<>", "!=", "<", ">", "<=", ">="];

impl Props<'_, '_> {
    /// Whether a condition is false or null for every row when the fence is false.
    pub fn conjunct_gates(&self, conjunct: &Value) -> bool {
        let Some((kind, fields)) = node(conjunct) else {
            return false;
        };
        match kind {
            "FuncCall" => functions::is_fence(&function_name(fields)),
            "SubLink" => match int(fields, "sub_link_type") {
                EXISTS_SUBLINK | ANY_SUBLINK => {
                    self.sub_select_empty(fields) || self.always_null(conjunct)
                }
                _ => self.always_null(conjunct),
            },
            "A_Expr" | "AExpr" => match int(fields, "kind") {
                AEXPR_OP_ANY if self.array_sub_select_empty(fields) => true,
                AEXPR_BETWEEN | AEXPR_BETWEEN_SYMMETRIC => self.between_null_bound(fields),
                _ => self.always_null(conjunct),
            },
            "BoolExpr" => {
                let args: Vec<&Value> = arguments(fields).collect();
                match int(fields, "boolop") {
                    AND_EXPR => args.iter().any(|a| self.conjunct_gates(a)),
                    OR_EXPR => !args.is_empty() && args.iter().all(|a| self.conjunct_gates(a)),
                    NOT_EXPR => matches!(args.as_slice(), [a] if self.always_null(a)),
                    _ => false,
                }
            }
            "CaseExpr" => self.case_gates(fields),
            _ => false,
        }
    }

    /// Whether a condition is null for every row when the fence is false (so `NOT` of it is
    /// null too).
    pub fn always_null(&self, condition: &Value) -> bool {
        let Some((kind, fields)) = node(condition) else {
            return false;
        };
        match kind {
            "SubLink" => match int(fields, "sub_link_type") {
                // A bare boolean sub-select.
                EXPR_SUBLINK => self.sub_select_null(fields),
                ANY_SUBLINK | ALL_SUBLINK => {
                    strict_operator(fields.get("oper_name")) && self.sub_select_one_null(fields)
                }
                _ => false,
            },
            "A_Expr" | "AExpr" => match int(fields, "kind") {
                AEXPR_OP_ANY | AEXPR_OP_ALL => {
                    strict_operator(fields.get("name"))
                        && matches!(child(fields, "rexpr"),
                            Some(("SubLink", link)) if int(link, "sub_link_type") == ARRAY_SUBLINK
                                && self.sub_select_one_null(link))
                }
                AEXPR_OP if strict_operator(fields.get("name")) => {
                    ["lexpr", "rexpr"].iter().any(|side| {
                        matches!(child(fields, side),
                            Some(("SubLink", link)) if int(link, "sub_link_type") == EXPR_SUBLINK
                                && self.sub_select_null(link))
                    })
                }
                _ => false,
            },
            "BoolExpr" if int(fields, "boolop") == NOT_EXPR => {
                matches!(arguments(fields).collect::<Vec<_>>().as_slice(), [a] if self.always_null(a))
            }
            _ => false,
        }
    }

    /// `x BETWEEN a AND b` (`SYMMETRIC` too) where `x`, `a` or `b` is a scalar sub-select that is
    /// null when the fence is false: `x >= a AND x <= b` is then null or false, never true (not
    /// always null, so `NOT BETWEEN` is no gate).
    fn between_null_bound(&self, expr: &Fields) -> bool {
        let mut sides: Vec<&Value> = expr.get("lexpr").into_iter().collect();
        if let Some(("List", bounds)) = child(expr, "rexpr") {
            sides.extend(
                bounds
                    .get("items")
                    .and_then(Value::as_array)
                    .into_iter()
                    .flatten(),
            );
        }
        sides.iter().any(|side| {
            matches!(node(side), Some(("SubLink", link))
                if int(link, "sub_link_type") == EXPR_SUBLINK && self.sub_select_null(link))
        })
    }

    /// `CASE`: every arm is never chosen or yields false or null, and so does the `ELSE`.
    fn case_gates(&self, case: &Fields) -> bool {
        let simple = has(case, "arg");
        let arms_gate = children(case, "args").all(|(kind, when)| {
            kind == "CaseWhen"
                && ((!simple && when.get("expr").is_some_and(|c| self.conjunct_gates(c)))
                    || when.get("result").is_some_and(|r| self.yields_no_true(r)))
        });
        let otherwise_gates = case
            .get("defresult")
            .filter(|otherwise| !otherwise.is_null())
            .is_none_or(|otherwise| self.yields_no_true(otherwise));
        arms_gate && otherwise_gates
    }

    /// A result of `CASE` that is never true: the constant `false` or `NULL`, or a gate.
    fn yields_no_true(&self, value: &Value) -> bool {
        is_false_or_null(value) || self.conjunct_gates(value)
    }

    pub(super) fn sub_select_empty(&self, link: &Fields) -> bool {
        child(link, "subselect")
            .and_then(|(_, query)| self.levels.of(query))
            .is_some_and(|level| self.empty(level))
    }

    /// `x op ANY (ARRAY (q))` with `q` empty: an empty array, so false.
    fn array_sub_select_empty(&self, expr: &Fields) -> bool {
        matches!(child(expr, "rexpr"),
            Some(("SubLink", link)) if int(link, "sub_link_type") == ARRAY_SUBLINK
                && self.sub_select_empty(link))
    }

    /// Whether a scalar sub-select is null when the fence is false: it returns no row, or
    /// the one row of an aggregate that returns NULL from no rows.
    pub(super) fn sub_select_null(&self, link: &Fields) -> bool {
        child(link, "subselect")
            .and_then(|(_, query)| self.levels.of(query))
            .is_some_and(|level| self.empty(level) || self.null_from_nothing(level))
    }

    /// Whether a sub-select returns exactly one row, NULL, when the fence is false.
    fn sub_select_one_null(&self, link: &Fields) -> bool {
        child(link, "subselect")
            .and_then(|(_, query)| self.levels.of(query))
            .is_some_and(|level| self.null_from_nothing(level))
    }
}

/// The arguments of a `BoolExpr`.
fn arguments(fields: &Fields) -> impl Iterator<Item = &Value> {
    fields
        .get("args")
        .and_then(Value::as_array)
        .into_iter()
        .flatten()
}

/// Whether an operator's name (`name` of an expression, `oper_name` of a sub-link; none is `=`,
/// as in `IN`) is a built-in strict comparison.
pub(super) fn strict_operator(name: Option<&Value>) -> bool {
    let name: Vec<&str> = name
        .and_then(Value::as_array)
        .into_iter()
        .flatten()
        .filter_map(node)
        .filter(|(kind, _)| *kind == "String")
        .map(|(_, s)| text(s, "sval"))
        .collect();
    match name.as_slice() {
        [] => true,
        [op] => STRICT_COMPARISONS.contains(op),
        ["pg_catalog", op] => STRICT_COMPARISONS.contains(op),
        _ => false,
    }
}

/// The constant `false` or `NULL` (as written, or cast: `NULL::boolean`).
fn is_false_or_null(value: &Value) -> bool {
    match node(value) {
        Some(("A_Const" | "AConst", constant)) => matches!(
            empty_group::constant(constant),
            Some(Known::Null | Known::Bool(false))
        ),
        Some(("TypeCast", cast)) => cast.get("arg").is_some_and(is_false_or_null),
        _ => false,
    }
}
