//! PostgreSQL's parse tree as JSON, and small accessors over it.
//!
//! `pg_query` gives the tree as protobuf structs that also serialize to JSON. The rules walk the
//! JSON: a generic walk over every object and array reaches every node, whatever its kind, so a
//! locking or data-modifying node in a place the rules do not expect is still found.

use serde_json::{Map, Value};

/// The fields of one node.
pub type Fields = Map<String, Value>;

/// One statement of the SQL text: its kind and fields.
pub struct Statement {
    pub kind: String,
    pub fields: Fields,
    /// The statement's own byte range in the SQL text.
    pub text: std::ops::Range<usize>,
}

/// Parses `sql` into its statements, or PostgreSQL's error message.
pub fn parse(sql: &str) -> Result<Vec<Statement>, String> {
    let parsed = pg_query::parse(sql, pg_query::ParserOptions::DEFAULT).map_err(|e| match e {
        pg_query::Error::Parse(message) => message,
        other => other.to_string(),
    })?;
    let tree = serde_json::to_value(&parsed.protobuf).map_err(|e| e.to_string())?;
    let mut statements = Vec::new();
    for raw in tree["stmts"].as_array().into_iter().flatten() {
        if let Some((kind, fields)) = node(&raw["stmt"]) {
            let offset = |name: &str| {
                raw.get(name)
                    .and_then(Value::as_u64)
                    .and_then(|n| usize::try_from(n).ok())
                    .unwrap_or(0)
            };
            let start = offset("stmt_location").min(sql.len());
            // A length of 0 means "to the end of the text".
            let end = match offset("stmt_len") {
                0 => sql.len(),
                len => (start + len).min(sql.len()),
            };
            statements.push(Statement {
                kind: kind.to_owned(),
                fields: fields.clone(),
                text: start..end,
            });
        }
    }
    Ok(statements)
}

/// `(kind, fields)` of a node wrapper `{"node": {"Kind": {…}}}`.
pub fn node(value: &Value) -> Option<(&str, &Fields)> {
    let wrapper = value.as_object()?;
    if wrapper.len() != 1 {
        return None;
    }
    let inner = wrapper.get("node")?.as_object()?;
    let (kind, fields) = inner.iter().next()?;
    Some((kind.as_str(), fields.as_object()?))
}

/// The node in field `name`, if it is one.
pub fn child<'a>(fields: &'a Fields, name: &str) -> Option<(&'a str, &'a Fields)> {
    fields.get(name).and_then(node)
}

/// The nodes of list field `name`.
pub fn children<'a>(fields: &'a Fields, name: &str) -> impl Iterator<Item = (&'a str, &'a Fields)> {
    fields
        .get(name)
        .and_then(Value::as_array)
        .into_iter()
        .flatten()
        .filter_map(node)
}

/// Integer field `name` (enums are integers in the tree), or 0.
pub fn int(fields: &Fields, name: &str) -> i64 {
    fields.get(name).and_then(Value::as_i64).unwrap_or(0)
}

/// Whether field `name` holds anything: a non-empty list or a non-null value.
pub fn has(fields: &Fields, name: &str) -> bool {
    match fields.get(name) {
        None | Some(Value::Null) => false,
        Some(Value::Array(items)) => !items.is_empty(),
        Some(_) => true,
    }
}

/// String field `name`, or "".
pub fn text<'a>(fields: &'a Fields, name: &str) -> &'a str {
    fields.get(name).and_then(Value::as_str).unwrap_or("")
}

/// The byte offset of a node (`location`), where the parser recorded one.
pub fn location(fields: &Fields) -> Option<usize> {
    fields
        .get("location")
        .and_then(Value::as_i64)
        .and_then(|l| usize::try_from(l).ok())
}

/// The dotted name of a function call, lower-cased as PostgreSQL folds it, e.g.
/// `["pg_catalog", "now"]`.
pub fn function_name(call: &Fields) -> Vec<String> {
    children(call, "funcname")
        .filter(|(kind, _)| *kind == "String")
        .map(|(_, s)| text(s, "sval").to_owned())
        .collect()
}

/// Calls `f` on every function call below `fields`, sub-queries included.
pub fn for_each_call(fields: &Fields, f: &mut dyn FnMut(&Fields)) {
    fn visit(value: &Value, f: &mut dyn FnMut(&Fields)) {
        if let Some((kind, fields)) = node(value) {
            if kind == "FuncCall" {
                f(fields);
            }
            return fields.values().for_each(|v| visit(v, f));
        }
        match value {
            Value::Array(items) => items.iter().for_each(|item| visit(item, f)),
            Value::Object(fields) => fields.values().for_each(|v| visit(v, f)),
            _ => {}
        }
    }
    fields.values().for_each(|v| visit(v, f));
}

/// The enum values of the tree that the rules read (PostgreSQL's `nodes/*.h`, as numbered by
/// `pg_query`'s protobuf).
pub mod enums {
    pub const SETOP_NONE: i64 = 1;
    pub const SETOP_UNION: i64 = 2;
    pub const SETOP_INTERSECT: i64 = 3;
    pub const SETOP_EXCEPT: i64 = 4;

    pub const AND_EXPR: i64 = 1;
    pub const OR_EXPR: i64 = 2;
    pub const NOT_EXPR: i64 = 3;

    pub const EXISTS_SUBLINK: i64 = 1;
    pub const ALL_SUBLINK: i64 = 2;
    pub const ANY_SUBLINK: i64 = 3;
    pub const EXPR_SUBLINK: i64 = 5;
    pub const ARRAY_SUBLINK: i64 = 7;

