//! Checks every send of a `#[fenced]` function: its SQL against the fence rules
//! (`leader_fence_check`), and what is bound to each fence call ([`binds`]).

use std::ops::Range;

use leader_fence_check::{Hints, Schema};
use proc_macro2::Span;
use syn::LitStr;

use super::binds;
use super::parse::Fenced;
use super::sends::{Concatenated, Loose, Sql, SqlSend, Via};
use crate::errors::Errors;

/// Checks every send; every problem is reported at once.
pub fn validate(fenced: &Fenced, schema: Option<&Schema>) -> syn::Result<()> {
    let mut errors = Errors::new();
    errors.extend(fenced.problems.iter().cloned());
    for send in &fenced.sends {
        errors.extend(check_send(send, &fenced.fence_name, fenced.sharded, schema));
    }
    for loose in &fenced.loose {
        errors.extend(check_loose(loose, schema));
    }
    errors.finish()
}

/// A string no recognised send takes: if it parses as a claim, the macro cannot follow what is
/// bound to it, or whether and how it is sent.
fn check_loose(loose: &Loose, schema: Option<&Schema>) -> Vec<syn::Error> {
    let hints = match schema {
        Some(schema) => Hints::default().with_schema(schema),
        None => Hints::default(),
    };
    let checked = leader_fence_check::check_with(&loose.text, &hints);
    if checked.statements == 0 || checked.claims == 0 {
        return Vec::new();
    }
    let place = match (&loose.lit, &loose.concat) {
        (Some(lit), _) => Place::Literal(lit),
        (None, Some(concat)) => Place::Concat(concat),
        (None, None) => Place::Span(loose.span),
    };
    let errors: Vec<syn::Error> = checked
        .errors
        .iter()
        .map(|e| syn::Error::new(place.span(&loose.text, e.at.clone()), &e.message))
        .collect();
    if !errors.is_empty() {
        return errors;
    }
    vec![syn::Error::new(
        place.span(&loose.text, None),
        "this claim is not sent where `#[fenced]` can see what is bound to it\n\
         note: a claim kept in a local, passed to a helper, or sent through a function \
         `#[fenced]` does not know as one of sqlx's is not followed (a `use` outside the \
         function is out of the attribute's sight)\n\
         help: send it where it is written, with `sqlx::query(\"…\")` (or `query_as`, \
         `query_scalar`, also renamed by a `use sqlx::query_as as rows_of;` inside the \
         function) and its `.bind(..)` calls in one chain, or with a `query!` macro",
    )]
}

fn check_send(
    send: &SqlSend,
    fence: &syn::Ident,
    sharded: bool,
    schema: Option<&Schema>,
) -> Vec<syn::Error> {
    let (text, place): (String, Place) = match &send.sql {
        Sql::Literal(lit) => (lit.value(), Place::Literal(lit)),
        Sql::Concat(concat) => (concat.text.clone(), Place::Concat(concat)),
        Sql::File { path, text } => match text {
            Ok(text) => (text.clone(), Place::File(path)),
            Err(why) => {
                return vec![syn::Error::new(
                    path.span(),
                    format!("`#[fenced]` cannot read the claim's SQL file: {why}"),
                )];
            }
        },
        Sql::Unseen(expr) => return vec![not_literal(send, expr)],
        Sql::Missing => {
            return vec![syn::Error::new(
                send.span,
                "a claim must be literal SQL so `#[fenced]` can check its fence: pass the \
                 statement as a string literal",
            )];
        }
    };
    let mut hints = binds::hints(send, fence);
    if let Some(schema) = schema {
        hints = hints.with_schema(schema);
    }
    let checked = leader_fence_check::check_with(&text, &hints);
    let mut errors: Vec<syn::Error> = checked
        .errors
        .iter()
        .map(|e| syn::Error::new(place.span(&text, e.at.clone()), &e.message))
        .collect();
    if checked.statements == 0 && checked.errors.is_empty() {
        errors.push(syn::Error::new(
            place.span(&text, None),
            "the claim's SQL is empty: write the claim statement, with \
             `AND leader_fence($1, $2)` in its WHERE",
        ));
    }
    if send.via == Via::Prepared && checked.statements > 1 {
        errors.push(syn::Error::new(
            place.span(&text, None),
            format!(
                "`{}` prepares one SQL statement, and this SQL has {}: give each statement its \
                 own query",
                send.callee, checked.statements
            ),
        ));
    }
    errors.extend(binds::check(
        send,
        &checked.fences,
        fence,
        sharded,
        |call| place.span(&text, Some(call.at.clone())),
    ));
    errors
}

