//! `#[fenced]`: checks at compile time that every claim in a function carries the fence.
//!
//! Three steps: [`parse`] finds the `Fence` parameter, every way the body sends SQL and every
//! string in it that no send takes ([`sends`]), and every change to the fence parameter
//! ([`fence_use`]); [`validate`] checks each send's SQL against the fence rules (the
//! `leader-fence-check` crate) and its binds ([`binds`]), and each other string that parses as
//! a claim; [`expand`] emits the function with one added line, which has the compiler confirm
//! the fence parameter's type (plus the errors, if any).

mod binds;
mod expand;
mod fence_use;
#[cfg(test)]
mod generated_sends;
mod parse;
mod sends;
mod validate;

use proc_macro2::TokenStream;

#[cfg(test)]
pub use parse::{OPTION_NAMES, args as parse_args};

pub fn fenced(args: TokenStream, item: TokenStream) -> TokenStream {
    let read = parse::args(args).and_then(|args| {
        let fenced = parse::parse(item.clone())?;
        let prepared = crate::prepared::load(
            fenced.func.sig.ident.span(),
            args.migrations.as_ref(),
            crate::prepared::Needed::Required,
            "fenced",
        )?;
        Ok((fenced, prepared))
    });
    match read {
        Ok((fenced, prepared)) => {
            let schema = prepared.as_ref().map(|p| &p.schema);
            let checked = validate::validate(&fenced, schema);
            let files = prepared.as_ref().map(|p| p.includes()).unwrap_or_default();
            expand::expand(fenced, &files, checked)
        }
        Err(error) => expand::fallback(item, error),
    }
}

#[cfg(test)]
mod tests {
    use quote::quote;

    /// The error messages `#[fenced]` gives for `item` (empty when it passes).
    fn errors(item: proc_macro2::TokenStream) -> Vec<String> {
        errors_with(item, None)
    }

    /// [`errors`], given a schema.
    fn errors_with(
        item: proc_macro2::TokenStream,
        schema: Option<&leader_fence_check::Schema>,
    ) -> Vec<String> {
        let fenced = match super::parse::parse(item) {
            Ok(fenced) => fenced,
            Err(e) => return e.into_iter().map(|e| e.to_string()).collect(),
        };
        match super::validate::validate(&fenced, schema) {
            Ok(()) => Vec::new(),
            Err(e) => e.into_iter().map(|e| e.to_string()).collect(),
        }
    }

