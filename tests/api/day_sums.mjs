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
