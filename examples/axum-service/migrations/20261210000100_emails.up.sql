-- The service's own tables: the email outbox that `POST /emails` fills and the `email_outbox`
-- role drains, a stand-in for the mail provider's log, and the reports of `daily_report`.

CREATE TABLE emails (
    id            bigserial   PRIMARY KEY,
    recipient     text        NOT NULL,
    subject       text        NOT NULL,
    body          text        NOT NULL,
    enqueued_at   timestamptz NOT NULL DEFAULT now(),
    -- The token of the tick that last claimed it: the send completes only for that token.
    claimed_token bigint,
    sent_at       timestamptz,
    sent_by       text,
    -- The report that counted it (each sent email is counted by exactly one report).
    reported_in   bigint
);
CREATE INDEX emails_unsent ON emails (id) WHERE sent_at IS NULL;
CREATE INDEX emails_unreported ON emails (id) WHERE sent_at IS NOT NULL AND reported_in IS NULL;

-- What the mail provider was asked to deliver: one row per send, written in the transaction that
-- marks the email sent. No unique key on purpose, so a second send of one email would show as a
-- second row rather than as an error.
CREATE TABLE email_deliveries (
    id           bigserial   PRIMARY KEY,
    email_id     bigint      NOT NULL REFERENCES emails,
    token        bigint      NOT NULL,
    sent_by      text        NOT NULL,
    delivered_at timestamptz NOT NULL DEFAULT now()
);

-- The report watermark: how many reports were written. A report is written by compare-and-set on
-- it, so two ticks that read the same count write one report between them.
CREATE TABLE report_state (
    id              integer PRIMARY KEY DEFAULT 1 CHECK (id = 1),
    reports_written bigint NOT NULL DEFAULT 0
);
INSERT INTO report_state DEFAULT VALUES;

CREATE TABLE email_reports (
    seq         bigint      PRIMARY KEY,
    emails_sent bigint      NOT NULL,
    token       bigint      NOT NULL,
    written_by  text        NOT NULL,
    written_at  timestamptz NOT NULL DEFAULT now()
);
