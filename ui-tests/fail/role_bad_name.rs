//! A role name that breaks the rule.
use leader_runtime::{TickContext, leader_role};

#[leader_role("Billing-EU", every = "1h")]
async fn job(_tick: TickContext) -> Result<(), std::io::Error> {
    Ok(())
}

fn main() {}
