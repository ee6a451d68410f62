//! The closing checks, shared by the demo's summary and the fault drills (`tools/leader-drills/`): each is a
//! query over the application's tables and the audit trail ([`crate::audit`]) counting the rows
//! that break it, and each is either about **safety** (something happened twice, or out of turn)
//! or **liveness** (something was left undone). Both kinds fail the demo's exit code; they are
//! reported apart so a run that merely stopped early is not mistaken for a duplicate.

use sqlx::{PgPool, Row};

/// What a check is about.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum Kind {
    /// Nothing done twice, out of turn, or claimed done when it was not.
    Safety,
    /// Everything due was done by the end.
    Liveness,
}

impl Kind {
    pub fn as_str(self) -> &'static str {
        match self {
            Kind::Safety => "safety",
            Kind::Liveness => "liveness",
        }
    }
}

/// A check: what it says, its kind, and a query counting the rows that break it.
#[derive(Debug, Clone, Copy)]
pub struct CheckDef {
    pub name: &'static str,
    pub kind: Kind,
    pub sql: &'static str,
}

/// One check and what it found.
#[derive(Debug, Clone)]
pub struct Check {
    pub name: &'static str,
    pub kind: Kind,
    pub violations: i64,
}

impl Check {
    pub fn passed(&self) -> bool {
        self.violations == 0
    }
}

/// Every check's result.
#[derive(Debug, Clone, Default)]
pub struct Report {
    pub checks: Vec<Check>,
}

impl Report {
    /// True when no check of `kind` found a violation.
    pub fn passed(&self, kind: Kind) -> bool {
        self.checks
            .iter()
            .filter(|c| c.kind == kind)
            .all(Check::passed)
    }

    /// True when every check passed.
    pub fn all_passed(&self) -> bool {
        self.checks.iter().all(Check::passed)
    }

    /// One line per check, safety first, marked `ok` or `FAIL`.
    pub fn lines(&self) -> Vec<String> {
        [Kind::Safety, Kind::Liveness]
            .into_iter()
            .flat_map(|kind| self.checks.iter().filter(move |c| c.kind == kind))
            .map(|c| {
                format!(
                    "[{}] {:<8} {} ({} violations)",
                    if c.passed() { "ok  " } else { "FAIL" },
                    c.kind.as_str(),
                    c.name,
                    c.violations
                )
            })
            .collect()
    }
}

