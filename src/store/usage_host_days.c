/* The report sums per host, day and currency (usage_host_days,
 * migrations 055 and 061), written by the usage:rollup job inside its transactions
 * (usage_write_groups() in usage_hour.c calls usage_host_days_write());
 * read by usage_query.c to rank the hosts of a paged report with no
 * filter and to read the figures of its page. See usage_int.h.
 *
 * A day's rows are written again from its usage_daily rows whenever its
 * day groups are, in the same transaction, so the two always describe the
 * same rows: late data, a re-run, a re-attribution and a merge of GPU
 * records all re-sum the day's groups. The days older than the oldest day
 * group (pruned by retention) are dropped then; a reader does not use the
 * days retention may be pruning (usage_host_days_cover). */
#include "store/usage_int.h"
#include "core/status.h"

#define STATEMENTS(X)                                                                              \
    X(HDAYS_DEL, "DELETE FROM usage_host_days WHERE day = :day")                                   \
    X(HDAYS_ADD,                                                                                   \
      "INSERT INTO usage_host_days (day, host, currency, gpus, owned_s, allocated_s, "             \
      "busy_s, alloc_idle_s, idle_s, unknown_s, util_sum, measured_s, energy_wh, "                 \
      "owned_cost, busy_cost, alloc_idle_cost, idle_cost, unknown_cost, unpriced_s, "              \
      "updated_at) SELECT CAST(:day AS BIGINT), host, COALESCE(currency, ''), " USAGE_GROUP_TERMS  \
      ", CAST(:now AS BIGINT) FROM usage_daily WHERE day = :day "                                  \
      "GROUP BY host, COALESCE(currency, '')")                                                     \
    X(HDAYS_PRUNE, "DELETE FROM usage_host_days WHERE day < (SELECT MIN(day) FROM "                \
                   "usage_groups_daily)")

enum stmt_id { STATEMENTS(STORE_AS_ENUM) ST__COUNT };
static const char *const stmt_sql[] = {STATEMENTS(STORE_AS_SQL)};

/* See usage_int.h. */
int usage_host_days_write(struct conn *c, int64_t day, int64_t now)
{
    const char *const steps[] = {stmt_sql[ST_HDAYS_DEL], stmt_sql[ST_HDAYS_ADD],
                                 stmt_sql[ST_HDAYS_PRUNE]};

    return usage_day_steps(c, steps, 3, day, now);
}

bool usage_host_days_cover(int64_t from, int64_t now)
{
    /* Retention deletes usage_daily's days before now - retain_daily_days
     * in bounded batches: a day within a day of that edge may be half
     * gone there while its host rows still stand. */
    const struct store_usage_config *cfg = usage_config();

    return cfg && from >= now - ((int64_t)cfg->retain_daily_days - 1) * 86400;
}