    /// A schema with a table `t` keyed for shards by `id`.
    fn keyed_t() -> leader_fence_check::Schema {
        use leader_schema::model::{Column, QualifiedName, Relation, RelationKind, ShardKey};
        let mut prepared = leader_schema::PreparedSchema::new("migrations", "sha256:00");
        prepared.relations.push(Relation::new(
            QualifiedName::new("public", "t"),
            RelationKind::Table,
            vec![Column::new("id", "bigint")],
        ));
        prepared.shard_keys.push(ShardKey {
            table: QualifiedName::new("public", "t"),
            column: "id".to_owned(),
        });
        leader_fence_check::Schema::new(prepared, "the test's schema")
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
    fn a_shard_fence_binds_its_index_and_count_and_takes_only_the_shard_form() {
        let accepted = quote! {
            async fn claim(pool: &PgPool, fence: ShardFence) -> sqlx::Result<()> {
                sqlx::query("DELETE FROM t WHERE leader_fence($1, $2, $3, $4) AND leader_shard_of(id, $3) = $2")
                    .bind(fence.role()).bind(fence.shard_index()).bind(fence.shard_count()).bind(fence.token())
                    .execute(pool).await?;
                Ok(())
            }
        };
        assert_eq!(
            errors_with(accepted, Some(&keyed_t())),
            Vec::<String>::new()
        );

        let count_from_elsewhere = quote! {
            async fn claim(pool: &PgPool, fence: ShardFence, n: i32) -> sqlx::Result<()> {
                sqlx::query("DELETE FROM t WHERE leader_fence($1, $2, $3, $4) AND leader_shard_of(id, $3) = $2")
                    .bind(fence.role()).bind(fence.shard_index()).bind(n).bind(fence.token())
                    .execute(pool).await?;
                Ok(())
            }
        };
        let errors_found = errors_with(count_from_elsewhere, Some(&keyed_t()));
        assert_eq!(errors_found.len(), 1, "{errors_found:#?}");
        assert!(
            errors_found[0]
                .contains("is the fence's shard count and must be bound to `fence.shard_count()`"),
            "{}",
            errors_found[0]
        );

        let two_argument = quote! {
            async fn claim(pool: &PgPool, fence: &ShardFence) -> sqlx::Result<()> {
                sqlx::query("DELETE FROM t WHERE leader_fence($1, $2)")
                    .bind(fence.role()).bind(fence.token())
                    .execute(pool).await?;
                Ok(())
            }
        };
        let errors_found = errors_with(two_argument, Some(&keyed_t()));
        assert!(
            errors_found[0].contains("proves no shard"),
            "{errors_found:#?}"
        );

        let unsharded_fence = quote! {
            async fn claim(pool: &PgPool, fence: Fence) -> sqlx::Result<()> {
                sqlx::query("DELETE FROM t WHERE leader_fence($1, $3, $4, $2) AND leader_shard_of(id, $4) = $3")
                    .bind(fence.role()).bind(fence.token()).bind(0).bind(2)
                    .execute(pool).await?;
                Ok(())
            }
        };
        let errors_found = errors_with(unsharded_fence, Some(&keyed_t()));
        assert!(
            errors_found[0].contains("which carries no shard"),
            "{errors_found:#?}"
        );
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
        let errors = errors(item);
        assert_eq!(errors.len(), 2, "{errors:#?}");
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
    fn fenced_takes_only_the_migrations_folder() {
        let out = super::fenced(
            quote!(strict),
            quote!(
                fn f(fence: Fence) {}
            ),
        )
        .to_string();
        assert!(
            out.contains("unknown `#[fenced]` argument `strict`: it takes only `migrations"),
            "{out}"
        );
        assert!(
            out.starts_with("fn f"),
            "the function is still emitted: {out}"
        );
    }

    /// The messages, for tests that look for one.
    fn one_error_containing(item: proc_macro2::TokenStream, wanted: &str) {
        let errors = errors(item);
        assert!(
            errors.iter().any(|e| e.contains(wanted)),
            "expected an error containing {wanted:?}, got {errors:#?}"
        );
    }

    #[test]
    fn every_sqlx_send_form_is_recognised() {
        one_error_containing(
            quote! {
                async fn claim(pool: &PgPool, fence: Fence, args: PgArguments) {
                    sqlx::query_with("DELETE FROM t WHERE leader_fence($1, $2)", args).execute(pool).await;
                }
            },
            "`query_with` takes its binds as `PgArguments`",
        );
        one_error_containing(
            quote! {
                async fn claim(pool: &PgPool, fence: Fence) {
                    sqlx::raw_sql("DELETE FROM t WHERE leader_fence($1, $2)").execute(pool).await;
                }
            },
            "`raw_sql` sends SQL over the simple query protocol",
        );
        one_error_containing(
            quote! {
                async fn claim(pool: &PgPool, fence: Fence) {
                    sqlx::raw_sql("UPDATE t SET a = 1 WHERE leader_fence($1, $2); DELETE FROM u").execute(pool).await;
                }
            },
            "`DELETE FROM u` is not gated",
        );
        one_error_containing(
            quote! {
                async fn claim(pool: &PgPool, fence: Fence) {
                    let mut b = sqlx::QueryBuilder::<Postgres>::new("DELETE FROM t WHERE ");
                    b.push_bind(fence.token());
                }
            },
            "`QueryBuilder` assembles SQL at run time",
        );
        one_error_containing(
            quote! {
                async fn claim(pool: &PgPool, fence: Fence) {
                    pool.execute("DELETE FROM t WHERE done").await;
                }
            },
            "`DELETE FROM t` is not gated",
        );
        one_error_containing(
            quote! {
                async fn claim(pool: &PgPool, fence: Fence, sql: &str) {
                    (&mut *tx).fetch_all(sql).await;
                }
            },
            "cannot see the SQL this `.fetch_all(..)` sends",
        );
        one_error_containing(
            quote! {
                async fn claim(pool: &PgPool, fence: Fence, sql: &str) {
                    sqlx::Executor::execute(pool, sql).await;
                }
            },
            "cannot see the SQL this `.execute(..)` sends",
        );
        one_error_containing(
            quote! {
                async fn claim(pool: &PgPool, fence: Fence) {
                    sqlx::query_file!("tests/fixtures/unfenced_claim.sql").fetch_all(pool).await;
                }
            },
            "the row-locking `SELECT … FROM jobs … FOR UPDATE` is not gated",
        );
        one_error_containing(
            quote! {
                async fn claim(pool: &PgPool, fence: Fence) {
                    sqlx::query_file!("tests/fixtures/no_such.sql").fetch_all(pool).await;
                }
            },
            "cannot read the claim's SQL file",
        );
    }

    #[test]
    fn accepted_send_forms() {
        let item = quote! {
            async fn claim(pool: &PgPool, fence: &Fence, limit: i64) -> sqlx::Result<()> {
                let mut q = sqlx::query("DELETE FROM t WHERE leader_fence($1, $2) AND id < $3");
                q = q.bind(fence.role());
                let q = q.bind(fence.token()).bind(limit);
                let mut tx = pool.begin().await?;
                tx.execute(q).await?;
                let rows = sqlx::query_file!("tests/fixtures/claim.sql", fence.role(), fence.token())
                    .fetch_all(&mut *tx)
                    .await?;
                let n = sqlx::Executor::fetch_all(
                    &mut *tx,
                    sqlx::query_scalar("SELECT id FROM t WHERE leader_fence($1, $2)")
                        .bind(fence.role())
                        .bind(fence.token()),
                ).await?;
                tracing::info!("claimed {} and {}", rows.len(), n.len());
                tx.commit().await
            }
        };
        assert_eq!(errors(item), Vec::<String>::new());
    }

    #[test]
    fn constructors_of_std_types_are_not_query_builders() {
        // Found by the generated bodies (`send-generator`), compiled: `Box::new(x)` has
        // `QueryBuilder::new`'s name and arity, and was refused as one.
        let item = quote! {
            async fn claim(pool: &PgPool, fence: Fence) -> sqlx::Result<()> {
                let pool: &'static PgPool = Box::leak(Box::new(pool.clone()));
                let seen = std::sync::Arc::new(Mutex::new(0));
                let n = tokio::sync::Semaphore::new(1);
                let a = AtomicU64::new(0);
                sqlx::query("DELETE FROM t WHERE leader_fence($1, $2)")
                    .bind(fence.role())
                    .bind(fence.token())
                    .execute(pool)
                    .await?;
                Ok(())
            }
        };
        assert_eq!(errors(item), Vec::<String>::new());
        // Another type's `new` may still be a `QueryBuilder`'s, through an alias.
        one_error_containing(
            quote! {
                async fn claim(pool: &PgPool, fence: Fence) {
                    let mut b = Claims::new("DELETE FROM t WHERE ");
                }
            },
            "`QueryBuilder` assembles SQL at run time",
        );
    }

    #[test]
    fn query_locals_are_followed_only_where_binds_stay_certain() {
        one_error_containing(
            quote! {
                async fn claim(pool: &PgPool, fence: Fence, other: Fence) {
                    let mut q = sqlx::query("DELETE FROM t WHERE leader_fence($1, $2)");
                    if cheap { q = q.bind(fence.role()).bind(fence.token()); } else { q = q.bind(other.role()).bind(other.token()); }
                    q.execute(pool).await;
                }
            },
            "`q` is assigned in a nested block",
        );
        one_error_containing(
            quote! {
                async fn claim(pool: &PgPool, fence: Fence) {
                    let q = sqlx::query("DELETE FROM t WHERE leader_fence($1, $2)");
                    let q = add_binds(q);
                    q.execute(pool).await;
                }
            },
            "the query in `q` is used where `#[fenced]` cannot follow",
        );
        one_error_containing(
            quote! {
                async fn claim(pool: &PgPool, fence: Fence) {
                    let mut q = sqlx::query("DELETE FROM t WHERE leader_fence($1, $2)");
                    q.try_bind(fence.token()).unwrap();
                    q.execute(pool).await;
                }
            },
            "`$1` in `leader_fence($1, $2)` is the fence's role",
        );
    }

    #[test]
    fn macros_in_the_body_are_looked_into() {
        one_error_containing(
            quote! {
                async fn claim(pool: &PgPool, fence: Fence) {
                    let n = vec![sqlx::query("DELETE FROM t").execute(pool).await];
                }
            },
            "`DELETE FROM t` is not gated",
        );
        one_error_containing(
            quote! {
                async fn claim(pool: &PgPool, fence: Fence) {
                    tokio::select! {
                        r = sqlx::query("DELETE FROM t").execute(pool) => r,
                    };
                }
            },
            "cannot look inside this `select!`",
        );
    }

    #[test]
    fn the_fence_parameter_keeps_its_value() {
        one_error_containing(
            quote! {
                async fn claim(pool: &PgPool, fence: Fence, other: Fence) {
                    let fence = other;
                    sqlx::query("DELETE FROM t WHERE leader_fence($1, $2)").bind(fence.role()).bind(fence.token());
                }
            },
            "this binding shadows the fence parameter `fence`",
        );
        one_error_containing(
            quote! {
                async fn claim(pool: &PgPool, mut fence: Fence, other: Fence) {
                    fence = other;
                }
            },
            "this assigns to the fence parameter",
        );
        one_error_containing(
            quote! {
                async fn claim(pool: &PgPool, mut fence: Fence, other: Fence) {
                    std::mem::swap(&mut fence, &mut other);
                }
            },
            "this borrows mutably the fence parameter",
        );
        one_error_containing(
            quote! {
                async fn claim(pool: &PgPool, fence: Fence, others: Vec<Fence>) {
                    for fence in others {}
                }
            },
            "shadows the fence parameter",
        );
    }

    #[test]
    fn claims_are_found_by_their_sql_wherever_they_are_sent() {
        // Through another name for sqlx's function, a generic executor, or a helper: the
        // literal is a claim the macro cannot follow.
        for body in [
            quote! { E::execute(ex, "UPDATE t SET a = 1 WHERE leader_fence($1, $2)").await; },
            quote! { Exec::execute(pool, "DELETE FROM t WHERE leader_fence($1, $2)").await; },
            quote! { let claim = "UPDATE t SET a = 1 WHERE leader_fence($1, $2)"; run(pool, claim).await; },
            quote! { fn nested() -> &'static str { "UPDATE t SET a = 1 WHERE leader_fence($1, $2)" } },
            quote! { let f = async { helper("SELECT id FROM t WHERE leader_fence($1, $2) FOR UPDATE").await }; },
            quote! { tracing::info!(target: "x", "DELETE FROM t WHERE leader_fence($1, $2)"); },
            quote! { run(pool, concat!("UPDATE t SET a = 1 ", "WHERE leader_fence($1, $2)")).await; },
        ] {
            claim_not_followed(body);
        }
        // Unfenced, the SQL's own error says what is wrong.
        one_error_containing(
            quote! { async fn claim(pool: &PgPool, fence: Fence) { sql("UPDATE t SET a = 1").execute(pool).await; } },
            "`UPDATE t` is not gated",
        );
    }

    /// Asserts that the one error of a body is that its claim is not followed.
    fn claim_not_followed(body: proc_macro2::TokenStream) {
        let item = quote! { async fn claim(pool: &PgPool, fence: Fence) { #body } };
        let errors = errors(item);
        assert!(
            errors.len() == 1
                && errors[0].starts_with(
                    "this claim is not sent where `#[fenced]` can see what is bound to it"
                ),
            "{body}: {errors:#?}"
        );
    }

    #[test]
    fn concat_of_literals_is_read_as_the_concatenated_sql() {
        let item = quote! {
            async fn claim(pool: &PgPool, fence: Fence) -> sqlx::Result<()> {
                sqlx::query(concat!("UPDATE t SET a = 1 ", "WHERE leader_fence($1, $2)"))
                    .bind(fence.role()).bind(fence.token()).execute(pool).await?;
                sqlx::query(concat!("DELETE FROM t ", concat!("WHERE id > ", 7, " AND "), "leader_fence($1, $2)"))
                    .bind(fence.role()).bind(fence.token()).execute(pool).await?;
                Ok(())
            }
        };
        assert_eq!(errors(item), Vec::<String>::new());
        // Read, and checked: the fence is missing.
        one_error_containing(
            quote! { async fn claim(pool: &PgPool, fence: Fence) { sqlx::query(concat!("UPDATE t ", "SET a = 1")).execute(pool).await; } },
            "`UPDATE t` is not gated",
        );
        // A non-literal argument cannot be read.
        one_error_containing(
            quote! { async fn claim(pool: &PgPool, fence: Fence) { sqlx::query(concat!("UPDATE t SET a = 1 WHERE ", WHERE)).bind(fence.role()).bind(fence.token()).execute(pool).await; } },
            "a claim must be literal SQL",
        );
    }

    #[test]
    fn sqlx_functions_are_followed_through_a_use_in_the_function() {
        let item = quote! {
            async fn claim(pool: &PgPool, fence: Fence) -> sqlx::Result<()> {
                use sqlx::query_as as rows_of;
                use ::sqlx::{query as sql, Row};
                let rows: Vec<(i64,)> = rows_of("SELECT id FROM t WHERE leader_fence($1, $2) FOR UPDATE")
                    .bind(fence.role()).bind(fence.token()).fetch_all(pool).await?;
                sql("DELETE FROM t WHERE leader_fence($1, $2)")
                    .bind(fence.role()).bind(fence.token()).execute(pool).await?;
                Ok(())
            }
        };
        assert_eq!(errors(item), Vec::<String>::new());
        // Followed means checked: the binds are wrong.
        one_error_containing(
            quote! { async fn claim(pool: &PgPool, fence: Fence) { use sqlx::query as sql; sql("DELETE FROM t WHERE leader_fence($1, $2)").bind(fence.token()).bind(fence.role()).execute(pool).await; } },
            "is the fence's role and must be bound to `fence.role()`",
        );
        // Not sqlx's, in another block, or shadowed by a local: a call the macro does not know,
        // whose query is sent.
        for body in [
            quote! { use other::query as sql; sql("DELETE FROM t WHERE leader_fence($1, $2)").bind(fence.role()).bind(fence.token()).execute(pool).await; },
            quote! { { use sqlx::query as sql; } sql("DELETE FROM t WHERE leader_fence($1, $2)").bind(fence.role()).bind(fence.token()).execute(pool).await; },
            quote! { use sqlx::query as sql; let sql = helper; sql("DELETE FROM t WHERE leader_fence($1, $2)").bind(fence.role()).bind(fence.token()).execute(pool).await; },
        ] {
            one_error_containing(
                quote! { async fn claim(pool: &PgPool, fence: Fence) { #body } },
                "cannot see the query `sql(..)` returns",
            );
        }
    }

    /// The send chain: a query sent must come from one of sqlx's query functions in the
    /// function, whatever a helper is given (a literal too: the helper may ignore it).
    #[test]
    fn a_query_a_helper_returns_is_refused_whatever_it_is_given() {
        for body in [
            quote! { labelled("nightly").execute(pool).await?; },
            quote! { labelled("SELECT 1").fetch_all(pool).await?; },
            quote! { labelled(name).fetch_optional(&mut *tx).await?; },
            quote! { sql("UPDATE t SET a = 1 WHERE leader_fence($1, $2)").bind(fence.role()).bind(fence.token()).execute(pool).await?; },
        ] {
            let item = quote! {
                async fn claim(pool: &PgPool, fence: Fence, name: &str) -> sqlx::Result<()> { #body Ok(()) }
            };
            let errors = errors(item);
            assert!(
                errors
                    .iter()
                    .any(|e| e.contains("`#[fenced]` cannot see the query")
                        && e.contains("help: build the query here")),
                "{body}: {errors:#?}"
            );
        }
        // An executor a call returns, given SQL the macro reads, is an `Executor` send.
        let item = quote! {
            async fn claim(fence: Fence) -> sqlx::Result<()> {
                pool().execute("SELECT 1").await?;
                pool().execute(sqlx::query("DELETE FROM t WHERE leader_fence($1, $2)").bind(fence.role()).bind(fence.token())).await?;
                Ok(())
            }
        };
        assert_eq!(errors(item), Vec::<String>::new());
    }

    #[test]
    fn reads_and_other_strings_are_not_claims() {
        let item = quote! {
            async fn claim(pool: &PgPool, fence: Fence) -> sqlx::Result<()> {
                sqlx::query("SELECT pg_advisory_xact_lock($1)").bind(42_i64).execute(pool).await?;
                let n: i64 = sqlx::query_scalar("SELECT count(*) FROM t").fetch_one(pool).await?;
                tracing::info!("update the count: {n}");
                Ok(())
            }
        };
        assert_eq!(errors(item), Vec::<String>::new());
    }

    #[test]
    fn text_read_from_a_file_is_refused() {
        one_error_containing(
            quote! { async fn claim(pool: &PgPool, fence: Fence) { run(include_str!("claim.sql")).await; } },
            "cannot check text read with `include_str!`",
        );
    }

    #[test]
    fn async_trait_rebinding_keeps_the_fence() {
        let item = quote! {
            fn claim<'a>(&'a self, fence: Fence) -> Pin<Box<dyn Future<Output = sqlx::Result<()>> + Send + 'a>> {
                Box::pin(async move {
                    let __self = self;
                    let fence = fence;
                    sqlx::query("DELETE FROM t WHERE leader_fence($1, $2)")
                        .bind(fence.role()).bind(fence.token()).execute(&__self.pool).await?;
                    Ok(())
                })
            }
        };
        assert_eq!(errors(item), Vec::<String>::new());
        one_error_containing(
            quote! { async fn claim(fence: Fence, other: Fence) { let fence = other; } },
            "this binding shadows the fence parameter",
        );
    }

    #[test]
    fn the_expansion_asks_the_compiler_to_confirm_the_fence_type() {
        let out = super::fenced(
            quote!(),
            quote!(
                async fn claim(pool: &PgPool, f: &Fence) {}
            ),
        )
        .to_string();
        assert!(
            out.contains(":: leader_runtime :: __private :: assert_fence_parameter (& f)"),
            "{out}"
        );
    }

    #[test]
    fn a_missing_fence_is_suggested_with_the_placeholders_already_bound_to_it() {
        one_error_containing(
            quote! {
                async fn claim(pool: &PgPool, fence: Fence) {
                    sqlx::query("UPDATE t SET a = 1 WHERE b = $3")
                        .bind(fence.role()).bind(fence.token()).bind(7).execute(pool).await;
                }
            },
            "add `AND leader_fence($1, $2)`",
        );
    }
}
