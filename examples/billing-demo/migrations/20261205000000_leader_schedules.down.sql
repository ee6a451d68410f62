-- leader_status and leader_leases as the third migration left them. The view is dropped and
-- re-created (a view cannot lose columns in place), so run leader_grant_app_role again for each
-- application role afterwards: the re-created view has only its owner's privileges.
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
       pause_reason
  FROM leader_leases;
ALTER TABLE leader_leases
    DROP COLUMN schedule,
    DROP COLUMN tick_instant,
    DROP COLUMN following_instant,
    DROP COLUMN last_completed_instant;
