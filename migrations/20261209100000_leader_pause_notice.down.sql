-- Undoes 20261209100000_leader_pause_notice: leader_pause and leader_pause_shard as before it,
-- without the NOTIFY.
CREATE OR REPLACE FUNCTION leader_pause(p_role text, p_who text, p_why text DEFAULT NULL) RETURNS void
LANGUAGE plpgsql VOLATILE
SET search_path FROM CURRENT
AS $$
BEGIN
    IF p_who IS NULL OR btrim(p_who) = '' THEN
        RAISE EXCEPTION 'leader_pause(%): say who is pausing it in the second argument', p_role
            USING ERRCODE = '22023';
    END IF;
    UPDATE leader_leases
       SET holder_id = NULL, acquired_at = NULL, expires_at = NULL,
           not_before = greatest(not_before, expires_at),
           paused_at = coalesce(paused_at, now()), paused_by = p_who, pause_reason = p_why
     WHERE role = p_role;
    IF NOT FOUND THEN
        RAISE EXCEPTION 'leader_pause: unknown role %', quote_literal(p_role)
            USING ERRCODE = '22023',
                  HINT = 'SELECT role FROM leader_status lists the registered roles.';
    END IF;
END
$$;

CREATE OR REPLACE FUNCTION leader_pause_shard(p_role text, p_shard_index integer, p_who text,
                                              p_why text DEFAULT NULL) RETURNS void
LANGUAGE plpgsql VOLATILE
SET search_path FROM CURRENT
AS $$
BEGIN
    IF p_who IS NULL OR btrim(p_who) = '' THEN
        RAISE EXCEPTION 'leader_pause_shard(%, %): say who is pausing it in the third argument',
            p_role, p_shard_index
            USING ERRCODE = '22023';
    END IF;
    UPDATE leader_leases
       SET holder_id = NULL, acquired_at = NULL, expires_at = NULL,
           not_before = greatest(not_before, expires_at),
           paused_at = coalesce(paused_at, now()), paused_by = p_who, pause_reason = p_why
     WHERE role = p_role AND shard_index = p_shard_index;
    IF NOT FOUND THEN
        RAISE EXCEPTION 'leader_pause_shard: role % has no shard %', quote_literal(p_role),
            p_shard_index
            USING ERRCODE = '22023',
                  HINT = 'SELECT role, shard_index, shard_count FROM leader_status lists the shards.';
    END IF;
END
$$;
