/* Reads of the usage rollups for the API: GPU-hours by group and step
 * with their catalog cost (the timeline is usage_timeline.c). See store.h.
 *
 * The database sums rows per (group, hour or day, currency); the
 * folding into weeks and months, the currency split and the money
 * formatting happen here. GPU-hours are seconds x fraction / 3600, so a
 * MIG slice counts its share. Costs are owned seconds x fraction x
 * rate_micros, summed as micro-unit-seconds and shown as decimal strings
 * with two decimals. */
#include "store/usage_cells.h"
#include "store/usage_int.h"
#include "core/status.h"
#include "core/textbuf.h"
#include "core/util.h"

#include <math.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>

/* The group as text, and for the groups named through another table
 * (gpu: the UUID, datacenter: the name) the id, mapped afterwards, so that
 * the aggregate itself joins nothing. */
#define GROUP_EXPR                                                                                 \
    "CASE CAST(:g AS TEXT) WHEN 'team' THEN u.team WHEN 'env' THEN u.env WHEN 'pool' THEN "        \
    "u.pool WHEN 'cluster' THEN u.cluster WHEN 'cloud' THEN u.cloud WHEN 'model' THEN u.model "    \
    "WHEN 'host' THEN u.host ELSE NULL END, CASE CAST(:g AS TEXT) WHEN 'gpu' THEN u.gpu_id WHEN "  \
    "'datacenter' THEN u.datacenter_id ELSE NULL END"
#define FILTERS                                                                                    \
    "(CAST(:team AS TEXT) IS NULL OR u.team = :team) AND (CAST(:env AS TEXT) IS NULL OR u.env = "  \
    ":env) AND (CAST(:pool AS TEXT) IS NULL OR u.pool = :pool) AND (CAST(:cluster AS TEXT) IS "    \
    "NULL OR u.cluster = :cluster) AND (CAST(:cloud AS TEXT) IS NULL OR u.cloud = :cloud) AND "    \
    "(CAST(:model AS TEXT) IS NULL OR u.model = :model) AND (CAST(:dc AS BIGINT) IS NULL OR "      \
    "u.datacenter_id = :dc) AND " STORE_SCOPE_IN("u.datacenter_id")
#define SUMS                                                                                       \
    "SUM(u.owned_s * u.fraction), SUM(u.allocated_s * u.fraction), SUM(u.busy_s * u.fraction), "   \
    "SUM(u.alloc_idle_s * u.fraction), SUM(u.idle_s * u.fraction), SUM(u.unknown_s * "             \
    "u.fraction), SUM(u.util_sum * u.fraction), SUM(u.measured_s * u.fraction), "                  \
    "SUM(u.energy_wh), SUM(u.owned_s * u.fraction * u.rate_micros), SUM(u.busy_s * u.fraction * "  \
    "u.rate_micros), SUM(u.alloc_idle_s * u.fraction * u.rate_micros), SUM(u.idle_s * "            \
    "u.fraction * u.rate_micros), SUM(u.unknown_s * u.fraction * u.rate_micros), SUM(CASE WHEN "   \
    "u.rate_micros IS NULL THEN u.owned_s * u.fraction ELSE 0 END)"
#define REPORT_WHERE(table, key, extra)                                                            \
    "SELECT " GROUP_EXPR ", NULL, u." key " - u." key " % CAST(:bucket AS BIGINT), "               \
    "COALESCE(u.currency, ''), " SUMS " FROM " table " u WHERE u." key " >= :from AND u." key      \
    " < :to AND " FILTERS extra " GROUP BY 1, 2, 4, 5 LIMIT :max"
#define REPORT(table, key) REPORT_WHERE(table, key, "")

/* The terms of SUMS for one row, unsummed: on SQLite a report reads the
 * rows themselves and folds them into their cells through a hash index
 * (usage_cell_add) instead of having the database sort and sum them, which
 * costs three times as much. PostgreSQL sums them (fewer rows to send). */
#define ROW_TERMS                                                                                  \
    "u.owned_s * u.fraction, u.allocated_s * u.fraction, u.busy_s * u.fraction, u.alloc_idle_s * " \
    "u.fraction, u.idle_s * u.fraction, u.unknown_s * u.fraction, u.util_sum * u.fraction, "       \
    "u.measured_s * u.fraction, u.energy_wh, u.owned_s * u.fraction * u.rate_micros, u.busy_s * "  \
    "u.fraction * u.rate_micros, u.alloc_idle_s * u.fraction * u.rate_micros, u.idle_s * "         \
    "u.fraction * u.rate_micros, u.unknown_s * u.fraction * u.rate_micros, CASE WHEN "             \
    "u.rate_micros IS NULL THEN u.owned_s * u.fraction ELSE 0 END"
#define ROWS_WHERE(table, key, extra)                                                              \
    "SELECT " GROUP_EXPR ", NULL, u." key " - u." key " % CAST(:bucket AS BIGINT), "               \
    "COALESCE(u.currency, ''), " ROW_TERMS " FROM " table " u WHERE u." key " >= :from AND u." key \
    " < :to AND " FILTERS extra " LIMIT :max"
/* Rows a report may read unsummed (the cells they fold into are bounded
 * by USAGE_MAX_CELLS): 30 days of hourly rows of 50,000 GPUs. */
#define MAX_ROWS 36000000

/* The ranking of a paged host or GPU report: one aggregate of the owned
 * seconds per group over the range. With no filter but the team's, the
 * rank index (day or hour, team, gpu_id, host, owned_s, fraction) answers
 * it without reading the table. */
#define FILTER_TEAM "(CAST(:team AS TEXT) IS NULL OR u.team = :team)"
#define RANK_GPU(table, key, filters)                                                              \
    "SELECT r.gpu_id, r.owned FROM (SELECT u.gpu_id, SUM(u.owned_s * u.fraction) AS owned "        \
    "FROM " table " u WHERE u." key " >= :from AND u." key " < :to AND " filters                   \
    " GROUP BY u.gpu_id) r LEFT JOIN gpus g ON g.id = r.gpu_id ORDER BY r.owned DESC, "            \
    "COALESCE(g.uuid, ''), r.gpu_id"
#define RANK_HOST(table, key, filters)                                                             \
    "SELECT u.host, SUM(u.owned_s * u.fraction) FROM " table " u WHERE u." key                     \
    " >= :from AND u." key " < :to AND " filters                                                   \
    " GROUP BY u.host ORDER BY 2 DESC, CASE WHEN u.host IS NULL THEN 1 "                           \
    "ELSE 0 END, u.host"

/* The ranking of a paged host report with no filter from the owned
 * seconds per host and day (usage_host_days): a row per host and day
 * instead of one per GPU and day, in RANK_HOST's order. */
#define RANK_HOST_DAYS                                                                             \
    "SELECT u.host, SUM(u.owned_s) FROM usage_host_days u WHERE u.day >= :from AND u.day < :to "   \
    "GROUP BY u.host ORDER BY 2 DESC, CASE WHEN u.host IS NULL THEN 1 ELSE 0 END, u.host"

