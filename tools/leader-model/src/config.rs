//! What one check explores: the timings in ticks, the bounds, the faults, and a seeded bug.

use std::fmt;
use std::time::Duration;

/// A moment on the database clock, or on a replica's clock, in ticks.
pub type Time = u8;

/// The protocol's timings in ticks of the database clock.
///
/// The same names and rules as [`leader_core::Timings`]; `interval` is the role's tick interval
/// (the cooldown after a tick that did not complete, and the spacing of completed ticks).
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub struct Timings {
    /// How long a granted or renewed lease lasts.
    pub ttl: Time,
    /// The RENEW period while a tick runs.
    pub heartbeat: Time,
    /// How long a caller waits for a statement's answer.
    pub statement_timeout: Time,
    /// How long after the send of the last acknowledged RENEW (or of the ACQUIRE) a holder gives
    /// up its tick.
    pub abandon_after: Time,
    /// The role's tick interval.
    pub interval: Time,
}

impl Timings {
    /// The timings the correct model is checked with: ttl 4, heartbeat 1, statement timeout 1,
    /// abandon after 2, interval 2. `abandon_after + statement_timeout = 3 < 4`, with one tick to
    /// spare, which covers a replica clock that loses at most one tick in any four.
    pub const CHECKED: Timings = Timings {
        ttl: 4,
        heartbeat: 1,
        statement_timeout: 1,
        abandon_after: 2,
        interval: 2,
    };

    /// Timings under which a RENEW's answer can arrive a tick after its send and still before the
    /// abandon point (with [`Timings::CHECKED`] it cannot): ttl 5, heartbeat 1, statement timeout 1,
    /// abandon after 3, interval 2. The margin, one tick, covers a clock that loses one in five.
    pub const LATE_ANSWERS: Timings = Timings {
        ttl: 5,
        heartbeat: 1,
        statement_timeout: 1,
        abandon_after: 3,
        interval: 2,
    };

    /// The same values as a [`leader_core::Timings`] with one tick as one second, so that the
    /// code's own validation judges them (`max_poll` is not modelled: followers poll at any time).
    ///
    /// # Errors
    ///
    /// The rule the code enforces that these timings break.
    pub fn as_code_timings(&self) -> Result<leader_core::Timings, leader_core::TimingsError> {
        let s = |t: Time| Duration::from_secs(u64::from(t));
        leader_core::Timings::new(leader_core::TimingParts {
            ttl: s(self.ttl),
            heartbeat: s(self.heartbeat),
            statement_timeout: s(self.statement_timeout),
            abandon_after: s(self.abandon_after),
            max_poll: s(self.ttl),
        })
    }
}

/// A protocol bug seeded into the model. Each must produce a counterexample to the property
/// [`Bug::breaks`] names.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Hash)]
pub enum Bug {
    /// RENEW without `holder_token = :token`: any live lease is extended for anyone.
    RenewWithoutTokenCheck,
    /// `leader_fence` without `expires_at > statement_timestamp()`.
    FenceWithoutExpiry,
    /// The heartbeat counts `abandon_after` from the RENEW's answer instead of its send
    /// (`heartbeat.rs` rule 2 broken).
    AbandonFromAnswer,
    /// RELEASE stamps a panicked tick as completed.
    ReleaseStampsPanicked,
    /// ACQUIRE without `not_before <= now()`.
    AcquireIgnoresNotBefore,
    /// ACQUIRE without `instant_not_completed`: a calendar role is granted an instant already
    /// completed.
    GrantsCompletedInstant,
    /// ACQUIRE issues `holder_token + 1`, without the clock term, across a failover that lost the
    /// last grant.
    TokenPlusOne,
    /// `abandon_after + statement_timeout >= ttl` (ttl 3 with abandon 2 and timeout 1).
    AbandonPlusTimeoutNotBelowTtl,
    /// `leader_pause` without `not_before = greatest(not_before, expires_at)`: after an unpause,
    /// ACQUIRE may grant while the paused holder still works by its own clock.
    PauseWithoutFloor,
    /// A claim filtered by the next shard's index: one of the job's claims proves the lease of
    /// shard `s` (`leader_fence(role, s, count, token)`) but selects the keys of shard
    /// `s + 1 mod count` (`leader_shard_of(key, count) = s + 1`), which that shard's holder claims
    /// too. (Were every claim filtered so, each key would still have one holder at a time.)
    ClaimFiltersAnotherShard,
    /// ACQUIRE takes over a live lease that has an anchor recorded without checking that the
    /// anchor session has ended (`holder_anchor_pid IS NOT NULL` in place of "no live session has
    /// the recorded identity").
    TakeoverWithoutAnchorCheck,
    /// A holder that learns its anchor ended re-anchors but keeps running its tick instead of
    /// cancelling it.
    WorksOnAfterAnchorLost,
    /// The anchor's identity is its `pg_backend_pid()` alone, without `backend_start`: a later
    /// session given the same pid passes for the ended one.
    AnchorWithoutBackendStart,
}

