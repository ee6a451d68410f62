//! How the pieces of a send look in the syntax tree: sqlx's query constructors and macros
//! (under their own names or a `use` alias), `.bind(..)` chains, the SQL argument (a literal, a
//! `concat!` of literals, a const's name) and the bindings a pattern makes. The send finder
//! ([`super`]) walks the body; these say what each node it meets is.

use std::path::PathBuf;

use proc_macro2::{TokenStream, TokenTree};
use syn::spanned::Spanned;
use syn::visit::{self, Visit};
use syn::{Expr, ExprCall, ExprMethodCall, Ident, Macro, Pat};

use super::sqlx_api;
use super::{Concatenated, Sql};
use crate::fenced::parse::macro_exprs;

/// sqlx's query constructor called `name`.
pub(super) fn constructor(name: &str) -> Option<&'static str> {
    sqlx_api::query_fn(name).map(sqlx_api::Api::name)
}

/// The names a `use` tree gives sqlx's query constructors: `use sqlx::query_as as rows_of;`,
/// `use sqlx::{query as sql, Row};`. `in_sqlx` tells whether the tree is below `sqlx::`.
pub(super) fn sqlx_aliases(
    tree: &syn::UseTree,
    in_sqlx: bool,
    out: &mut Vec<(Ident, &'static str)>,
) {
    match tree {
        syn::UseTree::Path(path) if !in_sqlx && path.ident == "sqlx" => {
            sqlx_aliases(&path.tree, true, out);
        }
        syn::UseTree::Rename(rename) if in_sqlx => {
            if let Some(name) = constructor(&rename.ident.to_string()) {
                out.push((rename.rename.clone(), name));
            }
        }
        syn::UseTree::Group(group) => {
            for tree in &group.items {
                sqlx_aliases(tree, in_sqlx, out);
            }
        }
        _ => {}
    }
}

/// `query_as` for a call of one of sqlx's query macros.
pub(super) fn query_macro_name(mac: &Macro) -> Option<String> {
    let name = mac.path.segments.last()?.ident.to_string();
    sqlx_api::query_macro_by_name(&name).map(|_| name)
}

/// `QueryBuilder` for `QueryBuilder::new(..)` and its other constructors.
pub(super) fn builder_name(call: &ExprCall) -> Option<&'static str> {
    let Expr::Path(p) = &*call.func else {
        return None;
    };
    p.path
        .segments
        .iter()
        .any(|s| s.ident == "QueryBuilder")
        .then_some("QueryBuilder")
}

/// The types of the standard library and tokio whose constructors a body calls by path with
/// the arity of a sqlx entry (`Box::new(x)` has `QueryBuilder::new`'s): never sqlx's.
const NOT_SQLX_TYPES: [&str; 20] = [
    "Box",
    "Arc",
    "Rc",
    "Weak",
    "Mutex",
    "RwLock",
    "Cell",
    "RefCell",
    "OnceCell",
    "OnceLock",
    "Pin",
    "Semaphore",
    "Barrier",
    "Wrapping",
    "Reverse",
    "ManuallyDrop",
    "Cursor",
    "BufReader",
    "BufWriter",
    "AtomicBool",
];

/// Whether a call by path is surely not sqlx's: its path starts at `std`, `core`, `alloc` or
/// `tokio`, or names one of [`NOT_SQLX_TYPES`] (or an atomic integer) before the function. A
/// call by path is otherwise matched against sqlx's API by its last segment and its arity, so
/// that a type alias or a generic parameter standing for a sqlx type is caught.
pub(super) fn surely_not_sqlx(func: &Expr) -> bool {
    let Expr::Path(p) = func else {
        return false;
    };
    let segments: Vec<String> = p
        .path
        .segments
        .iter()
        .map(|s| s.ident.to_string())
        .collect();
    let root = p.path.leading_colon.is_none() && p.qself.is_none();
    match segments.as_slice() {
        [first, _, ..] if root && ["std", "core", "alloc", "tokio"].contains(&first.as_str()) => {
            true
        }
        [.., owner, _] => {
            NOT_SQLX_TYPES.contains(&owner.as_str())
                || (owner.starts_with("Atomic") && owner.len() > "Atomic".len())
        }
        _ => false,
    }
}

