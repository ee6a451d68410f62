//! `#[unfenced(reason = "…")]`: the explicit opt-out from the whole-crate fence audit.
//!
//! It changes nothing in the item; the audit (`leader_runtime::audit`) reads it from the
//! source. The reason is required so a reviewer sees why a row lock needs no fence.

use proc_macro2::TokenStream;
use syn::parse::{Parse, ParseStream};
use syn::{Ident, LitStr, Token};

pub fn unfenced(args: TokenStream, item: TokenStream) -> TokenStream {
    match syn::parse2::<Reason>(args).and_then(validate) {
        Ok(()) => item,
        Err(e) => {
            let error = e.to_compile_error();
            quote::quote! { #item #error }
        }
    }
}

/// `reason = "…"`, read.
struct Reason {
    value: LitStr,
}

impl Parse for Reason {
    fn parse(input: ParseStream) -> syn::Result<Self> {
        const FORM: &str = "write `#[unfenced(reason = \"why this row lock needs no fence\")]`";
        if input.is_empty() {
            return Err(syn::Error::new(
                input.span(),
                format!("the opt-out needs a reason: {FORM}"),
            ));
        }
        let name: Ident = input.parse()?;
        if name != "reason" {
            return Err(syn::Error::new(
                name.span(),
                format!("unknown argument `{name}`: {FORM}"),
            ));
        }
        input.parse::<Token![=]>()?;
        let value: LitStr = input.parse()?;
        if !input.is_empty() {
            return Err(input.error(format!("`reason` is the only argument: {FORM}")));
        }
        Ok(Reason { value })
    }
}

fn validate(reason: Reason) -> syn::Result<()> {
    if reason.value.value().trim().is_empty() {
        return Err(syn::Error::new(
            reason.value.span(),
            "the reason is empty: say why this row lock needs no fence",
        ));
    }
    Ok(())
}
