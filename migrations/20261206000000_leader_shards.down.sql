-- Undo the fifth migration. Refuses while a role is sharded: unshard it first
-- (SELECT leader_reshard(role, 1)), since the earlier schema keys a role's one row on role.
DO $$
BEGIN
    IF EXISTS (SELECT 1 FROM leader_leases WHERE shard_count > 1) THEN
        RAISE EXCEPTION 'leader_shards down: a role is still sharded'
            USING HINT = 'Run SELECT leader_reshard(role, 1) for each sharded role first.';
    END IF;
END
$$;

-- leader_status without the shard columns (a view cannot drop columns in place).
DROP VIEW leader_status;
CREATE VIEW leader_status AS
SELECT role,
       CASE
           WHEN paused_at IS NOT NULL THEN 'paused'
           WHEN holder_id IS NOT NULL AND expires_at > now() THEN 'leading'
           WHEN holder_id IS NOT NULL THEN 'expired'
           WHEN not_before > now() THEN 'cooldown'
           ELSE 'idle'
       END                        AS state,
       holder_id                  AS leader,
       holder_token               AS token,
       acquired_at                AS leading_since,
       expires_at,
       last_tick_ended_at,
       last_tick_holder,
       now() - last_tick_ended_at AS last_tick_age,
       not_before                 AS cooldown_until,
       paused_at,
       paused_by,
       pause_reason,
       schedule,
       CASE
           WHEN tick_instant IS NULL THEN NULL
           WHEN last_completed_instant IS NULL OR tick_instant > last_completed_instant THEN tick_instant
           ELSE following_instant
       END                        AS next_instant,
       last_completed_instant
  FROM leader_leases;

-- Re-granted below, with the rest, to the roles that could execute leader_unpause.

-- leader_fence and leader_grant_app_role as the first and second migrations made them.
CREATE OR REPLACE FUNCTION leader_fence(p_role text, p_token bigint) RETURNS boolean
LANGUAGE plpgsql STABLE
AS $$
BEGIN
    IF current_setting('transaction_isolation') <> 'read committed' THEN
        RAISE EXCEPTION 'leader_fence(%, %) needs READ COMMITTED isolation, not %',
            p_role, p_token, current_setting('transaction_isolation')
            USING ERRCODE = '0A000',
                  HINT = 'Run fenced claims in autocommit or a READ COMMITTED transaction: a snapshot '
                         'older than the statement can miss a takeover.';
    END IF;
    -- Released and paused rows have no expiry (leader_leases_held_has_holder_and_expiry,
    -- leader_leases_paused_is_unheld), so the expiry test also covers them.
    RETURN EXISTS (
        SELECT 1
          FROM leader_leases
         WHERE role = p_role
           AND holder_token = p_token
           AND expires_at > statement_timestamp()
    );
END
$$;

CREATE OR REPLACE FUNCTION leader_grant_app_role(p_app_role name) RETURNS void
LANGUAGE plpgsql VOLATILE
SET search_path FROM CURRENT
AS $$
BEGIN
    EXECUTE format('GRANT SELECT, UPDATE ON leader_leases TO %I', p_app_role);
    EXECUTE format('GRANT SELECT ON leader_status TO %I', p_app_role);
    EXECUTE format('GRANT EXECUTE ON FUNCTION leader_fence(text, bigint), '
                   'leader_pause(text, text, text), leader_unpause(text), '
                   'leader_clear_cooldown(text) TO %I', p_app_role);
END
$$;

DROP FUNCTION leader_reshard(text, integer);
DROP FUNCTION leader_shard_of(bigint, integer), leader_shard_of(text, integer),
    leader_shard_of(uuid, integer);
DROP FUNCTION leader_fence(text, integer, integer, bigint);

-- The primary key back on role alone (leader_reshard may have moved it to (role, shard_index)).
ALTER TABLE leader_leases DROP CONSTRAINT leader_leases_pkey;
DROP INDEX IF EXISTS leader_leases_role_shard;
ALTER TABLE leader_leases ADD CONSTRAINT leader_leases_pkey PRIMARY KEY (role);
ALTER TABLE leader_leases DROP CONSTRAINT leader_leases_shard_in_count,
    DROP COLUMN shard_count, DROP COLUMN shard_index;

DO $$
DECLARE
    grantee name;
BEGIN
    FOR grantee IN
        SELECT r.rolname
          FROM pg_proc p
         CROSS JOIN LATERAL aclexplode(p.proacl) a
          JOIN pg_roles r ON r.oid = a.grantee
         WHERE p.oid = 'leader_unpause(text)'::regprocedure
           AND a.privilege_type = 'EXECUTE'
           AND a.grantee <> p.proowner
    LOOP
        PERFORM leader_grant_app_role(grantee);
    END LOOP;
END
$$;
