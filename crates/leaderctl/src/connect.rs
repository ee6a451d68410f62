//! The connection every database command uses: one, from `--database-url` or `DATABASE_URL`.

use std::str::FromStr;
use std::time::Duration;

use leader_core::pooler::{DirectError, DirectOptions};
use sqlx::postgres::{PgConnectOptions, PgPoolOptions};
use sqlx::{ConnectOptions, Connection, PgConnection, PgPool};

use crate::failure::Failure;

/// How long to wait for the server (or pooler) to accept the connection.
const CONNECT_TIMEOUT: Duration = Duration::from_secs(10);

/// A pool of one connection to `url`. A pool because the schema check reads through a shareable
/// executor; one connection because every command sends its statements one after another.
pub async fn connect(url: &str) -> Result<PgPool, Failure> {
    let (options, place) = parse(url)?;
    // The pool retries a failed connect until its timeout and then reports only the timeout, so
    // one direct connect first says why the server cannot be reached.
    let probe = connect_one(&options, &place).await?;
    let _ = probe.close().await;
    PgPoolOptions::new()
        .max_connections(1)
        .acquire_timeout(CONNECT_TIMEOUT)
        .connect_with(options)
        .await
        .map_err(|e| unreachable(&place, &e))
}

/// A pool of up to `max` connections to `url`, each acquire waiting at most `wait`: for
/// `dashboard`, which serves pages while the database may come and go.
pub async fn connect_pool(url: &str, max: u32, wait: Duration) -> Result<PgPool, Failure> {
    let (options, place) = parse(url)?;
    let probe = connect_one(&options, &place).await?;
    let _ = probe.close().await;
    Ok(PgPoolOptions::new()
        .max_connections(max)
        .acquire_timeout(wait)
        .connect_lazy_with(options))
}

/// One direct connection to `url`, for `migrate`, which needs a session of its own: refused
/// (exit 1) when a pooler answers (see `leader_core::pooler`), before any statement is sent.
pub async fn connect_session(url: &str) -> Result<PgConnection, Failure> {
    let (options, _) = parse(url)?;
    DirectOptions::new(options)
        .connect(CONNECT_TIMEOUT)
        .await
        .map_err(|error| match error {
            DirectError::Pooler { .. } => Failure::refused(format!(
                "{error}; --database-url is a pooler's, and `leaderctl migrate` takes sqlx's \
                 migration lock, a session advisory lock: run it with a URL to PostgreSQL itself"
            )),
            DirectError::Connect { place, reason } => {
                unreachable(&place, &reason.replace('\n', " "))
            }
            other => Failure::unreachable(other.to_string()),
        })
}

/// The options in `url`, and `host:port/database` for messages.
fn parse(url: &str) -> Result<(PgConnectOptions, String), Failure> {
    let options = PgConnectOptions::from_str(url).map_err(|e| {
        Failure::unreachable(format!(
            "--database-url / DATABASE_URL is not a PostgreSQL URL ({e}): use \
             postgres://USER:PASSWORD@HOST:PORT/DATABASE"
        ))
    })?;
    let place = format!(
        "{}:{}/{}",
        options.get_host(),
        options.get_port(),
        options.get_database().unwrap_or("(default database)")
    );
    Ok((options, place))
}

async fn connect_one(options: &PgConnectOptions, place: &str) -> Result<PgConnection, Failure> {
    tokio::time::timeout(CONNECT_TIMEOUT, options.connect())
        .await
        .map_err(|_| unreachable(place, &format!("no answer within {CONNECT_TIMEOUT:?}")))?
        .map_err(|e| unreachable(place, &e))
}

fn unreachable(place: &str, e: &dyn std::fmt::Display) -> Failure {
    Failure::unreachable(format!(
        "cannot reach the database at {place}: {}: check --database-url / DATABASE_URL and \
         that the server (or pooler) is running and accepts this user",
        e.to_string().replace('\n', " ")
    ))
}
