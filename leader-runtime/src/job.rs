//! What a runtime can run as a role's job: an async fn of the tick, or of the tick and the
//! application's [`State`].

use std::any::Any;
use std::future::Future;
use std::sync::Arc;

use crate::context::TickContext;
use crate::registry::{JobError, JobFuture};
use crate::state::State;

/// A job, type-erased: starts one tick's future from its context.
pub(crate) type JobFn = Arc<dyn Fn(TickContext) -> JobFuture + Send + Sync + 'static>;

/// A job of a runtime whose state is `S`: `async fn(TickContext) -> Result<(), E>`, or
/// `async fn(TickContext, State<S>) -> Result<(), E>`, with `E` convertible into [`JobError`]
/// (closures returning such futures too). `Args` tells the two forms apart; it is inferred.
#[diagnostic::on_unimplemented(
    message = "`{Self}` cannot be a job of a runtime whose state is `{S}`",
    label = "not a job for this runtime",
    note = "a job is `async fn(TickContext) -> Result<(), E>`, or `async fn(TickContext, State<{S}>) -> Result<(), E>` to receive the state given to `RuntimeBuilder::with_state`; a job that takes `State<T>` needs `.with_state(value_of_T)` before `.role(..)`"
)]
pub trait Job<S, Args>: Send + Sync + 'static {
    /// The job with the runtime's state bound in, type-erased.
    #[doc(hidden)]
    fn into_job_fn(self, state: S) -> JobFn;
}

/// The form `async fn(TickContext) -> Result<(), E>`.
#[doc(hidden)]
#[derive(Debug)]
pub enum TickOnly {}

/// The form `async fn(TickContext, State<S>) -> Result<(), E>`.
#[doc(hidden)]
#[derive(Debug)]
pub enum WithState {}

impl<F, Fut, E, S> Job<S, TickOnly> for F
where
    F: Fn(TickContext) -> Fut + Send + Sync + 'static,
    Fut: Future<Output = Result<(), E>> + Send + 'static,
    E: Into<JobError> + 'static,
{
    fn into_job_fn(self, _state: S) -> JobFn {
        Arc::new(move |tick| {
            let fut = self(tick);
            Box::pin(async move { fut.await.map_err(Into::into) })
        })
    }
}

impl<F, Fut, E, S> Job<S, WithState> for F
where
    F: Fn(TickContext, State<S>) -> Fut + Send + Sync + 'static,
    Fut: Future<Output = Result<(), E>> + Send + 'static,
    E: Into<JobError> + 'static,
    S: Clone + Send + Sync + 'static,
{
    fn into_job_fn(self, state: S) -> JobFn {
        Arc::new(move |tick| {
            let fut = self(tick, State(state.clone()));
            Box::pin(async move { fut.await.map_err(Into::into) })
        })
    }
}

/// Calls a `#[leader_role]` job that takes `State<S>` with the runtime's state, which the
/// builder checked is an `S` (see [`crate::RuntimeBuilder::registered_jobs`]). Used by the
/// macro's expansion; a state of another type (which the build refuses) fails the tick with an
/// error instead of panicking.
#[doc(hidden)]
pub fn call_with_state<S, F, Fut, R>(
    tick: TickContext,
    state: &(dyn Any + Send + Sync),
    job: F,
) -> JobFuture
where
    S: Clone + Send + Sync + 'static,
    F: FnOnce(TickContext, State<S>) -> Fut,
    Fut: Future<Output = R> + Send + 'static,
    R: crate::registry::JobResult,
{
    match state.downcast_ref::<S>() {
        Some(state) => {
            let fut = job(tick, State(state.clone()));
            Box::pin(async move { fut.await.into_job_result() })
        }
        None => {
            let wanted = std::any::type_name::<S>();
            Box::pin(async move {
                Err(format!("the runtime's state is not the `{wanted}` this job takes").into())
            })
        }
    }
}
