-- The runtime benchmark's roles migration (runtime-bench), in the shape every application writes:
-- `idle` for the runtime's idle load, `naive` for the polling baseline, `takeover` for the
-- kill-the-leader drill.
ALTER TABLE leader_leases ADD CONSTRAINT leader_leases_role_registered
    CHECK (role IN ('idle', 'naive', 'takeover'));
INSERT INTO leader_leases (role, holder_token)
VALUES ('idle', leader_seed_token()), ('naive', leader_seed_token()), ('takeover', leader_seed_token());
