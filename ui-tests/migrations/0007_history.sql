-- What only the server knows after a migration history: a view's column named by PostgreSQL
-- (`coalesce`), a partition's column renamed through its parent, a `CREATE TABLE IF NOT EXISTS`
-- the server skips, a table of another schema, and a function a `DO` block creates.
CREATE VIEW job_due AS SELECT id, coalesce(due, now()) FROM jobs;
CREATE TABLE events (id bigint NOT NULL, kind text NOT NULL) PARTITION BY LIST (kind);
CREATE TABLE events_mail PARTITION OF events FOR VALUES IN ('mail');
ALTER TABLE events RENAME COLUMN kind TO category;
CREATE TABLE IF NOT EXISTS jobs (id bigint, take_budget integer);
CREATE SCHEMA billing;
CREATE TABLE billing.invoices (id bigint PRIMARY KEY, state text NOT NULL);
DO $$ BEGIN
    EXECUTE 'CREATE FUNCTION made_by_do(bigint) RETURNS bigint LANGUAGE sql VOLATILE
             AS $f$ INSERT INTO notes VALUES ($1) RETURNING job_id $f$';
END $$;