/* The owned seconds of every GPU over [:from, :to) with no filter, as
 * rows to sum per GPU: the blocks of usage_gpu_blocks within [:a, :b)
 * (block starts, :from <= :a < :b <= :to), a row per GPU and block, and
 * the days at the edges from usage_daily. */
#define BLOCK_ROWS                                                                                 \
    "SELECT u.gpu_id, NULL, u.owned_s AS owned FROM usage_gpu_blocks u WHERE u.start >= :a AND "   \
    "u.start < :b UNION ALL SELECT u.gpu_id, NULL, u.owned_s * u.fraction FROM usage_daily u "     \
    "WHERE u.day >= :from AND u.day < :a UNION ALL SELECT u.gpu_id, NULL, u.owned_s * "            \
    "u.fraction FROM usage_daily u WHERE u.day >= :b AND u.day < :to"
/* RANK_GPU from those rows. */
#define RANK_GPU_BLOCKS                                                                            \
    "SELECT r.gpu_id, r.owned FROM (SELECT b.gpu_id, SUM(b.owned) AS owned FROM "                  \
    "(" BLOCK_ROWS ") b GROUP BY b.gpu_id) r LEFT JOIN gpus g ON g.id = r.gpu_id ORDER "           \
    "BY r.owned DESC, COALESCE(g.uuid, ''), r.gpu_id"

/* The same ranking's rows unsummed, for SQLite, where they are folded and
 * ordered here (rank_rows): three times cheaper than the database's sort. */
#define RANK_ROWS(table, key, filters)                                                             \
    "SELECT u.gpu_id, u.host, u.owned_s * u.fraction FROM " table " u WHERE u." key                \
    " >= :from AND u." key " < :to AND " filters " LIMIT :max"

/* The figures of a page of hosts from usage_host_days, whose rows are
 * already the cells of a day (one per host, day and currency); their
 * columns are the per-host sums of SUMS. */
#define HOST_DAYS_WHERE(extra)                                                                     \
    "SELECT u.host, NULL, NULL, u.day - u.day % CAST(:bucket AS BIGINT), "                         \
    "u.currency, " ROW_TERMS_GROUPS                                                                \
    " FROM usage_host_days u WHERE u.day >= :from AND u.day < :to AND " extra " LIMIT :max"

/* The page's groups (GPU ids or host names) bound as one JSON array :keys,
 * so that one statement reads the steps of every group of a page. */
#define KEYS_SQLITE "(SELECT value FROM json_each(:keys))"
#define KEYS_PG "(SELECT json_array_elements_text(CAST(:keys AS JSON)))"
/* The keys as an array: PostgreSQL then reads them through the (host,
 * day|hour) index or the primary key; as IN (SELECT ...) it scanned the
 * whole range's rows (a hash semi-join, five times slower at 10,000 GPUs,
 * and for GPU ids a plan that took seconds). */
#define HOSTS_PG "ANY(ARRAY" KEYS_PG ")"
#define GPUS_PG "ANY(ARRAY" KEYS_PG_INT ")"
#define KEYS_PG_INT "(SELECT CAST(json_array_elements_text(CAST(:keys AS JSON)) AS BIGINT))"

/* The same report from usage_groups_daily (dimensions only: no host or
 * GPU there), whose columns are the per-group sums of SUMS. */
#define GROUP_EXPR_DIM                                                                             \
    "CASE CAST(:g AS TEXT) WHEN 'team' THEN u.team WHEN 'env' THEN u.env WHEN 'pool' THEN "        \
    "u.pool WHEN 'cluster' THEN u.cluster WHEN 'cloud' THEN u.cloud WHEN 'model' THEN u.model "    \
    "ELSE NULL END, CASE CAST(:g AS TEXT) WHEN 'datacenter' THEN u.datacenter_id ELSE NULL END"
#define SUMS_GROUPS                                                                                \
    "SUM(u.owned_s), SUM(u.allocated_s), SUM(u.busy_s), SUM(u.alloc_idle_s), SUM(u.idle_s), "      \
    "SUM(u.unknown_s), SUM(u.util_sum), SUM(u.measured_s), SUM(u.energy_wh), SUM(u.owned_cost), "  \
    "SUM(u.busy_cost), SUM(u.alloc_idle_cost), SUM(u.idle_cost), SUM(u.unknown_cost), "            \
    "SUM(u.unpriced_s)"

/* The group tables' columns of one row, unsummed (see ROW_TERMS). */
#define ROW_TERMS_GROUPS                                                                           \
    "u.owned_s, u.allocated_s, u.busy_s, u.alloc_idle_s, u.idle_s, u.unknown_s, u.util_sum, "      \
    "u.measured_s, u.energy_wh, u.owned_cost, u.busy_cost, u.alloc_idle_cost, u.idle_cost, "       \
    "u.unknown_cost, u.unpriced_s"
#define GROUPS_WHERE(table, key, terms, tail)                                                      \
    "SELECT " GROUP_EXPR_DIM ", NULL, u." key " - u." key " % CAST(:bucket AS BIGINT), "           \
    "u.currency, " terms " FROM " table " u WHERE u." key " >= :from AND u." key                   \
    " < :to AND " FILTERS tail
#define TEAM_HOURS_WHERE(terms, tail)                                                              \
    "SELECT CASE CAST(:g AS TEXT) WHEN 'team' THEN u.team ELSE NULL END, NULL, NULL, u.hour - "    \
    "u.hour % CAST(:bucket AS BIGINT), u.currency, " terms                                         \
    " FROM usage_team_hours u WHERE u.hour >= :from AND u.hour < :to AND " FILTER_TEAM tail
#define SUMMED_TAIL " GROUP BY 1, 2, 4, 5 LIMIT :max"

/* The consumers' cells of whole days from their totals over their GPUs
 * (usage_consumer_totals), the rows unsummed to fold here, on either
 * store: they are nearly the cells of a day already (a row per consumer
 * and day where its GPUs share their dimensions), SQLite folds them three
 * times faster than it sorts them, and weeks and months are folded here
 * anyway; so they are bounded as rows (MAX_ROWS), not as cells. */
#define CONSUMER_TERMS                                                                             \
    "u.allocated_s, u.allocated_s, u.busy_s, u.alloc_idle_s, 0, 0, u.util_sum, u.measured_s, "     \
    "u.energy_wh, u.allocated_cost, u.busy_cost, u.alloc_idle_cost, 0, 0, u.unpriced_s"
#define CONSUMER_TOTALS(terms, tail)                                                               \
    "SELECT u.consumer, NULL, u.kind, u.day - u.day % CAST(:bucket AS BIGINT), "                   \
    "COALESCE(u.currency, ''), " terms " FROM usage_consumer_totals u WHERE u.day >= :from AND "   \
    "u.day < :to AND " FILTERS tail

