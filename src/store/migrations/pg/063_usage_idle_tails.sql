-- usage_idle_days holds each GPU-day's idle tail, no longer only the days
-- idle whole: the run of idle hours (allocated_s = 0 AND idle_s > 0) in
-- one combination of team, env, pool, cluster, cloud, model,
-- datacenter_id and currency (a NULL is a value of its own) that ends at
-- the day's newest hourly row, first_hour to last_hour, with idle_fs and
-- idle_cost its sums. A day idle whole is the tail from the day's first
-- hour to its 24th (first_hour = day, last_hour = day + 82800).
-- idle_before is 1 when the hour before the tail, in the same day, is
-- idle too (in another combination: a run of a filter that both pass goes
-- on there), else 0. The idle list takes the newest and the oldest day of
-- a run from one row each instead of from their hours. The rollup job
-- rewrites a GPU's day here with its usage_daily row, as before.
ALTER TABLE usage_idle_days ADD COLUMN first_hour BIGINT NOT NULL DEFAULT 0;
ALTER TABLE usage_idle_days ADD COLUMN last_hour BIGINT NOT NULL DEFAULT 0;
ALTER TABLE usage_idle_days ADD COLUMN idle_before INTEGER NOT NULL DEFAULT 0;
DELETE FROM usage_idle_days;

-- Filled from the hourly rollups already there: the idle hours of the
-- newest hour's combination, numbered newest first, the n-th in the tail
-- while it is n - 1 hours below the newest. Each day's hours are read by
-- the key (gpu_id, hour) from the day's newest idle hour (the LATERAL
-- subquery, which OFFSET 0 keeps from being merged into the join): joined
-- on gpu_id alone, PostgreSQL merged every idle hour of a GPU with every
-- one of its days, which grows with the square of the days kept (more than
-- 45 minutes at 10,000 GPUs with 90 days of hourly rows).
INSERT INTO usage_idle_days (gpu_id, day, team, env, pool, cluster, cloud, model, datacenter_id,
    currency, idle_fs, idle_cost, first_hour, last_hour, idle_before, updated_at)
SELECT a.gpu_id, a.day, a.team, a.env, a.pool, a.cluster, a.cloud, a.model, a.datacenter_id,
    a.currency, a.fs, a.cost, a.first_hour, a.last_hour,
    CASE WHEN a.first_hour > a.day AND EXISTS (SELECT 1 FROM usage_hourly p
        WHERE p.gpu_id = a.gpu_id AND p.hour = a.first_hour - 3600 AND p.allocated_s = 0
        AND p.idle_s > 0) THEN 1 ELSE 0 END, a.updated_at
FROM (SELECT gpu_id, day, team, env, pool, cluster, cloud, model, datacenter_id, currency,
          SUM(fs) AS fs, SUM(cost) AS cost, MIN(hour) AS first_hour, MAX(hour) AS last_hour,
          MAX(updated_at) AS updated_at
      FROM (SELECT n.gpu_id, n.day, n.top, h.hour, h.team, h.env, h.pool, h.cluster, h.cloud,
                h.model, h.datacenter_id, h.currency, h.idle_s * h.fraction AS fs,
                h.idle_s * h.fraction * h.rate_micros AS cost, h.updated_at,
                ROW_NUMBER() OVER (PARTITION BY n.gpu_id, n.day ORDER BY h.hour DESC) AS rn
            FROM (SELECT gpu_id, hour - hour % 86400 AS day, MAX(hour) AS top FROM usage_hourly
                  GROUP BY gpu_id, hour - hour % 86400) n
            JOIN usage_hourly x ON x.gpu_id = n.gpu_id AND x.hour = n.top
            CROSS JOIN LATERAL (SELECT h.hour, h.team, h.env, h.pool, h.cluster, h.cloud, h.model,
                    h.datacenter_id, h.currency, h.idle_s, h.fraction, h.rate_micros, h.updated_at
                FROM usage_hourly h WHERE h.gpu_id = n.gpu_id AND h.hour >= n.day AND h.hour <= n.top
                  AND h.allocated_s = 0 AND h.idle_s > 0
                  AND h.team IS NOT DISTINCT FROM x.team AND h.env IS NOT DISTINCT FROM x.env
                  AND h.pool IS NOT DISTINCT FROM x.pool AND h.cluster IS NOT DISTINCT FROM x.cluster
                  AND h.cloud IS NOT DISTINCT FROM x.cloud AND h.model IS NOT DISTINCT FROM x.model
                  AND h.datacenter_id IS NOT DISTINCT FROM x.datacenter_id
                  AND h.currency IS NOT DISTINCT FROM x.currency OFFSET 0) h
            WHERE x.allocated_s = 0 AND x.idle_s > 0) t
      WHERE (top - hour) / 3600 + 1 = rn
      GROUP BY gpu_id, day, team, env, pool, cluster, cloud, model, datacenter_id, currency) a;
