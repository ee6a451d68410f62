//! A service's smallest use of leader-runtime, outside its workspace: a job that takes the
//! application's state leads one role until it has run once, then the runtime shuts down
//! (releasing the role). With the `macros` feature the job is a `#[leader_role]`; without it,
//! a builder job, and nothing of PostgreSQL's parser is built.
//!
//! Usage: `DATABASE_URL=postgres://… outside-app`; exits 0 once the job ran with the state.

use std::sync::Arc;
use std::time::Duration;

use leader_runtime::sqlx::{self, PgPool};
use leader_runtime::{JobError, Runtime, State, TickContext};

/// The application's state, shared with the job.
#[derive(Clone)]
struct App {
    greeting: Arc<str>,
}

#[cfg_attr(feature = "macros", leader_runtime::leader_role("outside", every = "1h"))]
async fn greet(tick: TickContext, State(app): State<App>) -> Result<(), JobError> {
    let mut tx = tick.pool().begin().await?;
    sqlx::query("INSERT INTO greetings (token, greeting) VALUES ($1, $2)")
        .persistent(false)
        .bind(tick.fence().token())
        .bind(app.greeting.as_ref())
        .execute(&mut *tx)
        .await?;
    tx.commit().await?;
    Ok(())
}

#[cfg(feature = "macros")]
fn jobs(builder: leader_runtime::RuntimeBuilder<App>) -> leader_runtime::RuntimeBuilder<App> {
    builder.registered_jobs()
}

#[cfg(not(feature = "macros"))]
fn jobs(builder: leader_runtime::RuntimeBuilder<App>) -> leader_runtime::RuntimeBuilder<App> {
    const OUTSIDE: leader_runtime::Role = leader_runtime::Role::from_static("outside");
    builder.role(OUTSIDE, Duration::from_secs(3600), greet)
}

/// The framework's migrations, then the application's: its role and its table.
async fn migrate(pool: &PgPool) -> Result<(), Box<dyn std::error::Error>> {
    leader_runtime::schema::MIGRATOR.run(pool).await?;
    sqlx::raw_sql(
        "ALTER TABLE leader_leases DROP CONSTRAINT IF EXISTS leader_leases_role_registered;
         ALTER TABLE leader_leases ADD CONSTRAINT leader_leases_role_registered
             CHECK (role IN ('outside'));
         INSERT INTO leader_leases (role, holder_token) VALUES ('outside', leader_seed_token())
             ON CONFLICT DO NOTHING;
         CREATE TABLE IF NOT EXISTS greetings (token bigint NOT NULL, greeting text NOT NULL);",
    )
    .execute(pool)
    .await?;
    Ok(())
}

#[tokio::main]
async fn main() -> Result<(), Box<dyn std::error::Error>> {
    let url = std::env::var("DATABASE_URL").map_err(|_| "set DATABASE_URL")?;
    let pool = PgPool::connect(&url).await?;
    migrate(&pool).await?;
    let app = App {
        greeting: Arc::from("hello from outside the workspace"),
    };
    let runtime = jobs(Runtime::builder(pool.clone()).with_state(app)).build()?;
    let greeted = {
        let pool = pool.clone();
        async move {
            while sqlx::query_scalar::<_, i64>("SELECT count(*) FROM greetings")
                .fetch_one(&pool)
                .await
                .map_or(true, |n| n == 0)
            {
                tokio::time::sleep(Duration::from_millis(50)).await;
            }
        }
    };
    // The runtime leads until the job has run once: its shutdown is that future.
    tokio::time::timeout(Duration::from_secs(120), runtime.run(greeted)).await??;
    let greeting: String = sqlx::query_scalar("SELECT greeting FROM greetings LIMIT 1")
        .fetch_one(&pool)
        .await?;
    println!("the job ran with the state: {greeting}");
    Ok(())
}
