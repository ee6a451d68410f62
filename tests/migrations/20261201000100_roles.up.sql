-- The test application's roles migration: the shape every application writes.
ALTER TABLE leader_leases ADD CONSTRAINT leader_leases_role_registered
    CHECK (role IN ('alpha', 'beta', 'gamma'));
INSERT INTO leader_leases (role, holder_token)
VALUES ('alpha', leader_seed_token()), ('beta', leader_seed_token()), ('gamma', leader_seed_token());
