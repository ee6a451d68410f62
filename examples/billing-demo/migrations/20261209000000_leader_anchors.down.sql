-- Anchors removed: leases free only at their expiry again.
DROP FUNCTION leader_anchor_ended(integer, timestamptz, timestamptz);
ALTER TABLE leader_presence
    DROP CONSTRAINT leader_presence_anchor_whole,
    DROP COLUMN anchor_pid,
    DROP COLUMN anchor_start,
    DROP COLUMN anchor_recorded_at;
ALTER TABLE leader_leases
    DROP CONSTRAINT leader_leases_anchor_whole,
    DROP COLUMN holder_anchor_pid,
    DROP COLUMN holder_anchor_start;
