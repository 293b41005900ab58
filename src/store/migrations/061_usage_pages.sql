-- usage_host_days carries every sum of the row of a host in the usage report,
-- per host, UTC day and currency, so that a paged report by host with no
-- filter reads the figures of its page from a row per host and day instead of
-- one per GPU and day; and usage_gpu_blocks holds the owned GPU-seconds of
-- each GPU per aligned block of four days, so that ranking the GPUs of a
-- paged report by GPU with no filter reads about one row per GPU and four
-- days of the range instead of one per GPU and day.
--
-- usage_host_days: one row per (day, host, currency) of usage_daily (a
-- NULL host, the GPUs with none, is a value of its own; currency is ''
-- when unpriced), with the columns of usage_groups_daily and the same
-- sums (seconds x fraction, costs x rate_micros, gpus the rows summed).
-- usage_gpu_blocks: one row per block start (a multiple of 4 x 86400)
-- and GPU with a daily row in the block, owned_s the sum of owned_s x
-- fraction over those rows. The rollup job rewrites both from the
-- usage_daily rows of a day in every transaction that rewrites its
-- usage_groups_daily rows (the host day, and the block holding the day),
-- a merge of GPU records rewrites the blocks of both GPUs, and retention drops
-- the days and blocks older than the oldest daily group. No other writer.
DROP TABLE usage_host_days;
CREATE TABLE usage_host_days (
    day BIGINT NOT NULL,
    host TEXT,
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
-- The ranking reads the first, the figures of a page the second.
CREATE INDEX usage_host_days_day ON usage_host_days(day, host, owned_s);
CREATE INDEX usage_host_days_host ON usage_host_days(host, day);

CREATE TABLE usage_gpu_blocks (
    start BIGINT NOT NULL,
    gpu_id BIGINT NOT NULL,
    owned_s DOUBLE PRECISION NOT NULL,
    updated_at BIGINT NOT NULL,
    PRIMARY KEY (start, gpu_id)
) WITHOUT ROWID;

-- Filled from the daily rollups already there.
INSERT INTO usage_host_days (day, host, currency, gpus, owned_s, allocated_s, busy_s,
    alloc_idle_s, idle_s, unknown_s, util_sum, measured_s, energy_wh, owned_cost, busy_cost,
    alloc_idle_cost, idle_cost, unknown_cost, unpriced_s, updated_at)
SELECT day, host, COALESCE(currency, ''), COUNT(*), SUM(owned_s * fraction),
    SUM(allocated_s * fraction), SUM(busy_s * fraction), SUM(alloc_idle_s * fraction),
    SUM(idle_s * fraction), SUM(unknown_s * fraction), SUM(util_sum * fraction),
    SUM(measured_s * fraction), SUM(energy_wh), SUM(owned_s * fraction * rate_micros),
    SUM(busy_s * fraction * rate_micros), SUM(alloc_idle_s * fraction * rate_micros),
    SUM(idle_s * fraction * rate_micros), SUM(unknown_s * fraction * rate_micros),
    SUM(CASE WHEN rate_micros IS NULL THEN owned_s * fraction ELSE 0 END), MAX(updated_at)
FROM usage_daily GROUP BY day, host, COALESCE(currency, '');

INSERT INTO usage_gpu_blocks (start, gpu_id, owned_s, updated_at)
SELECT day - day % 345600, gpu_id, SUM(owned_s * fraction), MAX(updated_at)
FROM usage_daily WHERE day >= 0 GROUP BY day - day % 345600, gpu_id;
