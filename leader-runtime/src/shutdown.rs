//! Shutdown signals.

use tokio_util::sync::CancellationToken;

/// A token cancelled on SIGTERM or Ctrl-C (SIGINT), for [`crate::Runtime::run`].
///
/// Must be called inside a tokio runtime; it spawns one task that waits for the signals. If the
/// signal handlers cannot be installed, the error is logged and the token is only cancelled by
/// whoever else holds it.
pub fn on_signal() -> CancellationToken {
    let token = CancellationToken::new();
    let cancel = token.clone();
    tokio::spawn(async move {
        #[cfg(unix)]
        let terminate = async {
            match tokio::signal::unix::signal(tokio::signal::unix::SignalKind::terminate()) {
                Ok(mut sigterm) => {
                    sigterm.recv().await;
                }
                Err(error) => {
                    tracing::error!(%error, "cannot listen for SIGTERM");
                    std::future::pending::<()>().await;
                }
            }
        };
        #[cfg(not(unix))]
        let terminate = std::future::pending::<()>();
        tokio::select! {
            result = tokio::signal::ctrl_c() => {
                if let Err(error) = result {
                    tracing::error!(%error, "cannot listen for Ctrl-C");
                    std::future::pending::<()>().await;
                }
            }
            () = terminate => {}
        }
        tracing::info!("shutdown signal received");
        cancel.cancel();
    });
    token
}
