ALTER TABLE claims DROP COLUMN shard_count, DROP COLUMN shard_index;
ALTER TABLE grants DROP COLUMN shard_count, DROP COLUMN shard_index;
SELECT leader_reshard('webhook_delivery', 1);
