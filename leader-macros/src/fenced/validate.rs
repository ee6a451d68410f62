//! The fence rules, checked on each claim's SQL and on the values bound to it.
//!
//! A claim is fenced when `leader_fence($i, $j)` is a top-level `AND` conjunct of the WHERE of
//! the query that selects the claimed rows:
//!
//! * every row-locking query (`SELECT … FOR UPDATE | FOR NO KEY UPDATE | FOR SHARE …`), wherever
//!   it is (a CTE, a sub-select, the top level), carries it in its own WHERE, so a stale leader
//!   cannot even lock rows;
//! * without a row-locking query, the statement's own WHERE (SELECT, UPDATE or DELETE) carries it;
//! * `$i` and `$j` are bound to `<fence>.role()` and `<fence>.token()`.
//!
//! Under `OR`, `NOT` or `CASE` the fence could be bypassed or inverted, so it does not count.
//! sqlparser drops comments and a string is not a call, so neither counts either.

use std::borrow::Cow;
use std::ops::{ControlFlow, Range};

use proc_macro2::Span;
use sqlparser::ast::{
    BinaryOperator, Expr, FunctionArg, FunctionArgExpr, FunctionArguments, ObjectNamePart, Query,
    SetExpr, Spanned, Statement, UnaryOperator, Value, Visit, Visitor, visit_expressions,
};
use sqlparser::dialect::PostgreSqlDialect;
use sqlparser::parser::Parser;
use sqlparser::tokenizer::{Token, Tokenizer};
use syn::{Expr as RustExpr, LitStr};

use super::parse::{Claim, Fenced, SqlArg};

/// One `leader_fence($role, $token)` call that fences a claim: its placeholder numbers.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct FenceCall {
    pub role: usize,
    pub token: usize,
    /// Where the call is in the SQL text (byte range), if known.
    pub at: Option<Range<usize>>,
}

/// A problem in a claim's SQL, with where it is in the SQL text (byte range), if known.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct SqlError {
    pub message: String,
    pub at: Option<Range<usize>>,
}

/// Checks every claim of a `#[fenced]` function: literal SQL, fence placement, fence binds.
pub fn validate(fenced: &Fenced) -> syn::Result<()> {
    let mut errors: Option<syn::Error> = None;
    let mut push = |e: syn::Error| match &mut errors {
        Some(all) => all.combine(e),
        None => errors = Some(e),
    };
    for claim in &fenced.claims {
        if let Err(e) = validate_claim(fenced, claim) {
            push(e);
        }
    }
    errors.map_or(Ok(()), Err)
}

fn validate_claim(fenced: &Fenced, claim: &Claim) -> syn::Result<()> {
    let lit = match &claim.sql {
        SqlArg::Literal(lit) => lit,
        SqlArg::Other(expr) => return Err(not_literal(claim, expr)),
        SqlArg::Missing(span) => {
            return Err(syn::Error::new(
                *span,
                "a claim must be literal SQL so `#[fenced]` can check its fence: pass the \
                 statement as a string literal",
            ));
        }
    };
    let sql = lit.value();
    let fences = check_sql(&sql).map_err(|errors| {
        errors
            .into_iter()
            .map(|e| syn::Error::new(span_in(lit, &sql, e.at), e.message))
            .reduce(|mut all, e| {
                all.combine(e);
                all
            })
            .expect("check_sql reports at least one error")
    })?;
    let mut errors: Option<syn::Error> = None;
    for fence in fences {
        let call = format!("leader_fence(${}, ${})", fence.role, fence.token);
        if claim.binds.len() < fence.role.min(fence.token) {
            // Neither is bound: one error, not two at the same place.
            let how = if claim.is_macro {
                format!(
                    "pass `{0}.role()` as argument {1} and `{0}.token()` as argument {2} after \
                     the SQL",
                    fenced.fence_name, fence.role, fence.token
                )
            } else {
                format!(
                    "add `.bind({0}.role())` as the {1} bind and `.bind({0}.token())` as the {2}",
                    fenced.fence_name,
                    ordinal(fence.role),
                    ordinal(fence.token)
                )
            };
            let e = syn::Error::new(
                span_in(lit, &sql, fence.at.clone()),
                format!("`{call}` is not bound to the fence: {how}"),
            );
            match &mut errors {
                Some(all) => all.combine(e),
                None => errors = Some(e),
            }
            continue;
        }
        for (n, what) in [(fence.role, "role"), (fence.token, "token")] {
            if let Some(message) = check_bind(fenced, claim, &call, n, what) {
                let e = match claim.binds.get(n - 1) {
                    Some(bind) => syn::Error::new_spanned(bind, message),
                    None => syn::Error::new(span_in(lit, &sql, fence.at.clone()), message),
                };
                match &mut errors {
                    Some(all) => all.combine(e),
                    None => errors = Some(e),
                }
            }
        }
    }
    errors.map_or(Ok(()), Err)
}

