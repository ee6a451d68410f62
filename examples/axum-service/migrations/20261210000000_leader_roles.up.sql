-- Registers the leader roles email_outbox, daily_report (written by `leaderctl roles add`): the role CHECK is
-- re-created with every role registered so far, and each role has a row.
ALTER TABLE leader_leases DROP CONSTRAINT IF EXISTS leader_leases_role_registered;
ALTER TABLE leader_leases ADD CONSTRAINT leader_leases_role_registered
    CHECK (role IN ('email_outbox', 'daily_report'));

INSERT INTO leader_leases (role, holder_token)
VALUES ('email_outbox', leader_seed_token()),
       ('daily_report', leader_seed_token())
ON CONFLICT (role) DO NOTHING;
