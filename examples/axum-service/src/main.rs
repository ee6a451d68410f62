//! `axum-service`: one replica of the service (see the library's docs). Exits 0 after a clean
//! shutdown on SIGTERM or Ctrl-C, its leases released; 1 with one line on stderr otherwise.

use std::io::IsTerminal;
use std::process::ExitCode;

use axum_service::{Config, serve};
use clap::Parser;
use tokio_util::sync::CancellationToken;

#[tokio::main]
async fn main() -> ExitCode {
    tracing_subscriber::fmt()
        .with_env_filter(
            tracing_subscriber::EnvFilter::try_from_default_env().unwrap_or_else(|_| "info".into()),
        )
        .with_writer(std::io::stderr)
        .with_ansi(std::io::stderr().is_terminal())
        .init();
    let config = Config::parse();

    // One signal, one token: `shutdown::signal()` can be awaited once, so a task awaits it and
    // cancels the token that both the HTTP server and the runtime wait on. Installed first, so a
    // SIGTERM during start-up (migrations, connecting) is not lost: it stops the replica as soon
    // as it has started.
    let shutdown = CancellationToken::new();
    let signal = leader_runtime::shutdown::signal();
    tokio::spawn({
        let shutdown = shutdown.clone();
        async move {
            signal.await;
            shutdown.cancel();
        }
    });

    match serve(config, shutdown).await {
        Ok(()) => {
            tracing::info!("stopped");
            ExitCode::SUCCESS
        }
        Err(error) => {
            eprintln!("axum-service: {error}");
            ExitCode::FAILURE
        }
    }
}
