//! The expansion of `#[leader_role]`: the fn unchanged, a role constant, and a registration.

use proc_macro2::{Literal, TokenStream};
use quote::{quote, quote_spanned};

use super::validate::Job;

pub fn expand(job: &Job) -> TokenStream {
    let Job {
        func,
        role,
        const_ident,
        every,
        every_text,
        pinned_by,
    } = job;
    let vis = &func.vis;
    let name = &func.sig.ident;
    let doc = format!(
        " The `{}` leader role, led by [`{name}`] every {every_text}.",
        role.value()
    );
    let every = match every.whole_secs() {
        Some(secs) => {
            let secs = Literal::u64_unsuffixed(secs);
            quote!(::leader_runtime::__private::Duration::from_secs(#secs))
        }
        None => {
            let millis = Literal::u64_unsuffixed(every.millis);
            quote!(::leader_runtime::__private::Duration::from_millis(#millis))
        }
    };
    let path_suffix = format!("::{name}");
    // Spanned at the role string, so that rustc's "the name `BILLING` is defined multiple
    // times" (two jobs for one role in one module) points at the two role strings.
    let const_item = quote_spanned! {role.span()=>
        #[doc = #doc]
        #vis const #const_ident: ::leader_runtime::Role = ::leader_runtime::Role::from_static(#role);
    };
    // Including the migration makes Cargo rebuild this crate, and so re-run the role check,
    // when the migration changes.
    let pin = pinned_by.as_ref().map(|path| {
        let path = path.to_string_lossy();
        quote!(
            const _: &[u8] = ::core::include_bytes!(#path);
        )
    });
    quote! {
        #func

        #const_item

        #pin

        ::leader_runtime::__private::inventory::submit! {
            ::leader_runtime::__private::JobRegistration {
                role: #const_ident,
                every: #every,
                // A closure that captures nothing coerces to the `fn` pointer the registry stores.
                job: |__leader_tick| ::std::boxed::Box::pin(async move {
                    #name(__leader_tick).await.map_err(::core::convert::Into::into)
                }),
                name: ::core::concat!(::core::module_path!(), #path_suffix),
            }
        }
    }
}

/// On errors: the fn as written (so the rest of the crate and an IDE still see it) and the errors.
pub fn fallback(item: TokenStream, errors: syn::Error) -> TokenStream {
    let errors = errors.to_compile_error();
    // The registration that would have called the fn is not emitted, so do not add a
    // "never used" warning to the real error.
    quote! {
        #[allow(dead_code)]
        #item
        #errors
    }
}
