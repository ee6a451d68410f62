//! The protocol's timings and the two inequalities that keep them safe.

use std::time::Duration;

/// How long a lease lasts and how the holder keeps it.
///
/// | timing | default | what it bounds |
/// |---|---|---|
/// | `ttl` | 10 s | a silent holder's lease runs out this long after its last RENEW landed |
/// | `heartbeat` | 3 s | RENEW period while a tick runs |
/// | `statement_timeout` | 2 s | how long RENEW and RELEASE may take |
/// | `abandon_after` | 6 s | with no acknowledged RENEW sent this long ago, the holder cancels its tick and sends nothing more for it |
/// | `max_poll` | 5 s | the longest wait between two ACQUIREs of a follower |
///
/// Two inequalities are enforced wherever a `Timings` is built:
///
/// * `heartbeat < abandon_after`: otherwise a healthy holder abandons before its next beat.
/// * `abandon_after + statement_timeout < ttl`: the holder's last RENEW was sent at most
///   `abandon_after` ago and no statement of the tick starts after that; the lease it extended
///   outlives the moment the holder gives up (plus one statement in flight), so the holder stops
///   before anyone else can be granted the role.
///
/// All values must be at least one millisecond (the statements work in milliseconds).
///
/// # Examples
///
/// Built from named parts; a `const` combination is checked at compile time:
///
/// ```
/// use std::time::Duration;
/// use leader_core::{TimingParts, Timings};
///
/// const FAST: Timings = Timings::new_or_panic(TimingParts {
///     ttl: Duration::from_secs(3),
///     heartbeat: Duration::from_millis(900),
///     statement_timeout: Duration::from_millis(600),
///     abandon_after: Duration::from_millis(1_800),
///     max_poll: Duration::from_millis(1_500),
/// });
/// assert_eq!(FAST.ttl(), Duration::from_secs(3));
/// ```
///
/// ```compile_fail
/// # use std::time::Duration;
/// # use leader_core::{TimingParts, Timings};
/// // abandon (8 s) + statement timeout (2 s) is not below the TTL (10 s): does not compile.
/// const BROKEN: Timings = Timings::new_or_panic(TimingParts {
///     abandon_after: Duration::from_secs(8),
///     ..Timings::DEFAULT.parts()
/// });
/// ```
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub struct Timings {
    ttl: Duration,
    heartbeat: Duration,
    statement_timeout: Duration,
    abandon_after: Duration,
    max_poll: Duration,
}

/// The five timings by name, to build a [`Timings`] with [`Timings::new`] (which checks them).
///
/// Start from [`Timings::DEFAULT`]'s parts and change what you need:
///
/// ```
/// use std::time::Duration;
/// use leader_core::{TimingParts, Timings};
///
/// let timings = Timings::new(TimingParts {
///     max_poll: Duration::from_secs(2),
///     ..Timings::DEFAULT.parts()
/// })?;
/// assert_eq!(timings.max_poll(), Duration::from_secs(2));
/// # Ok::<(), leader_core::TimingsError>(())
/// ```
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub struct TimingParts {
    /// How long a granted or renewed lease lasts.
    pub ttl: Duration,
    /// The RENEW period while a tick runs.
    pub heartbeat: Duration,
    /// The bound on each statement's round trip.
    pub statement_timeout: Duration,
    /// How long after the last acknowledged RENEW was sent the holder gives up its tick.
    pub abandon_after: Duration,
    /// The longest wait between two polls.
    pub max_poll: Duration,
}

