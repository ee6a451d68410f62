//! `leaderctl pause`, `unpause` and `clear-cooldown`, each through the framework's own function
//! (`leader_pause`, `leader_unpause`, `leader_clear_cooldown`, and with `--shard`
//! `leader_pause_shard`, `leader_unpause_shard`) by way of `leader_core::operator`.

use leader_core::Timings;
use leader_core::operator::{self, PauseOutcome};
use sqlx::PgPool;

use crate::failure::Failure;

/// Pauses `role`, refusing one that is already paused (its first pause's author and reason stand).
pub async fn pause(
    pool: &PgPool,
    role: &str,
    by: &str,
    reason: Option<&str>,
) -> Result<(), Failure> {
    if by.trim().is_empty() {
        return Err(Failure::refused(
            "--by is empty: say who is pausing the role, e.g. --by alice",
        ));
    }
    let outcome = operator::pause_if_unpaused(pool, role, by, reason, &Timings::default())
        .await
        .map_err(Failure::from_core)?;
    paused(outcome, &format!("role `{role}`"), role)?;
    println!(
        "paused {role}: its holder's fence is false from now on, and no replica acquires it until \
         `leaderctl unpause {role}`"
    );
    Ok(())
}

/// Refuses an [`PauseOutcome::AlreadyPaused`] of `what` (the role, or one of its shards), naming
/// who paused it, since when and why, and the `unpause` arguments (`args`) lifting it.
fn paused(outcome: PauseOutcome, what: &str, args: &str) -> Result<(), Failure> {
    match outcome {
        PauseOutcome::Paused => Ok(()),
        PauseOutcome::AlreadyPaused { by, reason, since } => Err(Failure::refused(format!(
            "{what} is already paused, by {by} since {}{}: nothing changed; \
             `leaderctl unpause {args}` lifts it",
            since.format("%Y-%m-%d %H:%M:%SZ"),
            reason.map(|r| format!(" ({r})")).unwrap_or_default()
        ))),
        other => Err(Failure::unreachable(format!(
            "leader_pause answered {other:?}, which this leaderctl does not know: use the \
             leaderctl of the runtime's version"
        ))),
    }
}

/// Unpauses `role`.
pub async fn unpause(pool: &PgPool, role: &str) -> Result<(), Failure> {
    operator::unpause(pool, role, &Timings::default())
        .await
        .map_err(Failure::from_core)?;
    println!("unpaused {role}: it runs at the next ACQUIRE that finds it due and out of cooldown");
    Ok(())
}

/// Clears `role`'s cooldown.
pub async fn clear_cooldown(pool: &PgPool, role: &str) -> Result<(), Failure> {
    operator::clear_cooldown(pool, role, &Timings::default())
        .await
        .map_err(Failure::from_core)?;
    println!("cleared the cooldown of {role}: it runs at the next ACQUIRE that finds it due");
    Ok(())
}

/// Pauses shard `shard` of `role` alone (`leader_pause_shard`), refusing a shard that is already
/// paused, alone or with its role (its first pause's author and reason stand).
pub async fn pause_shard(
    pool: &PgPool,
    role: &str,
    shard: u32,
    by: &str,
    reason: Option<&str>,
) -> Result<(), Failure> {
    if by.trim().is_empty() {
        return Err(Failure::refused(
            "--by is empty: say who is pausing the shard, e.g. --by alice",
        ));
    }
    let outcome =
        operator::pause_shard_if_unpaused(pool, role, shard, by, reason, &Timings::default())
            .await
            .map_err(Failure::from_core)?;
    paused(
        outcome,
        &format!("shard {shard} of `{role}`"),
        &format!("{role} --shard {shard}"),
    )?;
    println!(
        "paused shard {shard} of {role}: its holder's fence is false from now on, the other shards \
         run on; `leaderctl unpause {role} --shard {shard}` lifts it"
    );
    Ok(())
}

/// Unpauses shard `shard` of `role` (`leader_unpause_shard`).
pub async fn unpause_shard(pool: &PgPool, role: &str, shard: u32) -> Result<(), Failure> {
    operator::unpause_shard(pool, role, shard, &Timings::default())
        .await
        .map_err(Failure::from_core)?;
    println!(
        "unpaused shard {shard} of {role}: it runs at the next ACQUIRE that finds it due and out of \
         cooldown"
    );
    Ok(())
}
