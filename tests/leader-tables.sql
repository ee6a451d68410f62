-- The tables this crate's `#[fenced]` claims name, which no migrations folder of the crate
-- creates (its tests create them at run time): `leaderctl schema prepare` runs this file after
-- the migrations, on its scratch database only, so that `leader-schema.json` knows their columns,
-- that they are tables, and the shard key the shard claims on `webhooks` select rows by.
CREATE TABLE webhooks (id bigint PRIMARY KEY, delivered_at timestamptz, claimed_token bigint);
SELECT leader_shard_key('webhooks', 'id');
