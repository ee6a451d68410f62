//! Part 6: an anchor ended while its holder lives. Two anchored replica processes on
//! [`TAKEOVER`]; once one leads, the bench ends the leader's anchor session with
//! `pg_terminate_backend`, and measures how soon the leader's job sees its tick cancelled and
//! who leads next, on the database clock.

use super::*;

const RUNS: usize = 9;
const REPLICAS: usize = 2;
/// Run numbers of this part start here, above every earlier part's, so each run's ticks are its
/// own.
const FIRST_RUN: usize = 600;

/// One run: the leader's anchor ended by the server while the leader's process lives on.
#[derive(Debug)]
pub(super) struct AnchorLossRun {
    pub(super) leader: String,
    pub(super) old_token: i64,
    /// The leader's job saw its tick cancelled, minus the terminate instant (seconds).
    pub(super) notice: f64,
    /// The cancel cause the leader's job recorded.
    pub(super) cause: String,
    pub(super) successor: String,
    pub(super) new_token: i64,
    /// The next leader's job start minus the terminate instant (seconds).
    pub(super) next_lead: f64,
    /// The next lease was granted under an anchor (`holder_anchor_pid` set on its grant).
    pub(super) next_anchored: bool,
    /// The end of a cooldown (`not_before`) on the row after the next grant, minus the terminate
    /// instant: only the old holder's RELEASE of its cancelled tick could have set one, and its
    /// outcome `anchor_lost` sets none
    /// (seconds). `None` when another replica had taken the lease first.
    pub(super) cooldown_until: Option<f64>,
    /// The next leader's job start minus the old leader's last statement, its cancellation
    /// record (seconds): negative if the two jobs overlapped on the database clock.
    pub(super) gap: f64,
}

impl AnchorLossRun {
    fn same_replica(&self) -> bool {
        self.successor == self.leader
    }

    fn token_larger(&self) -> bool {
        self.new_token > self.old_token
    }
}

/// Part 6's runs, and what each failed one said.
#[derive(Debug, Default)]
pub(super) struct AnchorLosses {
    pub(super) runs: Vec<AnchorLossRun>,
    pub(super) errors: Vec<String>,
}

impl AnchorLosses {
    /// Runs (1-based) in which the old leader's job ran past the next leader's start.
    fn overlaps(&self) -> Vec<usize> {
        runs_where(&self.runs, |r| r.gap < 0.0)
    }

    /// Runs (1-based) whose next token was not larger than the old one.
    fn tokens_not_larger(&self) -> Vec<usize> {
        runs_where(&self.runs, |r| !r.token_larger())
    }

    /// The part's checks: every run completed, no two jobs overlapped, every token grew.
    pub(super) fn ok(&self) -> bool {
        self.errors.is_empty() && self.overlaps().is_empty() && self.tokens_not_larger().is_empty()
    }
}

/// The numbers (1-based) of the runs for which `test` holds.
fn runs_where(runs: &[AnchorLossRun], test: impl Fn(&AnchorLossRun) -> bool) -> Vec<usize> {
    let numbered = runs.iter().enumerate();
    numbered
        .filter(|(_, r)| test(r))
        .map(|(i, _)| i + 1)
        .collect()
}

/// Part 6: [`RUNS`] runs of [`REPLICAS`] anchored replicas at TTL [`TTL`].
pub(super) async fn anchor_loss_runs(
    cluster: &Cluster,
    admin: &mut PgConnection,
) -> Res<AnchorLosses> {
    progress(
        NAME,
        &format!(
            "part 6: {RUNS} anchors ended by the server while their holder lives, {REPLICAS} anchored replica processes each"
        ),
    );
    let exe = std::env::current_exe()?;
    let url = replica_url(cluster);
    let setup = Setup::unsharded(TTL, true);
    let mut losses = AnchorLosses::default();
    let replicas = Replicas {
        count: REPLICAS,
        prefix: "a",
    };
    for run in FIRST_RUN..FIRST_RUN + RUNS {
        let ended = replicas.run(&exe, &url, admin, run, setup, async |admin, _| {
            end_anchor(admin, run, setup).await
        });
        match ended.await {
            Ok(r) => {
                progress(
                    NAME,
                    &format!(
                        "part 6: {} noticed its anchor's end after {:.1} ms ({}); {} leads {:.1} ms after the terminate",
                        r.leader,
                        r.notice * 1e3,
                        r.cause,
                        r.successor,
                        r.next_lead * 1e3
                    ),
                );
                losses.runs.push(r);
            }
            Err(e) => {
                progress(NAME, &format!("part 6: run {}: {e}", run - FIRST_RUN + 1));
                losses
                    .errors
                    .push(format!("run {}: {e}", run - FIRST_RUN + 1));
            }
        }
    }
    Ok(losses)
}

