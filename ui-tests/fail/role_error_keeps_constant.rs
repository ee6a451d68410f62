//! A bad interval is the only error: the role constant is still defined, so its use is fine.
use leader_runtime::{TickContext, leader_role};

#[leader_role("billing", every = "soon")]
async fn bill(_tick: TickContext) -> Result<(), std::io::Error> {
    Ok(())
}

fn main() {
    let _ = BILLING.as_str();
}
