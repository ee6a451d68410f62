//! Whether a condition still reads a column of its level once PostgreSQL has planned it.
//!
//! PostgreSQL evaluates a condition that reads a column of its query on that query's rows, after
//! the query's fence; one that reads none it may evaluate once, up front, beside the fence and
//! in an order of its choosing. What counts is the condition as the planner sees it, not as it
//! is written, and two of the planner's steps take columns out of a condition:
//!
//! * **Pulling up.** A sub-select in `FROM` (a view, a `WITH` query PostgreSQL inlines) that
//!   keeps no query of its own is merged into the query around it, and each reference to one of
//!   its columns becomes that column's expression. A column computed from constants becomes a
//!   constant:
//!
//!   ```sql
//!   SELECT t.id FROM (SELECT 1 AS id FROM q) t
//!    WHERE t.id <> ALL (SELECT id FROM q WHERE leader_fence($1, $2)
//!                        LIMIT (SELECT take_budget(q) FROM q LIMIT 1))
//!      AND leader_fence($1, $2)
//!   ```
//!
//!   reads `1 <> ALL (…)`, no column: PostgreSQL 15 evaluated it, and the VOLATILE call in its
//!   `LIMIT`, before the fence, for a superseded leader.
//! * **Folding constants.** `CASE WHEN true THEN 1 ELSE t.x END`, `coalesce(1, t.x)`, a strict
//!   operator given a NULL (a bind parameter is a constant when PostgreSQL plans a statement for
//!   its values, as it does for sqlx's unnamed statements), `t.x IS NULL` on a `NOT NULL` column
//!   (PostgreSQL 17), a SQL function inlined: each may leave no column behind.
//!
//! So a condition counts as reading a column of its level only where a reference to one stands
//! on a path that no folding removes: through casts, operators and known built-in functions
//! whose other arguments are no constant that may be NULL, `AND`/`OR`/`NOT` (a branch folds
//! away only once it reads no column), the first condition of a `CASE`, the first argument of
//! `coalesce`, rows and arrays, the tested side of a sub-select's comparison, and the
//! conditions of a sub-select it correlates; and only where the column is one of stored rows
//! after pulling up ([`Props::column_is_stored`]). Anything else counts as reading no column.

use serde_json::Value;

use super::Props;
use crate::functions;
use crate::levels::{Pos, Ref, Source, strings};
use crate::names::{item_columns, reads_level, resolve};
use crate::tree::enums::*;
use crate::tree::{Fields, function_name, int, node};

impl Props<'_, '_> {
    /// Whether `condition`, written in level `written_in` (`level` itself or a sub-select its
    /// condition correlates), keeps a reference to a column of `level`'s stored rows once
    /// PostgreSQL has pulled sub-selects up and folded constants.
    pub(super) fn keeps_column(&self, level: usize, written_in: usize, condition: &Value) -> bool {
        let Some((kind, fields)) = node(condition) else {
            return match condition {
                Value::Array(items) => items
                    .iter()
                    .any(|i| self.keeps_column(level, written_in, i)),
                _ => false,
            };
        };
        let keeps =
            |value: Option<&Value>| value.is_some_and(|v| self.keeps_column(level, written_in, v));
        match kind {
            "ColumnRef" => self.reads_stored_column(level, written_in, fields),
            "TypeCast" | "A_Indirection" | "AIndirection" | "BooleanTest" | "CollateClause" => {
                keeps(fields.get("arg"))
            }
            "A_Expr" | "AExpr" => {
                let operands = [fields.get("lexpr"), fields.get("rexpr")];
                let kind = int(fields, "kind");
                [
                    AEXPR_OP,
                    AEXPR_OP_ANY,
                    AEXPR_OP_ALL,
                    AEXPR_IN,
                    AEXPR_LIKE,
                    AEXPR_ILIKE,
                ]
                .contains(&kind)
                    && !operands.into_iter().flatten().any(may_be_null_constant)
                    && operands.into_iter().any(keeps)
            }
            "FuncCall" => {
                let name = function_name(fields);
                let args = fields.get("args").and_then(Value::as_array);
                functions::known(&name).is_some_and(|f| !f.aggregate)
                    && !args.into_iter().flatten().any(may_be_null_constant)
                    && keeps(fields.get("args"))
            }
            "BoolExpr" => keeps(fields.get("args")),
            "CaseExpr" => {
                let first_when = fields
                    .get("args")
                    .and_then(Value::as_array)
                    .and_then(|whens| whens.first())
                    .and_then(node)
                    .and_then(|(_, when)| when.get("expr"));
                keeps(fields.get("arg")) || keeps(first_when)
            }
            "CoalesceExpr" => keeps(
                fields
                    .get("args")
                    .and_then(Value::as_array)
                    .and_then(|args| args.first()),
            ),
            "RowExpr" | "A_ArrayExpr" => keeps(fields.get("args")) || keeps(fields.get("elements")),
            "SubLink" => {
                keeps(fields.get("testexpr")) || self.correlates(level, fields.get("subselect"))
            }
            _ => false,
        }
    }

