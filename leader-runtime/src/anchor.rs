//! The takeover of a dead holder ([`RuntimeBuilder::take_over_when_dead`]): this replica's
//! anchor, and its watcher in the ring of replicas.
//!
//! * **The anchor** is the wake connection itself (`wake::listen`): on each connect it takes the
//!   holder's anchor lock and reads its identity ([`Anchor::open`]), and [`AnchorCell`] keeps
//!   that identity for ACQUIRE to name, with a token that is cancelled the moment the connection
//!   ends. A tick granted under the anchor is cancelled with it (`CancelCause::AnchorLost`):
//!   once the server has ended the session, another replica's ACQUIRE may take the lease.
//! * **The watcher** ([`watch_ring`]) is one more direct session. The live anchors form a ring,
//!   ordered by their lock keys, read from `pg_locks`; each watcher waits on the anchor lock of
//!   the next replica in the ring (its own when alone). When that replica dies the server
//!   grants the waiting watcher its lock at once; in the same statement the watcher unlocks it
//!   and sends `NOTIFY leader_anchor_ended`, which every anchor hears and which makes each
//!   replica poll at once. The notice carries no authority: ACQUIRE's own statement decides.
//!   A replica that joins cancels the wait of whoever watched its next, and of any watcher still
//!   on its way to a wait (those then read the ring again, one watching the newcomer), and a wait
//!   reads the ring again in its own statement; so the ring re-forms without any polling, and
//!   without a gap: while nobody joins or dies, a watcher sends nothing.
//!
//! [`RuntimeBuilder::take_over_when_dead`]: crate::RuntimeBuilder::take_over_when_dead

use std::sync::atomic::{AtomicBool, Ordering};
use std::sync::{Arc, Mutex};
use std::time::Duration;

use leader_core::Timings;
use leader_core::lease::{self, Anchor, AnchorWait};
use leader_core::pooler::DirectOptions;
use sqlx::ConnectOptions;
use sqlx::postgres::PgListener;
use tokio_util::sync::CancellationToken;

use crate::backoff::Backoff;

/// This replica's anchor as the runtime knows it: the identity ACQUIRE names, and the token that
/// is cancelled when the server ends the session.
#[derive(Debug)]
pub(crate) struct AnchorCell {
    current: tokio::sync::watch::Sender<Option<(Anchor, CancellationToken)>>,
    /// Cancelled once the first attempt to anchor has ended, opened or not: the first poll
    /// waits for it, so that a replica's first grants name its anchor.
    tried: CancellationToken,
    /// The anchor's connection from the shutdown until every tick is released ([`close`]).
    ///
    /// [`close`]: AnchorCell::close
    parked: Mutex<Option<PgListener>>,
    /// Whether the watcher's session is up and watching the ring.
    watching: AtomicBool,
}

impl Default for AnchorCell {
    fn default() -> AnchorCell {
        AnchorCell {
            current: tokio::sync::watch::Sender::new(None),
            tried: CancellationToken::new(),
            parked: Mutex::new(None),
            watching: AtomicBool::new(false),
        }
    }
}

impl AnchorCell {
    /// The anchor to name in the next ACQUIRE, and the token its grants' ticks stop with. Read
    /// before the ACQUIRE is sent: the identity only moves forward, and a lost anchor's token is
    /// cancelled before the next identity is set, so a tick is never bound to a later anchor than
    /// the one its grant recorded.
    pub(crate) fn current(&self) -> Option<(Anchor, CancellationToken)> {
        self.current.borrow().clone()
    }

    /// The session `anchor` is now this replica's anchor.
    pub(crate) fn set(&self, anchor: Anchor) {
        let previous = self
            .current
            .send_replace(Some((anchor, CancellationToken::new())));
        if let Some((_, life)) = previous {
            life.cancel();
        }
        self.tried.cancel();
        self.publish();
    }

    /// The anchor's session ended (or could not be opened): every tick granted under it stops,
    /// and ACQUIRE names no anchor until the next is open.
    pub(crate) fn lose(&self) {
        if let Some((_, life)) = self.current.send_replace(None) {
            life.cancel();
        }
        self.tried.cancel();
        self.publish();
    }

    /// The watcher's session is up and watching (`true`), or down (`false`).
    pub(crate) fn watching(&self, watching: bool) {
        self.watching.store(watching, Ordering::SeqCst);
        self.publish();
    }

    /// Whether fast takeover is on for this replica: anchored, and its watcher watching.
    pub(crate) fn is_on(&self) -> bool {
        self.current.borrow().is_some() && self.watching.load(Ordering::SeqCst)
    }

    /// Sets [`FAST_TAKEOVER`](crate::metrics::FAST_TAKEOVER) from the cell.
    pub(crate) fn publish(&self) {
        crate::metrics::fast_takeover(self.is_on());
    }

    /// Resolves once the first attempt to anchor has ended.
    pub(crate) async fn tried(&self) {
        self.tried.cancelled().await;
    }

    /// Waits until this replica is anchored, and returns the anchor.
    pub(crate) async fn anchored(&self) -> Anchor {
        let mut changes = self.current.subscribe();
        let anchored = changes.wait_for(Option::is_some).await;
        anchored
            .ok()
            .and_then(|current| current.as_ref().map(|(anchor, _)| *anchor))
            .expect("the cell outlives its watchers, and waits until an anchor is set")
    }

    /// Waits until the anchor is another than `anchor` (lost, or replaced).
    pub(crate) async fn replaced(&self, anchor: Anchor) {
        let mut changes = self.current.subscribe();
        let _ = changes
            .wait_for(|current| current.as_ref().map(|(a, _)| *a) != Some(anchor))
            .await;
    }

