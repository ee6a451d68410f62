-- The demo's `webhook_delivery` becomes a role of 8 shards (`leaderctl roles reshard
-- webhook_delivery 8` writes this line): each shard is its own lease, and the replicas spread the
-- shards among them. Its claim funnel proves a shard's fence and selects only that shard's
-- deliveries (`leader_shard_of(id, 8)`).
SELECT leader_reshard('webhook_delivery', 8);

-- The audit trail records which shard each grant and claim was for, so the checks compare a
-- token with the earlier tokens of its own shard (the shards of a role hold their leases at
-- once), and check that a shard's claims return only its shard's rows.
ALTER TABLE grants
    ADD COLUMN shard_index integer NOT NULL DEFAULT 0,
    ADD COLUMN shard_count integer NOT NULL DEFAULT 1;
ALTER TABLE claims
    ADD COLUMN shard_index integer NOT NULL DEFAULT 0,
    ADD COLUMN shard_count integer NOT NULL DEFAULT 1;