#define STATEMENTS(X)                                                                              \
    X(DC_BY_NAME, store_sql_dc_by_name)                                                            \
    X(GPU_UUID, "SELECT uuid FROM gpus WHERE id = :id")                                            \
    X(DC_NAME, "SELECT name FROM datacenters WHERE id = :id")                                      \
    X(REPORT_HOURLY, REPORT("usage_hourly", "hour"))                                               \
    X(REPORT_DAILY, REPORT("usage_daily", "day"))                                                  \
    X(REPORT_GROUPS, GROUPS_WHERE("usage_groups_daily", "day", SUMS_GROUPS, SUMMED_TAIL))          \
    X(REPORT_GROUPS_HOURLY, GROUPS_WHERE("usage_groups_hourly", "hour", SUMS_GROUPS, SUMMED_TAIL)) \
    X(REPORT_TEAM_HOURS, TEAM_HOURS_WHERE(SUMS_GROUPS, SUMMED_TAIL))                               \
    X(ROWS_HOURLY, ROWS_WHERE("usage_hourly", "hour", ""))                                         \
    X(ROWS_DAILY, ROWS_WHERE("usage_daily", "day", ""))                                            \
    X(ROWS_GROUPS, GROUPS_WHERE("usage_groups_daily", "day", ROW_TERMS_GROUPS, " LIMIT :max"))     \
    X(ROWS_GROUPS_HOURLY,                                                                          \
      GROUPS_WHERE("usage_groups_hourly", "hour", ROW_TERMS_GROUPS, " LIMIT :max"))                \
    X(ROWS_TEAM_HOURS, TEAM_HOURS_WHERE(ROW_TERMS_GROUPS, " LIMIT :max"))                          \
    X(RANK_GPU_DAILY, RANK_GPU("usage_daily", "day", FILTERS))                                     \
    X(RANK_GPU_DAILY_TEAM, RANK_GPU("usage_daily", "day", FILTER_TEAM))                            \
    X(RANK_GPU_HOURLY, RANK_GPU("usage_hourly", "hour", FILTERS))                                  \
    X(RANK_GPU_HOURLY_TEAM, RANK_GPU("usage_hourly", "hour", FILTER_TEAM))                         \
    X(RANK_HOST_DAILY, RANK_HOST("usage_daily", "day", FILTERS))                                   \
    X(RANK_HOST_DAILY_TEAM, RANK_HOST("usage_daily", "day", FILTER_TEAM))                          \
    X(RANK_HOST_HOURLY, RANK_HOST("usage_hourly", "hour", FILTERS))                                \
    X(RANK_HOST_HOURLY_TEAM, RANK_HOST("usage_hourly", "hour", FILTER_TEAM))                       \
    X(RANK_HOST_DAYS, RANK_HOST_DAYS)                                                              \
    X(RANK_GPU_BLOCKS, RANK_GPU_BLOCKS)                                                            \
    X(RANK_ROWS_BLOCKS, BLOCK_ROWS " LIMIT :max")                                                  \
    X(RANK_ROWS_DAILY, RANK_ROWS("usage_daily", "day", FILTERS))                                   \
    X(RANK_ROWS_DAILY_TEAM, RANK_ROWS("usage_daily", "day", FILTER_TEAM))                          \
    X(RANK_ROWS_HOURLY, RANK_ROWS("usage_hourly", "hour", FILTERS))                                \
    X(RANK_ROWS_HOURLY_TEAM, RANK_ROWS("usage_hourly", "hour", FILTER_TEAM))                       \
    X(GPU_UUIDS, "SELECT id, uuid FROM gpus ORDER BY id")                                          \
    X(STEPS_GPU_DAILY, ROWS_WHERE("usage_daily", "day", " AND u.gpu_id IN " KEYS_SQLITE))          \
    X(STEPS_GPU_HOURLY, ROWS_WHERE("usage_hourly", "hour", " AND u.gpu_id IN " KEYS_SQLITE))       \
    X(STEPS_HOST_DAILY, ROWS_WHERE("usage_daily", "day", " AND u.host IN " KEYS_SQLITE))           \
    X(STEPS_HOST_HOURLY, ROWS_WHERE("usage_hourly", "hour", " AND u.host IN " KEYS_SQLITE))        \
    X(STEPS_GPU_DAILY_PG, REPORT_WHERE("usage_daily", "day", " AND u.gpu_id = " GPUS_PG))          \
    X(STEPS_GPU_HOURLY_PG, REPORT_WHERE("usage_hourly", "hour", " AND u.gpu_id = " GPUS_PG))       \
    X(STEPS_HOST_DAILY_PG, REPORT_WHERE("usage_daily", "day", " AND u.host = " HOSTS_PG))          \
    X(STEPS_HOST_HOURLY_PG, REPORT_WHERE("usage_hourly", "hour", " AND u.host = " HOSTS_PG))       \
    X(STEPS_NOHOST_DAILY, REPORT_WHERE("usage_daily", "day", " AND u.host IS NULL"))               \
    X(STEPS_HDAYS, HOST_DAYS_WHERE("u.host IN " KEYS_SQLITE))                                      \
    X(STEPS_HDAYS_PG, HOST_DAYS_WHERE("u.host = " HOSTS_PG))                                       \
    X(STEPS_NOHOST_HDAYS, HOST_DAYS_WHERE("u.host IS NULL"))                                       \
    X(STEPS_NOHOST_HOURLY, REPORT_WHERE("usage_hourly", "hour", " AND u.host IS NULL"))            \
    X(REPORT_CONSUMERS,                                                                            \
      "SELECT c.consumer, NULL, c.kind, u.hour - u.hour % CAST(:bucket AS BIGINT), "               \
      "COALESCE(u.currency, ''), SUM(c.allocated_s * u.fraction), SUM(c.allocated_s * "            \
      "u.fraction), SUM(c.busy_s * u.fraction), SUM(c.alloc_idle_s * u.fraction), 0, 0, "          \
      "SUM(c.util_sum * u.fraction), SUM(c.measured_s * u.fraction), SUM(u.energy_wh * "           \
      "c.allocated_s / u.owned_s), SUM(c.allocated_s * u.fraction * u.rate_micros), "              \
      "SUM(c.busy_s * u.fraction * u.rate_micros), SUM(c.alloc_idle_s * u.fraction * "             \
      "u.rate_micros), 0, 0, SUM(CASE WHEN u.rate_micros IS NULL THEN c.allocated_s * u.fraction " \
      "ELSE 0 END) FROM usage_consumers c JOIN usage_hourly u ON u.gpu_id = c.gpu_id AND u.hour "  \
      "= c.hour WHERE u.owned_s > 0 AND c.hour >= :from AND c.hour < :to AND " FILTERS             \
      " GROUP BY 1, 3, 4, 5 LIMIT :max")                                                           \
    X(ROWS_CONSUMER_DAYS, CONSUMER_TOTALS(CONSUMER_TERMS, " LIMIT :max"))

enum stmt_id { STATEMENTS(STORE_AS_ENUM) ST__COUNT };
static const char *const stmt_sql[] = {STATEMENTS(STORE_AS_SQL)};

static struct db_stmt *prep(struct conn *c, enum stmt_id id) { return db_prep(c, stmt_sql[id]); }

