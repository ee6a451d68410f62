-- The tables of the everyday shard claims, each keyed by its declared shard key: the endpoints
-- a webhook goes to, and the attempts of a webhook (keyed by the webhook, its parent).
CREATE TABLE endpoints (id bigint PRIMARY KEY, paused boolean NOT NULL DEFAULT false);
CREATE TABLE webhook_attempts (webhook_id bigint NOT NULL, attempt integer NOT NULL);
SELECT leader_shard_key('endpoints', 'id');
SELECT leader_shard_key('webhook_attempts', 'webhook_id');
