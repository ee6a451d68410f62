//! A role the migrations' CHECK constraint does not list.
use leader_runtime::{TickContext, leader_role};

#[leader_role("invoicing", every = "1h")]
async fn job(_tick: TickContext) -> Result<(), std::io::Error> {
    Ok(())
}

fn main() {}
