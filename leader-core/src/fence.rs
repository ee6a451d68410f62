//! The fence: proof of leadership that claim queries check in their own WHERE.

use crate::guard::{Guard, Guarded};
use crate::{Role, Shard, ShardFence};

/// The role and fencing token of one granted tick.
///
/// A `Fence` is only ever produced by a successful ACQUIRE ([`crate::lease::acquire`]); there is
/// no public constructor. Holding one proves nothing by itself: a claim query proves it by carrying
/// `AND leader_fence($1, $2)` in the WHERE of the query that selects the claimed rows, bound to
/// [`Fence::role`] and [`Fence::token`] in that order. The database then answers for the holder at
/// the instant the claim statement starts, so a superseded, paused or expired holder claims nothing.
///
/// The fence of one shard of a sharded role is false in `leader_fence(role, token)`: its claims
/// take [`Fence::shard_fence`] and the four-argument form ([`ShardFence`]).
///
/// In a transaction, non-persistent, so that it also works behind a transaction-mode pooler
/// (see `leader_core::pooler`):
///
/// ```no_run
/// # async fn claim(pool: &sqlx::PgPool, fence: leader_core::Fence) -> Result<(), sqlx::Error> {
/// let mut tx = pool.begin().await?;
/// let ids: Vec<i64> = sqlx::query_scalar(
///     "SELECT id FROM outbox WHERE sent_at IS NULL AND leader_fence($1, $2)
///      ORDER BY id LIMIT 100 FOR UPDATE SKIP LOCKED",
/// )
/// .persistent(false)
/// .bind(fence.role())
/// .bind(fence.token())
/// .fetch_all(&mut *tx)
/// .await?;
/// // ... mark them claimed in the same transaction ...
/// tx.commit().await?;
/// # Ok(()) }
/// ```
#[derive(Debug, Clone, Copy, PartialEq, Eq, Hash)]
pub struct Fence {
    role: Role,
    token: i64,
    shard: Option<Shard>,
}

impl Fence {
    pub(crate) const fn granted(role: Role, shard: Option<Shard>, token: i64) -> Fence {
        Fence { role, token, shard }
    }

    /// A fence that no ACQUIRE granted, for fakes of the statement layer in tests.
    ///
    /// Only with the `test-support` feature. The database still decides: a forged fence passes
    /// `leader_fence` only if that token really holds the role.
    #[cfg(feature = "test-support")]
    pub const fn forge(role: Role, token: i64) -> Fence {
        Fence {
            role,
            token,
            shard: None,
        }
    }

    /// The role this fence leads; bind it as the first argument of `leader_fence`.
    pub const fn role(&self) -> Role {
        self.role
    }

    /// The fencing token; bind it as the second argument of `leader_fence`.
    pub const fn token(&self) -> i64 {
        self.token
    }

    /// The shard this fence's lease is, for a sharded role; `None` for an unsharded one.
    pub const fn shard(&self) -> Option<Shard> {
        self.shard
    }

    /// The fence to claim a shard's rows with, for a sharded role's lease; `None` for an
    /// unsharded role, whose claims bind [`Fence::role`] and [`Fence::token`].
    pub const fn shard_fence(&self) -> Option<ShardFence> {
        match self.shard {
            Some(shard) => Some(ShardFence::granted(self.role, shard, self.token)),
            None => None,
        }
    }
}

/// The guards of `leader_fence` (in the framework migration), for the protocol model: a claim
/// succeeds in the model iff every guard here holds (`tools/leader-model/src/guards.rs`); its guard tests fail
/// if this list, the function's WHERE and the model disagree. The migration itself carries no
/// pointer back here: sqlx checksums applied migrations, so its text stays as released.
#[doc(hidden)]
pub const FENCE_GUARDS: Guarded = Guarded {
    statement: "leader_fence",
    sql: include_str!("../migrations/20261206000000_leader_shards.up.sql"),
    where_after: "CREATE OR REPLACE FUNCTION leader_fence(p_role text, p_token bigint)",
    guards: &[
        Guard {
            name: "holds_token",
            sql: "holder_token = p_token",
        },
        Guard {
            name: "unexpired",
            sql: "expires_at > statement_timestamp()",
        },
    ],
    plumbing: &["role = p_role", "shard_index = 0", "shard_count = 1"],
};
