-- Tables the migrations do not create (here: created by another team's tooling), declared so that
-- `#[fenced]` knows their columns. `leaderctl schema prepare` runs it after the migrations, on its
-- scratch database only.
CREATE SCHEMA audit;
CREATE TABLE audit.events (id bigint, seen boolean);
