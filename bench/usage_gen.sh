#!/usr/bin/env bash
# Prints the SQL that fills an empty, migrated gpuinv database with a
# synthetic fleet and its usage history, for bench/usage.sh:
#   GPUS GPUs (8 per host, 3 data centers, 20 teams, 3 environments,
#   8 pools, 12 clusters, 3 clouds, 5 models), hourly rollups for DAYS days
#   ending at the hour before NOW, their daily sums, one consumer per
#   allocated GPU-hour over the last CONSUMER_DAYS days, and raw samples
#   every RAW_STEP seconds over the last RAW_DAYS days.
# Every figure follows one pattern, so the rollups and the raw samples
# answer the same questions alike: a host's 8 GPUs belong to one team
# (team-(host % 20)) and run two jobs of 4 GPUs each (job (id - 1) / 4,
# one consumer, a Kubernetes pod); the GPUs of jobs with job % 10 < 6 are
# allocated always, 6..7 on weekdays 08-19 UTC only, 8..9 never; team-3
# holds its GPUs at 1 % utilization, the jobs with job % 10 = 1 leave
# the last two of their four GPUs unused (0 %: a workload asking for more
# GPUs than it uses), the others run at 70 % in working hours and 20 %
# outside; one GPU-hour in 211 has no data (unknown).
# With CONSUMER_DAILY 1 (the schema has usage_consumers_daily), the
# consumer hours are also summed per day as the rollup job keeps them.
# With BENCH_GEN_HOURLY_GROUPS=1 (a schema that has usage_groups_hourly) the
# hourly group sums are written too, as the rollup job keeps them, and with
# BENCH_GEN_TEAM_HOURS=1 as well (a schema that has usage_team_hours) their
# sums per team and hour. BENCH_GEN_TEAM_DAYS, BENCH_GEN_IDLE_DAYS (or
# BENCH_GEN_IDLE_TAILS) and BENCH_GEN_HOST_DAYS (set by bench/usage.sh
# where the schema has those tables; BENCH_GEN_HOST_DAYS=2 where they are
# 061's, with the GPUs' blocks) fill the team days, the idle list's day
# rows and the host days as the rollup job keeps them.
# Usage: bench/usage_gen.sh sqlite|postgresql GPUS DAYS CONSUMER_DAYS RAW_DAYS RAW_STEP NOW [CONSUMER_DAILY]
set -euo pipefail
dialect=$1 gpus=$2 days=$3 cdays=$4 rdays=$5 rstep=$6 now=$7 cdaily=${8:-0}
hosts=$(((gpus + 7) / 8))
end=$((now - now % 3600))
start=$((end - days * 86400))
cstart=$((end - cdays * 86400))
rstart=$((end - rdays * 86400))

# gh START END STEP ORDER: a WITH prefix and a FROM clause giving g.id
# (1..GPUS) crossed with h.v (START, START+STEP, ... < END), GPU-major
# (ORDER gpu) or time-major (ORDER time), so rows arrive in the order of
# the table's primary key (raw samples) or, for the rollups, in the time
# order the rollup job writes them, so that a range of hours is stored
# together as it is in a real database.
if [ "$dialect" = sqlite ]; then
  gh() {
    with="WITH RECURSIVE gi(id) AS (SELECT 1 UNION ALL SELECT id + 1 FROM gi WHERE id < $gpus),
  ti(v) AS (SELECT $1 UNION ALL SELECT v + $3 FROM ti WHERE v + $3 < $2)"
    if [ "$4" = gpu ]; then from="gi AS g CROSS JOIN ti AS h"; else from="ti AS h CROSS JOIN gi AS g"; fi
  }
  ids() { echo "WITH RECURSIVE gi(id) AS (SELECT 1 UNION ALL SELECT id + 1 FROM gi WHERE id < $1)"; }
  idfrom="gi AS g"
  pad() { echo "printf('%05d', $1)"; }
  ids_agg() { echo "group_concat($1, ',')"; }
