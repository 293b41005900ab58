-- Health and lifecycle rules.
--
-- gpu_health_daily: per GPU and UTC day (day = ts - ts % 86400), what the
-- health score and the rules read, kept by the health:rollup job so that a
-- 30-day rule does not read 30 days of raw samples. xid_events counts the
-- samples whose XID code differs from the previous sample's (a code held
-- over several samples is one event), xid_codes is the JSON array of the
-- day's distinct codes; ecc_*_inc sum the increases of the counters
-- between consecutive readings (a counter going down is a reset and adds
-- nothing), from the last reading before the day on; temp_p95_c is the
-- 95th percentile of the day's raw temperature samples; util_avg and
-- energy_wh come from usage_daily. NULL: no reading of that kind.
-- remap_failures is not collected yet and stays NULL.
CREATE TABLE gpu_health_daily (
    gpu_id BIGINT NOT NULL,
    day BIGINT NOT NULL,
    samples BIGINT NOT NULL,
    xid_events BIGINT NOT NULL,
    xid_codes TEXT NOT NULL DEFAULT '[]',
    ecc_corrected_inc BIGINT,
    ecc_uncorrected_inc BIGINT,
    temp_p95_c DOUBLE PRECISION,
    temp_max_c DOUBLE PRECISION,
    util_avg DOUBLE PRECISION,
    energy_wh DOUBLE PRECISION,
    remap_failures BIGINT,
    updated_at BIGINT NOT NULL,
    PRIMARY KEY (gpu_id, day)
);
CREATE INDEX gpu_health_daily_day ON gpu_health_daily (day);

-- How far the health:rollup job has read usage_daily, by (updated_at,
-- gpu_id, day): a day the usage rollup rewrites (late samples re-dirty it)
-- moves past the watermark and is rolled up again.
CREATE TABLE health_watermark (
    id INTEGER PRIMARY KEY CHECK (id = 1),
    updated_at BIGINT NOT NULL,
    gpu_id BIGINT NOT NULL,
    day BIGINT NOT NULL
);
CREATE INDEX usage_daily_updated ON usage_daily (updated_at);

-- Lifecycle rules: a condition (JSON, docs/LIFECYCLE.md) and the actions
-- taken on every asset it matches. version grows with every change; each
-- change is also in the audit log with the rule before and after.
CREATE TABLE lifecycle_rules (
    id INTEGER PRIMARY KEY,
    name TEXT NOT NULL UNIQUE,
    enabled INTEGER NOT NULL DEFAULT 0,
    condition_json TEXT NOT NULL,
    actions_json TEXT NOT NULL,
    version INTEGER NOT NULL DEFAULT 1,
    created_by TEXT NOT NULL,
    created_at BIGINT NOT NULL,
    updated_by TEXT NOT NULL,
    updated_at BIGINT NOT NULL,
    last_run_at BIGINT,
    last_matched BIGINT
);

-- A spare reserved as the replacement of a failing asset (released_at
-- NULL: still reserved): one open reservation per spare and per asset.
CREATE TABLE asset_reservations (
    id INTEGER PRIMARY KEY,
    spare_id BIGINT NOT NULL,
    for_id BIGINT NOT NULL,
    rule_id BIGINT,
    reserved_at BIGINT NOT NULL,
    released_at BIGINT
);
CREATE UNIQUE INDEX asset_reservations_spare ON asset_reservations (spare_id) WHERE released_at IS NULL;
CREATE UNIQUE INDEX asset_reservations_for ON asset_reservations (for_id) WHERE released_at IS NULL;
