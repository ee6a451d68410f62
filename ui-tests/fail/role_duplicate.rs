//! Two jobs for one role in one module.
use leader_runtime::{TickContext, leader_role};

#[leader_role("billing", every = "1h")]
async fn bill(_tick: TickContext) -> Result<(), std::io::Error> {
    Ok(())
}

#[leader_role("billing", every = "5m")]
async fn bill_again(_tick: TickContext) -> Result<(), std::io::Error> {
    Ok(())
}

fn main() {}
