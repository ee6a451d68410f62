-- Declares `id` the shard key of `webhook_deliveries`, written by `leaderctl schema shard-key`: every shard
-- claim on the table must select its rows by `leader_shard_of(id, $count) = $index`, which
-- `#[fenced]` checks against the prepared schema (`leaderctl schema prepare` after this migration).
SELECT leader_shard_key('webhook_deliveries', 'id');