else
  gh() {
    with=""
    local g="generate_series(1, $gpus) AS g(id)" t="generate_series($1::BIGINT, $2::BIGINT - 1, $3::BIGINT) AS h(v)"
    if [ "$4" = gpu ]; then from="$g CROSS JOIN $t"; else from="$t CROSS JOIN $g"; fi
  }
  ids() { echo "WITH gi(id) AS (SELECT generate_series(1, $1))"; }
  idfrom="gi AS g"
  pad() { echo "lpad(($1)::TEXT, 5, '0')"; }
  ids_agg() { echo "string_agg(($1)::TEXT, ',')"; }
fi

# The classification of GPU g in hour h as SQL expressions.
weekday="((h.v / 86400 + 3) % 7)" # 0 = Monday
hod="((h.v / 3600) % 24)"
work="($weekday < 5 AND $hod >= 8 AND $hod < 19)"
gap="((g.id * 31 + h.v / 3600) % 211 = 0)"
job="((g.id - 1) / 4)"
host="((g.id - 1) / 8 + 1)"
alloc="($job % 10 < 6 OR ($job % 10 < 8 AND $work))"
unused="($job % 10 = 1 AND (g.id - 1) % 4 >= 2)"
util="(CASE WHEN NOT $alloc OR $unused THEN 0.0 WHEN $host % 20 = 3 THEN 1.0 WHEN $work THEN 70.0 ELSE 20.0 END)"
team="'team-' || ($host % 20)"
env="(CASE g.id % 3 WHEN 0 THEN 'prod' WHEN 1 THEN 'dev' ELSE 'poc' END)"
model="(CASE g.id % 5 WHEN 0 THEN 'NVIDIA H100 80GB HBM3' WHEN 1 THEN 'NVIDIA A100-SXM4-80GB' WHEN 2 THEN 'NVIDIA L40S' WHEN 3 THEN 'NVIDIA H200' ELSE 'NVIDIA L4' END)"

gh "$start" "$end" 3600 time
hourly_with=$with hourly_from=$from
gh "$rstart" "$end" "$rstep" time
raw_with=$with raw_from=$from

hourly_groups=""
if [ "${BENCH_GEN_HOURLY_GROUPS:-0}" = 1 ]; then
  hourly_groups="INSERT INTO usage_groups_hourly (hour, team, env, pool, cluster, cloud, model, datacenter_id,
    currency, gpus, owned_s, allocated_s, busy_s, alloc_idle_s, idle_s, unknown_s, util_sum, measured_s,
    energy_wh, owned_cost, busy_cost, alloc_idle_cost, idle_cost, unknown_cost, unpriced_s, updated_at)
SELECT hour, team, env, pool, cluster, cloud, model, datacenter_id, COALESCE(currency, ''), COUNT(*),
       SUM(owned_s * fraction), SUM(allocated_s * fraction), SUM(busy_s * fraction),
       SUM(alloc_idle_s * fraction), SUM(idle_s * fraction), SUM(unknown_s * fraction),
       SUM(util_sum * fraction), SUM(measured_s * fraction), SUM(energy_wh),
       SUM(owned_s * fraction * rate_micros), SUM(busy_s * fraction * rate_micros),
       SUM(alloc_idle_s * fraction * rate_micros), SUM(idle_s * fraction * rate_micros),
       SUM(unknown_s * fraction * rate_micros),
       SUM(CASE WHEN rate_micros IS NULL THEN owned_s * fraction ELSE 0 END), $now
FROM usage_hourly GROUP BY hour, team, env, pool, cluster, cloud, model, datacenter_id, COALESCE(currency, '');"
  if [ "${BENCH_GEN_TEAM_HOURS:-0}" = 1 ]; then
    hourly_groups+="
INSERT INTO usage_team_hours (hour, team, currency, gpus, owned_s, allocated_s, busy_s, alloc_idle_s, idle_s,
    unknown_s, util_sum, measured_s, energy_wh, owned_cost, busy_cost, alloc_idle_cost, idle_cost, unknown_cost,
    unpriced_s, updated_at)
SELECT hour, team, currency, SUM(gpus), SUM(owned_s), SUM(allocated_s), SUM(busy_s), SUM(alloc_idle_s),
       SUM(idle_s), SUM(unknown_s), SUM(util_sum), SUM(measured_s), SUM(energy_wh), SUM(owned_cost),
       SUM(busy_cost), SUM(alloc_idle_cost), SUM(idle_cost), SUM(unknown_cost), SUM(unpriced_s), $now
