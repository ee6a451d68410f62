//! A job that takes the application's state: `State<T>` as its second parameter, given by the
//! builder's `with_state`; a builder job takes it the same way.
use std::sync::Arc;
use std::time::Duration;

use leader_runtime::{JobError, Role, Runtime, State, TickContext, leader_role};

#[derive(Clone)]
struct App {
    greeting: Arc<str>,
}

#[leader_role("billing", every = "1h")]
async fn bill(tick: TickContext, State(app): State<App>) -> Result<(), JobError> {
    let _ = (tick.fence(), app.greeting.len());
    Ok(())
}

async fn report(_tick: TickContext, State(app): State<App>) -> Result<(), std::io::Error> {
    let _ = app.greeting;
    Ok(())
}

#[tokio::main]
async fn main() {
    let pool = sqlx::postgres::PgPoolOptions::new()
        .connect_lazy("postgres://unused@localhost/unused")
        .unwrap();
    let runtime = Runtime::builder(pool)
        .with_state(App {
            greeting: Arc::from("hello"),
        })
        .registered_jobs()
        .role(Role::from_static("reports"), Duration::from_secs(60), report)
        .build()
        .unwrap();
    assert_eq!(runtime.roles(), [BILLING, Role::from_static("reports")]);
}
