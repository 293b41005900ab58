/* The sums the insights keep beside the rollups, written by the
 * usage:rollup job inside its transactions (usage_write_groups() in
 * usage_hour.c calls insight_sums_day()); read by insights_waste.c. See
 * store_int.h.
 *
 * usage_team_days (migration 050): per UTC day, owner team and currency,
 * the day groups summed over every other dimension, and the ids of the
 * GPUs behind them (all, and those with allocated-idle seconds), so that
 * waste by team with no filter but the team's reads a row per team and
 * day and counts its distinct GPUs without a row per GPU and day. A day's
 * rows are written again from its usage_daily rows whenever its day groups
 * are, in the same transaction and with the same sums, so the two always
 * describe the same rows; the days older than the oldest day group (pruned
 * by retention) are dropped then, and a reader ignores any still there. */
#include "store/insights_int.h"
#include "store/usage_int.h"
#include "core/status.h"

/* A day's rows from its usage_daily rows; the id lists are joined by
 * group_concat (SQLite) or string_agg (PostgreSQL). */
#define SETS_INSERT                                                                                \
    "INSERT INTO usage_team_days (day, team, currency, gpus, owned_s, alloc_idle_s, idle_s, "      \
    "owned_cost, alloc_idle_cost, idle_cost, gpu_ids, alloc_idle_ids, updated_at) SELECT "         \
    "CAST(:day AS BIGINT), team, COALESCE(currency, ''), COUNT(*), SUM(owned_s * fraction), "      \
    "SUM(alloc_idle_s * fraction), SUM(idle_s * fraction), SUM(owned_s * fraction * "              \
    "rate_micros), SUM(alloc_idle_s * fraction * rate_micros), SUM(idle_s * fraction * "           \
    "rate_micros), "
#define SETS_FROM                                                                                  \
    ", CAST(:now AS BIGINT) FROM usage_daily WHERE day = :day GROUP BY team, COALESCE(currency, "  \
    "'')"

#define STATEMENTS(X)                                                                              \
    X(SETS_DEL, "DELETE FROM usage_team_days WHERE day = :day")                                    \
    X(SETS_ADD_SQLITE, SETS_INSERT "group_concat(gpu_id, ','), group_concat(CASE WHEN "            \
                                   "alloc_idle_s > 0 THEN gpu_id END, ',')" SETS_FROM)             \
    X(SETS_ADD_PG, SETS_INSERT "string_agg(CAST(gpu_id AS TEXT), ','), string_agg(CASE WHEN "      \
                               "alloc_idle_s > 0 THEN CAST(gpu_id AS TEXT) END, ',')" SETS_FROM)   \
    X(SETS_PRUNE, "DELETE FROM usage_team_days WHERE day < (SELECT MIN(day) FROM "                 \
                  "usage_groups_daily)")

enum stmt_id { STATEMENTS(STORE_AS_ENUM) ST__COUNT };
static const char *const stmt_sql[] = {STATEMENTS(STORE_AS_SQL)};

int insight_sums_day(struct conn *c, int64_t day, int64_t now)
{
    const char *const steps[] = {
        stmt_sql[ST_SETS_DEL],
        stmt_sql[db_dialect(c) == DB_PG ? ST_SETS_ADD_PG : ST_SETS_ADD_SQLITE],
        stmt_sql[ST_SETS_PRUNE]};

    return usage_day_steps(c, steps, 3, day, now);
}
