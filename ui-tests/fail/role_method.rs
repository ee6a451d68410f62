//! A job written as a method.
use leader_runtime::{TickContext, leader_role};

struct Biller;

impl Biller {
    #[leader_role("billing", every = "1h")]
    async fn job(&self, _tick: TickContext) -> Result<(), std::io::Error> {
        Ok(())
    }
}

fn main() {}
