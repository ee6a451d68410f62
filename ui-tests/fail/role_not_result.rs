//! A job returning something other than a Result.
use leader_runtime::{TickContext, leader_role};

#[leader_role("billing", every = "1h")]
async fn job(_tick: TickContext) -> Option<()> {
    None
}

fn main() {}
