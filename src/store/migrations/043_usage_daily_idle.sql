-- What the idle list needs of a GPU-day, so that it takes a day the GPU
-- sat idle through as one row instead of 24 hourly ones. Written by the
-- rollup job with the rest of the day's row (usage_daily is summed again
-- from the day's hourly rows in every transaction that writes one of
-- them):
--   hours       the hourly rows summed
--   idle_hours  those of them idle (allocated_s = 0 AND idle_s > 0)
--   uniform     1 when every hour has the day row's team, env, pool,
--               cluster, cloud, model, datacenter_id and currency (those
--               of its first hour), else 0
--   idle_fs     SUM(idle_s x fraction) of the hours
--   idle_cost   SUM(idle_s x fraction x rate_micros), NULL when no hour
--               is priced
-- A day with the defaults (0) is read hour by hour, so rows written before
-- this migration, or by anything but the job, only cost speed.
ALTER TABLE usage_daily ADD COLUMN hours BIGINT NOT NULL DEFAULT 0;
ALTER TABLE usage_daily ADD COLUMN idle_hours BIGINT NOT NULL DEFAULT 0;
ALTER TABLE usage_daily ADD COLUMN uniform BIGINT NOT NULL DEFAULT 0;
ALTER TABLE usage_daily ADD COLUMN idle_fs DOUBLE PRECISION NOT NULL DEFAULT 0;
ALTER TABLE usage_daily ADD COLUMN idle_cost DOUBLE PRECISION;

-- Filled from the hourly rollups already there.
UPDATE usage_daily SET hours = a.hours, idle_hours = a.idle_hours, uniform = a.uniform,
    idle_fs = a.idle_fs, idle_cost = a.idle_cost
FROM (SELECT gpu_id, hour - hour % 86400 AS day, COUNT(*) AS hours,
        SUM(CASE WHEN allocated_s = 0 AND idle_s > 0 THEN 1 ELSE 0 END) AS idle_hours,
        CASE WHEN (COUNT(team) = 0 OR (COUNT(team) = COUNT(*) AND MIN(team) = MAX(team)))
            AND (COUNT(env) = 0 OR (COUNT(env) = COUNT(*) AND MIN(env) = MAX(env)))
            AND (COUNT(pool) = 0 OR (COUNT(pool) = COUNT(*) AND MIN(pool) = MAX(pool)))
            AND (COUNT(cluster) = 0 OR (COUNT(cluster) = COUNT(*) AND MIN(cluster) = MAX(cluster)))
            AND (COUNT(cloud) = 0 OR (COUNT(cloud) = COUNT(*) AND MIN(cloud) = MAX(cloud)))
            AND (COUNT(model) = 0 OR (COUNT(model) = COUNT(*) AND MIN(model) = MAX(model)))
            AND (COUNT(datacenter_id) = 0 OR (COUNT(datacenter_id) = COUNT(*)
                AND MIN(datacenter_id) = MAX(datacenter_id)))
            AND (COUNT(currency) = 0 OR (COUNT(currency) = COUNT(*)
                AND MIN(currency) = MAX(currency)))
            THEN 1 ELSE 0 END AS uniform,
        SUM(idle_s * fraction) AS idle_fs, SUM(idle_s * fraction * rate_micros) AS idle_cost
    FROM usage_hourly GROUP BY gpu_id, hour - hour % 86400) a
WHERE usage_daily.gpu_id = a.gpu_id AND usage_daily.day = a.day;
