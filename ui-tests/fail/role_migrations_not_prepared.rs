//! A role missing from the migrations folder named by `migrations = "..."`.
use leader_runtime::{TickContext, leader_role};

#[leader_role("billing", every = "1h", migrations = "db/migrations")]
async fn job(_tick: TickContext) -> Result<(), std::io::Error> {
    Ok(())
}

fn main() {}
