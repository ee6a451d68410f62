//! Part 7: a sharded role's shards after SIGKILL. Three replica processes lead [`SHARDED`] in
//! [`SHARD_COUNT`] shards; once the shards are spread, the replica holding the most is killed
//! with SIGKILL, and the bench measures how soon every shard it held has a survivor's job
//! started on it, with anchors and without.

use super::*;

/// The sharded role (registered and seeded by the bench's roles migration, sharded by
/// [`sharded_takeover_runs`]).
pub(super) const SHARDED: Role = Role::from_static("sharded_takeover");
const SHARD_COUNT: u32 = 4;
const REPLICAS: usize = 3;
/// The sharded role's interval: a replica asks for a shard again this long after its tick.
pub(super) const SHARD_EVERY: Duration = Duration::from_millis(200);
/// How long a shard's tick holds it, unless cancelled. Ticks end so that shards move to the
/// replicas that join after the first took them all (a replica keeps a shard until its tick
/// ends).
const SHARD_TICK: Duration = Duration::from_secs(2);
const RUNS_WITH_ANCHORS: usize = 7;
const RUNS_WITHOUT: usize = 4;
/// Run numbers of this part start here, above every earlier part's.
const FIRST_RUN: usize = 700;
/// How long the replicas have to spread the shards before the run fails.
const SPREAD_WITHIN: Duration = Duration::from_secs(30);

/// A shard's tick: recorded when it starts, held for [`SHARD_TICK`] or until the runtime
/// cancels it (its cancellation then recorded too).
pub(super) async fn shard_tick(
    tick: TickContext,
    run: i32,
    holder: String,
) -> Result<(), JobError> {
    record_start(&tick, run, &holder).await?;
    tokio::select! {
        cause = tick.cancelled() => record_cancel(&tick, run, &holder, cause).await?,
        () = tokio::time::sleep(SHARD_TICK) => {}
    }
    Ok(())
}

/// One shard the killed replica held, and the survivor that took it.
#[derive(Debug)]
pub(super) struct ShardMove {
    pub(super) shard: i32,
    /// The survivor's job start on the shard minus the kill instant (seconds).
    pub(super) secs: f64,
    pub(super) survivor: String,
    /// The survivor's job started before the killed replica's lease of the shard expired.
    pub(super) before_expiry: bool,
}

/// One run: the killed replica, how the shards were spread at the kill, and its shards' moves.
#[derive(Debug)]
pub(super) struct ShardTakeoverRun {
    pub(super) killed: String,
    /// The shards each replica held at the kill, most first (`2+1+1`).
    pub(super) spread: String,
    pub(super) moves: Vec<ShardMove>,
}

impl ShardTakeoverRun {
    /// Seconds from the kill until every shard the killed replica held had a survivor's job.
    pub(super) fn takeover(&self) -> f64 {
        self.moves.iter().map(|m| m.secs).fold(0.0, f64::max)
    }
}

/// Part 7's runs for one setup, and what each failed one said.
#[derive(Debug)]
pub(super) struct ShardTakeovers {
    pub(super) setup: Setup,
    pub(super) runs: Vec<ShardTakeoverRun>,
    pub(super) errors: Vec<String>,
}

impl ShardTakeovers {
    /// The shard moves (run number, 1-based) that started before the lease expired without
    /// anchors: a second holder of a shard while the first's lease ran.
    fn early_without_anchors(&self) -> Vec<usize> {
        if self.setup.anchors {
            return Vec::new();
        }
        let numbered = self.runs.iter().enumerate();
        numbered
            .filter(|(_, r)| r.moves.iter().any(|m| m.before_expiry))
            .map(|(i, _)| i + 1)
            .collect()
    }
}

/// Part 7, with anchors and without.
#[derive(Debug)]
pub(super) struct ShardedTakeovers(pub(super) Vec<ShardTakeovers>);

