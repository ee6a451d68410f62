//! Valid jobs: roles the prepared schema's CHECK lists (`webhook_outbox` only by the later
//! migration, `reports` and `nightly` by the last), an interval in milliseconds, a public
//! constant, `migrations = "..."` naming the folder the schema was prepared from, and a cron
//! schedule in a time zone.
use leader_runtime::{Role, TickContext, leader_role};

#[derive(Debug)]
struct BillingError;

impl std::fmt::Display for BillingError {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.write_str("billing failed")
    }
}

impl std::error::Error for BillingError {}

#[leader_role("billing", every = "1h")]
async fn bill(tick: TickContext) -> Result<(), BillingError> {
    let _ = tick.fence();
    Ok(())
}

mod hooks {
    use leader_runtime::{TickContext, leader_role};

    #[leader_role("webhook_outbox", every = "250ms")]
    pub async fn deliver(_tick: TickContext) -> Result<(), std::io::Error> {
        Ok(())
    }
}

#[leader_role("reports", every = "1d", migrations = "migrations")]
async fn report(
    _tick: leader_runtime::TickContext,
) -> std::result::Result<(), Box<dyn std::error::Error + Send + Sync>> {
    Ok(())
}

#[leader_role(
    "nightly",
    cron = "0 2 * * *",
    tz = "Europe/Berlin",
    missed = "each"
)]
async fn nightly(tick: TickContext) -> Result<(), std::io::Error> {
    let _serves: Option<chrono::DateTime<leader_runtime::schedule::Tz>> = tick.tick_instant();
    Ok(())
}

#[tokio::main]
async fn main() {
    let roles: [Role; 4] = [BILLING, hooks::WEBHOOK_OUTBOX, REPORTS, NIGHTLY];
    assert_eq!(roles[1].as_str(), "webhook_outbox");
    let pool = sqlx::postgres::PgPoolOptions::new()
        .connect_lazy("postgres://unused@localhost/unused")
        .unwrap();
    let runtime = leader_runtime::Runtime::builder(pool)
        .registered_jobs()
        .build()
        .unwrap();
    let jobs = runtime.jobs();
    assert_eq!(jobs.len(), 4);
    let hook = jobs
        .iter()
        .find(|j| j.role == hooks::WEBHOOK_OUTBOX)
        .unwrap();
    assert_eq!(
        hook.schedule.interval(),
        Some(std::time::Duration::from_millis(250))
    );
    let nightly = jobs.iter().find(|j| j.role == NIGHTLY).unwrap();
    assert_eq!(
        nightly.schedule.to_string(),
        "cron \"0 2 * * *\" in Europe/Berlin, missed instants: each"
    );
    assert!(hook.name.ends_with("::hooks::deliver"), "{}", hook.name);
}
