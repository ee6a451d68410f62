-- A role the database leads in 4 shards: the CHECK re-created with it, its row seeded and
-- resharded (`leaderctl roles add` and `leaderctl roles reshard` write these lines).
ALTER TABLE leader_leases DROP CONSTRAINT leader_leases_role_registered;
ALTER TABLE leader_leases ADD CONSTRAINT leader_leases_role_registered
    CHECK (role IN ('billing', 'dunning', 'webhook_outbox', 'reports', 'nightly', 'fanout'));
INSERT INTO leader_leases (role, holder_token) VALUES ('fanout', leader_seed_token())
    ON CONFLICT DO NOTHING;
SELECT leader_reshard('fanout', 4);
