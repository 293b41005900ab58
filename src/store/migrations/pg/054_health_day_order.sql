-- The health:rollup job reads usage_daily past its watermark in the order
-- (updated_at, day, gpu_id): the GPU-days written at the same moment (a
-- history load, a late batch, a rollup of many GPUs) come a day at a
-- time, so a chunk's GPUs share their days and each day's raw samples are
-- read once per chunk, and the index serves the order without a sort.
-- The watermark's position among the rows of its updated_at restarts at
-- the first one (those GPU-days are recomputed once more, which changes
-- nothing).
DROP INDEX usage_daily_updated;
CREATE INDEX usage_daily_updated ON usage_daily (updated_at, day, gpu_id);
UPDATE health_watermark SET gpu_id = 0, day = 0;
