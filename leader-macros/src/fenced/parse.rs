//! Reads a `#[fenced]` function: its fence parameter, every way its body sends SQL, and every
//! use of the fence that would let a bind escape the check.

use proc_macro2::TokenStream;
use syn::parse::{Parse, ParseStream, Parser};
use syn::punctuated::Punctuated;
use syn::{Expr, FnArg, Ident, ItemFn, LitStr, Macro, Pat, Token, Type};

use super::fence_use;
use super::sends::{self, Loose, SqlSend};

/// A `#[fenced]` function, read.
pub struct Fenced {
    /// The function as written.
    pub func: ItemFn,
    /// The name of the `Fence` parameter.
    pub fence_name: Ident,
    /// Its type, where the compiler is asked to confirm it is the framework's `Fence` (or
    /// `ShardFence`).
    pub fence_type: Type,
    /// Whether it is a shard's fence (`ShardFence`), whose claims take the four-argument
    /// `leader_fence` and the shard filter.
    pub sharded: bool,
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
    let (fence_name, fence_type, sharded) = fence_param(&func)?;
    let found = sends::find(&func.block);
    let mut problems = found.problems;
    problems.extend(fence_use::misuses(&func.block, &fence_name));
    Ok(Fenced {
        func,
        fence_name,
        fence_type,
        sharded,
        sends: found.sends,
        loose: found.loose,
        problems,
    })
}

/// The name and type of the parameter of type `Fence`, `ShardFence` or a reference to one (by
/// its type's name: the expansion has the compiler confirm it is the framework's), and whether
/// it is a `ShardFence`.
fn fence_param(func: &ItemFn) -> syn::Result<(Ident, Type, bool)> {
    for input in &func.sig.inputs {
        let FnArg::Typed(typed) = input else { continue };
        let Some(sharded) = fence_type_name(&typed.ty).map(|name| name == "ShardFence") else {
            continue;
        };
        return match &*typed.pat {
            Pat::Ident(pat) if pat.subpat.is_none() => {
                Ok((pat.ident.clone(), (*typed.ty).clone(), sharded))
            }
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

/// `Fence`, `&Fence`, `leader_runtime::Fence`, `ShardFence`, … : the last path segment, when
/// it is `Fence` or `ShardFence`.
fn fence_type_name(ty: &Type) -> Option<String> {
    match ty {
        Type::Reference(r) => fence_type_name(&r.elem),
        Type::Paren(p) => fence_type_name(&p.elem),
        Type::Group(g) => fence_type_name(&g.elem),
        Type::Path(p) => p
            .path
            .segments
            .last()
            .filter(|s| (s.ident == "Fence" || s.ident == "ShardFence") && s.arguments.is_none())
            .map(|s| s.ident.to_string()),
        _ => None,
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

/// Every option `#[fenced]` accepts: the parser refuses any other name, and a test checks the
/// attribute's docs show each.
pub const OPTION_NAMES: [&str; 1] = ["migrations"];

/// `#[fenced]`'s arguments.
#[derive(Default)]
pub struct Args {
    /// `migrations = "db/migrations"`: the folder the prepared schema must come from.
    pub migrations: Option<LitStr>,
}

/// Parses `#[fenced]`'s arguments: none, or `migrations = "…"`.
pub fn args(args: TokenStream) -> syn::Result<Args> {
    syn::parse2::<Args>(args)
}

impl Parse for Args {
    fn parse(input: ParseStream) -> syn::Result<Self> {
        let mut args = Args::default();
        while !input.is_empty() {
            let key: Ident = input.parse()?;
            if !OPTION_NAMES.iter().any(|option| key == option) {
                return Err(syn::Error::new(
                    key.span(),
                    format!(
                        "unknown `#[fenced]` argument `{key}`: it takes only \
                         `migrations = \"db/migrations\"` (the folder `leader-schema.json` \
                         must have been prepared from)"
                    ),
                ));
            }
            input.parse::<Token![=]>()?;
            let value: LitStr = input.parse()?;
            if args.migrations.replace(value).is_some() {
                return Err(syn::Error::new(key.span(), "`migrations` is given twice"));
            }
            if !input.is_empty() {
                input.parse::<Token![,]>()?;
            }
        }
        Ok(args)
    }
}
