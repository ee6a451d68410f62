//! The guards of the lease statements and of the fence, as data, for the protocol model.
//!
//! Not API: this module exists so that the model checker in `tools/leader-model/` (package `leader-model`)
//! can be tied to the SQL it models. Each guarded statement's WHERE is a conjunction, and every
//! conjunct in it is either a [`Guard`] (a protocol condition, which the model evaluates by name)
//! or plumbing (selecting the role's row, binding the lock timeout). `leader-model`'s guard tests
//! fail when the SQL's conjuncts and a list here disagree, or when the model does not evaluate
//! exactly the guards listed here.

/// One protocol condition in a statement's WHERE.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub struct Guard {
    /// The name the model matches on.
    pub name: &'static str,
    /// The conjunct exactly as the statement has it (whitespace aside).
    pub sql: &'static str,
}

/// A statement (or the fence function) with the conjuncts of the WHERE that decides it.
#[derive(Debug, Clone, Copy)]
pub struct Guarded {
    /// The statement's name, as in errors and logs.
    pub statement: &'static str,
    /// The text that contains the WHERE: the statement, or the migration defining the function.
    pub sql: &'static str,
    /// Where in `sql` the deciding WHERE starts to be searched for: its first `WHERE` after this.
    pub where_after: &'static str,
    /// The protocol conditions, each one conjunct.
    pub guards: &'static [Guard],
    /// The other conjuncts, which only select the row or bind the lock timeout.
    pub plumbing: &'static [&'static str],
}