/* The start of the step holding t (t a day or hour start). */
static int64_t step_start(enum store_usage_step step, int64_t t)
{
    struct tm tm;
    time_t tt = (time_t)t;

    switch (step) {
    case USAGE_STEP_HOUR:
        return t - t % 3600;
    case USAGE_STEP_DAY:
        return t - t % 86400;
    case USAGE_STEP_WEEK: /* 1970-01-05 was a Monday */
        return t - ((t - 4 * 86400) % (7 * 86400) + 7 * 86400) % (7 * 86400);
    case USAGE_STEP_MONTH:
        gmtime_r(&tt, &tm);
        tm.tm_mday = 1;
        tm.tm_hour = tm.tm_min = tm.tm_sec = 0;
        return (int64_t)timegm(&tm);
    }
    return t;
}

static void bind_query(struct db_stmt *s, const struct store_usage_query *q, const char *group_by,
                       int64_t dc_id)
{
    db_bind_text(s, ":g", group_by);
    db_bind_int(s, ":bucket", q->step == USAGE_STEP_HOUR ? 3600 : 86400);
    db_bind_int(s, ":from", q->from);
    db_bind_int(s, ":to", q->to);
    db_bind_opt_text(s, ":team", q->team);
    db_bind_opt_text(s, ":env", q->env);
    db_bind_opt_text(s, ":pool", q->pool);
    db_bind_opt_text(s, ":cluster", q->cluster);
    db_bind_opt_text(s, ":cloud", q->cloud);
    db_bind_opt_text(s, ":model", q->model);
    db_bind_opt_int(s, ":dc", dc_id);
    db_bind_scope(s, &q->scope);
    db_bind_int(s, ":max", USAGE_MAX_CELLS + 1);
}

/* Runs one report statement and folds its rows (at most max_rows) into
 * cs; `sign` -1 subtracts them (the consumers' share taken from the
 * totals). */
static int collect_rows(struct conn *c, struct db_stmt *s, const struct store_usage_query *q,
                        bool with_kind, struct cells *cs, double sign, size_t max_rows)
{
    size_t rows = 0;
    int step, rc = GI_OK;

    while (rc == GI_OK && (step = db_step(c, s)) == DB_ROW) {
        double v[V__N];
        if (++rows > max_rows) {
            rc = GI_TOO_LARGE;
            break;
        }
        for (int k = 0; k < V__N; k++)
            v[k] = sign * db_col_dbl(s, 5 + k);
        rc = usage_cell_add(cs, db_col_text(s, 0), db_col_is_null(s, 1) ? -1 : db_col_int(s, 1),
                            with_kind ? db_col_text(s, 2) : NULL,
                            step_start(q->step, db_col_int(s, 3)), db_col_text(s, 4), v);
    }
    db_reset(s);
    if (rc == GI_OK && step != DB_DONE)
        rc = db_status(step);
    return rc;
}

/* collect_rows with the report's row bound. */
static int collect(struct conn *c, struct db_stmt *s, const struct store_usage_query *q,
                   bool with_kind, struct cells *cs, double sign)
{
    return collect_rows(c, s, q, with_kind, cs, sign, USAGE_MAX_CELLS);
}

/* Runs the summing report statement `id` (bound for q, grouped by
 * group_by) into cs; on SQLite its unsummed twin, folded here. */
static int run_report(struct conn *c, enum stmt_id id, const struct store_usage_query *q,
                      const char *group_by, int64_t dc_id, struct cells *cs)
{
    static const enum stmt_id twins[][2] = {{ST_REPORT_HOURLY, ST_ROWS_HOURLY},
                                            {ST_REPORT_DAILY, ST_ROWS_DAILY},
                                            {ST_REPORT_GROUPS, ST_ROWS_GROUPS},
                                            {ST_REPORT_GROUPS_HOURLY, ST_ROWS_GROUPS_HOURLY},
                                            {ST_REPORT_TEAM_HOURS, ST_ROWS_TEAM_HOURS}};
    /* PostgreSQL too where the rows are the cells already (the team hours
     * by team and hour: one row per team, hour and currency), so that it
     * neither sorts nor groups them (5x the cost of reading them). */
    bool as_rows =
        db_dialect(c) != DB_PG ||
        (id == ST_REPORT_TEAM_HOURS && q->step == USAGE_STEP_HOUR && strcmp(group_by, "team") == 0);
    bool rows = false;
    struct db_stmt *s;

    for (size_t i = 0; as_rows && i < sizeof twins / sizeof *twins; i++)
        if (twins[i][0] == id) {
            id = twins[i][1];
            rows = true;
            break;
        }
    if (!(s = prep(c, id)))
        return GI_INTERNAL;
    bind_query(s, q, group_by, dc_id);
    if (!rows)
        return collect(c, s, q, false, cs, 1.0);
    db_bind_int(s, ":max", MAX_ROWS + 1);
    return collect_rows(c, s, q, false, cs, 1.0, MAX_ROWS);
}

/* group_by=consumer: each consumer's share, and the rest of the owned
 * time (idle and unknown) as group null of kind "none", so that the
 * items add up to the GPU totals. `daily` (whole days, no hourly steps):
 * the consumers from their totals over their GPUs (usage_consumer_totals:
 * a row per consumer and day, where usage_consumers_daily has one per GPU
 * as well) and the GPU totals from usage_groups_daily, else both from the
 * hourly rows. */
static int consumer_cells(struct conn *c, const struct store_usage_query *q, int64_t dc_id,
                          bool daily, struct cells *cs)
{
    struct db_stmt *s;
    struct cells rest = {0};
    int rc = run_report(c, daily ? ST_REPORT_GROUPS : ST_REPORT_HOURLY, q, "", dc_id, &rest);

    if (rc != GI_OK)
        goto cleanup;
    rc = GI_INTERNAL;
    if (!(s = prep(c, daily ? ST_ROWS_CONSUMER_DAYS : ST_REPORT_CONSUMERS)))
        goto cleanup;
    bind_query(s, q, "", dc_id);
    if (daily)
        db_bind_int(s, ":max", MAX_ROWS + 1);
    if ((rc = collect_rows(c, s, q, true, cs, 1.0, daily ? MAX_ROWS : USAGE_MAX_CELLS)) != GI_OK)
        goto cleanup;
    for (size_t i = 0; i < cs->n && rc == GI_OK; i++) {
        double neg[V__N];
        for (int k = 0; k < V__N; k++)
            neg[k] = -cs->a[i].v[k];
        for (size_t j = 0; j < rest.n; j++)
            if (rest.a[j].start == cs->a[i].start && strcmp(rest.a[j].cur, cs->a[i].cur) == 0) {
                for (int k = 0; k < V__N; k++)
                    rest.a[j].v[k] += neg[k];
                break;
            }
    }
    for (size_t j = 0; j < rest.n && rc == GI_OK; j++) {
        if (rest.a[j].v[V_OWNED] > 1e-6)
            rc = usage_cell_add(cs, NULL, -1, "none", rest.a[j].start, rest.a[j].cur, rest.a[j].v);
    }
cleanup:
    usage_cells_free(&rest);
    return rc;
}

/* One group of a paged consumer report: its cells a[lo..hi) of the
 * sorted cells, their kind and key (the first cell's), and its owned
 * seconds over the range. The group carries what its order needs, so
 * requests on several threads sort without shared state. */
struct consumer_group {
    size_t lo, hi;
    const char *kind, *group;
    double owned;
};

