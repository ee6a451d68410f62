//! The test runs' pooler lets go of a database's server connections once no client uses them, so
//! a run that makes a database per test does not pile up connections to finished tests' databases
//! until the server refuses new clients.

use std::str::FromStr;
use std::time::Duration;

use leader_testkit::{DATABASE_URL, Pooler, PoolerSettings, TestDb, pgbouncer_binary};
use sqlx::postgres::{PgConnectOptions, PgConnection};
use sqlx::{Connection, PgPool};

/// The server connections open to `database`, as the server counts them.
async fn server_connections(server: &PgPool, database: &str) -> i64 {
    sqlx::query_scalar("SELECT count(*) FROM pg_stat_activity WHERE datname = $1")
        .bind(database)
        .fetch_one(server)
        .await
        .expect("pg_stat_activity is readable")
}

#[tokio::test]
async fn the_test_runs_pooler_closes_the_server_connections_of_a_database_no_client_uses() {
    if pgbouncer_binary().is_none() {
        eprintln!("skipped: pgbouncer is not installed (apt-get install -y pgbouncer)");
        return;
    }
    let db = TestDb::unmigrated().await;
    let server = std::env::var(DATABASE_URL).expect("DATABASE_URL (run under with-postgres)");
    let server = PgConnectOptions::from_str(&server).expect("DATABASE_URL parses");
    // with-postgres starts its pooler with these settings.
    let pooler = Pooler::start_with(
        server.get_host(),
        server.get_port(),
        PoolerSettings::for_test_runs(),
    )
    .expect("pgbouncer starts");
    // A database only the pooler connects to, unlike the test database with its admin pool.
    let finished = format!("{}_pooled", db.name());
    sqlx::raw_sql(sqlx::AssertSqlSafe(format!("CREATE DATABASE {finished}")))
        .execute(db.admin())
        .await
        .expect("CREATE DATABASE");
    let through_pooler = PgConnectOptions::from_str(&pooler.url())
        .expect("the pooler's URL parses")
        .database(&finished);

    let mut client = PgConnection::connect_with(&through_pooler)
        .await
        .expect("the pooler accepts");
    let mut tx = client.begin().await.expect("BEGIN through the pooler");
    sqlx::raw_sql("SELECT 1")
        .execute(&mut *tx)
        .await
        .expect("a query runs through the pooler");
    assert_eq!(
        server_connections(db.admin(), &finished).await,
        1,
        "inside its transaction the client has one server connection"
    );
    tx.commit().await.expect("COMMIT");
    client.close().await.expect("the client disconnects");

    // PgBouncer's default would keep it for ten minutes; these settings close it after a second
    // unused. The minute allowed is for a loaded machine, not a figure.
    let deadline = tokio::time::Instant::now() + Duration::from_secs(60);
    while server_connections(db.admin(), &finished).await > 0 {
        assert!(
            tokio::time::Instant::now() < deadline,
            "the pooler still holds a server connection to {finished}, which no client uses"
        );
        tokio::time::sleep(Duration::from_millis(100)).await;
    }
}
