-- leader_pause as the first migration created it: no floor under the next grant. A not_before a
-- pause already set stays; it is at most one ttl away.
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
           paused_at = coalesce(paused_at, now()), paused_by = p_who, pause_reason = p_why
     WHERE role = p_role;
    IF NOT FOUND THEN
        RAISE EXCEPTION 'leader_pause: unknown role %', quote_literal(p_role)
            USING ERRCODE = '22023',
                  HINT = 'SELECT role FROM leader_status lists the registered roles.';
    END IF;
END
$$;
