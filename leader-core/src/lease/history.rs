//! The tick history's part of ACQUIRE and RELEASE: the CTEs that write `leader_tick_history`
//! (the ring of each lease's last ticks, read by [`crate::history`]) in the statements' own round
//! trip.
//!
//! Each is spliced into its statement at `:tick_history`, after the CTE that changes the lease
//! rows, and is written only in terms of those CTEs' output (and of the history table): it has
//! no placeholder, reads no guard, and writes no table but `leader_tick_history`, so the lease
//! statements decide exactly what they decided without it (`leader-model`'s guard tests check
//! that the history part is this and nothing else). What the lease statements give it:
//!
//! | statement | CTE | the history reads |
//! |---|---|---|
//! | ACQUIRE | `granted` | `granted_tick` (the lease's `ticks_granted` after this grant), `granted_holder`, `holder_token`, `granted_at`, `granted_instant`, `granted_anchored` |
//! | ACQUIRE | `picked` | `picked_expires_at`: the lease's expiry before the grant, when the previous tick ran out unreleased |
//! | ACQUIRE | `ended_early` | `ended_token`, `ended_tick`: the token and tick number of a dead holder's lease ended early |
//! | RELEASE | `locked`, `ending`, `released` | the rows locked with this token, their tick number and expiry before the release (`locked_tick`, `locked_expires_at`), the outcome, and whether the lease was released |
//!
//! Each write finds its slot by the primary key (a tick's slot is its number modulo the ring's
//! size) and checks the tick's token or number in it, so it reads one row, not the ring.
//!
//! Every write here is to a slot of a lease whose row the statement holds locked (the rows it
//! grants, ends early or releases), so one lease's ring is written by one statement at a time.

/// ACQUIRE's history CTEs: the granted tick's slot opened (overwriting the tick
/// `leader_tick_history_slots()` before it), the previous tick's slot, if still open, ended by
/// `expiry` at the lease's expiry, and a dead holder's tick ended by `takeover`.
///
/// The previous tick's slot is open at a grant only if no RELEASE, pause or early end closed it:
/// its lease ran out (`picked_expires_at`, the expiry the grant found). An open slot whose row
/// was cleared by hand (no expiry) is ended at the grant. Only the previous tick's slot can be
/// open: every grant closes its predecessor's.
#[doc(hidden)]
pub const ACQUIRE_HISTORY: &str = "
history_opened AS (
    INSERT INTO leader_tick_history (role, shard_index, slot, tick_number, holder_id, token,
                                     acquired_at, tick_instant, anchored)
    SELECT granted_role, granted_shard_index, granted_tick % leader_tick_history_slots(),
           granted_tick, granted_holder, holder_token, granted_at, granted_instant,
           granted_anchored
      FROM granted
        ON CONFLICT (role, shard_index, slot)
        DO UPDATE SET tick_number = excluded.tick_number, holder_id = excluded.holder_id,
                      token = excluded.token, acquired_at = excluded.acquired_at,
                      tick_instant = excluded.tick_instant, anchored = excluded.anchored,
                      ended_at = NULL, ended_by = NULL, outcome = NULL
    RETURNING role
),
history_expired AS (
    UPDATE leader_tick_history h
       SET ended_at = coalesce(p.picked_expires_at, now()),
           ended_by = 'expiry'
      FROM granted g
      JOIN picked p ON p.role = g.granted_role AND p.shard_index = g.granted_shard_index
     WHERE h.role = g.granted_role
       AND h.shard_index = g.granted_shard_index
       AND h.slot = (g.granted_tick - 1) % leader_tick_history_slots()
       AND h.tick_number = g.granted_tick - 1
       AND h.ended_at IS NULL
    RETURNING h.role
),
history_taken_over AS (
    UPDATE leader_tick_history h
       SET ended_at = now(),
           ended_by = 'takeover'
      FROM ended_early e
     WHERE h.role = e.ended_role
       AND h.shard_index = e.ended_shard_index
       AND h.slot = e.ended_tick % leader_tick_history_slots()
       AND h.token = e.ended_token
       AND h.ended_at IS NULL
    RETURNING h.role
)";

/// RELEASE's history CTE: for each lease the statement locked with its token, the tick's
/// outcome (the first RELEASE's, if the holder sends two), and, when it released the lease, the
/// slot ended by `release`, or by `expiry` at the lease's expiry when that had passed first. A
/// slot a pause or an early end closed keeps how and when its lease ended; a RELEASE whose token
/// no longer holds the row locks nothing and writes nothing (the grant that replaced it closed
/// the slot).
#[doc(hidden)]
pub const RELEASE_HISTORY: &str = "
history_released AS (
    UPDATE leader_tick_history h
       SET outcome = coalesce(h.outcome, e.ending_outcome),
           ended_at = CASE WHEN h.ended_at IS NOT NULL OR r.released_role IS NULL THEN h.ended_at
                           ELSE least(now(), k.locked_expires_at)
                      END,
           ended_by = CASE WHEN h.ended_by IS NOT NULL OR r.released_role IS NULL THEN h.ended_by
                           WHEN k.locked_expires_at <= now() THEN 'expiry'
                           ELSE 'release'
                      END
      FROM locked k
      JOIN ending e ON e.ending_role = k.role AND e.ending_shard_index = k.shard_index
      LEFT JOIN released r
        ON r.released_role = k.role AND r.released_shard_index = k.shard_index
     WHERE h.role = k.role
       AND h.shard_index = k.shard_index
       AND h.slot = k.locked_tick % leader_tick_history_slots()
       AND h.token = e.ending_token
    RETURNING h.role
)";
