//! `scripts/demo` (or `cargo run -p billing-demo` once its prerequisites are installed): the
//! billing service's replicas on a throwaway PostgreSQL (or the server in `DATABASE_URL`), three
//! killed and replaced during the run, ending with checks that fail the exit code.

use std::net::SocketAddr;
use std::process::ExitCode;
use std::time::Duration;

use billing_demo::checks::Kind;
use billing_demo::demo::{DemoConfig, run_demo};
use billing_demo::seed::SeedSize;
use clap::Parser;
use leader_runtime::Timings;

/// Runs replicas of a five-role billing service on one PostgreSQL, kills three of them without a
/// release (the email outbox's leader in the middle of two sends, the billing leader), drains
/// the queues, and checks every period was billed once, every outbox row dispatched once, every
/// email delivered (repeats under one key), and no claim succeeded with a superseded token.
#[derive(Debug, Parser)]
#[command(version)]
struct Args {
    /// Number of replicas.
    #[arg(long, default_value_t = 3)]
    replicas: usize,
    /// Seconds the replicas run before the queues drain (for as long as work gets done) and the
    /// checks run.
    #[arg(long, default_value_t = 20)]
    seconds: u64,
    /// Lease TTL in milliseconds; the other timings scale with it (heartbeat 30 %, statement
    /// timeout 20 %, abandon 60 %, max poll 50 %).
    #[arg(long, default_value_t = 3_000)]
    ttl_ms: u64,
    /// Subscriptions to seed.
    #[arg(long, default_value_t = 300)]
    subscriptions: i64,
    /// Webhook outbox rows to seed (emails: half as many).
    #[arg(long, default_value_t = 2_000)]
    outbox_rows: i64,
    /// Kill no replica.
    #[arg(long)]
    no_kill: bool,
    /// Route the replicas through a private PgBouncer (`pool_mode = transaction`) with this many
    /// server connections (`default_pool_size`); migrations and checks stay on a direct
    /// connection.
    #[arg(long, value_name = "POOL_SIZE")]
    pgbouncer: Option<u32>,
    /// Serve the runtime's metrics in the Prometheus text format on http://ADDR/metrics (e.g.
    /// 127.0.0.1:9464); the replicas of this process share the one endpoint.
    #[arg(long, value_name = "ADDR")]
    metrics_addr: Option<SocketAddr>,
    /// Take over a dead replica's leases at once: each replica opens a direct connection to
    /// PostgreSQL (its anchor and its watcher) beside its pool.
    #[arg(long)]
    take_over: bool,
    /// Serve the operator's dashboard (`leaderctl dashboard`'s page) on http://ADDR/ while the
    /// demo runs (127.0.0.1:7878 when no ADDR is given), and keep it up after the checks until
    /// Ctrl-C. Read-only, unless LEADER_DASHBOARD_TOKEN is set: then sign in with it to act.
    #[arg(long, value_name = "ADDR", num_args = 0..=1, default_missing_value = "127.0.0.1:7878")]
    dashboard: Option<SocketAddr>,
}

/// The operator's login the demo's dashboard connects as, granted as docs/leaderctl.md says.
const DASHBOARD_LOGIN: &str = "billing_demo_operator";

/// Starts the dashboard on `addr` over `db`, as the operator's login.
async fn start_dashboard(
    db: &leader_testkit::TestDb,
    addr: SocketAddr,
) -> Result<(), Box<dyn std::error::Error>> {
    db.exec(
        "DO $$ BEGIN CREATE ROLE billing_demo_operator LOGIN;
         EXCEPTION WHEN duplicate_object OR unique_violation THEN NULL; END $$;
         SELECT leader_grant_operator_role('billing_demo_operator');",
    )
    .await;
    let pool = db.pool_as(DASHBOARD_LOGIN, 4).await;
    leader_dashboard::check_operator_login(&pool).await?;
    let mut options = leader_dashboard::Options::default();
    let writes = std::env::var_os("LEADER_DASHBOARD_TOKEN").is_some();
    if writes {
        options = options.with_writes(leader_dashboard::WriteToken::from_env(
            "LEADER_DASHBOARD_TOKEN",
        )?);
    }
    let listener = tokio::net::TcpListener::bind(addr)
        .await
        .map_err(|e| format!("--dashboard {addr}: {e}"))?;
    println!(
        "billing-demo: the operator's dashboard on http://{}/ ({})",
        listener.local_addr()?,
        if writes {
            "sign in with LEADER_DASHBOARD_TOKEN to act"
        } else {
            "read-only"
        }
    );
    tokio::spawn(leader_dashboard::serve(
        listener,
        pool,
        options,
        std::future::pending(),
    ));
    Ok(())
}

/// The drain gives up after three TTLs without progress, and never sooner than this: a killed
/// leader's roles are led again after one TTL and a poll, and a delivery's retry waits 2 s at
/// most, so a healthy run is never quiet that long.
const MIN_DRAIN_STALL_LIMIT: Duration = Duration::from_secs(10);

/// The shortest TTL the demo accepts: its statement timeout (a fifth of the TTL) must leave room
/// for a database round trip on a loaded machine.
const MIN_TTL_MS: u64 = 1_000;

