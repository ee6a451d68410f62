//! Reads a `#[fenced]` function: its fence parameter, every way its body sends SQL, and every
//! use of the fence that would let a bind escape the check.

use proc_macro2::TokenStream;
use syn::parse::{Parse, ParseStream, Parser};
use syn::punctuated::Punctuated;
use syn::{Expr, FnArg, Ident, ItemFn, Macro, Pat, Token, Type};

use super::fence_use;
use super::sends::{self, Loose, SqlSend};

/// A `#[fenced]` function, read.
pub struct Fenced {
    /// The function as written.
    pub func: ItemFn,
    /// The name of the `Fence` parameter.
    pub fence_name: Ident,
    /// Its type, where the compiler is asked to confirm it is the framework's `Fence`.
    pub fence_type: Type,
    /// Every SQL send found in the body.
    pub sends: Vec<SqlSend>,
    /// Every string in the body no recognised send takes.
    pub loose: Vec<Loose>,
    /// Problems found while reading the body: SQL the macro cannot see, query values it cannot
    /// follow, a fence parameter that is reassigned or shadowed.
    pub problems: Vec<syn::Error>,
}

/// Parses the function and reads its fence parameter and body.
pub fn parse(item: TokenStream) -> syn::Result<Fenced> {
    let func: ItemFn = syn::parse2(item)?;
    let (fence_name, fence_type) = fence_param(&func)?;
    let found = sends::find(&func.block);
    let mut problems = found.problems;
    problems.extend(fence_use::misuses(&func.block, &fence_name));
    Ok(Fenced {
        func,
        fence_name,
        fence_type,
        sends: found.sends,
        loose: found.loose,
        problems,
    })
}

/// The name and type of the parameter of type `Fence` or `&Fence` (by its type's name: the
/// expansion has the compiler confirm it is the framework's).
fn fence_param(func: &ItemFn) -> syn::Result<(Ident, Type)> {
    for input in &func.sig.inputs {
        let FnArg::Typed(typed) = input else { continue };
        if !is_fence_type(&typed.ty) {
            continue;
        }
        return match &*typed.pat {
            Pat::Ident(pat) if pat.subpat.is_none() => Ok((pat.ident.clone(), (*typed.ty).clone())),
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

/// The arguments of a macro call, where they parse as comma-separated expressions.
pub fn macro_exprs(mac: &Macro) -> Option<Vec<Expr>> {
    let parser = Punctuated::<Expr, Token![,]>::parse_terminated;
    parser
        .parse2(mac.tokens.clone())
        .ok()
        .map(|args| args.into_iter().collect())
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
