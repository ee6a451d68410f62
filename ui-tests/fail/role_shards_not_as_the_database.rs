//! `fanout` has 4 shards in the database the migrations make: a job that leads it unsharded
//! would be refused at start-up.
use leader_runtime::{TickContext, leader_role};

#[leader_role("fanout", every = "1h")]
async fn job(_tick: TickContext) -> Result<(), std::io::Error> {
    Ok(())
}

fn main() {}
