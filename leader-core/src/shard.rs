//! Shards: one role's lease split into several rows, each leased on its own.

use std::fmt;

use crate::Role;

pub use leader_role_name::MAX_SHARDS;

/// Which shard of a sharded role a lease is: its index and the role's shard count, the lease row's
/// `shard_index` and `shard_count`.
///
/// ```
/// use leader_core::Shard;
/// let shard = Shard::new(3, 8)?;
/// assert_eq!((shard.index(), shard.count()), (3, 8));
/// assert!(Shard::new(8, 8).is_err());
/// # Ok::<(), leader_core::ShardError>(())
/// ```
#[derive(Debug, Clone, Copy, PartialEq, Eq, Hash, PartialOrd, Ord)]
pub struct Shard {
    index: u32,
    count: u32,
}

/// Why [`Shard::new`] refused.
#[derive(Debug, Clone, PartialEq, Eq, thiserror::Error)]
#[non_exhaustive]
pub enum ShardError {
    /// The count is 0 or above [`MAX_SHARDS`].
    #[error("a shard count of {0} is out of range: a sharded role has 1 to {MAX_SHARDS} shards")]
    Count(u32),
    /// The index is not below the count.
    #[error("shard index {index} is out of range for {count} shards: indexes run from 0 to {}", count - 1)]
    Index {
        /// The index given.
        index: u32,
        /// The count given.
        count: u32,
    },
}

impl Shard {
    /// The one row of an unsharded role.
    pub(crate) const SOLE: Shard = Shard { index: 0, count: 1 };

    /// Shard `index` of `count` (`0 <= index < count <= MAX_SHARDS`).
    ///
    /// # Errors
    ///
    /// [`ShardError`] naming the value out of range.
    pub const fn new(index: u32, count: u32) -> Result<Shard, ShardError> {
        if count == 0 || count > MAX_SHARDS {
            return Err(ShardError::Count(count));
        }
        if index >= count {
            return Err(ShardError::Index { index, count });
        }
        Ok(Shard { index, count })
    }

    /// The shard's index, from 0: the row's `shard_index`.
    pub const fn index(self) -> u32 {
        self.index
    }

    /// How many shards the role has: the row's `shard_count`.
    pub const fn count(self) -> u32 {
        self.count
    }
}

impl fmt::Display for Shard {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        write!(f, "{}/{}", self.index, self.count)
    }
}

/// The fence of one shard of a sharded role: the role, the shard and the fencing token of one
/// granted tick.
///
/// Like [`Fence`](crate::Fence), only a grant produces one ([`Fence::shard_fence`] of a sharded
/// grant's fence), and it proves nothing by itself: a claim proves it with the four-argument
/// `leader_fence` and selects only the shard's rows with `leader_shard_of`, both in the `WHERE` of
/// the query that selects the claimed rows, on the same placeholders:
///
/// ```no_run
/// # async fn claim(pool: &sqlx::PgPool, fence: leader_core::ShardFence) -> Result<(), sqlx::Error> {
/// let mut tx = pool.begin().await?;
/// let ids: Vec<i64> = sqlx::query_scalar(
///     "SELECT id FROM webhooks
///       WHERE sent_at IS NULL
///         AND leader_fence($1, $2, $3, $4)
///         AND leader_shard_of(id, $3) = $2
///       ORDER BY id LIMIT 50 FOR UPDATE SKIP LOCKED",
/// )
/// .persistent(false)
/// .bind(fence.role())
/// .bind(fence.shard_index())
/// .bind(fence.shard_count())
/// .bind(fence.token())
/// .fetch_all(&mut *tx)
/// .await?;
/// // ... mark them claimed in the same transaction ...
/// tx.commit().await?;
/// # Ok(()) }
/// ```
///
/// `leader_fence(role, shard_index, shard_count, token)` is true only while the token holds that
/// shard's row and the role has that many shards, so a fence from before a change of the shard
/// count claims nothing; `leader_shard_of(key, shard_count)` is the shard a key belongs to (a hash
/// of the key; `bigint`, `text` and `uuid` keys).
///
/// [`Fence::shard_fence`]: crate::Fence::shard_fence
#[derive(Debug, Clone, Copy, PartialEq, Eq, Hash)]
pub struct ShardFence {
    role: Role,
    shard: Shard,
    token: i64,
}

impl ShardFence {
    pub(crate) const fn granted(role: Role, shard: Shard, token: i64) -> ShardFence {
        ShardFence { role, shard, token }
    }

    /// A shard fence that no ACQUIRE granted, for fakes and a job's unit tests. Only with the
    /// `test-support` feature; the database still decides whether it holds.
    #[cfg(feature = "test-support")]
    pub const fn forge(role: Role, shard: Shard, token: i64) -> ShardFence {
        ShardFence { role, shard, token }
    }

    /// The role; bind it as the first argument of `leader_fence`.
    pub const fn role(&self) -> Role {
        self.role
    }

    /// The shard this fence leads.
    pub const fn shard(&self) -> Shard {
        self.shard
    }

    /// The shard's index; bind it as the second argument of `leader_fence` and compare
    /// `leader_shard_of` with it.
    pub const fn shard_index(&self) -> i32 {
        self.shard.index as i32
    }

    /// The role's shard count; bind it as the third argument of `leader_fence` and as the second
    /// of `leader_shard_of`.
    pub const fn shard_count(&self) -> i32 {
        self.shard.count as i32
    }

    /// The fencing token; bind it as the fourth argument of `leader_fence`.
    pub const fn token(&self) -> i64 {
        self.token
    }
}
