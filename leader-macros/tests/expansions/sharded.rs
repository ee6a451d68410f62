// What you write:
//
// #[leader_role("webhook_delivery", every = "200ms", shards = 8)]
// async fn deliver_webhooks(tick: TickContext) -> Result<(), JobError> {
//     let fence = tick.shard_fence().expect("a sharded role's tick holds a shard");
//     deliver(claim_webhooks(tick.pool(), fence).await?).await
// }
//
// What the macro emits in its place:

async fn deliver_webhooks(tick: TickContext) -> Result<(), JobError> {
    let fence = tick.shard_fence().expect("a sharded role's tick holds a shard");
    deliver(claim_webhooks(tick.pool(), fence).await?).await
}

/// The `webhook_delivery` leader role, led by [`deliver_webhooks`] every 200ms, in 8 shards.
const WEBHOOK_DELIVERY: ::leader_runtime::Role = ::leader_runtime::Role::from_static(
    "webhook_delivery",
);

const _: &[u8] = ::core::include_bytes!("/path/to/crate/leader-schema.json");

const _: &[u8] = ::core::include_bytes!(
    "/path/to/crate/tests/fixtures/migrations/0001_tables.sql"
);

#[doc(hidden)]
#[allow(non_snake_case)]
fn __leader_tick_for_deliver_webhooks(
    tick: ::leader_runtime::TickContext,
) -> TickContext {
    tick
}

#[doc(hidden)]
#[allow(non_snake_case)]
fn __leader_result_of_deliver_webhooks(
    result: Result<(), JobError>,
) -> ::core::result::Result<(), ::leader_runtime::JobError> {
    ::leader_runtime::__private::JobResult::into_job_result(result)
}

::leader_runtime::__private::inventory::submit! {
    ::leader_runtime::__private::JobRegistration {
        role: WEBHOOK_DELIVERY,
        schedule: ::leader_runtime::__private::RegisteredSchedule::Every(
            ::leader_runtime::__private::Duration::from_millis(200),
        ),
        job: ::leader_runtime::__private::RegisteredJob::TickOnly(|__leader_tick| {
            ::std::boxed::Box::pin(async move {
                __leader_result_of_deliver_webhooks(
                    deliver_webhooks(__leader_tick_for_deliver_webhooks(__leader_tick))
                        .await,
                )
            })
        }),
        name: ::core::concat!(::core::module_path!(), "::deliver_webhooks"),
        shard_count: ::core::option::Option::Some(8u32),
    }
}
