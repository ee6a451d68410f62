//! A fresh database per test, on the server the run was given or on a private cluster.

use std::str::FromStr;
use std::sync::OnceLock;

use sqlx::postgres::{PgConnectOptions, PgPoolOptions};
use std::time::Duration;

use sqlx::{ConnectOptions, PgPool, Row};
use tokio::time::Instant;

use crate::{Cluster, HarnessError};

/// The environment variable naming the server to create test databases on.
pub const DATABASE_URL: &str = "DATABASE_URL";
/// The environment variable naming a transaction-mode pooler in front of that server.
pub const POOLER_URL: &str = "LEADER_POOLER_URL";
/// Set to `1` to route each test's application pool through [`POOLER_URL`].
pub const VIA_POOLER: &str = "LEADER_TEST_VIA_POOLER";

fn server_url() -> Result<String, HarnessError> {
    if let Ok(url) = std::env::var(DATABASE_URL) {
        return Ok(url);
    }
    static CLUSTER: OnceLock<Result<Cluster, String>> = OnceLock::new();
    CLUSTER
        .get_or_init(|| Cluster::start().map_err(|e| e.to_string()))
        .as_ref()
        .map(Cluster::url)
        .map_err(|e| HarnessError::Command {
            what: "start a throwaway PostgreSQL",
            output: e.clone(),
        })
}

/// True when this run routes application pools through the pooler.
pub fn via_pooler() -> bool {
    std::env::var(VIA_POOLER).is_ok_and(|v| v == "1")
}

/// A database created for one test, with its own pools.
///
/// * The admin pool connects directly to the server as its superuser: use it for setup and
///   inspection, and for anything that needs a session (migrations take an advisory lock).
/// * The application pool is what the code under test uses. When the run sets
///   `LEADER_TEST_VIA_POOLER=1` it goes through the transaction-mode pooler at
///   `LEADER_POOLER_URL`, so the same test proves the protocol works behind a pooler; it then
///   has no statement cache, as a user's pool behind PgBouncer 1.18 must not.
///
/// The database is left behind when the test ends; on the private cluster it goes with it.
#[derive(Debug)]
pub struct TestDb {
    name: String,
    admin: PgPool,
    app: PgPool,
}

impl TestDb {
    /// A fresh database with the framework migration applied.
    ///
    /// # Panics
    ///
    /// If no server can be reached or the migration fails: a test cannot go on without them.
    pub async fn new() -> TestDb {
        let db = TestDb::unmigrated().await;
        leader_core::schema::MIGRATOR
            .run(&db.admin)
            .await
            .unwrap_or_else(|e| panic!("the framework migration failed: {e}"));
        db
    }

    /// A fresh, empty database.
    ///
    /// # Panics
    ///
    /// If no server can be reached.
    pub async fn unmigrated() -> TestDb {
        TestDb::try_unmigrated()
            .await
            .unwrap_or_else(|e| panic!("{e}"))
    }

    /// [`TestDb::unmigrated`] that reports failure instead of panicking, for programs (such as the
    /// examples) that use a throwaway database outside tests.
    ///
    /// # Errors
    ///
    /// [`HarnessError`] naming what could not be set up.
    pub async fn try_unmigrated() -> Result<TestDb, HarnessError> {
        let server = server_url()?;
        let options = PgConnectOptions::from_str(&server).map_err(HarnessError::Connect)?;
        let mut maintenance = options.connect().await.map_err(HarnessError::Connect)?;
        let name = format!(
            "leader_test_{}_{:08x}",
            std::process::id(),
            rand::random::<u32>()
        );
        sqlx::raw_sql(sqlx::AssertSqlSafe(format!("CREATE DATABASE {name}")))
            .execute(&mut maintenance)
            .await
            .map_err(HarnessError::Connect)?;
        let admin = PgPoolOptions::new()
            .max_connections(8)
            .connect_with(options.clone().database(&name))
            .await
            .map_err(HarnessError::Connect)?;
        let app = pool_for(&name, "postgres", 8).await?;
        Ok(TestDb { name, admin, app })
    }

    /// The database's name.
    pub fn name(&self) -> &str {
        &self.name
    }

    /// A URL of this database on the server directly, as its superuser, for a program the test
    /// spawns (such as `leaderctl`).
    ///
    /// # Panics
    ///
    /// If no server can be reached.
    pub fn url(&self) -> String {
        with_database(&server_url().unwrap_or_else(|e| panic!("{e}")), &self.name)
    }

    /// A URL of this database the way the application pool reaches it: through the pooler on a
    /// pooler run ([`VIA_POOLER`]), directly otherwise.
    ///
    /// # Panics
    ///
    /// If no server can be reached, or on a pooler run without [`POOLER_URL`].
    pub fn app_url(&self) -> String {
        if via_pooler() {
            self.pooler_url()
                .unwrap_or_else(|| panic!("{}", HarnessError::PoolerUnset))
        } else {
            self.url()
        }
    }

    /// [`TestDb::app_url`] logged in as `user` (no password: the private cluster trusts loopback,
    /// and the pooler lets through the users in [`crate::POOLER_USERS`]).
    ///
    /// # Panics
    ///
    /// As [`TestDb::app_url`].
    pub fn app_url_as(&self, user: &str) -> String {
        with_user(&self.app_url(), user)
    }

