DELETE FROM leader_leases WHERE role IN ('email_outbox', 'daily_report');
ALTER TABLE leader_leases DROP CONSTRAINT IF EXISTS leader_leases_role_registered;
