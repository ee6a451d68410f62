//! What a column reference means, as far as the SQL alone tells: which level's `FROM` item a
//! qualified name resolves to (innermost first, as PostgreSQL resolves it), which columns a
//! sub-select or `WITH` query gives, and which references PostgreSQL may read as a call.
//!
//! PostgreSQL reads `t.f` (and `(t).f`) as the column `f` of `t` when `t` has one, and
//! otherwise as a call of a function `f(t)` (attribute notation). `t.f` on a table or view is a
//! column where the [`Schema`](crate::Schema) says the table has one (through an alias's column
//! names too), and otherwise a *possible call*; on a sub-select or `WITH` query whose columns
//! the SQL names, it is a column when `f` is one of them.

use serde_json::Value;

use crate::levels::{Kind, Level, Levels, Pos, Ref, Source};
use crate::schema::Column;
use crate::tree::{node, text};

/// The level and item a name resolves to, searching from `level` outwards.
pub fn resolve(levels: &Levels, level: usize, name: &str) -> Option<(usize, usize)> {
    levels.chain(level).find_map(|l| {
        levels.levels[l]
            .items
            .iter()
            .rposition(|item| item.visible && item.name == name)
            .map(|item| (l, item))
    })
}

/// The level a reference written in `level` certainly reads a column of, if the SQL says so:
/// a qualified name that resolves, a bare name that is a visible item (a whole-row
/// reference), or a bare name no enclosing query can give.
pub fn reads_level(levels: &Levels, level: usize, r: &Ref) -> Option<usize> {
    if r.selection {
        return None;
    }
    match r.names.as_slice() {
        [single] if single != "*" => match resolve(levels, level, single) {
            Some((found, _)) => Some(found),
            None if !outer_may_give(levels, level, single) => Some(level),
            None => None,
        },
        [qualifier, ..] => resolve(levels, level, qualifier).map(|(found, _)| found),
        [] => None,
    }
}

/// Whether a `FROM` item of `level` itself (hidden ones too: a join's alias hides its tables'
/// names, not their columns) may give a column `name`.
fn level_may_give(levels: &Levels, level: usize, name: &str) -> bool {
    levels.levels[level]
        .items
        .iter()
        .any(|item| match item_columns(levels, &item.source) {
            Some(columns) => columns.iter().any(|c| c == name),
            None => true,
        })
}

/// Whether a query enclosing `level` whose names `level` sees may give a column `name`: one
/// with a `FROM` item whose columns are unknown or include it. A sub-select in `FROM` sees the
/// names of the queries around the one it stands in, and of that one only if it is `LATERAL`.
fn outer_may_give(levels: &Levels, level: usize, name: &str) -> bool {
    let mut at = level;
    while let Some(parent) = levels.levels[at].parent {
        let sees_parent = !(parent.pos == Pos::Input && levels.levels[at].unlateral);
        let gives = |item: &crate::levels::Item| match item_columns(levels, &item.source) {
            Some(columns) => columns.iter().any(|c| c == name),
            None => true,
        };
        if sees_parent && levels.levels[parent.level].items.iter().any(gives) {
            return true;
        }
        at = parent.level;
    }
    false
}

/// A reference PostgreSQL may read as a call of a function (attribute notation).
pub struct PossibleCall<'r> {
    /// The function's name.
    pub function: &'r str,
    /// Why the reference is not known to be a column.
    pub why: String,
    /// How to tell `#[fenced]` the columns of a table its schema does not define.
    pub declare: Option<&'r str>,
}

/// Whether PostgreSQL may read `r`, written in `level`, as a call of a function (attribute
/// notation), and if so the function's name and why it is not known to be a column.
pub fn possible_call<'r>(
    levels: &Levels<'r>,
    level: usize,
    r: &'r Ref,
) -> Option<PossibleCall<'r>> {
    let last = r.names.last()?;
    let call = |(why, declare): (String, Option<&'r str>)| {
        Some(PossibleCall {
            function: last,
            why,
            declare,
        })
    };
    if r.selection {
        // `(x).f` is `x.f` where no query it can see has a column `x`: PostgreSQL then reads
        // `x` as the whole row of the table `x`.
        return match &r.selected_from {
            Some(x) if !level_may_give(levels, level, x) && !outer_may_give(levels, level, x) => {
                qualified(levels, level, x, last).and_then(call)
            }
            _ => call((
                "the value it is selected from is not a table's row the schema knows".to_owned(),
                None,
            )),
        };
    }
    if last == "*" {
        return None;
    }
    match r.names.as_slice() {
        [_] => None,
        [qualifier, column] => qualified(levels, level, qualifier, column).and_then(call),
        _ => call((
            "a name of three parts may select a field of a column".to_owned(),
            None,
        )),
    }
}

