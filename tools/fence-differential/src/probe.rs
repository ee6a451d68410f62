//! Runs one statement as a leader would and measures what it did, inside a transaction that is
//! rolled back, so every statement meets the same seeded rows.
//!
//! What counts as an effect:
//!
//! * **returned**: the rows the statement returned;
//! * **written**: row versions whose `xmin` is the transaction's, in every table of
//!   [`TABLES`] (an update, an insert, a merge, a call of `take_budget`);
//! * **deleted**: rows fewer than seeded, per table;
//! * **locked**: rows another connection cannot lock, per table, seen from a second connection
//!   while the transaction is still open: `SELECT … FOR UPDATE SKIP LOCKED` skips every row the
//!   statement locked, whatever the lock's strength, and every row it updated or deleted.
//!
//! Two connections serve a whole run; each statement costs five round trips on the first and one
//! on the second.

use std::collections::BTreeSet;
use std::time::Duration;

use leader_testkit::TestDb;
use sqlx::{Connection, PgConnection, Row};

use crate::Res;

use crate::schema::TABLES;

/// How long one statement may run before PostgreSQL cancels it (`57014`, a `pg_error`).
pub const STATEMENT_TIMEOUT: Duration = Duration::from_secs(2);

/// What a statement did, in rows.
#[derive(Debug, Clone, Copy, Default, PartialEq, Eq)]
pub struct Effect {
    pub returned: u64,
    pub written: i64,
    pub deleted: i64,
    pub locked: i64,
    /// For a shard's claim: rows that the live leaders of two shards each wrote, deleted or
    /// locked, run one after the other.
    pub shared: u64,
}

impl Effect {
    /// Whether it returned, wrote, deleted or locked any row.
    pub fn any(&self) -> bool {
        *self != Effect::default()
    }

    /// Whether it wrote, deleted or locked any row.
    pub fn changed_or_locked(&self) -> bool {
        self.written > 0 || self.deleted > 0 || self.locked > 0 || self.shared > 0
    }
}

impl std::fmt::Display for Effect {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        write!(
            f,
            "returned {}, wrote {}, deleted {}, locked {}",
            self.returned, self.written, self.deleted, self.locked
        )?;
        if self.shared > 0 {
            write!(
                f,
                ", {} rows also claimed by another shard's leader",
                self.shared
            )?;
        }
        Ok(())
    }
}

/// A plan PostgreSQL may choose for a statement, forced for one run by turning the planner's
/// other choices off in the run's transaction (`SET LOCAL`, through `set_config`).
///
/// The checker's contract holds for every plan PostgreSQL may choose, while one run measures
/// only the plan it chose for the fixture's ten-row tables. A statement that does nothing there
/// but acts under another plan (a join that reads its inner side first, an index scan
/// rescanned per outer row) is unsafe all the same, and refusing it is no false rejection.
#[derive(Debug, Clone, Copy, PartialEq, Eq, PartialOrd, Ord, Hash)]
pub enum Plan {
    /// The plan PostgreSQL chose, nothing forced.
    Chosen,
    /// Nested loops only: the inner side of each join rescanned per outer row.
    NestedLoops,
    /// Hash joins only: the inner side read into a table, which may come first.
    HashJoins,
    /// Merge joins only: both sides read, sorted.
    MergeJoins,
}

impl Plan {
    /// The plans forced after [`Plan::Chosen`], in the order they are tried. (Index scans are a
    /// run of their own, `--index-scans`: forced on every statement they cost about 60 times.)
    pub const FORCED: [Plan; 3] = [Plan::NestedLoops, Plan::HashJoins, Plan::MergeJoins];

    /// The plan as the report names it.
    pub const fn name(self) -> &'static str {
        match self {
            Plan::Chosen => "chosen",
            Plan::NestedLoops => "nested loops",
            Plan::HashJoins => "hash joins",
            Plan::MergeJoins => "merge joins",
        }
    }

    /// The statement that forces it for the rest of a transaction (`set_config(…, true)` is
    /// `SET LOCAL`; one statement, as each of the probe's); none for the chosen plan.
    const fn settings(self) -> Option<&'static str> {
        match self {
            Plan::Chosen => None,
            Plan::NestedLoops => Some(
                "SELECT set_config('enable_hashjoin', 'off', true), \
                        set_config('enable_mergejoin', 'off', true)",
            ),
            Plan::HashJoins => Some(
                "SELECT set_config('enable_nestloop', 'off', true), \
                        set_config('enable_mergejoin', 'off', true)",
            ),
            Plan::MergeJoins => Some(
                "SELECT set_config('enable_nestloop', 'off', true), \
                        set_config('enable_hashjoin', 'off', true)",
            ),
        }
    }
}

