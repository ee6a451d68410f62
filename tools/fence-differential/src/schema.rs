//! The database the generated claims run in: a fresh [`TestDb`] with the framework's
//! migrations, the test roles, the tables and views the grammar names, and the role `alpha`
//! granted first to a holder that is then superseded, then to the live holder.

use std::time::Duration;

use leader_core::lease::{self, Acquired};
use leader_core::{Fence, Role, Shard, Timings};
use leader_fence_check::Schema;
use leader_testkit::TestDb;

use crate::Res;

/// The role whose fence the claims take.
pub const ROLE: Role = Role::from_static("alpha");

/// The registered roles, as an application's roles migration lists them.
const ROLES_UP: &str = include_str!("../../../tests/migrations/20261201000100_roles.up.sql");

/// Every table a claim can touch, with the rows it is seeded with. Every table and view has the
/// columns `id, grp, status, owner` (`budget` aside), so most generated statements are valid.
pub const TABLES: [(&str, i64); 4] = [("q", 10), ("r", 10), ("sink", 3), ("budget", 1)];

/// The tables, views and functions of the grammar.
///
/// * `q`, `r`: ids 1..=10, `grp = id % 4`, `status` 'new' but every third 'done', `owner` NULL,
///   so each filter of the grammar matches most rows.
/// * `sink`: what `INSERT` writes; ids 1..=3 are seeded, so `ON CONFLICT` has conflicts.
/// * `v_flat` the planner pulls up into the query that reads it; `v_lim` it cannot (`LIMIT`).
/// * `take_budget(q)` and `take_budget(r)` are VOLATILE and write the one row of `budget`, so a
///   call, written as a call or in attribute notation (`t.take_budget`), shows as a written row.
/// * `q`, `r` and `sink` declare `id` their shard key (`leader_shard_key`), as an application's
///   migrations declare the keys of the tables its shard claims touch.
/// * The tables are analyzed once and never by autovacuum, so the planner's statistics, and with
///   them the plans (which decide, say, whether a join reads a row it then locks), stay the same
///   through a run: a seed reproduces.
pub const SCHEMA: &str = "
CREATE TABLE q (id bigint PRIMARY KEY, grp int NOT NULL, status text NOT NULL, owner bigint);
CREATE TABLE r (id bigint PRIMARY KEY, grp int NOT NULL, status text NOT NULL, owner bigint);
CREATE TABLE sink (id bigint PRIMARY KEY, grp int, status text, owner bigint);
CREATE TABLE budget (spent int NOT NULL);
INSERT INTO q SELECT i, i % 4, CASE WHEN i % 3 = 0 THEN 'done' ELSE 'new' END, NULL
  FROM generate_series(1, 10) i;
INSERT INTO r SELECT i, i % 4, CASE WHEN i % 3 = 0 THEN 'done' ELSE 'new' END, NULL
  FROM generate_series(3, 12) i;
INSERT INTO sink VALUES (1, 1, 'seeded', NULL), (2, 2, 'seeded', NULL), (3, 3, 'seeded', NULL);
INSERT INTO budget VALUES (0);
CREATE VIEW v_flat AS SELECT id, grp, status, owner FROM q WHERE grp >= 0;
CREATE VIEW v_lim AS SELECT id, grp, status, owner FROM q ORDER BY id LIMIT 100;
CREATE FUNCTION take_budget(q) RETURNS int LANGUAGE plpgsql VOLATILE
AS $$ BEGIN UPDATE budget SET spent = spent + 1; RETURN 1; END $$;
CREATE FUNCTION take_budget(r) RETURNS int LANGUAGE plpgsql VOLATILE
AS $$ BEGIN UPDATE budget SET spent = spent + 1; RETURN 1; END $$;
ALTER TABLE q SET (autovacuum_enabled = false);
ALTER TABLE r SET (autovacuum_enabled = false);
ALTER TABLE sink SET (autovacuum_enabled = false);
ALTER TABLE budget SET (autovacuum_enabled = false);
ANALYZE q, r, sink, budget;
SELECT leader_shard_key('q', 'id'), leader_shard_key('r', 'id'), leader_shard_key('sink', 'id');
";

/// The schema the checker is given: the fixture database's own catalog, read as `leaderctl
/// schema prepare` reads an application's after its migrations.
///
/// # Errors
///
/// If the catalog cannot be read.
pub async fn prepared(db: &TestDb) -> Res<Schema> {
    let mut conn = db.admin().acquire().await?;
    let prepared = leaderctl::catalog::read(&mut conn).await?;
    Ok(Schema::new(prepared, "the differential's schema"))
}

/// The database and the two fence tokens of [`ROLE`].
#[derive(Debug)]
pub struct Fixture {
    pub db: TestDb,
    /// The schema the checker is given: [`prepared`] from the database.
    pub schema: Schema,
    /// A token `alpha` was granted and then lost: its `leader_fence` is false.
    pub stale: i64,
    /// The token of the live holder (a day's lease): its `leader_fence` is true.
    pub live: i64,
    /// For [`Fixture::sharded`]: shard 0 of [`SHARDS`] is the shard of `stale` and `live`, and
    /// this is the live token of shard 1, which proves nothing for shard 0.
    pub other_shard: Option<i64>,
}

