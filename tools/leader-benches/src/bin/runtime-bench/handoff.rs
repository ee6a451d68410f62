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
        builder = builder.wake_on_release(options);
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
    let a = tokio::spawn(a.run_until_cancelled(stop_a.clone()));
    wait_event(admin, run, &leader, "started").await?;
    let stop_b = CancellationToken::new();
    let b = handoff_runtime(
        small_pool(options).await?,
        follower.clone(),
        run,
        wake_options,
    )?;
    let b = tokio::spawn(b.run_until_cancelled(stop_b.clone()));
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

/// Part 4: the handoff runs, polling only and with wake; each run's seconds.
pub(super) async fn handoff_runs(
    options: &PgConnectOptions,
    admin: &mut PgConnection,
) -> Res<Vec<(bool, Vec<f64>)>> {
    handoff_setup(admin).await?;
    let mut handoffs: Vec<(bool, Vec<f64>)> = Vec::new();
    for wake in [false, true] {
        let mut runs = Vec::with_capacity(HANDOFF_RUNS);
        for (run, point) in release_points(HANDOFF_RUNS).into_iter().enumerate() {
            let id = (run + if wake { HANDOFF_RUNS } else { 0 }) as i32;
            let secs = handoff_run(options, admin, id, wake, point).await?;
            progress(
                NAME,
                &format!(
                    "part 4: clean-shutdown handoff {}, run {}: {:.0} ms",
                    if wake { "with wake" } else { "polling only" },
                    run + 1,
                    secs * 1e3
                ),
            );
            runs.push(secs);
        }
        handoffs.push((wake, runs));
    }
    Ok(handoffs)
}

/// The report's section for part 4.
pub(super) fn handoff_section(w: &mut String, handoffs: &[(bool, Vec<f64>)]) -> Res<()> {
    let t = timings();
    writeln!(
        w,
        "\n## 4. Handoff after a clean shutdown, with and without wake\n"
    )?;
    writeln!(
        w,
        "{HANDOFF_RUNS} runs each, at the TTL 3 s timings above (max poll {:?}). Each run starts a \
         leader `Runtime`, then a follower; {} ms plus a point of one max poll (0–{} ms) later the \
         leader is shut down (its `CancellationToken`, as a SIGTERM would), so the release lands \
         at a random point of the follower's poll cycle. The points are stratified: each run \
         draws uniformly from its own 1/{HANDOFF_RUNS} of the cycle, in shuffled order, so the \
         runs cover the cycle evenly and the median does not hang on where {HANDOFF_RUNS} \
         independent draws bunch up. The leader's job records \
         `clock_timestamp()` when it sees the shutdown, then returns and its tick is released \
         (`shutdown`: no cooldown); the follower's job records `clock_timestamp()` when it \
         starts. The handoff is the difference, on the database clock. **Wake**: both runtimes \
         with `RuntimeBuilder::wake` on a direct connection: RELEASE notifies \
         `leader_released`, the follower polls on the notification.\n",
        t.max_poll(),
        HANDOFF_SETTLE.as_millis(),
        t.max_poll().as_millis()
    )?;
    writeln!(
        w,
        "| setup | runs | median (ms) | max (ms) | min (ms) | target |"
    )?;
    writeln!(w, "|---|---:|---:|---:|---:|---|")?;
    for (wake, runs) in handoffs {
        let (target, limit) = if *wake {
            ("≤ 100 ms median", TARGET_WAKE_HANDOFF.as_secs_f64())
        } else {
            ("≤ max poll / 2 median", t.max_poll().as_secs_f64() / 2.0)
        };
        let med = median(runs.clone());
        writeln!(
            w,
            "| {} | {} | **{:.0}** | {:.0} | {:.0} | {target}: **{}** |",
            if *wake { "wake" } else { "polling only" },
            runs.len(),
            med * 1e3,
            max(runs) * 1e3,
            min(runs) * 1e3,
            if med <= limit { "met" } else { "not met" }
        )?;
    }
    // The runtime polls a held role every max poll minus a jitter of up to a tenth of it (at
    // most 250 ms), so a release uniform over that cycle waits half its mean, plus what the
    // handoff's own statements take (the wake setup's median).
    let jitter_cap = (t.max_poll() / 10).min(Duration::from_millis(250));
    let mean_cycle = t.max_poll() - jitter_cap / 2;
    if let Some((_, woken)) = handoffs.iter().find(|(wake, _)| *wake) {
        writeln!(
            w,
            "\nWithout wake the design expects a median of about {:.0} ms: half the mean poll \
             cycle of a held role ({:.0} ms: max poll minus 0–{} ms of jitter) plus the \
             handoff's statements (the wake median, {:.0} ms).",
            (mean_cycle.as_secs_f64() / 2.0 + median(woken.clone())) * 1e3,
            mean_cycle.as_secs_f64() * 1e3,
            jitter_cap.as_millis(),
            median(woken.clone()) * 1e3
        )?;
    }
    writeln!(w)?;
    Ok(())
}
