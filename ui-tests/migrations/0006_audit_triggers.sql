-- Two tables with an audit trigger each: a statement-level one, which PostgreSQL fires once per
-- UPDATE even when the UPDATE changes no row, and a row-level one, fired only for changed rows.
CREATE TABLE audit_log (at timestamptz NOT NULL DEFAULT now());
CREATE FUNCTION log_change() RETURNS trigger LANGUAGE plpgsql
    AS $$ BEGIN INSERT INTO audit_log DEFAULT VALUES; RETURN NULL; END $$;
CREATE TABLE audited (id bigint PRIMARY KEY, done boolean NOT NULL DEFAULT false);
CREATE TRIGGER audited_each_statement AFTER UPDATE ON audited
    FOR EACH STATEMENT EXECUTE FUNCTION log_change();
CREATE TABLE row_audited (id bigint PRIMARY KEY, done boolean NOT NULL DEFAULT false);
CREATE TRIGGER row_audited_each_row AFTER UPDATE ON row_audited
    FOR EACH ROW EXECUTE FUNCTION log_change();
