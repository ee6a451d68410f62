-- Undo 20261212000000_leader_shard_keys.up.sql: the declared shard keys are gone.
DROP FUNCTION leader_shard_key(regclass, name);
DROP TABLE leader_shard_keys;