/// The outcome of running a statement.
#[derive(Debug, Clone, PartialEq, Eq)]
pub enum Ran {
    Effect(Effect),
    /// PostgreSQL refused the statement (at parse, plan or run time).
    Error {
        sqlstate: String,
        message: String,
    },
}

/// What a statement's fence placeholders are bound to: `$1` the role, `$2` the token, and for a
/// shard's claim `$3` the shard index and `$4` the shard count.
#[derive(Debug, Clone, Copy)]
pub struct FenceBinds<'a> {
    pub role: &'a str,
    pub token: i64,
    pub shard: Option<(i32, i32)>,
}

/// The two connections of a run: one runs statements, one watches for their row locks.
#[derive(Debug)]
pub struct Probe {
    claim: PgConnection,
    watcher: PgConnection,
    measure: String,
    watch: String,
    /// The tables measured, as `FROM` names them, and the rows each was seeded with.
    tables: Vec<(String, i64)>,
}

impl Probe {
    /// Opens both connections directly to the server (never through a pooler: the measurement
    /// needs its transaction and its snapshot on one session); with `index_scans`, the claims
    /// run with `enable_seqscan = off`.
    ///
    /// # Errors
    ///
    /// If a connection or a setting fails.
    pub async fn connect(db: &TestDb, index_scans: bool) -> Res<Probe> {
        let tables: Vec<(String, i64)> = TABLES
            .iter()
            .map(|(table, seeded)| ((*table).to_owned(), *seeded))
            .collect();
        Probe::connect_to(db, index_scans, tables).await
    }

    /// [`Probe::connect`], measuring `tables` (`(name as FROM writes it, rows seeded)`: `ONLY
    /// app.t1` for a table others inherit from) instead of the fixture's.
    ///
    /// # Errors
    ///
    /// As [`Probe::connect`].
    pub async fn connect_to(
        db: &TestDb,
        index_scans: bool,
        tables: Vec<(String, i64)>,
    ) -> Res<Probe> {
        let options = (*db.admin().connect_options()).clone();
        let mut claim = PgConnection::connect_with(&options).await?;
        let mut watcher = PgConnection::connect_with(&options).await?;
        let timeout = format!(
            "SET statement_timeout = {}; SET lock_timeout = {}",
            STATEMENT_TIMEOUT.as_millis(),
            STATEMENT_TIMEOUT.as_millis()
        );
        for conn in [&mut claim, &mut watcher] {
            sqlx::raw_sql(sqlx::AssertSqlSafe(timeout.clone()))
                .execute(&mut *conn)
                .await?;
        }
        if index_scans {
            sqlx::raw_sql("SET enable_seqscan = off")
                .execute(&mut claim)
                .await?;
        }
        let measure = tables
            .iter()
            .map(|(table, _)| {
                format!(
                    "(SELECT count(*) FROM {table} WHERE xmin = x.id), \
                     (SELECT count(*) FROM {table})"
                )
            })
            .collect::<Vec<_>>()
            .join(", ");
        let watch = tables
            .iter()
            .map(|(table, _)| {
                format!("(SELECT count(*) FROM (SELECT 1 FROM {table} FOR UPDATE SKIP LOCKED) s)")
            })
            .collect::<Vec<_>>()
            .join(", ");
        Ok(Probe {
            claim,
            watcher,
            measure: format!(
                "SELECT {measure} FROM (SELECT xid(pg_current_xact_id_if_assigned()) AS id) x"
            ),
            watch: format!("SELECT {watch}"),
            tables,
        })
    }

