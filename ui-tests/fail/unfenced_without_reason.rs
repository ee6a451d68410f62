//! The opt-out from the fence audit needs a reason, and a non-empty one.
use leader_runtime::unfenced;

#[unfenced]
fn sweep() {}

#[unfenced(reason = "  ")]
fn repair() {}

#[unfenced(because = "x")]
fn other() {}

fn main() {
    sweep();
    repair();
    other();
}
