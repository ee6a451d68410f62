//! The lease statements a runtime sends: ACQUIRE, RENEW and RELEASE.
//!
//! | statement | what it does | guarded by, in its own `WHERE` |
//! |---|---|---|
//! | ACQUIRE | issues a new token, sets the holder and `expires_at = now() + ttl` and records the caller's anchor | the role's shard count is the caller's; unpaused; unheld or expired (a live lease whose holder's anchor session ended is first ended early, and granted by the next ACQUIRE); the caller's anchor session (if it names one) lives; past `not_before`; last completed tick at least one interval ago; a calendar role's instant due on the database clock and later than `last_completed_instant` (with `missed = each`, the next one after it) |
//! | RENEW | `expires_at = now() + ttl` | this token holds the role; unexpired (a released or paused row has no expiry) |
//! | RELEASE | clears the holder; stamps the tick or sets a cooldown, by the tick's outcome | this token holds the role; the role is held |
//!
//! These rows are `docs/architecture.md`'s, word for word (a test of the README examples
//! crate compares them), as are [`ReleaseOutcome`]'s and
//! [`crate::operator`]'s.
//!
//! (The operator's PAUSE, UNPAUSE and CLEAR COOLDOWN are in [`crate::operator`].) One more
//! statement, [`leave`], deletes a stopping replica's presence rows, which only decide how
//! ACQUIRE spreads a sharded role's shards.
//!
//! **One text per statement.** ACQUIRE, RENEW and RELEASE take any number of leases in one
//! statement, so a replica's idle cost grows with the number of replicas, not with leases ×
//! replicas; the one-lease calls ([`acquire_one`], [`renew_one`], [`release`]) are one-element
//! calls of the same text. Each lease's grant, renewal or release is still a compare-and-set on
//! its own row, decided by the guards above, which
//! sit next to each statement's SQL as data ([`ACQUIRE_GUARDS`], [`RENEW_GUARDS`],
//! [`RELEASE_GUARDS`]) for the protocol model, whose guard tests fail if a WHERE and its list
//! disagree.
//!
//! Every statement is one autocommit round trip evaluated on the database clock (`now()`), and
//! leaves nothing on the connection: no session `SET`, no advisory lock, no `LISTEN`, and no
//! prepared statement at all: each is sent as one `Query` message with its values inlined (see
//! the `inline` module for why and how that is injection-proof). So they work unchanged behind a
//! transaction-mode pooler such as PgBouncer 1.18 or RDS Proxy.
//!
//! # Statement timeout
//!
//! Each statement is bounded twice. The caller stops waiting after
//! [`Timings::statement_timeout`](crate::Timings::statement_timeout) (reported as
//! [`StatementError::Timeout`](crate::StatementError::Timeout)). The server also stops waiting
//! for a lease row's lock, after four fifths of that (so it is the server that reports a lock
//! wait, as a lock timeout): the statement sets `lock_timeout` with
//! `set_config(.., is_local => true)`, which lasts only until the statement's own implicit
//! transaction ends, before it touches a row. A session-level `statement_timeout` would need a
//! session `SET` (which a transaction pooler would leak to the next client), so a statement that
//! is slow for another reason than a row lock runs to completion on the server.
//!
//! That is harmless because every write is conditional on the token. A RENEW or RELEASE that lands
//! late either still finds its token holding the role, and then does what it would have done on
//! time (a late RENEW extends the lease of a holder that gave up by at most one TTL, which only
//! delays the next grant), or finds another token there and changes nothing. Nothing late can hand
//! a lease to a stale holder or take one from a newer holder.

mod acquire;
mod anchor;
mod history;
mod leave;
mod release;
mod renew;
mod wanted;

pub use acquire::{
    ACQUIRE_GUARDS, Acquired, Grant, Refusal, RefusalReason, TAKEOVER_GUARDS, acquire,
    acquire_anchored, acquire_one, acquire_text,
};
pub use anchor::{
    ANCHOR_ENDED_CHANNEL, ANCHOR_LOCK_CLASS, Anchor, AnchorError, AnchorWait, RingKey,
    WATCHER_APPLICATION_NAME, await_anchor_end, next_in_ring,
};
#[doc(hidden)]
pub use history::{ACQUIRE_HISTORY, RELEASE_HISTORY};
pub use leave::leave;
pub use release::{
    LeaseEnd, RELEASE_GUARDS, RELEASED_CHANNEL, Released, release, release_many, release_waking,
};
pub use renew::{LossReason, RENEW_GUARDS, Renewed, renew, renew_one};
pub use wanted::Wanted;

#[cfg(doc)]
use crate::ReleaseOutcome;
