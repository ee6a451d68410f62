//! The tokio runtime a [`Runtime`](crate::Runtime) runs on. Each tick's job runs on a task of its
//! own so that a job blocking its thread (a synchronous client, a long computation) does not stop
//! its heartbeat: another worker thread runs the heartbeat meanwhile. With one thread (a
//! current-thread runtime, or a multi-thread one that tokio sized to a 1-CPU container) there is
//! no other, and the blocked job starves every task of the replica: RENEWs are not sent, leases
//! are abandoned and lost. [`warn_if_one_worker`] says so at start-up; the statement layer
//! ([`StatementError::Starved`](leader_core::StatementError::Starved)) and the heartbeat name the
//! scheduler, not the database, when they measure that it ran them late.

use tokio::runtime::{Handle, RuntimeFlavor};

/// How many worker threads the current tokio runtime has: 1 for a current-thread runtime.
pub(crate) fn worker_threads() -> Option<usize> {
    let handle = Handle::try_current().ok()?;
    match handle.runtime_flavor() {
        RuntimeFlavor::CurrentThread => Some(1),
        RuntimeFlavor::MultiThread => Some(handle.metrics().num_workers()),
        _ => None,
    }
}

/// Logs once, at WARN, when the current tokio runtime has fewer than two worker threads.
pub(crate) fn warn_if_one_worker() {
    if let Some(workers) = worker_threads().filter(|&n| n < 2) {
        tracing::warn!(
            workers,
            "this tokio runtime has one worker thread: a job that blocks its thread (a synchronous call, a long computation) stops every RENEW of this replica, and its leases are lost; build it with at least two, e.g. #[tokio::main(flavor = \"multi_thread\", worker_threads = 2)] (tokio sizes a default runtime to the CPUs it sees, one in a 1-CPU container), or run blocking work with tick.spawn_blocking"
        );
    }
}

#[cfg(test)]
mod tests {
    use super::worker_threads;

    #[tokio::test(flavor = "current_thread")]
    async fn a_current_thread_runtime_has_one_worker() {
        assert_eq!(worker_threads(), Some(1));
    }

    #[tokio::test(flavor = "multi_thread", worker_threads = 3)]
    async fn a_multi_thread_runtime_counts_its_workers() {
        assert_eq!(worker_threads(), Some(3));
    }
}
