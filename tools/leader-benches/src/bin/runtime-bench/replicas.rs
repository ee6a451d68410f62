//! The replica processes parts 2 and 5 to 7 run: how they lead (`Setup`), starting and killing
//! them (`Replicas`), the `replica` command they run, and reading the ticks they record.

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

impl TickFilter {
    /// Ticks under a token above `token`.
    pub(super) fn above_token(token: i64) -> TickFilter {
        TickFilter {
            above_token: Some(token),
            ..TickFilter::default()
        }
    }

    /// Ticks started after `instant`.
    pub(super) fn started_after(instant: DateTime<Utc>) -> TickFilter {
        TickFilter {
            started_after: Some(instant),
            ..TickFilter::default()
        }
    }
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
