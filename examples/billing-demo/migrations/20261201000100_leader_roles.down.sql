DELETE FROM leader_leases
 WHERE role IN ('billing', 'dunning', 'webhook_outbox', 'email_outbox', 'webhook_delivery');
ALTER TABLE leader_leases DROP CONSTRAINT leader_leases_role_registered;
