-- usage_host_days: the owned GPU-seconds of each host and UTC day, so
-- that a paged report by host with no filter ranks the hosts from a row
-- per host and day instead of one per GPU and day. One row per day and
-- host (a NULL host, the GPUs with none, is a value of its own) of
-- usage_daily: owned_s the sum of owned_s x fraction over those rows,
-- gpus how many rows they are. The rollup job rewrites a day's rows from
-- its usage_daily rows in every transaction that rewrites its
-- usage_groups_daily rows, and drops the days older than the oldest day
-- group then; a reader does not use the days that retention may be
-- pruning. No other writer.
CREATE TABLE usage_host_days (
    day BIGINT NOT NULL,
    host TEXT COLLATE "C",
    gpus BIGINT NOT NULL,
    owned_s DOUBLE PRECISION NOT NULL,
    updated_at BIGINT NOT NULL
);
CREATE INDEX usage_host_days_day ON usage_host_days(day, host, owned_s);

-- Filled from the daily rollups already there.
INSERT INTO usage_host_days (day, host, gpus, owned_s, updated_at)
SELECT day, host, COUNT(*), SUM(owned_s * fraction), MAX(updated_at)
FROM usage_daily GROUP BY day, host;