static int consumer_group_cmp(const void *pa, const void *pb)
{
    const struct consumer_group *a = pa, *b = pb;
    int d = a->owned > b->owned ? -1 : a->owned < b->owned;

    if (d == 0)
        d = strcmp_null(a->kind, b->kind);
    if (d == 0)
        d = strcmp_null(a->group, b->group);
    return d;
}

/* group_by=consumer with q->limit > 0: keeps the cells of the page's
 * groups only, ranked as host and GPU pages are (owned GPU-hours over the
 * range, descending, then kind and key); cs comes sorted by usage_cell_cmp,
 * unranked. *groups_total counts every group. */
static int consumer_page(const struct store_usage_query *q, struct cells *cs, int64_t *groups_total)
{
    struct consumer_group *g = calloc(cs->n ? cs->n : 1, sizeof *g);
    size_t n = 0;

    if (!g)
        return GI_INTERNAL;
    for (size_t i = 0; i < cs->n; i++) {
        if (n == 0 || strcmp_null(cs->a[i].kind, cs->a[g[n - 1].lo].kind) != 0 ||
            strcmp_null(cs->a[i].group, cs->a[g[n - 1].lo].group) != 0)
            g[n++] = (struct consumer_group){
                .lo = i, .hi = i, .kind = cs->a[i].kind, .group = cs->a[i].group};
        g[n - 1].hi = i + 1;
        g[n - 1].owned += cs->a[i].v[V_OWNED];
    }
    qsort(g, n, sizeof *g, consumer_group_cmp);
    for (size_t k = 0; k < n; k++)
        for (size_t i = g[k].lo; i < g[k].hi; i++)
            cs->a[i].rank = (int64_t)k >= q->offset && (int64_t)k < q->offset + q->limit
                                ? k - (size_t)q->offset + 1
                                : 0;
    usage_cells_keep_ranked(cs);
    *groups_total = (int64_t)n;
    free(g);
    return GI_OK;
}

/* Whether every cell of cs holds the same currency (or none). */
static bool cells_one_currency(const struct cells *cs)
{
    for (size_t i = 1; i < cs->n; i++)
        if (strcmp(cs->a[i].cur, cs->a[0].cur) != 0)
            return false;
    return true;
}

/* consumer_page() on the cells as consumer_cells() leaves them (indexed,
 * one per key, unsorted), for a report whose cells hold one currency:
 * groups the cells by kind and key through a hash instead of sorting
 * every cell, ranks the groups, and sorts the cells of the page's groups
 * only (a few thousand of the 70,000 of a 30-day report by day of 10,000
 * GPUs, whose sort by key cost a fifth of the report). The same groups,
 * order and cells as consumer_page(); *groups_total counts every group. */
static int consumer_page_unsorted(const struct store_usage_query *q, struct cells *cs,
                                  int64_t *groups_total)
{
    size_t nslot = 1024, n = 0, *slot = NULL, *of = NULL, *place = NULL;
    struct consumer_group *g = NULL;
    int rc = GI_INTERNAL;

    while (nslot < cs->n * 2)
        nslot *= 2;
    slot = calloc(nslot, sizeof *slot);
    of = calloc(cs->n ? cs->n : 1, sizeof *of);
    g = calloc(cs->n ? cs->n : 1, sizeof *g);
    if (!slot || !of || !g)
        goto cleanup;
    for (size_t i = 0; i < cs->n; i++) { /* of[i]: the group of cell i */
        const struct cell *k = &cs->a[i];
        size_t j = (size_t)usage_cell_hash(k->group, -1, k->kind, 0, "") & (nslot - 1);
        for (; slot[j]; j = (j + 1) & (nslot - 1))
            if (strcmp_null(g[slot[j] - 1].kind, k->kind) == 0 &&
                strcmp_null(g[slot[j] - 1].group, k->group) == 0)
                break;
        if (!slot[j]) {
            g[n] = (struct consumer_group){.lo = n, .kind = k->kind, .group = k->group};
            slot[j] = ++n;
        }
        of[i] = slot[j] - 1;
        g[of[i]].owned += k->v[V_OWNED];
    }
    qsort(g, n, sizeof *g, consumer_group_cmp);
    if (!(place = calloc(n ? n : 1, sizeof *place)))
        goto cleanup;
    for (size_t k = 0; k < n; k++) /* lo: the group's number before the sort */
        place[g[k].lo] = (int64_t)k >= q->offset && (int64_t)k < q->offset + q->limit
                             ? k - (size_t)q->offset + 1
                             : 0;
    for (size_t i = 0; i < cs->n; i++)
        cs->a[i].rank = place[of[i]];
    usage_cells_keep_ranked(cs);
    *groups_total = (int64_t)n;
    rc = GI_OK;
cleanup:
    free(slot);
    free(of);
    free(g);
    free(place);
    return rc;
}

/* The ranking statement of a paged host or GPU report. */
static enum stmt_id rank_stmt(bool gpu, bool daily, bool team_only)
{
    if (gpu && daily)
        return team_only ? ST_RANK_GPU_DAILY_TEAM : ST_RANK_GPU_DAILY;
    if (gpu)
        return team_only ? ST_RANK_GPU_HOURLY_TEAM : ST_RANK_GPU_HOURLY;
    if (daily)
        return team_only ? ST_RANK_HOST_DAILY_TEAM : ST_RANK_HOST_DAILY;
    return team_only ? ST_RANK_HOST_HOURLY_TEAM : ST_RANK_HOST_HOURLY;
}

/* One group of a page: a GPU's id, or a host's name (NULL: no host). */
struct page_key {
    int64_t gid;
    char *host;
};

/* The place in the page (1-based) of the group of cell k, 0 if none. */
static size_t page_rank(const struct page_key *keys, size_t n, bool gpu, const struct cell *k)
{
    for (size_t i = 0; i < n; i++)
        if (gpu ? keys[i].gid == k->gid : strcmp_null(keys[i].host, k->group) == 0)
            return i + 1;
    return 0;
}

/* Reads the steps of the page's groups keys[0..n) into cs, each cell
 * ranked by its group's place in the page: one statement for the named
 * groups (their keys bound as a JSON array), one more for the group of
 * the GPUs with no host if the page has it. host_days: hosts read from
 * usage_host_days (whole days, no filter), a row per host, day and
 * currency, instead of one per GPU and day. */
static int page_steps(struct conn *c, const struct store_usage_query *q, int64_t dc_id, bool daily,
                      bool gpu, bool host_days, const struct page_key *keys, size_t n,
                      struct cells *cs)
{
    bool pg = db_dialect(c) == DB_PG, nohost = false;
    json_t *list = json_array();
    char *text = NULL;
    int rc = GI_INTERNAL;

