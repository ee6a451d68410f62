//! `#[leader_role]` and `#[fenced]`: role registration and compile-time fence checks for
//! [`leader-runtime`](https://docs.rs/leader-runtime).
//!
//! Use them through `leader_runtime`, whose paths their expansions name.

#![warn(missing_docs)]

mod assert_claims_fenced;
mod errors;
#[cfg(test)]
mod expansions;
mod fenced;
mod leader_role;
mod prepared;
mod unfenced;

use proc_macro::TokenStream;

/// Registers an async fn as the job of a leader role: the runtime runs it on exactly one replica
/// at a time (or, for a sharded role, one replica per shard), every interval or at the instants
/// of a cron expression.
///
/// # Usage
///
/// ```ignore
/// use leader_runtime::{leader_role, TickContext};
///
/// #[leader_role("billing", every = "1h")]
/// async fn bill(tick: TickContext) -> Result<(), BillingError> {
///     // claim work with `tick.fence()` ...
///     Ok(())
/// }
/// ```
///
/// # Arguments
///
/// The role name comes first, a string: a lowercase ASCII letter, then lowercase letters, digits
/// or `_`, at most 63 bytes. The options follow, each at most once; any other is a compile error
/// that lists these:
///
/// * `every = "1h"`: the interval, a whole number and a unit: `"250ms"`, `"90s"`, `"5m"`,
///   `"1h"`, `"1d"`.
/// * `cron = "0 2 * * *"`: instead of `every`, a cron expression of 5 fields or 6 with seconds
///   first. Each instant is completed at most once cluster-wide and never started before it is
///   due on the database clock; `TickContext::tick_instant` says which instant a tick serves.
///   * `tz = "Europe/Berlin"`: the IANA time zone the expression is read in (UTC when absent).
///   * `missed = "latest"` (the default) or `missed = "each"`: after downtime, run only the
///     latest missed instant, or each of them, oldest first, one tick each.
///
///   A malformed expression, an unknown zone or policy, `tz` or `missed` without `cron`, both
///   `every` and `cron`, or neither, are compile errors spanned at the offending string.
/// * `shards = 8`: the role is led as that many shards (1 to 1024), each its own lease, spread
///   over the replicas. Each tick holds one shard: `tick.shard_fence()` is its `ShardFence`,
///   which its `#[fenced]` claims bind, and `tick.shard()` says which shard it is. The
///   migrations give the role its shards (`leaderctl roles reshard ROLE N`).
/// * `migrations = "db/migrations"`: the folder, relative to the crate's directory, that the
///   crate's prepared schema must come from (see below); a compile error names the command
///   when `leader-schema.json` was prepared from another.
///
/// # The function
///
/// * It is `async fn name(tick: TickContext) -> Result<(), E>`, with `E` converting into
///   `Box<dyn Error + Send + Sync>`; not a method, not generic, not `unsafe`.
/// * A second parameter `State(app): State<App>` receives the application's state: the value
///   given to the builder's `with_state(app)`, cloned for each tick. The runtime checks when it
///   is built that its state type is `App`, and its error names the job.
/// * The macro defines the constant `BILLING: Role` (the role name in upper case), so two jobs
///   for one role in one module fail to compile. The runtime refuses duplicates across modules.
/// * **Pinned to the database's roles.** Where the crate has a prepared schema
///   (`leader-schema.json` next to `Cargo.toml`, written by `leaderctl schema prepare` from
///   PostgreSQL's catalog after the crate's migrations ran as sqlx runs them), the role must be
///   one its `leader_leases_role_registered` CHECK lists, and where the role has rows, the job
///   leads it with their shard count (`shards = N`, or none for 1): each mismatch is a compile
///   error naming the migration to write (`leaderctl roles add`, `leaderctl roles reshard`). A
///   file whose migrations changed since it was prepared is a compile error naming `leaderctl
///   schema prepare`. Without the file nothing is pinned at compile time; the runtime checks
///   the database itself at start-up in any case. The expansion includes the file (and, in the
///   crate's first expansion, the migrations), so a new prepare or an edited migration rebuilds
///   the crate.
///
/// # Equivalent code without the macro
///
/// The fn as written, its role constant, two adapters through which the compiler checks the
/// job's parameter and return types at the job's own signature, and its registration, which
/// `leader_runtime::registered_jobs()` finds. The text below is the macro's output, printed by
/// the snapshot test that fails when it changes (`leader-macros/src/expansions.rs`).
///
/// ```ignore
#[doc = include_str!("../tests/expansions/interval.rs")]
/// ```
///
/// A calendar role, whose role is pinned to the migration that registers it:
///
/// ```ignore
#[doc = include_str!("../tests/expansions/cron.rs")]
/// ```
///
/// A sharded role:
///
/// ```ignore
#[doc = include_str!("../tests/expansions/sharded.rs")]
/// ```
///
/// A job that takes the application's state:
///
/// ```ignore
#[doc = include_str!("../tests/expansions/state.rs")]
/// ```
#[proc_macro_attribute]
pub fn leader_role(args: TokenStream, item: TokenStream) -> TokenStream {
    leader_role::leader_role(args.into(), item.into()).into()
}

