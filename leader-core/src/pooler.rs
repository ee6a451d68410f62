//! Poolers: what a transaction-mode pooler (PgBouncer, RDS Proxy) in front of PostgreSQL breaks,
//! and how the framework tells that one is there.
//!
//! A transaction-mode pooler hands each transaction (each statement, outside one) the next free
//! server session. Whatever lives on a session and outlives a transaction is lost or leaks:
//!
//! | what | where the framework needs it | what it checks |
//! |---|---|---|
//! | a session advisory lock, `LISTEN` | the direct connection: the anchor, its watcher, the wake listener; `leaderctl migrate` (sqlx's migration lock) | [`DirectOptions`]: the connection must prove it reached PostgreSQL itself, and the anchor's lock is taken only in a statement that checks that proof |
//! | a named prepared statement (`sqlx_s_1`), kept across transactions | sqlx's statement cache, on by default, which every `sqlx::query(..)` uses unless `.persistent(false)` | [`check_pool`]: at start-up the runtime refuses a pool whose named statements reach a transaction-mode pooler's server sessions as they are (PgBouncer before 1.21, or without `max_prepared_statements`) |
//! | an unnamed statement between its `Parse` and its `Bind` | every query with bind parameters sent outside a transaction | nothing can: such a query's `Bind` may reach another session and run another client's statement; behind such a pooler, send every query that binds parameters inside a transaction, with `.persistent(false)` (or a pool whose `statement_cache_capacity` is 0) |
//!
//! The framework's own statements send their values inlined, as one simple-protocol message
//! each, so they work through any pooler.
//!
//! **How a direct connection proves itself.** [`DirectOptions`] adds a random value to the
//! connection's startup options (`-c leader.direct_session=<nonce>`). PostgreSQL applies it to
//! the session it starts for this connection, and `current_setting('leader.direct_session',
//! true)` answers it. PgBouncer never passes startup options on: it refuses them (`unsupported
//! startup parameter: options`) unless told to ignore them, and then drops them. Either way the
//! connection is refused as a pooler's ([`DirectError::Pooler`]), before any session state is
//! made; and the anchor's lock statement checks the nonce in its own `WHERE`, so no lock is ever
//! taken on a session that is not this connection's own.

use std::fmt;
use std::hash::BuildHasher;
use std::sync::atomic::{AtomicU64, Ordering};
use std::time::Duration;

use sqlx::postgres::{PgConnectOptions, PgConnection, PgPool};
use sqlx::{ConnectOptions, Connection, PgExecutor, Row};

use crate::send::{send, single};
use crate::{Statement, StatementError};

/// The setting a direct connection's startup options carry its nonce in.
pub const DIRECT_SESSION_SETTING: &str = "leader.direct_session";

/// Options for a connection that must be a session of its own on PostgreSQL itself, never one
/// lent by a pooler: `options` with a nonce added to its startup options, which
/// [`DirectOptions::verify`] (and the anchor's lock statement) check the server received.
///
/// ```
/// use leader_core::pooler::DirectOptions;
///
/// let direct = DirectOptions::new("postgres://app@db:5432/app".parse()?);
/// assert_eq!(direct.connect_options().get_port(), 5432);
/// assert!(direct.connect_options().get_options().unwrap().contains("leader.direct_session="));
/// # Ok::<(), sqlx::Error>(())
/// ```
#[derive(Debug, Clone)]
pub struct DirectOptions {
    options: PgConnectOptions,
    nonce: String,
}

/// A value no pooled server session carries by accident: a per-process random key (std's
/// `RandomState`) over a counter and the time.
fn nonce() -> String {
    static COUNTER: AtomicU64 = AtomicU64::new(0);
    let keys = std::collections::hash_map::RandomState::new();
    let count = COUNTER.fetch_add(1, Ordering::Relaxed);
    let now = std::time::SystemTime::now()
        .duration_since(std::time::UNIX_EPOCH)
        .map_or(0, |d| d.as_nanos());
    format!(
        "{:016x}{:016x}",
        keys.hash_one((count, now, std::process::id())),
        keys.hash_one((now, count))
    )
}

impl DirectOptions {
    /// `options`, with a fresh nonce in its startup options.
    pub fn new(options: PgConnectOptions) -> DirectOptions {
        let nonce = nonce();
        DirectOptions {
            options: options.options([(DIRECT_SESSION_SETTING, nonce.as_str())]),
            nonce,
        }
    }

    /// The options to connect with (the caller's, with the nonce added).
    pub fn connect_options(&self) -> &PgConnectOptions {
        &self.options
    }

    /// These options with `change` applied (an `application_name`, more startup options), the
    /// nonce kept.
    #[must_use]
    pub fn map(self, change: impl FnOnce(PgConnectOptions) -> PgConnectOptions) -> DirectOptions {
        DirectOptions {
            options: change(self.options),
            nonce: self.nonce,
        }
    }

    /// The nonce the server must answer, for a statement that checks it in its own `WHERE`.
    pub(crate) fn nonce(&self) -> &str {
        &self.nonce
    }

