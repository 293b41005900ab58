-- Usage over time, derived from the raw samples by the usage:rollup job.
--
-- usage_hourly: one row per GPU and UTC hour (hour = ts - ts % 3600) with
-- the owner in force at the start of the hour, the GPU's model and place
-- then, and every second of the hour classified: owned_s = busy_s +
-- alloc_idle_s + idle_s + unknown_s, allocated_s = busy_s + alloc_idle_s;
-- measured_s is what samples covered, util_sum / mem_sum are the value x
-- covered seconds (averages = sum / measured_s), energy_wh the measured
-- energy. fraction is the share of a whole GPU (a MIG slice: 1/7, ...);
-- rate_micros / currency / price_id the catalog rate in force at the hour
-- (micro-units per GPU-hour; NULL when no entry covers the GPU).
CREATE TABLE usage_hourly (
    gpu_id BIGINT NOT NULL,
    hour BIGINT NOT NULL,
    team TEXT,
    env TEXT,
    pool TEXT,
    cluster TEXT,
    cloud TEXT,
    model TEXT,
    datacenter_id BIGINT,
    host_id BIGINT,
    host TEXT,
    owned_s DOUBLE PRECISION NOT NULL,
    allocated_s DOUBLE PRECISION NOT NULL,
    busy_s DOUBLE PRECISION NOT NULL,
    alloc_idle_s DOUBLE PRECISION NOT NULL,
    idle_s DOUBLE PRECISION NOT NULL,
    unknown_s DOUBLE PRECISION NOT NULL,
    measured_s DOUBLE PRECISION NOT NULL,
    util_sum DOUBLE PRECISION NOT NULL,
    util_max DOUBLE PRECISION,
    mem_max_mib DOUBLE PRECISION,
    mem_sum DOUBLE PRECISION NOT NULL,
    energy_wh DOUBLE PRECISION NOT NULL,
    temp_max_c DOUBLE PRECISION,
    power_max_w DOUBLE PRECISION,
    fraction DOUBLE PRECISION NOT NULL DEFAULT 1,
    rate_micros BIGINT,
    currency TEXT,
    price_id BIGINT,
    updated_at BIGINT NOT NULL,
    PRIMARY KEY (gpu_id, hour)
);
CREATE INDEX usage_hourly_hour ON usage_hourly(hour);

-- usage_daily: the same per GPU and UTC day (day = ts - ts % 86400): sums of
-- the day's hours, maxima of their maxima, owner and rate of the day's first
-- owned hour.
CREATE TABLE usage_daily (
    gpu_id BIGINT NOT NULL,
    day BIGINT NOT NULL,
    team TEXT,
    env TEXT,
    pool TEXT,
    cluster TEXT,
    cloud TEXT,
    model TEXT,
    datacenter_id BIGINT,
    host_id BIGINT,
    host TEXT,
    owned_s DOUBLE PRECISION NOT NULL,
    allocated_s DOUBLE PRECISION NOT NULL,
    busy_s DOUBLE PRECISION NOT NULL,
    alloc_idle_s DOUBLE PRECISION NOT NULL,
    idle_s DOUBLE PRECISION NOT NULL,
    unknown_s DOUBLE PRECISION NOT NULL,
    measured_s DOUBLE PRECISION NOT NULL,
    util_sum DOUBLE PRECISION NOT NULL,
    util_max DOUBLE PRECISION,
    mem_max_mib DOUBLE PRECISION,
    mem_sum DOUBLE PRECISION NOT NULL,
    energy_wh DOUBLE PRECISION NOT NULL,
    temp_max_c DOUBLE PRECISION,
    power_max_w DOUBLE PRECISION,
    fraction DOUBLE PRECISION NOT NULL DEFAULT 1,
    rate_micros BIGINT,
    currency TEXT,
    price_id BIGINT,
    updated_at BIGINT NOT NULL,
    PRIMARY KEY (gpu_id, day)
);
CREATE INDEX usage_daily_day ON usage_daily(day);

-- Per GPU, hour and consumer: kind k8s (consumer 'namespace/pod/container'),
-- process ('user/process' or the container), inventory ('tenant/project') or
-- unknown (busy with nobody known). team is the consumer's team (a rule on
-- its namespace or user) or the GPU owner's.
CREATE TABLE usage_consumers (
    gpu_id BIGINT NOT NULL,
    hour BIGINT NOT NULL,
    kind TEXT NOT NULL,
    consumer TEXT NOT NULL,
    team TEXT,
    namespace TEXT,
    pod TEXT,
    container TEXT,
    username TEXT,
    process TEXT,
    tenant TEXT,
    project TEXT,
    allocated_s DOUBLE PRECISION NOT NULL,
    busy_s DOUBLE PRECISION NOT NULL,
    alloc_idle_s DOUBLE PRECISION NOT NULL,
    util_sum DOUBLE PRECISION NOT NULL,
    measured_s DOUBLE PRECISION NOT NULL,
    util_max DOUBLE PRECISION,
    PRIMARY KEY (gpu_id, hour, kind, consumer)
);
CREATE INDEX usage_consumers_hour ON usage_consumers(hour);

-- Who used which GPU when: consecutive hours of one consumer on one GPU
-- merged into one interval (ended_at NULL: still open).
CREATE TABLE usage_intervals (
    id INTEGER PRIMARY KEY,
    gpu_id BIGINT NOT NULL,
    kind TEXT NOT NULL,
    consumer TEXT NOT NULL,
    team TEXT,
    namespace TEXT,
    pod TEXT,
    container TEXT,
    username TEXT,
    process TEXT,
    tenant TEXT,
    project TEXT,
    started_at BIGINT NOT NULL,
    ended_at BIGINT,
    updated_at BIGINT NOT NULL
);
CREATE INDEX usage_intervals_gpu ON usage_intervals(gpu_id, started_at);
CREATE INDEX usage_intervals_consumer ON usage_intervals(gpu_id, kind, consumer, started_at);

-- GPU-hours whose rollup is out of date: marked by ingest inside its
-- transaction (and by the job for the open hours), cleared by the job once
-- recomputed.
CREATE TABLE usage_dirty (
    hour BIGINT NOT NULL,
    gpu_id BIGINT NOT NULL,
    marked_at BIGINT NOT NULL,
    PRIMARY KEY (hour, gpu_id)
);

-- Re-attribution (what = 'owner') or re-pricing ('price') of the stored
-- rollups of one GPU (gpu_id 0: all) from from_hour on, queued by the
-- ownership and price writers and worked off by the job in bounded chunks;
-- next_hour / next_gpu is how far it got.
CREATE TABLE usage_redo (
    id INTEGER PRIMARY KEY,
    what TEXT NOT NULL,
    gpu_id BIGINT NOT NULL,
    from_hour BIGINT NOT NULL,
    next_hour BIGINT NOT NULL,
    next_gpu BIGINT NOT NULL DEFAULT 0,
    created_at BIGINT NOT NULL
);

-- Per GPU: the earliest reading the rollups have seen (the start of its
-- owned span).
CREATE TABLE usage_gpus (
    gpu_id BIGINT PRIMARY KEY,
    owned_from BIGINT NOT NULL,
    updated_at BIGINT NOT NULL
);
