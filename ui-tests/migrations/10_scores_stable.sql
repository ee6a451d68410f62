-- Runs after `9_scores.sql`: `score(integer)` is IMMUTABLE from here on, `score(text)` stays
-- VOLATILE.
ALTER FUNCTION score(integer) IMMUTABLE;