/// `Executor` for `sqlx::Executor::execute`: the segment before the last.
pub(super) fn owner_segment(func: &Expr) -> Option<String> {
    let Expr::Path(p) = func else {
        return None;
    };
    let segments: Vec<&syn::PathSegment> = p.path.segments.iter().collect();
    match segments.as_slice() {
        [.., owner, _] => Some(owner.ident.to_string()),
        _ => None,
    }
}

/// Whether `expr` is SQL the macro reads: a string literal or a `concat!` of literals.
pub(super) fn is_literal_sql(expr: &Expr) -> bool {
    match strip(expr) {
        Expr::Lit(syn::ExprLit {
            lit: syn::Lit::Str(_),
            ..
        }) => true,
        Expr::Macro(m) => is_concat(&m.mac) && concatenated(&m.mac).is_some(),
        _ => false,
    }
}

/// The statement a send is given, seen through `Some(..)`, `SqlStr::from_static(..)` and
/// `.into_sql_str()`, which keep its text; `None` for `None` (no statement: nothing to check).
pub(super) fn statement_of(arg: &Expr) -> Option<&Expr> {
    match strip(arg) {
        Expr::Path(p) if p.path.is_ident("None") => None,
        Expr::Call(call)
            if call.args.len() == 1
                && last_segment(&call.func)
                    .is_some_and(|name| name == "Some" || name == "from_static") =>
        {
            statement_of(call.args.first().expect("one argument"))
        }
        Expr::MethodCall(call) if call.method == "into_sql_str" && call.args.is_empty() => {
            statement_of(&call.receiver)
        }
        _ => Some(arg),
    }
}

pub(super) fn is_bind(method: &ExprMethodCall) -> bool {
    method.method == "bind" || method.method == "try_bind"
}

/// Whether a chain's value is still the query (it was not sent: no `Executor` method, no
/// `.await`, no `?`).
pub(super) fn holds_query(expr: &Expr) -> bool {
    match expr {
        Expr::MethodCall(call) => {
            !sqlx_api::sends_named(&call.method.to_string()) && holds_query(&call.receiver)
        }
        Expr::Paren(p) => holds_query(&p.expr),
        Expr::Group(g) => holds_query(&g.expr),
        Expr::Await(_) | Expr::Try(_) => false,
        _ => true,
    }
}

/// `base.m1(..).m2(..)` → `base` and the method calls, innermost first.
pub(super) fn unchain(expr: &Expr) -> (&Expr, Vec<&ExprMethodCall>) {
    let mut methods = Vec::new();
    let mut current = expr;
    loop {
        match current {
            Expr::MethodCall(call) => {
                methods.push(call);
                current = &call.receiver;
            }
            Expr::Paren(p) => current = &p.expr,
            Expr::Group(g) => current = &g.expr,
            Expr::Await(a) => current = &a.base,
            Expr::Try(t) => current = &t.expr,
            _ => break,
        }
    }
    methods.reverse();
    (current, methods)
}

/// `expr` without `&`, `*`, parentheses and invisible groups around it.
pub fn strip(expr: &Expr) -> &Expr {
    match expr {
        Expr::Reference(r) => strip(&r.expr),
        Expr::Unary(u) if matches!(u.op, syn::UnOp::Deref(_)) => strip(&u.expr),
        Expr::Paren(p) => strip(&p.expr),
        Expr::Group(g) => strip(&g.expr),
        other => other,
    }
}

pub(super) fn last_segment(func: &Expr) -> Option<String> {
    match func {
        Expr::Path(p) => p.path.segments.last().map(|s| s.ident.to_string()),
        _ => None,
    }
}

