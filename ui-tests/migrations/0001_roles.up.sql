-- The roles the ui tests' jobs use, registered as an application registers its own.
ALTER TABLE leader_leases ADD CONSTRAINT leader_leases_role_registered
    CHECK (role IN ('billing', 'dunning'));
