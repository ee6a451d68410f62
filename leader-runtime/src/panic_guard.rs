//! Panic guards for job authors: a panic stops one step or one item, not the tick.
//!
//! A panic on one unusual row should not stop every later step of a tick for every tenant. The
//! guards here run each step (or item) on its own: one that panics stops, is logged with its name
//! ("step panicked; running the rest"), and the rest run. At the end the first panic is raised
//! again, so the runtime still releases the tick as panicked (a cooldown of one interval, and the
//! `panicked` lease-loss counter goes up) and the defect is not hidden. A [`Steps`] dropped
//! without [`Steps::finish`] (an early `return` or `?`) raises it again all the same.
//!
//! ```no_run
//! use leader_runtime::{JobError, TickContext, panic_guard::Steps};
//!
//! async fn bill(tick: TickContext) -> Result<(), JobError> {
//!     let mut steps = Steps::new(tick.role().as_str());
//!     steps.run("close periods", async { /* ... */ }).await;
//!     steps.run("retry charges", async { /* ... */ }).await;
//!     steps.finish(); // raises the first step panic again, if any
//!     Ok(())
//! }
//! ```

use std::fmt::{Debug, Display};
use std::panic::resume_unwind;

use crate::panic_capture::{CatchPanic, CaughtPanic, Reraised};

/// Runs named steps, each guarded: see the [module docs](self).
///
/// A step's panic is never swallowed: [`Steps::finish`] raises the first one again, and so does
/// dropping the guard without calling it (unless the thread is already unwinding from another
/// panic, which then carries on).
#[derive(Debug)]
#[must_use = "call finish() to raise a step's panic again where the steps end"]
pub struct Steps {
    scope: String,
    first_panic: Option<CaughtPanic>,
    panicked: Vec<String>,
}

impl Steps {
    /// A guard for the steps of `scope` (a role or job name, for the logs).
    pub fn new(scope: impl Into<String>) -> Steps {
        Steps {
            scope: scope.into(),
            first_panic: None,
            panicked: Vec::new(),
        }
    }

    /// Runs one step. Returns its output, or `None` if it panicked (the panic is logged with
    /// the step's name and kept; the first one is raised again by [`Steps::finish`]).
    pub async fn run<T>(&mut self, name: &str, step: impl Future<Output = T>) -> Option<T> {
        match CatchPanic::new(step).await {
            Ok(output) => Some(output),
            Err(mut panic) => {
                panic.step.get_or_insert_with(|| name.to_owned());
                tracing::error!(
                    scope = %self.scope, step = name, panic = %panic.message,
                    location = panic.location.as_deref().unwrap_or("unknown"),
                    "step panicked; running the rest"
                );
                self.panicked.push(name.to_owned());
                self.first_panic.get_or_insert(panic);
                None
            }
        }
    }

    /// The names of the steps that panicked so far.
    pub fn panicked_steps(&self) -> &[String] {
        &self.panicked
    }

    /// Ends the guarded steps.
    ///
    /// # Panics
    ///
    /// Raises the first step's panic again (with its message, step and location), if a step
    /// panicked, so the tick is released as panicked.
    pub fn finish(mut self) {
        if let Some(panic) = self.first_panic.take() {
            resume_unwind(Box::new(Reraised(panic)));
        }
    }
}

impl Drop for Steps {
    fn drop(&mut self) {
        if let Some(panic) = self.first_panic.take()
            && !std::thread::panicking()
        {
            resume_unwind(Box::new(Reraised(panic)));
        }
    }
}

/// What a guarded batch did, when no item panicked.
#[derive(Debug)]
#[must_use = "the items that failed are in the report's `failed`: dropped, their errors go unseen"]
pub struct BatchReport<E> {
    /// Items whose work returned `Ok`.
    pub succeeded: usize,
    /// Items whose work returned an error, described by their `Debug` form.
    pub failed: Vec<(String, E)>,
}

fn log_errors<E: Display>(what: &str, failed: &[(String, E)]) {
    for (item, error) in failed {
        tracing::warn!(batch = what, item = %item, %error, "item failed");
    }
}

fn raise_after<E: Display>(what: &str, first_panic: Option<CaughtPanic>, failed: &[(String, E)]) {
    if let Some(panic) = first_panic {
        // The panic drops the report, so the errors collected so far are logged before it.
        log_errors(what, failed);
        resume_unwind(Box::new(Reraised(panic)));
    }
}

/// Runs `work` on each item. An item whose work panics is left out (logged with its `Debug`
/// form) and the rest are processed; items that return an error are collected.
///
/// # Panics
///
/// After the last item, raises the first item's panic again, having logged every collected
/// error first (the panic drops the report that would have carried them).
///
/// `work` returns a future that owns what it needs (clone a pool or store into an `async move`
/// block), so the job's future stays `Send`:
///
/// ```no_run
/// # use leader_runtime::panic_guard::run_batch;
/// # async fn demo(pool: sqlx::PgPool, ids: Vec<i64>) {
/// let report = run_batch("email_outbox", ids, |id| {
///     let pool = pool.clone();
///     async move { send_one(&pool, id).await }
/// })
/// .await;
/// # }
/// # async fn send_one(_: &sqlx::PgPool, _: i64) -> Result<(), sqlx::Error> { Ok(()) }
/// ```
pub async fn run_batch<T, E, Fut>(
    what: &str,
    items: impl IntoIterator<Item = T>,
    mut work: impl FnMut(T) -> Fut,
) -> BatchReport<E>
where
    T: Debug,
    E: Display,
    Fut: Future<Output = Result<(), E>>,
{
    guard_each(what, items, |item| {
        (work(item), None::<std::future::Ready<Result<(), E>>>)
    })
    .await
}

