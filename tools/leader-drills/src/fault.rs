//! The faults a drill injects, one per run, while the `drill_ledger` role is mid-tick.

use std::fmt;

/// One fault.
#[derive(Debug, Clone, Copy, PartialEq, Eq, PartialOrd, Ord, clap::ValueEnum)]
pub enum Fault {
    /// SIGKILL of the leader.
    Kill,
    /// The leader's link stops forwarding (connections hang, nothing is closed) for 1.5 TTL,
    /// then heals.
    Sever,
    /// SIGSTOP of the leader for 1.5 TTL, then SIGCONT (a GC pause, a frozen VM).
    Freeze,
    /// An operator pauses the role through `psql`, and unpauses it after half a TTL.
    Pause,
    /// SIGTERM of the leader (a rolling deploy): it releases and exits.
    Term,
    /// The server ends the leader's anchor session (`pg_terminate_backend`) while its process
    /// lives on: with `--anchors`, its tick stops at once and another replica may lead.
    AnchorEnd,
    /// `pg_ctl restart -m fast` while ticks run.
    PgRestartFast,
    /// `pg_ctl restart -m immediate` (a crash and recovery) while ticks run.
    PgRestartImmediate,
    /// PgBouncer stopped and started again while ticks run (runs through the pooler).
    PoolerRestart,
    /// Replication to an asynchronous standby (made with `pg_basebackup`) is cut, the primary
    /// grants the ledger again (a grant the standby lacks), the primary crashes, the standby is
    /// promoted, and the pooler (or, direct, every replica's link) is pointed at it.
    Failover,
    /// A fourth replica starts pointed at the standby (through a PgBouncer of its own, or
    /// direct): it must refuse to lead with one log line per role, then lead once that pooler
    /// (or its link) is pointed at the primary.
    ReadOnly,
}

impl Fault {
    /// Every fault, in the order the drill runs them.
    pub const ALL: [Fault; 11] = [
        Fault::Kill,
        Fault::Sever,
        Fault::Freeze,
        Fault::Pause,
        Fault::Term,
        Fault::AnchorEnd,
        Fault::PgRestartFast,
        Fault::PgRestartImmediate,
        Fault::PoolerRestart,
        Fault::Failover,
        Fault::ReadOnly,
    ];

    /// Its name on the command line and in the tables.
    pub fn name(self) -> &'static str {
        match self {
            Fault::Kill => "kill",
            Fault::Sever => "sever",
            Fault::Freeze => "freeze",
            Fault::Pause => "pause",
            Fault::Term => "term",
            Fault::AnchorEnd => "anchor-end",
            Fault::PgRestartFast => "pg-restart-fast",
            Fault::PgRestartImmediate => "pg-restart-immediate",
            Fault::PoolerRestart => "pooler-restart",
            Fault::Failover => "failover",
            Fault::ReadOnly => "read-only",
        }
    }

    /// Whether the fault strikes the leader's process (else the shared database or pooler).
    pub fn strikes_leader(self) -> bool {
        matches!(
            self,
            Fault::Kill
                | Fault::Sever
                | Fault::Freeze
                | Fault::Pause
                | Fault::Term
                | Fault::AnchorEnd
        )
    }

    /// Whether the fault only makes sense through the pooler.
    pub fn needs_pooler(self) -> bool {
        self == Fault::PoolerRestart
    }

    /// Whether the fault needs the replicas to run with anchors (`--anchors`).
    pub fn needs_anchors(self) -> bool {
        self == Fault::AnchorEnd
    }

    /// Whether the fault ends every session on the server, and so every anchor: a restart of
    /// PostgreSQL or a failover to its standby.
    pub fn ends_every_session(self) -> bool {
        matches!(
            self,
            Fault::PgRestartFast | Fault::PgRestartImmediate | Fault::Failover
        )
    }

    /// Whether the run needs a standby.
    pub fn needs_standby(self) -> bool {
        matches!(self, Fault::Failover | Fault::ReadOnly)
    }

    /// What the outage figure measures, on the database clock.
    pub fn outage_means(self) -> &'static str {
        match self {
            Fault::Pause => "unpause → first claim under a newer token",
            Fault::PgRestartFast | Fault::PgRestartImmediate | Fault::PoolerRestart => {
                "last claim before the restart → first claim after it is back"
            }
            Fault::Failover => {
                "last claim on the old primary → first claim on the promoted standby"
            }
            Fault::ReadOnly => {
                "its pooler or link re-pointed at the primary → the refused replica's first grant"
            }
            _ => "old leader's last claim → first claim under a newer token",
        }
    }
}

impl fmt::Display for Fault {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.write_str(self.name())
    }
}