/// A [`Timings`] combination that would not be safe, with the rule it breaks.
#[derive(Debug, Clone, Copy, PartialEq, Eq, thiserror::Error)]
#[non_exhaustive]
pub enum TimingsError {
    /// A timing is below one millisecond.
    #[error("timing `{0}` is below 1 ms: the lease statements work in whole milliseconds")]
    TooSmall(&'static str),
    /// `heartbeat >= abandon_after`.
    #[error(
        "heartbeat ({heartbeat:?}) must be shorter than abandon_after ({abandon_after:?}): \
         otherwise a healthy leader gives up before its next RENEW"
    )]
    HeartbeatNotBelowAbandon {
        /// The heartbeat period.
        heartbeat: Duration,
        /// The abandon point.
        abandon_after: Duration,
    },
    /// `abandon_after + statement_timeout >= ttl`.
    #[error(
        "abandon_after ({abandon_after:?}) + statement_timeout ({statement_timeout:?}) must be \
         shorter than the ttl ({ttl:?}): otherwise a leader that lost the database may still be \
         working when its lease is granted to another; raise the ttl or lower the other two"
    )]
    AbandonNotBelowTtl {
        /// The abandon point.
        abandon_after: Duration,
        /// The statement timeout.
        statement_timeout: Duration,
        /// The lease TTL.
        ttl: Duration,
    },
}

impl TimingsError {
    const fn short(&self) -> &'static str {
        match self {
            TimingsError::TooSmall(_) => "every timing must be at least 1 ms",
            TimingsError::HeartbeatNotBelowAbandon { .. } => {
                "heartbeat must be shorter than abandon_after"
            }
            TimingsError::AbandonNotBelowTtl { .. } => {
                "abandon_after + statement_timeout must be shorter than the ttl"
            }
        }
    }
}

const MS: Duration = Duration::from_millis(1);

impl Timings {
    /// The reference values: TTL 10 s, heartbeat 3 s, statement timeout 2 s, abandon after 6 s,
    /// max poll 5 s.
    pub const DEFAULT: Timings = Timings::new_or_panic(TimingParts {
        ttl: Duration::from_secs(10),
        heartbeat: Duration::from_secs(3),
        statement_timeout: Duration::from_secs(2),
        abandon_after: Duration::from_secs(6),
        max_poll: Duration::from_secs(5),
    });

    /// Checks and builds a combination.
    ///
    /// # Errors
    ///
    /// [`TimingsError`] naming the inequality the values break.
    pub const fn new(parts: TimingParts) -> Result<Timings, TimingsError> {
        let TimingParts {
            ttl,
            heartbeat,
            statement_timeout,
            abandon_after,
            max_poll,
        } = parts;
        let named = [
            ("ttl", ttl),
            ("heartbeat", heartbeat),
            ("statement_timeout", statement_timeout),
            ("abandon_after", abandon_after),
            ("max_poll", max_poll),
        ];
        let mut i = 0;
        while i < named.len() {
            if named[i].1.as_nanos() < MS.as_nanos() {
                return Err(TimingsError::TooSmall(named[i].0));
            }
            i += 1;
        }
        if heartbeat.as_nanos() >= abandon_after.as_nanos() {
            return Err(TimingsError::HeartbeatNotBelowAbandon {
                heartbeat,
                abandon_after,
            });
        }
        if abandon_after.as_nanos() + statement_timeout.as_nanos() >= ttl.as_nanos() {
            return Err(TimingsError::AbandonNotBelowTtl {
                abandon_after,
                statement_timeout,
                ttl,
            });
        }
        Ok(Timings {
            ttl,
            heartbeat,
            statement_timeout,
            abandon_after,
            max_poll,
        })
    }

    /// [`Timings::new`], panicking on a combination that breaks a rule: in a `const` item that
    /// panic is a compile error, so an unsafe constant never builds.
    ///
    /// # Panics
    ///
    /// With the broken rule, if the combination is unsafe.
    pub const fn new_or_panic(parts: TimingParts) -> Timings {
        match Timings::new(parts) {
            Ok(timings) => timings,
            Err(err) => panic!("{}", err.short()),
        }
    }

    /// The five timings by name, to change some and build again with [`Timings::new`].
    pub const fn parts(&self) -> TimingParts {
        TimingParts {
            ttl: self.ttl,
            heartbeat: self.heartbeat,
            statement_timeout: self.statement_timeout,
            abandon_after: self.abandon_after,
            max_poll: self.max_poll,
        }
    }

