//! Part 2: takeover after SIGKILL. Replica processes on one role; the leader is killed.

use super::*;

/// One replica process, killed with SIGKILL when dropped.
pub(super) struct Replica {
    pub(super) holder: String,
    pub(super) child: Child,
    /// Held open: the replica exits when it closes.
    pub(super) _stdin: ChildStdin,
}

/// How a takeover run's replicas lead: their lease TTL, whether they run with
/// `take_over_when_dead` (their wake connection, to the same server, anchors them), and which
/// role they lead.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub(super) struct Setup {
    pub(super) ttl: Duration,
    pub(super) anchors: bool,
    /// `None`: the replica leads [`TAKEOVER`], each tick held until it is cancelled
    /// ([`hold_tick`]); `Some(count)`: it leads [`SHARDED`] in `count` shards
    /// ([`shard_tick`]).
    pub(super) shards: Option<u32>,
}

impl Setup {
    /// Replicas of [`TAKEOVER`].
    pub(super) fn unsharded(ttl: Duration, anchors: bool) -> Setup {
        Setup {
            ttl,
            anchors,
            shards: None,
        }
    }

    /// The role its replicas lead.
    pub(super) fn role(self) -> Role {
        match self.shards {
            None => TAKEOVER,
            Some(_) => SHARDED,
        }
    }

    /// How the progress lines name the setup's anchors.
    pub(super) fn anchors_label(self) -> &'static str {
        if self.anchors {
            "with take_over_when_dead"
        } else {
            "without it"
        }
    }

    pub(super) fn timings(self) -> Timings {
        Timings::scaled_to_ttl(self.ttl).expect("the bench's TTLs scale to valid timings")
    }

    /// The `replica` command's arguments after the run number.
    fn args(self) -> [String; 3] {
        [
            self.ttl.as_millis().to_string(),
            if self.anchors { "anchors" } else { "expiry" }.to_owned(),
            match self.shards {
                None => "role".to_owned(),
                Some(count) => format!("shards={count}"),
            },
        ]
    }

    /// The inverse of [`Setup::args`].
    pub(super) fn parse(ttl_ms: &str, mode: &str, lead: &str) -> Result<Setup, String> {
        let ttl = Duration::from_millis(ttl_ms.parse().map_err(|e| format!("bad TTL: {e}"))?);
        let anchors = match mode {
            "anchors" => true,
            "expiry" => false,
            other => return Err(format!("bad mode {other:?}: anchors or expiry")),
        };
        let shards = match lead.strip_prefix("shards=") {
            Some(count) => Some(count.parse().map_err(|e| format!("bad shard count: {e}"))?),
            None if lead == "role" => None,
            None => return Err(format!("bad lead {lead:?}: role or shards=COUNT")),
        };
        Ok(Setup {
            ttl,
            anchors,
            shards,
        })
    }
}

/// The URL replica processes connect with: the benchmark database on `cluster`, direct.
pub(super) fn replica_url(cluster: &Cluster) -> String {
    format!(
        "{}/{DATABASE}",
        cluster.url().rsplit_once('/').expect("a URL").0
    )
}

pub(super) async fn spawn_replica(
    exe: &Path,
    url: &str,
    holder: &str,
    run: usize,
    setup: Setup,
) -> Res<Replica> {
    let mut child = Command::new(exe)
        .args(["replica", url, holder, &run.to_string()])
        .args(setup.args())
        .stdin(Stdio::piped())
        .stdout(Stdio::piped())
        .stderr(Stdio::inherit())
        .kill_on_drop(true)
        .spawn()?;
    let stdin = child.stdin.take().ok_or("no stdin pipe")?;
    let stdout = child.stdout.take().ok_or("no stdout pipe")?;
    let mut lines = BufReader::new(stdout).lines();
    let ready = tokio::time::timeout(Duration::from_secs(30), lines.next_line()).await;
    match ready {
        Ok(Ok(Some(line))) if line == "ready" => Ok(Replica {
            holder: holder.to_owned(),
            child,
            _stdin: stdin,
        }),
        other => {
            let _ = child.kill().await;
            Err(format!("replica {holder} did not start: {other:?}").into())
        }
    }
}