    /// `host:port/database`, for messages.
    pub fn place(&self) -> String {
        place(&self.options)
    }

    /// Connects within `timeout` and checks that the session is PostgreSQL's own
    /// ([`DirectOptions::verify`]).
    ///
    /// # Errors
    ///
    /// [`DirectError::Pooler`] when a pooler answered (it refused the startup options, or
    /// dropped them); [`DirectError::Connect`] when nothing answered, or refused otherwise.
    pub async fn connect(&self, timeout: Duration) -> Result<PgConnection, DirectError> {
        let connected = tokio::time::timeout(timeout, self.options.connect())
            .await
            .map_err(|_| DirectError::Connect {
                place: self.place(),
                reason: format!("no answer within {timeout:?}"),
            })?;
        let mut session = connected.map_err(|error| self.connect_error(&error))?;
        self.verify(&mut session).await?;
        Ok(session)
    }

    /// What a failed connect says: a pooler's refusal of the startup options, or another
    /// failure.
    pub fn connect_error(&self, error: &sqlx::Error) -> DirectError {
        let reason = error.to_string();
        if reason.contains("unsupported startup parameter") {
            DirectError::Pooler {
                place: self.place(),
                evidence: format!("it refused the startup options ({reason})"),
            }
        } else {
            DirectError::Connect {
                place: self.place(),
                reason,
            }
        }
    }

    /// Checks that `session`, connected with these options, is a session PostgreSQL started for
    /// it: the server answers the nonce.
    ///
    /// # Errors
    ///
    /// [`DirectError::Pooler`] if it does not; [`DirectError::Statement`] if the check failed.
    pub async fn verify<'e>(&self, session: impl PgExecutor<'e>) -> Result<(), DirectError> {
        let sql = format!(
            "SELECT current_setting('{DIRECT_SESSION_SETTING}', true) AS nonce, \
             pg_backend_pid() AS pid"
        );
        let rows = send(
            session,
            Statement::ConnectionCheck,
            CHECK_TIMEOUT,
            sql.clone(),
        )
        .await?;
        let row = single(Statement::ConnectionCheck, rows)?;
        let answered: Option<String> = row
            .try_get("nonce")
            .map_err(StatementError::database(Statement::ConnectionCheck))?;
        if answered.as_deref() == Some(self.nonce.as_str()) {
            Ok(())
        } else {
            Err(DirectError::Pooler {
                place: self.place(),
                evidence: "the server session answering never received this connection's \
                           startup options"
                    .to_owned(),
            })
        }
    }
}

/// How long one check statement may take (five times the default statement timeout, as the
/// schema check): they read no table.
const CHECK_TIMEOUT: Duration = Duration::from_secs(10);

fn place(options: &PgConnectOptions) -> String {
    format!(
        "{}:{}/{}",
        options.get_host(),
        options.get_port(),
        options.get_database().unwrap_or("(default database)")
    )
}

/// Why a connection that must be direct ([`DirectOptions`]) was not made.
#[derive(Debug, thiserror::Error)]
#[non_exhaustive]
pub enum DirectError {
    /// A pooler answered where PostgreSQL itself must.
    #[error(
        "{place} is a pooler, not PostgreSQL itself ({evidence}): this connection needs a \
         session of its own (a session advisory lock, LISTEN), which a pooler lends to other \
         clients; give the server's own address, the host and port the pooler connects to"
    )]
    Pooler {
        /// `host:port/database` connected to.
        place: String,
        /// What showed it.
        evidence: String,
    },
    /// Nothing answered, or the server refused the connection for another reason.
    #[error("cannot connect to {place}: {reason}")]
    Connect {
        /// `host:port/database` connected to.
        place: String,
        /// Why.
        reason: String,
    },
    /// The check's statement failed.
    #[error(transparent)]
    Statement(#[from] StatementError),
}

impl DirectError {
    /// Whether a pooler answered: a misconfiguration, which no retry mends.
    pub fn is_pooler(&self) -> bool {
        matches!(self, DirectError::Pooler { .. })
    }
}

/// What is in front of a pool's server sessions, as [`check_pool`] found it.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
#[non_exhaustive]
pub enum PoolPath {
    /// No sign of a pooler that moves sessions between clients: two connections at once had
    /// two server sessions. (A session-mode pooler looks the same, and needs nothing more.)
    Sessions,
    /// A transaction-mode pooler: two connections open at once were answered by one server
    /// session. Its server sessions do not keep sqlx's named statements apart (or the pool's
    /// statement cache is off); queries that bind parameters must still run inside a
    /// transaction.
    TransactionPooler,
}