/// The error for a claim whose SQL is not a string literal, with a hint for the usual cases.
fn not_literal(claim: &Claim, expr: &RustExpr) -> syn::Error {
    let text = quote::ToTokens::to_token_stream(expr).to_string();
    let why = if text.contains("AssertSqlSafe") {
        " (`AssertSqlSafe` tells sqlx the SQL was audited, but `#[fenced]` cannot see it)"
    } else if text.contains("format !") {
        " (SQL built at run time cannot be checked at compile time)"
    } else {
        ""
    };
    let example = if claim.is_macro {
        format!(
            "{}!(\"… WHERE … AND leader_fence($1, $2)\", ..)",
            claim.callee
        )
    } else {
        format!("{}(\"… WHERE … AND leader_fence($1, $2)\")", claim.callee)
    };
    syn::Error::new_spanned(
        expr,
        format!(
            "a claim must be literal SQL so `#[fenced]` can check its fence{why}: write the \
             statement as a string literal, e.g. `{example}`"
        ),
    )
}

/// Checks that placeholder `$n` is bound to `<fence>.role()` / `<fence>.token()`; the message if
/// not.
fn check_bind(fenced: &Fenced, claim: &Claim, call: &str, n: usize, what: &str) -> Option<String> {
    let fence = &fenced.fence_name;
    let wanted = format!("{fence}.{what}()");
    let found = claim.binds.get(n - 1);
    if found.is_some_and(|arg| is_fence_method(arg, fence, what)) {
        return None;
    }
    let (place, how) = if claim.is_macro {
        (
            format!("argument {n} after the SQL"),
            format!("pass `{wanted}` as argument {n} after the SQL"),
        )
    } else {
        (
            format!("{} `.bind(..)`", ordinal(n)),
            format!("make the {} `.bind(..)` `.bind({wanted})`", ordinal(n)),
        )
    };
    let found = match found {
        Some(arg) => format!("the {place} is `{}`", show(arg)),
        None => format!("there is no {place}"),
    };
    Some(format!(
        "`${n}` in `{call}` is the fence's {what} and must be bound to `{wanted}`, but {found}: \
         {how}"
    ))
}

/// Rust code as a person writes it (token streams print with spaces everywhere).
fn show(expr: &RustExpr) -> String {
    let mut text = quote::ToTokens::to_token_stream(expr).to_string();
    for (from, to) in [
        (" :: ", "::"),
        (":: ", "::"),
        (" . ", "."),
        (" (", "("),
        ("( ", "("),
        (" )", ")"),
        (" ,", ","),
        ("& ", "&"),
        ("* ", "*"),
        (" !", "!"),
    ] {
        text = text.replace(from, to);
    }
    text
}

fn ordinal(n: usize) -> String {
    let suffix = match (n % 10, n % 100) {
        (_, 11..=13) => "th",
        (1, _) => "st",
        (2, _) => "nd",
        (3, _) => "rd",
        _ => "th",
    };
    format!("{n}{suffix}")
}

/// Whether `arg` is `fence.role()` (or `.token()`), allowing `&`, `*` and parentheses.
fn is_fence_method(arg: &RustExpr, fence: &syn::Ident, method: &str) -> bool {
    match strip(arg) {
        RustExpr::MethodCall(call) => {
            call.method == method
                && call.args.is_empty()
                && call.turbofish.is_none()
                && matches!(strip(&call.receiver), RustExpr::Path(p) if p.qself.is_none() && p.path.is_ident(fence))
        }
        _ => false,
    }
}

/// `expr` without `&`, `*`, parentheses and invisible groups around it.
fn strip(expr: &RustExpr) -> &RustExpr {
    match expr {
        RustExpr::Reference(r) => strip(&r.expr),
        RustExpr::Unary(u) if matches!(u.op, syn::UnOp::Deref(_)) => strip(&u.expr),
        RustExpr::Paren(p) => strip(&p.expr),
        RustExpr::Group(g) => strip(&g.expr),
        other => other,
    }
}

