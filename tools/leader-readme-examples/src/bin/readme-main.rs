//! The README's `main`, as a process: `tests/readme_main.rs` runs it to see what a user who
//! follows the README sees when start-up fails.

fn main() -> Result<(), Box<dyn std::error::Error>> {
    leader_readme_examples::readme_main()
}
