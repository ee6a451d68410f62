-- Undo the ninth migration: no tick history, no operator functions or audit.

-- The grant as the sixth migration left it.
CREATE OR REPLACE FUNCTION leader_grant_app_role(p_app_role name) RETURNS void
LANGUAGE plpgsql VOLATILE
SET search_path FROM CURRENT
AS $$
BEGIN
    EXECUTE format('GRANT SELECT, UPDATE ON leader_leases TO %I', p_app_role);
    EXECUTE format('GRANT SELECT, INSERT, UPDATE, DELETE ON leader_presence TO %I', p_app_role);
    EXECUTE format('GRANT SELECT ON leader_status TO %I', p_app_role);
    EXECUTE format('GRANT EXECUTE ON FUNCTION leader_fence(text, bigint), '
                   'leader_fence(text, integer, integer, bigint), '
                   'leader_pause(text, text, text), leader_unpause(text), '
                   'leader_pause_shard(text, integer, text, text), '
                   'leader_unpause_shard(text, integer), '
                   'leader_clear_cooldown(text) TO %I', p_app_role);
END
$$;

DROP FUNCTION leader_grant_operator_role(name);
DROP FUNCTION leader_operator_clear_cooldown(text, text, text);
DROP FUNCTION leader_operator_unpause(text, integer, text, text);
DROP FUNCTION leader_operator_pause(text, integer, text, text);
DROP TABLE leader_operator_actions;
DROP TRIGGER leader_tick_history_continue ON leader_leases;
DROP FUNCTION leader_tick_history_continue();
DROP TRIGGER leader_tick_history_paused ON leader_leases;
DROP FUNCTION leader_tick_history_paused();
DROP TABLE leader_tick_history;
ALTER TABLE leader_leases DROP COLUMN ticks_granted;
DROP FUNCTION leader_tick_history_slots();
