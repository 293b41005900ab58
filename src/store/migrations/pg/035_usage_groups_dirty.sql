-- The hours whose group rollups (usage_groups_hourly, and their day's
-- usage_groups_daily) must be summed again because some GPU-hour of them
-- was recomputed. Rollup chunks mark an hour here in their own short
-- transaction; the usage:rollup job re-sums each marked hour once, after
-- its chunks, and forgets the mark in the same transaction.
CREATE TABLE usage_groups_dirty (
    hour BIGINT PRIMARY KEY,
    marked_at BIGINT NOT NULL
);
