//! Part 2: takeover after SIGKILL. Replica processes on one role; the leader is killed.

use super::*;

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
    let (successor, _, started_at) = first_tick(admin, run, TickFilter::above_token(token), within)
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
