//! The expansion of `#[fenced]`: the function exactly as written.
//!
//! The macro only checks; it never rewrites the function. On errors the function is still
//! emitted beside them, so the rest of the crate (and an IDE) keeps seeing it.

use proc_macro2::TokenStream;

pub fn expand(item: TokenStream, checked: syn::Result<()>) -> TokenStream {
    match checked {
        Ok(()) => item,
        Err(errors) => {
            let errors = errors.to_compile_error();
            quote::quote! { #item #errors }
        }
    }
}