FROM usage_groups_hourly GROUP BY hour, team, currency;"
  fi
fi

# The team days (the day groups per team and currency with their GPUs'
# ids), where the binary's schema has them.
team_days=""
if [ "${BENCH_GEN_TEAM_DAYS:-0}" = 1 ]; then
  team_days="INSERT INTO usage_team_days (day, team, currency, gpus, owned_s, alloc_idle_s, idle_s, owned_cost,
    alloc_idle_cost, idle_cost, gpu_ids, alloc_idle_ids, updated_at)
SELECT day, team, COALESCE(currency, ''), COUNT(*), SUM(owned_s * fraction), SUM(alloc_idle_s * fraction),
       SUM(idle_s * fraction), SUM(owned_s * fraction * rate_micros), SUM(alloc_idle_s * fraction * rate_micros),
       SUM(idle_s * fraction * rate_micros), $(ids_agg gpu_id),
       $(ids_agg "CASE WHEN alloc_idle_s > 0 THEN gpu_id END"), $now
FROM usage_daily GROUP BY day, team, COALESCE(currency, '');"
fi

# The day rows of the idle list and the owned seconds per host and day,
# filled as the migrations that made them fill them from the rollups
# (063 the idle tails, else 043 the whole idle days; 061 the host days
# with every report sum and the GPUs' four-day blocks, else 055 the host
# days), where the schema has them.
mig=src/store/migrations
# PostgreSQL plans the derived tables' fills (self-joins of the hourly
# rows) from the hourly rows' statistics, so they are taken first.
analyze_hourly=""
[ "$dialect" = sqlite ] || analyze_hourly="ANALYZE usage_hourly;"
[ "$dialect" = sqlite ] || mig=src/store/migrations/pg
fill_from() { sed -n "/^INSERT INTO $2 /,\$p" "$mig/$1"; }
day_sums=""
if [ "${BENCH_GEN_IDLE_TAILS:-0}" = 1 ]; then
  day_sums+=$(fill_from 063_usage_idle_tails.sql usage_idle_days)
elif [ "${BENCH_GEN_IDLE_DAYS:-0}" = 1 ]; then
  day_sums+=$(fill_from 043_usage_idle_days.sql usage_idle_days)
fi
if [ "${BENCH_GEN_HOST_DAYS:-0}" = 2 ]; then # 061: every report sum, and the GPUs' blocks after it
  day_sums+=$'\n'$(fill_from 061_usage_pages.sql usage_host_days)
elif [ "${BENCH_GEN_HOST_DAYS:-0}" = 1 ]; then
  day_sums+=$'\n'$(fill_from 055_usage_host_days.sql usage_host_days)
fi

cat <<SQL
BEGIN;
INSERT INTO datacenters (id, name, location, created_at, updated_at)
VALUES (1, 'fra1', 'bench', $start, $start), (2, 'ams2', 'bench', $start, $start), (3, 'iad3', 'bench', $start, $start);
INSERT INTO sources (id, name, kind, created_at, updated_at) VALUES (1, 'bench', 'push', $start, $start);
$(ids "$hosts")
INSERT INTO hosts (id, hostname, cluster, datacenter_id, source_id, first_seen_at, last_seen_at)
SELECT g.id, 'node-' || $(pad g.id), 'cl-' || (g.id % 12), 1 + g.id % 3, 1, $start, $now FROM $idfrom;
$(ids "$gpus")
INSERT INTO gpus (id, uuid, host_id, idx, vendor, model, memory_total_mib, team, env, cluster, source_id,
                  first_seen_at, last_seen_at, observed_at, reading_source_id)
SELECT g.id, 'GPU-bench-' || $(pad g.id), $host, (g.id - 1) % 8, 'NVIDIA', $model, 81559,
       $team, $env, 'cl-' || ($host % 12), 1, $start, $now, $now, 1
