-- usage_consumer_totals: the consumer days (usage_consumers_daily) summed
-- over their GPUs, so that the usage report by consumer reads one row per
-- consumer, day and block of 64 GPU ids instead of one per GPU, consumer
-- and day. One row per (day, kind, consumer, gpu_block, team, env, pool,
-- cluster, cloud, model, datacenter_id, currency) of the consumer days:
-- gpu_block the GPUs' id / 64, so that rewriting a few GPUs' day sums a
-- consumer held by thousands of GPUs (consumer "unknown") from at most 64
-- GPUs' rows again, not from all of them; then the dimensions the report
-- filters by and the currency it splits by (team is the GPU owner's team,
-- as in usage_consumers_daily); part numbering the rows of one consumer's
-- day and block (1, 2, ...: its combinations of dimensions and currency,
-- in no particular order) for the primary key, which keeps a day's rows
-- together for the report's range of days; gpu_rows counts the
-- consumer days summed, the seconds, energy and costs are their sums
-- (a cost NULL where none of them is priced), updated_at the greatest.
-- The rows are always the sums of the consumer days there are: every
-- writer of usage_consumers_daily sums the totals of the consumers of the
-- days it rewrote again in the same transaction (usage_consumer_totals.c:
-- the rollup job, the redo of owners and prices, a GPU merge, retention),
-- each consumer's day and block from its rows found through
-- usage_consumers_daily_consumer, replaced at once.
CREATE TABLE usage_consumer_totals (
    day BIGINT NOT NULL,
    kind TEXT NOT NULL,
    consumer TEXT NOT NULL,
    gpu_block BIGINT NOT NULL,
    part BIGINT NOT NULL,
    team TEXT,
    env TEXT,
    pool TEXT,
    cluster TEXT,
    cloud TEXT,
    model TEXT,
    datacenter_id BIGINT,
    currency TEXT,
    gpu_rows BIGINT NOT NULL,
    allocated_s DOUBLE PRECISION NOT NULL,
    busy_s DOUBLE PRECISION NOT NULL,
    alloc_idle_s DOUBLE PRECISION NOT NULL,
    util_sum DOUBLE PRECISION NOT NULL,
    measured_s DOUBLE PRECISION NOT NULL,
    energy_wh DOUBLE PRECISION NOT NULL,
    allocated_cost DOUBLE PRECISION,
    busy_cost DOUBLE PRECISION,
    alloc_idle_cost DOUBLE PRECISION,
    unpriced_s DOUBLE PRECISION NOT NULL,
    updated_at BIGINT NOT NULL,
    PRIMARY KEY (day, consumer, kind, gpu_block, part)
) WITHOUT ROWID;

-- Filled from the consumer days already there; the indexes after the rows.
INSERT INTO usage_consumer_totals (day, kind, consumer, gpu_block, part, team, env, pool,
    cluster, cloud, model, datacenter_id, currency, gpu_rows, allocated_s, busy_s, alloc_idle_s,
    util_sum, measured_s, energy_wh, allocated_cost, busy_cost, alloc_idle_cost, unpriced_s,
    updated_at)
SELECT day, kind, consumer, gpu_id / 64,
    ROW_NUMBER() OVER (PARTITION BY day, kind, consumer, gpu_id / 64), team, env, pool, cluster,
    cloud, model, datacenter_id, currency, COUNT(*), SUM(allocated_s), SUM(busy_s),
    SUM(alloc_idle_s), SUM(util_sum), SUM(measured_s), SUM(energy_wh), SUM(allocated_cost),
    SUM(busy_cost), SUM(alloc_idle_cost), SUM(unpriced_s), MAX(updated_at)
FROM usage_consumers_daily
GROUP BY day, kind, consumer, gpu_id / 64, team, env, pool, cluster, cloud, model, datacenter_id,
    currency;
CREATE INDEX usage_consumer_totals_day ON usage_consumer_totals(day, team);
CREATE INDEX usage_consumers_daily_consumer ON usage_consumers_daily(day, consumer, gpu_id);
