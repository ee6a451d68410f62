//! The tasks a tick spawns, which end with the tick.
//!
//! # Invariants
//!
//! 1. Every task spawned through [`TickTasks`] is tracked until it ends: the runtime waits for
//!    them before it sends the tick's RELEASE (up to the grace period, see `tick::run_job`).
//! 2. Once the tick's job has ended, [`TickTasks::end`] aborts every task still running, and a
//!    task spawned after that is aborted before it is first polled, so no async work of a tick
//!    outlives its lease. Code blocked in a thread cannot be aborted; the runtime stops waiting
//!    for it after the grace period, as it stops waiting for a job.
//! 3. A tick whose future is dropped before its job ended (the runtime's `run` future dropped,
//!    which aborts the lease's task) ends its tasks as in 2, through [`EndOnDrop`]: a dropped
//!    runtime leaves none of its ticks' tasks running, as a dropped `JoinSet` leaves none of its.

use std::future::Future;
use std::sync::{Arc, Mutex, PoisonError};

use tokio::task::{AbortHandle, JoinHandle};
use tokio_util::task::TaskTracker;
use tracing::Instrument;

/// Ends a tick's tasks ([`TickTasks::end`]) when dropped, whether the tick ran to its end or its
/// future was dropped half-way (invariant 3).
#[derive(Debug)]
pub(crate) struct EndOnDrop(pub(crate) TickTasks);

impl Drop for EndOnDrop {
    fn drop(&mut self) {
        self.0.end();
    }
}

/// The tasks of one tick. Clones share them.
#[derive(Debug, Clone)]
pub(crate) struct TickTasks {
    inner: Arc<Inner>,
}

#[derive(Debug)]
struct Inner {
    tracker: TaskTracker,
    /// Abort handles of the async tasks that may still run; `None` once the tick has ended.
    running: Mutex<Option<Vec<AbortHandle>>>,
    /// The tick's span, which every task runs in.
    span: tracing::Span,
}

impl TickTasks {
    /// The tasks of a tick whose span is `span`.
    pub(crate) fn new(span: tracing::Span) -> TickTasks {
        TickTasks {
            inner: Arc::new(Inner {
                tracker: TaskTracker::new(),
                running: Mutex::new(Some(Vec::new())),
                span,
            }),
        }
    }

    /// Spawns `task` on the current runtime, in the tick's span, tracked until it ends.
    pub(crate) fn spawn<F>(&self, task: F) -> JoinHandle<F::Output>
    where
        F: Future + Send + 'static,
        F::Output: Send + 'static,
    {
        let mut running = self.running();
        let handle = self
            .inner
            .tracker
            .spawn(task.instrument(self.inner.span.clone()));
        match running.as_mut() {
            Some(handles) => {
                handles.retain(|handle| !handle.is_finished());
                handles.push(handle.abort_handle());
            }
            None => handle.abort(),
        }
        handle
    }

    /// Runs `work` on tokio's blocking pool, in the tick's span, tracked until it returns; after
    /// the tick has ended it does not run at all (its handle yields a cancelled `JoinError`).
    pub(crate) fn spawn_blocking<F, R>(&self, work: F) -> JoinHandle<R>
    where
        F: FnOnce() -> R + Send + 'static,
        R: Send + 'static,
    {
        let running = self.running();
        if running.is_none() {
            let handle = tokio::spawn(std::future::pending::<R>());
            handle.abort();
            return handle;
        }
        let span = self.inner.span.clone();
        self.inner
            .tracker
            .spawn_blocking(move || span.in_scope(work))
    }

    /// Ends the tick's tasks: aborts every async task still running and every later one, and
    /// closes the tracker so [`TickTasks::ended`] can resolve.
    pub(crate) fn end(&self) {
        if let Some(handles) = self.running().take() {
            for handle in handles {
                handle.abort();
            }
        }
        self.inner.tracker.close();
    }

    /// Resolves once [`TickTasks::end`] was called and every task has ended. Cancellation safe.
    pub(crate) async fn ended(&self) {
        self.inner.tracker.wait().await;
    }

    /// How many tasks have not ended yet.
    pub(crate) fn unfinished(&self) -> usize {
        self.inner.tracker.len()
    }

    fn running(&self) -> std::sync::MutexGuard<'_, Option<Vec<AbortHandle>>> {
        // Nothing panics while holding the lock, so a poisoned lock's list is whole.
        self.inner
            .running
            .lock()
            .unwrap_or_else(PoisonError::into_inner)
    }
}

#[cfg(test)]
mod tests {
    use std::time::Duration;

    use super::{EndOnDrop, TickTasks};

    #[tokio::test(start_paused = true)]
    async fn dropping_the_guard_ends_the_tasks_as_end_does() {
        let tasks = TickTasks::new(tracing::Span::none());
        let running = tasks.spawn(std::future::pending::<()>());
        drop(EndOnDrop(tasks.clone()));
        let later = tasks.spawn(async {});
        assert!(running.await.unwrap_err().is_cancelled());
        assert!(later.await.unwrap_err().is_cancelled());
        tasks.ended().await;
    }

    #[tokio::test(start_paused = true)]
    async fn ending_aborts_the_running_tasks_and_every_later_one() {
        let tasks = TickTasks::new(tracing::Span::none());
        let before = tasks.spawn(std::future::pending::<()>());
        tasks.end();
        let after = tasks.spawn(async {});
        let blocking_after = tasks.spawn_blocking(|| ());
        tokio::time::timeout(Duration::from_secs(1), tasks.ended())
            .await
            .expect("aborted tasks end");
        assert!(before.await.unwrap_err().is_cancelled());
        assert!(after.await.unwrap_err().is_cancelled());
        assert!(blocking_after.await.unwrap_err().is_cancelled());
    }

    #[tokio::test(start_paused = true)]
    async fn ended_waits_for_a_task_that_finishes_on_its_own() {
        let tasks = TickTasks::new(tracing::Span::none());
        let (tx, rx) = tokio::sync::oneshot::channel::<()>();
        let blocking = tasks.spawn_blocking(move || rx.blocking_recv());
        tasks.end();
        assert_eq!(tasks.unfinished(), 1, "a blocking task cannot be aborted");
        tx.send(()).unwrap();
        tasks.ended().await;
        assert!(blocking.await.unwrap().is_ok());
    }
}
