-- The demo's audit of its calendar role (`billing` runs on `* * * * * *`, missed = each): every
-- scheduled instant the lease row records as completed, with the token that completed it and
-- when that tick was granted, written by a trigger from the lease row itself. The checks read it:
-- no instant completed twice or before it was due, none skipped.
CREATE TABLE instant_stamps (
    id         bigserial   PRIMARY KEY,
    role       text        NOT NULL,
    token      bigint      NOT NULL,
    instant    timestamptz NOT NULL,
    granted_at timestamptz NOT NULL
);

CREATE FUNCTION audit_instant_stamp() RETURNS trigger
LANGUAGE plpgsql
AS $$
BEGIN
    -- RELEASE clears the holder in the same UPDATE: the tick's token and grant are OLD's.
    INSERT INTO instant_stamps (role, token, instant, granted_at)
    VALUES (NEW.role, OLD.holder_token, NEW.last_completed_instant, OLD.acquired_at);
    RETURN NULL;
END
$$;

CREATE TRIGGER leader_leases_audit_instant
    AFTER UPDATE OF last_completed_instant ON leader_leases
    FOR EACH ROW
    WHEN (NEW.last_completed_instant IS DISTINCT FROM OLD.last_completed_instant)
    EXECUTE FUNCTION audit_instant_stamp();