#[derive(Debug)]
pub(super) struct TakeoverRun {
    pub(super) killed: String,
    /// Kill instant minus the last RENEW (or the ACQUIRE), database clock.
    pub(super) since_renew: f64,
    /// The killed leader's lease expiry minus the kill instant.
    pub(super) remaining: f64,
    /// The survivor's job start minus the kill instant.
    pub(super) takeover: f64,
    pub(super) successor: String,
    /// The survivor's job started no earlier than the killed leader's lease expiry.
    pub(super) after_expiry: bool,
}

pub(super) type TickRow = (String, i64, DateTime<Utc>);

/// Which ticks of a run [`first_tick`] looks for; a field left `None` does not filter.
#[derive(Debug, Clone, Copy, Default)]
pub(super) struct TickFilter {
    /// Tokens above this one.
    pub(super) above_token: Option<i64>,
    /// Ticks started after this instant.
    pub(super) started_after: Option<DateTime<Utc>>,
    /// Ticks of this shard.
    pub(super) shard: Option<i32>,
}

/// The earliest tick of `run` that `filter` lets through, waiting up to `within` for one.
pub(super) async fn first_tick(
    admin: &mut PgConnection,
    run: usize,
    filter: TickFilter,
    within: Duration,
) -> Res<Option<TickRow>> {
    poll_for(within, async || {
        let row: Option<TickRow> = sqlx::query_as(
            "SELECT holder, token, started_at FROM runtime_ticks
              WHERE run = $1
                AND ($2::bigint IS NULL OR token > $2)
                AND ($3::timestamptz IS NULL OR started_at > $3)
                AND ($4::integer IS NULL OR shard = $4)
              ORDER BY started_at LIMIT 1",
        )
        .bind(run as i32)
        .bind(filter.above_token)
        .bind(filter.started_after)
        .bind(filter.shard)
        .fetch_optional(&mut *admin)
        .await?;
        Ok(row)
    })
    .await
}

/// Calls `read` every 20 ms until it returns a row, or `within` has passed (then `None`).
pub(super) async fn poll_for<T>(
    within: Duration,
    mut read: impl AsyncFnMut() -> Res<Option<T>>,
) -> Res<Option<T>> {
    let deadline = Instant::now() + within;
    loop {
        let row = read().await?;
        if row.is_some() || Instant::now() > deadline {
            return Ok(row);
        }
        tokio::time::sleep(Duration::from_millis(20)).await;
    }
}

pub(super) async fn takeover_run(
    exe: &Path,
    url: &str,
    admin: &mut PgConnection,
    run: usize,
    setup: Setup,
) -> Res<TakeoverRun> {
    let replicas = Replicas {
        count: TAKEOVER_REPLICAS,
        prefix: "r",
    };
    replicas
        .run(exe, url, admin, run, setup, async |admin, replicas| {
            takeover_drill(admin, run, replicas, setup).await
        })
        .await
}

/// The replica processes of one run: how many, and the prefix of their holder ids
/// (`{prefix}{run}-{index}`).
pub(super) struct Replicas {
    pub(super) count: usize,
    pub(super) prefix: &'static str,
}

