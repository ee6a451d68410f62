//! The optional wake channel: a dedicated session that `LISTEN`s for releases, so a follower polls
//! as soon as a role is released instead of at its next scheduled poll.
//!
//! `LISTEN` needs a session of its own: behind a transaction-mode pooler the server connection
//! changes between transactions and the subscription is lost (or leaks to another client). So the
//! listener connects directly to PostgreSQL, with its own options, on one connection per
//! runtime; every other statement keeps using the application's pool.
//!
//! Polling stays the fallback: a lost or refused wake connection is logged once, the poller keeps
//! its schedule, and the listener reconnects with backoff (1 s doubling to 30 s). After each
//! (re)connect it wakes the poller once, since releases during the gap were not heard.

use std::time::Duration;

use leader_core::Role;
use leader_core::lease::RELEASED_CHANNEL;
use sqlx::postgres::{PgConnectOptions, PgListener, PgPoolOptions};
use tokio::sync::mpsc;
use tokio_util::sync::CancellationToken;

/// What the listener tells the poller.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub(crate) enum Wake {
    /// This role was released.
    Released(Role),
    /// The listener (re)connected: releases may have been missed.
    Connected,
}

const FIRST_BACKOFF: Duration = Duration::from_secs(1);
const MAX_BACKOFF: Duration = Duration::from_secs(30);
/// How long one connection attempt may take before it counts as failed.
const CONNECT_TIMEOUT: Duration = Duration::from_secs(2);

async fn connect(options: &PgConnectOptions) -> Result<PgListener, sqlx::Error> {
    let pool = PgPoolOptions::new()
        .max_connections(1)
        .acquire_timeout(CONNECT_TIMEOUT)
        .connect_with(options.clone())
        .await?;
    let mut listener = PgListener::connect_with(&pool).await?;
    listener.listen(RELEASED_CHANNEL).await?;
    Ok(listener)
}

/// Listens on `options` until `shutdown`, sending each release it hears to `wake`.
pub(crate) async fn listen(
    options: PgConnectOptions,
    wake: mpsc::UnboundedSender<Wake>,
    shutdown: CancellationToken,
) {
    let mut backoff = FIRST_BACKOFF;
    let mut down = false;
    loop {
        let connected = tokio::select! {
            () = shutdown.cancelled() => return,
            connected = connect(&options) => connected,
        };
        let why = match connected {
            Ok(mut listener) => {
                if down {
                    tracing::info!("wake connection is back; releases wake this replica again");
                    down = false;
                }
                backoff = FIRST_BACKOFF;
                let _ = wake.send(Wake::Connected);
                loop {
                    tokio::select! {
                        () = shutdown.cancelled() => return,
                        heard = listener.try_recv() => match heard {
                            Ok(Some(notification)) => {
                                if let Ok(role) = Role::new(notification.payload()) {
                                    let _ = wake.send(Wake::Released(role));
                                }
                            }
                            Ok(None) => break "the connection was closed".to_owned(),
                            Err(error) => break error.to_string(),
                        },
                    }
                }
            }
            Err(error) => error.to_string(),
        };
        if !down {
            tracing::warn!(error = %why, "wake connection lost or refused; polling only until it is back (reconnecting with backoff)");
            down = true;
        }
        tokio::select! {
            () = shutdown.cancelled() => return,
            () = tokio::time::sleep(backoff) => {}
        }
        backoff = (backoff * 2).min(MAX_BACKOFF);
    }
}
