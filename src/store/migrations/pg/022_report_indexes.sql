-- Indexes for the reports that read the daily tables.
-- The rollup revision of a range (the savings cache): the number of
-- day-group rows of its days and their newest updated_at, read from the
-- index alone.
CREATE INDEX usage_groups_daily_updated ON usage_groups_daily(day, updated_at);

-- The showback's TCO reads the days of the GPUs on one host (a host
-- linked to an inventory server with a purchase cost).
CREATE INDEX usage_daily_host_id ON usage_daily(host_id, day);
