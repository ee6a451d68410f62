//! Shutdown on a signal, for [`crate::Runtime::run`].

use std::fmt;
use std::future::Future;
use std::pin::Pin;
use std::task::{Context, Poll};

use futures_util::FutureExt;
use futures_util::future::{BoxFuture, Shared};

/// Resolves on SIGTERM or Ctrl-C (SIGINT): the graceful shutdown of a rolling deploy.
///
/// Must be called inside a tokio runtime. The handlers are installed before this returns, so a
/// signal that arrives right after is not lost; from then on these signals no longer end the
/// process by themselves, so the future must be awaited (or passed to
/// [`Runtime::run`](crate::Runtime::run)): dropped, a SIGTERM does nothing. If a handler cannot
/// be installed, the error is logged and the future waits for the other signal.
///
/// Clones resolve together, so one signal can stop the runtime and an HTTP server (axum's
/// `with_graceful_shutdown`) alike.
///
/// ```no_run
/// # async fn run(runtime: leader_runtime::Runtime) -> Result<(), leader_runtime::RunError> {
/// runtime.run(leader_runtime::shutdown::signal()).await
/// # }
/// ```
pub fn signal() -> Signal {
    let received: BoxFuture<'static, ()> = Box::pin(listen());
    Signal {
        received: received.shared(),
    }
}

/// The future [`signal`] returns; its clones resolve on the same signal.
#[derive(Clone)]
#[must_use = "the signal handlers are installed: dropped, SIGTERM and Ctrl-C do nothing"]
pub struct Signal {
    received: Shared<BoxFuture<'static, ()>>,
}

impl fmt::Debug for Signal {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.debug_struct("Signal").finish_non_exhaustive()
    }
}

impl Future for Signal {
    type Output = ();

    fn poll(mut self: Pin<&mut Self>, cx: &mut Context<'_>) -> Poll<()> {
        self.received.poll_unpin(cx)
    }
}

#[cfg(unix)]
fn listen() -> impl Future<Output = ()> + Send + 'static {
    use tokio::signal::unix::{SignalKind, signal};
    let mut streams = Vec::new();
    for (kind, name) in [
        (SignalKind::terminate(), "SIGTERM"),
        (SignalKind::interrupt(), "SIGINT"),
    ] {
        match signal(kind) {
            Ok(stream) => streams.push((stream, name)),
            Err(error) => tracing::error!(%error, signal = name, "cannot listen for the signal"),
        }
    }
    async move {
        if streams.is_empty() {
            return std::future::pending().await;
        }
        let received = futures_util::future::select_all(
            streams
                .iter_mut()
                .map(|(stream, name)| Box::pin(async move { stream.recv().await.map(|_| *name) })),
        );
        match received.await {
            (Some(name), ..) => tracing::info!(signal = name, "shutdown signal received"),
            (None, ..) => std::future::pending().await,
        }
    }
}

#[cfg(not(unix))]
fn listen() -> impl Future<Output = ()> + Send + 'static {
    async {
        match tokio::signal::ctrl_c().await {
            Ok(()) => tracing::info!("shutdown signal received"),
            Err(error) => {
                tracing::error!(%error, "cannot listen for Ctrl-C");
                std::future::pending().await
            }
        }
    }
}

#[cfg(all(test, unix))]
mod tests {
    use std::time::Duration;

    #[tokio::test]
    async fn sigterm_resolves_the_signal() {
        let signal = super::signal();
        let also = signal.clone();
        let status = std::process::Command::new("kill")
            .args(["-TERM", &std::process::id().to_string()])
            .status()
            .unwrap();
        assert!(status.success());
        tokio::time::timeout(Duration::from_secs(10), signal)
            .await
            .expect("SIGTERM resolves the signal future");
        tokio::time::timeout(Duration::from_secs(10), also)
            .await
            .expect("and its clone");
    }
}