impl Bug {
    /// Every seeded bug.
    pub const ALL: [Bug; 13] = [
        Bug::RenewWithoutTokenCheck,
        Bug::FenceWithoutExpiry,
        Bug::AbandonFromAnswer,
        Bug::ReleaseStampsPanicked,
        Bug::AcquireIgnoresNotBefore,
        Bug::TokenPlusOne,
        Bug::AbandonPlusTimeoutNotBelowTtl,
        Bug::PauseWithoutFloor,
        Bug::GrantsCompletedInstant,
        Bug::ClaimFiltersAnotherShard,
        Bug::TakeoverWithoutAnchorCheck,
        Bug::WorksOnAfterAnchorLost,
        Bug::AnchorWithoutBackendStart,
    ];

    /// The name used on the command line.
    pub const fn name(self) -> &'static str {
        match self {
            Bug::RenewWithoutTokenCheck => "renew-without-token-check",
            Bug::FenceWithoutExpiry => "fence-without-expiry",
            Bug::AbandonFromAnswer => "abandon-from-answer",
            Bug::ReleaseStampsPanicked => "release-stamps-panicked",
            Bug::AcquireIgnoresNotBefore => "acquire-ignores-not-before",
            Bug::TokenPlusOne => "token-plus-one",
            Bug::AbandonPlusTimeoutNotBelowTtl => "abandon-plus-timeout-not-below-ttl",
            Bug::PauseWithoutFloor => "pause-without-floor",
            Bug::GrantsCompletedInstant => "grants-completed-instant",
            Bug::ClaimFiltersAnotherShard => "claim-filters-another-shard",
            Bug::TakeoverWithoutAnchorCheck => "takeover-without-anchor-check",
            Bug::WorksOnAfterAnchorLost => "works-on-after-anchor-lost",
            Bug::AnchorWithoutBackendStart => "anchor-without-backend-start",
        }
    }

    /// The bug named `name` on the command line.
    pub fn from_name(name: &str) -> Option<Bug> {
        Bug::ALL.into_iter().find(|bug| bug.name() == name)
    }

    /// The check in which this bug must show: the faults it needs to do harm.
    pub const fn scenario(self) -> Config {
        let mut sharded_without_faults = Config::sharded(2);
        sharded_without_faults.freezes = 0;
        sharded_without_faults.failovers = 0;
        match self {
            Bug::AbandonFromAnswer => Config::late_answers(2),
            Bug::AbandonPlusTimeoutNotBelowTtl => Config::clocks_and_delays(2),
            Bug::GrantsCompletedInstant => Config::scheduled(2),
            Bug::ClaimFiltersAnotherShard => sharded_without_faults,
            Bug::TakeoverWithoutAnchorCheck
            | Bug::WorksOnAfterAnchorLost
            | Bug::AnchorWithoutBackendStart => Config::dead_holders(2),
            _ => Config::operator_and_failover(2),
        }
        .with_bug(self)
    }

    /// The safety property this bug must break.
    pub const fn breaks(self) -> &'static str {
        use crate::properties as p;
        match self {
            Bug::RenewWithoutTokenCheck => p::OWN_CLOCK_EXCLUSIVE,
            Bug::FenceWithoutExpiry => p::CLAIMS_INSIDE_LEASE,
            Bug::AbandonFromAnswer => p::OWN_CLOCK_EXCLUSIVE,
            Bug::ReleaseStampsPanicked => p::STAMPED_ONLY_IF_COMPLETED,
            Bug::AcquireIgnoresNotBefore => p::COOLDOWN_RESPECTED,
            Bug::TokenPlusOne => p::TOKENS_NEVER_REISSUED,
            Bug::AbandonPlusTimeoutNotBelowTtl => p::OWN_CLOCK_EXCLUSIVE,
            Bug::PauseWithoutFloor => p::OWN_CLOCK_EXCLUSIVE,
            Bug::GrantsCompletedInstant => p::INSTANT_ONCE,
            Bug::ClaimFiltersAnotherShard => p::KEY_CLAIMED_ONCE,
            Bug::TakeoverWithoutAnchorCheck => p::OWN_CLOCK_EXCLUSIVE,
            Bug::WorksOnAfterAnchorLost => p::OWN_CLOCK_EXCLUSIVE,
            Bug::AnchorWithoutBackendStart => p::TAKEOVER_AT_FIRST_ASK,
        }
    }

    /// The guard this bug removes from a statement's list, as (statement, guard name).
    pub const fn dropped_guard(self) -> Option<(&'static str, &'static str)> {
        match self {
            Bug::RenewWithoutTokenCheck => Some(("RENEW", "holds_token")),
            Bug::FenceWithoutExpiry => Some(("leader_fence", "unexpired")),
            Bug::AcquireIgnoresNotBefore => Some(("ACQUIRE", "past_not_before")),
            Bug::GrantsCompletedInstant => Some(("ACQUIRE", "instant_not_completed")),
            _ => None,
        }
    }
}

