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

// The consumer days of the consumer hours a test wrote straight into
// usage_consumers (tests/fixtures/usage_consumer_days.sql, run by the C unit
// tests too).
// The consumer-day spans after them, with migration 062's own statements
// (from its first INSERT to its first CREATE INDEX).
const SPANS_SQL = (() => {
  const mig = readFileSync(new URL('../../src/store/migrations/062_usage_consumer_spans.sql', import.meta.url), 'utf8');
  const from = mig.indexOf('INSERT INTO usage_consumer_spans');
  return mig.slice(from, mig.indexOf('CREATE INDEX', from));
})();
// The consumer totals after them, with migration 065's own statement.
const TOTALS_SQL = (() => {
  const mig = readFileSync(new URL('../../src/store/migrations/065_usage_consumer_totals.sql', import.meta.url), 'utf8');
  const from = mig.indexOf('INSERT INTO usage_consumer_totals');
  return mig.slice(from, mig.indexOf('CREATE INDEX', from));
})();
const CONSUMER_SQL = (readFileSync(new URL('../fixtures/usage_consumer_days.sql', import.meta.url), 'utf8') +
  SPANS_SQL + TOTALS_SQL).split('\n').filter((l) => !l.startsWith('--')).join('\n');

/** SQL that replaces every consumer day (usage_consumers_daily) by the sums of
 * the hourly consumer rows, each hour with its GPU-hour's owner and rate, and
 * the spans and totals of the consumer days by theirs. */
export function consumerDaysSql() {
  return CONSUMER_SQL;
}