/// Checks at compile time that every statement a function sends is fenced.
///
/// **The contract.** A `#[fenced]` function compiles only if every claim in it (a statement that
/// changes or locks rows, or may) is one the macro has proven, run with a superseded token, to
/// change no row, lock no row and return nothing. What the macro cannot prove is a compile error
/// that says why and shows the form it can prove.
///
/// * **Claims are found by their SQL, not by how they are sent.** Every string literal in the
///   body (nested items, closures, async blocks and macro arguments included, and `concat!` of
///   literals) that parses as a claim is checked, wherever it goes. Plain reads, transaction
///   control and `SET` are not claims.
/// * **The SQL is checked against what PostgreSQL does** (parsed by PostgreSQL's own parser,
///   `pg_query`): the fence rules, written once in
///   [`leader-fence-check`'s crate docs](https://docs.rs/leader-fence-check), say which gates
///   prove the fence before a node changes or locks rows, where locks land, what makes a row
///   from no rows, and which functions may be called.
/// * **Binds are traced where the claim is sent**: `query`, `query_as`, `query_scalar` with
///   their `.bind(..)` chains (also through a local rebound at the same block level, and under
///   another name given by a `use sqlx::query_as as rows_of;` inside the function: a `use`
///   outside it is out of the attribute's sight), and the `query!` family with `query_file!`.
///   The SQL is a string literal or a `concat!` of literals, written at the send or in a
///   `const CLAIM: &str = "…";` declared in the function's body. `$i` and `$j` of each
///   `leader_fence($i, $j)` must be bound to the fence parameter's `.role()` and `.token()`. A
///   claim whose binds cannot be traced (sent through another name for sqlx's functions, a
///   helper, a local passed on, a string given to a generic executor, `PgArguments`) is an
///   error.
/// * **Every way sqlx 0.9 sends SQL is in one table** in the macro, each entry saying how its
///   SQL and binds are found or why it is refused, and a test fails when the pinned sqlx
///   declares a function that takes SQL and the table lacks it. A method that sends SQL
///   (`Executor`'s, on a pool, a connection, a transaction, a `PgListener` or a generic executor,
///   by method or by path as in `E::execute(ex, q)`; `begin_with`) is given a query made in the
///   function or a literal, which is checked; anything else is an error. **A query sent**
///   (`.execute(pool)`, `.fetch_all(..)`, …) must be made in the function by one of sqlx's query
///   functions or a `query!` macro: one a call the macro does not know returned (a helper, or
///   sqlx's `query` renamed by a `use` outside the function) is an error whatever the call is
///   given, a literal too, since the helper may return a claim the macro never sees. `copy_in_raw` and
///   `copy_out_raw` (a `COPY` cannot be fenced), `prepare`, `prepare_with`, `describe` and
///   `query_statement` (a prepared statement runs where its binds cannot be traced), and
///   `QueryBuilder` are errors wherever they are called.
/// * **SQL that is not a literal** (a variable, `format!`, `AssertSqlSafe`, `include_str!`, a
///   `const` defined elsewhere, a `concat!` of anything but literals) is an error where it
///   reaches any of those sends, whatever they are called on. `AssertSqlSafe`, and a `format!`
///   or `concat!` whose text reads as SQL once its holes are filled, are errors wherever they
///   are. The macro cannot see SQL written outside the function: a constant handed to a function
///   it does not know as a send is not seen.
/// * **The schema comes from PostgreSQL.** PostgreSQL reads `t.f` as the column `f` of `t` where
///   `t` has one, and as a call `f(t)` otherwise (attribute notation); it picks a function's
///   overload by the arguments' types; a later migration may rename a column, make a function
///   `STABLE`, or create one in a `DO` block. Only the server knows its catalog, so, as sqlx's
///   offline `query!` data, the macro reads `leader-schema.json` next to `Cargo.toml`: what
///   `leaderctl schema prepare` read from PostgreSQL's catalog after applying the crate's
///   migrations exactly as sqlx runs them (by integer version, up files only; the framework's
///   migrations first when the folder holds none) and then `leader-tables.sql` (tables no
///   migration creates, `CREATE TABLE audit.events (id bigint, seen boolean);`). The file holds
///   a fingerprint of those files: when one changed since, the build fails naming the command
///   that refreshes it, and `leaderctl schema prepare --check` says in CI whether it is current;
///   without the file the build fails naming it. It is read once per crate.
///   `#[fenced(migrations = "db/migrations")]` says which folder, relative to the crate's
///   directory, the file must have been prepared from when it is not `migrations/`: one prepared
///   from another is a compile error naming the command. From the file:
///   * a qualified name whose table has no such column (or whose relation the file does not
///     have) is refused where PostgreSQL may evaluate it for a superseded leader, unless no
///     function of the schema takes that table's row, or only `STABLE` and `IMMUTABLE` ones do;
///   * a call is resolved as PostgreSQL resolves it: by schema (a name written unqualified may
///     be any schema's), name, argument count (defaults and `VARIADIC` counted) and the
///     argument types the SQL shows (a literal's, a cast's, a column's); where several
///     overloads remain and any is `VOLATILE`, the call counts as `VOLATILE`. `STABLE` and
///     `IMMUTABLE` functions stand anywhere; `VOLATILE` ones (and `pg_notify`, `nextval` and
///     the other [`VOLATILE_BUILTINS`](https://docs.rs/leader-fence-check)) only where
///     PostgreSQL never evaluates them for a superseded leader; aggregates and functions the
///     file does not have nowhere;
///   * a locked relation is a table (locked after the query's conditions) or a view PostgreSQL
///     reads as its one table's rows; any other is locked as it is read;
///   * **statement-level triggers and rules.** A `FOR EACH STATEMENT` trigger fires once per
///     statement even when it changes no row, so a superseded leader's claim would run it: a
///     claim whose `UPDATE`, `DELETE`, `INSERT` or `MERGE` fires an enabled statement-level
///     trigger (of its table, or of the table a view it changes is rewritten into), or a rule,
///     is refused, however it is fenced. Make the trigger `FOR EACH ROW`: a row-level trigger
///     runs only for the rows the claim changes, none for a superseded leader.
/// * **The fence parameter** is found by its type's name and confirmed by the compiler to be
///   `leader_runtime::Fence` or `leader_runtime::ShardFence` (or a reference to one): a type of
///   your own of either name does not compile. It is never shadowed (except `let fence =
///   fence;`, which `#[async_trait]` writes), reassigned or borrowed mutably.
/// * **A shard's fence** (`ShardFence`, from a sharded role's `tick.shard_fence()`) proves one
///   shard of the role: its claims call the four-argument `leader_fence($i, $j, $k, $l)` with
///   `$i`, `$j`, `$k`, `$l` bound to `fence.role()`, `fence.shard_index()`,
///   `fence.shard_count()` and `fence.token()`. The two-argument `leader_fence` proves no
///   shard and is refused with a `ShardFence`, as the four-argument one is with a `Fence`.
/// * **Shard keys, declared once.** Each table a shard claim changes, locks or inserts into
///   declares its shard key in the schema (`leaderctl schema shard-key TABLE COLUMN --dir
///   migrations` writes the migration, `SELECT leader_shard_key('webhooks', 'id')`), and every
///   shard claim on it selects those rows by `leader_shard_of(KEY, $k) = $j` on the fence's
///   placeholders: in the `WHERE` of the query that acts on them, or through a funnel (`KEY IN
///   (SELECT …)`, `= ANY`, `= (SELECT …)`), a join on the key (in `WHERE` or an inner join's
///   `ON`) to a sub-select or `WITH` query that returns its filtered key, a parent's key the
///   child's key equals, a view PostgreSQL reads as its table. So two claims on one table can no
///   longer select by different columns, and two shards' live leaders never claim one row. A
///   claim on a table with no declared key is refused saying how to declare it. Rows a claim
///   only returns (without locking or changing them) are reads, as a plain `SELECT` is: lock or
///   change the rows you hand to the job.
///
/// Each mistake is a compile error at the offending SQL, bind or call, naming the node, its
/// line within the SQL, and the fix.
///
/// # Usage
///
/// ```ignore
/// use leader_runtime::{fenced, Fence};
///
/// #[fenced]
/// async fn claim_batch(pool: &PgPool, fence: Fence, limit: i64) -> sqlx::Result<Vec<i64>> {
///     // In a transaction, non-persistent: what works behind PgBouncer before 1.21 too.
///     let mut tx = pool.begin().await?;
///     let ids = sqlx::query_scalar(
///         "UPDATE outbox SET status = 'sending'
///           WHERE id IN (SELECT id FROM outbox
///                         WHERE status = 'pending' AND leader_fence($2, $3)
///                         ORDER BY id LIMIT $1
///                         FOR UPDATE SKIP LOCKED)
///       RETURNING id",
///     )
///     .persistent(false)
///     .bind(limit)
///     .bind(fence.role())
///     .bind(fence.token())
///     .fetch_all(&mut *tx)
///     .await?;
///     tx.commit().await?;
///     Ok(ids)
/// }
/// ```
///
/// # Equivalent code without the macro
///
/// The function as written, with lines at the top of its body that include the schema's files
/// (so that editing one re-runs the check) and have the compiler confirm the fence parameter's
/// type; they do nothing at run time. The text below is the macro's output, printed by the
/// snapshot test that fails when it changes (`leader-macros/src/expansions.rs`).
///
/// ```ignore
#[doc = include_str!("../tests/expansions/fenced.rs")]
/// ```
///
/// With a `ShardFence`, whose claims bind the shard's index and count beside the role and
/// token:
///
/// ```ignore
#[doc = include_str!("../tests/expansions/fenced_shard.rs")]
/// ```
#[proc_macro_attribute]
pub fn fenced(args: TokenStream, item: TokenStream) -> TokenStream {
    fenced::fenced(args.into(), item.into()).into()
}

