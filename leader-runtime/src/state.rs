//! The application's state, handed to the jobs that ask for it, as axum hands it to handlers.

/// The application's state, as a job's second parameter: the value given to
/// [`RuntimeBuilder::with_state`](crate::RuntimeBuilder::with_state), cloned for each tick (so
/// make it cheap to clone: an `Arc`, a pool, a client that is a handle).
///
/// A job of a builder is checked against the builder's state type when it is added; a
/// `#[leader_role]` job's state type is checked when the runtime is built, and an error names
/// the job and the `with_state` call that gives it.
///
/// ```no_run
/// use std::time::Duration;
/// use leader_runtime::{JobError, Role, Runtime, State, TickContext};
///
/// #[derive(Clone)]
/// struct App {
///     mailer: std::sync::Arc<Mailer>,
/// }
/// # struct Mailer;
///
/// async fn send_emails(tick: TickContext, State(app): State<App>) -> Result<(), JobError> {
///     # let _ = (tick, app.mailer);
///     Ok(())
/// }
///
/// # async fn main_(pool: sqlx::PgPool) -> Result<(), Box<dyn std::error::Error>> {
/// let app = App { mailer: std::sync::Arc::new(Mailer) };
/// let runtime = Runtime::builder(pool)
///     .with_state(app)
///     .role(Role::from_static("email_outbox"), Duration::from_secs(5), send_emails)
///     .build()?;
/// # Ok(()) }
/// ```
#[derive(Debug, Clone, Copy, Default, PartialEq, Eq, Hash)]
pub struct State<S>(pub S);
