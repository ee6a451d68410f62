//! A builder job that takes `State<App>` on a builder that was given no state.
use std::time::Duration;

use leader_runtime::{JobError, Role, Runtime, State, TickContext};

#[derive(Clone)]
struct App;

async fn bill(_tick: TickContext, State(_app): State<App>) -> Result<(), JobError> {
    Ok(())
}

fn build(pool: sqlx::PgPool) {
    let _ = Runtime::builder(pool).role(Role::from_static("billing"), Duration::from_secs(60), bill);
}

fn main() {}
