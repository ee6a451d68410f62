DROP TRIGGER leader_leases_audit_instant ON leader_leases;
DROP FUNCTION audit_instant_stamp();
DROP TABLE instant_stamps;
