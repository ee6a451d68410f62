//! A shard count above the 1024 the lease table allows.
use leader_runtime::{TickContext, leader_role};

#[leader_role("billing", every = "1h", shards = 1025)]
async fn job(_tick: TickContext) -> Result<(), std::io::Error> {
    Ok(())
}

fn main() {}
