//! A job that is not async.
use leader_runtime::{TickContext, leader_role};

#[leader_role("billing", every = "1h")]
fn job(_tick: TickContext) -> Result<(), std::io::Error> {
    Ok(())
}

fn main() {}