/// Waits for a leader, ends its anchor at a random point of its renew cycle, and waits for its
/// job's cancellation and the next leader's start.
async fn end_anchor(admin: &mut PgConnection, run: usize, setup: Setup) -> Res<AnchorLossRun> {
    let (leader, old_token, _) =
        first_tick(admin, run, TickFilter::default(), Duration::from_secs(15))
            .await?
            .ok_or("no replica started a tick")?;
    let delay = KILL_BASE + rand::rng().random_range(Duration::ZERO..setup.timings().heartbeat());
    tokio::time::sleep(delay).await;
    let (held_by, held_token, anchor_pid): (Option<String>, i64, Option<i32>) = sqlx::query_as(
        "SELECT holder_id, holder_token, holder_anchor_pid FROM leader_leases WHERE role = $1",
    )
    .bind(TAKEOVER)
    .fetch_one(&mut *admin)
    .await?;
    if held_by.as_deref() != Some(leader.as_str()) || held_token != old_token {
        return Err(format!(
            "before the terminate the lease was {held_by:?}/{held_token}, not {leader}/{old_token}"
        )
        .into());
    }
    let anchor_pid = anchor_pid.ok_or("the leader's lease was granted without an anchor")?;
    // The subquery runs first, so the instant is read just after the signal was sent.
    let (terminated, terminated_at): (bool, DateTime<Utc>) = sqlx::query_as(
        "SELECT t.terminated, clock_timestamp()
           FROM (SELECT pg_terminate_backend($1) AS terminated OFFSET 0) AS t",
    )
    .bind(anchor_pid)
    .fetch_one(&mut *admin)
    .await?;
    if !terminated {
        return Err(format!("the anchor session {anchor_pid} was not there to terminate").into());
    }
    let within = setup.ttl * 3;
    let (cancelled_at, cause) = cancellation(admin, run, &leader, old_token, within).await?;
    let (successor, new_token, started_at) =
        first_tick(admin, run, TickFilter::started_after(terminated_at), within)
            .await?
            .ok_or_else(|| format!("nobody led within {within:?} of the terminate"))?;
    // The next tick never ends, so the row still shows its grant, and the cooldown only the old
    // holder's RELEASE can have set (the run started with none).
    let (holder_token, next_anchor, not_before): (i64, Option<i32>, Option<DateTime<Utc>>) =
        sqlx::query_as(
            "SELECT holder_token, holder_anchor_pid, not_before FROM leader_leases WHERE role = $1",
        )
        .bind(TAKEOVER)
        .fetch_one(&mut *admin)
        .await?;
    if holder_token != new_token {
        return Err(format!("the lease moved on from the next leader's token {new_token}").into());
    }
    Ok(AnchorLossRun {
        leader,
        old_token,
        notice: secs_between(terminated_at, cancelled_at),
        cause,
        successor,
        new_token,
        next_lead: secs_between(terminated_at, started_at),
        next_anchored: next_anchor.is_some(),
        cooldown_until: not_before.map(|at| secs_between(terminated_at, at)),
        gap: secs_between(cancelled_at, started_at),
    })
}

/// Waits until the tick `(run, holder, token)` records its cancellation: its instant and cause.
async fn cancellation(
    admin: &mut PgConnection,
    run: usize,
    holder: &str,
    token: i64,
    within: Duration,
) -> Res<(DateTime<Utc>, String)> {
    let row = poll_for(within, async || {
        let row: Option<(DateTime<Utc>, String)> = sqlx::query_as(
            "SELECT cancelled_at, cause FROM runtime_ticks
              WHERE run = $1 AND holder = $2 AND token = $3 AND cancelled_at IS NOT NULL",
        )
        .bind(run as i32)
        .bind(holder)
        .bind(token)
        .fetch_optional(&mut *admin)
        .await?;
        Ok(row)
    })
    .await?;
    row.ok_or_else(|| format!("{holder}'s job saw no cancellation within {within:?}").into())
}