/// Like [`run_batch`] for a rotating sweep: after each item's `check` ends, however it ends
/// (success, error or panic), `stamp` records that it was checked, so an item whose check
/// panics rotates to the back of a least-recently-checked-first listing instead of coming back
/// first on every tick and blocking the items behind it.
///
/// A `stamp` error is collected like a check error.
///
/// # Panics
///
/// As [`run_batch`]: the first check's panic is raised again after the last item.
pub async fn sweep_rotating<T, E, CheckFut, StampFut>(
    what: &str,
    items: impl IntoIterator<Item = T>,
    mut check: impl FnMut(T) -> CheckFut,
    mut stamp: impl FnMut(T) -> StampFut,
) -> BatchReport<E>
where
    T: Debug + Clone,
    E: Display,
    CheckFut: Future<Output = Result<(), E>>,
    StampFut: Future<Output = Result<(), E>>,
{
    // Futures are lazy: the stamp's future is built here but runs only after the check ends.
    guard_each(what, items, |item| (check(item.clone()), Some(stamp(item)))).await
}

/// The loop behind [`run_batch`] and [`sweep_rotating`]: `split` gives each item's guarded work
/// and, optionally, a follow-up that runs however the work ended (unguarded).
async fn guard_each<T, E, Fut, After>(
    what: &str,
    items: impl IntoIterator<Item = T>,
    mut split: impl FnMut(T) -> (Fut, Option<After>),
) -> BatchReport<E>
where
    T: Debug,
    E: Display,
    Fut: Future<Output = Result<(), E>>,
    After: Future<Output = Result<(), E>>,
{
    let mut report = BatchReport {
        succeeded: 0,
        failed: Vec::new(),
    };
    let mut first_panic = None;
    for item in items {
        let label = format!("{item:?}");
        let (work, after) = split(item);
        let outcome = CatchPanic::new(work).await;
        let followed = match after {
            Some(after) => after.await,
            None => Ok(()),
        };
        match outcome {
            Ok(Ok(())) => report.succeeded += 1,
            Ok(Err(error)) => report.failed.push((label.clone(), error)),
            Err(mut panic) => {
                tracing::error!(
                    batch = what, item = %label, panic = %panic.message,
                    location = panic.location.as_deref().unwrap_or("unknown"),
                    "item panicked; processing the rest"
                );
                panic.step.get_or_insert(label.clone());
                first_panic.get_or_insert(panic);
            }
        }
        if let Err(error) = followed {
            report.failed.push((label, error));
        }
    }
    raise_after(what, first_panic, &report.failed);
    report
}

#[cfg(test)]
mod tests {
    use std::sync::{Arc, Mutex};

    use super::{Steps, run_batch, sweep_rotating};
    use crate::panic_capture::{CatchPanic, install};

    #[tokio::test]
    async fn steps_dropped_without_finish_raise_the_first_panic_again() {
        install();
        let outcome = CatchPanic::new(async {
            let mut steps = Steps::new("alpha");
            steps.run("first", async { panic!("first broke") }).await;
            steps.run("second", async {}).await;
        })
        .await;
        let panic = outcome.expect_err("the step's panic is not swallowed");
        assert_eq!(
            (panic.message.as_str(), panic.step.as_deref()),
            ("first broke", Some("first"))
        );
    }

    #[tokio::test]
    async fn steps_without_a_panic_can_be_dropped() {
        let outcome = CatchPanic::new(async {
            let mut steps = Steps::new("alpha");
            steps.run("only", async { 7 }).await
        })
        .await;
        assert_eq!(outcome, Ok(Some(7)));
    }

    #[tokio::test]
    async fn a_batch_processes_every_other_item_then_raises_the_first_panic() {
        install();
        let done = Arc::new(Mutex::new(Vec::new()));
        let log = done.clone();
        let outcome = CatchPanic::new(run_batch("items", 1..=5, move |n| {
            let log = log.clone();
            async move {
                match n {
                    2 => panic!("item two is malformed"),
                    4 => Err(format!("item {n} failed")),
                    _ => {
                        log.lock().unwrap().push(n);
                        Ok(())
                    }
                }
            }
        }))
        .await;
        assert_eq!(
            *done.lock().unwrap(),
            [1, 3, 5],
            "the items after the panic ran"
        );
        let panic = outcome.expect_err("the panic is raised after the last item");
        assert_eq!(panic.message, "item two is malformed");
        assert_eq!(panic.step.as_deref(), Some("2"));
    }

    #[tokio::test]
    async fn a_batch_without_panics_reports_its_errors() {
        let report = run_batch("items", ["a", "b"], |item| async move {
            if item == "b" { Err("no") } else { Ok(()) }
        })
        .await;
        assert_eq!(report.succeeded, 1);
        assert_eq!(report.failed.len(), 1);
        assert_eq!(report.failed[0].0, "\"b\"");
    }

    #[tokio::test]
    async fn a_rotating_sweep_stamps_the_item_whose_check_panicked() {
        install();
        let stamped = Arc::new(Mutex::new(Vec::new()));
        let stamps = stamped.clone();
        let outcome = CatchPanic::new(sweep_rotating(
            "stale holds",
            [10, 11, 12],
            |id| async move {
                if id == 11 {
                    panic!("hold 11 has no invoice");
                }
                Ok::<(), String>(())
            },
            move |id| {
                let stamps = stamps.clone();
                async move {
                    stamps.lock().unwrap().push(id);
                    Ok(())
                }
            },
        ))
        .await;
        assert_eq!(
            *stamped.lock().unwrap(),
            [10, 11, 12],
            "the panicking item is stamped too, so it rotates to the back"
        );
        assert_eq!(outcome.unwrap_err().message, "hold 11 has no invoice");
    }
}
