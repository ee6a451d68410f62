//! An error type that does not convert into `Box<dyn Error + Send + Sync>`.
use leader_runtime::{TickContext, leader_role};

struct NotAnError;

#[leader_role("billing", every = "1h")]
async fn bill(_tick: TickContext) -> Result<(), NotAnError> {
    Ok(())
}

fn main() {}
