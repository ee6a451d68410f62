//! Part 4: clean-shutdown handoff. Two runtimes on one role; the leader is shut down (as on a
//! deploy's SIGTERM) and the follower takes over, with and without the wake channel.

use rand::seq::SliceRandom;

use super::*;

const HANDOFF_TABLE: &str = "
CREATE TABLE handoff_ticks (
    id    bigserial   PRIMARY KEY,
    run   integer     NOT NULL,
    holder text       NOT NULL,
    event text        NOT NULL,
    at    timestamptz NOT NULL
)";

pub(super) async fn handoff_setup(admin: &mut PgConnection) -> Res<()> {
    sqlx::raw_sql(HANDOFF_TABLE).execute(&mut *admin).await?;
    Ok(())
}

async fn record(tick: &TickContext, run: i32, holder: &str, event: &str) -> Result<(), JobError> {
    sqlx::query(
        "INSERT INTO handoff_ticks (run, holder, event, at) VALUES ($1, $2, $3, clock_timestamp())",
    )
    .persistent(false)
    .bind(run)
    .bind(holder)
    .bind(event)
    .execute(tick.pool())
    .await?;
    Ok(())
}

fn handoff_runtime(
    pool: PgPool,
    holder: String,
    run: i32,
    wake: Option<PgConnectOptions>,
) -> Res<Runtime> {
    let mut builder = Runtime::builder(pool)
        .timings(timings())
        .holder_id(holder.clone())
        .role(HANDOFF, EVERY, move |tick: TickContext| {
            let holder = holder.clone();
            async move {
                record(&tick, run, &holder, "started").await?;
                tick.cancelled().await;
                record(&tick, run, &holder, "stopping").await
            }
        });
    if let Some(options) = wake {
        builder = builder.wake(options);
    }
    Ok(builder.build()?)
}

async fn event_at(
    admin: &mut PgConnection,
    run: i32,
    holder: &str,
    event: &str,
) -> Res<Option<DateTime<Utc>>> {
    Ok(sqlx::query_scalar(
        "SELECT at FROM handoff_ticks WHERE run = $1 AND holder = $2 AND event = $3",
    )
    .bind(run)
    .bind(holder)
    .bind(event)
    .fetch_optional(&mut *admin)
    .await?)
}

async fn wait_event(
    admin: &mut PgConnection,
    run: i32,
    holder: &str,
    event: &str,
) -> Res<DateTime<Utc>> {
    let deadline = Instant::now() + Duration::from_secs(30);
    loop {
        if let Some(at) = event_at(admin, run, holder, event).await? {
            return Ok(at);
        }
        if Instant::now() > deadline {
            return Err(format!("run {run}: {holder} never recorded {event}").into());
        }
        tokio::time::sleep(Duration::from_millis(5)).await;
    }
}

/// Where in one max poll each of `runs` handoffs releases: stratified sampling, run `k` drawing
/// uniformly from one `1 / runs` slice of the cycle, the slices in shuffled order. The runs
/// cover the cycle evenly, as uniform draws do on average, so their median is the median
/// handoff over a release anywhere in the cycle without depending on where `runs` independent
/// draws happen to bunch up (for a uniform spread over one cycle, ±0.13 s at TTL 3 s and 30 runs).
pub(super) fn release_points(runs: usize) -> Vec<Duration> {
    let cycle = timings().max_poll();
    let mut slices: Vec<usize> = (0..runs).collect();
    slices.shuffle(&mut rand::rng());
    slices
        .into_iter()
        .map(|slice| cycle.mul_f64((slice as f64 + rand::rng().random::<f64>()) / runs as f64))
        .collect()
}

/// One handoff: seconds from the leader's job seeing its shutdown to the follower's job start
/// (both on the database clock). The leader is shut down [`HANDOFF_SETTLE`] plus `point` after
/// the follower starts.
pub(super) async fn handoff_run(
    options: &PgConnectOptions,
    admin: &mut PgConnection,
    run: i32,
    wake: bool,
    point: Duration,
) -> Res<f64> {
    let wake_options = wake.then(|| options.clone());
    let (leader, follower) = (format!("handoff-a-{run}"), format!("handoff-b-{run}"));
    let stop_a = CancellationToken::new();
    let a = handoff_runtime(
        small_pool(options).await?,
        leader.clone(),
        run,
        wake_options.clone(),
    )?;
    let a = tokio::spawn(a.run(stop_a.clone()));
    wait_event(admin, run, &leader, "started").await?;
    let stop_b = CancellationToken::new();
    let b = handoff_runtime(
        small_pool(options).await?,
        follower.clone(),
        run,
        wake_options,
    )?;
    let b = tokio::spawn(b.run(stop_b.clone()));
    // The follower is polling (and listening); the shutdown lands at `point` of its poll cycle.
    tokio::time::sleep(HANDOFF_SETTLE + point).await;
    stop_a.cancel();
    tokio::time::timeout(Duration::from_secs(15), a).await???;
    let stopping = wait_event(admin, run, &leader, "stopping").await?;
    let started = wait_event(admin, run, &follower, "started").await?;
    stop_b.cancel();
    tokio::time::timeout(Duration::from_secs(15), b).await???;
    Ok(secs_between(stopping, started))
}
