//! A zero interval.
use leader_runtime::{TickContext, leader_role};

#[leader_role("billing", every = "0s")]
async fn job(_tick: TickContext) -> Result<(), std::io::Error> {
    Ok(())
}

fn main() {}