    for (size_t i = 0; list && i < n; i++) {
        if (!gpu && !keys[i].host)
            nohost = true;
        else if (json_array_append_new(list, gpu ? json_integer(keys[i].gid)
                                                 : json_string(keys[i].host)) != 0)
            goto cleanup;
    }
    if (!list || !(text = json_dumps(list, JSON_COMPACT)))
        goto cleanup;
    rc = GI_OK;
    for (int pass = 0; pass < 2 && rc == GI_OK; pass++) {
        enum stmt_id id;
        struct db_stmt *s;
        if (pass == 0 && json_array_size(list) == 0)
            continue;
        if (pass == 1 && !nohost)
            break;
        if (host_days)
            id = pass == 1 ? ST_STEPS_NOHOST_HDAYS : pg ? ST_STEPS_HDAYS_PG : ST_STEPS_HDAYS;
        else if (pass == 1)
            id = daily ? ST_STEPS_NOHOST_DAILY : ST_STEPS_NOHOST_HOURLY;
        else if (gpu)
            id = daily ? (pg ? ST_STEPS_GPU_DAILY_PG : ST_STEPS_GPU_DAILY)
                       : (pg ? ST_STEPS_GPU_HOURLY_PG : ST_STEPS_GPU_HOURLY);
        else
            id = daily ? (pg ? ST_STEPS_HOST_DAILY_PG : ST_STEPS_HOST_DAILY)
                       : (pg ? ST_STEPS_HOST_HOURLY_PG : ST_STEPS_HOST_HOURLY);
        if (!(s = prep(c, id))) {
            rc = GI_INTERNAL;
            break;
        }
        bind_query(s, q, q->group_by, dc_id);
        db_bind_text(s, ":keys", text);
        if (host_days || (pass == 0 && !pg)) { /* unsummed rows (ROWS_WHERE, HOST_DAYS) */
            db_bind_int(s, ":max", MAX_ROWS + 1);
            rc = collect_rows(c, s, q, false, cs, 1.0, MAX_ROWS);
        } else {
            rc = collect(c, s, q, false, cs, 1.0);
        }
    }
    for (size_t j = 0; rc == GI_OK && j < cs->n; j++)
        cs->a[j].rank = page_rank(keys, n, gpu, &cs->a[j]);
cleanup:
    free(text);
    json_decref(list);
    return rc;
}

/* The order of RANK_GPU and RANK_HOST: owned seconds descending, then the
 * GPU's UUID (kept in group) and id, or the host (NULL last). */
static int rank_cmp(const void *pa, const void *pb)
{
    const struct cell *a = pa, *b = pb;
    int d = a->v[V_OWNED] > b->v[V_OWNED] ? -1 : a->v[V_OWNED] < b->v[V_OWNED];

    if (d == 0 && a->gid >= 0) /* GPUs */
        d = strcmp(a->group ? a->group : "", b->group ? b->group : "");
    if (d == 0 && a->gid >= 0)
        d = a->gid < b->gid ? -1 : a->gid > b->gid;
    if (d == 0 && (!a->group || !b->group))
        d = a->group ? -1 : b->group ? 1 : 0;
    if (d == 0 && a->gid < 0)
        d = strcmp(a->group, b->group);
    return d;
}

static int gid_cmp(const void *pa, const void *pb)
{
    const struct cell *a = pa, *b = pb;
    return a->gid < b->gid ? -1 : a->gid > b->gid;
}

/* Gives each GPU group of rank (sorted by gid) its UUID, as RANK_GPU's
 * join does. */
static int rank_uuids(struct conn *c, struct cells *rank)
{
    struct db_stmt *s = prep(c, ST_GPU_UUIDS);
    size_t i = 0;
    int step;

    if (!s)
        return GI_INTERNAL;
    while (i < rank->n && (step = db_step(c, s)) == DB_ROW) {
        int64_t id = db_col_int(s, 0);
        while (i < rank->n && rank->a[i].gid < id)
            i++;
        if (i < rank->n && rank->a[i].gid == id && db_col_text(s, 1) &&
            !(rank->a[i].group = strdup(db_col_text(s, 1)))) {
            db_reset(s);
            return GI_INTERNAL;
        }
    }
    db_reset(s);
    return i >= rank->n || step == DB_DONE ? GI_OK : db_status(step);
}

/* Adds owned seconds to GPU gid's cell of a ranking, or appends one:
 * usage_cell_add keyed by the id alone (a GPU ranking's cells have no group,
 * kind, start or currency), instead of hashing and comparing every key
 * part for each of its 100,000 to 300,000 rows (a third of the fold's
 * cost in a profile of the unfiltered GPU page). Shares usage_cell_add's index
 * (rank holds GPU cells only). */
static int rank_add_gpu(struct cells *rank, int64_t gid, double owned)
{
    size_t j;

    if (rank->n * 2 >= rank->nslot) {
        size_t nslot = rank->nslot ? rank->nslot * 2 : 1024, *slot = calloc(nslot, sizeof *slot);
        if (!slot)
            return GI_INTERNAL;
        for (size_t i = 0; i < rank->n; i++) {
            j = (size_t)((uint64_t)rank->a[i].gid * 0x9e3779b97f4a7c15ull >> 20) & (nslot - 1);
            while (slot[j])
                j = (j + 1) & (nslot - 1);
            slot[j] = i + 1;
        }
        free(rank->slot);
        rank->slot = slot;
        rank->nslot = nslot;
    }
    j = (size_t)((uint64_t)gid * 0x9e3779b97f4a7c15ull >> 20) & (rank->nslot - 1);
    for (; rank->slot[j]; j = (j + 1) & (rank->nslot - 1))
        if (rank->a[rank->slot[j] - 1].gid == gid) {
            rank->a[rank->slot[j] - 1].v[V_OWNED] += owned;
            return GI_OK;
        }
    if (rank->n >= USAGE_MAX_CELLS)
        return GI_TOO_LARGE;
    if (rank->n == rank->cap) {
        size_t ncap = rank->cap ? rank->cap * 2 : 256;
        struct cell *p = realloc(rank->a, ncap * sizeof *p);
        if (!p)
            return GI_INTERNAL;
        rank->a = p;
        rank->cap = ncap;
    }
    memset(&rank->a[rank->n], 0, sizeof rank->a[rank->n]);
    rank->a[rank->n].gid = gid;
    rank->a[rank->n].v[V_OWNED] = owned;
    rank->slot[j] = ++rank->n;
    return GI_OK;
}

/* Binds the whole blocks [blocks[0], blocks[1]) of a GPU ranking from
 * usage_gpu_blocks (BLOCK_ROWS); NULL: none. */
static void bind_blocks(struct db_stmt *s, const int64_t *blocks)
{
    if (!blocks)
        return;
    db_bind_int(s, ":a", blocks[0]);
    db_bind_int(s, ":b", blocks[1]);
}

/* Whether the GPUs of a paged report over [from, to) (whole days) rank
 * from usage_gpu_blocks: the range holds a whole block; blocks[0..2) its
 * whole blocks' starts [first, end). */
static bool range_blocks(int64_t from, int64_t to, int64_t *blocks)
{
    int64_t a = from + (USAGE_BLOCK_S - from % USAGE_BLOCK_S) % USAGE_BLOCK_S;
    int64_t b = to - to % USAGE_BLOCK_S;

    blocks[0] = a;
    blocks[1] = b;
    return from >= 0 && a < b;
}

/* SQLite: the ranking of every group folded from the rows (RANK_ROWS)
 * and ordered as RANK_GPU or RANK_HOST order it, into rank (one cell per
 * group, its owned seconds in v[V_OWNED]). */