/// The billing service's checks.
pub const CHECKS: &[CheckDef] = &[
    CheckDef {
        name: "no period billed twice or skipped (invoices chain without gap or overlap up to the watermark)",
        kind: Kind::Safety,
        sql: "SELECT count(*) FROM (
                  SELECT i.period_end, lead(i.period_start) OVER w AS next_start,
                         row_number() OVER w = count(*) OVER (PARTITION BY i.subscription_id) AS last,
                         s.billed_until
                    FROM invoices i JOIN subscriptions s ON s.id = i.subscription_id
                  WINDOW w AS (PARTITION BY i.subscription_id ORDER BY i.period_start)
              ) t
              WHERE (NOT last AND period_end <> next_start) OR (last AND period_end <> billed_until)",
    },
    CheckDef {
        name: "no webhook outbox row dispatched twice, or stamped dispatched without its delivery",
        kind: Kind::Safety,
        sql: "SELECT count(*) FROM webhook_outbox o
               WHERE (SELECT count(*) FROM webhook_deliveries d WHERE d.outbox_id = o.id)
                     <> CASE WHEN o.dispatched_at IS NULL THEN 0 ELSE 1 END",
    },
    CheckDef {
        name: "no email stamped sent that the provider never received (lost)",
        kind: Kind::Safety,
        sql: "SELECT count(*) FROM email_outbox e
               WHERE e.sent_at IS NOT NULL
                 AND NOT EXISTS (SELECT 1 FROM mailbox m WHERE m.email_id = e.id)",
    },
    CheckDef {
        name: "every repeated send of an email carries the key of its first send, and no two emails share a key",
        kind: Kind::Safety,
        sql: "SELECT (SELECT count(*) FROM (SELECT email_id FROM mailbox GROUP BY email_id
                                           HAVING count(DISTINCT idempotency_key) > 1) t)
                   + (SELECT count(*) FROM (SELECT idempotency_key FROM mailbox GROUP BY idempotency_key
                                           HAVING count(DISTINCT email_id) > 1) t)",
    },
    CheckDef {
        name: "each webhook delivery attempted once per recorded retry",
        kind: Kind::Safety,
        sql: "SELECT count(*) FROM webhook_deliveries d
               WHERE (SELECT count(*) FROM effects f
                       WHERE f.kind = 'delivery' AND f.key LIKE d.id || ':%') <> d.attempt
                  OR (SELECT count(DISTINCT f.key) FROM effects f
                       WHERE f.kind = 'delivery' AND f.key LIKE d.id || ':%') <> d.attempt",
    },
    CheckDef {
        name: "each dunning charge attempted once per recorded attempt",
        kind: Kind::Safety,
        sql: "SELECT count(*) FROM dunning_runs r
               WHERE (SELECT count(*) FROM effects f
                       WHERE f.kind = 'charge' AND f.key LIKE r.id || ':%') <> r.attempt_count
                  OR (SELECT count(DISTINCT f.key) FROM effects f
                       WHERE f.kind = 'charge' AND f.key LIKE r.id || ':%') <> r.attempt_count",
    },
    CheckDef {
        name: "no claim returned rows to a token after a newer token of its shard was granted",
        kind: Kind::Safety,
        sql: "SELECT count(*) FROM claims c
               WHERE EXISTS (SELECT 1 FROM grants g
                              WHERE g.role = c.role AND g.shard_index = c.shard_index
                                AND g.token > c.token AND g.granted_at <= c.claimed_at)",
    },
    CheckDef {
        name: "no two holders' claims of a role's shard interleave on the database clock",
        kind: Kind::Safety,
        sql: "SELECT count(*) FROM (
                  SELECT token, max(token) OVER (PARTITION BY role, shard_index
                                                 ORDER BY claimed_at, id
                                                 ROWS UNBOUNDED PRECEDING) AS highest
                    FROM claims
              ) t
              WHERE token < highest",
    },
    CheckDef {
        name: "tokens only grow: each grant's token exceeds every earlier grant's of its shard",
        kind: Kind::Safety,
        sql: "SELECT count(*) FROM (
                  SELECT token, max(token) OVER (PARTITION BY role, shard_index
                                                 ORDER BY granted_at, id
                                                 ROWS BETWEEN UNBOUNDED PRECEDING AND 1 PRECEDING)
                             AS earlier
                    FROM grants
              ) t
              WHERE token <= earlier",
    },
    CheckDef {
        name: "a shard's claims returned only its shard's rows",
        kind: Kind::Safety,
        sql: "SELECT count(*) FROM claims c, unnest(c.row_ids) AS claimed(id)
               WHERE c.shard_count > 1 AND leader_shard_of(claimed.id, c.shard_count) <> c.shard_index",
    },
    CheckDef {
        name: "no tick stamped completed that did not complete",
        kind: Kind::Safety,
        sql: "SELECT count(*) FROM lease_stamps s
               WHERE NOT EXISTS (SELECT 1 FROM completions c
                                  WHERE c.role = s.role AND c.token = s.token)",
    },
    CheckDef {
        name: "no scheduled billing instant completed twice, or granted before it was due",
        kind: Kind::Safety,
        sql: "SELECT (SELECT count(*) FROM (SELECT instant FROM instant_stamps
                                            GROUP BY role, instant HAVING count(*) > 1) t)
                   + (SELECT count(*) FROM instant_stamps WHERE granted_at < instant)",
    },
    CheckDef {
        name: "no scheduled billing instant skipped (missed = each runs every one, in order)",
        kind: Kind::Safety,
        sql: "SELECT count(*) FROM (
                  SELECT instant, lead(instant) OVER (PARTITION BY role ORDER BY instant) AS next
                    FROM (SELECT DISTINCT role, instant FROM instant_stamps) d
              ) t
              WHERE next - instant <> interval '1 second'",
    },
    CheckDef {
        name: "every period that ended before the billing cutoff was billed",
        kind: Kind::Liveness,
        sql: "SELECT CASE WHEN NOT EXISTS (SELECT 1 FROM billing_cutoff) THEN 1
                          ELSE (SELECT count(*) FROM subscriptions s, billing_cutoff c
                                 WHERE s.billed_until + s.period_secs * interval '1 second'
                                       <= c.cutoff)
                     END",
    },
    CheckDef {
        name: "every webhook outbox row dispatched",
        kind: Kind::Liveness,
        sql: "SELECT count(*) FROM webhook_outbox WHERE dispatched_at IS NULL",
    },
    CheckDef {
        name: "every email received by the provider and stamped sent",
        kind: Kind::Liveness,
        sql: "SELECT count(*) FROM email_outbox e
               WHERE e.sent_at IS NULL
                  OR NOT EXISTS (SELECT 1 FROM mailbox m WHERE m.email_id = e.id)",
    },
    CheckDef {
        name: "every webhook delivery delivered or given up",
        kind: Kind::Liveness,
        sql: "SELECT count(*) FROM webhook_deliveries WHERE status = 'pending'",
    },
];

/// Runs `checks` (for the billing service: [`CHECKS`]). (`AssertSqlSafe`: the queries are
/// constants.)
pub async fn run_checks(pool: &PgPool, checks: &[CheckDef]) -> sqlx::Result<Report> {
    let mut report = Report::default();
    for check in checks {
        let violations: i64 = sqlx::raw_sql(sqlx::AssertSqlSafe(check.sql))
            .fetch_one(pool)
            .await?
            .try_get(0)?;
        report.checks.push(Check {
            name: check.name,
            kind: check.kind,
            violations,
        });
    }
    Ok(report)
}
