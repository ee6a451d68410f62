//! The name PostgreSQL gives a select-list column written without `AS`: its parser's
//! `FigureColname`, over the raw parse tree. `x` and `t.x` are `x`; `f(..)` is `f`; a cast is its
//! argument's name, else its type's (`'1'::int` is `int4`); `coalesce(..)`, `greatest(..)`,
//! `nullif(..)`, `CASE` (its `ELSE`'s name, else `case`), `ARRAY[..]`, `ROW(..)`, `EXISTS (..)`,
//! `current_date` and their kin their own words; anything else `?column?`.

use serde_json::Value;

use crate::levels::strings;
use crate::tree::enums::EXISTS_SUBLINK;
use crate::tree::{Fields, child, children, int, node, text};

/// `AEXPR_NULLIF`, `ARRAY_SUBLINK`, `EXPR_SUBLINK`, `IS_LEAST`: parse-tree values.
const AEXPR_NULLIF: i64 = 6;
const ARRAY_SUBLINK: i64 = 7;
const EXPR_SUBLINK: i64 = 5;
const IS_LEAST: i64 = 2;

/// A name figured out, and how sure PostgreSQL is of it (a cast's type name is a weak one that
/// a `CASE` replaces with `case`).
type Figured = Option<(String, u8)>;

/// The name of a select-list entry's value: `Err(())` for a star (its columns are not known
/// here), else the name (`?column?` where PostgreSQL figures none).
pub fn column_name(value: Option<&Value>) -> Result<String, ()> {
    let Some((kind, fields)) = value.and_then(node) else {
        return Ok("?column?".to_owned());
    };
    if kind == "ColumnRef" && matches!(children(fields, "fields").last(), Some(("A_Star", _))) {
        return Err(());
    }
    Ok(figure(kind, fields).map_or_else(|| "?column?".to_owned(), |(name, _)| name))
}

fn figure_value(value: Option<&Value>) -> Figured {
    let (kind, fields) = value.and_then(node)?;
    figure(kind, fields)
}

fn word(name: &str) -> Figured {
    Some((name.to_owned(), 2))
}

fn figure(kind: &str, fields: &Fields) -> Figured {
    match kind {
        "ColumnRef" => match children(fields, "fields").last() {
            Some(("String", last)) => word(text(last, "sval")),
            _ => None,
        },
        "A_Indirection" | "AIndirection" => match children(fields, "indirection").last() {
            Some(("String", last)) => word(text(last, "sval")),
            _ => figure_value(fields.get("arg")),
        },
        "FuncCall" => strings(fields.get("funcname")).pop().and_then(|n| word(&n)),
        "A_Expr" | "AExpr" if int(fields, "kind") == AEXPR_NULLIF => word("nullif"),
        "TypeCast" => match figure_value(fields.get("arg")) {
            Some((name, 2)) => Some((name, 2)),
            _ => fields
                .get("type_name")
                .and_then(Value::as_object)
                .and_then(|t| strings(t.get("names")).pop())
                .map(|name| (name, 1)),
        },
        "CollateClause" => figure_value(fields.get("arg")),
        "GroupingFunc" => word("grouping"),
        "SubLink" => match int(fields, "sub_link_type") {
            EXISTS_SUBLINK => word("exists"),
            ARRAY_SUBLINK => word("array"),
            EXPR_SUBLINK => {
                let (_, select) = child(fields, "subselect")?;
                let (_, first) = children(select, "target_list").next()?;
                let name = text(first, "name");
                (!name.is_empty()).then(|| (name.to_owned(), 2))
            }
            _ => None,
        },
        "CaseExpr" => match figure_value(fields.get("defresult")) {
            Some((name, 2)) => Some((name, 2)),
            _ => word("case"),
        },
        "A_ArrayExpr" | "AArrayExpr" => word("array"),
        "RowExpr" => word("row"),
        "CoalesceExpr" => word("coalesce"),
        "MinMaxExpr" => word(if int(fields, "op") == IS_LEAST {
            "least"
        } else {
            "greatest"
        }),
        "SQLValueFunction" | "SqlvalueFunction" => word(match int(fields, "op") {
            1 => "current_date",
            2 | 3 => "current_time",
            4 | 5 => "current_timestamp",
            6 | 7 => "localtime",
            8 | 9 => "localtimestamp",
            10 => "current_role",
            11 => "current_user",
            12 => "user",
            13 => "session_user",
            14 => "current_catalog",
            _ => "current_schema",
        }),
        _ => None,
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    fn names(sql: &str) -> Vec<String> {
        let statements = crate::tree::parse(sql).unwrap();
        children(&statements[0].fields, "target_list")
            .map(|(_, target)| column_name(target.get("val")).unwrap())
            .collect()
    }

    /// Each name as PostgreSQL 15 names the column (checked with `SELECT …` in psql).
    #[test]
    fn columns_are_named_as_postgresql_names_them() {
        assert_eq!(
            names(
                "SELECT t.id, id::bigint, '1'::int, coalesce(a, 0), greatest(a, b), least(a, b),
                        nullif(a, b), CASE WHEN a THEN b END, CASE WHEN a THEN b ELSE c END,
                        ARRAY[1], ROW(1, 2), EXISTS (SELECT 1), (SELECT 1 AS one), (SELECT 1),
                        ARRAY (SELECT 1), count(*), a + 1, current_date, (t).f, 7
                   FROM t"
            ),
            [
                "id",
                "id",
                "int4",
                "coalesce",
                "greatest",
                "least",
                "nullif",
                "case",
                "c",
                "array",
                "row",
                "exists",
                "one",
                "?column?",
                "array",
                "count",
                "?column?",
                "current_date",
                "f",
                "?column?"
            ]
        );
    }
}
