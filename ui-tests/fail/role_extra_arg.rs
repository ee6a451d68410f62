//! A job taking two parameters.
use leader_runtime::{TickContext, leader_role};

#[leader_role("billing", every = "1h")]
async fn job(_tick: TickContext, _n: u32) -> Result<(), std::io::Error> {
    Ok(())
}

fn main() {}
