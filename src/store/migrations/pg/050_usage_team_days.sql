-- usage_team_days: the day groups summed over every dimension but the
-- owner team, with the GPUs behind them, so that waste by team with no
-- filter but the team's reads a row per team and day instead of one per
-- combination of dimensions, and counts its distinct GPUs without
-- reading a row per GPU and day. One row per UTC day, team (a NULL team
-- is a value of its own) and currency ('' without a rate) of usage_daily:
-- the sums of usage_groups_daily's columns of the same names over those
-- rows (seconds x fraction, cost as seconds x fraction x rate_micros); gpus
-- how many GPUs they are, gpu_ids their ids and alloc_idle_ids those of
-- them with allocated-idle seconds (NULL when none), ids joined by commas
-- in no particular order. The rollup job rewrites a day's rows from its
-- usage_daily rows in every transaction that rewrites its
-- usage_groups_daily rows, and drops the days older than the oldest day
-- group then. No other writer.
CREATE TABLE usage_team_days (
    day BIGINT NOT NULL,
    team TEXT COLLATE "C",
    currency TEXT COLLATE "C" NOT NULL,
    gpus BIGINT NOT NULL,
    owned_s DOUBLE PRECISION NOT NULL,
    alloc_idle_s DOUBLE PRECISION NOT NULL,
    idle_s DOUBLE PRECISION NOT NULL,
    owned_cost DOUBLE PRECISION,
    alloc_idle_cost DOUBLE PRECISION,
    idle_cost DOUBLE PRECISION,
    gpu_ids TEXT COLLATE "C" NOT NULL,
    alloc_idle_ids TEXT COLLATE "C",
    updated_at BIGINT NOT NULL
);
CREATE INDEX usage_team_days_day ON usage_team_days(day, team);

-- Filled from the daily rollups already there.
INSERT INTO usage_team_days (day, team, currency, gpus, owned_s, alloc_idle_s, idle_s,
    owned_cost, alloc_idle_cost, idle_cost, gpu_ids, alloc_idle_ids, updated_at)
SELECT day, team, COALESCE(currency, ''), COUNT(*), SUM(owned_s * fraction),
    SUM(alloc_idle_s * fraction), SUM(idle_s * fraction), SUM(owned_s * fraction * rate_micros),
    SUM(alloc_idle_s * fraction * rate_micros), SUM(idle_s * fraction * rate_micros),
    string_agg(CAST(gpu_id AS TEXT), ','), string_agg(CASE WHEN alloc_idle_s > 0 THEN CAST(gpu_id AS TEXT) END, ','),
    MAX(updated_at)
FROM usage_daily GROUP BY day, team, COALESCE(currency, '');
