-- usage_consumers_daily: the per-consumer rollup per UTC day, so that the
-- consumer report and the consumer insight lists read one row per GPU,
-- consumer and day instead of one per hour. One row per (day, gpu_id,
-- kind, consumer, consumer_team, team, env, pool, cluster, cloud, model,
-- datacenter_id, host_id, currency) of the day's usage_consumers rows
-- joined with their usage_hourly rows: the dimensions are those of each
-- hour (team is the GPU owner's team at the hour, consumer_team the
-- consumer's), so that an owner change mid-day splits the day and every
-- filter selects exactly the hours it selects in the hourly rows; a NULL
-- dimension is a value of its own. No unique index: the rollup job is the
-- only writer and replaces a GPU's day at once (delete, then insert ...
-- select ... group by) in the transaction that recomputes its hours,
-- re-attributes or re-prices them.
-- held_s is the allocated seconds as they are; allocated_s, busy_s,
-- alloc_idle_s, util_sum and measured_s are x fraction (a MIG slice counts
-- its share); energy_wh the consumer's share of the GPU's energy
-- (energy x allocated_s / owned_s); *_cost are seconds x fraction x
-- rate_micros (micro-unit-seconds, NULL when no hour is priced);
-- unpriced_s the allocated seconds x fraction without a rate. hours
-- counts the hourly rows summed, idle_hours those wholly allocated-idle
-- (busy_s = 0 and alloc_idle_s > 0); first_hour / last_hour the first and
-- last of them, first_idle_hour the first with alloc_idle_s > 0.
CREATE TABLE usage_consumers_daily (
    day BIGINT NOT NULL,
    gpu_id BIGINT NOT NULL,
    kind TEXT COLLATE "C" NOT NULL,
    consumer TEXT COLLATE "C" NOT NULL,
    consumer_team TEXT COLLATE "C",
    namespace TEXT COLLATE "C",
    pod TEXT COLLATE "C",
    container TEXT COLLATE "C",
    username TEXT COLLATE "C",
    process TEXT COLLATE "C",
    tenant TEXT COLLATE "C",
    project TEXT COLLATE "C",
    team TEXT COLLATE "C",
    env TEXT COLLATE "C",
    pool TEXT COLLATE "C",
    cluster TEXT COLLATE "C",
    cloud TEXT COLLATE "C",
    model TEXT COLLATE "C",
    datacenter_id BIGINT,
    host_id BIGINT,
    host TEXT COLLATE "C",
    currency TEXT COLLATE "C",
    hours BIGINT NOT NULL,
    idle_hours BIGINT NOT NULL,
    first_hour BIGINT NOT NULL,
    last_hour BIGINT NOT NULL,
    first_idle_hour BIGINT,
    held_s DOUBLE PRECISION NOT NULL,
    allocated_s DOUBLE PRECISION NOT NULL,
    busy_s DOUBLE PRECISION NOT NULL,
    alloc_idle_s DOUBLE PRECISION NOT NULL,
    util_sum DOUBLE PRECISION NOT NULL,
    measured_s DOUBLE PRECISION NOT NULL,
    util_max DOUBLE PRECISION,
    energy_wh DOUBLE PRECISION NOT NULL,
    allocated_cost DOUBLE PRECISION,
    busy_cost DOUBLE PRECISION,
    alloc_idle_cost DOUBLE PRECISION,
    unpriced_s DOUBLE PRECISION NOT NULL,
    updated_at BIGINT NOT NULL
);
CREATE INDEX usage_consumers_daily_day ON usage_consumers_daily(day, team);
CREATE INDEX usage_consumers_daily_gpu ON usage_consumers_daily(gpu_id, day);

-- Filled from the hourly consumer rollups already there.
INSERT INTO usage_consumers_daily (day, gpu_id, kind, consumer, consumer_team, namespace, pod,
    container, username, process, tenant, project, team, env, pool, cluster, cloud, model,
    datacenter_id, host_id, host, currency, hours, idle_hours, first_hour, last_hour,
    first_idle_hour, held_s, allocated_s, busy_s, alloc_idle_s, util_sum, measured_s, util_max,
    energy_wh, allocated_cost, busy_cost, alloc_idle_cost, unpriced_s, updated_at)
SELECT u.hour - u.hour % 86400, u.gpu_id, u.kind, u.consumer, u.team, MAX(u.namespace),
    MAX(u.pod), MAX(u.container), MAX(u.username), MAX(u.process), MAX(u.tenant),
    MAX(u.project), h.team, h.env, h.pool, h.cluster, h.cloud, h.model, h.datacenter_id,
    h.host_id, MAX(h.host), h.currency, COUNT(*),
    SUM(CASE WHEN u.busy_s = 0 AND u.alloc_idle_s > 0 THEN 1 ELSE 0 END), MIN(u.hour),
    MAX(u.hour), MIN(CASE WHEN u.alloc_idle_s > 0 THEN u.hour END), SUM(u.allocated_s),
    SUM(u.allocated_s * h.fraction), SUM(u.busy_s * h.fraction), SUM(u.alloc_idle_s * h.fraction),
    SUM(u.util_sum * h.fraction), SUM(u.measured_s * h.fraction), MAX(u.util_max),
    SUM(CASE WHEN h.owned_s > 0 THEN h.energy_wh * u.allocated_s / h.owned_s ELSE 0 END),
    SUM(u.allocated_s * h.fraction * h.rate_micros), SUM(u.busy_s * h.fraction * h.rate_micros),
    SUM(u.alloc_idle_s * h.fraction * h.rate_micros),
    SUM(CASE WHEN h.rate_micros IS NULL THEN u.allocated_s * h.fraction ELSE 0 END),
    MAX(h.updated_at)
FROM usage_consumers u JOIN usage_hourly h ON h.gpu_id = u.gpu_id AND h.hour = u.hour
WHERE u.allocated_s > 0
GROUP BY u.hour - u.hour % 86400, u.gpu_id, u.kind, u.consumer, u.team, h.team, h.env, h.pool,
    h.cluster, h.cloud, h.model, h.datacenter_id, h.host_id, h.currency;
