//! An option the macro does not know.
use leader_runtime::{TickContext, leader_role};

#[leader_role("billing", every = "1h", timeout = "5s")]
async fn job(_tick: TickContext) -> Result<(), std::io::Error> {
    Ok(())
}

fn main() {}