FROM $idfrom;
COMMIT;
BEGIN;
$hourly_with
INSERT INTO usage_hourly (gpu_id, hour, team, env, pool, cluster, cloud, model, datacenter_id, host_id, host,
    owned_s, allocated_s, busy_s, alloc_idle_s, idle_s, unknown_s, measured_s, util_sum, util_max,
    mem_max_mib, mem_sum, energy_wh, temp_max_c, power_max_w, fraction, rate_micros, currency, price_id,
    updated_at)
SELECT g.id, h.v, $team, $env, 'pool-' || (g.id % 8), 'cl-' || ($host % 12),
       (CASE g.id % 3 WHEN 0 THEN 'onprem' WHEN 1 THEN 'aws' ELSE 'gcp' END), $model, 1 + $host % 3,
       $host, 'node-' || $(pad "$host"),
       3600,
       CASE WHEN $gap THEN 0 WHEN $alloc THEN 3600 ELSE 0 END,
       CASE WHEN $gap THEN 0 WHEN $alloc AND $util >= 5 THEN 3600 ELSE 0 END,
       CASE WHEN $gap THEN 0 WHEN $alloc AND $util < 5 THEN 3600 ELSE 0 END,
       CASE WHEN $gap THEN 0 WHEN $alloc THEN 0 ELSE 3600 END,
       CASE WHEN $gap THEN 3600 ELSE 0 END,
       CASE WHEN $gap THEN 0 ELSE 3600 END,
       CASE WHEN $gap THEN 0 ELSE $util * 3600 END,
       CASE WHEN $gap THEN NULL ELSE $util END,
       CASE WHEN $gap THEN NULL ELSE 40000 END,
       CASE WHEN $gap THEN 0 ELSE 40000.0 * 3600 END,
       CASE WHEN $gap THEN 0 ELSE 75 + 5 * $util END,
       CASE WHEN $gap THEN NULL ELSE 40 + $util / 3 END,
       CASE WHEN $gap THEN NULL ELSE 80 + 6 * $util END,
       1, 2500000, 'USD', NULL, $now
FROM $hourly_from;
COMMIT;
$analyze_hourly
BEGIN;
INSERT INTO usage_daily (gpu_id, day, team, env, pool, cluster, cloud, model, datacenter_id, host_id, host,
    owned_s, allocated_s, busy_s, alloc_idle_s, idle_s, unknown_s, measured_s, util_sum, util_max,
    mem_max_mib, mem_sum, energy_wh, temp_max_c, power_max_w, fraction, rate_micros, currency, price_id,
    updated_at)
SELECT gpu_id, hour - hour % 86400, MIN(team), MIN(env), MIN(pool), MIN(cluster), MIN(cloud), MIN(model),
       MIN(datacenter_id), MIN(host_id), MIN(host), SUM(owned_s), SUM(allocated_s), SUM(busy_s),
       SUM(alloc_idle_s), SUM(idle_s), SUM(unknown_s), SUM(measured_s), SUM(util_sum), MAX(util_max),
       MAX(mem_max_mib), SUM(mem_sum), SUM(energy_wh), MAX(temp_max_c), MAX(power_max_w), 1,
       MIN(rate_micros), MIN(currency), NULL, $now
FROM usage_hourly GROUP BY gpu_id, hour - hour % 86400 ORDER BY hour - hour % 86400, gpu_id;
INSERT INTO usage_groups_daily (day, team, env, pool, cluster, cloud, model, datacenter_id, currency, gpus,
    owned_s, allocated_s, busy_s, alloc_idle_s, idle_s, unknown_s, util_sum, measured_s, energy_wh,
    owned_cost, busy_cost, alloc_idle_cost, idle_cost, unknown_cost, unpriced_s, updated_at)
SELECT day, team, env, pool, cluster, cloud, model, datacenter_id, COALESCE(currency, ''), COUNT(*),
       SUM(owned_s * fraction), SUM(allocated_s * fraction), SUM(busy_s * fraction),
       SUM(alloc_idle_s * fraction), SUM(idle_s * fraction), SUM(unknown_s * fraction),
       SUM(util_sum * fraction), SUM(measured_s * fraction), SUM(energy_wh),
       SUM(owned_s * fraction * rate_micros), SUM(busy_s * fraction * rate_micros),
       SUM(alloc_idle_s * fraction * rate_micros), SUM(idle_s * fraction * rate_micros),
       SUM(unknown_s * fraction * rate_micros),
       SUM(CASE WHEN rate_micros IS NULL THEN owned_s * fraction ELSE 0 END), $now