impl Replicas {
    /// Clears the setup's role (no holder, no cooldown, no presence: the previous run's replicas
    /// were killed holding it), starts the replicas, runs `drill` with them and kills them all.
    pub(super) async fn run<T>(
        &self,
        exe: &Path,
        url: &str,
        admin: &mut PgConnection,
        run: usize,
        setup: Setup,
        drill: impl AsyncFnOnce(&mut PgConnection, &mut [Replica]) -> Res<T>,
    ) -> Res<T> {
        let role = setup.role();
        sqlx::query(
            "UPDATE leader_leases SET holder_id = NULL, acquired_at = NULL, expires_at = NULL,
                    not_before = NULL, last_tick_ended_at = NULL, last_tick_holder = NULL
              WHERE role = $1",
        )
        .bind(role)
        .execute(&mut *admin)
        .await?;
        sqlx::query("DELETE FROM leader_presence WHERE role = $1")
            .bind(role)
            .execute(&mut *admin)
            .await?;
        let mut replicas = Vec::with_capacity(self.count);
        for i in 0..self.count {
            let holder = format!("{}{run}-{i}", self.prefix);
            replicas.push(spawn_replica(exe, url, &holder, run, setup).await?);
        }
        let result = drill(admin, &mut replicas).await;
        for replica in &mut replicas {
            let _ = replica.child.kill().await;
        }
        result
    }
}

pub(super) async fn takeover_drill(
    admin: &mut PgConnection,
    run: usize,
    replicas: &mut [Replica],
    setup: Setup,
) -> Res<TakeoverRun> {
    let (leader, token, _) = first_tick(admin, run, TickFilter::default(), Duration::from_secs(15))
        .await?
        .ok_or("no replica started a tick")?;
    let delay = KILL_BASE + rand::rng().random_range(Duration::ZERO..setup.timings().heartbeat());
    tokio::time::sleep(delay).await;
    let victim = replicas
        .iter_mut()
        .find(|r| r.holder == leader)
        .ok_or_else(|| format!("the leader {leader} is not one of this run's replicas"))?;
    victim.child.kill().await?;
    let (killed_at, expires_at, held_token, held_by): (
        DateTime<Utc>,
        Option<DateTime<Utc>>,
        i64,
        Option<String>,
    ) = sqlx::query_as(
        "SELECT clock_timestamp(), expires_at, holder_token, holder_id
           FROM leader_leases WHERE role = $1",
    )
    .bind(TAKEOVER)
    .fetch_one(&mut *admin)
    .await?;
    if held_token != token || held_by.as_deref() != Some(leader.as_str()) {
        return Err(format!(
            "run {run}: at the kill the lease was {held_by:?}/{held_token}, not {leader}/{token}"
        )
        .into());
    }
    let expires_at = expires_at.ok_or("a held lease without expiry")?;
    let within = setup.ttl * 3;
    let (successor, _, started_at) = first_tick(
        admin,
        run,
        TickFilter {
            above_token: Some(token),
            ..TickFilter::default()
        },
        within,
    )
    .await?
    .ok_or_else(|| format!("run {run}: no takeover within {within:?} of the kill"))?;
    let remaining = secs_between(killed_at, expires_at);
    Ok(TakeoverRun {
        killed: leader,
        since_renew: setup.ttl.as_secs_f64() - remaining,
        remaining,
        takeover: secs_between(killed_at, started_at),
        successor,
        after_expiry: started_at >= expires_at,
    })
}

/// `runtime-bench replica URL HOLDER RUN TTL_MS anchors|expiry role|shards=COUNT`: one runtime
/// leading [`TAKEOVER`] (or [`SHARDED`]); its job records each tick's start, and its
/// cancellation with the cause, on the database clock in `runtime_ticks`.
pub(super) async fn replica(url: &str, holder: &str, run: i32, setup: Setup) -> Res<()> {
    // Exit as soon as the parent goes away, however it ends: its end of our stdin closes.
    std::thread::spawn(|| {
        let _ = std::io::copy(&mut std::io::stdin(), &mut std::io::sink());
        std::process::exit(0);
    });
    let pool = PgPoolOptions::new().max_connections(3).connect(url).await?;
    let me = holder.to_owned();
    let mut builder = Runtime::builder(pool)
        .timings(setup.timings())
        .holder_id(holder);
    if setup.anchors {
        builder = builder.wake_on_release(url.parse()?).take_over_when_dead();
    }
    let builder = match setup.shards {
        None => builder.role(TAKEOVER, EVERY, move |tick: TickContext| {
            hold_tick(tick, run, me.clone())
        }),
        Some(count) => {
            builder.sharded_role(SHARDED, SHARD_EVERY, count, move |tick: TickContext| {
                shard_tick(tick, run, me.clone())
            })
        }
    };
    let runtime = builder.build()?;
    {
        let mut out = std::io::stdout().lock();
        writeln!(out, "ready")?;
        out.flush()?;
    }
    runtime
        .run_until_cancelled(CancellationToken::new())
        .await?;
    Ok(())
}

