//! The statements' guards, taken from `leader-core` and evaluated by name.
//!
//! The model does not restate when ACQUIRE, RENEW, RELEASE or the fence succeed: it reads the
//! guard lists that sit next to the SQL (`leader_core::lease::{ACQUIRE,RENEW,RELEASE}_GUARDS`,
//! `leader_core::FENCE_GUARDS`) and evaluates each guard through the match in
//! [`GuardKind::holds`]. A list that names a guard the model does not know, or lacks one the model
//! evaluates, is refused when the model is built ([`Guards::resolve`]); the guard tests
//! (`tests/guards.rs`) check that each list is exactly the conjuncts of its SQL. The four-argument
//! fence of a shard has no list in `leader-core`: [`SHARD_FENCE_GUARDS`] is built here from
//! `FENCE_GUARDS`, and the same tests hold it to its function's WHERE.

use leader_core::FENCE_GUARDS;
use leader_core::guard::{Guard, Guarded};

use crate::config::{Config, Time};
use crate::state::{Row, Token};

/// A guard the model can evaluate.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Hash)]
pub enum GuardKind {
    /// `paused_at IS NULL`.
    Unpaused,
    /// `expires_at IS NULL OR expires_at <= now()`.
    UnheldOrExpired,
    /// `not_before IS NULL OR not_before <= now()`.
    PastNotBefore,
    /// The last completed tick ended at least one interval ago.
    Due,
    /// `holder_token` is the statement's token.
    HoldsToken,
    /// `expires_at > now()` (the fence: `> statement_timestamp()`, the same instant here, since
    /// every statement is one atomic step).
    Unexpired,
    /// `holder_id IS NOT NULL`.
    Held,
    /// `NOT :calendar OR :instant <= now()`: a calendar role's instant is due (a NULL instant is
    /// never due).
    InstantDue,
    /// `NOT :calendar OR last_completed_instant IS NULL OR :instant > last_completed_instant`: a
    /// calendar role's instant is later than the last completed one.
    InstantNotCompleted,
    /// `NOT :each OR last_completed_instant IS NULL OR last_completed_instant >= :previous`: under
    /// the `each` missed-instant policy, the instant asked for is the next after the last
    /// completed. The model's calendar role runs the `latest` policy (`:each` false), so this
    /// guard always holds here; `tests/tests/schedules.rs` and the failover drill exercise it.
    InstantIsNext,
    /// `shard_count = :shard_count` (ACQUIRE) or `shard_count = p_shard_count` (the four-argument
    /// fence): the caller asks with the role's shard count. The model's count never changes (no
    /// `leader_reshard`) and every caller has it, so this guard always holds here;
    /// `tests/tests/shards.rs` exercises it.
    ShardCountMatches,
    /// `:anchor_pid IS NULL OR EXISTS (a live session with the anchor's pid and start)`: the anchor
    /// an ACQUIRE names lives on the server (`LeaseModel::anchor_lives`). Without anchors the
    /// caller names none, and it holds.
    CallerAnchorLives,
    /// `leader_anchor_ended(holder_anchor_pid, holder_anchor_start, acquired_at)`: the server no
    /// longer has the anchor session the row's grant recorded (`LeaseModel::holder_anchor_ended`,
    /// on the server's sessions).
    HolderAnchorEnded,
}

/// What a guard is evaluated against: the row when the server runs the statement.
#[derive(Debug, Clone, Copy)]
pub struct Subject<'a> {
    /// The lease row: the shard's row the statement names.
    pub row: &'a Row,
    /// The database clock.
    pub now: Time,
    /// The token the statement carries (unused by ACQUIRE).
    pub token: Token,
    /// The role's interval.
    pub interval: Time,
    /// Whether the role is on a calendar schedule (`:calendar`).
    pub calendar: bool,
    /// The instant an ACQUIRE asks for (`:instant`).
    pub instant: Option<Time>,
    /// Whether the server has the anchor session an ACQUIRE names (true for the other
    /// statements, which name none).
    pub caller_anchor_alive: bool,
    /// Whether the server no longer has the anchor session the row records (false for the
    /// statements other than ACQUIRE, and for a row that records none).
    pub holder_anchor_ended: bool,
}

