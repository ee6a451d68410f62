//! Part 1: idle load. Runtimes (and a naive baseline) on one role, their statements counted.

use super::*;

/// The lease row of `role`: holder and token while it is held.
pub(super) async fn holder_of(admin: &mut PgConnection, role: Role) -> Res<Option<(String, i64)>> {
    let row: Option<(String, i64)> = sqlx::query_as(
        "SELECT holder_id, holder_token FROM leader_leases
          WHERE role = $1 AND holder_id IS NOT NULL AND expires_at > now()",
    )
    .bind(role)
    .fetch_optional(&mut *admin)
    .await?;
    Ok(row)
}

pub(super) async fn wait_for_holder(
    admin: &mut PgConnection,
    role: Role,
    within: Duration,
) -> Res<(String, i64)> {
    let deadline = Instant::now() + within;
    loop {
        if let Some(held) = holder_of(admin, role).await? {
            return Ok(held);
        }
        if Instant::now() > deadline {
            return Err(format!("nobody leads {role} after {within:?}").into());
        }
        tokio::time::sleep(Duration::from_millis(50)).await;
    }
}

pub(super) async fn small_pool(options: &PgConnectOptions) -> Res<PgPool> {
    Ok(PgPoolOptions::new()
        .max_connections(2)
        .connect_with(options.clone())
        .await?)
}

pub(super) struct Steady {
    pub(super) window: Window,
    /// The holder and token before and after the window.
    pub(super) before: (String, i64),
    pub(super) after: Option<(String, i64)>,
}

impl Steady {
    pub(super) fn one_leader_throughout(&self) -> bool {
        self.after.as_ref() == Some(&self.before)
    }
}

pub(super) async fn idle_runtime(
    options: &PgConnectOptions,
    admin: &mut PgConnection,
    marker: &mut PgConnection,
    log: &Path,
) -> Res<Steady> {
    let mut runs = Vec::with_capacity(REPLICAS);
    let shutdown = CancellationToken::new();
    for i in 0..REPLICAS {
        let runtime = Runtime::builder(small_pool(options).await?)
            .timings(timings())
            .holder_id(format!("idle-{i}"))
            .role(IDLE, EVERY, |tick: TickContext| async move {
                // One long tick: the leader only renews until it is cancelled.
                tick.cancelled().await;
                Ok::<(), JobError>(())
            })
            .build()?;
        runs.push(tokio::spawn(runtime.run(shutdown.clone())));
    }
    let before = wait_for_holder(admin, IDLE, Duration::from_secs(10)).await?;
    tokio::time::sleep(SETTLE).await;
    let window = count_window(marker, log, "runtime", WINDOW).await?;
    let after = holder_of(admin, IDLE).await?;
    shutdown.cancel();
    for run in runs {
        tokio::time::timeout(Duration::from_secs(15), run).await???;
    }
    Ok(Steady {
        window,
        before,
        after,
    })
}

/// A naive replica: ACQUIRE every 250 ms whatever happens; once granted, also RENEW every
/// heartbeat.
pub(super) async fn naive_replica(pool: PgPool, holder: String, stop: CancellationToken) -> usize {
    let t = timings();
    let mut errors = 0;
    // Out of step with the other replicas.
    let offset = rand::rng().random_range(Duration::ZERO..NAIVE_POLL);
    tokio::select! {
        () = tokio::time::sleep(offset) => {}
        () = stop.cancelled() => return errors,
    }
    let mut poll = tokio::time::interval(NAIVE_POLL);
    poll.set_missed_tick_behavior(tokio::time::MissedTickBehavior::Delay);
    let mut renew = tokio::time::interval(t.heartbeat());
    renew.set_missed_tick_behavior(tokio::time::MissedTickBehavior::Delay);
    let mut held: Option<Fence> = None;
    loop {
        tokio::select! {
            () = stop.cancelled() => break,
            _ = poll.tick() => match lease::acquire(&pool, NAIVE, &holder, EVERY, &t).await {
                Ok(Acquired::Granted(grant)) => {
                    held = Some(grant.fence);
                    renew.reset();
                }
                Ok(Acquired::Refused(_)) => {}
                Err(_) => errors += 1,
            },
            _ = renew.tick(), if held.is_some() => {
                let fence = held.expect("guarded by the branch condition");
                match lease::renew(&pool, fence, &t).await {
                    Ok(Renewed::Extended { .. }) => {}
                    Ok(Renewed::Lost(_)) => held = None,
                    Err(_) => errors += 1,
                }
            }
        }
    }
    pool.close().await;
    errors
}

pub(super) async fn idle_naive(
    options: &PgConnectOptions,
    admin: &mut PgConnection,
    marker: &mut PgConnection,
    log: &Path,
) -> Res<(Steady, usize)> {
    let stop = CancellationToken::new();
    let mut tasks = Vec::with_capacity(REPLICAS);
    for i in 0..REPLICAS {
        let pool = small_pool(options).await?;
        tasks.push(tokio::spawn(naive_replica(
            pool,
            format!("naive-{i}"),
            stop.clone(),
        )));
    }
    let before = wait_for_holder(admin, NAIVE, Duration::from_secs(10)).await?;
    tokio::time::sleep(SETTLE).await;
    let window = count_window(marker, log, "naive", WINDOW).await?;
    let after = holder_of(admin, NAIVE).await?;
    stop.cancel();
    let mut errors = 0;
    for task in tasks {
        errors += task.await?;
    }
    Ok((
        Steady {
            window,
            before,
            after,
        },
        errors,
    ))
}
