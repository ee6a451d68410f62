-- The runtime benchmark's roles migration (runtime-bench), in the shape every application writes:
-- `idle` for the runtime's idle load, `naive` for the polling baseline, `takeover` for the
-- kill-the-leader drill, `handoff` for the clean-shutdown handoff, `scale_000` to `scale_099` for the idle load over many roles,
-- `sharded_takeover` for the kill of a sharded role's replica (sharded by the bench itself, with
-- `leader_reshard`, so that its shard count is stated once, in the bench's code), `pause` for a
-- pause reaching the running tick.
ALTER TABLE leader_leases ADD CONSTRAINT leader_leases_role_registered
    CHECK (role IN ('idle', 'naive', 'takeover', 'handoff', 'sharded_takeover', 'pause',
     'scale_000', 'scale_001', 'scale_002', 'scale_003', 'scale_004', 'scale_005', 'scale_006', 'scale_007', 'scale_008', 'scale_009',
     'scale_010', 'scale_011', 'scale_012', 'scale_013', 'scale_014', 'scale_015', 'scale_016', 'scale_017', 'scale_018', 'scale_019',
     'scale_020', 'scale_021', 'scale_022', 'scale_023', 'scale_024', 'scale_025', 'scale_026', 'scale_027', 'scale_028', 'scale_029',
     'scale_030', 'scale_031', 'scale_032', 'scale_033', 'scale_034', 'scale_035', 'scale_036', 'scale_037', 'scale_038', 'scale_039',
     'scale_040', 'scale_041', 'scale_042', 'scale_043', 'scale_044', 'scale_045', 'scale_046', 'scale_047', 'scale_048', 'scale_049',
     'scale_050', 'scale_051', 'scale_052', 'scale_053', 'scale_054', 'scale_055', 'scale_056', 'scale_057', 'scale_058', 'scale_059',
     'scale_060', 'scale_061', 'scale_062', 'scale_063', 'scale_064', 'scale_065', 'scale_066', 'scale_067', 'scale_068', 'scale_069',
     'scale_070', 'scale_071', 'scale_072', 'scale_073', 'scale_074', 'scale_075', 'scale_076', 'scale_077', 'scale_078', 'scale_079',
     'scale_080', 'scale_081', 'scale_082', 'scale_083', 'scale_084', 'scale_085', 'scale_086', 'scale_087', 'scale_088', 'scale_089',
     'scale_090', 'scale_091', 'scale_092', 'scale_093', 'scale_094', 'scale_095', 'scale_096', 'scale_097', 'scale_098', 'scale_099'));
INSERT INTO leader_leases (role, holder_token)
VALUES ('idle', leader_seed_token()), ('naive', leader_seed_token()), ('takeover', leader_seed_token()),
       ('handoff', leader_seed_token()), ('sharded_takeover', leader_seed_token()),
       ('pause', leader_seed_token());
INSERT INTO leader_leases (role, holder_token)
SELECT format('scale_%s', lpad(i::text, 3, '0')), leader_seed_token() FROM generate_series(0, 99) AS i;
