//! Reads a `#[fenced]` function: its fence parameter and every sqlx query call in its body.

use proc_macro2::{Span, TokenStream};
use syn::parse::{Parse, ParseStream, Parser};
use syn::punctuated::Punctuated;
use syn::visit::{self, Visit};
use syn::{Expr, FnArg, Ident, ItemFn, LitStr, Macro, Pat, Token, Type};

/// sqlx's query functions; the SQL is the first argument, `.bind(..)` gives `$1`, `$2`, ….
const QUERY_FNS: &[&str] = &["query", "query_as", "query_scalar"];

/// sqlx's query macros; the SQL is the first argument (the second for `query_as!`), the
/// arguments after it give `$1`, `$2`, ….
const QUERY_MACROS: &[&str] = &[
    "query",
    "query_as",
    "query_scalar",
    "query_unchecked",
    "query_as_unchecked",
    "query_scalar_unchecked",
];

/// A `#[fenced]` function, read.
pub struct Fenced {
    /// The name of the `Fence` parameter.
    pub fence_name: Ident,
    /// Every query call in the body.
    pub claims: Vec<Claim>,
}

/// One call to a sqlx query function or macro.
pub struct Claim {
    /// The SQL argument.
    pub sql: SqlArg,
    /// The values bound to `$1`, `$2`, … in order.
    pub binds: Vec<Expr>,
    /// `query`, `query_as`, … (for messages).
    pub callee: String,
    /// Whether it is the macro form (`query!`).
    pub is_macro: bool,
}

/// The SQL argument of a query call.
pub enum SqlArg {
    Literal(LitStr),
    /// Anything but a string literal: a variable, `format!(..)`, `AssertSqlSafe(..)`, a const.
    Other(Expr),
    /// No argument at all (the span of the call's path).
    Missing(Span),
}

/// Parses the function and finds its fence parameter and claims.
pub fn parse(item: TokenStream) -> syn::Result<Fenced> {
    let func: ItemFn = syn::parse2(item)?;
    let fence_name = fence_param(&func)?;
    let mut finder = ClaimFinder { claims: Vec::new() };
    finder.visit_block(&func.block);
    Ok(Fenced {
        claims: finder.claims,
        fence_name,
    })
}

/// The name of the parameter of type `Fence` or `&Fence`.
fn fence_param(func: &ItemFn) -> syn::Result<Ident> {
    for input in &func.sig.inputs {
        let FnArg::Typed(typed) = input else { continue };
        if !is_fence_type(&typed.ty) {
            continue;
        }
        return match &*typed.pat {
            Pat::Ident(pat) => Ok(pat.ident.clone()),
            other => Err(syn::Error::new_spanned(
                other,
                "name the fence parameter so its claims can bind it, e.g. `fence: Fence`",
            )),
        };
    }
    Err(syn::Error::new_spanned(
        &func.sig,
        "a `#[fenced]` function takes the fence its claims must prove: add a parameter \
         `fence: Fence` (or `fence: &Fence`) and bind `fence.role()` and `fence.token()` to \
         `leader_fence($1, $2)`",
    ))
}

/// `Fence`, `&Fence`, `leader_runtime::Fence`, … : the last path segment is `Fence`.
fn is_fence_type(ty: &Type) -> bool {
    match ty {
        Type::Reference(r) => is_fence_type(&r.elem),
        Type::Paren(p) => is_fence_type(&p.elem),
        Type::Group(g) => is_fence_type(&g.elem),
        Type::Path(p) => p
            .path
            .segments
            .last()
            .is_some_and(|s| s.ident == "Fence" && s.arguments.is_none()),
        _ => false,
    }
}

/// Walks the body collecting query calls.
struct ClaimFinder {
    claims: Vec<Claim>,
}

impl<'ast> Visit<'ast> for ClaimFinder {
    fn visit_expr(&mut self, expr: &'ast Expr) {
        let Some((call, methods)) = unchain(expr) else {
            return visit::visit_expr(self, expr);
        };
        let binds = methods
            .iter()
            .filter(|m| m.method == "bind")
            .filter_map(|m| m.args.first().cloned())
            .collect();
        let callee = last_segment(&call.func).unwrap_or_default();
        let sql = match call.args.first() {
            Some(arg) => sql_arg(arg),
            None => SqlArg::Missing(syn::spanned::Spanned::span(&call.func)),
        };
        self.claims.push(Claim {
            sql,
            binds,
            callee,
            is_macro: false,
        });
        // The chain is handled: look inside its arguments only (they may hold closures with
        // more queries), not at its receivers again.
        for arg in call.args.iter().chain(methods.iter().flat_map(|m| &m.args)) {
            self.visit_expr(arg);
        }
    }

    fn visit_macro(&mut self, mac: &'ast Macro) {
        let Some(name) = mac.path.segments.last().map(|s| s.ident.to_string()) else {
            return;
        };
        if !QUERY_MACROS.contains(&name.as_str()) {
            return;
        }
        let typed = name.starts_with("query_as");
        let parser = |input: ParseStream| {
            if typed {
                input.parse::<Type>()?;
                input.parse::<Token![,]>()?;
            }
            Punctuated::<Expr, Token![,]>::parse_terminated(input)
        };
        // A macro call that does not parse is left to sqlx to report.
        let Ok(args) = parser.parse2(mac.tokens.clone()) else {
            return;
        };
        let mut args = args.into_iter();
        let sql = match args.next() {
            Some(arg) => sql_arg(&arg),
            None => SqlArg::Missing(syn::spanned::Spanned::span(&mac.path)),
        };
        self.claims.push(Claim {
            sql,
            binds: args.collect(),
            callee: name,
            is_macro: true,
        });
    }
}

/// For `query(..).m1(..).m2(..)`: the query call and the method calls on it, innermost first.
fn unchain(expr: &Expr) -> Option<(&syn::ExprCall, Vec<&syn::ExprMethodCall>)> {
    let mut methods = Vec::new();
    let mut current = expr;
    loop {
        match current {
            Expr::MethodCall(call) => {
                methods.push(call);
                current = &call.receiver;
            }
            Expr::Paren(p) if !methods.is_empty() => current = &p.expr,
            Expr::Group(g) => current = &g.expr,
            Expr::Call(call)
                if last_segment(&call.func).is_some_and(|n| QUERY_FNS.contains(&n.as_str())) =>
            {
                methods.reverse();
                return Some((call, methods));
            }
            _ => return None,
        }
    }
}

/// The last path segment of a called path, e.g. `query_as` in `sqlx::query_as::<_, Row>`.
fn last_segment(func: &Expr) -> Option<String> {
    match func {
        Expr::Path(p) => p.path.segments.last().map(|s| s.ident.to_string()),
        _ => None,
    }
}

fn sql_arg(arg: &Expr) -> SqlArg {
    match arg {
        Expr::Lit(syn::ExprLit {
            lit: syn::Lit::Str(lit),
            ..
        }) => SqlArg::Literal(lit.clone()),
        Expr::Group(g) => sql_arg(&g.expr),
        Expr::Paren(p) => sql_arg(&p.expr),
        other => SqlArg::Other(other.clone()),
    }
}

/// Parses `#[fenced]`'s arguments: there are none.
pub fn no_args(args: TokenStream) -> syn::Result<()> {
    struct Empty;
    impl Parse for Empty {
        fn parse(input: ParseStream) -> syn::Result<Self> {
            if input.is_empty() {
                Ok(Empty)
            } else {
                Err(input.error("`#[fenced]` takes no arguments: write `#[fenced]`"))
            }
        }
    }
    syn::parse2::<Empty>(args).map(|_| ())
}
