//! An absolute migrations path.
use leader_runtime::{TickContext, leader_role};

#[leader_role("billing", every = "1h", migrations = "/srv/app/migrations")]
async fn job(_tick: TickContext) -> Result<(), std::io::Error> {
    Ok(())
}

fn main() {}
