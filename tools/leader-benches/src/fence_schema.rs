//! The database the fence benchmarks (`fence-bench`, `fence-instructions`) measure: the framework's
//! schema with one live lease, a 1,000,000-row outbox, the parts of `leader_fence` as functions of
//! their own, and the claim funnel the reference application runs.

use sqlx::PgConnection;

use crate::Res;

/// The framework's schema, as the first migration creates it.
pub const FRAMEWORK_UP: &str =
    include_str!("../../../migrations/20261201000000_leader_leases.up.sql");

/// The live lease's token (role `fence`): every fenced funnel passes the fence.
pub const TOKEN: i64 = 1_000;
/// Rows one funnel claims.
pub const CLAIM_LIMIT: usize = 100;
/// Rows in the outbox.
pub const OUTBOX_ROWS: i64 = 1_000_000;

/// The claim funnel; `{token}` is the token (a bind parameter or a literal), `{fence}` where a
/// gate goes (empty for none, else starting with ` AND `).
pub const FUNNEL: &str = "UPDATE outbox SET claimed_token = {token} WHERE id IN (SELECT id FROM outbox \
     WHERE status = 'pending' AND due_at <= now(){fence} ORDER BY due_at LIMIT 100 \
     FOR UPDATE SKIP LOCKED) RETURNING id";

/// The outbox of [`OUTBOX_ROWS`] rows and its partial index, unanalysed. `protocol-bench`'s fence
/// part claims from it too (without writing `claimed_token`).
pub const OUTBOX: &str = "
CREATE TABLE outbox (
    id            bigserial   PRIMARY KEY,
    status        text        NOT NULL,
    due_at        timestamptz NOT NULL,
    claimed_token bigint
);
-- One row in five already sent; due times spread over ~28 h from a day ago, so most are due.
INSERT INTO outbox (status, due_at)
SELECT CASE WHEN g % 5 = 0 THEN 'sent' ELSE 'pending' END,
       now() - interval '1 day' + g * interval '100 milliseconds'
  FROM generate_series(1, 1000000) AS g;
CREATE INDEX outbox_pending_due ON outbox (due_at) WHERE status = 'pending';
";

/// The lease, and each part of the fence (and other forms it could take) as a function in schema
/// `fence_parts`.
pub const SETUP: &str = "
INSERT INTO leader_leases (role, holder_token, holder_id, acquired_at, expires_at)
VALUES ('fence', 1000, 'fence-bench', now(), now() + interval '10 years');
CREATE SCHEMA fence_parts;
-- The parts of leader_fence, each alone.
CREATE FUNCTION fence_parts.call_only(p_role text, p_token bigint) RETURNS boolean
LANGUAGE plpgsql STABLE AS $$ BEGIN RETURN true; END $$;
CREATE FUNCTION fence_parts.isolation_check(p_role text, p_token bigint) RETURNS boolean
LANGUAGE plpgsql STABLE AS $$
BEGIN
    IF current_setting('transaction_isolation') <> 'read committed' THEN
        RAISE EXCEPTION 'needs READ COMMITTED';
    END IF;
    RETURN true;
END $$;
CREATE FUNCTION fence_parts.row_read(p_role text, p_token bigint) RETURNS boolean
LANGUAGE plpgsql STABLE AS $$
BEGIN
    RETURN EXISTS (SELECT 1 FROM leader_leases
                    WHERE role = p_role AND holder_token = p_token
                      AND expires_at > statement_timestamp());
END $$;
-- Other forms the whole fence could take.
CREATE FUNCTION fence_parts.select_into(p_role text, p_token bigint) RETURNS boolean
LANGUAGE plpgsql STABLE AS $$
BEGIN
    IF current_setting('transaction_isolation') <> 'read committed' THEN
        RAISE EXCEPTION 'needs READ COMMITTED';
    END IF;
    PERFORM FROM leader_leases
      WHERE role = p_role AND holder_token = p_token AND expires_at > statement_timestamp();
    RETURN FOUND;
END $$;
CREATE FUNCTION fence_parts.sql_function(p_role text, p_token bigint) RETURNS boolean
LANGUAGE sql STABLE AS $$
    SELECT EXISTS (SELECT 1 FROM leader_leases
                    WHERE role = p_role AND holder_token = p_token
                      AND expires_at > statement_timestamp())
$$;
";

/// Builds it all on `conn`'s (empty) database, analysed and vacuumed.
///
/// # Errors
///
/// Any statement's error, or an outbox of the wrong size.
pub async fn build(conn: &mut PgConnection) -> Res<()> {
    sqlx::raw_sql(FRAMEWORK_UP).execute(&mut *conn).await?;
    sqlx::raw_sql(OUTBOX).execute(&mut *conn).await?;
    sqlx::raw_sql(SETUP).execute(&mut *conn).await?;
    // VACUUM cannot run inside the implicit transaction of a multi-statement query.
    for table in ["outbox", "leader_leases"] {
        sqlx::raw_sql(sqlx::AssertSqlSafe(format!("VACUUM ANALYZE {table}")))
            .execute(&mut *conn)
            .await?;
    }
    let rows: i64 = sqlx::query_scalar("SELECT count(*) FROM outbox")
        .fetch_one(&mut *conn)
        .await?;
    if rows != OUTBOX_ROWS {
        return Err(format!("the outbox has {rows} rows, not {OUTBOX_ROWS}").into());
    }
    Ok(())
}
