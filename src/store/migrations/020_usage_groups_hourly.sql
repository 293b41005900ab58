-- usage_groups_hourly: the usage reports' sums per UTC hour and group, as
-- usage_groups_daily is per day, so that a report by a dimension with
-- step=hour (or over a range that is not whole days) and the hour-of-week
-- heatmap read a few rows an hour instead of one per GPU. One row per
-- (hour, team, env, pool, cluster, cloud, model, datacenter_id, currency)
-- of usage_hourly; a NULL dimension is a group of its own; currency is ''
-- when unpriced. No unique index: the rollup job is the only writer and
-- replaces a whole hour's rows at once (delete, then insert ... select ...
-- group by from usage_hourly) in each transaction that writes usage_hourly
-- rows of that hour. The columns are those of usage_groups_daily (seconds
-- x fraction, *_cost micro-unit-seconds, gpus the GPU-hour rows summed).
-- Kept as long as the hourly rollups (retain_hourly_days).
CREATE TABLE usage_groups_hourly (
    hour BIGINT NOT NULL,
    team TEXT,
    env TEXT,
    pool TEXT,
    cluster TEXT,
    cloud TEXT,
    model TEXT,
    datacenter_id BIGINT,
    currency TEXT NOT NULL,
    gpus BIGINT NOT NULL,
    owned_s DOUBLE PRECISION NOT NULL,
    allocated_s DOUBLE PRECISION NOT NULL,
    busy_s DOUBLE PRECISION NOT NULL,
    alloc_idle_s DOUBLE PRECISION NOT NULL,
    idle_s DOUBLE PRECISION NOT NULL,
    unknown_s DOUBLE PRECISION NOT NULL,
    util_sum DOUBLE PRECISION NOT NULL,
    measured_s DOUBLE PRECISION NOT NULL,
    energy_wh DOUBLE PRECISION NOT NULL,
    owned_cost DOUBLE PRECISION,
    busy_cost DOUBLE PRECISION,
    alloc_idle_cost DOUBLE PRECISION,
    idle_cost DOUBLE PRECISION,
    unknown_cost DOUBLE PRECISION,
    unpriced_s DOUBLE PRECISION NOT NULL,
    updated_at BIGINT NOT NULL
);
CREATE INDEX usage_groups_hourly_hour ON usage_groups_hourly(hour, team);

-- The host and GPU reports rank their groups with one aggregate over the
-- range (owned seconds per GPU or host); with no filter or a team filter
-- this index answers it without reading the table. It replaces 017's
-- (day, team), whose prefix it has.
DROP INDEX usage_daily_day_team;
CREATE INDEX usage_daily_rank ON usage_daily(day, team, gpu_id, host, owned_s, fraction);
CREATE INDEX usage_hourly_rank ON usage_hourly(hour, team, gpu_id, host, owned_s, fraction);
-- The steps of one host of a page.
CREATE INDEX usage_daily_host ON usage_daily(host, day);
CREATE INDEX usage_hourly_host ON usage_hourly(host, hour);

-- Filled from the hourly rollups already there.
INSERT INTO usage_groups_hourly (hour, team, env, pool, cluster, cloud, model, datacenter_id,
    currency, gpus, owned_s, allocated_s, busy_s, alloc_idle_s, idle_s, unknown_s, util_sum,
    measured_s, energy_wh, owned_cost, busy_cost, alloc_idle_cost, idle_cost, unknown_cost,
    unpriced_s, updated_at)
SELECT hour, team, env, pool, cluster, cloud, model, datacenter_id, COALESCE(currency, ''),
    COUNT(*), SUM(owned_s * fraction), SUM(allocated_s * fraction), SUM(busy_s * fraction),
    SUM(alloc_idle_s * fraction), SUM(idle_s * fraction), SUM(unknown_s * fraction),
    SUM(util_sum * fraction), SUM(measured_s * fraction), SUM(energy_wh),
    SUM(owned_s * fraction * rate_micros), SUM(busy_s * fraction * rate_micros),
    SUM(alloc_idle_s * fraction * rate_micros), SUM(idle_s * fraction * rate_micros),
    SUM(unknown_s * fraction * rate_micros),
    SUM(CASE WHEN rate_micros IS NULL THEN owned_s * fraction ELSE 0 END), MAX(updated_at)
FROM usage_hourly
GROUP BY hour, team, env, pool, cluster, cloud, model, datacenter_id, COALESCE(currency, '');