/// Whether `qualifier.column`, written in `level`, may be a call: if so, why it is not known to
/// be a column, and how to declare the table where the schema has none of that name.
fn qualified<'l>(
    levels: &Levels<'l>,
    level: usize,
    qualifier: &str,
    column: &str,
) -> Option<(String, Option<&'l str>)> {
    let Some((l, item)) = resolve(levels, level, qualifier) else {
        return Some((format!("`{qualifier}` names no table of the query"), None));
    };
    let source = &levels.levels[l].items[item].source;
    if let Source::Table(table) = *source {
        return match table_column(levels, table, column) {
            Column::Known => None,
            Column::Unknown(why) => Some((why, None)),
            Column::NoRelation(why) => Some((why, levels.schema.and_then(|s| s.declare_hint()))),
        };
    }
    match item_columns(levels, source) {
        Some(columns) if columns.iter().any(|c| c == column) => None,
        Some(_) => Some((format!("`{qualifier}` has no column `{column}`"), None)),
        None => Some((format!("the columns of `{qualifier}` are not known"), None)),
    }
}

/// What the query and the schema say of column `column` of a table the query names.
fn table_column(levels: &Levels, table: usize, column: &str) -> Column {
    let table = &levels.tables[table];
    if table.renamed.iter().any(|c| c == column) {
        return Column::Known;
    }
    match levels.schema {
        // A column renamed by the alias no longer goes by its own name.
        Some(schema) if table.renamed.is_empty() => {
            schema.column(table.namespace.as_deref(), &table.name, column)
        }
        Some(schema) => match schema.columns(table.namespace.as_deref(), &table.name) {
            Some(columns)
                if columns[table.renamed.len().min(columns.len())..]
                    .contains(&column.to_owned()) =>
            {
                Column::Known
            }
            _ => Column::Unknown(format!(
                "the columns of `{}` past those its alias renames are not known",
                table.name
            )),
        },
        None => Column::Unknown(
            "`#[fenced]` was given no schema to tell the table's columns".to_owned(),
        ),
    }
}

/// The columns a `FROM` item gives, where the SQL and the schema name them all.
pub(crate) fn item_columns(levels: &Levels, source: &Source) -> Option<Vec<String>> {
    match *source {
        Source::Subquery(level) => {
            let mut columns = outputs(levels, level)?;
            for (n, name) in levels.levels[level].renamed.iter().enumerate() {
                if let Some(column) = columns.get_mut(n) {
                    column.clone_from(name);
                }
            }
            Some(columns)
        }
        Source::Cte(level) => {
            let cte = levels
                .levels
                .iter()
                .flat_map(|l| l.ctes.iter())
                .find(|c| c.level == level)?;
            let mut columns = outputs(levels, level)?;
            for (n, name) in cte.columns.iter().enumerate() {
                if let Some(column) = columns.get_mut(n) {
                    column.clone_from(name);
                }
            }
            Some(columns)
        }
        Source::Recursive(n) => {
            let declared = &levels.recursive[n].columns;
            (!declared.is_empty()).then(|| declared.clone())
        }
        Source::Table(table) => {
            let table = &levels.tables[table];
            let mut columns = levels
                .schema?
                .columns(table.namespace.as_deref(), &table.name)?;
            for (n, name) in table.renamed.iter().enumerate() {
                if let Some(column) = columns.get_mut(n) {
                    column.clone_from(name);
                }
            }
            Some(columns)
        }
        _ => None,
    }
}

/// The column names a level returns, where every one is known.
pub fn outputs(levels: &Levels, level: usize) -> Option<Vec<String>> {
    let l: &Level = &levels.levels[level];
    match l.kind {
        Kind::SetOp(_) => {
            let left = l.fields.get("larg").and_then(Value::as_object)?;
            outputs(levels, levels.of(left)?)
        }
        Kind::Values => {
            let first = l.fields.get("values_lists")?.as_array()?.first()?;
            let (_, list) = node(first)?;
            let n = list.get("items")?.as_array()?.len();
            Some((1..=n).map(|i| format!("column{i}")).collect())
        }
        Kind::Select => target_names(l.fields.get("target_list")),
        Kind::Update | Kind::Delete | Kind::Insert => {
            let returning = l
                .fields
                .get("returning_clause")
                .and_then(Value::as_object)
                .and_then(|r| r.get("exprs"))
                .or_else(|| l.fields.get("returning_list"));
            target_names(returning)
        }
        Kind::Merge => None,
    }
}

/// The names of a target list, or `None` if one is unknown (a star).
pub fn target_names(list: Option<&Value>) -> Option<Vec<String>> {
    let mut names = Vec::new();
    for item in list.and_then(Value::as_array).into_iter().flatten() {
        let (_, target) = node(item)?;
        let name = text(target, "name");
        if !name.is_empty() {
            names.push(name.to_owned());
            continue;
        }
        names.push(crate::colnames::column_name(target.get("val")).ok()?);
    }
    Some(names)
}

/// The text a reference was written as, for messages: `t.f`, `(…).f`.
pub fn shown(r: &Ref) -> String {
    if r.selection {
        format!("(…).{}", r.names.join("."))
    } else {
        r.names.join(".")
    }
}
