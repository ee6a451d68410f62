//! `migrations = "..."` naming another folder than the one the prepared schema came from.
use leader_runtime::{TickContext, leader_role};

#[leader_role("billing", every = "1h", migrations = "db/migrations")]
async fn job(_tick: TickContext) -> Result<(), std::io::Error> {
    Ok(())
}

fn main() {}