impl ShardedTakeovers {
    /// The part's checks: every run completed; without anchors, no shard moved before its
    /// lease expired.
    pub(super) fn ok(&self) -> bool {
        self.0
            .iter()
            .all(|s| s.errors.is_empty() && s.early_without_anchors().is_empty())
    }
}

/// Part 7: shards [`SHARDED`] in [`SHARD_COUNT`], then [`RUNS_WITH_ANCHORS`] runs with anchors and
/// [`RUNS_WITHOUT`] without, [`REPLICAS`] replica processes each at TTL [`TTL`].
pub(super) async fn sharded_takeover_runs(
    cluster: &Cluster,
    admin: &mut PgConnection,
) -> Res<ShardedTakeovers> {
    sqlx::query("SELECT leader_reshard($1, $2)")
        .bind(SHARDED)
        .bind(SHARD_COUNT as i32)
        .execute(&mut *admin)
        .await?;
    let exe = std::env::current_exe()?;
    let url = replica_url(cluster);
    let mut all = Vec::new();
    let mut run = FIRST_RUN;
    for (anchors, runs) in [(true, RUNS_WITH_ANCHORS), (false, RUNS_WITHOUT)] {
        let setup = Setup {
            ttl: TTL,
            anchors,
            shards: Some(SHARD_COUNT),
        };
        progress(
            NAME,
            &format!(
                "part 7: {runs} SIGKILLs of a replica of a role in {SHARD_COUNT} shards, {REPLICAS} replica processes, {}",
                setup.anchors_label()
            ),
        );
        let (mut done, mut errors) = (Vec::new(), Vec::new());
        let replicas = Replicas {
            count: REPLICAS,
            prefix: "s",
        };
        for i in 0..runs {
            let killed = replicas.run(&exe, &url, admin, run, setup, async |admin, replicas| {
                kill_a_holder(admin, run, replicas, setup).await
            });
            match killed.await {
                Ok(r) => {
                    progress(
                        NAME,
                        &format!(
                            "part 7: killed {} (spread {}, its shards {:?}); all taken over after {:.1} ms",
                            r.killed,
                            r.spread,
                            r.moves.iter().map(|m| m.shard).collect::<Vec<_>>(),
                            r.takeover() * 1e3
                        ),
                    );
                    done.push(r);
                }
                Err(e) => {
                    progress(NAME, &format!("part 7: run {}: {e}", i + 1));
                    errors.push(format!("run {}: {e}", i + 1));
                }
            }
            run += 1;
        }
        all.push(ShardTakeovers {
            setup,
            runs: done,
            errors,
        });
    }
    Ok(ShardedTakeovers(all))
}

/// A held shard as `leader_leases` shows it: holder, index, token, expiry.
type HeldShard = (String, i32, i64, DateTime<Utc>);

async fn held_shards(admin: &mut PgConnection) -> Res<Vec<HeldShard>> {
    Ok(sqlx::query_as(
        "SELECT holder_id, shard_index, holder_token, expires_at FROM leader_leases
          WHERE role = $1 AND expires_at > clock_timestamp() ORDER BY shard_index",
    )
    .bind(SHARDED)
    .fetch_all(&mut *admin)
    .await?)
}

/// How many shards each of `replicas` holds in `held`.
fn counts(held: &[HeldShard], replicas: &[Replica]) -> Vec<(String, usize)> {
    let holding = |name: &str| held.iter().filter(|(h, ..)| h == name).count();
    let named = replicas.iter().map(|r| r.holder.clone());
    named.map(|name| (name.clone(), holding(&name))).collect()
}

/// Waits until every shard is held and no replica holds more than its share,
/// `ceil(shards / replicas)`.
async fn await_spread(admin: &mut PgConnection, replicas: &[Replica]) -> Res<()> {
    let share = SHARD_COUNT.div_ceil(REPLICAS as u32) as usize;
    let deadline = Instant::now() + SPREAD_WITHIN;
    loop {
        let held = held_shards(admin).await?;
        let per_replica = counts(&held, replicas);
        if held.len() == SHARD_COUNT as usize && per_replica.iter().all(|(_, n)| *n <= share) {
            return Ok(());
        }
        if Instant::now() > deadline {
            return Err(format!(
                "the shards were not spread within {SPREAD_WITHIN:?}: {per_replica:?}"
            )
            .into());
        }
        tokio::time::sleep(Duration::from_millis(20)).await;
    }
}

