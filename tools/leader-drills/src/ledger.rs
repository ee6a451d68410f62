//! `drill_ledger`, the drill's long-tick role: each tick works through an endless ledger one item
//! at a time for several heartbeats, so a fault injected at a random moment lands mid-tick. Its
//! items are claimed through a `#[fenced]` funnel and completed by compare-and-set with their
//! effect, as the reference application's queues are.
//!
//! Work comes in units of [`UNIT`] items and cancellation is checked only between units, as in a
//! job whose steps cannot stop halfway: after a freeze the job goes on claiming for the rest of
//! its unit, so it is the fence, not the runtime's cancellation, that keeps a superseded leader
//! from claiming (and the seeded-bug drill, with the fence replaced by `true`, catches it).

use std::time::Duration;

use billing_demo::audit::{Audit, Claimed};
use leader_runtime::{Fence, JobError, Role, TickContext, fenced};
use sqlx::PgPool;

/// The role.
pub const LEDGER: Role = Role::from_static("drill_ledger");
/// How often the role is due (it is led almost all the time).
pub const EVERY: Duration = Duration::from_millis(100);
/// Items per unit of work.
pub const UNIT: usize = 20;
/// The time one item takes (a stand-in for a call to the outside world).
pub const STEP: Duration = Duration::from_millis(40);

/// Adds `drill_ledger` to the reference application's database: the role (in the role CHECK,
/// with a seeded row), its work table, and the harness's fault log.
pub const SETUP_SQL: &str = "
ALTER TABLE leader_leases DROP CONSTRAINT leader_leases_role_registered;
ALTER TABLE leader_leases ADD CONSTRAINT leader_leases_role_registered
    CHECK (role IN ('billing', 'dunning', 'webhook_outbox', 'email_outbox', 'webhook_delivery',
                    'drill_ledger'));
INSERT INTO leader_leases (role, holder_token) VALUES ('drill_ledger', leader_seed_token());
CREATE TABLE drill_work (
    id            bigserial   PRIMARY KEY,
    claimed_token bigint,
    done_at       timestamptz
);
INSERT INTO drill_work (claimed_token) SELECT NULL FROM generate_series(1, 50000);
CREATE TABLE drill_faults (
    id   bigserial   PRIMARY KEY,
    what text        NOT NULL,
    at   timestamptz NOT NULL DEFAULT clock_timestamp()
);
-- Every lease ended before its expiry while held (ACQUIRE's takeover of a dead holder sets the
-- expiry to its own clock, holder and token unchanged), with whether the server still had the
-- holder's anchor session at that moment: read in the ending statement's own transaction, as
-- ACQUIRE reads it, but by this trigger's own query.
CREATE TABLE drill_early_ends (
    id               bigserial   PRIMARY KEY,
    role             text        NOT NULL,
    shard_index      integer     NOT NULL,
    token            bigint      NOT NULL,
    old_anchor_alive boolean     NOT NULL,
    at               timestamptz NOT NULL DEFAULT clock_timestamp()
);
CREATE FUNCTION drill_record_early_end() RETURNS trigger LANGUAGE plpgsql AS $$
BEGIN
    IF OLD.holder_id IS NOT NULL AND NEW.holder_id IS NOT DISTINCT FROM OLD.holder_id
       AND NEW.holder_token = OLD.holder_token
       AND OLD.expires_at > now() AND NEW.expires_at <= now() THEN
        INSERT INTO drill_early_ends (role, shard_index, token, old_anchor_alive)
        VALUES (OLD.role, OLD.shard_index, OLD.holder_token,
                OLD.holder_anchor_pid IS NULL
                OR EXISTS (SELECT 1 FROM pg_stat_activity a
                            WHERE a.pid = OLD.holder_anchor_pid
                              AND a.backend_start = OLD.holder_anchor_start));
    END IF;
    RETURN NEW;
END
$$;
CREATE TRIGGER drill_record_early_end AFTER UPDATE ON leader_leases
    FOR EACH ROW EXECUTE FUNCTION drill_record_early_end();
";

/// A claimed ledger item.
#[derive(Debug, Clone, sqlx::FromRow)]
pub struct Item {
    pub id: i64,
}

impl Claimed for Item {
    fn row_id(&self) -> i64 {
        self.id
    }
}

/// The claim funnel: the next undone item, stamped with the token.
#[fenced]
pub async fn claim_item(pool: &PgPool, fence: Fence) -> sqlx::Result<Vec<Item>> {
    let mut tx = pool.begin().await?;
    let items = sqlx::query_as::<_, Item>(
        "UPDATE drill_work SET claimed_token = $2
          WHERE id IN (SELECT id FROM drill_work
                        WHERE done_at IS NULL AND leader_fence($1, $2)
                        ORDER BY id LIMIT 1
                          FOR UPDATE SKIP LOCKED)
         RETURNING id",
    )
    .persistent(false)
    .bind(fence.role())
    .bind(fence.token())
    .fetch_all(&mut *tx)
    .await?;
    tx.commit().await?;
    Ok(items)
}

/// The completion: claimed by this token and undone → done, with its effect in the same
/// transaction. Returns whether it applied.
pub async fn complete(pool: &PgPool, item: &Item, fence: Fence) -> sqlx::Result<bool> {
    let mut tx = pool.begin().await?;
    let applied = sqlx::query(
        "UPDATE drill_work SET done_at = now()
          WHERE id = $1 AND claimed_token = $2 AND done_at IS NULL",
    )
    .persistent(false)
    .bind(item.id)
    .bind(fence.token())
    .execute(&mut *tx)
    .await?
    .rows_affected()
        == 1;
    if applied {
        sqlx::query("INSERT INTO effects (kind, key, role, token) VALUES ('ledger', $1, $2, $3)")
            .persistent(false)
            .bind(item.id.to_string())
            .bind(fence.role())
            .bind(fence.token())
            .execute(&mut *tx)
            .await?;
    }
    tx.commit().await?;
    Ok(applied)
}

/// One tick: `units` units of [`UNIT`] items, checking cancellation between units only.
pub async fn tick(tick: TickContext, units: usize) -> Result<(), JobError> {
    let pool = tick.pool().clone();
    let fence = tick.fence();
    let audit = Audit::new(pool.clone());
    audit.grant(fence, tick.acquired_at()).await?;
    for _ in 0..units {
        if tick.is_cancelled() {
            break;
        }
        for _ in 0..UNIT {
            let items = audit.claim(fence, claim_item(&pool, fence)).await?;
            tokio::time::sleep(STEP).await;
            for item in &items {
                complete(&pool, item, fence).await?;
            }
        }
    }
    audit.completed(fence).await?;
    Ok(())
}

/// The ledger's own checks, beside the reference application's.
pub const CHECKS: &[billing_demo::checks::CheckDef] = &[
    billing_demo::checks::CheckDef {
        name: "every ledger item done at most once, and only with its effect",
        kind: billing_demo::checks::Kind::Safety,
        sql: "SELECT count(*) FROM drill_work w
                LEFT JOIN (SELECT key::bigint AS id, count(*) AS n FROM effects
                            WHERE kind = 'ledger' GROUP BY key) f ON f.id = w.id
               WHERE coalesce(f.n, 0) <> CASE WHEN w.done_at IS NULL THEN 0 ELSE 1 END",
    },
    billing_demo::checks::CheckDef {
        name: "no lease ended before its expiry while its holder's anchor session lived",
        kind: billing_demo::checks::Kind::Safety,
        sql: "SELECT count(*) FROM drill_early_ends WHERE old_anchor_alive",
    },
];
