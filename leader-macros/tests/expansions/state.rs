// What you write:
//
// #[leader_role("reminders", every = "5m")]
// async fn send_reminders(tick: TickContext, State(app): State<App>) -> Result<(), JobError> {
//     app.mailer.send_due(tick.pool(), tick.fence()).await
// }
//
// What the macro emits in its place:

async fn send_reminders(
    tick: TickContext,
    State(app): State<App>,
) -> Result<(), JobError> {
    app.mailer.send_due(tick.pool(), tick.fence()).await
}

/// The `reminders` leader role, led by [`send_reminders`] every 5m.
const REMINDERS: ::leader_runtime::Role = ::leader_runtime::Role::from_static(
    "reminders",
);

const _: &[u8] = ::core::include_bytes!("/path/to/crate/leader-schema.json");

const _: &[u8] = ::core::include_bytes!(
    "/path/to/crate/tests/fixtures/migrations/0001_tables.sql"
);

#[doc(hidden)]
#[allow(non_snake_case)]
fn __leader_tick_for_send_reminders(tick: ::leader_runtime::TickContext) -> TickContext {
    tick
}

#[doc(hidden)]
#[allow(non_snake_case)]
fn __leader_result_of_send_reminders(
    result: Result<(), JobError>,
) -> ::core::result::Result<(), ::leader_runtime::JobError> {
    ::leader_runtime::__private::JobResult::into_job_result(result)
}

::leader_runtime::__private::inventory::submit! {
    ::leader_runtime::__private::JobRegistration {
        role: REMINDERS,
        schedule: ::leader_runtime::__private::RegisteredSchedule::Every(
            ::leader_runtime::__private::Duration::from_secs(300),
        ),
        job: ::leader_runtime::__private::RegisteredJob::WithState {
            state: ::leader_runtime::__private::TypeId::of::<App>,
            state_name: ::leader_runtime::__private::type_name::<App>,
            call: |__leader_tick, __leader_state| {
                ::leader_runtime::__private::call_with_state::<
                    App,
                    _,
                    _,
                    _,
                >(
                    __leader_tick_for_send_reminders(__leader_tick),
                    __leader_state,
                    send_reminders,
                )
            },
        },
        name: ::core::concat!(::core::module_path!(), "::send_reminders"),
        shard_count: ::core::option::Option::None,
    }
}