    /// A URL of this database through the pooler at [`POOLER_URL`], if the run has one.
    pub fn pooler_url(&self) -> Option<String> {
        std::env::var(POOLER_URL)
            .ok()
            .map(|url| with_database(&url, &self.name))
    }

    /// The direct superuser pool.
    pub fn admin(&self) -> &PgPool {
        &self.admin
    }

    /// The application pool (through the pooler on a pooler run).
    pub fn pool(&self) -> &PgPool {
        &self.app
    }

    /// Another application pool of `max` connections, logged in as `user` (through the pooler on
    /// a pooler run, which lets through the users in [`crate::POOLER_USERS`]).
    ///
    /// # Panics
    ///
    /// If it cannot connect.
    pub async fn pool_as(&self, user: &str, max: u32) -> PgPool {
        pool_for(&self.name, user, max)
            .await
            .unwrap_or_else(|e| panic!("{e}"))
    }

    /// The first column of the one row `sql` returns (a count, say), read on the admin pool.
    ///
    /// # Panics
    ///
    /// If the query fails or its first column is not a `bigint`.
    pub async fn count(&self, sql: &'static str) -> i64 {
        sqlx::raw_sql(sql)
            .fetch_one(&self.admin)
            .await
            .and_then(|row| row.try_get(0))
            .unwrap_or_else(|e| panic!("{e}\n{sql}"))
    }

    /// Polls [`TestDb::count`] of `sql` until it is above zero, and says whether that happened
    /// within `within`. A liveness wait for tests, not a timing assertion: give it ample time.
    pub async fn eventually(&self, sql: &'static str, within: Duration) -> bool {
        let deadline = Instant::now() + within;
        while Instant::now() < deadline {
            if self.count(sql).await > 0 {
                return true;
            }
            tokio::time::sleep(Duration::from_millis(20)).await;
        }
        false
    }

    /// Runs a script of SQL (several statements, no parameters) on the admin pool.
    ///
    /// # Panics
    ///
    /// If a statement fails.
    pub async fn exec(&self, sql: &'static str) {
        sqlx::raw_sql(sql)
            .execute(&self.admin)
            .await
            .unwrap_or_else(|e| panic!("setup SQL failed: {e}\n{sql}"));
    }
}

/// `url` with its database (the path) replaced by `name`, keeping any `?query`.
fn with_database(url: &str, name: &str) -> String {
    let (base, query) = url
        .split_once('?')
        .map_or((url, None), |(b, q)| (b, Some(q)));
    let authority_end = base.find("://").map_or(0, |scheme| scheme + 3);
    let host_part = match base[authority_end..].find('/') {
        Some(slash) => &base[..authority_end + slash],
        None => base,
    };
    match query {
        Some(query) => format!("{host_part}/{name}?{query}"),
        None => format!("{host_part}/{name}"),
    }
}

/// `url` with its user (and password) replaced by `user`.
fn with_user(url: &str, user: &str) -> String {
    let start = url.find("://").map_or(0, |scheme| scheme + 3);
    let host_end = url[start..]
        .find('/')
        .map_or(url.len(), |slash| start + slash);
    let host = match url[start..host_end].rfind('@') {
        Some(at) => &url[start + at + 1..],
        None => &url[start..],
    };
    format!("{}{user}@{host}", &url[..start])
}

async fn pool_for(name: &str, user: &str, max: u32) -> Result<PgPool, HarnessError> {
    let url = if via_pooler() {
        std::env::var(POOLER_URL).map_err(|_| HarnessError::PoolerUnset)?
    } else {
        server_url()?
    };
    let mut options = PgConnectOptions::from_str(&url)
        .map_err(HarnessError::Connect)?
        .database(name)
        .username(user);
    if via_pooler() {
        // As a user's pool behind PgBouncer 1.18 must be: sqlx's named statements would meet
        // other clients' on the shared server sessions (the runtime refuses such a pool).
        options = options.statement_cache_capacity(0);
    }
    PgPoolOptions::new()
        .max_connections(max)
        .connect_with(options)
        .await
        .map_err(HarnessError::Connect)
}

#[cfg(test)]
mod tests {
    use super::{with_database, with_user};

    #[test]
    fn replaces_only_the_user() {
        assert_eq!(
            with_user("postgres://postgres@127.0.0.1:5/db?x=1", "leader_app"),
            "postgres://leader_app@127.0.0.1:5/db?x=1"
        );
        assert_eq!(with_user("postgres://u:pw@h/db", "a"), "postgres://a@h/db");
        assert_eq!(with_user("postgres://h:1/db", "a"), "postgres://a@h:1/db");
    }

    #[test]
    fn replaces_only_the_database() {
        let db = "leader_test_1";
        for (url, want) in [
            (
                "postgres://postgres@127.0.0.1:5432/postgres",
                "postgres://postgres@127.0.0.1:5432/leader_test_1",
            ),
            ("postgres://u:p@h:1", "postgres://u:p@h:1/leader_test_1"),
            (
                "postgres://h/x?sslmode=disable",
                "postgres://h/leader_test_1?sslmode=disable",
            ),
        ] {
            assert_eq!(with_database(url, db), want);
        }
    }
}