/// The span of `at` inside the SQL literal, or the literal's span where that cannot be had.
///
/// `Literal::subspan` only works on nightly compilers and only when the literal's source text
/// matches its value byte for byte (no escapes); elsewhere the whole literal is underlined.
fn span_in(lit: &LitStr, sql: &str, at: Option<Range<usize>>) -> Span {
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

/// Checks the fence placement in one claim's SQL; the fence calls that fence it.
pub fn check_sql(sql: &str) -> Result<Vec<FenceCall>, Vec<SqlError>> {
    let statement = parse_one(sql).map_err(|e| vec![e])?;
    let fix = suggested_fix(&statement);
    let fix_binds = "bound to `fence.role()` and `fence.token()`";

    let mut locking = LockingQueries {
        sql,
        statement: &statement,
        fix: &fix,
        fix_binds,
        results: Vec::new(),
    };
    let _ = statement.visit(&mut locking);
    let results = if locking.results.is_empty() {
        vec![check_statement_where(sql, &statement, &fix, fix_binds)]
    } else {
        locking.results
    };

    let mut fences = Vec::new();
    let mut errors = Vec::new();
    for result in results {
        match result {
            Ok(fence) => fences.push(fence),
            Err(e) => errors.push(e),
        }
    }
    if errors.is_empty() {
        Ok(fences)
    } else {
        Err(errors)
    }
}

fn parse_one(sql: &str) -> Result<Statement, SqlError> {
    let sql = lock_strengths_as_sqlparser_knows_them(sql);
    let mut statements = Parser::parse_sql(&PostgreSqlDialect {}, &sql).map_err(|e| SqlError {
        message: format!("the claim's SQL does not parse as PostgreSQL: {e}"),
        at: None,
    })?;
    match statements.len() {
        1 => Ok(statements.remove(0)),
        0 => Err(SqlError {
            message: "the claim's SQL is empty: write the claim statement, with \
                      `AND leader_fence($1, $2)` in its WHERE"
                .into(),
            at: None,
        }),
        _ => Err(SqlError {
            message: "a claim is one SQL statement: split the others into their own queries".into(),
            at: None,
        }),
    }
}

/// sqlparser 0.64 knows `FOR UPDATE` and `FOR SHARE` but not PostgreSQL's weaker
/// `FOR NO KEY UPDATE` and `FOR KEY SHARE`. They lock rows just the same, so they are read as
/// the former, by blanking `NO KEY` / `KEY` with spaces, which keeps every byte offset.
fn lock_strengths_as_sqlparser_knows_them(sql: &str) -> Cow<'_, str> {
    let Ok(tokens) = Tokenizer::new(&PostgreSqlDialect {}, sql).tokenize_with_location() else {
        // The parser reports the same error.
        return Cow::Borrowed(sql);
    };
    let words: Vec<(String, sqlparser::tokenizer::Span)> = tokens
        .into_iter()
        .filter_map(|t| match t.token {
            Token::Word(w) if w.quote_style.is_none() => {
                Some((w.value.to_ascii_uppercase(), t.span))
            }
            Token::Whitespace(_) => None,
            _ => Some((String::new(), t.span)),
        })
        .collect();
    let mut blank = Vec::new();
    for (i, window) in words.windows(3).enumerate() {
        let w = |k: usize| window[k].0.as_str();
        if w(0) == "FOR" && w(1) == "KEY" && w(2) == "SHARE" {
            blank.push(window[1].1);
        }
        if w(0) == "FOR"
            && w(1) == "NO"
            && w(2) == "KEY"
            && words.get(i + 3).is_some_and(|n| n.0 == "UPDATE")
        {
            blank.push(window[1].1);
            blank.push(window[2].1);
        }
    }
    if blank.is_empty() {
        return Cow::Borrowed(sql);
    }
    let mut bytes = sql.as_bytes().to_vec();
    for span in blank {
        if let Some(range) = sql_range(sql, span) {
            bytes[range].fill(b' ');
        }
    }
    Cow::Owned(String::from_utf8(bytes).expect("only ASCII keywords were blanked"))
}

/// The fence to suggest: the placeholders of a (misplaced) fence call if the statement has one,
/// else the first two placeholder numbers it does not use.
fn suggested_fix(statement: &Statement) -> String {
    let mut existing = None;
    let mut max = 0;
    let _ = visit_expressions(statement, |expr: &Expr| {
        if existing.is_none() && is_fence_call(expr) {
            existing = fence_placeholders(expr);
        }
        if let Some(n) = placeholder_number(expr) {
            max = max.max(n);
        }
        ControlFlow::<()>::Continue(())
    });
    let (role, token) = existing.unwrap_or((max + 1, max + 2));
    format!("AND leader_fence(${role}, ${token})")
}

