-- The application's table its claim changes.
CREATE TABLE jobs (id bigint PRIMARY KEY, owner bigint);
