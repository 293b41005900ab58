-- usage_groups_daily: the usage reports' sums per UTC day and group, so
-- that a report by a dimension reads a few rows a day instead of one per
-- GPU. One row per (day, team, env, pool, cluster, cloud, model,
-- datacenter_id, currency) of usage_daily; a NULL dimension is a group of
-- its own (GROUP BY puts NULLs together on both stores; currency is ''
-- when unpriced). No unique index: the rollup job is the only writer and
-- replaces a whole day's rows at once (delete, then insert ... select ...
-- group by from usage_daily) in the transaction that re-sums its days.
-- Seconds are x fraction (a MIG slice counts its share), as are util_sum
-- and measured_s; *_cost are seconds x fraction x rate_micros
-- (micro-unit-seconds, NULL when nothing in the group is priced);
-- unpriced_s the owned seconds x fraction without a rate; gpus the
-- GPU-day rows summed.
CREATE TABLE usage_groups_daily (
    day BIGINT NOT NULL,
    team TEXT COLLATE "C",
    env TEXT COLLATE "C",
    pool TEXT COLLATE "C",
    cluster TEXT COLLATE "C",
    cloud TEXT COLLATE "C",
    model TEXT COLLATE "C",
    datacenter_id BIGINT,
    currency TEXT COLLATE "C" NOT NULL,
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
CREATE INDEX usage_groups_daily_day ON usage_groups_daily(day, team);

-- The report by host or GPU reads usage_daily, most often by team.
CREATE INDEX usage_daily_day_team ON usage_daily(day, team);

-- Filled from the daily rollups already there.
INSERT INTO usage_groups_daily (day, team, env, pool, cluster, cloud, model, datacenter_id,
    currency, gpus, owned_s, allocated_s, busy_s, alloc_idle_s, idle_s, unknown_s, util_sum,
    measured_s, energy_wh, owned_cost, busy_cost, alloc_idle_cost, idle_cost, unknown_cost,
    unpriced_s, updated_at)
SELECT day, team, env, pool, cluster, cloud, model, datacenter_id, COALESCE(currency, ''),
    COUNT(*), SUM(owned_s * fraction), SUM(allocated_s * fraction), SUM(busy_s * fraction),
    SUM(alloc_idle_s * fraction), SUM(idle_s * fraction), SUM(unknown_s * fraction),
    SUM(util_sum * fraction), SUM(measured_s * fraction), SUM(energy_wh),
    SUM(owned_s * fraction * rate_micros), SUM(busy_s * fraction * rate_micros),
    SUM(alloc_idle_s * fraction * rate_micros), SUM(idle_s * fraction * rate_micros),
    SUM(unknown_s * fraction * rate_micros),
    SUM(CASE WHEN rate_micros IS NULL THEN owned_s * fraction ELSE 0 END), MAX(updated_at)
FROM usage_daily
GROUP BY day, team, env, pool, cluster, cloud, model, datacenter_id, COALESCE(currency, '');
