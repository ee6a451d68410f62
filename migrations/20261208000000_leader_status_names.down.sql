-- leader_status as the fifth migration left it: without holder_id, acquired_at, not_before and
-- next_due_at. A view cannot drop columns in place, so it is dropped and created again (a view an
-- application built on it must be dropped first), and the grant is run again below for every
-- role granted before.
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
       last_completed_instant,
       shard_index,
       shard_count
  FROM leader_leases;

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
