-- `webhook_deliveries` has no declared shard key again.
DELETE FROM leader_shard_keys WHERE relation = 'webhook_deliveries'::regclass;
