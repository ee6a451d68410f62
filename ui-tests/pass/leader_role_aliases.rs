//! Type aliases and renamed imports in a job's signature: rustc checks the types, not the names.
use leader_runtime::TickContext as Tick;

type Outcome = Result<(), std::io::Error>;

#[leader_runtime::leader_role("dunning", every = "1m")]
async fn aliased(_tick: Tick) -> Outcome {
    Ok(())
}

fn main() {
    assert_eq!(DUNNING.as_str(), "dunning");
}
