-- The tables this crate's `#[fenced]` claims name, which no migrations folder of the crate
-- creates (its tests create them at run time): `#[fenced]` reads them to know their columns and
-- that they are tables. Read by `#[fenced]` only, never run.
CREATE TABLE webhooks (id bigint PRIMARY KEY, delivered_at timestamptz, claimed_token bigint);
