// What you write:
//
// #[leader_role("billing", every = "1h")]
// pub async fn bill(tick: TickContext) -> Result<(), BillingError> {
//     billing::run(tick.pool(), tick.fence()).await
// }
//
// What the macro emits in its place:

pub async fn bill(tick: TickContext) -> Result<(), BillingError> {
    billing::run(tick.pool(), tick.fence()).await
}

/// The `billing` leader role, led by [`bill`] every 1h.
pub const BILLING: ::leader_runtime::Role = ::leader_runtime::Role::from_static(
    "billing",
);

const _: &[u8] = ::core::include_bytes!("/path/to/crate/leader-schema.json");

const _: &[u8] = ::core::include_bytes!(
    "/path/to/crate/tests/fixtures/migrations/0001_tables.sql"
);

#[doc(hidden)]
#[allow(non_snake_case)]
fn __leader_tick_for_bill(tick: ::leader_runtime::TickContext) -> TickContext {
    tick
}

#[doc(hidden)]
#[allow(non_snake_case)]
fn __leader_result_of_bill(
    result: Result<(), BillingError>,
) -> ::core::result::Result<(), ::leader_runtime::JobError> {
    ::leader_runtime::__private::JobResult::into_job_result(result)
}

::leader_runtime::__private::inventory::submit! {
    ::leader_runtime::__private::JobRegistration {
        role: BILLING,
        schedule: ::leader_runtime::__private::RegisteredSchedule::Every(
            ::leader_runtime::__private::Duration::from_secs(3600),
        ),
        job: ::leader_runtime::__private::RegisteredJob::TickOnly(|__leader_tick| {
            ::std::boxed::Box::pin(async move {
                __leader_result_of_bill(
                    bill(__leader_tick_for_bill(__leader_tick)).await,
                )
            })
        }),
        name: ::core::concat!(::core::module_path!(), "::bill"),
        shard_count: ::core::option::Option::None,
    }
}
