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

/// The client sessions on the bench's database, less the bench's own two (admin and marker).
async fn sessions(admin: &mut PgConnection) -> Res<i64> {
    let all: i64 = sqlx::query_scalar(
        "SELECT count(*) FROM pg_stat_activity
          WHERE datname = current_database() AND backend_type = 'client backend'",
    )
    .fetch_one(&mut *admin)
    .await?;
    Ok(all - 2)
}

/// Four runtimes on one role, counted; with `anchors`, each also with `take_over_when_dead` (its
/// wake connection the anchor, and a watcher). Also returns the client sessions they held at the
/// window's end.
pub(super) async fn idle_runtime(
    options: &PgConnectOptions,
    admin: &mut PgConnection,
    marker: &mut PgConnection,
    log: &Path,
    anchors: bool,
) -> Res<(Steady, i64)> {
    let mut runs = Vec::with_capacity(REPLICAS);
    let shutdown = CancellationToken::new();
    let (label, prefix) = if anchors {
        ("anchored", "anchored")
    } else {
        ("runtime", "idle")
    };
    for i in 0..REPLICAS {
        let mut builder = Runtime::builder(small_pool(options).await?);
        if anchors {
            builder = builder
                .wake_on_release(options.clone())
                .take_over_when_dead();
        }
        let runtime = builder
            .timings(timings())
            .holder_id(format!("{prefix}-{i}"))
            .role(IDLE, EVERY, |tick: TickContext| async move {
                // One long tick: the leader only renews until it is cancelled.
                tick.cancelled().await;
                Ok::<(), JobError>(())
            })
            .build()?;
        runs.push(tokio::spawn(runtime.run_until_cancelled(shutdown.clone())));
    }
    let before = wait_for_holder(admin, IDLE, Duration::from_secs(10)).await?;
    tokio::time::sleep(SETTLE).await;
    let window = count_window(marker, log, label, WINDOW).await?;
    let after = holder_of(admin, IDLE).await?;
    let sessions = sessions(admin).await?;
    shutdown.cancel();
    for run in runs {
        tokio::time::timeout(Duration::from_secs(15), run).await???;
    }
    // The next setup starts on a free role, not one whose holder just shut down.
    sqlx::query("UPDATE leader_leases SET not_before = NULL WHERE role = $1")
        .bind(IDLE)
        .execute(&mut *admin)
        .await?;
    Ok((
        Steady {
            window,
            before,
            after,
        },
        sessions,
    ))
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
            _ = poll.tick() => match lease::acquire_one(&pool, NAIVE, &holder, EVERY, &t).await {
                Ok(Acquired::Granted(grant)) => {
                    held = Some(grant.fence);
                    renew.reset();
                }
                Ok(Acquired::Refused(_)) => {}
                Err(_) => errors += 1,
            },
            _ = renew.tick(), if held.is_some() => {
                let fence = held.expect("guarded by the branch condition");
                match lease::renew_one(&pool, fence, &t).await {
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

/// What part 1 measured: the runtimes' idle load, and the naive baseline's with its statement
/// errors.
pub(super) struct IdleLoad {
    pub(super) runtime: Steady,
    /// The same runtimes with `take_over_when_dead`.
    pub(super) anchored: Steady,
    /// Client sessions per replica, without and with anchors.
    pub(super) sessions_per_replica: (f64, f64),
    pub(super) naive: Steady,
    pub(super) naive_errors: usize,
}

/// Part 1: the runtimes' idle load, then the naive baseline's.
pub(super) async fn idle_load(
    options: &PgConnectOptions,
    admin: &mut PgConnection,
    marker: &mut PgConnection,
    log: &Path,
) -> Res<IdleLoad> {
    progress(
        NAME,
        "part 1: four runtimes, one leading a long tick (settle 4 s, count 20 s)",
    );
    let (runtime, plain_sessions) = idle_runtime(options, admin, marker, log, false).await?;
    progress(
        NAME,
        "part 1: the same four runtimes with take_over_when_dead (settle 4 s, count 20 s)",
    );
    let (anchored, anchored_sessions) = idle_runtime(options, admin, marker, log, true).await?;
    progress(
        NAME,
        "part 1: naive baseline, four replicas polling every 250 ms (settle 4 s, count 20 s)",
    );
    let (naive, naive_errors) = idle_naive(options, admin, marker, log).await?;
    Ok(IdleLoad {
        runtime,
        anchored,
        sessions_per_replica: (
            plain_sessions as f64 / REPLICAS as f64,
            anchored_sessions as f64 / REPLICAS as f64,
        ),
        naive,
        naive_errors,
    })
}

/// Part 1's section: statements per second, the runtime's and the naive baseline's.
pub(super) fn idle_section(w: &mut String, idle: &IdleLoad, idle_ok: bool) -> Res<()> {
    let t = timings();
    writeln!(w, "## 1. Idle load: statements per second\n")?;
    writeln!(
        w,
        "{REPLICAS} replicas of one role in one process, each with its own pool of at most 2 \
         connections. **Runtime**: four `Runtime`s (default status refresh, every 15 s); the \
         leader's job waits on `tick.cancelled()`, so the leader only renews and the others only \
         poll. **Naive**: four loops calling `lease::acquire` every {} ms each (the holder too), \
         the holder also calling `lease::renew` every {} ms. Each setup ran {} s after its first \
         grant, then every statement the server logged between two marker statements ({} s apart; \
         markers excluded) was counted from the server log and classified by the name in its leading comment (`/* leader:acquire */`).\n",
        NAIVE_POLL.as_millis(),
        t.heartbeat().as_millis(),
        SETTLE.as_secs(),
        WINDOW.as_secs()
    )?;
    idle_table(w, &idle.runtime, &idle.naive)?;
    idle_findings(w, idle, idle_ok)?;
    anchored_findings(w, idle)?;
    writeln!(w)?;
    Ok(())
}

/// Part 1's table: each kind of statement counted, and its rate, for both setups.
fn idle_table(w: &mut String, runtime: &Steady, naive: &Steady) -> Res<()> {
    let rt_rate = runtime.window.rate();
    let naive_rate = naive.window.rate();
    writeln!(
        w,
        "| statement | runtime: count | runtime: per s | naive: count | naive: per s |"
    )?;
    writeln!(w, "|---|---:|---:|---:|---:|")?;
    for kind in Kind::ALL {
        let rc = runtime.window.by_kind.get(&kind).copied().unwrap_or(0);
        let nc = naive.window.by_kind.get(&kind).copied().unwrap_or(0);
        writeln!(
            w,
            "| {} | {rc} | {:.2} | {nc} | {:.2} |",
            kind.name(),
            runtime.window.kind_rate(kind),
            naive.window.kind_rate(kind)
        )?;
    }
    writeln!(
        w,
        "| **all** | **{}** | **{rt_rate:.2}** | **{}** | **{naive_rate:.2}** |",
        runtime.window.total(),
        naive.window.total()
    )?;
    writeln!(
        w,
        "| window (s, between the markers) | {:.2} | | {:.2} | |\n",
        runtime.window.seconds, naive.window.seconds
    )?;
    Ok(())
}

/// Part 1's findings: the rates against the target, the leader kept, the replicas' polls, and
/// any statement counted as `other`.
fn idle_findings(w: &mut String, idle: &IdleLoad, idle_ok: bool) -> Res<()> {
    let (runtime, naive, naive_errors) = (&idle.runtime, &idle.naive, idle.naive_errors);
    let rt_rate = runtime.window.rate();
    let naive_rate = naive.window.rate();
    writeln!(
        w,
        "- **Runtime: {rt_rate:.2} statements/s** (target ≤ {TARGET_RATE:.0}/s: **{}**).",
        if rt_rate <= TARGET_RATE {
            "met"
        } else {
            "not met"
        }
    )?;
    writeln!(
        w,
        "- **Naive: {naive_rate:.2} statements/s** (the issue quotes about {ISSUE_NAIVE_RATE:.0}/s \
         for such a peer in this setting)."
    )?;
    writeln!(w, "- **Naive / runtime: {:.1}×**.", naive_rate / rt_rate)?;
    writeln!(
        w,
        "- One leader through the runtime window: {} (`{}` token {} before, {} after).",
        if idle_ok { "yes" } else { "**NO**" },
        runtime.before.0,
        runtime.before.1,
        runtime
            .after
            .as_ref()
            .map_or("nobody".to_owned(), |(h, tok)| format!("`{h}` token {tok}"))
    )?;
    writeln!(
        w,
        "- Naive leader kept through its window: {}; naive statement errors: {naive_errors}.",
        if naive.one_leader_throughout() {
            "yes"
        } else {
            "no"
        }
    )?;
    let polls: Vec<String> = runtime
        .window
        .acquires_by_holder
        .iter()
        .map(|(h, n)| {
            format!(
                "`{h}` {n} (one per {:.2} s)",
                runtime.window.seconds / *n as f64
            )
        })
        .collect();
    writeln!(
        w,
        "- Runtime ACQUIREs per replica: {}.",
        if polls.is_empty() {
            "none".to_owned()
        } else {
            polls.join(", ")
        }
    )?;
    for (name, window) in [("runtime", &runtime.window), ("naive", &naive.window)] {
        for sample in &window.other_samples {
            writeln!(w, "- {name}, an `other` statement: `{sample}`")?;
        }
    }
    Ok(())
}

/// What anchors (`take_over_when_dead`) add to the idle load and to the sessions per replica.
fn anchored_findings(w: &mut String, idle: &IdleLoad) -> Res<()> {
    let (plain, anchored) = (idle.runtime.window.rate(), idle.anchored.window.rate());
    let ratio = anchored / plain;
    writeln!(
        w,
        "- **With `take_over_when_dead`: {anchored:.2} statements/s, {ratio:.2}× without** \
         (target ≤ {ANCHORED_TARGET_RATIO:.1}×: **{}**); of them {} by anchors and watchers in \
         the window. Client sessions per replica: {:.1} without, {:.1} with (the anchor is the \
         wake connection; the watcher is the one more).",
        if ratio <= ANCHORED_TARGET_RATIO {
            "met"
        } else {
            "not met"
        },
        idle.anchored
            .window
            .by_kind
            .get(&Kind::Anchor)
            .copied()
            .unwrap_or(0),
        idle.sessions_per_replica.0,
        idle.sessions_per_replica.1,
    )?;
    Ok(())
}

/// Issue 33: anchors may add at most a fifth to the idle load.
const ANCHORED_TARGET_RATIO: f64 = 1.2;
