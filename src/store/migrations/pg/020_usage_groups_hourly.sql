-- usage_groups_hourly: the usage reports' sums per UTC hour and group, as
-- usage_groups_daily is per day, so that a report by a dimension with
-- step=hour (or over a range that is not whole days) and the hour-of-week
-- heatmap read a few rows an hour instead of one per GPU. One row per
-- (hour, team, env, pool, cluster, cloud, model, datacenter_id, currency)
-- of usage_hourly; a NULL dimension is a group of its own; currency is ''
-- when unpriced. No unique index: the rollup job is the only writer and
-- replaces a whole hour's rows at once (delete, then insert ... select ...
-- group by from usage_hourly) in each transaction that writes usage_hourly
-- rows of that hour. The columns are those of usage_groups_daily (seconds
-- x fraction, *_cost micro-unit-seconds, gpus the GPU-hour rows summed).
-- Kept as long as the hourly rollups (retain_hourly_days).
-- On PostgreSQL the table is partitioned by month of `hour`
-- (usage_groups_hourly_pYYYYMM, and a DEFAULT partition for what falls
-- outside them): gi_usage_groups_hourly_partitions() keeps the current and
-- the next month's partitions ready and drops those past retention.
CREATE TABLE usage_groups_hourly (
    hour BIGINT NOT NULL,
    team TEXT COLLATE "C",
    env TEXT COLLATE "C",
    pool TEXT COLLATE "C",
    cluster TEXT COLLATE "C",
    cloud TEXT COLLATE "C",
    model TEXT COLLATE "C",
    datacenter_id BIGINT,
    currency TEXT COLLATE "C" NOT NULL,
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
) PARTITION BY RANGE (hour);
CREATE TABLE usage_groups_hourly_default PARTITION OF usage_groups_hourly DEFAULT;
CREATE INDEX usage_groups_hourly_hour ON usage_groups_hourly(hour, team);

-- gi_usage_groups_hourly_partitions(now_s, keep_days): makes sure the UTC
-- month holding now_s and the next one have their partitions (moving rows
-- of those months out of the DEFAULT partition into the new one), drops
-- every partition whose whole range ends keep_days or more before now_s
-- and deletes DEFAULT-partition rows that old. Returns how many partitions
-- it created plus how many it dropped (0 when nothing changed, so calling
-- it every run is cheap). keep_days must be >= 1.
CREATE FUNCTION gi_usage_groups_hourly_partitions(now_s BIGINT, keep_days INT)
RETURNS INT LANGUAGE plpgsql AS $fn$
DECLARE
    parent REGCLASS := 'usage_groups_hourly'::REGCLASS;
    dflt REGCLASS;
    nsp TEXT;
    cutoff BIGINT;
    month_start TIMESTAMP;
    lo BIGINT;
    hi BIGINT;
    part TEXT;
    bounds TEXT[];
    child RECORD;
    rel REGCLASS;
    old_parts REGCLASS[] := '{}';
    new_months TIMESTAMP[] := '{}';
    changed INT := 0;