/// The whole-crate fence audit, run by the compiler: a `#[test]` that fails, naming file and
/// line, for every row-locking statement (`FOR UPDATE`, `FOR NO KEY UPDATE`, `FOR SHARE`,
/// `FOR KEY SHARE`) below a folder of the crate that is outside a `#[fenced]` function and
/// whose item does not opt out with `#[unfenced(reason = "…")]`. It catches the claim whose
/// function lost (or never had) its `#[fenced]`, which compiles otherwise.
///
/// # Usage
///
/// Once, in any module the crate's tests build (`tests/fenced.rs`, or a `#[cfg(test)]` module):
///
/// ```ignore
/// leader_runtime::assert_claims_fenced!("src");
/// ```
///
/// The folder is relative to the crate's directory (default `src`). The audit runs while the
/// test is compiled, with the SQL parser the macros already built: added to a service's tests it
/// cost 3.1 s of CPU (user + sys), where `leader-audit` called by a test cost 154.7 s, building
/// the parser a second time for the test's target (`scripts/audit-build-cost`, 2026-12-07, a
/// loaded 2-core machine). The test includes every file it read, so editing one compiles it again (a file added
/// to the folder is seen at the next edit of another, or of the test). A folder that cannot be
/// read, or a file that is not valid Rust, is a compile error at the literal.
///
/// # Equivalent code without the macro
///
/// ```ignore
/// #[test]
/// fn every_row_lock_is_fenced() {
///     const _: &[&[u8]] = &[include_bytes!("/path/to/crate/src/lib.rs") /* , ... */];
///     // and, when the audit found anything:
///     panic!("1 row-locking statement(s) outside a #[fenced] function: ...");
/// }
/// ```
#[proc_macro]
pub fn assert_claims_fenced(input: TokenStream) -> TokenStream {
    assert_claims_fenced::assert_claims_fenced(input.into()).into()
}

/// Opts a function (or any item) out of the whole-crate fence audit, with a reason.
///
/// [`assert_claims_fenced!`] fails for every row-locking statement
/// (`FOR UPDATE`, `FOR NO KEY UPDATE`, `FOR SHARE`, `FOR KEY SHARE`) outside a `#[fenced]`
/// function. A lock that needs no fence (a maintenance job that is not leader-only, a test) says
/// why with this attribute; the item itself is emitted unchanged.
///
/// # Usage
///
/// ```ignore
/// use leader_runtime::unfenced;
///
/// #[unfenced(reason = "run by the operator's CLI, never by a replica")]
/// async fn repair(pool: &PgPool) -> sqlx::Result<()> {
///     sqlx::query("SELECT id FROM jobs WHERE stuck FOR UPDATE").execute(pool).await?;
///     Ok(())
/// }
/// ```
#[proc_macro_attribute]
pub fn unfenced(args: TokenStream, item: TokenStream) -> TokenStream {
    unfenced::unfenced(args.into(), item.into()).into()
}
