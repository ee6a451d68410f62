DROP TABLE billing_cutoff, claims, grants, effects, webhook_deliveries, email_outbox, webhook_outbox,
    dunning_runs, invoices, subscriptions;
