-- A later migration re-defines the constraint with one more role: this list wins.
ALTER TABLE leader_leases DROP CONSTRAINT leader_leases_role_registered;
ALTER TABLE leader_leases ADD CONSTRAINT leader_leases_role_registered
    CHECK (role IN ('billing', 'dunning', 'webhook_outbox'));
