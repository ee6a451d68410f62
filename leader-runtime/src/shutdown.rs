//! Shutdown signals.

use tokio_util::sync::CancellationToken;

/// A token cancelled on SIGTERM or Ctrl-C (SIGINT), for [`crate::Runtime::run`].
///
/// Must be called inside a tokio runtime. The handlers are installed before this returns, so a
/// signal that arrives right after is not lost; from then on these signals no longer end the
/// process by themselves. If a handler cannot be installed, the error is logged and the token is
/// only cancelled by whoever else holds it.
///
/// ```no_run
/// # async fn run(runtime: leader_runtime::Runtime) -> Result<(), leader_runtime::Error> {
/// runtime.run(leader_runtime::shutdown::on_signal()).await
/// # }
/// ```
pub fn on_signal() -> CancellationToken {
    let token = CancellationToken::new();
    let cancel = token.clone();
    #[cfg(unix)]
    {
        use tokio::signal::unix::{SignalKind, signal};
        let mut streams = Vec::new();
        for (kind, name) in [
            (SignalKind::terminate(), "SIGTERM"),
            (SignalKind::interrupt(), "SIGINT"),
        ] {
            match signal(kind) {
                Ok(stream) => streams.push((stream, name)),
                Err(error) => {
                    tracing::error!(%error, signal = name, "cannot listen for the signal")
                }
            }
        }
        tokio::spawn(async move {
            let received =
                futures_util::future::select_all(streams.iter_mut().map(|(stream, name)| {
                    Box::pin(async move { stream.recv().await.map(|_| *name) })
                }));
            if let (Some(name), ..) = received.await {
                tracing::info!(signal = name, "shutdown signal received");
                cancel.cancel();
            }
        });
    }
    #[cfg(not(unix))]
    tokio::spawn(async move {
        if tokio::signal::ctrl_c().await.is_ok() {
            tracing::info!("shutdown signal received");
            cancel.cancel();
        }
    });
    token
}

#[cfg(all(test, unix))]
mod tests {
    use std::time::Duration;

    #[tokio::test]
    async fn sigterm_cancels_the_token() {
        let token = super::on_signal();
        assert!(!token.is_cancelled());
        let status = std::process::Command::new("kill")
            .args(["-TERM", &std::process::id().to_string()])
            .status()
            .unwrap();
        assert!(status.success());
        tokio::time::timeout(Duration::from_secs(10), token.cancelled())
            .await
            .expect("SIGTERM cancels the shutdown token");
    }
}
