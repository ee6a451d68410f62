//! Catching a job's panic with its message and location, and logging it once.
//!
//! `catch_unwind` yields only the payload. The location comes from a panic hook that
//! [`install`] chains in front of the previous one: for a panic raised while a job (or one of its
//! guarded steps) is being polled, the hook records the message and location in a thread-local
//! and prints nothing, so the runtime logs the panic once, with its role; any other panic goes
//! to the previous hook unchanged. Built with `panic = "abort"` nothing is caught, so every
//! panic goes to the previous hook: the one that ends the process is printed, not recorded for
//! a log line that never comes. The crate docs' "Panics" section is the user's account of this.

use std::any::Any;
use std::cell::{Cell, RefCell};
use std::fmt;
use std::future::Future;
use std::panic::{AssertUnwindSafe, catch_unwind};
use std::pin::Pin;
use std::sync::Once;
use std::task::{Context, Poll};

thread_local! {
    static IN_JOB: Cell<bool> = const { Cell::new(false) };
    static LAST: RefCell<Option<(String, Option<String>)>> = const { RefCell::new(None) };
}

/// A panic caught from a job or a guarded step.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct CaughtPanic {
    /// The panic message (the payload, when it is a string).
    pub message: String,
    /// `file:line:column` where it was raised, when known.
    pub location: Option<String>,
    /// The guarded step or item it came from, when re-raised by a guard.
    pub step: Option<String>,
}

impl fmt::Display for CaughtPanic {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        write!(f, "{}", self.message)?;
        if let Some(step) = &self.step {
            write!(f, " (in step {step})")?;
        }
        if let Some(location) = &self.location {
            write!(f, " at {location}")?;
        }
        Ok(())
    }
}

/// The payload a guard re-raises so the runner can still say where the first panic happened.
pub(crate) struct Reraised(pub CaughtPanic);

pub(crate) fn message_of(payload: &(dyn Any + Send)) -> String {
    if let Some(s) = payload.downcast_ref::<&str>() {
        (*s).to_owned()
    } else if let Some(s) = payload.downcast_ref::<String>() {
        s.clone()
    } else {
        "a panic with a non-string payload".to_owned()
    }
}

impl CaughtPanic {
    pub(crate) fn from_payload(payload: Box<dyn Any + Send>) -> CaughtPanic {
        if let Some(Reraised(caught)) = payload.downcast_ref::<Reraised>() {
            return caught.clone();
        }
        let recorded = LAST.with(|last| last.borrow_mut().take());
        let message = message_of(payload.as_ref());
        CaughtPanic {
            location: recorded.and_then(|(_, location)| location),
            message,
            step: None,
        }
    }
}

/// Installs the capturing panic hook (once per process; later calls do nothing).
pub fn install() {
    static ONCE: Once = Once::new();
    ONCE.call_once(|| {
        let previous = std::panic::take_hook();
        std::panic::set_hook(Box::new(move |info| {
            if cfg!(panic = "unwind") && IN_JOB.with(Cell::get) {
                let location = info.location().map(ToString::to_string);
                let message = message_of(info.payload());
                LAST.with(|last| *last.borrow_mut() = Some((message, location)));
            } else {
                previous(info);
            }
        }));
    });
}

struct JobScope(bool);

impl JobScope {
    fn enter() -> JobScope {
        JobScope(IN_JOB.with(|flag| flag.replace(true)))
    }
}

impl Drop for JobScope {
    fn drop(&mut self) {
        IN_JOB.with(|flag| flag.set(self.0));
    }
}

/// Runs `f` as job code: a panic inside it is caught and returned with its location.
pub(crate) fn catch<T>(f: impl FnOnce() -> T) -> Result<T, CaughtPanic> {
    let _scope = JobScope::enter();
    catch_unwind(AssertUnwindSafe(f)).map_err(CaughtPanic::from_payload)
}

/// A future whose panics are caught: it resolves to `Err(CaughtPanic)` instead of unwinding.
///
/// Dropping it unfinished (a tick abandoned after its grace period) drops the inner future under
/// the same guard: a panic raised by a destructor there is logged, not propagated.
pub(crate) struct CatchPanic<F> {
    inner: Option<Pin<Box<F>>>,
}

impl<F: Future> CatchPanic<F> {
    pub(crate) fn new(inner: F) -> CatchPanic<F> {
        CatchPanic {
            inner: Some(Box::pin(inner)),
        }
    }
}

impl<F> Drop for CatchPanic<F> {
    fn drop(&mut self) {
        let inner = self.inner.take();
        if let Err(panic) = catch(|| drop(inner)) {
            tracing::error!(
                panic = %panic.message,
                location = panic.location.as_deref().unwrap_or("unknown"),
                step = panic.step.as_deref().unwrap_or("-"),
                "a job panicked while being dropped"
            );
        }
    }
}

impl<F: Future> Future for CatchPanic<F> {
    type Output = Result<F::Output, CaughtPanic>;

    fn poll(self: Pin<&mut Self>, cx: &mut Context<'_>) -> Poll<Self::Output> {
        let inner = self
            .get_mut()
            .inner
            .as_mut()
            .expect("CatchPanic is not polled after it is dropped");
        match catch(|| inner.as_mut().poll(cx)) {
            Ok(Poll::Pending) => Poll::Pending,
            Ok(Poll::Ready(output)) => Poll::Ready(Ok(output)),
            Err(caught) => Poll::Ready(Err(caught)),
        }
    }
}