/// How many shards [`ROLE`] has in [`Fixture::sharded`].
pub const SHARDS: u32 = 2;

impl Fixture {
    /// Creates the database and grants the two leases, and checks that the fence is false for
    /// the stale token and true for the live one.
    ///
    /// # Errors
    ///
    /// If a grant is refused or a statement fails.
    ///
    /// # Panics
    ///
    /// If no server can be reached (see [`TestDb::new`]).
    pub async fn new() -> Res<Fixture> {
        Fixture::create(false).await
    }

    /// [`Fixture::new`] with [`ROLE`] in [`SHARDS`] shards: the tokens are shard 0's, and
    /// [`Fixture::other_shard`] is shard 1's live token.
    ///
    /// # Errors
    ///
    /// As [`Fixture::new`].
    pub async fn sharded() -> Res<Fixture> {
        Fixture::create(true).await
    }

    async fn create(sharded: bool) -> Res<Fixture> {
        let db = TestDb::new().await;
        sqlx::raw_sql(ROLES_UP).execute(db.admin()).await?;
        sqlx::raw_sql(SCHEMA).execute(db.admin()).await?;
        let shard = |index| sharded.then(|| Shard::new(index, SHARDS)).transpose();
        if sharded {
            sqlx::query("SELECT leader_reshard($1, $2)")
                .bind(ROLE.as_str())
                .bind(SHARDS as i32)
                .execute(db.admin())
                .await?;
        }
        let stale = grant(&db, "superseded-leader", shard(0)?).await?;
        sqlx::query(
            "UPDATE leader_leases SET expires_at = now() - interval '1 ms'
              WHERE role = $1 AND holder_id IS NOT NULL",
        )
        .bind(ROLE.as_str())
        .execute(db.admin())
        .await?;
        let live = grant(&db, "live-leader", shard(0)?).await?;
        let other_shard = match shard(1)? {
            Some(other) => Some(grant(&db, "other-shard-leader", Some(other)).await?.token()),
            None => None,
        };
        let (stale_fence, live_fence): (bool, bool) =
            sqlx::query_as("SELECT leader_fence($1, 0, $4, $2), leader_fence($1, 0, $4, $3)")
                .bind(ROLE.as_str())
                .bind(stale.token())
                .bind(live.token())
                .bind(if sharded { SHARDS as i32 } else { 1 })
                .fetch_one(db.admin())
                .await?;
        if stale.token() >= live.token() || stale_fence || !live_fence {
            return Err(format!(
                "the fence does not tell the tokens apart: stale {} ({stale_fence}), \
                 live {} ({live_fence})",
                stale.token(),
                live.token()
            )
            .into());
        }
        let schema = prepared(&db).await?;
        Ok(Fixture {
            db,
            schema,
            stale: stale.token(),
            live: live.token(),
            other_shard,
        })
    }
}

/// Registers the test roles in `db` (a database with the framework's tables), grants [`ROLE`]
/// to a holder that is then superseded and to the live one: their tokens, checked to be told
/// apart by the fence.
///
/// # Errors
///
/// If a statement fails or the fence does not tell the tokens apart.
pub async fn superseded_and_live(db: &TestDb) -> Res<(i64, i64)> {
    sqlx::raw_sql(ROLES_UP).execute(db.admin()).await?;
    let stale = grant(db, "superseded-leader", None).await?;
    sqlx::query(
        "UPDATE leader_leases SET expires_at = now() - interval '1 ms'
          WHERE role = $1 AND holder_id IS NOT NULL",
    )
    .bind(ROLE.as_str())
    .execute(db.admin())
    .await?;
    let live = grant(db, "live-leader", None).await?;
    let (stale_fence, live_fence): (bool, bool) =
        sqlx::query_as("SELECT leader_fence($1, $2), leader_fence($1, $3)")
            .bind(ROLE.as_str())
            .bind(stale.token())
            .bind(live.token())
            .fetch_one(db.admin())
            .await?;
    if stale_fence || !live_fence {
        return Err("the fence does not tell the tokens apart".into());
    }
    Ok((stale.token(), live.token()))
}

async fn grant(db: &TestDb, holder: &str, shard: Option<Shard>) -> Res<Fence> {
    let timings = Timings::scaled_to_ttl(Duration::from_secs(24 * 3600))?;
    let mut wanted = lease::Wanted::every(ROLE, Duration::from_millis(1));
    if let Some(shard) = shard {
        wanted = wanted.in_shard(shard);
    }
    match lease::acquire(db.admin(), &[wanted], holder, 1, &timings)
        .await?
        .remove(0)
    {
        Acquired::Granted(grant) => Ok(grant.fence),
        Acquired::Refused(refusal) => Err(format!("{holder} was refused: {refusal:?}").into()),
    }
}
