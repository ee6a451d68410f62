//! The types of a call's arguments, as far as the SQL and the schema show them: a literal's
//! (`1` is `integer`, `true` `boolean`; a string literal's type PostgreSQL decides by the
//! candidates, so it is unknown here), a cast's, a column's from the schema, a table's row in
//! attribute notation. Everything else is unknown, which every candidate accepts.

use serde_json::Value;

use crate::levels::{Levels, Source, strings};
use crate::names::{item_columns, resolve};
use crate::routines::{ArgType, Args};
use crate::tree::{Fields, has, node};

/// The arguments of the call `call`, written in `level`.
pub(crate) fn args(levels: &Levels, level: usize, call: &Fields) -> Args {
    let list: Vec<&Value> = call
        .get("args")
        .and_then(Value::as_array)
        .into_iter()
        .flatten()
        .collect();
    let loose = call.get("func_variadic").and_then(Value::as_bool) == Some(true)
        || list
            .iter()
            .any(|arg| matches!(node(arg), Some(("NamedArgExpr", _))));
    Args {
        types: list
            .iter()
            .map(|arg| arg_type(levels, level, arg))
            .collect(),
        loose,
    }
}

/// The type of one expression written in `level`.
pub(crate) fn arg_type(levels: &Levels, level: usize, value: &Value) -> ArgType {
    let Some((kind, fields)) = node(value) else {
        return ArgType::Unknown;
    };
    match kind {
        "A_Const" | "AConst" => constant(fields),
        "TypeCast" => cast(levels, fields),
        "ColumnRef" => column(levels, level, &strings(fields.get("fields"))),
        _ => ArgType::Unknown,
    }
}

fn constant(fields: &Fields) -> ArgType {
    let Some(value) = fields.get("val").and_then(Value::as_object) else {
        return ArgType::Unknown;
    };
    if value.contains_key("Ival") {
        return ArgType::Named("integer".to_owned());
    }
    if value.contains_key("Boolval") {
        return ArgType::Named("boolean".to_owned());
    }
    if let Some(float) = value.get("Fval").and_then(Value::as_object) {
        let text = float.get("fval").and_then(Value::as_str).unwrap_or("");
        let integral = text.parse::<i64>().is_ok();
        return ArgType::Named(if integral { "bigint" } else { "numeric" }.to_owned());
    }
    ArgType::Unknown
}

fn cast(levels: &Levels, fields: &Fields) -> ArgType {
    let Some(type_name) = fields.get("type_name").and_then(Value::as_object) else {
        return ArgType::Unknown;
    };
    if has(type_name, "array_bounds") {
        return ArgType::Unknown;
    }
    let names = strings(type_name.get("names"));
    let known = match names.as_slice() {
        [catalog, name] if catalog == "pg_catalog" => builtin(name),
        [name] => builtin(name).or_else(|| {
            levels
                .schema
                .is_some_and(|s| s.types.contains_key(name.as_str()))
                .then(|| name.clone())
        }),
        _ => None,
    };
    known.map_or(ArgType::Unknown, ArgType::Named)
}

/// `format_type`'s name of a built-in type as the parser writes it.
fn builtin(name: &str) -> Option<String> {
    let name = match name {
        "int2" | "smallint" => "smallint",
        "int4" | "int" | "integer" => "integer",
        "int8" | "bigint" => "bigint",
        "float4" | "real" => "real",
        "float8" => "double precision",
        "numeric" | "decimal" => "numeric",
        "bool" | "boolean" => "boolean",
        "text" => "text",
        "varchar" => "character varying",
        "bpchar" => "character",
        "timestamptz" => "timestamp with time zone",
        "timestamp" => "timestamp without time zone",
        "date" => "date",
        "time" => "time without time zone",
        "timetz" => "time with time zone",
        "interval" => "interval",
        "uuid" => "uuid",
        "json" => "json",
        "jsonb" => "jsonb",
        "bytea" => "bytea",
        "regclass" => "regclass",
        "name" => "name",
        "oid" => "oid",
        _ => return None,
    };
    Some(name.to_owned())
}

/// A column's type from the schema: `t.c` of a table, or a bare `c` that one table of the
/// nearest query that has it gives.
fn column(levels: &Levels, level: usize, names: &[String]) -> ArgType {
    let Some(schema) = levels.schema else {
        return ArgType::Unknown;
    };
    let (table, column) = match names {
        [qualifier, column] => match resolve(levels, level, qualifier) {
            Some((l, item)) => match levels.levels[l].items[item].source {
                Source::Table(table) => (table, column.as_str()),
                _ => return ArgType::Unknown,
            },
            None => return ArgType::Unknown,
        },
        [column] => match bare(levels, level, column) {
            Some(table) => (table, column.as_str()),
            None => return ArgType::Unknown,
        },
        _ => return ArgType::Unknown,
    };
    let table = &levels.tables[table];
    // A column renamed by the alias's column list goes by its new name.
    let own = match table.renamed.iter().position(|c| c == column) {
        Some(n) => schema
            .columns(table.namespace.as_deref(), &table.name)
            .and_then(|columns| columns.get(n).cloned()),
        None if table.renamed.is_empty() => Some(column.to_owned()),
        None => None,
    };
    own.and_then(|own| schema.column_type(table.namespace.as_deref(), &table.name, &own))
        .map_or(ArgType::Unknown, ArgType::Named)
}

/// The table whose column a bare name is, where the nearest query with such a column has one
/// item that gives it, and it is a table.
fn bare(levels: &Levels, level: usize, name: &str) -> Option<usize> {
    for l in levels.chain(level) {
        let mut giving = Vec::new();
        for item in &levels.levels[l].items {
            match item_columns(levels, &item.source) {
                Some(columns) if columns.iter().any(|c| c == name) => giving.push(item.source),
                Some(_) => {}
                None => return None,
            }
        }
        match giving.as_slice() {
            [] => continue,
            [Source::Table(table)] => return Some(*table),
            _ => return None,
        }
    }
    None
}