/// Visits every query of the statement and checks each row-locking one.
struct LockingQueries<'a> {
    sql: &'a str,
    statement: &'a Statement,
    fix: &'a str,
    fix_binds: &'a str,
    results: Vec<Result<FenceCall, SqlError>>,
}

impl Visitor for LockingQueries<'_> {
    type Break = ();

    fn pre_visit_query(&mut self, query: &Query) -> ControlFlow<()> {
        if query.locks.is_empty() {
            return ControlFlow::Continue(());
        }
        let result = match query.body.as_ref() {
            SetExpr::Select(select) => check_where(
                self.sql,
                select.selection.as_ref(),
                Place::Locking {
                    statement: self.statement,
                },
                query.span(),
                self.fix,
                self.fix_binds,
            ),
            _ => Err(SqlError {
                message: "a row-locking query must be a plain `SELECT … WHERE … FOR UPDATE`: \
                          write it as one SELECT so its WHERE can carry the fence"
                    .into(),
                at: sql_range(self.sql, query.span()),
            }),
        };
        self.results.push(result);
        ControlFlow::Continue(())
    }
}

/// Without a row-locking query, the statement's own WHERE must carry the fence.
fn check_statement_where(
    sql: &str,
    statement: &Statement,
    fix: &str,
    fix_binds: &str,
) -> Result<FenceCall, SqlError> {
    let unsupported = || SqlError {
        message: format!(
            "a claim is a SELECT, UPDATE or DELETE that selects rows with a fenced WHERE: write \
             it as one, or select the rows in a `SELECT … WHERE … {fix} FOR UPDATE SKIP LOCKED` \
             sub-query"
        ),
        at: None,
    };
    let selection = match statement {
        Statement::Query(query) => match query.body.as_ref() {
            SetExpr::Select(select) => select.selection.as_ref(),
            SetExpr::Update(Statement::Update(update)) => update.selection.as_ref(),
            SetExpr::Delete(Statement::Delete(delete)) => delete.selection.as_ref(),
            _ => return Err(unsupported()),
        },
        Statement::Update(update) => update.selection.as_ref(),
        Statement::Delete(delete) => delete.selection.as_ref(),
        _ => return Err(unsupported()),
    };
    check_where(
        sql,
        selection,
        Place::Statement,
        statement.span(),
        fix,
        fix_binds,
    )
}

/// Which WHERE is being checked.
#[derive(Clone, Copy)]
enum Place<'a> {
    /// A row-locking query's WHERE; the statement is searched for a misplaced fence.
    Locking { statement: &'a Statement },
    /// The statement's own WHERE (no row-locking query).
    Statement,
}

/// Checks that `selection` has `leader_fence($i, $j)` as a top-level AND conjunct.
fn check_where(
    sql: &str,
    selection: Option<&Expr>,
    place: Place,
    owner: sqlparser::tokenizer::Span,
    fix: &str,
    fix_binds: &str,
) -> Result<FenceCall, SqlError> {
    let mut conjuncts = Vec::new();
    if let Some(selection) = selection {
        split_and(selection, &mut conjuncts);
    }
    if let Some(call) = conjuncts.iter().find(|e| is_fence_call(e)) {
        return fence_args(sql, call);
    }

    let which = match place {
        Place::Locking { .. } => "the WHERE of the row-locking query",
        Place::Statement => "the statement's WHERE",
    };
    // The fence is in this WHERE, but not as a top-level AND conjunct.
    if let Some(selection) = selection
        && let Some((under, call)) = find_fence(selection, None)
    {
        let why = match under {
            Some("OR") => "the fence is under OR, so rows can match without it",
            Some("NOT") => "the fence is under NOT, which turns it inside out",
            Some("CASE") => "the fence is inside CASE, so some rows can skip it",
            _ => "the fence is nested inside another expression, where it may not filter rows",
        };
        return Err(SqlError {
            message: format!(
                "{why}: make `leader_fence(..)` a top-level AND conjunct of {which}, as in \
                 `WHERE (<other conditions>) {fix}`"
            ),
            at: call_range(sql, call),
        });
    }
    let at = selection.map_or_else(|| sql_range(sql, owner), |s| sql_range(sql, s.span()));
    if let Place::Locking { statement } = place
        && let Some(elsewhere) = first_fence_call(statement)
    {
        return Err(SqlError {
            message: format!(
                "the fence must be in the row-locking query's own WHERE, not elsewhere in the \
                 statement: a stale leader must not even lock rows. Move it into the \
                 `SELECT … FOR UPDATE`: `WHERE … {fix}`, {fix_binds}"
            ),
            at: call_range(sql, elsewhere).or(at),
        });
    }
    let hidden = if sql.to_ascii_lowercase().contains("leader_fence") {
        " (`leader_fence` appears only in a comment or a string, which fences nothing)"
    } else {
        ""
    };
    Err(SqlError {
        message: format!("claim query has no fence{hidden}: add `{fix}` to {which}, {fix_binds}"),
        at,
    })
}

