//! Every row-locking statement of the application is in a `#[fenced]` function, or says why it
//! needs no fence: the audit runs as this test compiles, and the test fails with what it found.

leader_runtime::assert_claims_fenced!("src");
