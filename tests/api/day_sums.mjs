// The group and daily rollups of hourly rows that a test wrote straight into
// usage_hourly, as the rollup job leaves them. The SQL lives in
// tests/fixtures/usage_group_sums.sql, which the C unit tests run too.
import { readFileSync } from 'node:fs';

// Comment lines are left out: a leading "--" would read as an option to the sqlite3 command.
const SQL = readFileSync(new URL('../fixtures/usage_group_sums.sql', import.meta.url), 'utf8')
  .split('\n').filter((l) => !l.startsWith('--')).join('\n');

/** SQL that replaces every hour-group, daily and day-group row by the sums of the hourly rows. */
export function daySumsSql() {
  return SQL;
}