/// The top-level AND conjuncts of `expr`, looking through parentheses.
fn split_and<'e>(expr: &'e Expr, out: &mut Vec<&'e Expr>) {
    match expr {
        Expr::BinaryOp {
            left,
            op: BinaryOperator::And,
            right,
        } => {
            split_and(left, out);
            split_and(right, out);
        }
        Expr::Nested(inner) => split_and(inner, out),
        other => out.push(other),
    }
}

fn is_fence_call(expr: &Expr) -> bool {
    match expr {
        Expr::Function(function) => matches!(
            function.name.0.last(),
            Some(ObjectNamePart::Identifier(ident)) if ident.value.eq_ignore_ascii_case("leader_fence")
        ),
        _ => false,
    }
}

/// Finds a fence call inside `expr`, with the first OR / NOT / CASE (or other expression) above
/// it, and the call's span.
fn find_fence(
    expr: &Expr,
    under: Option<&'static str>,
) -> Option<(Option<&'static str>, sqlparser::tokenizer::Span)> {
    if is_fence_call(expr) {
        return Some((under, expr.span()));
    }
    let here = match expr {
        Expr::BinaryOp {
            op: BinaryOperator::And,
            ..
        }
        | Expr::Nested(_) => None,
        Expr::BinaryOp {
            op: BinaryOperator::Or,
            ..
        } => Some("OR"),
        Expr::UnaryOp {
            op: UnaryOperator::Not,
            ..
        } => Some("NOT"),
        Expr::Case { .. } => Some("CASE"),
        _ => Some("other"),
    };
    let under = under.or(here);
    match expr {
        Expr::BinaryOp { left, right, .. } => {
            find_fence(left, under).or_else(|| find_fence(right, under))
        }
        Expr::UnaryOp { expr, .. } | Expr::Nested(expr) => find_fence(expr, under),
        other => first_fence_call(other).map(|span| (under, span)),
    }
}

/// The span of the first fence call anywhere in the statement.
fn first_fence_call<V: Visit>(node: &V) -> Option<sqlparser::tokenizer::Span> {
    let mut found = None;
    let _ = visit_expressions(node, |expr: &Expr| {
        if is_fence_call(expr) {
            found = Some(expr.span());
            return ControlFlow::Break(());
        }
        ControlFlow::Continue(())
    });
    found
}

/// The placeholders of a `leader_fence($i, $j)` call.
fn fence_args(sql: &str, call: &Expr) -> Result<FenceCall, SqlError> {
    let Expr::Function(function) = call else {
        unreachable!("is_fence_call checked it is a function");
    };
    let at = call_range(sql, call.span());
    let args: Vec<&Expr> = match &function.args {
        FunctionArguments::List(list) => list
            .args
            .iter()
            .filter_map(|arg| match arg {
                FunctionArg::Unnamed(FunctionArgExpr::Expr(e)) => Some(e),
                _ => None,
            })
            .collect(),
        _ => Vec::new(),
    };
    let count = match &function.args {
        FunctionArguments::List(list) => list.args.len(),
        _ => 0,
    };
    if count != 2 || args.len() != 2 {
        return Err(SqlError {
            message: "`leader_fence` takes the fence's role and token: write \
                      `leader_fence($1, $2)`, bound to `fence.role()` and `fence.token()`"
                .into(),
            at,
        });
    }
    match (placeholder_number(args[0]), placeholder_number(args[1])) {
        (Some(role), Some(token)) => Ok(FenceCall { role, token, at }),
        (role, _) => {
            let bad = if role.is_none() { args[0] } else { args[1] };
            Err(SqlError {
                message: format!(
                    "the fence's role and token must be bind parameters taken from the fence, \
                     not `{bad}`: write `leader_fence($1, $2)` and bind `fence.role()` and \
                     `fence.token()`"
                ),
                at: sql_range(sql, bad.span()).or(at),
            })
        }
    }
}