    /// Whether a sub-select keeps a reference to a column of `level` in one of its own
    /// conditions (a correlated sub-select, which PostgreSQL evaluates per row of `level`).
    fn correlates(&self, level: usize, subselect: Option<&Value>) -> bool {
        let Some(sub) = subselect
            .and_then(node)
            .and_then(|(_, f)| self.levels.of(f))
        else {
            return false;
        };
        let l = &self.levels.levels[sub];
        l.conjuncts
            .iter()
            .map(|(_, c)| *c)
            .chain(l.having.iter().copied())
            .any(|condition| self.keeps_column(level, sub, condition))
    }

    /// Whether a `ColumnRef` written in `written_in` reads a column of `level`'s stored rows.
    fn reads_stored_column(&self, level: usize, written_in: usize, column_ref: &Fields) -> bool {
        let names = strings(column_ref.get("fields"));
        if names.is_empty() {
            // A star (`t.*`): its columns are looked at nowhere here.
            return false;
        }
        let r = Ref {
            names: names.clone(),
            selection: false,
            selected_from: None,
            pos: Pos::Head,
            aggregate: None,
            at: None,
        };
        if reads_level(self.levels, written_in, &r) != Some(level) {
            return false;
        }
        match names.as_slice() {
            [single] => match resolve(self.levels, written_in, single) {
                Some((l, item)) => self.row_is_stored(l, item),
                None => {
                    let givers: Vec<usize> = (0..self.levels.levels[level].items.len())
                        .filter(|&item| {
                            item_columns(self.levels, &self.levels.levels[level].items[item].source)
                                .is_none_or(|columns| columns.iter().any(|c| c == single))
                        })
                        .collect();
                    !givers.is_empty()
                        && givers
                            .into_iter()
                            .all(|item| self.column_is_stored(level, item, single))
                }
            },
            [qualifier, column, ..] => match resolve(self.levels, written_in, qualifier) {
                Some((l, item)) => self.column_is_stored(l, item, column),
                None => false,
            },
            [] => false,
        }
    }

    /// Whether a whole-row reference to `FROM` item `item` of `level` keeps a stored column:
    /// a table's row does; a pulled-up sub-select's row is its columns' expressions.
    fn row_is_stored(&self, level: usize, item: usize) -> bool {
        let source = &self.levels.levels[level].items[item].source;
        match item_columns(self.levels, source) {
            Some(columns) => columns
                .iter()
                .any(|column| self.column_is_stored(level, item, column)),
            None => false,
        }
    }

    /// Whether column `column` of `FROM` item `item` of `level` is a column of stored rows after
    /// PostgreSQL pulls up what it can: a table's column (a view's where
    /// [`crate::schema::Schema::column_is_stored`] says so), a column of a sub-select or `WITH`
    /// query that keeps a query of its own, or of one pulled up whose expression for it keeps
    /// a column of its own stored rows.
    pub(super) fn column_is_stored(&self, level: usize, item: usize, column: &str) -> bool {
        let source = &self.levels.levels[level].items[item].source;
        match *source {
            Source::Table(table) => {
                let table = &self.levels.tables[table];
                let Some(schema) = self.levels.schema else {
                    return false;
                };
                let own_name = match table.renamed.iter().position(|c| c == column) {
                    Some(n) => match schema.columns(table.namespace.as_deref(), &table.name) {
                        Some(columns) => match columns.get(n) {
                            Some(name) => name.clone(),
                            None => return false,
                        },
                        None => return false,
                    },
                    None => column.to_owned(),
                };
                schema.column_is_stored(table.namespace.as_deref(), &table.name, &own_name)
            }
            Source::Subquery(sub) | Source::Cte(sub) => {
                if !self.may_flatten(sub, Pos::Input) {
                    return true;
                }
                let Some(columns) = item_columns(self.levels, source) else {
                    return false;
                };
                let Some(n) = columns.iter().position(|c| c == column) else {
                    return false;
                };
                let target = self.levels.levels[sub]
                    .fields
                    .get("target_list")
                    .and_then(Value::as_array)
                    .and_then(|list| list.get(n))
                    .and_then(node)
                    .and_then(|(_, target)| target.get("val"));
                target.is_some_and(|expression| self.keeps_column(sub, sub, expression))
            }
            Source::Recursive(_) => true,
            Source::Function => false,
        }
    }
}

/// Whether an operand is a constant PostgreSQL may find NULL when it plans: a `NULL` literal, or
/// a bind parameter (a constant of the statement's values in a plan made for them), cast or not.
fn may_be_null_constant(operand: &Value) -> bool {
    match node(operand) {
        Some(("A_Const" | "AConst", constant)) => {
            constant.get("isnull") == Some(&Value::Bool(true))
        }
        Some(("ParamRef", _)) => true,
        Some(("TypeCast", cast)) => cast.get("arg").is_some_and(may_be_null_constant),
        _ => false,
    }
}
