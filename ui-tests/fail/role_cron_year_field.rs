//! A cron expression with a seventh field (a year): croner alone would take it, the framework
//! takes 5 or 6 fields only.
use leader_runtime::{TickContext, leader_role};

#[leader_role("billing", cron = "0 0 2 * * * 2030")]
async fn yearly(_tick: TickContext) -> Result<(), std::io::Error> {
    Ok(())
}

fn main() {}
