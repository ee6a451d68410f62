//! The minute after a server restart or failover, which ends every session and so every anchor:
//! how many grants each role got in it, and how many of its leases were ended early (the
//! takeover of a dead holder), read on the database clock from the audit's `grants` and the
//! drill's `drill_early_ends`.
//!
//! Each tick is a grant of its own (ACQUIRE, the job, RELEASE), so a role's grants in a minute
//! follow its schedule: about 60 for a role due every second, a few hundred for one due every
//! 200 ms. A grant count alone cannot tell a storm from a busy schedule; the early ends can.

use std::time::Duration;

use chrono::{DateTime, Utc};
use sqlx::PgPool;

use super::DrillError;
use super::records::db_now;

/// How long after the server came back the grants are counted.
pub const WINDOW: Duration = Duration::from_secs(60);

/// How long after the window the count waits: a tick records its grant in the statement after
/// its ACQUIRE, so a grant made just before the window closed is recorded just after.
const RECORDED_WITHIN: Duration = Duration::from_secs(2);

/// What one role did in the window.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct RoleSettling {
    pub role: String,
    /// Its lease rows: its shard count, 1 for a role without shards.
    pub rows: i64,
    /// Grants of the role recorded in the window (one per tick, every shard's counted).
    pub grants: i64,
    /// Leases of the role ended before their expiry in the window, each forcing one more grant.
    pub early_ends: i64,
}

impl RoleSettling {
    /// Whether the role's grants stormed: more of its leases ended early than it has rows.
    ///
    /// The restart ends every anchor once, so each lease row held when the server went down may
    /// be ended early once, as its holder's anchor is gone. Every later grant names a live anchor
    /// (ACQUIRE refuses a caller whose own anchor has ended) or none (a replica polling while it
    /// re-anchors), and no anchor ends again unless another fault strikes, so none of those
    /// leases may be ended early. One beyond a row's first is a lease granted after the restart
    /// and taken over: the replicas taking the role from each other, each takeover one more
    /// grant, which the model found when ACQUIRE lacked the caller's guard.
    pub fn storm(&self) -> bool {
        self.early_ends > self.rows
    }
}

/// Every role's figures in the [`WINDOW`] after the server came back.
#[derive(Debug, Clone)]
pub struct Settling {
    /// When the server answered again (the restarted one, or the promoted standby), on its clock.
    pub back_at: DateTime<Utc>,
    pub roles: Vec<RoleSettling>,
}

impl Settling {
    /// Whether any role's grants stormed (see [`RoleSettling::storm`]).
    pub fn storm(&self) -> bool {
        self.roles.iter().any(RoleSettling::storm)
    }

    /// The role named `role`, if the run had it.
    pub fn role(&self, role: &str) -> Option<&RoleSettling> {
        self.roles.iter().find(|r| r.role == role)
    }
}

/// Waits until the [`WINDOW`] after `back_at` has passed on the clock of the server `admin`
/// reaches, then counts every role's grants and early ends in it. Called before the drain,
/// which pauses roles, so the window sees the replicas as they settle on their own.
pub(super) async fn settle(admin: &PgPool, back_at: DateTime<Utc>) -> Result<Settling, DrillError> {
    let until = back_at + WINDOW;
    let left = (until - db_now(admin).await?).to_std().unwrap_or_default();
    tokio::time::sleep(left + RECORDED_WITHIN).await;
    let rows: Vec<(String, i64, i64, i64)> = sqlx::query_as(
        "SELECT l.role, l.lease_rows,
                (SELECT count(*) FROM grants g
                  WHERE g.role = l.role AND g.granted_at >= $1 AND g.granted_at < $2),
                (SELECT count(*) FROM drill_early_ends e
                  WHERE e.role = l.role AND e.at >= $1 AND e.at < $2)
           FROM (SELECT role, count(*) AS lease_rows FROM leader_leases GROUP BY role) l
          ORDER BY l.role",
    )
    .persistent(false)
    .bind(back_at)
    .bind(until)
    .fetch_all(admin)
    .await?;
    Ok(Settling {
        back_at,
        roles: rows
            .into_iter()
            .map(|(role, rows, grants, early_ends)| RoleSettling {
                role,
                rows,
                grants,
                early_ends,
            })
            .collect(),
    })
}