/// `(i, j)` for `leader_fence($i, $j)`.
fn fence_placeholders(call: &Expr) -> Option<(usize, usize)> {
    let Expr::Function(function) = call else {
        return None;
    };
    let FunctionArguments::List(list) = &function.args else {
        return None;
    };
    match list.args.as_slice() {
        [
            FunctionArg::Unnamed(FunctionArgExpr::Expr(role)),
            FunctionArg::Unnamed(FunctionArgExpr::Expr(token)),
        ] => Some((placeholder_number(role)?, placeholder_number(token)?)),
        _ => None,
    }
}

fn placeholder_number(expr: &Expr) -> Option<usize> {
    match expr {
        Expr::Value(v) => match &v.value {
            Value::Placeholder(p) => p.strip_prefix('$')?.parse().ok().filter(|&n| n > 0),
            _ => None,
        },
        Expr::Nested(inner) => placeholder_number(inner),
        Expr::Cast { expr, .. } => placeholder_number(expr),
        _ => None,
    }
}

/// The byte range of a function call: sqlparser's span of a call ends at its last argument, so
/// extend it over the closing parenthesis.
fn call_range(sql: &str, span: sqlparser::tokenizer::Span) -> Option<Range<usize>> {
    let range = sql_range(sql, span)?;
    let rest = &sql[range.end..];
    let close = rest.len() - rest.trim_start().len();
    if rest[close..].starts_with(')') {
        Some(range.start..range.end + close + 1)
    } else {
        Some(range)
    }
}

/// Converts a sqlparser span (1-based lines and character columns) to a byte range of `sql`.
fn sql_range(sql: &str, span: sqlparser::tokenizer::Span) -> Option<Range<usize>> {
    let offset = |line: u64, column: u64| -> Option<usize> {
        if line == 0 || column == 0 {
            return None;
        }
        let mut start = 0;
        for _ in 1..line {
            start += sql[start..].find('\n')? + 1;
        }
        let rest = &sql[start..];
        let col = usize::try_from(column - 1).ok()?;
        match rest.char_indices().nth(col) {
            Some((i, _)) => Some(start + i),
            None if rest.chars().count() == col => Some(start + rest.len()),
            None => None,
        }
    };
    let start = offset(span.start.line, span.start.column)?;
    let end = offset(span.end.line, span.end.column)?;
    (start < end).then_some(start..end)
}

#[cfg(test)]
mod tests {
    use super::*;

    fn ok(sql: &str) -> Vec<(usize, usize)> {
        match check_sql(sql) {
            Ok(fences) => fences.iter().map(|f| (f.role, f.token)).collect(),
            Err(e) => panic!("expected {sql:?} to pass, got {e:#?}"),
        }
    }

    fn err(sql: &str) -> String {
        match check_sql(sql) {
            Ok(fences) => panic!("expected {sql:?} to fail, got {fences:?}"),
            Err(e) => e
                .iter()
                .map(|e| e.message.clone())
                .collect::<Vec<_>>()
                .join("\n"),
        }
    }

    #[test]
    fn cte_claim() {
        let sql = "WITH c AS (SELECT id FROM outbox WHERE status = 'pending' \
                   AND leader_fence($1, $2) ORDER BY id LIMIT 10 FOR UPDATE SKIP LOCKED) \
                   UPDATE outbox o SET status = 'sending' FROM c WHERE o.id = c.id RETURNING o.id";
        assert_eq!(ok(sql), vec![(1, 2)]);
    }

    #[test]
    fn update_with_locking_sub_select() {
        let sql = "UPDATE outbox SET status = 'sending' WHERE id IN (SELECT id FROM outbox \
                   WHERE status = 'pending' AND leader_fence($2, $3) LIMIT $1 \
                   FOR UPDATE SKIP LOCKED) RETURNING id";
        assert_eq!(ok(sql), vec![(2, 3)]);
    }

    #[test]
    fn top_level_locking_select() {
        assert_eq!(
            ok("SELECT id FROM t WHERE leader_fence($1, $2) AND a = 1 FOR UPDATE"),
            vec![(1, 2)]
        );
        assert_eq!(
            ok("SELECT id FROM t WHERE a AND (b AND leader_fence($1, $2)) FOR NO KEY UPDATE"),
            vec![(1, 2)]
        );
        assert_eq!(
            ok("SELECT id FROM t WHERE leader_fence($1::text, $2::bigint) FOR SHARE"),
            vec![(1, 2)]
        );
    }

