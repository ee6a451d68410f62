//! LEAVE: a replica that stops says it no longer runs its sharded roles.

use sqlx::PgExecutor;

use crate::inline::{Value, render};
use crate::send::{lock_timeout, send, values_list};
use crate::{Role, Statement, StatementError, Timings};

// A replica's presence row for a sharded role counts it in every replica's share (ACQUIRE's
// `share`); without LEAVE it would keep counting until it runs out, one TTL after the replica's
// last ACQUIRE, and the others would leave its shards unrun until then. Presence decides the
// spread only, never who may hold a lease, so this has no guard: a row it deletes too early (the
// replica still holding a lease) only lets the others take their larger share sooner, and a
// lease still held still counts its holder in the share.
const LEAVE: &str = "
WITH lock_bound AS (SELECT set_config('lock_timeout', :lock_ms::text, true) AS applied)
DELETE FROM leader_presence
 WHERE holder_id = :holder
   AND role IN (VALUES :roles)
   AND (SELECT applied FROM lock_bound) IS NOT NULL
RETURNING role
";

/// LEAVE: deletes `holder`'s presence rows for `roles`, so that the other replicas' share of
/// each sharded role grows at their next ACQUIRE instead of one TTL after `holder`'s last
/// (ACQUIRE writes a replica's presence for every sharded role it asks for). The runtime sends
/// it at a clean shutdown, after every tick it ran has been released. Returns how many rows it
/// deleted; roles with no presence row (unsharded ones) are ignored.
///
/// # Errors
///
/// [`StatementError`] if the statement fails or times out; the presence rows then run out after
/// one TTL, as a crashed replica's do.
pub async fn leave<'e>(
    db: impl PgExecutor<'e>,
    holder: &str,
    roles: &[Role],
    timings: &Timings,
) -> Result<u64, StatementError> {
    if roles.is_empty() {
        return Ok(0);
    }
    let listed = values_list(
        roles
            .iter()
            .map(|&role| render("(:role)", &[("role", Value::Role(role))])),
    );
    let sql = render(
        LEAVE,
        &[
            ("roles", Value::Sql(&listed)),
            ("holder", Value::Text(holder)),
            ("lock_ms", Value::Int(lock_timeout(timings))),
        ],
    );
    let rows = send(db, Statement::Leave, timings.statement_timeout(), sql).await?;
    Ok(rows.len() as u64)
}
