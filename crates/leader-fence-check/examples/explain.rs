//! Prints what the fence rules say of each SQL statement given on the command line:
//! `cargo run -p leader-fence-check --example explain -- "UPDATE jobs SET …"`.

fn main() {
    for sql in std::env::args().skip(1) {
        let c = leader_fence_check::check(&sql);
        println!(
            "== {sql}\n statements={} fences={:?}",
            c.statements,
            c.fences
                .iter()
                .map(|f| (f.role, f.token))
                .collect::<Vec<_>>()
        );
        for e in c.errors {
            println!(" - {} @ {:?}", e.message, e.at);
        }
    }
}