    /// The defaults scaled so the TTL is `ttl` (heartbeat 30 %, statement timeout 20 %, abandon
    /// 60 %, max poll 50 % of it): a quick way to faster failover with the same safety margins.
    ///
    /// # Errors
    ///
    /// [`TimingsError::TooSmall`] if `ttl` is so short a scaled value falls below 1 ms.
    pub const fn scaled_to_ttl(ttl: Duration) -> Result<Timings, TimingsError> {
        let ms = ttl.as_millis() as u64;
        Timings::new(TimingParts {
            ttl: Duration::from_millis(ms),
            heartbeat: Duration::from_millis(ms * 3 / 10),
            statement_timeout: Duration::from_millis(ms * 2 / 10),
            abandon_after: Duration::from_millis(ms * 6 / 10),
            max_poll: Duration::from_millis(ms * 5 / 10),
        })
    }

    /// How long a granted or renewed lease lasts.
    pub const fn ttl(&self) -> Duration {
        self.ttl
    }
    /// The RENEW period while a tick runs.
    pub const fn heartbeat(&self) -> Duration {
        self.heartbeat
    }
    /// The bound on RENEW, RELEASE and ACQUIRE round trips.
    pub const fn statement_timeout(&self) -> Duration {
        self.statement_timeout
    }
    /// How long after the last acknowledged RENEW was sent the holder gives up its tick.
    pub const fn abandon_after(&self) -> Duration {
        self.abandon_after
    }
    /// The longest wait between two polls.
    pub const fn max_poll(&self) -> Duration {
        self.max_poll
    }
}

impl Default for Timings {
    fn default() -> Self {
        Timings::DEFAULT
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    const fn s(secs: u64) -> Duration {
        Duration::from_secs(secs)
    }

    fn timings(
        ttl: Duration,
        hb: Duration,
        st: Duration,
        ab: Duration,
        mp: Duration,
    ) -> Result<Timings, TimingsError> {
        Timings::new(TimingParts {
            ttl,
            heartbeat: hb,
            statement_timeout: st,
            abandon_after: ab,
            max_poll: mp,
        })
    }

    #[test]
    fn defaults_are_the_reference_values() {
        let t = Timings::DEFAULT;
        assert_eq!(
            (
                t.ttl(),
                t.heartbeat(),
                t.statement_timeout(),
                t.abandon_after(),
                t.max_poll()
            ),
            (s(10), s(3), s(2), s(6), s(5))
        );
    }

    #[test]
    fn rejects_abandon_plus_timeout_at_or_above_ttl() {
        let err = timings(s(10), s(3), s(2), s(8), s(5)).unwrap_err();
        assert!(matches!(err, TimingsError::AbandonNotBelowTtl { .. }));
        assert!(err.to_string().contains("raise the ttl"), "{err}");
        assert!(timings(s(10), s(3), s(3), s(7), s(5)).is_err());
    }

    #[test]
    fn rejects_heartbeat_at_or_above_abandon() {
        let err = timings(s(20), s(6), s(2), s(6), s(5)).unwrap_err();
        assert!(matches!(err, TimingsError::HeartbeatNotBelowAbandon { .. }));
    }

    #[test]
    fn rejects_sub_millisecond_values() {
        let err = timings(s(10), s(3), Duration::from_micros(10), s(6), s(5)).unwrap_err();
        assert_eq!(err, TimingsError::TooSmall("statement_timeout"));
    }

    #[test]
    fn scaling_keeps_the_margins() {
        let t = Timings::scaled_to_ttl(s(3)).unwrap();
        assert_eq!(t.heartbeat(), Duration::from_millis(900));
        assert_eq!(
            t.abandon_after() + t.statement_timeout(),
            Duration::from_millis(2400)
        );
    }
}
