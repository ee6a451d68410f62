//! Compile tests for `leader-macros`; see `tests/ui.rs`. The crate itself is empty.
