-- The hours whose group rollups (usage_groups_hourly, and their day's
-- usage_groups_daily) must be summed again because some GPU-hour of them
-- was recomputed. Rollup chunks mark an hour here in their own short
-- transaction; the usage:rollup job re-sums each marked hour once, after
-- its chunks, and forgets the mark in the same transaction.
CREATE TABLE usage_groups_dirty (
    hour BIGINT PRIMARY KEY,
    marked_at BIGINT NOT NULL
);
-- The stamp of a dirty GPU-hour's newest mark by new data (ingest, Slurm):
-- each such mark sets a new one, so that the job, which reads the hour's
-- samples before the short transaction that writes the hour, forgets the
-- mark only when no new data came in meanwhile. Marks of the job's own
-- (gaps, the hour in progress) keep 0.
ALTER TABLE usage_dirty ADD COLUMN gen BIGINT NOT NULL DEFAULT 0;
