//! A job that does not return a Result.
use leader_runtime::{TickContext, leader_role};

#[leader_role("billing", every = "1h")]
async fn job(_tick: TickContext) {}

fn main() {}
