//! `#[leader_role("billing", every = "1h")]`: registers an async fn as the job of a role.
//!
//! Three steps: [`parse`] reads the arguments and the fn (its signature; the body stays tokens),
//! [`validate`] checks the role name, interval, the signature's shape and (where the migrations
//! are readable) that the database registers the role, and [`expand`] emits the fn, the role
//! constant, the registration and the type checks rustc makes at the job's own types.

mod expand;
mod parse;
mod validate;

use proc_macro2::TokenStream;

#[cfg(test)]
pub use parse::{OPTION_NAMES, parse_args};

pub fn leader_role(args: TokenStream, item: TokenStream) -> TokenStream {
    let args = parse::parse_args(args);
    // The constant is emitted even when something else is wrong, so its uses do not error too.
    let constant = args.as_ref().ok().and_then(|args| {
        let ident = validate::role_constant(&args.role)?;
        Some((args.role.clone(), ident))
    });
    let func: parse::JobFn = match syn::parse2(item.clone()) {
        Ok(func) => func,
        Err(e) => return expand::fallback(item, constant, e),
    };
    match validate::validate(args, &func) {
        Ok(job) => expand::expand(&job),
        Err(e) => expand::fallback(item, constant, e),
    }
}
