DROP TRIGGER leader_leases_audit_stamp ON leader_leases;
DROP FUNCTION audit_lease_stamp();
DROP TABLE lease_stamps, completions, billing_cutoff, claims, grants, effects, webhook_deliveries,
    email_outbox, webhook_outbox, dunning_runs, invoices, subscriptions;