FROM usage_daily GROUP BY day, team, env, pool, cluster, cloud, model, datacenter_id, COALESCE(currency, '');
$hourly_groups
$team_days
$day_sums
INSERT INTO usage_consumers (gpu_id, hour, kind, consumer, team, namespace, pod, container, allocated_s,
    busy_s, alloc_idle_s, util_sum, measured_s, util_max)
SELECT gpu_id, hour, 'k8s', 'ns-' || team || '/job-' || ((gpu_id - 1) / 4) || '/main', team, 'ns-' || team,
       'job-' || ((gpu_id - 1) / 4), 'main', allocated_s, busy_s, alloc_idle_s, util_sum, measured_s, util_max
FROM usage_hourly WHERE hour >= $cstart AND allocated_s > 0;
COMMIT;
$(if [ "$cdaily" = 1 ]; then cat <<CD
BEGIN;
INSERT INTO usage_consumers_daily (day, gpu_id, kind, consumer, consumer_team, namespace, pod, container,
    username, process, tenant, project, team, env, pool, cluster, cloud, model, datacenter_id, host_id, host,
    currency, hours, idle_hours, first_hour, last_hour, first_idle_hour, held_s, allocated_s, busy_s,
    alloc_idle_s, util_sum, measured_s, util_max, energy_wh, allocated_cost, busy_cost, alloc_idle_cost,
    unpriced_s, updated_at)
SELECT u.hour - u.hour % 86400, u.gpu_id, u.kind, u.consumer, u.team, MAX(u.namespace), MAX(u.pod),
       MAX(u.container), MAX(u.username), MAX(u.process), MAX(u.tenant), MAX(u.project), h.team, h.env, h.pool,
       h.cluster, h.cloud, h.model, h.datacenter_id, h.host_id, MAX(h.host), h.currency, COUNT(*),
       SUM(CASE WHEN u.busy_s = 0 AND u.alloc_idle_s > 0 THEN 1 ELSE 0 END), MIN(u.hour), MAX(u.hour),
       MIN(CASE WHEN u.alloc_idle_s > 0 THEN u.hour END), SUM(u.allocated_s), SUM(u.allocated_s * h.fraction),
       SUM(u.busy_s * h.fraction), SUM(u.alloc_idle_s * h.fraction), SUM(u.util_sum * h.fraction),
       SUM(u.measured_s * h.fraction), MAX(u.util_max),
       SUM(CASE WHEN h.owned_s > 0 THEN h.energy_wh * u.allocated_s / h.owned_s ELSE 0 END),
       SUM(u.allocated_s * h.fraction * h.rate_micros), SUM(u.busy_s * h.fraction * h.rate_micros),
       SUM(u.alloc_idle_s * h.fraction * h.rate_micros),
       SUM(CASE WHEN h.rate_micros IS NULL THEN u.allocated_s * h.fraction ELSE 0 END), $now
FROM usage_consumers u JOIN usage_hourly h ON h.gpu_id = u.gpu_id AND h.hour = u.hour
WHERE u.allocated_s > 0
GROUP BY u.hour - u.hour % 86400, u.gpu_id, u.kind, u.consumer, u.team, h.team, h.env, h.pool, h.cluster,
         h.cloud, h.model, h.datacenter_id, h.host_id, h.currency
ORDER BY u.hour - u.hour % 86400, u.gpu_id;
COMMIT;
CD
fi)
BEGIN;
$raw_with
INSERT INTO gpu_samples (ts, gpu_id, util_avg, util_max, mem_used_mib, power_avg_w, energy_j, temp_c, source_id)
SELECT h.v, g.id, $util, $util, 40000, 75 + 5 * $util, (75 + 5 * $util) * $rstep, 40 + $util / 3, 1
FROM $raw_from WHERE NOT $gap;
COMMIT;
SQL
