-- Tables the migrations do not create (here: created by another team's tooling), declared so that
-- `#[fenced]` knows their columns. Read by `#[fenced]` only, never run.
CREATE TABLE audit.events (id bigint, seen boolean);
