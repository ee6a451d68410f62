//! The expansion of `#[fenced]`: the function as written, with one line added at the top of its
//! body that has the compiler confirm the fence parameter is the framework's `Fence` or
//! `ShardFence`, as its type's name says (the error, if it is not, points at the parameter's
//! type).
//!
//! The macro never rewrites what the function does. On errors the function is still emitted
//! beside them, so the rest of the crate (and an IDE) keeps seeing it.

use std::path::PathBuf;

use proc_macro2::TokenStream;
use quote::{ToTokens, quote, quote_spanned};
use syn::spanned::Spanned;

use super::parse::Fenced;

pub fn expand(fenced: Fenced, schema_files: &[PathBuf], checked: syn::Result<()>) -> TokenStream {
    let Fenced {
        mut func,
        fence_name,
        fence_type,
        sharded,
        ..
    } = fenced;
    let assertion = if sharded {
        quote_spanned! {fence_type.span()=>
            ::leader_runtime::__private::assert_shard_fence_parameter(&#fence_name);
        }
    } else {
        quote_spanned! {fence_type.span()=>
            ::leader_runtime::__private::assert_fence_parameter(&#fence_name);
        }
    };
    func.block
        .stmts
        .insert(0, syn::parse2(assertion).expect("a statement"));
    // Including the files the schema was read from makes Cargo rebuild the crate, and so
    // re-run the check, when one of them changes.
    for path in schema_files.iter().rev() {
        let path = path.to_string_lossy();
        let include = quote!(
            const _: &[u8] = ::core::include_bytes!(#path);
        );
        func.block
            .stmts
            .insert(0, syn::parse2(include).expect("an item"));
    }
    let errors = checked.err().map(|e| e.to_compile_error());
    let func = func.into_token_stream();
    quote! { #func #errors }
}

/// The function exactly as written, beside the errors that stopped the macro reading it.
pub fn fallback(item: TokenStream, error: syn::Error) -> TokenStream {
    let errors = error.to_compile_error();
    quote! { #item #errors }
}
