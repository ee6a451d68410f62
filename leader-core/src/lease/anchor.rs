//! Anchors: one idle session per replica whose end the server reports, so that ACQUIRE can take
//! over a dead holder's lease at once rather than at its expiry.
//!
//! A replica that opens an anchor ([`Anchor::open`] on a session of its own, connected to
//! PostgreSQL itself and never through a transaction-mode pooler) names it with every ACQUIRE
//! ([`acquire_anchored`](crate::lease::acquire_anchored)); a grant records the anchor's identity,
//! `pg_backend_pid()` and `backend_start`, with the lease. ACQUIRE then grants a lease that has not
//! expired when, in its own statement, the server shows no session with that identity: the
//! holder's process died (the kernel closed its socket and the server ended the idle backend), or
//! the server ended the session (`pg_terminate_backend`, a restart). The grant is an ordinary
//! one, with a new and larger token, so the old holder's fence is false from its commit, exactly
//! as after an expiry.
//!
//! The anchor also holds a session advisory lock of the replica's own key
//! ([`ANCHOR_LOCK_CLASS`], `hashtext(holder_id)`), which the server releases when the session ends:
//! a second process with the same holder id is refused ([`AnchorError::HolderIdInUse`]), and a
//! watcher that waits on that lock hears the death at once.
//!
//! The design, and why each part is needed, is `docs/design/dead-holder-takeover.md`.

use chrono::{DateTime, Utc};
use sqlx::{PgConnection, Row};

use crate::send::{send, single};
use crate::{Statement, StatementError, Timings};

/// The first key of every anchor's session advisory lock (`pg_advisory_lock(class, key)`):
/// `0x6c65_6164`, "lead". The second key is `hashtext(holder_id)`.
pub const ANCHOR_LOCK_CLASS: i32 = 0x6c65_6164;

/// An anchor session's identity, as `pg_stat_activity` shows it: `pid` is given to another session
/// once this one ends, `pid` with `backend_start` never is.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Hash)]
pub struct Anchor {
    pid: i32,
    backend_start: DateTime<Utc>,
}

/// Why [`Anchor::open`] failed.
#[derive(Debug, thiserror::Error)]
#[non_exhaustive]
pub enum AnchorError {
    /// Another live session already anchors this holder id: two processes run with one holder id,
    /// and one would pass for the other's anchor.
    #[error(
        "another live session already anchors holder id `{holder_id}`: give each replica its own \
         holder id"
    )]
    HolderIdInUse {
        /// The holder id.
        holder_id: String,
    },
    /// The session's statements failed.
    #[error(transparent)]
    Statement(#[from] StatementError),
}

const OPEN: &str = "
SELECT pg_try_advisory_lock(:class::integer, hashtext(:holder)) AS locked,
       a.pid, a.backend_start
  FROM pg_stat_activity a
 WHERE a.pid = pg_backend_pid()
";

impl Anchor {
    /// Makes `session` the anchor of `holder_id`: takes the holder's anchor lock on it (held until
    /// the session ends) and reads its identity. The session must stay idle (a backend busy in a
    /// query hears its client's death only when it next writes to it) and must be of the same
    /// database role as the sessions that send ACQUIRE: PostgreSQL shows another role's
    /// `backend_start` as NULL, and ACQUIRE then counts the anchor as alive whatever happens to it.
    ///
    /// # Errors
    ///
    /// [`AnchorError::HolderIdInUse`] if another live session holds the lock;
    /// [`AnchorError::Statement`] if the statement failed.
    pub async fn open(
        session: &mut PgConnection,
        holder_id: &str,
        timings: &Timings,
    ) -> Result<Anchor, AnchorError> {
        let sql = crate::inline::render(
            OPEN,
            &[
                (
                    "class",
                    crate::inline::Value::Int(i64::from(ANCHOR_LOCK_CLASS)),
                ),
                ("holder", crate::inline::Value::Text(holder_id)),
            ],
        );
        let rows = send(session, Statement::Anchor, timings.statement_timeout(), sql).await?;
        let row = single(Statement::Anchor, rows)?;
        let field = StatementError::database(Statement::Anchor);
        if !row.try_get::<bool, _>("locked").map_err(&field)? {
            return Err(AnchorError::HolderIdInUse {
                holder_id: holder_id.to_owned(),
            });
        }
        Ok(Anchor {
            pid: row.try_get("pid").map_err(&field)?,
            backend_start: row.try_get("backend_start").map_err(&field)?,
        })
    }

    /// `pg_backend_pid()` of the anchor session.
    pub fn pid(&self) -> i32 {
        self.pid
    }

    /// The anchor session's `backend_start`.
    pub fn backend_start(&self) -> DateTime<Utc> {
        self.backend_start
    }

    /// An anchor of the identity `(pid, backend_start)`, which no [`Anchor::open`] read: for tests
    /// of the takeover (a pid with another session's start, an identity that never existed). Only
    /// with the `test-support` feature.
    #[cfg(feature = "test-support")]
    pub fn forge(pid: i32, backend_start: DateTime<Utc>) -> Anchor {
        Anchor { pid, backend_start }
    }
}
