//! The migrations folder is what `leaderctl migrations write` and `leaderctl roles add` would
//! have written, and every row lock of the service is fenced.

#[test]
fn the_copied_framework_migrations_match_the_originals() {
    for file in leader_runtime::schema::MIGRATION_FILES {
        let name = file.name;
        let path = format!("{}/migrations/{name}", env!("CARGO_MANIFEST_DIR"));
        let copy = std::fs::read_to_string(&path).unwrap_or_else(|e| {
            panic!(
                "{path}: {e}: run `leaderctl migrations write migrations/` in examples/axum-service"
            )
        });
        assert!(
            file.sql == copy,
            "{path} differs from the framework's: run `leaderctl migrations write migrations/ --force`"
        );
    }
}

// Every row-locking statement is in a `#[fenced]` function or says why not.
leader_runtime::assert_claims_fenced!("src");
