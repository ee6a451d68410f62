//! A shard count written as a string.
use leader_runtime::{TickContext, leader_role};

#[leader_role("billing", every = "1h", shards = "8")]
async fn job(_tick: TickContext) -> Result<(), std::io::Error> {
    Ok(())
}

fn main() {}