/// Refuses flags that cannot work, with one line saying why.
fn refuse_unworkable(args: &Args) -> Result<(), String> {
    if args.replicas == 0 {
        return Err(
            "--replicas 0: no replica would run the roles; use --replicas 1 or more".into(),
        );
    }
    if args.ttl_ms < MIN_TTL_MS {
        return Err(format!(
            "--ttl-ms {}: too short, its statement timeout would be {} ms (a fifth of the TTL), \
             less than a database round trip under load; use --ttl-ms {MIN_TTL_MS} or more",
            args.ttl_ms,
            args.ttl_ms / 5
        ));
    }
    if args.pgbouncer == Some(0) {
        return Err("--pgbouncer 0: the pooler needs at least one server connection".into());
    }
    Ok(())
}

#[tokio::main]
async fn main() -> ExitCode {
    tracing_subscriber::fmt()
        .with_env_filter(
            tracing_subscriber::EnvFilter::try_from_default_env()
                .unwrap_or_else(|_| "error".into()),
        )
        .init();
    let args = Args::parse();
    if let Err(why) = refuse_unworkable(&args) {
        eprintln!("billing-demo: {why}");
        return ExitCode::from(2);
    }
    if let Some(addr) = args.metrics_addr {
        if let Err(error) = leader_runtime::prometheus::install(addr) {
            eprintln!("billing-demo: --metrics-addr {addr}: {error}");
            return ExitCode::from(2);
        }
        println!("billing-demo: metrics on http://{addr}/metrics");
    }
    match run(args).await {
        Ok(true) => ExitCode::SUCCESS,
        Ok(false) => ExitCode::from(1),
        Err(error) => {
            eprintln!("billing-demo: {error}");
            ExitCode::from(2)
        }
    }
}

async fn run(args: Args) -> Result<bool, Box<dyn std::error::Error>> {
    let timings = Timings::scaled_to_ttl(Duration::from_millis(args.ttl_ms))?;
    let db = leader_testkit::TestDb::try_unmigrated().await?;
    println!(
        "billing-demo: database {} ({}), {} replicas, TTL {:?}",
        db.name(),
        if std::env::var("DATABASE_URL").is_ok() {
            "on DATABASE_URL"
        } else {
            "throwaway cluster"
        },
        args.replicas,
        timings.ttl()
    );
    billing_demo::MIGRATOR.run(db.admin()).await?;
    if let Some(addr) = args.dashboard {
        start_dashboard(&db, addr).await?;
    }
    let direct = db.admin().connect_options().as_ref().clone();
    let pooler = match args.pgbouncer {
        Some(size) => Some(leader_testkit::Pooler::start_with_pool_size(
            direct.get_host(),
            direct.get_port(),
            size,
        )?),
        None => None,
    };
    let options = match &pooler {
        Some(pooler) => {
            println!(
                "billing-demo: replicas go through PgBouncer (transaction mode, pool of {})",
                args.pgbouncer.unwrap_or_default()
            );
            // No statement cache behind a transaction-mode pooler (see leader_runtime::pooler).
            pooler
                .url()
                .parse::<sqlx::postgres::PgConnectOptions>()?
                .database(db.name())
                .statement_cache_capacity(0)
        }
        None => direct,
    };
    let config = DemoConfig {
        replicas: args.replicas,
        run_for: Duration::from_secs(args.seconds),
        drain_stall_limit: (3 * timings.ttl()).max(MIN_DRAIN_STALL_LIMIT),
        timings,
        seed: SeedSize {
            subscriptions: args.subscriptions,
            webhooks: args.outbox_rows,
            emails: args.outbox_rows / 2,
        },
        kill_replicas: !args.no_kill,
        status_every: Some(Duration::from_secs(2)),
        take_over: args
            .take_over
            .then(|| db.admin().connect_options().as_ref().clone()),
    };
    let summary = run_demo(db.admin(), || options.clone(), &config).await?;
    println!();
    println!("summary: {} invoices", summary.invoices);
    for (role, (ticks, claimed)) in &summary.per_role {
        println!("  {role:<17} {ticks:>5} ticks  {claimed:>6} rows claimed");
    }
    for kill in &summary.kills {
        println!("  killed {} ({})", kill.replica, kill.victim);
        for (role, after) in &kill.takeovers {
            println!("    {role} led elsewhere {:.1}s after", after.as_secs_f64());
        }
    }
    let mail = summary.mail;
    println!(
        "  mail: {} emails, {} sends accepted, {} of them repeats (each under its first send's key)",
        mail.emails, mail.sends, mail.repeats
    );
    println!("  {}", summary.drained);
    for line in summary.report.lines() {
        println!("  {line}");
    }
    let (safe, live) = (
        summary.report.passed(Kind::Safety),
        summary.report.passed(Kind::Liveness),
    );
    println!(
        "{}",
        match (safe, live) {
            (true, true) => "all checks passed",
            (false, _) => "SAFETY CHECKS FAILED: work was done twice or out of turn",
            (true, false) => "LIVENESS CHECKS FAILED: work was left undone (nothing done twice)",
        }
    );
    if let Some(addr) = args.dashboard {
        println!("billing-demo: the dashboard stays up on http://{addr}/ until Ctrl-C");
        let _ = tokio::signal::ctrl_c().await;
    }
    Ok(safe && live)
}
