-- Undo the sixth migration.

-- The grant as the fifth migration left it.
CREATE OR REPLACE FUNCTION leader_grant_app_role(p_app_role name) RETURNS void
LANGUAGE plpgsql VOLATILE
SET search_path FROM CURRENT
AS $$
BEGIN
    EXECUTE format('GRANT SELECT, UPDATE ON leader_leases TO %I', p_app_role);
    EXECUTE format('GRANT SELECT ON leader_status TO %I', p_app_role);
    EXECUTE format('GRANT EXECUTE ON FUNCTION leader_fence(text, bigint), '
                   'leader_fence(text, integer, integer, bigint), '
                   'leader_pause(text, text, text), leader_unpause(text), '
                   'leader_clear_cooldown(text) TO %I', p_app_role);
END
$$;

DROP FUNCTION leader_unpause_shard(text, integer);
DROP FUNCTION leader_pause_shard(text, integer, text, text);
DROP TABLE leader_presence;
