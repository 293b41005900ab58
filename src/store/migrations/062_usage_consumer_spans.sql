-- usage_consumer_spans: the consumer days (usage_consumers_daily) summed
-- over aligned spans of 2, 4, 8, 16 and 32 days, so that a range of whole
-- days is read from O(log) rows per consumer instead of one per day. A
-- span of len days starts at `day`, a day whose number (day / 86400) is a
-- multiple of len. One row per span and combination of the consumer day
-- columns that usage_consumers_daily groups by (gpu_id, kind, consumer,
-- consumer_team, team, env, pool, cluster, cloud, model, datacenter_id,
-- host_id, currency) of the consumer days inside it: hours, idle_hours,
-- the seconds, energy and costs summed, first_hour and first_idle_hour
-- the least, last_hour, util_max, updated_at and the descriptive columns
-- (namespace ... project, host) the greatest. A span of 2 days sums the
-- consumer days, a longer one the two spans of half its length inside
-- it. The rows are always the sums of the consumer days there are: every
-- writer of usage_consumers_daily rewrites the spans holding the days it
-- rewrote in the same transaction (usage_spans.c: the rollup job, the
-- redo of owners and prices, a GPU merge, retention). No unique index:
-- usage_spans.c is the only writer and replaces a GPU's span at once.
CREATE TABLE usage_consumer_spans (
    len BIGINT NOT NULL,
    day BIGINT NOT NULL,
    gpu_id BIGINT NOT NULL,
    kind TEXT NOT NULL,
    consumer TEXT NOT NULL,
    consumer_team TEXT,
    namespace TEXT,
    pod TEXT,
    container TEXT,
    username TEXT,
    process TEXT,
    tenant TEXT,
    project TEXT,
    team TEXT,
    env TEXT,
    pool TEXT,
    cluster TEXT,
    cloud TEXT,
    model TEXT,
    datacenter_id BIGINT,
    host_id BIGINT,
    host TEXT,
    currency TEXT,
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

-- Filled from the consumer days already there, each length from the one
-- below it; the indexes after the rows.
INSERT INTO usage_consumer_spans (len, day, gpu_id, kind, consumer, consumer_team,
    namespace, pod, container, username, process, tenant, project, team, env, pool, cluster,
    cloud, model, datacenter_id, host_id, host, currency, hours, idle_hours, first_hour,
    last_hour, first_idle_hour, held_s, allocated_s, busy_s, alloc_idle_s, util_sum, measured_s,
    util_max, energy_wh, allocated_cost, busy_cost, alloc_idle_cost, unpriced_s, updated_at)
SELECT 2, day - day % 172800, gpu_id, kind, consumer, consumer_team, MAX(namespace), MAX(pod),
    MAX(container), MAX(username), MAX(process), MAX(tenant), MAX(project), team, env, pool,
    cluster, cloud, model, datacenter_id, host_id, MAX(host), currency, SUM(hours),
    SUM(idle_hours), MIN(first_hour), MAX(last_hour), MIN(first_idle_hour), SUM(held_s),
    SUM(allocated_s), SUM(busy_s), SUM(alloc_idle_s), SUM(util_sum), SUM(measured_s),
    MAX(util_max), SUM(energy_wh), SUM(allocated_cost), SUM(busy_cost), SUM(alloc_idle_cost),
    SUM(unpriced_s), MAX(updated_at)
FROM usage_consumers_daily
GROUP BY day - day % 172800, gpu_id, kind, consumer, consumer_team, team, env, pool, cluster,
    cloud, model, datacenter_id, host_id, currency;
INSERT INTO usage_consumer_spans (len, day, gpu_id, kind, consumer, consumer_team,
    namespace, pod, container, username, process, tenant, project, team, env, pool, cluster,
    cloud, model, datacenter_id, host_id, host, currency, hours, idle_hours, first_hour,
    last_hour, first_idle_hour, held_s, allocated_s, busy_s, alloc_idle_s, util_sum, measured_s,
    util_max, energy_wh, allocated_cost, busy_cost, alloc_idle_cost, unpriced_s, updated_at)
SELECT 4, day - day % 345600, gpu_id, kind, consumer, consumer_team, MAX(namespace), MAX(pod),
    MAX(container), MAX(username), MAX(process), MAX(tenant), MAX(project), team, env, pool,
    cluster, cloud, model, datacenter_id, host_id, MAX(host), currency, SUM(hours),
    SUM(idle_hours), MIN(first_hour), MAX(last_hour), MIN(first_idle_hour), SUM(held_s),
    SUM(allocated_s), SUM(busy_s), SUM(alloc_idle_s), SUM(util_sum), SUM(measured_s),
    MAX(util_max), SUM(energy_wh), SUM(allocated_cost), SUM(busy_cost), SUM(alloc_idle_cost),
    SUM(unpriced_s), MAX(updated_at)
FROM usage_consumer_spans WHERE len = 2
GROUP BY day - day % 345600, gpu_id, kind, consumer, consumer_team, team, env, pool, cluster,
    cloud, model, datacenter_id, host_id, currency;
INSERT INTO usage_consumer_spans (len, day, gpu_id, kind, consumer, consumer_team,
    namespace, pod, container, username, process, tenant, project, team, env, pool, cluster,
    cloud, model, datacenter_id, host_id, host, currency, hours, idle_hours, first_hour,
    last_hour, first_idle_hour, held_s, allocated_s, busy_s, alloc_idle_s, util_sum, measured_s,
    util_max, energy_wh, allocated_cost, busy_cost, alloc_idle_cost, unpriced_s, updated_at)
SELECT 8, day - day % 691200, gpu_id, kind, consumer, consumer_team, MAX(namespace), MAX(pod),
    MAX(container), MAX(username), MAX(process), MAX(tenant), MAX(project), team, env, pool,
    cluster, cloud, model, datacenter_id, host_id, MAX(host), currency, SUM(hours),
    SUM(idle_hours), MIN(first_hour), MAX(last_hour), MIN(first_idle_hour), SUM(held_s),
    SUM(allocated_s), SUM(busy_s), SUM(alloc_idle_s), SUM(util_sum), SUM(measured_s),
    MAX(util_max), SUM(energy_wh), SUM(allocated_cost), SUM(busy_cost), SUM(alloc_idle_cost),
    SUM(unpriced_s), MAX(updated_at)
FROM usage_consumer_spans WHERE len = 4
GROUP BY day - day % 691200, gpu_id, kind, consumer, consumer_team, team, env, pool, cluster,
    cloud, model, datacenter_id, host_id, currency;
INSERT INTO usage_consumer_spans (len, day, gpu_id, kind, consumer, consumer_team,
    namespace, pod, container, username, process, tenant, project, team, env, pool, cluster,
    cloud, model, datacenter_id, host_id, host, currency, hours, idle_hours, first_hour,
    last_hour, first_idle_hour, held_s, allocated_s, busy_s, alloc_idle_s, util_sum, measured_s,
    util_max, energy_wh, allocated_cost, busy_cost, alloc_idle_cost, unpriced_s, updated_at)
SELECT 16, day - day % 1382400, gpu_id, kind, consumer, consumer_team, MAX(namespace), MAX(pod),
    MAX(container), MAX(username), MAX(process), MAX(tenant), MAX(project), team, env, pool,
    cluster, cloud, model, datacenter_id, host_id, MAX(host), currency, SUM(hours),
    SUM(idle_hours), MIN(first_hour), MAX(last_hour), MIN(first_idle_hour), SUM(held_s),
    SUM(allocated_s), SUM(busy_s), SUM(alloc_idle_s), SUM(util_sum), SUM(measured_s),
    MAX(util_max), SUM(energy_wh), SUM(allocated_cost), SUM(busy_cost), SUM(alloc_idle_cost),
    SUM(unpriced_s), MAX(updated_at)
FROM usage_consumer_spans WHERE len = 8
GROUP BY day - day % 1382400, gpu_id, kind, consumer, consumer_team, team, env, pool, cluster,
    cloud, model, datacenter_id, host_id, currency;
INSERT INTO usage_consumer_spans (len, day, gpu_id, kind, consumer, consumer_team,
    namespace, pod, container, username, process, tenant, project, team, env, pool, cluster,
    cloud, model, datacenter_id, host_id, host, currency, hours, idle_hours, first_hour,
    last_hour, first_idle_hour, held_s, allocated_s, busy_s, alloc_idle_s, util_sum, measured_s,
    util_max, energy_wh, allocated_cost, busy_cost, alloc_idle_cost, unpriced_s, updated_at)
SELECT 32, day - day % 2764800, gpu_id, kind, consumer, consumer_team, MAX(namespace), MAX(pod),
    MAX(container), MAX(username), MAX(process), MAX(tenant), MAX(project), team, env, pool,
    cluster, cloud, model, datacenter_id, host_id, MAX(host), currency, SUM(hours),
    SUM(idle_hours), MIN(first_hour), MAX(last_hour), MIN(first_idle_hour), SUM(held_s),
    SUM(allocated_s), SUM(busy_s), SUM(alloc_idle_s), SUM(util_sum), SUM(measured_s),
    MAX(util_max), SUM(energy_wh), SUM(allocated_cost), SUM(busy_cost), SUM(alloc_idle_cost),
    SUM(unpriced_s), MAX(updated_at)
FROM usage_consumer_spans WHERE len = 16
GROUP BY day - day % 2764800, gpu_id, kind, consumer, consumer_team, team, env, pool, cluster,
    cloud, model, datacenter_id, host_id, currency;
CREATE INDEX usage_consumer_spans_day ON usage_consumer_spans(len, day, team);
CREATE INDEX usage_consumer_spans_gpu ON usage_consumer_spans(gpu_id, len, day);