/// Where a claim's SQL is in the source.
enum Place<'a> {
    Literal(&'a LitStr),
    /// In a file named by this path literal: errors point at the path.
    File(&'a LitStr),
    /// In a `concat!` of literals.
    Concat(&'a Concatenated),
    /// Somewhere without a literal of its own.
    Span(Span),
}

impl Place<'_> {
    /// The span of `at` inside the SQL literal where the compiler can give one (nightly, and a
    /// literal without escapes); else the whole literal. The messages quote the fragment and its
    /// line within the SQL, so the place is clear either way.
    fn span(&self, sql: &str, at: Option<Range<usize>>) -> Span {
        let lit = match self {
            Place::Literal(lit) => lit,
            Place::File(path) => return path.span(),
            Place::Span(span) => return *span,
            Place::Concat(concat) => return concat_span(concat, at),
        };
        let Some(at) = at else {
            return lit.span();
        };
        let source = lit.token().to_string();
        let prefix = if let Some(raw) = source.strip_prefix('r') {
            raw.find('"').map(|q| q + 2)
        } else {
            source.starts_with('"').then_some(1)
        };
        match prefix {
            Some(prefix) if source.get(prefix..prefix + sql.len()) == Some(sql) => lit
                .token()
                .subspan(prefix + at.start..prefix + at.end)
                .unwrap_or_else(|| lit.span()),
            _ => lit.span(),
        }
    }
}

/// The span of `at` in the string literal of a `concat!` it lies in, else the whole call.
fn concat_span(concat: &Concatenated, at: Option<Range<usize>>) -> Span {
    let Some(at) = at else {
        return concat.span;
    };
    let found = concat
        .pieces
        .iter()
        .enumerate()
        .find_map(|(i, (start, lit))| {
            let end = concat
                .pieces
                .get(i + 1)
                .map_or(concat.text.len(), |(next, _)| *next);
            let lit = lit.as_ref()?;
            (*start <= at.start && at.end <= end).then(|| (lit, at.start - start..at.end - start))
        });
    match found {
        Some((lit, within)) => Place::Literal(lit).span(&lit.value(), Some(within)),
        None => concat.span,
    }
}

/// The error for a send whose SQL is not a string literal, with a hint for the usual cases.
fn not_literal(send: &SqlSend, expr: &syn::Expr) -> syn::Error {
    let text = quote::ToTokens::to_token_stream(expr).to_string();
    let why = if text.contains("AssertSqlSafe") {
        "\nnote: `AssertSqlSafe` tells sqlx the SQL was audited, but `#[fenced]` cannot see it"
    } else if text.contains("format !") {
        "\nnote: SQL built at run time cannot be checked at compile time"
    } else if matches!(expr, syn::Expr::Macro(m)
        if m.mac.path.segments.last().is_some_and(|s| s.ident == "concat"))
    {
        "\nnote: `#[fenced]` reads a `concat!` only of literals and `concat!`s of literals"
    } else {
        ""
    };
    let example = match send.callee.strip_suffix('!') {
        Some(name) => format!("{name}!(\"… WHERE … AND leader_fence($1, $2)\", ..)"),
        None => format!(
            "{}(\"… WHERE … AND leader_fence($1, $2)\")",
            send.callee.trim_start_matches('.').trim_end_matches("(..)")
        ),
    };
    syn::Error::new_spanned(
        expr,
        format!(
            "a claim must be literal SQL so `#[fenced]` can check its fence{why}\n\
             help: write the statement as a string literal (or a `concat!` of literals), e.g. \
             `{example}`"
        ),
    )
}
