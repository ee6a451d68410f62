//! A job taking the tick context by reference.
use leader_runtime::{TickContext, leader_role};

#[leader_role("billing", every = "1h")]
async fn job(_tick: &TickContext) -> Result<(), std::io::Error> {
    Ok(())
}

fn main() {}
