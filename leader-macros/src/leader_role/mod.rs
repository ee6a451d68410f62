//! `#[leader_role("billing", every = "1h")]`: registers an async fn as the job of a role.
//!
//! Three steps: [`parse`] reads the arguments and the fn, [`validate`] checks the role name,
//! interval, signature and (where the migrations are readable) that the database registers the
//! role, and [`expand`] emits the fn, the role constant and the registration.

mod expand;
mod parse;
mod validate;

use proc_macro2::TokenStream;

pub fn leader_role(args: TokenStream, item: TokenStream) -> TokenStream {
    let func: syn::ItemFn = match syn::parse2(item.clone()) {
        Ok(func) => func,
        Err(e) => return expand::fallback(item, e),
    };
    match validate::validate(parse::parse_args(args), &func) {
        Ok(job) => expand::expand(&job),
        Err(e) => expand::fallback(item, e),
    }
}
