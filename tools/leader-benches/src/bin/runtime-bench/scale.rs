//! Part 3: idle load over many roles. Runtimes at the default timings, each leading `roles`
//! roles whose ticks never end, their statements counted.

use super::*;

/// The roles and replicas of each setup measured.
pub(super) const SCALE_SETUPS: [(usize, usize); 6] =
    [(1, 4), (10, 4), (100, 4), (1, 16), (10, 16), (100, 16)];
/// The target: 100 roles on 16 replicas cost at most this many times 1 role on 16 replicas.
pub(super) const SCALE_TARGET_RATIO: f64 = 2.0;

pub(super) fn scale_roles(n: usize) -> Vec<Role> {
    (0..n)
        .map(|i| Role::new(&format!("scale_{i:03}")).expect("a registered role name"))
        .collect()
}

async fn held_count(admin: &mut PgConnection, roles: &[Role]) -> Res<i64> {
    let names: Vec<&str> = roles.iter().map(|role| role.as_str()).collect();
    Ok(sqlx::query_scalar(
        "SELECT count(*) FROM leader_leases
          WHERE role = ANY($1) AND holder_id IS NOT NULL AND expires_at > now()",
    )
    .bind(&names)
    .fetch_one(&mut *admin)
    .await?)
}

/// One measured setup: its window and how many replicas held at least one role in it.
pub(super) struct ScaleRun {
    pub(super) roles: usize,
    pub(super) replicas: usize,
    pub(super) window: Window,
    pub(super) leaders: usize,
}

pub(super) async fn idle_scale(
    options: &PgConnectOptions,
    admin: &mut PgConnection,
    marker: &mut PgConnection,
    log: &Path,
    (n_roles, replicas): (usize, usize),
) -> Res<ScaleRun> {
    let roles = scale_roles(n_roles);
    let shutdown = CancellationToken::new();
    let mut runs = Vec::with_capacity(replicas);
    for i in 0..replicas {
        let mut builder = Runtime::builder(small_pool(options).await?)
            .holder_id(format!("scale-{n_roles}x{replicas}-{i}"));
        for &role in &roles {
            builder = builder.role(role, EVERY, |tick: TickContext| async move {
                tick.cancelled().await;
                Ok::<(), JobError>(())
            });
        }
        runs.push(tokio::spawn(
            builder.build()?.run_until_cancelled(shutdown.clone()),
        ));
    }
    let deadline = Instant::now() + Duration::from_secs(120);
    while held_count(admin, &roles).await? < n_roles as i64 {
        if Instant::now() > deadline {
            return Err(
                format!("{n_roles} roles on {replicas} replicas: not all led in 120 s").into(),
            );
        }
        tokio::time::sleep(Duration::from_millis(100)).await;
    }
    tokio::time::sleep(SCALE_SETTLE).await;
    let window = count_window(
        marker,
        log,
        &format!("scale-{n_roles}x{replicas}"),
        SCALE_WINDOW,
    )
    .await?;
    let leaders: i64 = sqlx::query_scalar(
        "SELECT count(DISTINCT holder_id) FROM leader_leases
          WHERE holder_id LIKE 'scale-%' AND expires_at > now()",
    )
    .fetch_one(&mut *admin)
    .await?;
    shutdown.cancel();
    for run in runs {
        tokio::time::timeout(Duration::from_secs(30), run).await???;
    }
    Ok(ScaleRun {
        roles: n_roles,
        replicas,
        window,
        leaders: leaders as usize,
    })
}

/// Part 3: the idle load of each setup of [`SCALE_SETUPS`].
pub(super) async fn scale_load(
    options: &PgConnectOptions,
    admin: &mut PgConnection,
    marker: &mut PgConnection,
    log: &Path,
) -> Res<Vec<ScaleRun>> {
    let mut scale = Vec::with_capacity(SCALE_SETUPS.len());
    for setup in SCALE_SETUPS {
        progress(
            NAME,
            &format!(
                "part 3: {} roles on {} runtimes at the default timings (settle {} s, count {} s)",
                setup.0,
                setup.1,
                SCALE_SETTLE.as_secs(),
                SCALE_WINDOW.as_secs()
            ),
        );
        scale.push(idle_scale(options, admin, marker, log, setup).await?);
    }
    Ok(scale)
}

/// The report's section for part 3.
pub(super) fn scale_section(w: &mut String, runs: &[ScaleRun]) -> Res<()> {
    let t = Timings::DEFAULT;
    writeln!(
        w,
        "## 3. Idle load over many roles, at the default timings\n"
    )?;
    writeln!(
        w,
        "Each setup: that many `Runtime`s in one process (each its own pool of at most 2 \
         connections and its own holder id), each registering the same roles (`scale_000`, …), \
         at `Timings::DEFAULT` (TTL {:?}, heartbeat {:?}, max poll {:?}; status refresh every \
         15 s). Every job waits on `tick.cancelled()`, so leaders only renew and the rest only \
         poll. Once every role is held, {} s to settle, then every statement the server logged \
         in a {} s window, counted as in part 1. A replica polls for all its roles not in a tick \
         with one ACQUIRE (`batch::acquire_many`) and renews all its leases with one RENEW \
         (`batch::renew_many`).\n",
        t.ttl(),
        t.heartbeat(),
        t.max_poll(),
        SCALE_SETTLE.as_secs(),
        SCALE_WINDOW.as_secs()
    )?;
    writeln!(
        w,
        "| roles | replicas | replicas leading | ACQUIRE/s | RENEW/s | other/s | **all/s** |"
    )?;
    writeln!(w, "|---:|---:|---:|---:|---:|---:|---:|")?;
    for run in runs {
        let rest = run.window.rate()
            - run.window.kind_rate(Kind::Acquire)
            - run.window.kind_rate(Kind::Renew);
        writeln!(
            w,
            "| {} | {} | {} | {:.2} | {:.2} | {:.2} | **{:.2}** |",
            run.roles,
            run.replicas,
            run.leaders,
            run.window.kind_rate(Kind::Acquire),
            run.window.kind_rate(Kind::Renew),
            rest,
            run.window.rate()
        )?;
    }
    let rate = |roles: usize, replicas: usize| {
        runs.iter()
            .find(|r| r.roles == roles && r.replicas == replicas)
            .map(|r| r.window.rate())
    };
    if let (Some(many), Some(one)) = (rate(100, 16), rate(1, 16)) {
        let ratio = many / one;
        writeln!(
            w,
            "\n- **100 roles × 16 replicas: {many:.2} statements/s, {ratio:.2}× 1 role × 16 \
             replicas ({one:.2}/s)** (target ≤ {SCALE_TARGET_RATIO:.0}×: **{}**).",
            if ratio <= SCALE_TARGET_RATIO {
                "met"
            } else {
                "not met"
            }
        )?;
    }
    writeln!(
        w,
        "- \"other\" is the status reads (one per replica every 15 s) and any RELEASE.\n"
    )?;
    Ok(())
}
