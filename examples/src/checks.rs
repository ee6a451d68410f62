//! The demo's closing checks: each is a query whose answer must be zero.

use sqlx::{PgPool, Row};

/// One check and what it found.
#[derive(Debug, Clone)]
pub struct Check {
    pub name: &'static str,
    pub violations: i64,
}

impl Check {
    pub fn passed(&self) -> bool {
        self.violations == 0
    }
}

/// Each check: a name and a query counting the rows that break it.
pub const CHECKS: &[(&str, &str)] = &[
    (
        "every subscription billed once per period (invoices chain without gap or overlap up to the watermark)",
        "SELECT count(*) FROM (
             SELECT i.period_end, lead(i.period_start) OVER w AS next_start,
                    row_number() OVER w = count(*) OVER (PARTITION BY i.subscription_id) AS last,
                    s.billed_until
               FROM invoices i JOIN subscriptions s ON s.id = i.subscription_id
             WINDOW w AS (PARTITION BY i.subscription_id ORDER BY i.period_start)
         ) t
         WHERE (NOT last AND period_end <> next_start) OR (last AND period_end <> billed_until)",
    ),
    (
        "every period that ended before the billing cutoff was billed",
        "SELECT CASE WHEN NOT EXISTS (SELECT 1 FROM billing_cutoff) THEN 1
                     ELSE (SELECT count(*) FROM subscriptions s, billing_cutoff c
                            WHERE s.billed_until + s.period_secs * interval '1 second' <= c.cutoff)
                END",
    ),
    (
        "every webhook outbox row dispatched, exactly once",
        "SELECT count(*) FROM webhook_outbox o
          WHERE o.dispatched_at IS NULL
             OR (SELECT count(*) FROM webhook_deliveries d WHERE d.outbox_id = o.id) <> 1",
    ),
    (
        "every email sent, exactly once",
        "SELECT count(*) FROM email_outbox e
          WHERE e.sent_at IS NULL
             OR (SELECT count(*) FROM effects f WHERE f.kind = 'email' AND f.key = e.id::text) <> 1",
    ),
    (
        "each webhook delivery attempted once per retry",
        "SELECT count(*) FROM webhook_deliveries d
          WHERE (SELECT count(*) FROM effects f
                  WHERE f.kind = 'delivery' AND f.key LIKE d.id || ':%') <> d.attempt
             OR (SELECT count(DISTINCT f.key) FROM effects f
                  WHERE f.kind = 'delivery' AND f.key LIKE d.id || ':%') <> d.attempt",
    ),
    (
        "each dunning charge attempted once per recorded attempt",
        "SELECT count(*) FROM dunning_runs r
          WHERE (SELECT count(*) FROM effects f
                  WHERE f.kind = 'charge' AND f.key LIKE r.id || ':%') <> r.attempt_count
             OR (SELECT count(DISTINCT f.key) FROM effects f
                  WHERE f.kind = 'charge' AND f.key LIKE r.id || ':%') <> r.attempt_count",
    ),
    (
        "no claim returned rows to a superseded token",
        "SELECT count(*) FROM claims c
          WHERE EXISTS (SELECT 1 FROM grants g
                         WHERE g.role = c.role AND g.token > c.token AND g.granted_at <= c.claimed_at)",
    ),
];

/// Runs every check. (`AssertSqlSafe`: the queries are the constants above.)
pub async fn run_checks(pool: &PgPool) -> sqlx::Result<Vec<Check>> {
    let mut results = Vec::new();
    for (name, sql) in CHECKS {
        let violations: i64 = sqlx::raw_sql(sqlx::AssertSqlSafe(*sql))
            .fetch_one(pool)
            .await?
            .try_get(0)?;
        results.push(Check { name, violations });
    }
    Ok(results)
}
