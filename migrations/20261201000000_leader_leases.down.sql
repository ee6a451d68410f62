DROP FUNCTION leader_grant_app_role(name);
DROP VIEW leader_status;
DROP FUNCTION leader_unpause(text);
DROP FUNCTION leader_pause(text, text, text);
DROP FUNCTION leader_fence(text, bigint);
DROP FUNCTION leader_seed_token();
DROP TABLE leader_leases;
