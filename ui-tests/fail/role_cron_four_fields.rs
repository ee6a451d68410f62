//! A cron expression with a field missing.
use leader_runtime::{TickContext, leader_role};

#[leader_role("billing", cron = "0 2 * *")]
async fn short(_tick: TickContext) -> Result<(), std::io::Error> {
    Ok(())
}

fn main() {}
