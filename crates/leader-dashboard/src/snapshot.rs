//! What a page shows, read from the database in a few whole-table reads with no value of the
//! request in them: the leases (`leader_status`), each lease's latest ticks, the replicas'
//! presence, the server's sessions, the roles the CHECK registers and the operator's actions.
//!
//! Every read is one simple-protocol query, so the dashboard works through a transaction-mode
//! pooler, and is bounded by [`READ_TIMEOUT`].

use std::collections::{BTreeSet, HashMap, HashSet};
use std::time::Duration;

use chrono::{DateTime, Utc};
use leader_core::Timings;
use leader_core::history::TickRecord;
use leader_core::status::RoleStatus;
use sqlx::postgres::PgRow;
use sqlx::{PgPool, Row};

/// How long a page waits for the database before it says the database does not answer.
pub(crate) const READ_TIMEOUT: Duration = Duration::from_secs(5);

/// A lease: the role's row (or one shard's) in `leader_status`, with what the view leaves out.
#[derive(Debug, Clone)]
pub(crate) struct Lease {
    pub status: RoleStatus,
    /// The anchor session the holder's grant named.
    pub holder_anchor_pid: Option<i32>,
    /// The shard's index (0 for an unsharded role) and the role's shard count.
    pub shard_index: i32,
    pub shard_count: i32,
}

/// A replica's presence row for a sharded role.
#[derive(Debug, Clone)]
pub(crate) struct Presence {
    pub role: String,
    pub holder_id: String,
    pub shard_count: i32,
    pub seen_until: DateTime<Utc>,
    pub anchor_pid: Option<i32>,
}

/// One operator action from `leader_operator_actions`.
#[derive(Debug, Clone)]
pub(crate) struct Action {
    pub at: DateTime<Utc>,
    pub action: String,
    pub role: String,
    pub shard_index: Option<i32>,
    pub who: String,
    pub why: String,
    pub login: String,
}

/// What a replica did last, by the history.
#[derive(Debug, Clone, Default)]
pub(crate) struct Seen {
    pub last_granted: Option<DateTime<Utc>>,
    pub last_released: Option<DateTime<Utc>>,
}

/// Everything the pages read, at one database clock reading.
#[derive(Debug, Clone)]
pub(crate) struct Snapshot {
    pub db_now: DateTime<Utc>,
    pub leases: Vec<Lease>,
    /// Each lease's latest tick, running or not.
    pub latest: HashMap<(String, i32), TickRecord>,
    /// Each lease's latest tick whose lease ended.
    pub last_ended: HashMap<(String, i32), TickRecord>,
    pub presence: Vec<Presence>,
    /// The pids of the server's sessions (any login sees every pid).
    pub live_pids: HashSet<i32>,
    /// The roles `leader_leases_role_registered` lists; `None` without that CHECK.
    pub registered: Option<Vec<String>>,
    /// Each holder id in the history, and what it did last.
    pub seen: HashMap<String, Seen>,
    /// The operator's latest actions, newest first.
    pub actions: Vec<Action>,
    /// How many ticks each lease's history keeps.
    pub slots: i64,
}

/// A read that failed: the database did not answer in time, or refused.
#[derive(Debug, thiserror::Error)]
pub(crate) enum ReadError {
    #[error("the database did not answer within {0:?}")]
    Timeout(Duration),
    #[error("{0}")]
    Database(String),
}

impl From<sqlx::Error> for ReadError {
    fn from(e: sqlx::Error) -> ReadError {
        ReadError::Database(e.to_string().replace('\n', " "))
    }
}

impl From<leader_core::StatementError> for ReadError {
    fn from(e: leader_core::StatementError) -> ReadError {
        ReadError::Database(e.to_string().replace('\n', " "))
    }
}

const EXTRA: &str = "/* leader-dashboard */
SELECT role, shard_index, shard_count, holder_anchor_pid FROM leader_leases";

const PRESENCE: &str = "/* leader-dashboard */
SELECT role, holder_id, shard_count, seen_until, anchor_pid FROM leader_presence";

const SESSIONS: &str = "/* leader-dashboard */
SELECT pid FROM pg_stat_activity WHERE pid IS NOT NULL";

const CHECK: &str = "/* leader-dashboard */
SELECT pg_get_constraintdef(oid) AS definition
  FROM pg_constraint
 WHERE conrelid = 'leader_leases'::regclass AND conname = 'leader_leases_role_registered'";

const SEEN: &str = "/* leader-dashboard */
SELECT holder_id, max(acquired_at) AS last_granted,
       max(ended_at) FILTER (WHERE ended_by = 'release') AS last_released
  FROM leader_tick_history GROUP BY holder_id";

const ACTIONS: &str = "/* leader-dashboard */
SELECT at, action, role, shard_index, who, why, login::text AS login
  FROM leader_operator_actions ORDER BY id DESC LIMIT 200";

const SLOTS: &str = "/* leader-dashboard */ SELECT leader_tick_history_slots()::bigint AS slots";

impl Snapshot {
    /// Reads everything, bounded by [`READ_TIMEOUT`].
    pub async fn read(pool: &PgPool) -> Result<Snapshot, ReadError> {
        tokio::time::timeout(READ_TIMEOUT, Snapshot::read_unbounded(pool))
            .await
            .map_err(|_| ReadError::Timeout(READ_TIMEOUT))?
    }