BEGIN
    IF now_s IS NULL OR keep_days IS NULL OR keep_days < 1 THEN
        RAISE EXCEPTION 'gi_usage_groups_hourly_partitions: now_s and keep_days >= 1 are required';
    END IF;
    cutoff := now_s - keep_days::BIGINT * 86400;
    SELECT n.nspname INTO nsp FROM pg_class c JOIN pg_namespace n ON n.oid = c.relnamespace
    WHERE c.oid = parent;
    LOCK TABLE usage_groups_hourly IN SHARE UPDATE EXCLUSIVE MODE;
    FOR child IN
        SELECT c.oid::REGCLASS AS rel, pg_get_expr(c.relpartbound, c.oid) AS bound
        FROM pg_inherits i JOIN pg_class c ON c.oid = i.inhrelid
        WHERE i.inhparent = parent
    LOOP
        IF child.bound = 'DEFAULT' THEN
            dflt := child.rel;
            CONTINUE;
        END IF;
        bounds := regexp_match(child.bound,
                               '^FOR VALUES FROM \(''?(-?[0-9]+)''?\) TO \(''?(-?[0-9]+)''?\)$');
        IF bounds IS NOT NULL AND bounds[2]::BIGINT <= cutoff THEN
            old_parts := old_parts || child.rel;
        END IF;
    END LOOP;
    FOR m IN 0..1 LOOP
        month_start := date_trunc('month', to_timestamp(now_s) AT TIME ZONE 'UTC')
                       + make_interval(months => m);
        part := 'usage_groups_hourly_p' || to_char(month_start, 'YYYYMM');
        IF to_regclass(format('%I.%I', nsp, part)) IS NULL THEN
            new_months := new_months || month_start;
        END IF;
    END LOOP;
    IF cardinality(old_parts) > 0 OR cardinality(new_months) > 0 THEN
        LOCK TABLE usage_groups_hourly IN ACCESS EXCLUSIVE MODE;
    END IF;
    FOREACH rel IN ARRAY old_parts LOOP
        EXECUTE format('DROP TABLE %s', rel);
        changed := changed + 1;
    END LOOP;
    IF dflt IS NOT NULL THEN
        EXECUTE format('DELETE FROM %s WHERE hour < $1', dflt) USING cutoff;
    END IF;
    FOREACH month_start IN ARRAY new_months LOOP
        lo := EXTRACT(EPOCH FROM month_start AT TIME ZONE 'UTC')::BIGINT;
        hi := EXTRACT(EPOCH FROM (month_start + INTERVAL '1 month') AT TIME ZONE 'UTC')::BIGINT;
        part := 'usage_groups_hourly_p' || to_char(month_start, 'YYYYMM');
        -- Built beside the parent, filled with that month's DEFAULT rows,
        -- then attached: attaching checks that DEFAULT holds none of them.
        EXECUTE format('CREATE TABLE %I.%I (LIKE %s INCLUDING DEFAULTS INCLUDING CONSTRAINTS)',
                       nsp, part, parent);
        IF dflt IS NOT NULL THEN
            EXECUTE format('WITH moved AS (DELETE FROM %s WHERE hour >= $1 AND hour < $2 '
                           'RETURNING *) INSERT INTO %I.%I SELECT * FROM moved', dflt, nsp, part)
                USING lo, hi;
        END IF;
        EXECUTE format('ALTER TABLE %s ATTACH PARTITION %I.%I FOR VALUES FROM (%s) TO (%s)',
                       parent, nsp, part, lo, hi);
        changed := changed + 1;
    END LOOP;
    RETURN changed;
END
$fn$;

DO $do$
BEGIN
    PERFORM gi_usage_groups_hourly_partitions(EXTRACT(EPOCH FROM now())::BIGINT, 36500);
END
$do$;

-- The host and GPU reports rank their groups with one aggregate over the
-- range (owned seconds per GPU or host); with no filter or a team filter
-- this index answers it without reading the table. It replaces 017's
-- (day, team), whose prefix it has.
DROP INDEX usage_daily_day_team;
CREATE INDEX usage_daily_rank ON usage_daily(day, team, gpu_id, host, owned_s, fraction);
CREATE INDEX usage_hourly_rank ON usage_hourly(hour, team, gpu_id, host, owned_s, fraction);
-- The steps of one host of a page.
CREATE INDEX usage_daily_host ON usage_daily(host, day);
CREATE INDEX usage_hourly_host ON usage_hourly(host, hour);

-- Filled from the hourly rollups already there.
INSERT INTO usage_groups_hourly (hour, team, env, pool, cluster, cloud, model, datacenter_id,
    currency, gpus, owned_s, allocated_s, busy_s, alloc_idle_s, idle_s, unknown_s, util_sum,
    measured_s, energy_wh, owned_cost, busy_cost, alloc_idle_cost, idle_cost, unknown_cost,
    unpriced_s, updated_at)
SELECT hour, team, env, pool, cluster, cloud, model, datacenter_id, COALESCE(currency, ''),
    COUNT(*), SUM(owned_s * fraction), SUM(allocated_s * fraction), SUM(busy_s * fraction),
    SUM(alloc_idle_s * fraction), SUM(idle_s * fraction), SUM(unknown_s * fraction),
    SUM(util_sum * fraction), SUM(measured_s * fraction), SUM(energy_wh),
    SUM(owned_s * fraction * rate_micros), SUM(busy_s * fraction * rate_micros),
    SUM(alloc_idle_s * fraction * rate_micros), SUM(idle_s * fraction * rate_micros),
    SUM(unknown_s * fraction * rate_micros),
    SUM(CASE WHEN rate_micros IS NULL THEN owned_s * fraction ELSE 0 END), MAX(updated_at)
FROM usage_hourly
GROUP BY hour, team, env, pool, cluster, cloud, model, datacenter_id, COALESCE(currency, '');
