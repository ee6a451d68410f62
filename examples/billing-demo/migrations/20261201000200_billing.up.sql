-- A small billing service: subscriptions billed per period, dunning of declined invoices, and
-- three queues (webhook outbox, email outbox, webhook deliveries). Periods are seconds long so
-- the demo shows many of them in a minute.

CREATE TABLE subscriptions (
    id              bigserial   PRIMARY KEY,
    customer        text        NOT NULL,
    amount_cents    integer     NOT NULL CHECK (amount_cents > 0),
    period_secs     integer     NOT NULL CHECK (period_secs > 0),
    -- The watermark: billed up to here. A period [billed_until, billed_until + period) is due
    -- once it has ended; billing it moves the watermark forward by compare-and-set.
    billed_until    timestamptz NOT NULL,
    card_declines   boolean     NOT NULL DEFAULT false,
    -- Test hook: billing this subscription panics (a stand-in for a defect on one unusual row).
    panic_on_bill   boolean     NOT NULL DEFAULT false
);
CREATE INDEX subscriptions_due ON subscriptions (billed_until);

CREATE TABLE invoices (
    id              bigserial   PRIMARY KEY,
    subscription_id bigint      NOT NULL REFERENCES subscriptions,
    period_start    timestamptz NOT NULL,
    period_end      timestamptz NOT NULL,
    amount_cents    integer     NOT NULL,
    paid            boolean     NOT NULL DEFAULT false,
    created_at      timestamptz NOT NULL DEFAULT now()
);
-- Idempotency: a period is invoiced once, whoever tries.
CREATE UNIQUE INDEX invoices_one_per_period ON invoices (subscription_id, period_start);

CREATE TABLE dunning_runs (
    id              bigserial   PRIMARY KEY,
    invoice_id      bigint      NOT NULL UNIQUE REFERENCES invoices,
    attempt_count   integer     NOT NULL DEFAULT 0,
    next_attempt_at timestamptz NOT NULL DEFAULT now(),
    status          text        NOT NULL DEFAULT 'open'
        CHECK (status IN ('open', 'recovered', 'exhausted'))
);
CREATE INDEX dunning_runs_due ON dunning_runs (next_attempt_at) WHERE status = 'open';

CREATE TABLE webhook_outbox (
    id              bigserial   PRIMARY KEY,
    event           text        NOT NULL,
    payload         text        NOT NULL,
    claimed_token   bigint,
    dispatched_at   timestamptz
);
CREATE INDEX webhook_outbox_pending ON webhook_outbox (id) WHERE dispatched_at IS NULL;

CREATE TABLE email_outbox (
    id              bigserial   PRIMARY KEY,
    recipient       text        NOT NULL,
    subject         text        NOT NULL,
    claimed_token   bigint,
    sent_at         timestamptz
);
CREATE INDEX email_outbox_pending ON email_outbox (id) WHERE sent_at IS NULL;

CREATE TABLE webhook_deliveries (
    id              bigserial   PRIMARY KEY,
    outbox_id       bigint      NOT NULL UNIQUE REFERENCES webhook_outbox,
    attempt         integer     NOT NULL DEFAULT 0,
    next_retry_at   timestamptz NOT NULL DEFAULT now(),
    status          text        NOT NULL DEFAULT 'pending'
        CHECK (status IN ('pending', 'delivered', 'failed'))
);
CREATE INDEX webhook_deliveries_due ON webhook_deliveries (next_retry_at) WHERE status = 'pending';

-- What left the service: one row per outbound effect (an email sent, a webhook delivery
-- attempted, a card charged), written after the conditional write that allowed it. No unique
-- constraint on purpose: the demo's checks count duplicates here.
CREATE TABLE effects (
    id              bigserial   PRIMARY KEY,
    kind            text        NOT NULL,
    key             text        NOT NULL,
    role            text        NOT NULL,
    token           bigint      NOT NULL,
    at              timestamptz NOT NULL DEFAULT clock_timestamp()
);

-- When the demo stopped taking new billing periods: every period that ended before it must be
-- billed by the end.
CREATE TABLE billing_cutoff (
    cutoff          timestamptz NOT NULL
);

-- The demo's audit trail (src/audit.rs), which its checks (src/checks.rs) read: every grant a
-- job saw, every claim it made with the rows it got, every tick it completed, and every time a
-- lease was stamped completed, each on the database clock. Grants have no unique key on purpose:
-- the checks look for a token issued twice.
CREATE TABLE grants (
    id              bigserial   PRIMARY KEY,
    role            text        NOT NULL,
    token           bigint      NOT NULL,
    holder          text,
    granted_at      timestamptz NOT NULL
);

CREATE TABLE claims (
    id              bigserial   PRIMARY KEY,
    role            text        NOT NULL,
    token           bigint      NOT NULL,
    row_ids         bigint[]    NOT NULL,
    claimed_at      timestamptz NOT NULL
);

CREATE TABLE completions (
    id              bigserial   PRIMARY KEY,
    role            text        NOT NULL,
    token           bigint      NOT NULL,
    at              timestamptz NOT NULL DEFAULT clock_timestamp()
);

CREATE TABLE lease_stamps (
    id              bigserial   PRIMARY KEY,
    role            text        NOT NULL,
    token           bigint      NOT NULL,
    stamped_at      timestamptz NOT NULL
);

CREATE FUNCTION audit_lease_stamp() RETURNS trigger
LANGUAGE plpgsql
AS $$
BEGIN
    INSERT INTO lease_stamps (role, token, stamped_at)
    VALUES (NEW.role, NEW.holder_token, NEW.last_tick_ended_at);
    RETURN NULL;
END
$$;

CREATE TRIGGER leader_leases_audit_stamp
    AFTER UPDATE OF last_tick_ended_at ON leader_leases
    FOR EACH ROW
    WHEN (NEW.last_tick_ended_at IS DISTINCT FROM OLD.last_tick_ended_at)
    EXECUTE FUNCTION audit_lease_stamp();
