//! One-time gates: conditions PostgreSQL evaluates once, above everything a level reads.
//!
//! PostgreSQL plans a top-level `AND` conjunct of a level's `WHERE` that reads no column of the
//! level and calls no volatile function as a *pseudo-constant* qualification: a One-Time Filter
//! of a `Result` node above the level's scans and joins, evaluated before any of them reads a
//! row. A sub-select such a conjunct holds reads none of the level's columns either, so
//! PostgreSQL runs it as an init plan (or a sub-plan without parameters), which leaves the
//! conjunct without columns and without volatile calls whatever the sub-select calls. When the
//! conjunct is also a gate (false or null when the fence is), the level reads no row for a
//! superseded leader:
//!
//! ```sql
//! -- the fence itself
//! SELECT id FROM jobs WHERE leader_fence($1, $2) FOR UPDATE
//! -- a fenced sub-select that reads nothing of `jobs`
//! SELECT id FROM jobs WHERE EXISTS (SELECT 1 FROM lanes WHERE leader_fence($1, $2)) FOR UPDATE
//! ```
//!
//! What this module accepts as *reading no column of the level* is narrower than PostgreSQL's
//! test, so a condition it accepts is one PostgreSQL makes a One-Time Filter: outside its
//! sub-selects, only constants, bind parameters, built-in comparisons, `AND`/`OR`/`NOT`, `CASE`,
//! `IS [NOT] NULL`, `IS [NOT] TRUE` and calls of the fence; inside them, only references that
//! resolve to a sub-select of the condition itself (a correlated reference to any enclosing
//! query, or one whose table is unknown, makes the condition an ordinary one).

use serde_json::Value;

use super::gates::strict_operator;
use super::{Props, is_fence_call};
use crate::functions;
use crate::levels::{ConjunctOf, Kind, Pos, Ref};
use crate::names::reads_level;
use crate::tree::enums::*;
use crate::tree::{function_name, int, node};

impl Props<'_, '_> {
    /// Whether the level has a one-time gate: a top-level `AND` conjunct of its own `WHERE`
    /// that PostgreSQL evaluates once, before the level reads a row, and that is false or null
    /// when the fence is (the fence itself, or a gate that reads no column of the level).
    pub fn one_time(&self, level: usize) -> bool {
        let l = &self.levels.levels[level];
        matches!(l.kind, Kind::Select | Kind::Update | Kind::Delete)
            && l.conjuncts.iter().enumerate().any(|(n, (of, conjunct))| {
                *of == ConjunctOf::Where
                    && (is_fence_call(conjunct)
                        || (self.pseudo_constant(level, n, conjunct)
                            && self.conjunct_gates(conjunct)))
            })
    }

    /// Whether PostgreSQL evaluates conjunct `n` of `level` as a pseudo-constant: it reads no
    /// column of the level, here or in its sub-selects, and calls no function but the fence
    /// outside them.
    fn pseudo_constant(&self, level: usize, n: usize, conjunct: &Value) -> bool {
        let pos = Pos::Conjunct(n);
        let levels = self.levels;
        let l = &levels.levels[level];
        constant_shape(conjunct)
            && l.refs.iter().all(|r| r.pos != pos)
            && l.calls
                .iter()
                .filter(|call| call.pos == pos)
                .all(|call| functions::is_fence(&function_name(call.fields)))
            && levels.levels.iter().enumerate().all(|(d, nested)| {
                !self.hangs_at(d, level, pos)
                    || nested
                        .refs
                        .iter()
                        .all(|r| self.reads_within(d, r, level, pos))
            })
    }

    /// Whether reference `r`, written in level `d`, surely reads a level inside what stands at
    /// `pos` of `level` (`d` itself, or a sub-select of it there).
    fn reads_within(&self, d: usize, r: &Ref, level: usize, pos: Pos) -> bool {
        if r.names.len() == 1 && r.names[0] == "*" {
            return true;
        }
        reads_level(self.levels, d, r).is_some_and(|at| at == d || self.hangs_at(at, level, pos))
    }
}

/// Whether a condition, outside its sub-selects, holds only what PostgreSQL evaluates without a
/// row: constants, bind parameters, built-in comparisons, boolean logic, `CASE`, null and truth
/// tests, sub-links (their sub-selects are checked apart) and calls of the fence.
fn constant_shape(value: &Value) -> bool {
    let Some((kind, fields)) = node(value) else {
        return match value {
            Value::Array(items) => items.iter().all(constant_shape),
            _ => false,
        };
    };
    let field = |name: &str| {
        fields
            .get(name)
            .is_none_or(|v| v.is_null() || constant_shape(v))
    };
    match kind {
        "A_Const" | "AConst" | "ParamRef" => true,
        "FuncCall" => functions::is_fence(&function_name(fields)),
        "TypeCast" => matches!(
            fields.get("arg").and_then(node),
            Some(("A_Const" | "AConst" | "ParamRef", _))
        ),
        "SubLink" => {
            matches!(
                int(fields, "sub_link_type"),
                EXISTS_SUBLINK | ANY_SUBLINK | ALL_SUBLINK | EXPR_SUBLINK | ARRAY_SUBLINK
            ) && strict_operator(fields.get("oper_name"))
                && field("testexpr")
        }
        "A_Expr" | "AExpr" => {
            matches!(int(fields, "kind"), AEXPR_OP | AEXPR_OP_ANY | AEXPR_OP_ALL)
                && strict_operator(fields.get("name"))
                && field("lexpr")
                && field("rexpr")
        }
        "BoolExpr" | "NullTest" | "BooleanTest" => field("args") && field("arg"),
        "CaseExpr" => field("arg") && field("args") && field("defresult"),
        "CaseWhen" => field("expr") && field("result"),
        _ => false,
    }
}