    pub const AEXPR_OP: i64 = 1;
    pub const AEXPR_OP_ANY: i64 = 2;
    pub const AEXPR_OP_ALL: i64 = 3;
    pub const AEXPR_IN: i64 = 7;
    pub const AEXPR_LIKE: i64 = 8;
    pub const AEXPR_ILIKE: i64 = 9;
    pub const AEXPR_BETWEEN: i64 = 11;
    pub const AEXPR_BETWEEN_SYMMETRIC: i64 = 13;

    pub const GROUPING_SET_EMPTY: i64 = 1;
    pub const GROUPING_SET_ROLLUP: i64 = 3;
    pub const GROUPING_SET_CUBE: i64 = 4;
    pub const GROUPING_SET_SETS: i64 = 5;

    pub const JOIN_INNER: i64 = 1;
    pub const JOIN_LEFT: i64 = 2;
    pub const JOIN_FULL: i64 = 3;
    pub const JOIN_RIGHT: i64 = 4;

    pub const MERGE_WHEN_MATCHED: i64 = 1;
    pub const MERGE_WHEN_NOT_MATCHED_BY_SOURCE: i64 = 2;
    pub const MERGE_WHEN_NOT_MATCHED_BY_TARGET: i64 = 3;

    pub const CMD_UPDATE: i64 = 3;
    pub const CMD_INSERT: i64 = 4;
    pub const CMD_DELETE: i64 = 5;
    pub const CMD_NOTHING: i64 = 8;

    pub const ONCONFLICT_UPDATE: i64 = 3;

    pub const LCS_FORKEYSHARE: i64 = 2;
    pub const LCS_FORSHARE: i64 = 3;
    pub const LCS_FORNOKEYUPDATE: i64 = 4;
    pub const LCS_FORUPDATE: i64 = 5;
}

#[cfg(test)]
mod tests {
    use super::enums::*;
    use pg_query::protobuf as pb;

    /// The numbers above are the protobuf's, so a `pg_query` upgrade that renumbers fails here.
    #[test]
    fn enum_values_match_pg_query() {
        assert_eq!(SETOP_NONE, pb::SetOperation::SetopNone as i64);
        assert_eq!(SETOP_UNION, pb::SetOperation::SetopUnion as i64);
        assert_eq!(SETOP_INTERSECT, pb::SetOperation::SetopIntersect as i64);
        assert_eq!(SETOP_EXCEPT, pb::SetOperation::SetopExcept as i64);
        assert_eq!(AND_EXPR, pb::BoolExprType::AndExpr as i64);
        assert_eq!(OR_EXPR, pb::BoolExprType::OrExpr as i64);
        assert_eq!(NOT_EXPR, pb::BoolExprType::NotExpr as i64);
        assert_eq!(EXISTS_SUBLINK, pb::SubLinkType::ExistsSublink as i64);
        assert_eq!(ALL_SUBLINK, pb::SubLinkType::AllSublink as i64);
        assert_eq!(ANY_SUBLINK, pb::SubLinkType::AnySublink as i64);
        assert_eq!(EXPR_SUBLINK, pb::SubLinkType::ExprSublink as i64);
        assert_eq!(ARRAY_SUBLINK, pb::SubLinkType::ArraySublink as i64);
        assert_eq!(AEXPR_OP, pb::AExprKind::AexprOp as i64);
        assert_eq!(AEXPR_OP_ANY, pb::AExprKind::AexprOpAny as i64);
        assert_eq!(AEXPR_OP_ALL, pb::AExprKind::AexprOpAll as i64);
        assert_eq!(AEXPR_IN, pb::AExprKind::AexprIn as i64);
        assert_eq!(AEXPR_LIKE, pb::AExprKind::AexprLike as i64);
        assert_eq!(AEXPR_ILIKE, pb::AExprKind::AexprIlike as i64);
        assert_eq!(
            GROUPING_SET_EMPTY,
            pb::GroupingSetKind::GroupingSetEmpty as i64
        );
        assert_eq!(
            GROUPING_SET_ROLLUP,
            pb::GroupingSetKind::GroupingSetRollup as i64
        );
        assert_eq!(
            GROUPING_SET_CUBE,
            pb::GroupingSetKind::GroupingSetCube as i64
        );
        assert_eq!(
            GROUPING_SET_SETS,
            pb::GroupingSetKind::GroupingSetSets as i64
        );
        assert_eq!(JOIN_INNER, pb::JoinType::JoinInner as i64);
        assert_eq!(JOIN_LEFT, pb::JoinType::JoinLeft as i64);
        assert_eq!(JOIN_FULL, pb::JoinType::JoinFull as i64);
        assert_eq!(JOIN_RIGHT, pb::JoinType::JoinRight as i64);
        assert_eq!(
            MERGE_WHEN_NOT_MATCHED_BY_SOURCE,
            pb::MergeMatchKind::MergeWhenNotMatchedBySource as i64
        );
        assert_eq!(
            LCS_FORKEYSHARE,
            pb::LockClauseStrength::LcsForkeyshare as i64
        );
        assert_eq!(LCS_FORSHARE, pb::LockClauseStrength::LcsForshare as i64);
        assert_eq!(
            LCS_FORNOKEYUPDATE,
            pb::LockClauseStrength::LcsFornokeyupdate as i64
        );
        assert_eq!(LCS_FORUPDATE, pb::LockClauseStrength::LcsForupdate as i64);
    }
}
