-- usage_idle_days: the GPU-days the idle list may take whole, so that it
-- reads one row per such day instead of 24 hourly ones. One row per GPU
-- and UTC day whose 24 hourly rows are all idle (allocated_s = 0 AND
-- idle_s > 0) with one combination of team, env, pool, cluster, cloud,
-- model, datacenter_id and currency (a NULL is a value of its own), which
-- the row carries; idle_fs is SUM(idle_s x fraction) of the hours,
-- idle_cost SUM(idle_s x fraction x rate_micros) (NULL when no hour is
-- priced). The rollup job replaces a GPU's day here in every transaction
-- that sums its usage_daily row again, and prunes the days with the
-- hourly rows (retain_hourly_days). No other writer.
CREATE TABLE usage_idle_days (
    gpu_id BIGINT NOT NULL,
    day BIGINT NOT NULL,
    team TEXT,
    env TEXT,
    pool TEXT,
    cluster TEXT,
    cloud TEXT,
    model TEXT,
    datacenter_id BIGINT,
    currency TEXT,
    idle_fs DOUBLE PRECISION NOT NULL,
    idle_cost DOUBLE PRECISION,
    updated_at BIGINT NOT NULL,
    PRIMARY KEY (gpu_id, day)
);
CREATE INDEX usage_idle_days_day ON usage_idle_days(day);

-- Filled from the hourly rollups already there.
INSERT INTO usage_idle_days (gpu_id, day, team, env, pool, cluster, cloud, model, datacenter_id,
    currency, idle_fs, idle_cost, updated_at)
SELECT gpu_id, hour - hour % 86400, team, env, pool, cluster, cloud, model, datacenter_id,
    currency, SUM(idle_s * fraction), SUM(idle_s * fraction * rate_micros), MAX(updated_at)
FROM usage_hourly WHERE allocated_s = 0 AND idle_s > 0
GROUP BY gpu_id, hour - hour % 86400, team, env, pool, cluster, cloud, model, datacenter_id,
    currency
HAVING COUNT(*) = 24;