/// A tick of [`TAKEOVER`]: recorded when it starts, held until the runtime cancels it, and its
/// cancellation recorded; the job sends nothing after that record.
async fn hold_tick(tick: TickContext, run: i32, holder: String) -> Result<(), JobError> {
    record_start(&tick, run, &holder).await?;
    let cause = tick.cancelled().await;
    record_cancel(&tick, run, &holder, cause).await
}

/// Inserts this tick's row into `runtime_ticks`, started at the insert's `clock_timestamp()`.
pub(super) async fn record_start(
    tick: &TickContext,
    run: i32,
    holder: &str,
) -> Result<(), JobError> {
    let shard = tick.shard().map_or(0, |shard| shard.index());
    sqlx::query(
        "INSERT INTO runtime_ticks (run, holder, token, shard, started_at)
         VALUES ($1, $2, $3, $4, clock_timestamp())",
    )
    .bind(run)
    .bind(holder)
    .bind(tick.fence().token())
    .bind(i32::try_from(shard).expect("a shard index fits an integer"))
    .execute(tick.pool())
    .await?;
    Ok(())
}

/// Stamps this tick's row with the `clock_timestamp()` at which the job saw it cancelled, and
/// why.
pub(super) async fn record_cancel(
    tick: &TickContext,
    run: i32,
    holder: &str,
    cause: CancelCause,
) -> Result<(), JobError> {
    sqlx::query(
        "UPDATE runtime_ticks SET cancelled_at = clock_timestamp(), cause = $4
          WHERE run = $1 AND holder = $2 AND token = $3",
    )
    .bind(run)
    .bind(holder)
    .bind(tick.fence().token())
    .bind(cause.as_str())
    .execute(tick.pool())
    .await?;
    Ok(())
}

/// Part 2: the takeover runs; those that completed, and what each failed one said.
pub(super) async fn takeover_runs(
    cluster: &Cluster,
    admin: &mut PgConnection,
) -> Res<(Vec<TakeoverRun>, Vec<String>)> {
    progress(
        NAME,
        &format!(
            "part 2: {TAKEOVER_RUNS} takeovers of a SIGKILLed leader, {TAKEOVER_REPLICAS} replica processes each"
        ),
    );
    let exe = std::env::current_exe()?;
    let url = replica_url(cluster);
    let mut takeovers = Vec::with_capacity(TAKEOVER_RUNS);
    let mut takeover_errors = Vec::new();
    let setup = Setup::unsharded(TTL, false);
    for run in 0..TAKEOVER_RUNS {
        match takeover_run(&exe, &url, admin, run, setup).await {
            Ok(t) => {
                progress(
                    NAME,
                    &format!(
                        "part 2: run {}: killed {} {:.0} ms after its last RENEW; {} took over after {:.3} s",
                        run + 1,
                        t.killed,
                        t.since_renew * 1e3,
                        t.successor,
                        t.takeover
                    ),
                );
                takeovers.push(t);
            }
            Err(e) => {
                progress(NAME, &format!("part 2: run {}: {e}", run + 1));
                takeover_errors.push(format!("run {}: {e}", run + 1));
            }
        }
    }
    Ok((takeovers, takeover_errors))
}

