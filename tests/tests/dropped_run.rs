//! A dropped `run` future (a service's `select!` ending another branch, or its task aborted)
//! stops everything the runtime started, as a dropped `JoinSet` does: the loops, the ticks' jobs
//! and the tasks those jobs spawned through their tick.

mod common;

use std::time::Duration;

use common::*;
use leader_runtime::{JobError, Runtime, TickContext};
use tokio::sync::{mpsc, oneshot};

/// Sends on its channel when dropped: a task holding it has ended (returned or aborted).
struct SaysWhenDropped(Option<oneshot::Sender<()>>);

impl Drop for SaysWhenDropped {
    fn drop(&mut self) {
        if let Some(sender) = self.0.take() {
            let _ = sender.send(());
        }
    }
}

/// A runtime leading `alpha` whose job spawns a task through its tick that runs until aborted;
/// its `run` future is dropped while the job runs. The job and its task both end (before the
/// fix, a tick's tasks outlived a dropped `run`: nothing aborted them).
#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn a_dropped_run_future_ends_the_jobs_and_the_tasks_they_spawned() {
    let db = database().await;
    let (started_tx, mut started) = mpsc::unbounded_channel::<()>();
    let (job_ended_tx, mut job_ended) = mpsc::unbounded_channel::<oneshot::Receiver<()>>();
    let runtime = Runtime::builder(db.pool().clone())
        .timings(FAST)
        .holder_id("dropped")
        .role(ALPHA, Duration::from_secs(60), move |tick: TickContext| {
            let started = started_tx.clone();
            let job_ended = job_ended_tx.clone();
            async move {
                let (task_tx, task_rx) = oneshot::channel();
                let (job_tx, job_rx) = oneshot::channel();
                let _ = job_ended.send(job_rx);
                let _ = job_ended.send(task_rx);
                let _job_guard = SaysWhenDropped(Some(job_tx));
                let task_guard = SaysWhenDropped(Some(task_tx));
                let _task = tick.spawn(async move {
                    let _guard = task_guard;
                    std::future::pending::<()>().await
                });
                let _ = started.send(());
                std::future::pending::<Result<(), JobError>>().await
            }
        })
        .build()
        .expect("a valid runtime");
    let run = tokio::spawn(runtime.run(std::future::pending()));
    started.recv().await.expect("the job starts");
    run.abort();
    assert!(
        run.await.expect_err("aborted").is_cancelled(),
        "the run future was dropped"
    );
    let job = job_ended.recv().await.expect("the job's guard");
    let task = job_ended.recv().await.expect("the task's guard");
    // A failure guard only: each ends as soon as the runtime's tasks are dropped.
    let within = Duration::from_secs(30);
    tokio::time::timeout(within, job)
        .await
        .expect("the job ends when the run future is dropped")
        .expect("its guard says so");
    tokio::time::timeout(within, task)
        .await
        .expect("the task the job spawned through its tick ends when the run future is dropped")
        .expect("its guard says so");
}
