//! Statements sent in one `Query` message (the simple query protocol), with their values inlined.
//!
//! sqlx sends a statement with bind parameters as two exchanges (Parse + Sync, then Bind +
//! Execute + Sync), even as an unnamed statement. A transaction-mode pooler may hand the second
//! exchange to another server connection, which fails with "unnamed prepared statement does not
//! exist" (PgBouncer 1.18 does this under load). A single `Query` message is one round trip on one
//! server connection, so the protocol's statements are sent that way, with their values rendered
//! here as SQL that cannot escape its place whatever the server's settings: integers as digits,
//! validated role names as plain literals, and any other text hex-encoded.

use std::fmt::Write;

use crate::Role;

/// A value rendered as SQL.
pub(crate) enum Value<'a> {
    /// A role, whose name is `[a-z][a-z0-9_]*` by construction.
    Role(Role),
    /// Any text, rendered hex-encoded: `convert_from(decode('6162', 'hex'), 'UTF8')`.
    Text(&'a str),
    /// Optional text; `NULL` when absent.
    OptText(Option<&'a str>),
    /// An integer.
    Int(i64),
    /// A boolean.
    Bool(bool),
    /// An optional instant, rendered in RFC 3339 (digits, `-`, `:`, `.`, `T`, `Z` only);
    /// `NULL` when absent.
    OptTime(Option<chrono::DateTime<chrono::Utc>>),
    /// SQL this crate wrote: a column name, or rows already built with [`render`].
    Sql(&'a str),
}

impl Value<'_> {
    fn render(&self, out: &mut String) {
        match self {
            Value::Role(role) => {
                debug_assert!(crate::role::validate(role.as_str()).is_ok());
                write!(out, "'{}'::text", role.as_str()).unwrap();
            }
            Value::Text(text) => {
                out.push_str("convert_from(decode('");
                for byte in text.as_bytes() {
                    write!(out, "{byte:02x}").unwrap();
                }
                out.push_str("', 'hex'), 'UTF8')");
            }
            Value::OptText(None) => out.push_str("NULL::text"),
            Value::OptText(Some(text)) => Value::Text(text).render(out),
            Value::Int(n) => write!(out, "({n})::bigint").unwrap(),
            Value::Bool(b) => out.push_str(if *b { "true" } else { "false" }),
            Value::OptTime(None) => out.push_str("NULL::timestamptz"),
            Value::OptTime(Some(t)) => write!(
                out,
                "'{}'::timestamptz",
                t.to_rfc3339_opts(chrono::SecondsFormat::Micros, true)
            )
            .unwrap(),
            Value::Sql(sql) => out.push_str(sql),
        }
    }
}

/// Replaces each `:name` in `template` with its value. Names are `[a-z_]+`; a name not in
/// `values` is a bug, caught by the statements' tests.
pub(crate) fn render(template: &str, values: &[(&str, Value<'_>)]) -> String {
    let mut out = String::with_capacity(template.len() + 64);
    let mut rest = template;
    while let Some(at) = rest.find(':') {
        out.push_str(&rest[..at]);
        let after = &rest[at + 1..];
        let len = after
            .find(|c: char| !(c.is_ascii_lowercase() || c == '_'))
            .unwrap_or(after.len());
        let name = &after[..len];
        // `::type` casts and `:=` are not markers.
        if name.is_empty() || out.ends_with(':') {
            out.push(':');
            rest = after;
            continue;
        }
        let (_, value) = values
            .iter()
            .find(|(n, _)| *n == name)
            .unwrap_or_else(|| panic!("no value for :{name}"));
        value.render(&mut out);
        rest = &after[len..];
    }
    out.push_str(rest);
    out
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn renders_each_value_so_it_cannot_escape() {
        let sql = render(
            "SELECT :role, :who, :why, :n, x::bigint",
            &[
                ("role", Value::Role(Role::from_static("billing"))),
                ("who", Value::Text("o'brien\\; DROP TABLE x; --")),
                ("why", Value::OptText(None)),
                ("n", Value::Int(-5)),
            ],
        );
        let at = chrono::DateTime::parse_from_rfc3339("2026-12-05T01:00:00.5+01:00").unwrap();
        let times = render(
            ":at, :none, :yes",
            &[
                ("at", Value::OptTime(Some(at.to_utc()))),
                ("none", Value::OptTime(None)),
                ("yes", Value::Bool(true)),
            ],
        );
        assert_eq!(
            times,
            "'2026-12-05T00:00:00.500000Z'::timestamptz, NULL::timestamptz, true"
        );
        assert_eq!(
            sql,
            "SELECT 'billing'::text, convert_from(decode('6f27627269656e5c3b2044524f50205441424c4520783b202d2d', \
             'hex'), 'UTF8'), NULL::text, (-5)::bigint, x::bigint"
        );
    }
}