/// Part 2's section: each takeover, and their spread.
pub(super) fn takeover_section(
    w: &mut String,
    takeovers: &[TakeoverRun],
    takeover_errors: &[String],
    overlap: &[usize],
) -> Res<()> {
    let t = timings();
    let takeover_s: Vec<f64> = takeovers.iter().map(|t| t.takeover).collect();
    let takeover_median = median(takeover_s.clone());
    let takeover_max = max(&takeover_s);
    let overshoot: Vec<f64> = takeovers.iter().map(|t| t.takeover - t.remaining).collect();
    writeln!(w, "## 2. Takeover after the leader is killed\n")?;
    writeln!(
        w,
        "{TAKEOVER_RUNS} runs. Each starts {TAKEOVER_REPLICAS} replica processes (this binary \
         re-executed as `runtime-bench replica`, one `Runtime` each) on a freshly reset role. Once \
         one leads (its job inserts `clock_timestamp()` and waits on `tick.cancelled()`), the \
         bench waits {} ms plus a uniformly random 0–{} ms (one heartbeat), so the kill lands at \
         a random point of the renew cycle, then kills the leader's process with SIGKILL \
         (`Child::kill`) and at once reads `clock_timestamp()` and the lease's `expires_at`. The \
         takeover instant is the `clock_timestamp()` the next leader's job inserts: both instants \
         are on the database clock. \"Since RENEW\" is TTL − (expires_at − kill): how long before \
         the kill the last RENEW (or the ACQUIRE) ran. \"After expiry\" is takeover − (expires_at − \
         kill): how late after the lease ran out the successor's job started.\n",
        KILL_BASE.as_millis(),
        t.heartbeat().as_millis()
    )?;
    writeln!(
        w,
        "| run | killed | since RENEW (ms) | lease left at kill (s) | successor | **takeover (s)** | after expiry (ms) |"
    )?;
    writeln!(w, "|---:|---|---:|---:|---|---:|---:|")?;
    for (i, t) in takeovers.iter().enumerate() {
        writeln!(
            w,
            "| {} | `{}` | {:.0} | {:.3} | `{}` | **{:.3}** | {:.0} |",
            i + 1,
            t.killed,
            t.since_renew * 1e3,
            t.remaining,
            t.successor,
            t.takeover,
            (t.takeover - t.remaining) * 1e3
        )?;
    }
    writeln!(w)?;
    if takeovers.is_empty() {
        writeln!(w, "No run completed.\n")?;
    } else {
        writeln!(
            w,
            "- **Takeover: median {takeover_median:.3} s, max {takeover_max:.3} s, min {:.3} s** \
             over {} runs (target: median < {:.0} s: **{}**).",
            min(&takeover_s),
            takeovers.len(),
            TARGET_TAKEOVER.as_secs_f64(),
            if takeover_median < TARGET_TAKEOVER.as_secs_f64() {
                "met"
            } else {
                "not met"
            }
        )?;
        writeln!(
            w,
            "- Lease left at the kill: median {:.3} s (range {:.3}–{:.3} s). Successor's start \
             after the expiry: median {:.0} ms, max {:.0} ms.",
            median(takeovers.iter().map(|t| t.remaining).collect()),
            min(&takeovers.iter().map(|t| t.remaining).collect::<Vec<_>>()),
            max(&takeovers.iter().map(|t| t.remaining).collect::<Vec<_>>()),
            median(overshoot.clone()) * 1e3,
            max(&overshoot) * 1e3
        )?;
        writeln!(
            w,
            "- Every successor started after the killed leader's lease expired: {}.",
            if overlap.is_empty() {
                "yes".to_owned()
            } else {
                format!("**NO** (runs {overlap:?})")
            }
        )?;
    }
    for e in takeover_errors {
        writeln!(w, "- **failed** {e}")?;
    }
    writeln!(w)?;
    Ok(())
}