impl fmt::Display for Bug {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.write_str(self.name())
    }
}

/// One check: how many replicas, for how long, with which faults, and which bug if any.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub struct Config {
    /// Replicas running the loop (2 or 3).
    pub replicas: u8,
    /// The timings, in ticks.
    pub timings: Timings,
    /// The database clock runs from 1 to this.
    pub horizon: Time,
    /// A replica's clock may lose one tick against the database clock (or gain one, with
    /// `fast_clocks`) at most once in this many ticks (`None`: clocks run at the database's rate).
    pub clock_drift_every: Option<Time>,
    /// Whether a drifting clock may also run fast. A fast clock only makes a holder give up, time
    /// out and renew sooner; the slow direction is the one the timing margin must cover.
    pub fast_clocks: bool,
    /// Freezes of a replica (it takes no step; its clock runs on) in one run.
    pub freezes: u8,
    /// Statements (of any replica, claims included) that are delayed in one run: each runs on the
    /// server at any later time or never, and its answer may come after its caller gave up.
    /// Every other statement runs and answers in one step.
    pub delays: u8,
    /// Failovers to a standby that lacks the last grant, in one run.
    pub failovers: u8,
    /// Whether an operator pauses the role once and unpauses it once.
    pub pause: bool,
    /// Ticks whose work may end by the runtime's shutdown (released with no cooldown), in one
    /// run. Each lets a role be granted again at once, so the state space grows fast with it.
    pub shutdowns: u8,
    /// A calendar schedule: the role's instants are every this many ticks (`None`: an interval
    /// role). Each ACQUIRE asks for any instant up to one period ahead of the database clock, not
    /// only the one the runtime would plan, so the guard is checked against stale and wrong plans.
    pub schedule: Option<Time>,
    /// The role's shards, 1 to [`MAX_SHARDS`](crate::state::MAX_SHARDS): each is its own lease
    /// row, granted, renewed, released and fenced on its own (1: an unsharded role, the one row
    /// `(role, 0)`).
    pub shards: u8,
    /// Work keys `0..keys`, at most [`MAX_KEYS`](crate::state::MAX_KEYS), key `k` in shard
    /// `k mod shards`, which claims take and the property
    /// [`KEY_CLAIMED_ONCE`](crate::properties::KEY_CLAIMED_ONCE) watches (0: claims take none).
    pub keys: u8,
    /// Whether each replica holds an anchor session (`crate::anchor`), records its identity
    /// with each lease it is granted, and ACQUIRE takes over a live lease whose holder's anchor
    /// has ended. Without anchors no row records one, and only expiry frees a lease.
    pub anchors: bool,
    /// Crashes in one run: a replica's process dies (SIGKILL) and its anchor with it; it takes
    /// no step again, but what it sent may still run.
    pub crashes: u8,
    /// Anchors lost in one run while their process lives (a network blip the server noticed,
    /// `pg_terminate_backend`): the replica learns of it at any later moment.
    pub anchor_losses: u8,
    /// The seeded bug, if any.
    pub bug: Option<Bug>,
}

impl Config {
    /// The correct protocol under the operator and database faults: an operator pause and
    /// unpause, a failover that loses the last grant, one frozen replica and one delayed (or lost)
    /// statement, database-rate clocks. Horizon 6 ticks.
    pub const fn operator_and_failover(replicas: u8) -> Config {
        Config {
            replicas,
            timings: Timings::CHECKED,
            horizon: 6,
            clock_drift_every: None,
            fast_clocks: false,
            freezes: 1,
            delays: 1,
            failovers: 1,
            pause: true,
            shutdowns: 0,
            schedule: None,
            shards: 1,
            keys: 0,
            anchors: false,
            crashes: 0,
            anchor_losses: 0,
            bug: None,
        }
    }

