//! Part 8: a pause reaching the running tick. One runtime leads a role whose tick holds until it
//! is cancelled; an operator pauses the role (`leader_pause`, as `leaderctl pause` does) at a
//! random point of the tick's heartbeat cycle, and the job records when it sees its tick
//! cancelled. With a direct connection the runtime hears the pause's NOTIFY and renews at once;
//! without one the tick hears of it at its next RENEW.

use tokio::sync::mpsc;

use super::*;

/// A tick's start, or its cancellation seen by the job, with the local instant.
enum Seen {
    Started,
    Cancelled(Instant, Option<CancelCause>),
}

fn pausing_runtime(
    pool: PgPool,
    direct: Option<PgConnectOptions>,
    seen: mpsc::UnboundedSender<Seen>,
) -> Res<Runtime> {
    let mut builder = Runtime::builder(pool)
        .timings(timings())
        .holder_id("pause-bench")
        .role(PAUSE, EVERY, move |tick: TickContext| {
            let seen = seen.clone();
            async move {
                let _ = seen.send(Seen::Started);
                tick.cancelled().await;
                let _ = seen.send(Seen::Cancelled(Instant::now(), tick.cancel_cause()));
                Ok::<(), JobError>(())
            }
        });
    if let Some(direct) = direct {
        builder = builder.wake_on_release(direct);
    }
    Ok(builder.build()?)
}

async fn next_seen(seen: &mut mpsc::UnboundedReceiver<Seen>, what: &str) -> Res<Seen> {
    tokio::time::timeout(Duration::from_secs(30), seen.recv())
        .await
        .map_err(|_| format!("part 8: no {what} within 30 s"))?
        .ok_or_else(|| format!("part 8: the runtime stopped before {what}").into())
}

/// Waits until a session of the benchmark's database listens for pauses.
async fn listening(admin: &mut PgConnection) -> Res<()> {
    let deadline = Instant::now() + Duration::from_secs(30);
    loop {
        let listeners: i64 = sqlx::query_scalar(
            "SELECT count(*) FROM pg_stat_activity
              WHERE query LIKE '%LISTEN \"leader_paused\"%' AND pid <> pg_backend_pid()",
        )
        .fetch_one(&mut *admin)
        .await?;
        if listeners > 0 {
            return Ok(());
        }
        if Instant::now() > deadline {
            return Err("part 8: the runtime's wake connection never listened".into());
        }
        tokio::time::sleep(Duration::from_millis(5)).await;
    }
}

/// `runs` pauses of one runtime's running tick; each run's seconds from sending the pause to the
/// job seeing its tick cancelled, on the local clock.
async fn pause_setup_runs(
    options: &PgConnectOptions,
    admin: &mut PgConnection,
    direct: bool,
    runs: usize,
) -> Res<Vec<f64>> {
    let (tx, mut seen) = mpsc::unbounded_channel();
    let stop = CancellationToken::new();
    let runtime = pausing_runtime(
        small_pool(options).await?,
        direct.then(|| options.clone()),
        tx,
    )?;
    let running = tokio::spawn(runtime.run_until_cancelled(stop.clone()));
    if direct {
        listening(admin).await?;
    }
    let timings = timings();
    let mut seconds = Vec::with_capacity(runs);
    for run in 0..runs {
        let Seen::Started = next_seen(&mut seen, "tick start").await? else {
            return Err("part 8: a tick was cancelled before it was paused".into());
        };
        // A point of the tick's heartbeat cycle.
        let point = timings.heartbeat().mul_f64(rand::rng().random::<f64>());
        tokio::time::sleep(point).await;
        let sent = Instant::now();
        leader_core::operator::pause(&mut *admin, PAUSE.as_str(), "bench", None, &timings).await?;
        let Seen::Cancelled(at, cause) = next_seen(&mut seen, "cancellation").await? else {
            return Err("part 8: a tick started while the role was paused".into());
        };
        if cause != Some(CancelCause::Paused) {
            return Err(format!("part 8: the paused tick was cancelled as {cause:?}").into());
        }
        let secs = at.duration_since(sent).as_secs_f64();
        progress(
            NAME,
            &format!(
                "part 8: pause to cancellation {}, run {}: {:.1} ms",
                if direct {
                    "with a direct connection"
                } else {
                    "without"
                },
                run + 1,
                secs * 1e3
            ),
        );
        seconds.push(secs);
        leader_core::operator::unpause(&mut *admin, PAUSE.as_str(), &timings).await?;
        leader_core::operator::clear_cooldown(&mut *admin, PAUSE.as_str(), &timings).await?;
    }
    stop.cancel();
    tokio::time::timeout(Duration::from_secs(15), running).await???;
    Ok(seconds)
}

/// Part 8: the pause runs, with a direct connection and without; each run's seconds.
pub(super) async fn pause_runs(
    options: &PgConnectOptions,
    admin: &mut PgConnection,
) -> Res<Vec<(bool, Vec<f64>)>> {
    Ok(vec![
        (
            true,
            pause_setup_runs(options, admin, true, PAUSE_RUNS).await?,
        ),
        (
            false,
            pause_setup_runs(options, admin, false, PAUSE_RUNS_WITHOUT).await?,
        ),
    ])
}

/// The report's section for part 8.
pub(super) fn pause_section(w: &mut String, pauses: &[(bool, Vec<f64>)]) -> Res<()> {
    let t = timings();
    writeln!(w, "\n## 8. A pause reaching the running tick\n")?;
    writeln!(
        w,
        "At the TTL 3 s timings above (heartbeat {:?}). One runtime leads a role whose tick \
         holds until cancelled; the benchmark pauses the role (`leader_pause`, as `leaderctl \
         pause` does) at a random point of the tick's heartbeat cycle, and the job notes when it \
         sees its tick cancelled (cause `paused`). The figure is the time from sending the pause \
         to that, on the local clock. **Direct connection**: the runtime built with \
         `wake_on_release`: `leader_pause` notifies `leader_paused` at its commit, the runtime \
         hears it and renews the role's running ticks at once, and the RENEW's answer cancels \
         the tick. **Without**: the tick hears of the pause at its next RENEW, within one \
         heartbeat. Claims are fenced from the pause's commit in both.\n",
        t.heartbeat()
    )?;
    writeln!(w, "| setup | runs | median (ms) | max (ms) | min (ms) |")?;
    writeln!(w, "|---|---:|---:|---:|---:|")?;
    for (direct, runs) in pauses {
        writeln!(
            w,
            "| {} | {} | **{:.1}** | {:.1} | {:.1} |",
            if *direct {
                "direct connection"
            } else {
                "without"
            },
            runs.len(),
            median(runs.clone()) * 1e3,
            max(runs) * 1e3,
            min(runs) * 1e3
        )?;
    }
    writeln!(w)?;
    Ok(())
}