/// Part 5: SIGKILL takeovers with `take_over_when_dead`, at each TTL of [`DEAD_HOLDER_TTLS`],
/// and without it at the longest (part 2 has it at 3 s).
pub(super) async fn dead_holder_runs(
    cluster: &Cluster,
    admin: &mut PgConnection,
) -> Res<Vec<(Setup, Vec<TakeoverRun>, Vec<String>)>> {
    let exe = std::env::current_exe()?;
    let url = replica_url(cluster);
    let mut setups: Vec<Setup> = DEAD_HOLDER_TTLS
        .iter()
        .map(|&ttl| Setup::unsharded(ttl, true))
        .collect();
    if let Some(&longest) = DEAD_HOLDER_TTLS.iter().max() {
        setups.push(Setup::unsharded(longest, false));
    }
    let mut results = Vec::new();
    // Run numbers continue after part 2's, so each run's ticks are its own.
    let mut run = TAKEOVER_RUNS;
    for setup in setups {
        progress(
            NAME,
            &format!(
                "part 5: {DEAD_HOLDER_RUNS} takeovers of a SIGKILLed leader at TTL {:?}, {}",
                setup.ttl,
                setup.anchors_label()
            ),
        );
        let (mut done, mut errors) = (Vec::new(), Vec::new());
        for _ in 0..DEAD_HOLDER_RUNS {
            match takeover_run(&exe, &url, admin, run, setup).await {
                Ok(t) => {
                    progress(
                        NAME,
                        &format!(
                            "part 5: {} took over after {:.3} s",
                            t.successor, t.takeover
                        ),
                    );
                    done.push(t);
                }
                Err(e) => errors.push(format!("run {}: {e}", run + 1)),
            }
            run += 1;
        }
        results.push((setup, done, errors));
    }
    Ok(results)
}

/// Part 5's section: the takeover with and without anchors, against issue 33's targets.
pub(super) fn dead_holder_section(
    w: &mut String,
    results: &[(Setup, Vec<TakeoverRun>, Vec<String>)],
) -> Res<()> {
    writeln!(
        w,
        "## 5. Takeover of a dead holder (`take_over_when_dead`)\n"
    )?;
    writeln!(
        w,
        "As part 2 ({TAKEOVER_REPLICAS} replica processes, the leader killed with SIGKILL at a \
         random point of its renew cycle, both instants on the database clock), {DEAD_HOLDER_RUNS} \
         runs per row; with anchors each replica's wake connection (direct, to the same server) \
         anchors it and one more direct connection watches the ring. Issue 33's targets, with \
         anchors at every TTL: median ≤ {} ms and max ≤ {} ms.\n",
        DEAD_HOLDER_TARGET_MEDIAN.as_millis(),
        DEAD_HOLDER_TARGET_MAX.as_millis()
    )?;
    writeln!(
        w,
        "| TTL | anchors | runs | takeover median (ms) | max (ms) | min (ms) | before the lease expired | target |"
    )?;
    writeln!(w, "|---:|---|---:|---:|---:|---:|---:|---|")?;
    for (setup, runs, errors) in results {
        let ms: Vec<f64> = runs.iter().map(|t| t.takeover * 1e3).collect();
        let early = runs.iter().filter(|t| !t.after_expiry).count();
        let target = if !setup.anchors {
            "-".to_owned()
        } else if ms.is_empty() {
            "no run".to_owned()
        } else if median(ms.clone()) <= DEAD_HOLDER_TARGET_MEDIAN.as_secs_f64() * 1e3
            && max(&ms) <= DEAD_HOLDER_TARGET_MAX.as_secs_f64() * 1e3
        {
            "**met**".to_owned()
        } else {
            "**not met**".to_owned()
        };
        let figure = |f: fn(&[f64]) -> f64| {
            if ms.is_empty() {
                "-".to_owned()
            } else {
                format!("{:.0}", f(&ms))
            }
        };
        writeln!(
            w,
            "| {:.0} s | {} | {} | {} | {} | {} | {early} of {} | {target} |",
            setup.ttl.as_secs_f64(),
            if setup.anchors { "on" } else { "off" },
            runs.len(),
            figure(|v| median(v.to_vec())),
            figure(max),
            figure(min),
            runs.len(),
        )?;
        for e in errors {
            writeln!(w, "\n- **failed** {e}")?;
        }
    }
    writeln!(w)?;
    Ok(())
}
