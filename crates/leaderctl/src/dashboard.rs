//! `leaderctl dashboard`: serves the operator's web page ([`leader_dashboard`]) until Ctrl-C.
//!
//! It listens on `127.0.0.1:7878` unless told otherwise, connects as an operator's login (and
//! refuses the schema's owner, a superuser and the application's login: see
//! [`leader_dashboard::check_operator_login`]), and serves read-only pages unless started with
//! `--allow-writes`, which takes the operators' sign-in token from `LEADER_DASHBOARD_TOKEN`:
//! never from the command line, where `ps` would show it.

use std::net::SocketAddr;
use std::time::Duration;

use leader_dashboard::{Options, WriteToken};

use crate::connect;
use crate::failure::Failure;

/// The environment variable holding the write token.
pub const TOKEN_VAR: &str = "LEADER_DASHBOARD_TOKEN";

/// `leaderctl dashboard`'s flags.
#[derive(Debug, clap::Args)]
pub struct Args {
    /// The database, as an operator's login granted with SELECT
    /// leader_grant_operator_role('LOGIN') (a PgBouncer in transaction mode works too).
    #[arg(long, env = "DATABASE_URL", value_name = "URL", hide_env_values = true)]
    database_url: String,
    /// Where to listen. The default answers this machine only; anything else should sit behind
    /// a proxy that adds TLS and access control.
    #[arg(long, default_value = "127.0.0.1:7878", value_name = "ADDR")]
    listen: SocketAddr,
    /// Let signed-in operators pause, unpause and clear cooldowns. They sign in with the token in
    /// LEADER_DASHBOARD_TOKEN (at least 16 characters); each action is recorded with who and why.
    #[arg(long)]
    allow_writes: bool,
    /// How often the pages update themselves, in milliseconds.
    #[arg(long, default_value_t = 1000, value_name = "MS",
          value_parser = clap::value_parser!(u64).range(100..))]
    refresh_ms: u64,
    /// How long past due an unheld, unpaused role may go before the page calls it overdue.
    #[arg(long, default_value_t = 30, value_name = "SECS")]
    overdue_after_secs: u64,
}

/// Serves until Ctrl-C.
pub async fn run(args: Args) -> Result<(), Failure> {
    let mut options = Options::default()
        .with_refresh(Duration::from_millis(args.refresh_ms))
        .with_overdue_after(Duration::from_secs(args.overdue_after_secs));
    if args.allow_writes {
        let token = WriteToken::from_env(TOKEN_VAR).map_err(|e| Failure::refused(e.to_string()))?;
        options = options.with_writes(token);
    }
    let pool = connect::connect_pool(&args.database_url, 4, Duration::from_secs(5)).await?;
    leader_dashboard::check_operator_login(&pool)
        .await
        .map_err(|e| match e {
            leader_dashboard::LoginError::Database(e) => Failure::from_sqlx("the login check", &e),
            other => Failure::refused(other.to_string()),
        })?;
    let listener = tokio::net::TcpListener::bind(args.listen)
        .await
        .map_err(|e| {
            Failure::refused(format!(
                "cannot listen on {}: {e}: pick another --listen address",
                args.listen
            ))
        })?;
    let address = listener.local_addr().unwrap_or(args.listen);
    println!(
        "leaderctl dashboard: http://{address}/ ({}); Ctrl-C stops",
        if args.allow_writes {
            "writes on: operators sign in with the token in LEADER_DASHBOARD_TOKEN"
        } else {
            "read-only"
        }
    );
    let stop = async {
        let _ = tokio::signal::ctrl_c().await;
    };
    leader_dashboard::serve(listener, pool, options, stop)
        .await
        .map_err(|e| Failure::unreachable(format!("the dashboard stopped serving: {e}")))
}
