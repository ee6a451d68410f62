//! The expansion of `#[leader_role]`: the fn unchanged, a role constant, a registration, and
//! the adapters through which rustc checks the job's types at the job's own signature.

use proc_macro2::{Literal, TokenStream};
use quote::{format_ident, quote, quote_spanned};
use syn::spanned::Spanned;
use syn::{FnArg, Ident, LitStr, ReturnType, Visibility};

use super::parse::JobFn;
use super::validate::{Job, ScheduleArg};

pub fn expand(job: &Job) -> TokenStream {
    let Job {
        func,
        role,
        const_ident,
        schedule,
        pinned_by,
        state,
        shard_count,
    } = job;
    let name = &func.sig.ident;
    let shards = shard_count.map_or_else(String::new, |count| format!(", in {count} shards"));
    let doc = format!(
        " The `{}` leader role, led by [`{name}`] {}{shards}.",
        role.value(),
        schedule.describe()
    );
    let const_item = role_const(role, const_ident, &func.vis, &doc);
    let schedule = match schedule {
        ScheduleArg::Every { interval } => {
            // `from_secs(3600)` reads better than milliseconds, where it is exact.
            let every = if interval.subsec_nanos() == 0 {
                let secs = Literal::u64_unsuffixed(interval.as_secs());
                quote!(::leader_runtime::__private::Duration::from_secs(#secs))
            } else {
                let millis = u64::try_from(interval.as_millis())
                    .expect("parse_interval counts milliseconds in a u64");
                let millis = Literal::u64_unsuffixed(millis);
                quote!(::leader_runtime::__private::Duration::from_millis(#millis))
            };
            quote!(::leader_runtime::__private::RegisteredSchedule::Every(#every))
        }
        ScheduleArg::Cron { expr, zone, missed } => {
            let missed = missed.as_str();
            quote!(::leader_runtime::__private::RegisteredSchedule::Cron {
                expr: #expr,
                zone: #zone,
                missed: #missed,
            })
        }
    };
    let shard_count = match shard_count {
        Some(count) => quote!(::core::option::Option::Some(#count)),
        None => quote!(::core::option::Option::None),
    };
    let path_suffix = format!("::{name}");
    // Including the prepared schema and the migrations it came from makes Cargo rebuild this
    // crate, and so re-run the role check, when one of them changes.
    let pin = pinned_by.iter().map(|path| {
        let path = path.to_string_lossy();
        quote!(
            const _: &[u8] = ::core::include_bytes!(#path);
        )
    });
    let (adapters, tick, result) = adapters(func);
    // A closure that captures nothing coerces to the `fn` pointer the registry stores.
    let registered = match state {
        None => quote! {
            ::leader_runtime::__private::RegisteredJob::TickOnly(|__leader_tick| {
                ::std::boxed::Box::pin(async move { #result(#name(#tick(__leader_tick)).await) })
            })
        },
        Some(state) => {
            let call = quote_spanned! {state.span()=>
                ::leader_runtime::__private::call_with_state::<#state, _, _, _>
            };
            quote! {
                ::leader_runtime::__private::RegisteredJob::WithState {
                    state: ::leader_runtime::__private::TypeId::of::<#state>,
                    state_name: ::leader_runtime::__private::type_name::<#state>,
                    call: |__leader_tick, __leader_state| {
                        #call(#tick(__leader_tick), __leader_state, #name)
                    },
                }
            }
        }
    };
    quote! {
        #func

        #const_item

        #(#pin)*

        #adapters

        ::leader_runtime::__private::inventory::submit! {
            ::leader_runtime::__private::JobRegistration {
                role: #const_ident,
                schedule: #schedule,
                job: #registered,
                name: ::core::concat!(::core::module_path!(), #path_suffix),
                shard_count: #shard_count,
            }
        }
    }
}

/// The role constant. Spanned at the role string, so that rustc's "the name `BILLING` is
/// defined multiple times" (two jobs for one role in one module) points at the two role strings.
fn role_const(role: &LitStr, ident: &Ident, vis: &Visibility, doc: &str) -> TokenStream {
    quote_spanned! {role.span()=>
        #[doc = #doc]
        #vis const #ident: ::leader_runtime::Role = ::leader_runtime::Role::from_static(#role);
    }
}

/// Two functions the registration calls the job through: one turns the `TickContext` into the
/// job's parameter type, one the job's return value into the registry's result. Each is spanned
/// at the user's type, so a wrong type is reported once, there (and type aliases or renamed
/// imports are fine), instead of inside the registration.
fn adapters(func: &JobFn) -> (TokenStream, Ident, Ident) {
    let name = &func.sig.ident;
    let tick = format_ident!("__leader_tick_for_{}", name);
    let result = format_ident!("__leader_result_of_{}", name);
    let tick_fn = match func.sig.inputs.first() {
        Some(FnArg::Typed(typed)) => {
            let ty = &typed.ty;
            quote_spanned! {ty.span()=>
                #[doc(hidden)]
                #[allow(non_snake_case)]
                fn #tick(tick: ::leader_runtime::TickContext) -> #ty {
                    tick
                }
            }
        }
        _ => TokenStream::new(),
    };
    let result_fn = match &func.sig.output {
        ReturnType::Type(_, ty) => quote_spanned! {ty.span()=>
            #[doc(hidden)]
            #[allow(non_snake_case)]
            fn #result(result: #ty) -> ::core::result::Result<(), ::leader_runtime::JobError> {
                ::leader_runtime::__private::JobResult::into_job_result(result)
            }
        },
        ReturnType::Default => TokenStream::new(),
    };
    (quote! { #tick_fn #result_fn }, tick, result)
}

/// On errors: the fn as written (so the rest of the crate and an IDE still see it), the role
/// constant when the role name is valid (so its uses do not error too), and the errors.
pub fn fallback(
    item: TokenStream,
    constant: Option<(LitStr, Ident)>,
    errors: syn::Error,
) -> TokenStream {
    let errors = errors.to_compile_error();
    let vis = syn::parse2::<JobFn>(item.clone()).map_or(Visibility::Inherited, |f| f.vis);
    let const_item = constant.map(|(role, ident)| {
        let doc = format!(" The `{}` leader role.", role.value());
        role_const(&role, &ident, &vis, &doc)
    });
    // The registration that would have called the fn is not emitted, so do not add a
    // "never used" warning to the real error.
    quote! {
        #[allow(dead_code)]
        #item
        #const_item
        #errors
    }
}
