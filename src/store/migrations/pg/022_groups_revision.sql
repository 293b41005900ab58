-- The rollup revision of a range (the savings cache): the number of
-- day-group rows of its days and their newest updated_at, read from the
-- index alone.
CREATE INDEX usage_groups_daily_updated ON usage_groups_daily(day, updated_at);
