-- The application's tables the `#[fenced]` cases name: `#[fenced]` knows their columns from the
-- prepared schema (`leader-schema.json`) to tell `j.id` (a column) from a call `id(j)`. `outbox`
-- is left out on purpose.
CREATE TABLE jobs (id bigint PRIMARY KEY, owner text, runs int NOT NULL DEFAULT 0, due timestamptz);
CREATE TABLE runs (job_id bigint NOT NULL, started_at timestamptz);
CREATE TABLE batch (id bigint NOT NULL);
CREATE TABLE queue (id bigint NOT NULL);
-- A VOLATILE function (the default): `#[fenced]` lets it stand only where PostgreSQL never
-- evaluates it for a superseded leader.
CREATE TABLE notes (job_id bigint NOT NULL);
CREATE FUNCTION note_claimed(bigint) RETURNS bigint LANGUAGE sql
    AS $$ INSERT INTO notes VALUES ($1) RETURNING job_id $$;
-- The queue the shard claims lock: a table, so a lock lands on the rows the query returns, keyed
-- for shards by `id` (`leaderctl schema shard-key webhook_queue id` writes the line).
CREATE TABLE webhook_queue (id bigint PRIMARY KEY, taken_by bigint, endpoint_id bigint);
SELECT leader_shard_key('webhook_queue', 'id');