static int rank_rows(struct conn *c, const struct store_usage_query *q, int64_t dc_id, bool daily,
                     bool gpu, bool team_only, const int64_t *blocks, struct cells *rank)
{
    struct db_stmt *s =
        prep(c, blocks  ? ST_RANK_ROWS_BLOCKS
                : daily ? (team_only ? ST_RANK_ROWS_DAILY_TEAM : ST_RANK_ROWS_DAILY)
                        : (team_only ? ST_RANK_ROWS_HOURLY_TEAM : ST_RANK_ROWS_HOURLY));
    size_t rows = 0;
    int step, rc = GI_OK;

    if (!s)
        return GI_INTERNAL;
    bind_query(s, q, q->group_by, dc_id);
    bind_blocks(s, blocks);
    db_bind_int(s, ":max", MAX_ROWS + 1);
    while (rc == GI_OK && (step = db_step(c, s)) == DB_ROW) {
        double v[V__N] = {0};
        if (++rows > MAX_ROWS) {
            rc = GI_TOO_LARGE;
            break;
        }
        if (gpu) {
            rc = rank_add_gpu(rank, db_col_int(s, 0), db_col_dbl(s, 2));
            continue;
        }
        v[V_OWNED] = db_col_dbl(s, 2);
        rc = usage_cell_add(rank, db_col_text(s, 1), -1, NULL, 0, "", v);
    }
    db_reset(s);
    if (rc == GI_OK && step != DB_DONE)
        rc = db_status(step);
    usage_cells_unindex(rank);
    if (rc == GI_OK && gpu && rank->n) {
        qsort(rank->a, rank->n, sizeof *rank->a, gid_cmp);
        rc = rank_uuids(c, rank);
    }
    if (rc == GI_OK && rank->n)
        qsort(rank->a, rank->n, sizeof *rank->a, rank_cmp);
    return rc;
}

/* group_by=host|gpu with q->limit > 0: ranks every group with one
 * aggregate over the range (*groups_total counts them), then reads the
 * steps of the page's groups only. */
static int page_cells(struct conn *c, const struct store_usage_query *q, int64_t dc_id, bool daily,
                      struct cells *cs, int64_t *groups_total)
{
    bool gpu = strcmp(q->group_by, "gpu") == 0;
    bool team_only =
        !q->env && !q->pool && !q->cluster && !q->cloud && !q->model && dc_id < 0 && !q->scope.n;
    /* no filter at all over whole days: the hosts' day sums rank them and
     * give the page's figures; the GPUs' block sums rank them where the
     * range holds a whole block */
    bool plain = daily && team_only && !q->team && !q->datacenter &&
                 usage_host_days_cover(q->from, (int64_t)time(NULL));
    bool host_days = !gpu && plain;
    int64_t blocks[2];
    bool gpu_blocks = gpu && plain && range_blocks(q->from, q->to, blocks);
    struct db_stmt *s = NULL;
    struct page_key *keys = NULL;
    struct cells rank = {0};
    size_t n = 0;
    int64_t row = 0;
    int step = DB_DONE, rc = GI_OK;

    *groups_total = 0;
    if (!(keys = calloc((size_t)q->limit, sizeof *keys)))
        return GI_INTERNAL;
    if (db_dialect(c) != DB_PG && !host_days) {
        rc = rank_rows(c, q, dc_id, daily, gpu, team_only, gpu_blocks ? blocks : NULL, &rank);
        for (size_t i = 0; rc == GI_OK && i < rank.n; i++) {
            if (row++ < q->offset || n >= (size_t)q->limit)
                continue;
            keys[n].gid = rank.a[i].gid;
            if (!gpu && rank.a[i].group && !(keys[n].host = strdup(rank.a[i].group)))
                rc = GI_INTERNAL;
            n++;
        }
        usage_cells_free(&rank);
    } else if (!(s = prep(c, host_days    ? ST_RANK_HOST_DAYS
                             : gpu_blocks ? ST_RANK_GPU_BLOCKS
                                          : rank_stmt(gpu, daily, team_only)))) {
        rc = GI_INTERNAL;
    } else {
        bind_query(s, q, q->group_by, dc_id);
        bind_blocks(s, gpu_blocks ? blocks : NULL);
    }
    while (s && (step = db_step(c, s)) == DB_ROW) {
        if (row++ < q->offset || n >= (size_t)q->limit)
            continue;
        keys[n].gid = gpu ? db_col_int(s, 0) : -1;
        if (!gpu && db_col_text(s, 0) && !(keys[n].host = strdup(db_col_text(s, 0)))) {
            rc = GI_INTERNAL;
            break;
        }
        n++;
    }
    if (s)
        db_reset(s);
    if (rc == GI_OK && step != DB_DONE)
        rc = db_status(step);
    *groups_total = row;
    if (rc == GI_OK)
        rc = page_steps(c, q, dc_id, daily, gpu, host_days, keys, n, cs);
    for (size_t i = 0; i < n; i++)
        free(keys[i].host);
    free(keys);
    return rc;
}

/* Whether q filters by nothing but the team: then the hours of every
 * group sum to the team hours (usage_team_hours). */
static bool team_filter_only(const struct store_usage_query *q)
{
    return !q->env && !q->pool && !q->cluster && !q->cloud && !q->model && !q->datacenter &&
           !q->scope.n;
}

/* The total of a paged report over every group, from the group rows (the
 * team hours when nothing but the team filters hours). */
static int page_total(struct conn *c, const struct store_usage_query *q, int64_t dc_id, bool daily,
                      struct cells *tot)
{
    return run_report(c,
                      daily                 ? ST_REPORT_GROUPS
                      : team_filter_only(q) ? ST_REPORT_TEAM_HOURS
                                            : ST_REPORT_GROUPS_HOURLY,
                      q, "", dc_id, tot);
}

/* The data-center filter's id (-1: no filter; 0: no such data center,
 * which matches nothing). */
static int datacenter_id(struct conn *c, const char *name, int64_t *id)
{
    struct db_stmt *s;
    int rc;

    *id = -1;
    if (!name)
        return GI_OK;
    if (!(s = prep(c, ST_DC_BY_NAME)))
        return GI_INTERNAL;
    db_bind_text(s, ":name", name);
    rc = db_fetch_int(c, s, id);
    if (rc == GI_NOT_FOUND) {
        *id = 0;
        rc = GI_OK;
    }
    return rc;
}

/* Names the groups that came as ids (a GPU's UUID, a data center's name),
 * one lookup per distinct id. */
static int name_groups(struct conn *c, struct cells *cs)
{
    int64_t last = -1;
    const char *name = NULL;
    char buf[256] = "";

    for (size_t i = 0; i < cs->n; i++) {
        struct cell *k = &cs->a[i];
        if (k->gid < 0 || k->group)
            continue;
        if (k->gid != last) {
            struct db_stmt *s = prep(c, cs->dc ? ST_DC_NAME : ST_GPU_UUID);
            int step;
            last = k->gid;
            name = NULL;
            if (!s)
                return GI_INTERNAL;
            db_bind_int(s, ":id", k->gid);
            step = db_step(c, s);
            if (step == DB_ROW && db_col_text(s, 0)) {
                gi_strlcpy(buf, db_col_text(s, 0), sizeof buf);
                name = buf;
            }
            db_reset(s);
            if (step != DB_ROW && step != DB_DONE)
                return db_status(step);
        }
        if (name && !(k->group = strdup(name)))
            return GI_INTERNAL;
    }
    return GI_OK;
}