    /// Runs `sql` as [`Probe::run`] does and names the rows it wrote, deleted or locked, as
    /// `(table, id)` (the tables with an `id` column); `None` when PostgreSQL refuses it.
    ///
    /// # Errors
    ///
    /// If the connection fails, or a measuring query does.
    pub async fn touched(
        &mut self,
        sql: &str,
        fence: FenceBinds<'_>,
    ) -> Res<Option<BTreeSet<(&'static str, i64)>>> {
        let mut tx = self.claim.begin().await?;
        let mut query = sqlx::query(sqlx::AssertSqlSafe(sql.to_owned()))
            .persistent(false)
            .bind(fence.role)
            .bind(fence.token);
        if let Some((index, count)) = fence.shard {
            query = query.bind(index).bind(count);
        }
        match query.fetch_all(&mut *tx).await {
            Ok(_) => {}
            Err(sqlx::Error::Database(_)) => {
                tx.rollback().await?;
                return Ok(None);
            }
            Err(e) => return Err(e.into()),
        }
        let mut touched = BTreeSet::new();
        for (table, _) in TABLES.iter().filter(|(table, _)| *table != "budget") {
            let written: Vec<i64> = sqlx::query_scalar(sqlx::AssertSqlSafe(format!(
                "SELECT id FROM {table}, (SELECT xid(pg_current_xact_id_if_assigned()) AS x) x \
                  WHERE xmin = x.x"
            )))
            .fetch_all(&mut *tx)
            .await?;
            let present: BTreeSet<i64> =
                sqlx::query_scalar(sqlx::AssertSqlSafe(format!("SELECT id FROM {table}")))
                    .fetch_all(&mut *tx)
                    .await?
                    .into_iter()
                    .collect();
            // What the watcher sees is the table before the claim: a row it cannot lock
            // without waiting is locked (or deleted) by the claim.
            let before: BTreeSet<i64> =
                sqlx::query_scalar(sqlx::AssertSqlSafe(format!("SELECT id FROM {table}")))
                    .fetch_all(&mut self.watcher)
                    .await?
                    .into_iter()
                    .collect();
            let free: BTreeSet<i64> = sqlx::query_scalar(sqlx::AssertSqlSafe(format!(
                "SELECT id FROM {table} FOR UPDATE SKIP LOCKED"
            )))
            .fetch_all(&mut self.watcher)
            .await?
            .into_iter()
            .collect();
            touched.extend(written.into_iter().map(|id| (*table, id)));
            touched.extend(before.difference(&free).map(|id| (*table, *id)));
            touched.extend(before.difference(&present).map(|id| (*table, *id)));
        }
        tx.rollback().await?;
        Ok(Some(touched))
    }

    /// Runs `sql` with `$1`, `$2` bound to `fence` (role, token) when given, in a transaction it
    /// then rolls back, and measures its effect.
    ///
    /// # Errors
    ///
    /// If the connection fails, or a measuring query does; a statement PostgreSQL refuses is
    /// [`Ran::Error`], not an error.
    pub async fn run(&mut self, sql: &str, fence: Option<FenceBinds<'_>>) -> Res<Ran> {
        self.run_planned(sql, fence, Plan::Chosen).await
    }

    /// [`Probe::run`], with the planner's choices narrowed to `plan`.
    ///
    /// # Errors
    ///
    /// As [`Probe::run`].
    pub async fn run_planned(
        &mut self,
        sql: &str,
        fence: Option<FenceBinds<'_>>,
        plan: Plan,
    ) -> Res<Ran> {
        let mut tx = self.claim.begin().await?;
        if let Some(settings) = plan.settings() {
            sqlx::query(settings).execute(&mut *tx).await?;
        }
        let mut query = sqlx::query(sqlx::AssertSqlSafe(sql.to_owned())).persistent(false);
        if let Some(fence) = fence {
            query = query.bind(fence.role).bind(fence.token);
            if let Some((index, count)) = fence.shard {
                query = query.bind(index).bind(count);
            }
        }
        let returned = match query.fetch_all(&mut *tx).await {
            Ok(rows) => rows.len() as u64,
            Err(sqlx::Error::Database(e)) => {
                let sqlstate = e.code().map_or_else(String::new, |c| c.into_owned());
                let message = e.message().to_owned();
                tx.rollback().await?;
                return Ok(Ran::Error { sqlstate, message });
            }
            Err(e) => return Err(e.into()),
        };
        let counts = sqlx::query(sqlx::AssertSqlSafe(self.measure.clone()))
            .persistent(true)
            .fetch_one(&mut *tx)
            .await?;
        let unlocked = sqlx::query(sqlx::AssertSqlSafe(self.watch.clone()))
            .fetch_one(&mut self.watcher)
            .await?;
        tx.rollback().await?;
        let mut effect = Effect {
            returned,
            ..Effect::default()
        };
        for (i, (_, seeded)) in self.tables.iter().enumerate() {
            let written: i64 = counts.try_get(2 * i)?;
            let rows: i64 = counts.try_get(2 * i + 1)?;
            let free: i64 = unlocked.try_get(i)?;
            effect.written += written;
            effect.deleted += (seeded - rows).max(0);
            effect.locked += seeded - free;
        }
        Ok(Ran::Effect(effect))
    }
}
