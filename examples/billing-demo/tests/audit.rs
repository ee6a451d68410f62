//! Every row-locking statement of the application is in a `#[fenced]` function, or says why it
//! needs no fence.

#[test]
fn every_row_lock_is_fenced() {
    leader_runtime::audit::assert_claims_fenced("src");
}
