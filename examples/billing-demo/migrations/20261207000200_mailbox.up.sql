-- The mail provider the email outbox sends through, as the demo's stand-in for the outside world:
-- one row per send it accepted, duplicates included. A send writes it in a statement of its own,
-- never in the transaction that stamps the email sent, as a real HTTP call cannot join that
-- transaction. A real provider delivers one message per idempotency key; the demo keeps every
-- request so its checks can count the duplicates and compare their keys (src/checks.rs).
CREATE TABLE mailbox (
    id              bigserial   PRIMARY KEY,
    -- Which outbox row the message is (the checks' ground truth; a real provider sees only the
    -- recipient, the message and the key).
    email_id        bigint      NOT NULL REFERENCES email_outbox,
    idempotency_key text        NOT NULL,
    -- The fence token of the tick that sent it.
    token           bigint      NOT NULL,
    received_at     timestamptz NOT NULL DEFAULT clock_timestamp()
);
CREATE INDEX mailbox_email ON mailbox (email_id);
CREATE INDEX mailbox_key ON mailbox (idempotency_key);
