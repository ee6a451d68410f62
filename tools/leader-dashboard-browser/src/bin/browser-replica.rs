//! `browser-replica URL HOLDER`: one replica of the browser tests' application. It leads `alpha`,
//! `beta` and `gamma` (every 1 s) with `take_over_when_dead`, each tick held until the runtime
//! cancels it: a tick's start and its cancellation (when and why) go into `browser_ticks`. It exits
//! when its stdin closes (the test that started it has ended, however it ended), or when killed.

use std::process::ExitCode;
use std::time::Duration;

use leader_runtime::{JobError, Role, Runtime, TickContext};
use sqlx::postgres::PgPoolOptions;
use tokio_util::sync::CancellationToken;

const ROLES: [Role; 3] = [
    Role::from_static("alpha"),
    Role::from_static("beta"),
    Role::from_static("gamma"),
];

async fn hold(tick: TickContext, holder: String) -> Result<(), JobError> {
    sqlx::query(
        "INSERT INTO browser_ticks (role, holder, token, started_at)
         VALUES ($1, $2, $3, clock_timestamp())",
    )
    .bind(tick.role())
    .bind(&holder)
    .bind(tick.fence().token())
    .execute(tick.pool())
    .await?;
    let cause = tick.cancelled().await;
    sqlx::query(
        "UPDATE browser_ticks SET cancelled_at = clock_timestamp(), cause = $3
          WHERE role = $1 AND token = $2",
    )
    .bind(tick.role())
    .bind(tick.fence().token())
    .bind(cause.as_str())
    .execute(tick.pool())
    .await?;
    Ok(())
}

async fn run(url: &str, holder: &str) -> Result<(), Box<dyn std::error::Error>> {
    std::thread::spawn(|| {
        let _ = std::io::copy(&mut std::io::stdin(), &mut std::io::sink());
        std::process::exit(0);
    });
    let pool = PgPoolOptions::new().max_connections(4).connect(url).await?;
    let mut builder = Runtime::builder(pool)
        .holder_id(holder)
        .wake_on_release(url.parse()?)
        .take_over_when_dead();
    for role in ROLES {
        let me = holder.to_owned();
        builder = builder.role(role, Duration::from_secs(1), move |tick: TickContext| {
            hold(tick, me.clone())
        });
    }
    builder
        .build()?
        .run_until_cancelled(CancellationToken::new())
        .await?;
    Ok(())
}

#[tokio::main]
async fn main() -> ExitCode {
    let args: Vec<String> = std::env::args().skip(1).collect();
    let [url, holder] = args.as_slice() else {
        eprintln!("usage: browser-replica URL HOLDER");
        return ExitCode::from(2);
    };
    match run(url, holder).await {
        Ok(()) => ExitCode::SUCCESS,
        Err(e) => {
            eprintln!("browser-replica {holder}: {e}");
            ExitCode::FAILURE
        }
    }
}