pub(super) fn sql_arg(arg: &Expr) -> Sql {
    match arg {
        Expr::Lit(syn::ExprLit {
            lit: syn::Lit::Str(lit),
            ..
        }) => Sql::Literal(lit.clone()),
        Expr::Macro(m) if is_concat(&m.mac) => match concatenated(&m.mac) {
            Some(concat) => Sql::Concat(concat),
            None => Sql::Unseen(arg.clone()),
        },
        Expr::Group(g) => sql_arg(&g.expr),
        Expr::Paren(p) => sql_arg(&p.expr),
        other => Sql::Unseen(other.clone()),
    }
}

/// A const's identity in the function's syntax tree: where its value is.
pub(super) fn const_id(item: &syn::ItemConst) -> usize {
    std::ptr::from_ref::<Expr>(&item.expr) as usize
}

/// Whether `expr` is SQL the macro reads: a string literal, or a `concat!` of literals.
pub(super) fn string_sql(expr: &Expr) -> bool {
    matches!(sql_arg(expr), Sql::Literal(_) | Sql::Concat(_))
}

pub(super) fn is_concat(mac: &Macro) -> bool {
    mac.path
        .segments
        .last()
        .is_some_and(|s| s.ident == "concat")
}

/// The text of `concat!(..)` when every argument is a literal or such a `concat!`.
pub(super) fn concatenated(mac: &Macro) -> Option<Concatenated> {
    let mut concat = Concatenated {
        text: String::new(),
        pieces: Vec::new(),
        span: mac.span(),
    };
    append_concat(mac, &mut concat)?;
    Some(concat)
}

pub(super) fn append_concat(mac: &Macro, out: &mut Concatenated) -> Option<()> {
    for arg in macro_exprs(mac)? {
        let lit = match strip(&arg) {
            Expr::Lit(lit) => lit,
            Expr::Macro(m) if is_concat(&m.mac) => {
                append_concat(&m.mac, out)?;
                continue;
            }
            _ => return None,
        };
        let start = out.text.len();
        let text = &mut out.text;
        match &lit.lit {
            syn::Lit::Str(s) => {
                text.push_str(&s.value());
                out.pieces.push((start, Some(s.clone())));
                continue;
            }
            syn::Lit::Int(i) => text.push_str(i.base10_digits()),
            syn::Lit::Float(f) => text.push_str(f.base10_digits()),
            syn::Lit::Bool(b) => text.push_str(if b.value { "true" } else { "false" }),
            syn::Lit::Char(c) => text.push(c.value()),
            _ => return None,
        }
        out.pieces.push((start, None));
    }
    Some(())
}

/// Every name a pattern binds.
pub(super) fn collect_bindings(pat: &Pat, out: &mut Vec<Ident>) {
    struct Bindings<'a>(&'a mut Vec<Ident>);
    impl<'ast> Visit<'ast> for Bindings<'_> {
        fn visit_pat_ident(&mut self, binding: &'ast syn::PatIdent) {
            self.0.push(binding.ident.clone());
            visit::visit_pat_ident(self, binding);
        }
    }
    Bindings(out).visit_pat(pat);
}

/// Whether a token stream names sqlx or one of the ways it sends SQL.
pub(super) fn mentions_sqlx(tokens: TokenStream) -> bool {
    tokens.into_iter().any(|token| match token {
        TokenTree::Ident(ident) => {
            let name = ident.to_string();
            name == "sqlx" || name == "QueryBuilder" || sqlx_api::is_send_name(&name)
        }
        TokenTree::Group(group) => mentions_sqlx(group.stream()),
        _ => false,
    })
}

/// Reads a `query_file!` path as sqlx does: relative to the crate's manifest directory.
pub(super) fn read_sql_file(path: &str) -> Result<String, String> {
    let dir = std::env::var_os("CARGO_MANIFEST_DIR").map_or_else(PathBuf::new, PathBuf::from);
    let full = dir.join(path);
    std::fs::read_to_string(&full).map_err(|e| format!("cannot read {}: {e}", full.display()))
}
