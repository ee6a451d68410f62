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

use std::sync::Arc;
use std::time::Duration;

use leader_core::lease::{ANCHOR_ENDED_CHANNEL, Anchor, RELEASED_CHANNEL};
use leader_core::operator::PAUSED_CHANNEL;
use leader_core::pooler::{DirectError, DirectOptions};
use leader_core::{Role, Timings};
use sqlx::PgPool;
use sqlx::postgres::{PgListener, PgPoolOptions};
use tokio::sync::mpsc;
use tokio_util::sync::CancellationToken;

/// What the listener tells the poller.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub(crate) enum Wake {
    /// This role was released.
    Released(Role),
    /// The listener (re)connected: releases may have been missed.
    Connected,
    /// A watcher heard an anchor end: a dead replica's leases may be taken over now.
    AnchorEnded,
}

/// The wake connection as this replica's anchor ([`crate::anchor`]).
#[derive(Debug, Clone)]
pub(crate) struct Anchoring {
    pub cell: Arc<crate::anchor::AnchorCell>,
    pub holder: String,
    pub timings: Timings,
    /// The application's pool, whose login role the anchor's must be.
    pub pool: PgPool,
}

/// How long one connection attempt may take before it counts as failed.
pub(crate) const CONNECT_TIMEOUT: Duration = Duration::from_secs(2);

/// Why the wake connection is down.
enum Down {
    /// A pooler answered: a misconfiguration, logged as an error.
    Pooler(DirectError),
    /// Anything else: the server is unreachable, or the connection was lost.
    Other(String),
}

impl From<DirectError> for Down {
    fn from(error: DirectError) -> Down {
        if error.is_pooler() {
            Down::Pooler(error)
        } else {
            Down::Other(error.to_string())
        }
    }
}

fn other(error: impl std::fmt::Display) -> Down {
    Down::Other(error.to_string())
}

async fn connect(
    direct: &DirectOptions,
    anchoring: Option<&Anchoring>,
) -> Result<PgListener, Down> {
    let pool = PgPoolOptions::new()
        .max_connections(1)
        .acquire_timeout(CONNECT_TIMEOUT)
        .connect_with(direct.connect_options().clone())
        .await
        .map_err(|error| Down::from(direct.connect_error(&error)))?;
    let mut listener = PgListener::connect_with(&pool).await.map_err(other)?;
    // LISTEN on a session a pooler lends to others hears nothing: check the session first.
    direct.verify(&mut listener).await?;
    listener
        .listen_all([RELEASED_CHANNEL, PAUSED_CHANNEL])
        .await
        .map_err(other)?;
    if let Some(anchoring) = anchoring {
        let anchor_role = current_user(&mut listener).await.map_err(Down::Other)?;
        let pool_role = current_user(&anchoring.pool).await.map_err(Down::Other)?;
        if anchor_role != pool_role {
            tracing::warn!(%anchor_role, %pool_role, "the wake connection logs in as another role than the pool, whose ACQUIREs could not see its session's start: running without an anchor, so a dead replica's leases move only at their expiry; connect both as the same role");
            anchoring.cell.lose();
            return Ok(listener);
        }
        listener.listen(ANCHOR_ENDED_CHANNEL).await.map_err(other)?;
        let anchor = Anchor::open(&mut listener, &anchoring.holder, direct, &anchoring.timings)
            .await
            .map_err(|error| match error {
                leader_core::lease::AnchorError::NotDirect => Down::Pooler(DirectError::Pooler {
                    place: direct.place(),
                    evidence: error.to_string(),
                }),
                other => Down::Other(other.to_string()),
            })?;
        tracing::debug!(pid = anchor.pid(), "anchored this replica");
        anchoring.cell.set(anchor);
    }
    Ok(listener)
}

async fn current_user<'e>(db: impl sqlx::PgExecutor<'e>) -> Result<String, String> {
    use sqlx::Row;
    sqlx::raw_sql("SELECT current_user::text AS name")
        .fetch_one(db)
        .await
        .and_then(|row| row.try_get("name"))
        .map_err(|e| e.to_string())
}

/// Listens on `direct` until `shutdown`, sending each release it hears to `wake` and each pause
/// to `pauses`. With `anchoring`, the connection is also this replica's anchor: it is set in the
/// cell on each connect and lost, cancelling the ticks granted under it, the moment the
/// connection ends.
pub(crate) async fn listen(
    direct: DirectOptions,
    wake: mpsc::UnboundedSender<Wake>,
    pauses: crate::pause::PauseNotices,
    anchoring: Option<Anchoring>,
    shutdown: CancellationToken,
) {
    let mut backoff = crate::backoff::Backoff::default();
    let mut down = false;
    loop {
        let connected = tokio::select! {
            () = shutdown.cancelled() => return,
            connected = connect(&direct, anchoring.as_ref()) => connected,
        };
        let why = match connected {
            Ok(mut listener) => {
                if down {
                    tracing::info!("wake connection is back; releases wake this replica again");
                    down = false;
                }
                backoff.reset();
                let _ = wake.send(Wake::Connected);
                loop {
                    tokio::select! {
                        () = shutdown.cancelled() => {
                            // The anchor outlives the ticks granted under it: ending it now would
                            // let another replica take their leases while they still run.
                            if let Some(anchoring) = &anchoring {
                                anchoring.cell.park(listener);
                            }
                            return;
                        }
                        heard = listener.try_recv() => match heard {
                            Ok(Some(notification)) => match notification.channel() {
                                ANCHOR_ENDED_CHANNEL => {
                                    let _ = wake.send(Wake::AnchorEnded);
                                }
                                PAUSED_CHANNEL => {
                                    if let Ok(role) = Role::new(notification.payload()) {
                                        pauses.heard(role);
                                    }
                                }
                                _ => {
                                    if let Ok(role) = Role::new(notification.payload()) {
                                        let _ = wake.send(Wake::Released(role));
                                    }
                                }
                            },
                            Ok(None) => break Down::Other("the connection was closed".to_owned()),
                            Err(error) => break other(error),
                        },
                    }
                }
            }
            Err(why) => why,
        };
        if let Some(anchoring) = &anchoring {
            anchoring.cell.lose();
        }
        match why {
            Down::Pooler(error) => {
                // Checked at start-up: the address now leads to a pooler (a DNS or configuration
                // change). No session state is made through it; it is tried again as a loss.
                if !down {
                    tracing::error!(%error, "the direct connection (wake_on_release) reaches a pooler; running without it: releases are heard at the next poll, and a dead replica's leases move only at their expiry");
                }
            }
            Down::Other(error) => {
                if !down {
                    tracing::warn!(%error, "wake connection lost or refused; polling only until it is back (reconnecting with backoff)");
                }
            }
        }
        down = true;
        tokio::select! {
            () = shutdown.cancelled() => return,
            () = backoff.wait() => {}
        }
    }
}