/// Once the shards are spread, waits a random part of a heartbeat, kills the replica holding
/// the most shards (ties drawn at random), and waits until each of its shards has a
/// survivor's job.
async fn kill_a_holder(
    admin: &mut PgConnection,
    run: usize,
    replicas: &mut [Replica],
    setup: Setup,
) -> Res<ShardTakeoverRun> {
    await_spread(admin, replicas).await?;
    let delay = rand::rng().random_range(Duration::ZERO..setup.timings().heartbeat());
    tokio::time::sleep(delay).await;
    let held = held_shards(admin).await?;
    let mut per_replica = counts(&held, replicas);
    let most = per_replica.iter().map(|(_, n)| *n).max().unwrap_or(0);
    if most == 0 {
        return Err("no replica held a shard".into());
    }
    let tied: Vec<&String> = per_replica
        .iter()
        .filter(|(_, n)| *n == most)
        .map(|(name, _)| name)
        .collect();
    let victim = tied[rand::rng().random_range(0..tied.len())].clone();
    let its: Vec<&HeldShard> = held.iter().filter(|(h, ..)| *h == victim).collect();
    let process = replicas
        .iter_mut()
        .find(|r| r.holder == victim)
        .ok_or_else(|| format!("{victim} is not one of this run's replicas"))?;
    process.child.kill().await?;
    let killed_at: DateTime<Utc> = sqlx::query_scalar("SELECT clock_timestamp()")
        .fetch_one(&mut *admin)
        .await?;
    let within = setup.ttl * 3;
    let mut moves = Vec::with_capacity(its.len());
    for &(_, shard, token, expires_at) in its {
        let (survivor, _, started_at) = first_tick(
            admin,
            run,
            TickFilter {
                shard: Some(shard),
                ..TickFilter::above_token(token)
            },
            within,
        )
        .await?
        .ok_or_else(|| format!("shard {shard}: nobody took it within {within:?} of the kill"))?;
        if survivor == victim {
            return Err(format!("shard {shard}: a tick of the killed {victim} started").into());
        }
        moves.push(ShardMove {
            shard,
            secs: secs_between(killed_at, started_at),
            survivor,
            before_expiry: started_at < expires_at,
        });
    }
    per_replica.sort_by_key(|(_, n)| std::cmp::Reverse(*n));
    let spread = per_replica
        .iter()
        .map(|(_, n)| n.to_string())
        .collect::<Vec<_>>()
        .join("+");
    Ok(ShardTakeoverRun {
        killed: victim,
        spread,
        moves,
    })
}

