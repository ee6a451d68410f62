//! An interval in an unknown form.
use leader_runtime::{TickContext, leader_role};

#[leader_role("billing", every = "1 hour")]
async fn job(_tick: TickContext) -> Result<(), std::io::Error> {
    Ok(())
}

fn main() {}
