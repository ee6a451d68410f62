//! `#[fenced]`: checks at compile time that every claim in a function carries the fence.
//!
//! Three steps: [`parse`] finds the `Fence` parameter and every sqlx query call in the body,
//! [`validate`] checks each call's SQL and binds, [`expand`] emits the function unchanged (plus the
//! errors, if any).

mod expand;
mod parse;
mod validate;

use proc_macro2::TokenStream;

pub fn fenced(args: TokenStream, item: TokenStream) -> TokenStream {
    let checked = parse::no_args(args).and_then(|()| {
        let fenced = parse::parse(item.clone())?;
        validate::validate(&fenced)
    });
    expand::expand(item, checked)
}

#[cfg(test)]
mod tests {
    use quote::quote;

    /// The error messages `#[fenced]` gives for `item` (empty when it passes).
    fn errors(item: proc_macro2::TokenStream) -> Vec<String> {
        let fenced = match super::parse::parse(item) {
            Ok(fenced) => fenced,
            Err(e) => return e.into_iter().map(|e| e.to_string()).collect(),
        };
        match super::validate::validate(&fenced) {
            Ok(()) => Vec::new(),
            Err(e) => e.into_iter().map(|e| e.to_string()).collect(),
        }
    }

    #[test]
    fn query_macros_take_their_binds_in_order() {
        let item = quote! {
            async fn claim(pool: &PgPool, fence: Fence, limit: i64) -> sqlx::Result<()> {
                sqlx::query!("UPDATE t SET a = 1 WHERE id IN (SELECT id FROM t WHERE leader_fence($2, $3) LIMIT $1 FOR UPDATE SKIP LOCKED)", limit, fence.role(), fence.token())
                    .execute(pool).await?;
                let rows = sqlx::query_as!(Row, r"SELECT id FROM t WHERE leader_fence($1, $2) FOR UPDATE", &fence.role(), (*&fence).token())
                    .fetch_all(pool).await?;
                let n = query_scalar!("DELETE FROM t WHERE leader_fence($1, $2) RETURNING 1", fence.role(), fence.token());
                Ok(())
            }
        };
        assert_eq!(errors(item), Vec::<String>::new());
    }

    #[test]
    fn query_macro_with_wrong_args() {
        let item = quote! {
            async fn claim(pool: &PgPool, fence: Fence) -> sqlx::Result<()> {
                sqlx::query_as!(Row, "SELECT id FROM t WHERE leader_fence($1, $2) FOR UPDATE", fence.token())
                    .fetch_all(pool).await?;
                Ok(())
            }
        };
        let errors = errors(item);
        assert_eq!(errors.len(), 2, "{errors:#?}");
        assert!(
            errors[0].contains("the argument 1 after the SQL is `fence.token()`"),
            "{}",
            errors[0]
        );
        assert!(
            errors[1].contains("there is no argument 2 after the SQL"),
            "{}",
            errors[1]
        );
    }

    #[test]
    fn macro_sql_must_be_literal() {
        let item = quote! {
            fn claim(fence: &Fence) { sqlx::query!(CLAIM, fence.role(), fence.token()); }
        };
        assert!(errors(item)[0].starts_with("a claim must be literal SQL"));
    }

    #[test]
    fn claims_nested_in_closures_and_other_calls_are_found() {
        let item = quote! {
            async fn claim(pool: &PgPool, fence: Fence) {
                let run = || async {
                    sqlx::query("UPDATE t SET a = 1 WHERE b").bind(fence.role()).execute(pool).await
                };
                retry(sqlx::query_scalar("SELECT 1 FROM t WHERE c FOR UPDATE")).await;
            }
        };
        assert_eq!(errors(item).len(), 2);
    }

    #[test]
    fn unrelated_calls_are_ignored() {
        let item = quote! {
            fn claim(fence: Fence, sql: &str) {
                let q = build(sql).bind(1);
                client.query(sql, &[]);
                other_query(sql);
            }
        };
        assert_eq!(errors(item), Vec::<String>::new());
    }

    #[test]
    fn fence_parameter_forms() {
        for ty in [
            quote!(Fence),
            quote!(&Fence),
            quote!(&'a leader_runtime::Fence),
            quote!(::leader_core::Fence),
        ] {
            let item = quote! {
                fn claim(other: i64, f: #ty) {
                    sqlx::query("DELETE FROM t WHERE leader_fence($1, $2)").bind(f.role()).bind(f.token());
                }
            };
            assert_eq!(errors(item), Vec::<String>::new());
        }
        let item = quote! { fn claim(token: i64) {} };
        assert!(errors(item)[0].contains("add a parameter `fence: Fence`"));
    }

    #[test]
    fn fenced_takes_no_arguments() {
        let out = super::fenced(
            quote!(strict),
            quote!(
                fn f(fence: Fence) {}
            ),
        )
        .to_string();
        assert!(out.contains("takes no arguments"), "{out}");
        assert!(
            out.starts_with("fn f"),
            "the function is still emitted: {out}"
        );
    }
}