/// Why a pool cannot be used as it is.
#[derive(Debug, thiserror::Error)]
#[non_exhaustive]
pub enum PoolError {
    /// sqlx's named prepared statements reach a transaction-mode pooler's server sessions under
    /// sqlx's own names: any client's statement may meet another's, and queries fail at random
    /// (`prepared statement "sqlx_s_4" requires 3` parameters, `... does not exist`, `... already
    /// exists`).
    #[error(
        "the pool's connections to {place} go through a transaction-mode pooler that passes \
         sqlx's named prepared statements to its shared server sessions as they are (PgBouncer \
         before 1.21, or without max_prepared_statements): the application's queries would fail \
         at random; build the pool with \
         PgConnectOptions::statement_cache_capacity(0) (or give PgBouncer 1.21+ \
         max_prepared_statements = 100), and send every query that binds parameters inside a \
         transaction"
    )]
    NamedStatements {
        /// `host:port/database` of the pool.
        place: String,
    },
    /// A check statement failed.
    #[error(transparent)]
    Statement(#[from] StatementError),
}

/// How many times [`check_pool`] asks two connections for their server sessions before it
/// concludes that no pooler moves sessions between clients.
const POOLER_LOOKS: usize = 4;

/// Looks at what is in front of `pool`'s server sessions, on connections of its own made with
/// the pool's options (the pool itself is not used): whether a transaction-mode pooler moves
/// sessions between clients (two connections open at once answered by one server session), and
/// if so, whether sqlx's named statements reach those shared sessions as they are.
///
/// The first look is a positive proof (one PostgreSQL session never serves two open
/// connections); a pooler busy with other clients may hand the two connections different
/// sessions each time it is looked at, and then goes unseen: [`PoolPath::Sessions`].
///
/// # Errors
///
/// [`PoolError::NamedStatements`] for a pool whose statements would fail at random;
/// [`PoolError::Statement`] if a check failed (the pool's server is unreachable).
pub async fn check_pool(pool: &PgPool) -> Result<PoolPath, PoolError> {
    let options = (*pool.connect_options()).clone();
    let failed = StatementError::database(Statement::ConnectionCheck);
    let mut first = options.connect().await.map_err(&failed)?;
    let mut second = options.connect().await.map_err(&failed)?;
    let mut shared = false;
    for _ in 0..POOLER_LOOKS {
        if backend_pid(&mut first).await? == backend_pid(&mut second).await? {
            shared = true;
            break;
        }
    }
    let _ = second.close().await;
    if !shared {
        let _ = first.close().await;
        return Ok(PoolPath::Sessions);
    }
    let named = named_statements_pass(&mut first).await;
    // Its statement cache may name a statement this check deallocated: never reused.
    let _ = first.close().await;
    if named? {
        return Err(PoolError::NamedStatements {
            place: place(&options),
        });
    }
    Ok(PoolPath::TransactionPooler)
}

async fn backend_pid(session: &mut PgConnection) -> Result<i32, StatementError> {
    let rows = send(
        &mut *session,
        Statement::ConnectionCheck,
        CHECK_TIMEOUT,
        "SELECT pg_backend_pid() AS pid".to_owned(),
    )
    .await?;
    single(Statement::ConnectionCheck, rows)?
        .try_get("pid")
        .map_err(StatementError::database(Statement::ConnectionCheck))
}

/// Whether a query sent as sqlx sends one by default (a named, cached statement) reaches the
/// server session under sqlx's own name. In one transaction, so all of it runs on one session;
/// the statement is deallocated there before the commit, so the shared session keeps nothing.
async fn named_statements_pass(session: &mut PgConnection) -> Result<bool, StatementError> {
    let failed = StatementError::database(Statement::ConnectionCheck);
    let marker = format!("leader_pool_check_{}", nonce());
    let mut tx = session.begin().await.map_err(&failed)?;
    let probe = Statement::ConnectionCheck.tag(&format!("SELECT $1::integer AS {marker}"));
    sqlx::query(sqlx::AssertSqlSafe(probe))
        .bind(1_i32)
        .fetch_one(&mut *tx)
        .await
        .map_err(&failed)?;
    let names = send(
        &mut *tx,
        Statement::ConnectionCheck,
        CHECK_TIMEOUT,
        format!("SELECT name FROM pg_prepared_statements WHERE strpos(statement, '{marker}') > 0"),
    )
    .await?;
    let mut as_sent = false;
    for row in names {
        let name: String = row.try_get("name").map_err(&failed)?;
        // sqlx names its statements sqlx_s_<n>; a pooler that keeps clients' statements apart
        // (PgBouncer 1.21+ with max_prepared_statements) renames them on their way.
        if name.starts_with("sqlx_s_") {
            as_sent = true;
        }
        let deallocate = format!("DEALLOCATE \"{}\"", name.replace('"', "\"\""));
        sqlx::raw_sql(sqlx::AssertSqlSafe(deallocate))
            .execute(&mut *tx)
            .await
            .map_err(&failed)?;
    }
    tx.commit().await.map_err(&failed)?;
    Ok(as_sent)
}

impl fmt::Display for PoolPath {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.write_str(match self {
            PoolPath::Sessions => "sessions",
            PoolPath::TransactionPooler => "transaction_pooler",
        })
    }
}