    /// The correct protocol under the timing faults: replica clocks that lose or gain up to one
    /// tick in four, one frozen replica and two delayed (or lost) statements. Horizon 6 ticks.
    pub const fn clocks_and_delays(replicas: u8) -> Config {
        Config {
            replicas,
            timings: Timings::CHECKED,
            horizon: 6,
            clock_drift_every: Some(4),
            fast_clocks: true,
            freezes: 1,
            delays: 2,
            failovers: 0,
            pause: false,
            shutdowns: 0,
            schedule: None,
            shards: 1,
            keys: 0,
            anchors: false,
            crashes: 0,
            anchor_losses: 0,
            bug: None,
        }
    }

    /// The correct protocol with [`Timings::LATE_ANSWERS`], so that delayed RENEWs can be
    /// acknowledged late: replica clocks that lose up to one tick in five, one frozen replica and
    /// two delayed (or lost) statements. Horizon 7 ticks.
    pub const fn late_answers(replicas: u8) -> Config {
        Config {
            replicas,
            timings: Timings::LATE_ANSWERS,
            horizon: 7,
            clock_drift_every: Some(5),
            fast_clocks: false,
            freezes: 1,
            delays: 2,
            failovers: 0,
            pause: false,
            shutdowns: 0,
            schedule: None,
            shards: 1,
            keys: 0,
            anchors: false,
            crashes: 0,
            anchor_losses: 0,
            bug: None,
        }
    }

    /// Every fault at once: pause and unpause, a failover, slow clocks, one frozen replica and
    /// one delayed (or lost) statement. Horizon 6 ticks. (Fast clocks too take 9.4 million states
    /// and half a minute; `clocks_and_delays` checks them.)
    pub const fn all_faults(replicas: u8) -> Config {
        let mut config = Config::operator_and_failover(replicas);
        config.clock_drift_every = Some(4);
        config
    }

    /// A calendar role with instants every 2 ticks, under an operator pause and unpause, one
    /// frozen replica, one delayed (or lost) statement and one shutdown release (which leaves its
    /// instant due), database-rate clocks. Horizon 6 ticks.
    pub const fn scheduled(replicas: u8) -> Config {
        Config {
            replicas,
            timings: Timings::CHECKED,
            horizon: 6,
            clock_drift_every: None,
            fast_clocks: false,
            freezes: 1,
            delays: 1,
            failovers: 0,
            pause: true,
            shutdowns: 1,
            schedule: Some(2),
            shards: 1,
            keys: 0,
            anchors: false,
            crashes: 0,
            anchor_losses: 0,
            bug: None,
        }
    }

    /// A role in 2 shards with 4 keys (2 in each), under a failover that loses the last grant (of
    /// either shard) and one frozen replica, database-rate clocks. Horizon 5 ticks: two rows
    /// square what one row's faults cost, and 5 ticks already hold a takeover of a shard. The
    /// tests also check it with a pause instead of the failover, and with one delayed (or lost)
    /// statement instead of both faults.
    pub const fn sharded(replicas: u8) -> Config {
        Config {
            replicas,
            timings: Timings::CHECKED,
            horizon: 5,
            clock_drift_every: None,
            fast_clocks: false,
            freezes: 1,
            delays: 0,
            failovers: 1,
            pause: false,
            shutdowns: 0,
            schedule: None,
            shards: 2,
            keys: 4,
            anchors: false,
            crashes: 0,
            anchor_losses: 0,
            bug: None,
        }
    }

    /// Dead holders and their takeover (issue 33): anchors, one crash (process and anchor die
    /// together), one anchor lost while its process lives, one frozen replica and one delayed (or
    /// lost) statement, database-rate clocks. Horizon 6 ticks. (With a failover too, which ends
    /// every anchor, it takes 3 minutes; the tests check the failover without the delay.)
    pub const fn dead_holders(replicas: u8) -> Config {
        let mut config = Config::operator_and_failover(replicas);
        config.pause = false;
        config.failovers = 0;
        config.anchors = true;
        config.crashes = 1;
        config.anchor_losses = 1;
        config
    }

    /// The same check with `bug` seeded (and, for the timing bug, a ttl of 3).
    pub const fn with_bug(self, bug: Bug) -> Config {
        let mut config = self;
        config.bug = Some(bug);
        if let Bug::AbandonPlusTimeoutNotBelowTtl = bug {
            config.timings.ttl = config.timings.abandon_after + config.timings.statement_timeout;
        }
        config
    }

    /// True when the seeded bug is `bug`.
    pub fn has(&self, bug: Bug) -> bool {
        self.bug == Some(bug)
    }
}