    #[test]
    fn direct_update_and_delete_and_select() {
        assert_eq!(
            ok(
                "UPDATE jobs SET owner = $3 WHERE due <= now() AND leader_fence($1, $2) RETURNING id"
            ),
            vec![(1, 2)]
        );
        assert_eq!(
            ok("DELETE FROM jobs WHERE id = $3 AND LEADER_FENCE($1, $2)"),
            vec![(1, 2)]
        );
        assert_eq!(
            ok("SELECT id FROM jobs WHERE leader_fence($1, $2)"),
            vec![(1, 2)]
        );
        assert_eq!(
            ok("WITH x AS (SELECT 1) DELETE FROM jobs WHERE leader_fence($1, $2) RETURNING id"),
            vec![(1, 2)]
        );
    }

    #[test]
    fn comments_are_fine_around_a_real_fence() {
        let sql = "-- claim the next batch\nSELECT id FROM t -- rows\nWHERE a = 1\n  \
                   AND leader_fence($1, $2) -- the fence\nFOR UPDATE SKIP LOCKED";
        assert_eq!(ok(sql), vec![(1, 2)]);
    }

    #[test]
    fn every_locking_query_needs_the_fence() {
        let sql = "WITH a AS (SELECT id FROM t WHERE leader_fence($1, $2) FOR UPDATE), \
                   b AS (SELECT id FROM u WHERE leader_fence($1, $2) FOR UPDATE SKIP LOCKED) \
                   SELECT * FROM a, b";
        assert_eq!(ok(sql), vec![(1, 2), (1, 2)]);
        let sql = "WITH a AS (SELECT id FROM t WHERE leader_fence($1, $2) FOR UPDATE), \
                   b AS (SELECT id FROM u WHERE x = 1 FOR UPDATE SKIP LOCKED) \
                   SELECT * FROM a, b";
        assert!(err(sql).contains("must be in the row-locking query's own WHERE"));
    }

    #[test]
    fn missing_fence() {
        let e = err("UPDATE jobs SET a = 1 WHERE id = $1");
        assert!(
            e.starts_with("claim query has no fence: add `AND leader_fence($2, $3)`"),
            "{e}"
        );
        assert!(e.contains("the statement's WHERE"), "{e}");
        let e = err("SELECT id FROM jobs FOR UPDATE SKIP LOCKED");
        assert!(
            e.contains(
                "has no fence: add `AND leader_fence($1, $2)` to the WHERE of the row-locking query"
            ),
            "{e}"
        );
        let e = err("DELETE FROM jobs");
        assert!(e.contains("has no fence"), "{e}");
    }

    #[test]
    fn fence_under_or_not_case() {
        assert!(
            err("SELECT id FROM t WHERE a = 1 OR leader_fence($1, $2) FOR UPDATE")
                .starts_with("the fence is under OR")
        );
        assert!(
            err("SELECT id FROM t WHERE a = 1 AND (b OR (c AND leader_fence($1, $2))) FOR UPDATE")
                .starts_with("the fence is under OR")
        );
        assert!(
            err("UPDATE t SET a = 1 WHERE NOT leader_fence($1, $2)")
                .starts_with("the fence is under NOT")
        );
        assert!(
            err("SELECT id FROM t WHERE CASE WHEN a THEN leader_fence($1, $2) ELSE true END FOR UPDATE")
                .starts_with("the fence is inside CASE")
        );
        assert!(
            err("SELECT id FROM t WHERE leader_fence($1, $2) = true FOR UPDATE")
                .starts_with("the fence is nested")
        );
    }

    #[test]
    fn fence_only_in_outer_statement() {
        let e = err("UPDATE t SET a = 1 WHERE leader_fence($1, $2) AND id IN \
                     (SELECT id FROM t WHERE b FOR UPDATE SKIP LOCKED)");
        assert!(
            e.starts_with("the fence must be in the row-locking query's own WHERE"),
            "{e}"
        );
        let e = err(
            "WITH c AS (SELECT id FROM t FOR UPDATE) UPDATE t SET a = 1 FROM c \
                     WHERE t.id = c.id AND leader_fence($1, $2)",
        );
        assert!(
            e.starts_with("the fence must be in the row-locking query's own WHERE"),
            "{e}"
        );
    }

