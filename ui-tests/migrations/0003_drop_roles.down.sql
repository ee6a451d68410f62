-- Down migrations are skipped by the compile-time check, though this one sorts last.
ALTER TABLE leader_leases DROP CONSTRAINT leader_leases_role_registered;
ALTER TABLE leader_leases ADD CONSTRAINT leader_leases_role_registered CHECK (role IN ('down_only'));
