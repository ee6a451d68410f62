//! No interval.
use leader_runtime::{TickContext, leader_role};

#[leader_role("billing")]
async fn job(_tick: TickContext) -> Result<(), std::io::Error> {
    Ok(())
}

fn main() {}
