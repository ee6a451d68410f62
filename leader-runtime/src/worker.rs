//! A lease's worker: runs, on the lease's own task, each tick the poller grants it, and tells the
//! poller when the tick has been released.

use std::sync::Arc;

use leader_core::lease::Grant;
use tokio::sync::mpsc;
use tokio::time::Instant;
use tokio_util::sync::CancellationToken;

use crate::role_spec::{LeaseKey, RoleSpec};
use crate::tick::{TickEnv, run_tick};

/// A grant the poller hands to its lease's worker, with the instant its ACQUIRE was sent and,
/// when the ACQUIRE named an anchor, the token that is cancelled when that anchor ends.
pub(crate) type Handoff = (Grant, Instant, Option<CancellationToken>);

/// Runs each tick the poller grants `spec` for the lease `key`, then tells the poller on `done`.
/// Returns once the poller has stopped (its sender dropped) and the last tick has been released.
pub(crate) async fn work_lease(
    env: &TickEnv<'_>,
    spec: Arc<RoleSpec>,
    key: LeaseKey,
    mut grants: mpsc::Receiver<Handoff>,
    done: mpsc::UnboundedSender<LeaseKey>,
) {
    while let Some((grant, sent, anchor_life)) = grants.recv().await {
        let fence = grant.fence;
        env.leadership.started(fence);
        run_tick(env, &spec, grant, sent, anchor_life).await;
        env.leadership.ended(fence);
        let _ = done.send(key);
    }
}
