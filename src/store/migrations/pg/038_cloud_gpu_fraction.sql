-- The share of a whole GPU each of a cloud instance's GPUs is, for the
-- fractional types (AWS g6f: 0.125 to 0.5 of an L4; Azure NVadsA10_v5:
-- 1/6 to 1/2 of an A10); NULL when whole or not known. The usage model
-- counts such a placeholder GPU by its share.
ALTER TABLE cloud_instances ADD COLUMN gpu_fraction DOUBLE PRECISION;
