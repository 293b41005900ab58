// The daily rollups of hourly rows written straight into usage_hourly, as
// the rollup job leaves them: per GPU and UTC day the sums of its hours with
// the owner, model and rate of its first hour (usage_daily), and per day and
// group the sums of those (usage_groups_daily). Tests that write hourly rows
// themselves run this afterwards, so that the reports reading the daily
// tables see the same history. SQL that SQLite and PostgreSQL both accept.

const SUMS = ['owned_s', 'allocated_s', 'busy_s', 'alloc_idle_s', 'idle_s', 'unknown_s', 'measured_s',
  'util_sum', 'mem_sum', 'energy_wh'];
const MAXES = ['util_max', 'mem_max_mib', 'temp_max_c', 'power_max_w'];

/** SQL that replaces every daily and day-group row by the sums of the hourly rows. */
export function daySumsSql() {
  const inner = [...SUMS.map((c) => `SUM(${c}) AS ${c}`), ...MAXES.map((c) => `MAX(${c}) AS ${c}`)].join(', ');
  const outer = [...SUMS, ...MAXES].map((c) => `s.${c}`).join(', ');
  return [
    'DELETE FROM usage_groups_daily',
    'DELETE FROM usage_daily',
    `INSERT INTO usage_daily (gpu_id, day, team, env, pool, cluster, cloud, model, datacenter_id, host_id,
      host, ${[...SUMS, ...MAXES].join(', ')}, fraction, rate_micros, currency, price_id, updated_at)
     SELECT f.gpu_id, s.day, f.team, f.env, f.pool, f.cluster, f.cloud, f.model, f.datacenter_id,
      f.host_id, f.host, ${outer}, f.fraction, f.rate_micros, f.currency, f.price_id, s.updated_at
     FROM (SELECT gpu_id, hour - hour % 86400 AS day, MIN(hour) AS first, MAX(updated_at) AS updated_at,
      ${inner} FROM usage_hourly GROUP BY gpu_id, hour - hour % 86400) s
     JOIN usage_hourly f ON f.gpu_id = s.gpu_id AND f.hour = s.first`,
    `INSERT INTO usage_groups_daily (day, team, env, pool, cluster, cloud, model, datacenter_id,
      currency, gpus, owned_s, allocated_s, busy_s, alloc_idle_s, idle_s, unknown_s, util_sum,
      measured_s, energy_wh, owned_cost, busy_cost, alloc_idle_cost, idle_cost, unknown_cost,
      unpriced_s, updated_at)
     SELECT day, team, env, pool, cluster, cloud, model, datacenter_id, COALESCE(currency, ''),
      COUNT(*), SUM(owned_s * fraction), SUM(allocated_s * fraction), SUM(busy_s * fraction),
      SUM(alloc_idle_s * fraction), SUM(idle_s * fraction), SUM(unknown_s * fraction),
      SUM(util_sum * fraction), SUM(measured_s * fraction), SUM(energy_wh),
      SUM(owned_s * fraction * rate_micros), SUM(busy_s * fraction * rate_micros),
      SUM(alloc_idle_s * fraction * rate_micros), SUM(idle_s * fraction * rate_micros),
      SUM(unknown_s * fraction * rate_micros),
      SUM(CASE WHEN rate_micros IS NULL THEN owned_s * fraction ELSE 0 END), MAX(updated_at)
     FROM usage_daily
     GROUP BY day, team, env, pool, cluster, cloud, model, datacenter_id, COALESCE(currency, '')`,
  ].join(';\n') + ';';
}

/** SQL that replaces every consumer day (usage_consumers_daily) by the sums of
 * the hourly consumer rows, each hour with its GPU-hour's owner and rate. */
export function consumerDaysSql() {
  return `DELETE FROM usage_consumers_daily;
INSERT INTO usage_consumers_daily (day, gpu_id, kind, consumer, consumer_team, namespace, pod,
  container, username, process, tenant, project, team, env, pool, cluster, cloud, model,
  datacenter_id, host_id, host, currency, hours, idle_hours, first_hour, last_hour, first_idle_hour,
  held_s, allocated_s, busy_s, alloc_idle_s, util_sum, measured_s, util_max, energy_wh,
  allocated_cost, busy_cost, alloc_idle_cost, unpriced_s, updated_at)
 SELECT u.hour - u.hour % 86400, u.gpu_id, u.kind, u.consumer, u.team, MAX(u.namespace), MAX(u.pod),
  MAX(u.container), MAX(u.username), MAX(u.process), MAX(u.tenant), MAX(u.project), h.team, h.env,
  h.pool, h.cluster, h.cloud, h.model, h.datacenter_id, h.host_id, MAX(h.host), h.currency, COUNT(*),
  SUM(CASE WHEN u.busy_s = 0 AND u.alloc_idle_s > 0 THEN 1 ELSE 0 END), MIN(u.hour), MAX(u.hour),
  MIN(CASE WHEN u.alloc_idle_s > 0 THEN u.hour END), SUM(u.allocated_s), SUM(u.allocated_s * h.fraction),
  SUM(u.busy_s * h.fraction), SUM(u.alloc_idle_s * h.fraction), SUM(u.util_sum * h.fraction),
  SUM(u.measured_s * h.fraction), MAX(u.util_max),
  SUM(CASE WHEN h.owned_s > 0 THEN h.energy_wh * u.allocated_s / h.owned_s ELSE 0 END),
  SUM(u.allocated_s * h.fraction * h.rate_micros), SUM(u.busy_s * h.fraction * h.rate_micros),
  SUM(u.alloc_idle_s * h.fraction * h.rate_micros),
  SUM(CASE WHEN h.rate_micros IS NULL THEN u.allocated_s * h.fraction ELSE 0 END), 1
 FROM usage_consumers u JOIN usage_hourly h ON h.gpu_id = u.gpu_id AND h.hour = u.hour
 WHERE u.allocated_s > 0
 GROUP BY u.hour - u.hour % 86400, u.gpu_id, u.kind, u.consumer, u.team, h.team, h.env, h.pool,
  h.cluster, h.cloud, h.model, h.datacenter_id, h.host_id, h.currency;`;
}