impl GuardKind {
    /// Whether this guard holds for `s`.
    pub fn holds(self, s: Subject<'_>) -> bool {
        match self {
            GuardKind::Unpaused => !s.row.paused,
            GuardKind::UnheldOrExpired => s.row.expires.is_none_or(|e| e <= s.now),
            GuardKind::PastNotBefore => s.row.not_before.is_none_or(|t| t <= s.now),
            GuardKind::Due => s
                .row
                .last_tick_ended
                .is_none_or(|t| t + s.interval <= s.now),
            GuardKind::HoldsToken => s.row.token == s.token,
            GuardKind::Unexpired => s.row.expires.is_some_and(|e| e > s.now),
            GuardKind::Held => s.row.holder.is_some(),
            GuardKind::InstantDue => !s.calendar || s.instant.is_some_and(|i| i <= s.now),
            GuardKind::InstantIsNext | GuardKind::ShardCountMatches => true,
            GuardKind::CallerAnchorLives => s.caller_anchor_alive,
            GuardKind::HolderAnchorEnded => s.holder_anchor_ended,
            GuardKind::InstantNotCompleted => {
                !s.calendar
                    || s.instant
                        .is_some_and(|i| s.row.last_completed_instant.is_none_or(|c| i > c))
            }
        }
    }
}

/// The guards the model evaluates for ACQUIRE, by the names `leader-core` gives them.
pub const ACQUIRE: &[(&str, GuardKind)] = &[
    ("shard_count_matches", GuardKind::ShardCountMatches),
    ("unpaused", GuardKind::Unpaused),
    ("unheld_or_expired", GuardKind::UnheldOrExpired),
    ("past_not_before", GuardKind::PastNotBefore),
    ("due", GuardKind::Due),
    ("instant_due", GuardKind::InstantDue),
    ("instant_not_completed", GuardKind::InstantNotCompleted),
    ("instant_is_next", GuardKind::InstantIsNext),
    ("caller_anchor_lives", GuardKind::CallerAnchorLives),
];
/// The guards the model evaluates for ACQUIRE's takeover (`ended_early`): a live lease whose
/// holder's anchor ended is ended early.
pub const TAKEOVER: &[(&str, GuardKind)] = &[
    ("shard_count_matches", GuardKind::ShardCountMatches),
    ("unpaused", GuardKind::Unpaused),
    ("unexpired", GuardKind::Unexpired),
    ("holder_anchor_ended", GuardKind::HolderAnchorEnded),
    ("past_not_before", GuardKind::PastNotBefore),
    ("due", GuardKind::Due),
    ("instant_due", GuardKind::InstantDue),
    ("instant_not_completed", GuardKind::InstantNotCompleted),
    ("instant_is_next", GuardKind::InstantIsNext),
    ("caller_anchor_lives", GuardKind::CallerAnchorLives),
];
/// The guards the model evaluates for RENEW.
pub const RENEW: &[(&str, GuardKind)] = &[
    ("holds_token", GuardKind::HoldsToken),
    ("unexpired", GuardKind::Unexpired),
];
/// The guards the model evaluates for RELEASE.
pub const RELEASE: &[(&str, GuardKind)] = &[
    ("holds_token", GuardKind::HoldsToken),
    ("held", GuardKind::Held),
];
/// The guards the model evaluates for the fence.
pub const FENCE: &[(&str, GuardKind)] = &[
    ("holds_token", GuardKind::HoldsToken),
    ("unexpired", GuardKind::Unexpired),
];

/// The guards the model evaluates for the four-argument fence.
pub const SHARD_FENCE: &[(&str, GuardKind)] = &[
    ("holds_token", GuardKind::HoldsToken),
    ("unexpired", GuardKind::Unexpired),
    ("shard_count_matches", GuardKind::ShardCountMatches),
];

/// `leader_fence(role, shard_index, shard_count, token)` (the shards migration): true only while
/// `token` holds the shard's row, unexpired, under the same count. Its guards are
/// `leader_core::FENCE_GUARDS`' (the two-argument fence's) and `shard_count = p_shard_count`,
/// named `shard_count_matches` as in ACQUIRE; selecting the shard's row is plumbing. Named
/// `leader_fence` as the two-argument fence is, so that a seeded bug that drops a fence guard
/// drops it from both.
pub const SHARD_FENCE_GUARDS: Guarded = Guarded {
    statement: FENCE_GUARDS.statement,
    sql: FENCE_GUARDS.sql,
    where_after: "CREATE FUNCTION leader_fence(p_role text, p_shard_index integer, \
                  p_shard_count integer,",
    guards: &SHARD_FENCE_LIST,
    plumbing: &["role = p_role", "shard_index = p_shard_index"],
};

