//! One replica of the reference application for the drills, as its own process: every
//! `#[leader_role]` job of `billing-demo` plus the drill's `drill_ledger` role, until SIGTERM or
//! Ctrl-C (then it releases its leases and exits 0).

use std::process::ExitCode;
use std::time::Duration;

use clap::Parser;
use leader_drills::ledger;
use leader_runtime::{Runtime, Timings};

/// A drill replica.
#[derive(Debug, Parser)]
struct Args {
    /// The database URL (through the drill's link, and the pooler when it runs one).
    #[arg(long)]
    url: String,
    /// The holder id the leases record.
    #[arg(long)]
    holder: String,
    /// Lease TTL in milliseconds; the other timings scale with it.
    #[arg(long)]
    ttl_ms: u64,
    /// Lead `drill_ledger` by a session advisory lock instead of a lease (the comparison).
    #[arg(long)]
    advisory_lock: bool,
    /// Take over dead replicas' leases at once (`take_over_when_dead`), with the anchor and the
    /// watcher on this URL, to PostgreSQL itself.
    #[arg(long, value_name = "URL")]
    anchor_url: Option<String>,
    /// Serve the runtime's metrics on `/metrics` at this address (the Prometheus exporter).
    #[arg(long, value_name = "ADDR")]
    metrics_addr: Option<std::net::SocketAddr>,
}

#[tokio::main]
async fn main() -> ExitCode {
    tracing_subscriber::fmt()
        .with_env_filter(
            tracing_subscriber::EnvFilter::try_from_default_env().unwrap_or_else(|_| "info".into()),
        )
        .init();
    match run(Args::parse()).await {
        Ok(()) => ExitCode::SUCCESS,
        Err(error) => {
            eprintln!("drill-replica: {error}");
            ExitCode::from(2)
        }
    }
}

async fn run(args: Args) -> Result<(), Box<dyn std::error::Error>> {
    if let Some(addr) = args.metrics_addr {
        leader_runtime::prometheus::install(addr)?;
    }
    let ttl = Duration::from_millis(args.ttl_ms);
    let timings = Timings::scaled_to_ttl(ttl)?;
    // A ledger tick lasts about two TTLs.
    let units = ((2 * ttl).as_millis() / (ledger::STEP * ledger::UNIT as u32).as_millis()).max(1);
    // The URL may be a transaction-mode pooler's: no statement cache (see leader_runtime::pooler).
    let options = args
        .url
        .parse::<sqlx::postgres::PgConnectOptions>()?
        .statement_cache_capacity(0);
    let pool = sqlx::postgres::PgPoolOptions::new()
        .max_connections(6)
        .acquire_timeout(Duration::from_secs(5))
        .connect_lazy_with(options);
    // Linking a symbol of billing-demo keeps its #[leader_role] registrations in the binary.
    let _ = &billing_demo::MIGRATOR;
    let shutdown = tokio_util::sync::CancellationToken::new();
    let signal = leader_runtime::shutdown::signal();
    tokio::spawn({
        let shutdown = shutdown.clone();
        async move {
            signal.await;
            shutdown.cancel();
        }
    });
    let mut builder = Runtime::builder(pool.clone()).registered_jobs();
    let advisory = if args.advisory_lock {
        Some(tokio::spawn(leader_drills::advisory::lead(
            pool,
            args.holder.clone(),
            shutdown.clone(),
        )))
    } else {
        builder = builder.role(ledger::LEDGER, ledger::EVERY, move |tick| {
            ledger::tick(tick, units as usize)
        });
        None
    };
    if let Some(url) = &args.anchor_url {
        builder = builder.wake_on_release(url.parse()?).take_over_when_dead();
    }
    let runtime = builder
        .timings(timings)
        .holder_id(args.holder)
        .shutdown_grace(Duration::from_secs(2))
        .status_every(Duration::from_secs(1))
        .build()?;
    tracing::info!(roles = ?runtime.roles(), advisory = args.advisory_lock, "drill replica starting");
    runtime.run_until_cancelled(shutdown).await?;
    if let Some(advisory) = advisory {
        advisory.await?;
    }
    Ok(())
}
