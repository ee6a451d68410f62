-- The billing service's leader roles: listed in the role CHECK (which #[leader_role] reads at
-- compile time, and the runtime checks at start-up) and seeded with a clock-based first token.
ALTER TABLE leader_leases ADD CONSTRAINT leader_leases_role_registered
    CHECK (role IN ('billing', 'dunning', 'webhook_outbox', 'email_outbox', 'webhook_delivery'));

INSERT INTO leader_leases (role, holder_token)
VALUES ('billing', leader_seed_token()),
       ('dunning', leader_seed_token()),
       ('webhook_outbox', leader_seed_token()),
       ('email_outbox', leader_seed_token()),
       ('webhook_delivery', leader_seed_token());