int store_usage_report_text(struct store *st, const struct store_usage_query *q, bool csv,
                            char **text, size_t *len)
{
    struct conn *c = db_conn_get(st);
    struct cells cs = {0};
    bool consumer = strcmp(q->group_by, "consumer") == 0;
    bool daily = q->step != USAGE_STEP_HOUR && q->from % 86400 == 0 && q->to % 86400 == 0;
    bool dim = strcmp(q->group_by, "team") == 0 || strcmp(q->group_by, "env") == 0 ||
               strcmp(q->group_by, "pool") == 0 || strcmp(q->group_by, "cluster") == 0 ||
               strcmp(q->group_by, "cloud") == 0 || strcmp(q->group_by, "model") == 0 ||
               strcmp(q->group_by, "datacenter") == 0;
    bool paged =
        q->limit > 0 && (strcmp(q->group_by, "host") == 0 || strcmp(q->group_by, "gpu") == 0);
    bool consumer_paged = consumer && q->limit > 0, fast_page = false;
    bool team_hours = !daily && strcmp(q->group_by, "team") == 0 && team_filter_only(q);
    enum stmt_id report = team_hours ? ST_REPORT_TEAM_HOURS
                          : dim      ? (daily ? ST_REPORT_GROUPS : ST_REPORT_GROUPS_HOURLY)
                          : daily    ? ST_REPORT_DAILY
                                     : ST_REPORT_HOURLY;
    struct cells tot = {0};
    struct report_out o = {.csv = csv, .consumer = consumer};
    struct textbuf total = {0};
    int64_t groups_total = 0;
    char from[32], to[32];
    int64_t dc_id = -1;
    int rc;

    *text = NULL;
    *len = 0;
    cs.dc = strcmp(q->group_by, "datacenter") == 0;
    db_read_begin(c);
    rc = datacenter_id(c, q->datacenter, &dc_id);
    if (rc == GI_OK && consumer) {
        rc = consumer_cells(c, q, dc_id, daily, &cs);
        /* a page of one currency: the total over the cells as they are
         * (in the order of their first row, not sorted: the same sums but
         * for the last bits), then only the page's cells sorted */
        fast_page = rc == GI_OK && consumer_paged && cells_one_currency(&cs);
        if (fast_page && !csv)
            usage_put_total(&total, &cs);
        if (fast_page)
            rc = consumer_page_unsorted(q, &cs, &groups_total);
    } else if (rc == GI_OK && paged) {
        rc = page_cells(c, q, dc_id, daily, &cs, &groups_total);
        if (rc == GI_OK)
            rc = page_total(c, q, dc_id, daily, &tot);
    } else if (rc == GI_OK) {
        rc = run_report(c, report, q, q->group_by, dc_id, &cs);
    }
    if (!fast_page) {
        usage_cells_unindex(&cs);
        if (rc == GI_OK && cs.n)
            qsort(cs.a, cs.n, sizeof *cs.a, usage_cell_cmp);
        usage_cells_merge(&cs);
        if (rc == GI_OK && (rc = name_groups(c, &cs)) == GI_OK && cs.n)
            qsort(cs.a, cs.n, sizeof *cs.a, usage_cell_cmp);
    }
    db_read_end(c);
    if (rc != GI_OK)
        goto cleanup;
    if (!csv && !fast_page) /* the total is every group's, paged or not */
        usage_put_total(&total, paged ? &tot : &cs);
    if (consumer_paged && !fast_page && (rc = consumer_page(q, &cs, &groups_total)) != GI_OK)
        goto cleanup;
    if (q->max_groups > 0 && usage_cells_groups(&cs) > (size_t)q->max_groups) {
        rc = GI_TOO_LARGE;
        goto cleanup;
    }
    if (csv && cs.n) {
        tb_puts(&o.b, consumer ? "group,kind," : "group,");
        tb_puts(&o.b, "start,gpu_hours_owned,gpu_hours_allocated,gpu_hours_busy,"
                      "gpu_hours_allocated_idle,gpu_hours_idle,gpu_hours_unknown,util_avg,"
                      "energy_kwh,cost_amount,cost_currency,cost_method,cost_note\r\n");
    } else if (csv) {
        tb_put(&o.b, "\r\n", 2); /* no rows: no columns */
    } else {
        tb_puts(&o.b, "{\"items\":[");
    }
    for (size_t i = 0; i < cs.n;) {
        size_t j = i + 1;
        while (j < cs.n && cs.a[j].start == cs.a[i].start && cs.a[j].gid == cs.a[i].gid &&
               strcmp_null(cs.a[j].group, cs.a[i].group) == 0 &&
               strcmp_null(cs.a[j].kind, cs.a[i].kind) == 0)
            j++;
        usage_emit(&o, &cs.a[i], &cs.a[j]);
        i = j;
    }
    if (!csv) {
        gi_time_format(q->from, from, sizeof from);
        gi_time_format(q->to, to, sizeof to);
        tb_puts(&o.b, "],\"total\":");
        tb_put(&o.b, total.p ? total.p : "", total.len);
        tb_puts(&o.b, ",\"from\":");
        usage_put_plain(&o.b, from);
        tb_puts(&o.b, ",\"to\":");
        usage_put_plain(&o.b, to);
        tb_puts(&o.b, ",\"group_by\":");
        usage_put_plain(&o.b, q->group_by);
        tb_puts(&o.b, daily ? ",\"source\":\"usage_daily\"" : ",\"source\":\"usage_hourly\"");
        if (total.failed)
            o.b.failed = true;
    }
    if (!csv && (paged || consumer_paged)) {
        int64_t next = q->offset + q->limit;
        char num[96];
        snprintf(num, sizeof num, ",\"groups_total\":%lld,\"limit\":%lld,\"offset\":%lld",
                 (long long)groups_total, (long long)q->limit, (long long)q->offset);
        tb_puts(&o.b, num);
        if (next < groups_total)
            snprintf(num, sizeof num, ",\"next_offset\":%lld", (long long)next);
        else
            gi_strlcpy(num, ",\"next_offset\":null", sizeof num);
        tb_puts(&o.b, num);
    }
    if (!csv)
        tb_put(&o.b, "}", 1);
    *text = tb_take(&o.b, len);
    rc = *text ? GI_OK : GI_INTERNAL;
cleanup:
    db_conn_put(st, c);
    usage_cells_free(&cs);
    usage_cells_free(&tot);
    tb_free(&o.b);
    tb_free(&o.group);
    tb_free(&total);
    return rc;
}

int store_usage_report(struct store *st, const struct store_usage_query *q, json_t **out)
{
    char *text = NULL;
    size_t len = 0;
    int rc = store_usage_report_text(st, q, false, &text, &len);

    *out = NULL;
    if (rc == GI_OK && !(*out = json_loadb(text, len, 0, NULL)))
        rc = GI_INTERNAL;
    free(text);
    return rc;
}
