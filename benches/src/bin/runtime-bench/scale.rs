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
        runs.push(tokio::spawn(builder.build()?.run(shutdown.clone())));
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
