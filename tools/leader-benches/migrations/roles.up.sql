-- The benchmark's roles migration, in the shape every application writes: `bench` for the
-- sequential latency cycles, `race` for the contended ACQUIRE, `fence` for the claim-cost runs.
ALTER TABLE leader_leases ADD CONSTRAINT leader_leases_role_registered
    CHECK (role IN ('bench', 'race', 'fence'));
INSERT INTO leader_leases (role, holder_token)
VALUES ('bench', leader_seed_token()), ('race', leader_seed_token()), ('fence', leader_seed_token());