    #[test]
    fn fence_in_comment_or_string() {
        let e = err("UPDATE t SET a = 1 WHERE id = 1 -- AND leader_fence($1, $2)");
        assert!(e.contains("appears only in a comment or a string"), "{e}");
        let e = err("UPDATE t SET a = 1 WHERE id = 1 /* leader_fence($1, $2) */");
        assert!(e.contains("appears only in a comment or a string"), "{e}");
        let e =
            err("UPDATE t SET a = 'leader_fence($1, $2)' WHERE note = 'AND leader_fence($1, $2)'");
        assert!(e.contains("appears only in a comment or a string"), "{e}");
    }

    #[test]
    fn literal_role_or_token() {
        let e = err("UPDATE t SET a = 1 WHERE leader_fence('billing', $1)");
        assert!(
            e.contains("must be bind parameters taken from the fence, not `'billing'`"),
            "{e}"
        );
        let e = err("UPDATE t SET a = 1 WHERE leader_fence($1, 42)");
        assert!(e.contains("not `42`"), "{e}");
        let e = err("UPDATE t SET a = 1 WHERE leader_fence($1)");
        assert!(e.contains("takes the fence's role and token"), "{e}");
    }

    #[test]
    fn parse_errors_and_other_statements() {
        let e = err("UPDATE t SET WHERE");
        assert!(
            e.starts_with("the claim's SQL does not parse as PostgreSQL: "),
            "{e}"
        );
        assert!(err("").contains("empty"));
        assert!(err("SELECT 1; SELECT 2").contains("one SQL statement"));
        assert!(err("INSERT INTO t VALUES (1)").contains("a claim is a SELECT, UPDATE or DELETE"));
        assert!(
            err("SELECT id FROM t WHERE leader_fence($1,$2) UNION SELECT id FROM u WHERE leader_fence($1,$2)")
                .contains("a claim is a SELECT, UPDATE or DELETE")
        );
    }

    #[test]
    fn insert_select_locking() {
        assert_eq!(
            ok("INSERT INTO log (id) SELECT id FROM t WHERE leader_fence($1, $2) FOR UPDATE"),
            vec![(1, 2)]
        );
    }

    #[test]
    fn several_problems_are_all_reported() {
        let result = check_sql(
            "WITH a AS (SELECT id FROM t WHERE x OR leader_fence($1, $2) FOR UPDATE), \
             b AS (SELECT id FROM u WHERE leader_fence('r', 1) FOR UPDATE) SELECT * FROM a, b",
        );
        assert_eq!(result.unwrap_err().len(), 2);
    }

    #[test]
    fn ranges_point_at_the_fence() {
        let sql = "SELECT id FROM t\nWHERE a OR leader_fence($1, $2) FOR UPDATE";
        let e = check_sql(sql).unwrap_err();
        let at = e[0].at.clone().expect("a location");
        assert_eq!(&sql[at], "leader_fence($1, $2)");
    }

    #[test]
    fn weaker_lock_strengths() {
        assert_eq!(
            ok("SELECT id FROM t WHERE leader_fence($1, $2) FOR NO KEY UPDATE SKIP LOCKED"),
            vec![(1, 2)]
        );
        assert_eq!(
            ok("SELECT id FROM t WHERE leader_fence($1, $2) FOR KEY SHARE"),
            vec![(1, 2)]
        );
        let e = err("UPDATE t SET a = 'FOR NO KEY UPDATE' WHERE id IN \
                     (SELECT id FROM t WHERE b FOR NO KEY UPDATE)");
        assert!(e.contains("has no fence"), "{e}");
    }

    #[test]
    fn placeholders() {
        let fix = |sql: &str| suggested_fix(&parse_one(sql).unwrap());
        assert_eq!(
            fix("SELECT 1 FROM t WHERE a = $1 AND b = $12"),
            "AND leader_fence($13, $14)"
        );
        assert_eq!(
            fix("SELECT 1 FROM t WHERE a = '$7' -- $9"),
            "AND leader_fence($1, $2)"
        );
        assert_eq!(
            fix("SELECT 1 FROM t WHERE a OR leader_fence($4, $5)"),
            "AND leader_fence($4, $5)"
        );
        assert_eq!(ordinal(1), "1st");
        assert_eq!(ordinal(2), "2nd");
        assert_eq!(ordinal(3), "3rd");
        assert_eq!(ordinal(11), "11th");
        assert_eq!(ordinal(22), "22nd");
    }
}
