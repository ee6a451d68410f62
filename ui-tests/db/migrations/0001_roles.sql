-- Used by the tests of `migrations = "db/migrations"`.
ALTER TABLE leader_leases ADD CONSTRAINT leader_leases_role_registered CHECK (role IN ('reports'));
