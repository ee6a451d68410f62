// What you write:
//
// #[leader_role(
//     "nightly_report",
//     cron = "0 2 * * *",
//     tz = "Europe/Berlin",
//     missed = "each",
//     migrations = "tests/fixtures/migrations"
// )]
// async fn nightly_report(tick: TickContext) -> Result<(), ReportError> {
//     reports::write_for(tick.tick_instant().expect("a calendar role's tick serves an instant")).await
// }
//
// What the macro emits in its place:

async fn nightly_report(tick: TickContext) -> Result<(), ReportError> {
    reports::write_for(
            tick.tick_instant().expect("a calendar role's tick serves an instant"),
        )
        .await
}

/// The `nightly_report` leader role, led by [`nightly_report`] cron "0 2 * * *" in Europe/Berlin, missed instants: each.
const NIGHTLY_REPORT: ::leader_runtime::Role = ::leader_runtime::Role::from_static(
    "nightly_report",
);

const _: &[u8] = ::core::include_bytes!("/path/to/crate/leader-schema.json");

const _: &[u8] = ::core::include_bytes!(
    "/path/to/crate/tests/fixtures/migrations/0001_tables.sql"
);

#[doc(hidden)]
#[allow(non_snake_case)]
fn __leader_tick_for_nightly_report(tick: ::leader_runtime::TickContext) -> TickContext {
    tick
}

#[doc(hidden)]
#[allow(non_snake_case)]
fn __leader_result_of_nightly_report(
    result: Result<(), ReportError>,
) -> ::core::result::Result<(), ::leader_runtime::JobError> {
    ::leader_runtime::__private::JobResult::into_job_result(result)
}

::leader_runtime::__private::inventory::submit! {
    ::leader_runtime::__private::JobRegistration {
        role: NIGHTLY_REPORT,
        schedule: ::leader_runtime::__private::RegisteredSchedule::Cron {
            expr: "0 2 * * *",
            zone: "Europe/Berlin",
            missed: "each",
        },
        job: ::leader_runtime::__private::RegisteredJob::TickOnly(|__leader_tick| {
            ::std::boxed::Box::pin(async move {
                __leader_result_of_nightly_report(
                    nightly_report(__leader_tick_for_nightly_report(__leader_tick)).await,
                )
            })
        }),
        name: ::core::concat!(::core::module_path!(), "::nightly_report"),
        shard_count: ::core::option::Option::None,
    }
}
