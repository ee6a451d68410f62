-- Two more roles, registered as `leaderctl roles add` writes them (the CHECK re-created with
-- every role), in a file numbered after the down-only `0003`: sqlx runs it last.
ALTER TABLE leader_leases DROP CONSTRAINT leader_leases_role_registered;
ALTER TABLE leader_leases ADD CONSTRAINT leader_leases_role_registered
    CHECK (role IN ('billing', 'dunning', 'webhook_outbox', 'reports', 'nightly'));