/// Part 6's section: each run, the notice time and the next lead, and the checks.
pub(super) fn anchor_loss_section(w: &mut String, losses: &AnchorLosses) -> Res<()> {
    let t = timings();
    writeln!(
        w,
        "## 6. An anchor ended while its holder lives (`take_over_when_dead`)\n"
    )?;
    writeln!(
        w,
        "{RUNS} runs at TTL {:?}. Each starts {REPLICAS} replica processes with \
         `take_over_when_dead` on a freshly reset role (their wake connections, direct, are their \
         anchors). Once one leads (its job inserts `clock_timestamp()` and waits on \
         `tick.cancelled()`), the bench waits {} ms plus a uniformly random 0–{} ms, reads the \
         leader's `holder_anchor_pid` from `leader_leases`, and ends that session with \
         `pg_terminate_backend` in a statement that reads `clock_timestamp()` right after it: the \
         terminate instant. The leader's process lives on. When its tick is cancelled, its job \
         updates its row with `clock_timestamp()` and the cancel cause, through its pool, and \
         returns: the **notice** is that instant minus the terminate instant. The **next lead** \
         is the first job start after the terminate (either replica's), minus the terminate \
         instant; \"gap\" is that start minus the old job's cancellation record, its last \
         statement (negative: the two jobs overlapped on the database clock). \"Old holder's \
         RELEASE\": the old holder releases its cancelled tick as `anchor_lost`, which sets no \
         cooldown (an outcome with one, `lost`, would hold the role for one interval, {} ms here); \
         the column shows the cooldown (`not_before`, after the terminate) found on the row after \
         the next grant, which only that RELEASE could have set. All instants are on the database \
         clock.\n",
        TTL,
        KILL_BASE.as_millis(),
        t.heartbeat().as_millis(),
        EVERY.as_millis()
    )?;
    writeln!(
        w,
        "| run | leader | **notice (ms)** | cause | old holder's RELEASE | next leader | **next lead (ms)** | next grant anchored | token larger | gap (ms) |"
    )?;
    writeln!(w, "|---:|---|---:|---|---|---|---:|---|---|---:|")?;
    for (i, r) in losses.runs.iter().enumerate() {
        let released = match r.cooldown_until {
            Some(until) => format!("**cooldown to {:.0} ms**", until * 1e3),
            None => "no cooldown".to_owned(),
        };
        writeln!(
            w,
            "| {} | `{}` | **{:.1}** | `{}` | {released} | `{}` ({}) | **{:.1}** | {} | {} | {:.1} |",
            i + 1,
            r.leader,
            r.notice * 1e3,
            r.cause,
            r.successor,
            if r.same_replica() { "same" } else { "other" },
            r.next_lead * 1e3,
            if r.next_anchored { "yes" } else { "no" },
            if r.token_larger() { "yes" } else { "**NO**" },
            r.gap * 1e3
        )?;
    }
    writeln!(w)?;
    if losses.runs.is_empty() {
        writeln!(w, "No run completed.\n")?;
    } else {
        let notice: Vec<f64> = losses.runs.iter().map(|r| r.notice * 1e3).collect();
        let next: Vec<f64> = losses.runs.iter().map(|r| r.next_lead * 1e3).collect();
        let same = losses.runs.iter().filter(|r| r.same_replica()).count();
        let anchor_lost = losses
            .runs
            .iter()
            .filter(|r| r.cause == CancelCause::AnchorLost.as_str())
            .count();
        let n = losses.runs.len();
        writeln!(
            w,
            "- **Notice: median {:.1} ms, max {:.1} ms** (min {:.1} ms) over {n} runs; cancelled \
             as `anchor_lost` in {anchor_lost} of {n}.",
            median(notice.clone()),
            max(&notice),
            min(&notice)
        )?;
        writeln!(
            w,
            "- **Next lead: median {:.1} ms, max {:.1} ms** (min {:.1} ms) after the terminate; \
             by the other replica in {} of {n} runs, by the same one (anchored again) in {same}.",
            median(next.clone()),
            max(&next),
            min(&next),
            n - same
        )?;
        let free = losses
            .runs
            .iter()
            .filter(|r| r.cooldown_until.is_none())
            .count();
        let after_cooldown: Vec<f64> = losses
            .runs
            .iter()
            .filter_map(|r| r.cooldown_until.map(|until| (r.next_lead - until) * 1e3))
            .collect();
        writeln!(
            w,
            "- No cooldown was left on the row in {free} of {n} runs (the old holder's RELEASE \
             is `anchor_lost`)."
        )?;
        if !after_cooldown.is_empty() {
            writeln!(
                w,
                "- **A cooldown was left on the row in {} of {n} runs**: the next lead came a \
                 median {:.1} ms (max {:.1} ms) after it ended.",
                after_cooldown.len(),
                median(after_cooldown.clone()),
                max(&after_cooldown)
            )?;
        }
        let not_larger = losses.tokens_not_larger();
        writeln!(
            w,
            "- The next lease's token was larger than the old one in every run: {}.",
            if not_larger.is_empty() {
                "yes".to_owned()
            } else {
                format!("**NO** (runs {not_larger:?})")
            }
        )?;
        let overlaps = losses.overlaps();
        writeln!(
            w,
            "- The old leader's job ended before the next leader's started, in every run: {}.",
            if overlaps.is_empty() {
                "yes".to_owned()
            } else {
                format!("**NO** (runs {overlaps:?})")
            }
        )?;
    }
    for e in &losses.errors {
        writeln!(w, "- **failed** {e}")?;
    }
    writeln!(w)?;
    Ok(())
}
