-- usage_team_hours: usage_groups_hourly summed over every dimension but the
-- team: one row per (hour, team, currency), so that the questions asked
-- with no filter or a team filter alone (the hour-of-week heatmap, a
-- team report with step=hour, the total of a paged host or GPU report
-- over hours) read a row per team and hour instead of one per
-- combination of dimensions. The rollup job rewrites an hour's rows from
-- that hour's group rows in the transaction that rewrites them, and
-- drops the hours that usage_groups_hourly no longer holds once they are
-- past the hourly retention. Columns: those of usage_groups_hourly.
CREATE TABLE usage_team_hours (
    hour BIGINT NOT NULL,
    team TEXT,
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

CREATE INDEX usage_team_hours_hour ON usage_team_hours(hour, team);

-- Filled from the hour groups already there.
INSERT INTO usage_team_hours (hour, team, currency, gpus, owned_s, allocated_s, busy_s,
    alloc_idle_s, idle_s, unknown_s, util_sum, measured_s, energy_wh, owned_cost, busy_cost,
    alloc_idle_cost, idle_cost, unknown_cost, unpriced_s, updated_at)
SELECT hour, team, currency, SUM(gpus), SUM(owned_s), SUM(allocated_s), SUM(busy_s),
    SUM(alloc_idle_s), SUM(idle_s), SUM(unknown_s), SUM(util_sum), SUM(measured_s),
    SUM(energy_wh), SUM(owned_cost), SUM(busy_cost), SUM(alloc_idle_cost), SUM(idle_cost),
    SUM(unknown_cost), SUM(unpriced_s), MAX(updated_at)
FROM usage_groups_hourly
GROUP BY hour, team, currency;