    /// Keeps the anchor's connection open after the wake listener stopped, until [`close`]: a
    /// shutdown ends the anchor only once the ticks granted under it are released.
    ///
    /// [`close`]: AnchorCell::close
    pub(crate) fn park(&self, listener: PgListener) {
        *self
            .parked
            .lock()
            .unwrap_or_else(std::sync::PoisonError::into_inner) = Some(listener);
    }

    /// Ends the anchor: called once every tick has been released.
    pub(crate) fn close(&self) {
        self.lose();
        drop(
            self.parked
                .lock()
                .unwrap_or_else(std::sync::PoisonError::into_inner)
                .take(),
        );
    }
}

/// The watcher's loop: connects with `direct` (to PostgreSQL itself), and watches the next
/// anchor in the ring after `holder`'s until `stop`. A lost connection is logged and retried
/// with backoff; meanwhile deaths in its part of the ring are heard at their lease's expiry.
pub(crate) async fn watch_ring(
    cell: Arc<AnchorCell>,
    direct: DirectOptions,
    holder: String,
    timings: Timings,
    stop: CancellationToken,
) {
    let mut backoff = Backoff::default();
    loop {
        let why = tokio::select! {
            () = stop.cancelled() => return,
            why = watch_until_error(&cell, &direct, &holder, &timings, &mut backoff) => why,
        };
        cell.watching(false);
        tracing::warn!(error = %why, "the anchor watcher's connection failed; a dead replica's leases may move only at their expiry until it is back");
        tokio::select! {
            () = stop.cancelled() => return,
            () = backoff.wait() => {}
        }
    }
}

/// How long a ring read may take before it is logged as slow. sqlx's own slow-statement log is
/// off on the watcher's session: its wait blocks by design, for as long as the next anchor lives.
const SLOW_RING_READ: Duration = Duration::from_secs(1);

async fn watch_until_error(
    cell: &AnchorCell,
    direct: &DirectOptions,
    holder: &str,
    timings: &Timings,
    backoff: &mut Backoff,
) -> String {
    // A backend waiting on a lock notices that its client went away only when it checks: the
    // watcher's backend checks every second, so a dead replica's watcher frees its wait soon.
    let direct = direct.clone().map(|options| {
        options
            .application_name(lease::WATCHER_APPLICATION_NAME)
            .options([("client_connection_check_interval", "1000")])
            .log_slow_statements(log::LevelFilter::Off, Duration::MAX)
    });
    let mut session = match direct.connect(crate::wake::CONNECT_TIMEOUT).await {
        Ok(session) => session,
        Err(error) => return error.to_string(),
    };
    backoff.reset();
    cell.watching(true);
    loop {
        // The ring is read only while this replica is anchored: its own anchor is then in it.
        let anchor = cell.anchored().await;
        let read = tokio::time::Instant::now();
        let next = match lease::next_in_ring(&mut session, holder, timings).await {
            Ok(next) => next,
            Err(error) => return error.to_string(),
        };
        if read.elapsed() >= SLOW_RING_READ {
            tracing::warn!(took = ?read.elapsed(), "the anchor watcher's read of the ring was slow");
        }
        tracing::debug!(
            ?next,
            "the anchor watcher waits on the next anchor in the ring"
        );
        // An ended anchor's backend leaves pg_stat_activity a moment after it frees its lock;
        // it is given as long as one statement may take.
        let exit_wait = timings.statement_timeout();
        match lease::await_anchor_end(&mut session, holder, next, exit_wait).await {
            Ok(AnchorWait::Ended) if next.is_own() => {
                // Alone in the ring, it watched its own anchor, which ended: wait for the next.
                tracing::info!("this replica's anchor ended");
                cell.replaced(anchor).await;
            }
            Ok(AnchorWait::Ended) => {
                tracing::info!(
                    ?next,
                    "an anchor in the ring ended; every replica polls now"
                );
            }
            Ok(_) => {}
            Err(error) => return error.to_string(),
        }
    }
}

#[cfg(test)]
mod tests {
    use super::AnchorCell;
    use chrono::{TimeZone, Utc};
    use leader_core::lease::Anchor;

    #[test]
    fn fast_takeover_is_on_only_while_anchored_and_watching() {
        let cell = AnchorCell::default();
        assert!(!cell.is_on());
        cell.set(Anchor::forge(7, Utc.timestamp_opt(1, 0).unwrap()));
        assert!(!cell.is_on(), "anchored, but no watcher yet");
        cell.watching(true);
        assert!(cell.is_on());
        cell.watching(false);
        assert!(!cell.is_on(), "the watcher's session is down");
        cell.watching(true);
        cell.lose();
        assert!(!cell.is_on(), "the anchor is lost");
    }

    #[test]
    fn a_lost_anchor_stops_its_ticks_and_a_new_one_starts_afresh() {
        let cell = AnchorCell::default();
        assert!(cell.current().is_none());
        let first = Anchor::forge(7, Utc.timestamp_opt(1, 0).unwrap());
        cell.set(first);
        let (named, life) = cell.current().unwrap();
        assert_eq!(named, first);
        cell.lose();
        assert!(life.is_cancelled());
        assert!(cell.current().is_none());
        let second = Anchor::forge(8, Utc.timestamp_opt(2, 0).unwrap());
        cell.set(second);
        let (named, life) = cell.current().unwrap();
        assert_eq!(named, second);
        assert!(!life.is_cancelled());
    }
}
