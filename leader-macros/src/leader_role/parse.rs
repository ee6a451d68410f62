//! Reads `#[leader_role("billing", every = "1h", migrations = "db/migrations")]` and the job fn.

use proc_macro2::TokenStream;
use syn::parse::{Parse, ParseStream};
use syn::{Ident, LitStr, Token};

/// The options `#[leader_role]` accepts after the role name.
pub const OPTIONS: &str = "`every = \"1h\"` (required) and `migrations = \"db/migrations\"`";

/// The attribute's arguments, as written.
pub struct Args {
    /// The role name.
    pub role: LitStr,
    /// `every = "..."`.
    pub every: Option<LitStr>,
    /// `migrations = "..."`.
    pub migrations: Option<LitStr>,
}

pub fn parse_args(args: TokenStream) -> syn::Result<Args> {
    syn::parse2(args)
}

impl Parse for Args {
    fn parse(input: ParseStream) -> syn::Result<Self> {
        if input.is_empty() || !input.peek(LitStr) {
            return Err(input.error(
                "expected the role name as a string: `#[leader_role(\"billing\", every = \"1h\")]`",
            ));
        }
        let mut args = Args {
            role: input.parse()?,
            every: None,
            migrations: None,
        };
        let mut errors: Option<syn::Error> = None;
        while !input.is_empty() {
            input.parse::<Token![,]>()?;
            if input.is_empty() {
                break;
            }
            let name: Ident = input.parse()?;
            input.parse::<Token![=]>()?;
            let value: LitStr = input.parse()?;
            let slot = match name.to_string().as_str() {
                "every" => &mut args.every,
                "migrations" => &mut args.migrations,
                _ => {
                    let e = syn::Error::new(
                        name.span(),
                        format!("unknown option `{name}`: `#[leader_role]` accepts {OPTIONS}"),
                    );
                    match &mut errors {
                        Some(all) => all.combine(e),
                        None => errors = Some(e),
                    }
                    continue;
                }
            };
            if slot.is_some() {
                let e = syn::Error::new(name.span(), format!("`{name}` is given twice"));
                match &mut errors {
                    Some(all) => all.combine(e),
                    None => errors = Some(e),
                }
            }
            *slot = Some(value);
        }
        errors.map_or(Ok(args), Err)
    }
}