/// Part 7's section: each run, then the takeover with and without anchors against issue 33's
/// targets for an unsharded role.
pub(super) fn sharded_takeover_section(w: &mut String, all: &ShardedTakeovers) -> Res<()> {
    writeln!(w, "## 7. A sharded role's shards after SIGKILL\n")?;
    writeln!(
        w,
        "A role in {SHARD_COUNT} shards (`sharded_role`, `leader_reshard`), {REPLICAS} replica \
         processes at TTL {:?}, on freshly reset rows with no presence. A shard's job inserts \
         `clock_timestamp()` with its shard and token, and holds the shard {} s (unless \
         cancelled); the replica asks for it again {} ms later, so shards move to the replicas \
         that joined after the first took them all. Once every shard is held and no replica holds \
         more than its share (`ceil({SHARD_COUNT} / {REPLICAS})` = {}), the bench waits a \
         uniformly random 0–{} ms (one heartbeat), reads which shards each replica holds, kills \
         the one holding the most (ties drawn at random) with SIGKILL and reads \
         `clock_timestamp()` right after. A shard's takeover is the first job start on it under a \
         larger token (necessarily a survivor's) minus the kill instant; a run's is the largest \
         over the killed replica's shards. \"Spread\" is the shards each replica held at the \
         kill; \"before expiry\" counts the shards a survivor started on before the killed \
         replica's lease of them (as read just before the kill) ran out. All instants are on the \
         database clock.\n",
        TTL,
        SHARD_TICK.as_secs(),
        SHARD_EVERY.as_millis(),
        SHARD_COUNT.div_ceil(REPLICAS as u32),
        timings().heartbeat().as_millis()
    )?;
    writeln!(
        w,
        "| run | anchors | spread | killed | its shards: takeover (ms), by | **takeover (ms)** | before expiry |"
    )?;
    writeln!(w, "|---:|---|---|---|---|---:|---:|")?;
    let mut number = 0;
    for s in &all.0 {
        for r in &s.runs {
            number += 1;
            let moves = r
                .moves
                .iter()
                .map(|m| format!("{}: {:.1}, `{}`", m.shard, m.secs * 1e3, m.survivor))
                .collect::<Vec<_>>()
                .join("; ");
            writeln!(
                w,
                "| {number} | {} | {} | `{}` | {moves} | **{:.1}** | {} of {} |",
                if s.setup.anchors { "on" } else { "off" },
                r.spread,
                r.killed,
                r.takeover() * 1e3,
                r.moves.iter().filter(|m| m.before_expiry).count(),
                r.moves.len()
            )?;
        }
    }
    writeln!(w)?;
    writeln!(
        w,
        "| anchors | runs | takeover median (ms) | max (ms) | min (ms) | shards moved before expiry | issue 33's target (unsharded) |"
    )?;
    writeln!(w, "|---|---:|---:|---:|---:|---:|---|")?;
    for s in &all.0 {
        let ms: Vec<f64> = s.runs.iter().map(|r| r.takeover() * 1e3).collect();
        let moves = s.runs.iter().flat_map(|r| &r.moves);
        let early = moves.clone().filter(|m| m.before_expiry).count();
        let figure = |f: fn(&[f64]) -> f64| {
            if ms.is_empty() {
                "-".to_owned()
            } else {
                format!("{:.1}", f(&ms))
            }
        };
        let target = if !s.setup.anchors {
            "-"
        } else if ms.is_empty() {
            "no run"
        } else if median(ms.clone()) <= DEAD_HOLDER_TARGET_MEDIAN.as_secs_f64() * 1e3
            && max(&ms) <= DEAD_HOLDER_TARGET_MAX.as_secs_f64() * 1e3
        {
            "**met**"
        } else {
            "**not met**"
        };
        writeln!(
            w,
            "| {} | {} | {} | {} | {} | {early} of {} | {target} |",
            if s.setup.anchors { "on" } else { "off" },
            s.runs.len(),
            figure(|v| median(v.to_vec())),
            figure(max),
            figure(min),
            moves.count(),
        )?;
    }
    writeln!(w)?;
    writeln!(
        w,
        "Issue 33's target for an unsharded role is median ≤ {} ms and max ≤ {} ms; the row with \
         anchors says whether a sharded role's shards, all of the killed replica's, meet it.\n",
        DEAD_HOLDER_TARGET_MEDIAN.as_millis(),
        DEAD_HOLDER_TARGET_MAX.as_millis()
    )?;
    let mut noted = false;
    for s in &all.0 {
        let early = s.early_without_anchors();
        noted |= !early.is_empty() || !s.errors.is_empty();
        if !early.is_empty() {
            writeln!(
                w,
                "- **Without anchors a survivor started on a shard before its lease expired** \
                 (runs {early:?} of that setup)."
            )?;
        }
        for e in &s.errors {
            writeln!(
                w,
                "- **failed** (anchors {}) {e}",
                if s.setup.anchors { "on" } else { "off" }
            )?;
        }
    }
    if noted {
        writeln!(w)?;
    }
    Ok(())
}