const SHARD_FENCE_LIST: [Guard; FENCE_GUARDS.guards.len() + 1] = {
    let mut list = [Guard {
        name: "shard_count_matches",
        sql: "shard_count = p_shard_count",
    }; FENCE_GUARDS.guards.len() + 1];
    let mut i = 0;
    while i < FENCE_GUARDS.guards.len() {
        list[i] = FENCE_GUARDS.guards[i];
        i += 1;
    }
    list
};

/// Every statement's guards, resolved from `leader-core`'s lists.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct Guards {
    /// ACQUIRE's.
    pub acquire: Vec<GuardKind>,
    /// ACQUIRE's takeover's.
    pub takeover: Vec<GuardKind>,
    /// RENEW's.
    pub renew: Vec<GuardKind>,
    /// RELEASE's.
    pub release: Vec<GuardKind>,
    /// The fence's.
    pub fence: Vec<GuardKind>,
    /// The four-argument fence's.
    pub shard_fence: Vec<GuardKind>,
}

/// Whether every guard in `guards` holds for `s`.
pub fn all_hold(guards: &[GuardKind], s: Subject<'_>) -> bool {
    guards.iter().all(|g| g.holds(s))
}

impl Guards {
    /// The guards of `leader-core`'s statements, less the one `config`'s seeded bug drops.
    ///
    /// # Errors
    ///
    /// A sentence naming the list and guard that `leader-core` and the model disagree on.
    pub fn resolve(config: &Config) -> Result<Guards, String> {
        let dropped = config.bug.and_then(|bug| bug.dropped_guard());
        let one = |guarded: &Guarded, modelled: &[(&str, GuardKind)]| {
            let mut kinds = resolve_statement(guarded, modelled)?;
            if let Some((statement, name)) = dropped.filter(|(s, _)| *s == guarded.statement) {
                let kind = lookup(modelled, name).ok_or_else(|| {
                    format!(
                        "the seeded bug drops `{name}` from {statement}, which has no such guard"
                    )
                })?;
                kinds.retain(|k| *k != kind);
            }
            Ok::<_, String>(kinds)
        };
        Ok(Guards {
            acquire: one(&leader_core::lease::ACQUIRE_GUARDS, ACQUIRE)?,
            takeover: one(&leader_core::lease::TAKEOVER_GUARDS, TAKEOVER)?,
            renew: one(&leader_core::lease::RENEW_GUARDS, RENEW)?,
            release: one(&leader_core::lease::RELEASE_GUARDS, RELEASE)?,
            fence: one(&FENCE_GUARDS, FENCE)?,
            shard_fence: one(&SHARD_FENCE_GUARDS, SHARD_FENCE)?,
        })
    }
}

fn lookup(modelled: &[(&str, GuardKind)], name: &str) -> Option<GuardKind> {
    modelled.iter().find(|(n, _)| *n == name).map(|(_, k)| *k)
}

/// The model's guards for `guarded`, in its order, if its list names exactly the guards in
/// `modelled`.
///
/// # Errors
///
/// A sentence naming the first guard that one side has and the other lacks.
pub fn resolve_statement(
    guarded: &Guarded,
    modelled: &[(&str, GuardKind)],
) -> Result<Vec<GuardKind>, String> {
    let statement = guarded.statement;
    let mut kinds = Vec::new();
    for guard in guarded.guards {
        let kind = lookup(modelled, guard.name).ok_or_else(|| {
            format!(
                "leader-core lists guard `{}` ({}) for {statement}, which the model does not \
                 evaluate: add it to GuardKind and to the model's {statement} list in \
                 tools/leader-model/src/guards.rs",
                guard.name, guard.sql
            )
        })?;
        kinds.push(kind);
    }
    if let Some((name, _)) = modelled
        .iter()
        .find(|(name, _)| !guarded.guards.iter().any(|g| g.name == *name))
    {
        return Err(format!(
            "the model evaluates guard `{name}` for {statement}, which leader-core's list no \
             longer has: remove it from the model's {statement} list in tools/leader-model/src/guards.rs"
        ));
    }
    Ok(kinds)
}
