//! The lease protocol behind `leader-runtime`: leadership of a role is a row in `leader_leases`,
//! claimed for one tick by a single statement on the database clock.
//!
//! * [`lease`]: the statements a runtime sends (ACQUIRE, RENEW, RELEASE), each one text for any
//!   number of roles.
//! * [`operator`]: the operator's statements (PAUSE, UNPAUSE, CLEAR COOLDOWN).
//! * [`Fence`]: the proof a claim query checks with `leader_fence(role, token)`; [`ShardFence`],
//!   with [`Shard`], the same for one shard of a sharded role.
//! * [`Role`], [`Timings`], [`ReleaseOutcome`]: the protocol's vocabulary.
//! * [`Statement`]: the name each statement carries in a leading SQL comment, and in its
//!   [`StatementError`].
//! * [`schema`]: the framework migrations and the start-up check [`check_schema_ready`].
//! * [`pooler`]: what a transaction-mode pooler breaks; the checks that a direct connection is
//!   PostgreSQL's own session and that a pool's statements survive the pooler in front of it.
//! * [`status`]: `leader_status` as typed rows; [`history`]: the last ticks of every lease, and
//!   how each lease ended.
//!
//! Applications use these through `leader-runtime`, which re-exports them.
//!
//! # Invariants
//!
//! 1. At most one holder per role: ACQUIRE grants only an unheld or expired row (a lease whose
//!    holder's anchor session the server no longer has is first ended early: [`lease::Anchor`]);
//!    concurrent ACQUIREs serialize on the row lock (tested by racing 16 and 64 acquirers).
//! 2. A token never decreases, and is never issued twice: each grant issues
//!    `greatest(token + 1, clock ms)`, and rows are seeded from the clock.
//! 3. A released tick is stamped as done only if it completed ([`ReleaseOutcome`]).
//! 4. A claim carrying the fence claims nothing unless its token holds the role, unpaused and
//!    unexpired, when the claim statement starts.

#![warn(missing_docs)]

mod error;
mod fence;
#[doc(hidden)]
pub mod guard;
pub mod history;
mod inline;
pub mod lease;
pub mod operator;
mod outcome;
pub mod pooler;
mod role;
pub mod schema;
mod send;
mod shard;
mod statement;
pub mod status;
mod timings;

pub use error::StatementError;
#[doc(hidden)]
pub use fence::FENCE_GUARDS;
pub use fence::Fence;
pub use outcome::ReleaseOutcome;
pub use role::{Role, RoleNameError, validate as validate_role_name};
pub use schema::{SchemaError, check_schema_ready};
pub use shard::{MAX_SHARDS, Shard, ShardError, ShardFence};
pub use statement::Statement;
pub use timings::{TimingParts, Timings, TimingsError};
