DELETE FROM leader_leases WHERE role IN ('alpha', 'beta', 'gamma');
ALTER TABLE leader_leases DROP CONSTRAINT leader_leases_role_registered;