    async fn read_unbounded(pool: &PgPool) -> Result<Snapshot, ReadError> {
        let timings = Timings::scaled_to_ttl(Duration::from_secs(60))
            .map_err(|e| ReadError::Database(e.to_string()))?;
        let rows = leader_core::status::read(pool, &timings).await?;
        let extra = fetch(pool, EXTRA).await?;
        let mut leases = Vec::with_capacity(rows.len());
        for status in rows {
            let shard_index = status.shard.map_or(0, |s| s.index() as i32);
            let row = extra.iter().find(|row| {
                row.try_get::<&str, _>("role").ok() == Some(status.role.as_str())
                    && row.try_get::<i32, _>("shard_index").ok() == Some(shard_index)
            });
            let (shard_count, holder_anchor_pid) = match row {
                Some(row) => (
                    row.try_get("shard_count")?,
                    row.try_get("holder_anchor_pid")?,
                ),
                None => (1, None),
            };
            leases.push(Lease {
                status,
                holder_anchor_pid,
                shard_index,
                shard_count,
            });
        }
        let db_now = match leases.first() {
            Some(lease) => lease.status.db_now,
            None => fetch(pool, "/* leader-dashboard */ SELECT now() AS now")
                .await?
                .first()
                .map(|row| row.try_get("now"))
                .transpose()?
                .unwrap_or_else(Utc::now),
        };
        let (mut latest, mut last_ended) = (HashMap::new(), HashMap::new());
        for ticks in leader_core::history::read_latest(pool, &timings).await? {
            let key = (ticks.latest.role.clone(), ticks.latest.shard_index);
            if let Some(ended) = ticks.last_ended {
                last_ended.insert(key.clone(), ended);
            }
            latest.insert(key, ticks.latest);
        }
        let presence = fetch(pool, PRESENCE)
            .await?
            .iter()
            .map(|row| {
                Ok(Presence {
                    role: row.try_get("role")?,
                    holder_id: row.try_get("holder_id")?,
                    shard_count: row.try_get("shard_count")?,
                    seen_until: row.try_get("seen_until")?,
                    anchor_pid: row.try_get("anchor_pid")?,
                })
            })
            .collect::<Result<_, sqlx::Error>>()?;
        let live_pids = fetch(pool, SESSIONS)
            .await?
            .iter()
            .map(|row| row.try_get("pid"))
            .collect::<Result<_, _>>()?;
        let registered = fetch(pool, CHECK)
            .await?
            .first()
            .map(|row| row.try_get::<String, _>("definition"))
            .transpose()?
            .map(|definition| leader_role_name::roles_in_check(&definition));
        let seen = fetch(pool, SEEN)
            .await?
            .iter()
            .map(|row| {
                Ok((
                    row.try_get("holder_id")?,
                    Seen {
                        last_granted: row.try_get("last_granted")?,
                        last_released: row.try_get("last_released")?,
                    },
                ))
            })
            .collect::<Result<_, sqlx::Error>>()?;
        let actions = fetch(pool, ACTIONS)
            .await?
            .iter()
            .map(|row| {
                Ok(Action {
                    at: row.try_get("at")?,
                    action: row.try_get("action")?,
                    role: row.try_get("role")?,
                    shard_index: row.try_get("shard_index")?,
                    who: row.try_get("who")?,
                    why: row.try_get("why")?,
                    login: row.try_get("login")?,
                })
            })
            .collect::<Result<_, sqlx::Error>>()?;
        let slots = fetch(pool, SLOTS)
            .await?
            .first()
            .map(|row| row.try_get("slots"))
            .transpose()?
            .unwrap_or(0);
        Ok(Snapshot {
            db_now,
            leases,
            latest,
            last_ended,
            presence,
            live_pids,
            registered,
            seen,
            actions,
            slots,
        })
    }

    /// The roles with a lease row, in order.
    pub fn roles(&self) -> BTreeSet<&str> {
        self.leases.iter().map(|l| l.status.role.as_str()).collect()
    }

    /// The roles the CHECK registers that have no lease row.
    pub fn unseeded(&self) -> Vec<&str> {
        let roles = self.roles();
        self.registered
            .iter()
            .flatten()
            .map(String::as_str)
            .filter(|r| !roles.contains(r))
            .collect()
    }

    /// The leases of `role`, by shard.
    pub fn leases_of(&self, role: &str) -> Vec<&Lease> {
        self.leases
            .iter()
            .filter(|l| l.status.role == role)
            .collect()
    }

    /// The latest ended tick of a lease.
    pub fn last_ended(&self, lease: &Lease) -> Option<&TickRecord> {
        self.last_ended
            .get(&(lease.status.role.clone(), lease.shard_index))
    }

    /// The latest tick of a lease, running or ended.
    pub fn latest(&self, lease: &Lease) -> Option<&TickRecord> {
        self.latest
            .get(&(lease.status.role.clone(), lease.shard_index))
    }

    /// Whether the server still has a session with `pid`.
    pub fn session_lives(&self, pid: i32) -> bool {
        self.live_pids.contains(&pid)
    }
}

async fn fetch(pool: &PgPool, sql: &'static str) -> Result<Vec<PgRow>, sqlx::Error> {
    sqlx::raw_sql(sql).fetch_all(pool).await
}
