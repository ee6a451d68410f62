//! Reads `#[leader_role("billing", every = "1h", migrations = "db/migrations")]` and the job fn.

use proc_macro2::TokenStream;
use syn::parse::{Parse, ParseStream};
use syn::{Attribute, Ident, LitInt, LitStr, Signature, Token, Visibility, braced};

use crate::errors::Errors;

/// The options `#[leader_role]` accepts after the role name.
pub const OPTIONS: &str = "`every = \"1h\"` or `cron = \"0 2 * * *\"` (one of them), `tz = \"Europe/Berlin\"` and `missed = \"each\"` (with `cron`), `shards = 8`, and `migrations = \"db/migrations\"`";

/// Every option `#[leader_role]` accepts after the role name: the parser refuses any other name,
/// and a test checks the attribute's docs show each.
pub const OPTION_NAMES: [&str; 6] = ["every", "cron", "tz", "missed", "shards", "migrations"];

/// The attribute's arguments, as written.
pub struct Args {
    /// The role name.
    pub role: LitStr,
    /// `every = "..."`.
    pub every: Option<LitStr>,
    /// `cron = "..."`.
    pub cron: Option<LitStr>,
    /// `tz = "..."`.
    pub tz: Option<LitStr>,
    /// `missed = "..."`.
    pub missed: Option<LitStr>,
    /// `migrations = "..."`.
    pub migrations: Option<LitStr>,
    /// `shards = N`.
    pub shards: Option<LitInt>,
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
            cron: None,
            tz: None,
            missed: None,
            migrations: None,
            shards: None,
        };
        let mut errors = Errors::new();
        while !input.is_empty() {
            input.parse::<Token![,]>()?;
            if input.is_empty() {
                break;
            }
            let name: Ident = input.parse()?;
            input.parse::<Token![=]>()?;
            if !OPTION_NAMES.iter().any(|option| name == option) {
                errors.push(unknown(&name));
                // Its value, whatever literal it is, so the options after it are read too.
                if input.parse::<syn::Lit>().is_err() {
                    break;
                }
                continue;
            }
            if name == "shards" {
                if input.peek(LitStr) {
                    let written: LitStr = input.parse()?;
                    errors.push(syn::Error::new(
                        written.span(),
                        "`shards` takes a number, not a string: `shards = 8`",
                    ));
                    continue;
                }
                let value: LitInt = input.parse()?;
                if args.shards.is_some() {
                    errors.push(syn::Error::new(name.span(), "`shards` is given twice"));
                }
                args.shards = Some(value);
                continue;
            }
            let value: LitStr = input.parse()?;
            let slot = match name.to_string().as_str() {
                "every" => &mut args.every,
                "cron" => &mut args.cron,
                "tz" => &mut args.tz,
                "missed" => &mut args.missed,
                "migrations" => &mut args.migrations,
                _ => {
                    errors.push(unknown(&name));
                    continue;
                }
            };
            if slot.is_some() {
                errors.push(syn::Error::new(
                    name.span(),
                    format!("`{name}` is given twice"),
                ));
            }
            *slot = Some(value);
        }
        errors.finish().map(|()| args)
    }
}

fn unknown(name: &Ident) -> syn::Error {
    syn::Error::new(
        name.span(),
        format!("unknown option `{name}`: `#[leader_role]` accepts {OPTIONS}"),
    )
}

/// The job fn with its body kept as tokens: only the signature is parsed, so a body that does
/// not parse yet (while it is being typed) still gets its registration and constant, and rustc
/// reports the body's own errors.
pub struct JobFn {
    pub attrs: Vec<Attribute>,
    pub vis: Visibility,
    pub sig: Signature,
    /// The body, braces included.
    pub body: TokenStream,
}

impl Parse for JobFn {
    fn parse(input: ParseStream) -> syn::Result<Self> {
        let attrs = input.call(Attribute::parse_outer)?;
        let vis = input.parse()?;
        let sig = input.parse()?;
        let body_input;
        let braces = braced!(body_input in input);
        let inner: TokenStream = body_input.parse()?;
        let mut body = TokenStream::new();
        braces.surround(&mut body, |tokens| tokens.extend(inner));
        Ok(JobFn {
            attrs,
            vis,
            sig,
            body,
        })
    }
}

impl quote::ToTokens for JobFn {
    fn to_tokens(&self, tokens: &mut TokenStream) {
        for attr in &self.attrs {
            attr.to_tokens(tokens);
        }
        self.vis.to_tokens(tokens);
        self.sig.to_tokens(tokens);
        tokens.extend(self.body.clone());
    }
}
