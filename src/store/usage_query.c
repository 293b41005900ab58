/* Reads of the usage rollups for the API: GPU-hours by group and step
 * with their catalog cost (the timeline is usage_timeline.c). See store.h.
 *
 * The database sums rows per (group, hour or day, currency); the
 * folding into weeks and months, the currency split and the money
 * formatting happen here. GPU-hours are seconds x fraction / 3600, so a
 * MIG slice counts its share. Costs are owned seconds x fraction x
 * rate_micros, summed as micro-unit-seconds and shown as decimal strings
 * with two decimals. */
#include "store/usage_int.h"
#include "core/status.h"
#include "core/textbuf.h"
#include "core/util.h"

#include <math.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>

/* Rows the database may hand back for one report. */
#define MAX_CELLS 200000

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
    "u.datacenter_id = :dc)"
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

/* The page's groups (GPU ids or host names) bound as one JSON array :keys,
 * so that one statement reads the steps of every group of a page. */
#define KEYS_SQLITE "(SELECT value FROM json_each(:keys))"
#define KEYS_PG "(SELECT json_array_elements_text(CAST(:keys AS JSON)))"
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

#define STATEMENTS(X)                                                                              \
    X(DC_BY_NAME, store_sql_dc_by_name)                                                            \
    X(GPU_UUID, "SELECT uuid FROM gpus WHERE id = :id")                                            \
    X(DC_NAME, "SELECT name FROM datacenters WHERE id = :id")                                      \
    X(REPORT_HOURLY, REPORT("usage_hourly", "hour"))                                               \
    X(REPORT_DAILY, REPORT("usage_daily", "day"))                                                  \
    X(REPORT_GROUPS,                                                                               \
      "SELECT " GROUP_EXPR_DIM                                                                     \
      ", NULL, u.day - u.day % CAST(:bucket AS BIGINT), u.currency, " SUMS_GROUPS                  \
      " FROM usage_groups_daily u WHERE u.day >= :from AND u.day < :to AND " FILTERS               \
      " GROUP BY 1, 2, 4, 5 LIMIT :max")                                                           \
    X(REPORT_GROUPS_HOURLY,                                                                        \
      "SELECT " GROUP_EXPR_DIM                                                                     \
      ", NULL, u.hour - u.hour % CAST(:bucket AS BIGINT), u.currency, " SUMS_GROUPS                \
      " FROM usage_groups_hourly u WHERE u.hour >= :from AND u.hour < :to AND " FILTERS            \
      " GROUP BY 1, 2, 4, 5 LIMIT :max")                                                           \
    X(REPORT_TEAM_HOURS,                                                                           \
      "SELECT CASE CAST(:g AS TEXT) WHEN 'team' THEN u.team ELSE NULL END, NULL, NULL, u.hour - "  \
      "u.hour % CAST(:bucket AS BIGINT), u.currency, " SUMS_GROUPS                                 \
      " FROM usage_team_hours u WHERE u.hour >= :from AND u.hour < :to AND " FILTER_TEAM           \
      " GROUP BY 1, 2, 4, 5 LIMIT :max")                                                           \
    X(RANK_GPU_DAILY, RANK_GPU("usage_daily", "day", FILTERS))                                     \
    X(RANK_GPU_DAILY_TEAM, RANK_GPU("usage_daily", "day", FILTER_TEAM))                            \
    X(RANK_GPU_HOURLY, RANK_GPU("usage_hourly", "hour", FILTERS))                                  \
    X(RANK_GPU_HOURLY_TEAM, RANK_GPU("usage_hourly", "hour", FILTER_TEAM))                         \
    X(RANK_HOST_DAILY, RANK_HOST("usage_daily", "day", FILTERS))                                   \
    X(RANK_HOST_DAILY_TEAM, RANK_HOST("usage_daily", "day", FILTER_TEAM))                          \
    X(RANK_HOST_HOURLY, RANK_HOST("usage_hourly", "hour", FILTERS))                                \
    X(RANK_HOST_HOURLY_TEAM, RANK_HOST("usage_hourly", "hour", FILTER_TEAM))                       \
    X(STEPS_GPU_DAILY, REPORT_WHERE("usage_daily", "day", " AND u.gpu_id IN " KEYS_SQLITE))        \
    X(STEPS_GPU_HOURLY, REPORT_WHERE("usage_hourly", "hour", " AND u.gpu_id IN " KEYS_SQLITE))     \
    X(STEPS_HOST_DAILY, REPORT_WHERE("usage_daily", "day", " AND u.host IN " KEYS_SQLITE))         \
    X(STEPS_HOST_HOURLY, REPORT_WHERE("usage_hourly", "hour", " AND u.host IN " KEYS_SQLITE))      \
    X(STEPS_GPU_DAILY_PG, REPORT_WHERE("usage_daily", "day", " AND u.gpu_id IN " KEYS_PG_INT))     \
    X(STEPS_GPU_HOURLY_PG, REPORT_WHERE("usage_hourly", "hour", " AND u.gpu_id IN " KEYS_PG_INT))  \
    X(STEPS_HOST_DAILY_PG, REPORT_WHERE("usage_daily", "day", " AND u.host IN " KEYS_PG))          \
    X(STEPS_HOST_HOURLY_PG, REPORT_WHERE("usage_hourly", "hour", " AND u.host IN " KEYS_PG))       \
    X(STEPS_NOHOST_DAILY, REPORT_WHERE("usage_daily", "day", " AND u.host IS NULL"))               \
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
    X(REPORT_CONSUMER_DAYS,                                                                        \
      "SELECT u.consumer, NULL, u.kind, u.day - u.day % CAST(:bucket AS BIGINT), "                 \
      "COALESCE(u.currency, ''), SUM(u.allocated_s), SUM(u.allocated_s), SUM(u.busy_s), "          \
      "SUM(u.alloc_idle_s), 0, 0, SUM(u.util_sum), SUM(u.measured_s), SUM(u.energy_wh), "          \
      "SUM(u.allocated_cost), SUM(u.busy_cost), SUM(u.alloc_idle_cost), 0, 0, SUM(u.unpriced_s) "  \
      "FROM usage_consumers_daily u WHERE u.day >= :from AND u.day < :to AND " FILTERS             \
      " GROUP BY 1, 3, 4, 5 LIMIT :max")

enum stmt_id { STATEMENTS(STORE_AS_ENUM) ST__COUNT };
static const char *const stmt_sql[] = {STATEMENTS(STORE_AS_SQL)};

static struct db_stmt *prep(struct conn *c, enum stmt_id id) { return db_prep(c, stmt_sql[id]); }

/* The summed columns of a cell, in the statements' order. */
enum {
    V_OWNED,
    V_ALLOC,
    V_BUSY,
    V_AIDLE,
    V_IDLE,
    V_UNKNOWN,
    V_USUM,
    V_MEAS,
    V_WH,
    V_COST,
    V_COST_BUSY,
    V_COST_AIDLE,
    V_COST_IDLE,
    V_COST_UNKNOWN,
    V_UNPRICED,
    V__N
};

struct cell {
    size_t rank; /* a paged report: the group's place in the page (else 0) */
    char *group; /* NULL: none */
    int64_t gid; /* gpu / datacenter grouping: the id the name is looked up by; -1 none */
    char *kind;  /* consumer grouping only */
    int64_t start;
    char cur[4];
    double v[V__N];
};

struct cells {
    struct cell *a;
    size_t n, cap;
    bool dc; /* the ids of the groups are data centers' (else GPUs') */
};

static void cells_free(struct cells *cs)
{
    for (size_t i = 0; i < cs->n; i++) {
        free(cs->a[i].group);
        free(cs->a[i].kind);
    }
    free(cs->a);
}

static int strcmp_null(const char *a, const char *b)
{
    if (!a || !b)
        return a ? 1 : b ? -1 : 0;
    return strcmp(a, b);
}

static int cell_cmp(const void *pa, const void *pb)
{
    const struct cell *a = pa, *b = pb;
    int d = a->rank < b->rank ? -1 : a->rank > b->rank;

    if (d == 0)
        d = strcmp_null(a->kind, b->kind);
    if (d == 0)
        d = strcmp_null(a->group, b->group);
    if (d == 0)
        d = a->gid < b->gid ? -1 : a->gid > b->gid;
    if (d == 0)
        d = a->start < b->start ? -1 : a->start > b->start;
    if (d == 0)
        d = strcmp(a->cur, b->cur);
    return d;
}

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

/* Adds the row into the cell of the same key, or appends one. */
static int cell_add(struct cells *cs, const char *group, int64_t gid, const char *kind,
                    int64_t start, const char *cur, const double *v)
{
    struct cell *c;

    for (size_t i = cs->n; i > 0; i--) {
        c = &cs->a[i - 1];
        if (c->start == start && c->gid == gid && strcmp_null(c->group, group) == 0 &&
            strcmp_null(c->kind, kind) == 0 && strcmp(c->cur, cur) == 0) {
            for (int k = 0; k < V__N; k++)
                c->v[k] += v[k];
            return GI_OK;
        }
        if (cs->n - i > 64) /* rows come grouped: a cell is near its kin */
            break;
    }
    if (cs->n == cs->cap) {
        size_t ncap = cs->cap ? cs->cap * 2 : 256;
        struct cell *p = realloc(cs->a, ncap * sizeof *p);
        if (!p)
            return GI_INTERNAL;
        cs->a = p;
        cs->cap = ncap;
    }
    c = &cs->a[cs->n];
    memset(c, 0, sizeof *c);
    c->group = group ? strdup(group) : NULL;
    c->kind = kind ? strdup(kind) : NULL;
    if ((group && !c->group) || (kind && !c->kind)) {
        free(c->group);
        free(c->kind);
        return GI_INTERNAL;
    }
    cs->n++;
    c->gid = gid;
    c->start = start;
    gi_strlcpy(c->cur, cur, sizeof c->cur);
    memcpy(c->v, v, sizeof c->v);
    return GI_OK;
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
    db_bind_int(s, ":max", MAX_CELLS + 1);
}

/* Runs one report statement and folds its rows into cs; `sign` -1
 * subtracts them (the consumers' share taken from the totals). */
static int collect(struct conn *c, struct db_stmt *s, const struct store_usage_query *q,
                   bool with_kind, struct cells *cs, double sign)
{
    size_t rows = 0;
    int step, rc = GI_OK;

    while (rc == GI_OK && (step = db_step(c, s)) == DB_ROW) {
        double v[V__N];
        if (++rows > MAX_CELLS) {
            rc = GI_TOO_LARGE;
            break;
        }
        for (int k = 0; k < V__N; k++)
            v[k] = sign * db_col_dbl(s, 5 + k);
        rc = cell_add(cs, db_col_text(s, 0), db_col_is_null(s, 1) ? -1 : db_col_int(s, 1),
                      with_kind ? db_col_text(s, 2) : NULL, step_start(q->step, db_col_int(s, 3)),
                      db_col_text(s, 4), v);
    }
    db_reset(s);
    if (rc == GI_OK && step != DB_DONE)
        rc = db_status(step);
    return rc;
}

void usage_money_text(double micro_seconds, char *buf, size_t len)
{
    snprintf(buf, len, "%.2f", micro_seconds / 3600.0 / 1e6 + 0.0);
    if (strcmp(buf, "-0.00") == 0)
        gi_strlcpy(buf, "0.00", len);
}

/* The text of a report being written: JSON (each item an object, as
 * jansson would encode it) or CSV (each item one flat row). */
struct report_out {
    struct textbuf b;
    bool csv, consumer;
    size_t items;
    /* The last group written and its encoding, reused while items of the
     * same group follow (a report's items come grouped). */
    bool have_group, group_ok;
    const char *group_of;
    struct textbuf group;
};

/* The figures of an item or the total, computed once for both formats. */
struct figures {
    double h[6]; /* owned, allocated, busy, allocated_idle, idle, unknown */
    double util, kwh;
    bool has_util, priced;
    char amount[48], split[4][48];
    char note[160]; /* "" none */
};

static const char *const hour_names[] = {"owned",          "allocated", "busy",
                                         "allocated_idle", "idle",      "unknown"};
static const char *const split_names[] = {"busy", "allocated_idle", "idle", "unknown"};

/* An item's (or the total's) figures from summed values; cur "" when
 * unpriced. `mixed`: the group and step hold more than one currency. */
static void figures_of(const double *v, const char *cur, bool mixed, struct figures *f)
{
    double owned_h = v[V_OWNED] / 3600.0, unpriced_h = v[V_UNPRICED] / 3600.0;
    static const int parts[] = {V_COST_BUSY, V_COST_AIDLE, V_COST_IDLE, V_COST_UNKNOWN};

    f->h[0] = usage_round6(owned_h);
    f->h[1] = usage_round6(v[V_ALLOC] / 3600.0);
    f->h[2] = usage_round6(v[V_BUSY] / 3600.0);
    f->h[3] = usage_round6(v[V_AIDLE] / 3600.0);
    f->h[4] = usage_round6(v[V_IDLE] / 3600.0);
    f->h[5] = usage_round6(v[V_UNKNOWN] / 3600.0);
    f->has_util = v[V_MEAS] > 0;
    f->util = f->has_util ? usage_round6(v[V_USUM] / v[V_MEAS]) : 0;
    f->kwh = usage_round6(v[V_WH] / 1000.0);
    f->priced = cur[0] && owned_h - unpriced_h > 1e-9;
    if (f->priced) {
        usage_money_text(v[V_COST], f->amount, sizeof f->amount);
        for (int i = 0; i < 4; i++)
            usage_money_text(v[parts[i]], f->split[i], sizeof f->split[i]);
    }
    f->note[0] = '\0';
    if (!f->priced) {
        if (owned_h > 0)
            gi_strlcpy(f->note, "no catalog rate covers these GPU-hours", sizeof f->note);
    } else if (unpriced_h > 1e-9) {
        snprintf(f->note, sizeof f->note,
                 "%.2f of these GPU-hours have no catalog rate and are not in the amount",
                 unpriced_h);
    } else if (mixed) {
        gi_strlcpy(f->note, "more than one currency: one item per currency", sizeof f->note);
    }
}

/* Writes a string known to need no escaping (ASCII, no quote, backslash
 * or control byte) as a JSON string. */
static void put_plain(struct textbuf *b, const char *s)
{
    tb_put(b, "\"", 1);
    tb_puts(b, s);
    tb_put(b, "\"", 1);
}

/* Writes a string member "key":value when value encodes (a string that is
 * not valid UTF-8 leaves the member out, as jansson does). */
static void put_member_str(struct textbuf *b, const char *key, const char *value)
{
    struct textbuf t = {0};

    if (tb_json_str(&t, value) && !t.failed) {
        tb_put(b, ",\"", 2);
        tb_puts(b, key);
        tb_put(b, "\":", 2);
        tb_put(b, t.p, t.len);
    }
    tb_free(&t);
}

/* The figures as the members of a JSON object, from "gpu_hours" to
 * "cost" (and "cost_note" unless note_override, which replaces it). */
static void put_figures_json(struct textbuf *b, const struct figures *f, const char *cur,
                             const char *note_override)
{
    struct textbuf c = {0};
    const char *note = note_override ? note_override : f->note;

    tb_puts(b, "{\"gpu_hours\":{");
    for (int i = 0; i < 6; i++) {
        tb_puts(b, i ? ",\"" : "\"");
        tb_puts(b, hour_names[i]);
        tb_put(b, "\":", 2);
        tb_json_real(b, f->h[i]);
    }
    tb_puts(b, "},\"util_avg\":");
    if (f->has_util)
        tb_json_real(b, f->util);
    else
        tb_puts(b, "null");
    tb_puts(b, ",\"energy_kwh\":");
    tb_json_real(b, f->kwh);
    tb_puts(b, ",\"cost\":");
    if (f->priced && tb_json_str(&c, cur) && !c.failed) {
        tb_puts(b, "{\"amount\":");
        put_plain(b, f->amount);
        tb_puts(b, ",\"currency\":");
        tb_put(b, c.p, c.len);
        tb_puts(b, ",\"method\":\"catalog\",\"split\":{");
        for (int i = 0; i < 4; i++) {
            tb_puts(b, i ? ",\"" : "\"");
            tb_puts(b, split_names[i]);
            tb_put(b, "\":", 2);
            put_plain(b, f->split[i]);
        }
        tb_puts(b, "}}");
    } else {
        tb_puts(b, "null");
    }
    tb_free(&c);
    if (note[0]) {
        tb_puts(b, ",\"cost_note\":");
        put_plain(b, note);
    }
}

/* Writes a CSV cell of text, empty for NULL. */
static void put_csv_text(struct textbuf *b, const char *s, bool comma)
{
    if (comma)
        tb_put(b, ",", 1);
    if (s)
        tb_csv_cell(b, s, true);
}

/* Writes one item: the group's figures and key (group, kind, start). */
static void put_item(struct report_out *o, const struct cell *a, const struct figures *f,
                     const char *cur)
{
    struct textbuf *b = &o->b;
    char start[32];

    gi_time_format(a->start, start, sizeof start);
    if (!o->have_group || strcmp_null(o->group_of, a->group) != 0) {
        o->group.len = 0;
        o->group.failed = false;
        o->group_ok = o->csv ? true : tb_json_str(&o->group, a->group) && !o->group.failed;
        o->group_of = a->group;
        o->have_group = true;
    }
    if (o->csv) {
        put_csv_text(b, a->group, false);
        if (o->consumer)
            put_csv_text(b, a->kind ? a->kind : "none", true);
        put_csv_text(b, start, true);
        for (int i = 0; i < 6; i++) {
            tb_put(b, ",", 1);
            tb_csv_real(b, f->h[i]);
        }
        tb_put(b, ",", 1);
        if (f->has_util)
            tb_csv_real(b, f->util);
        tb_put(b, ",", 1);
        tb_csv_real(b, f->kwh);
        put_csv_text(b, f->priced ? f->amount : NULL, true);
        put_csv_text(b, f->priced ? cur : NULL, true);
        put_csv_text(b, f->priced ? "catalog" : NULL, true);
        put_csv_text(b, f->note[0] ? f->note : NULL, true);
        tb_put(b, "\r\n", 2);
        o->items++;
        return;
    }
    if (o->items++)
        tb_put(b, ",", 1);
    put_figures_json(b, f, cur, NULL);
    if (o->group_ok) {
        tb_puts(b, ",\"group\":");
        tb_put(b, o->group.p, o->group.len);
    }
    if (o->consumer)
        put_member_str(b, "kind", a->kind ? a->kind : "none");
    tb_puts(b, ",\"start\":");
    put_plain(b, start);
    tb_put(b, "}", 1);
}

/* Writes the cells [a, b) of one group and step (sorted by currency, ""
 * first) as items: one item when they hold at most one currency, else
 * one per currency, the unpriced part as an item of its own. */
static void emit(struct report_out *o, const struct cell *a, const struct cell *b)
{
    size_t ncur = 0;
    const char *cur = "";
    double sum[V__N] = {0};

    for (const struct cell *c = a; c < b; c++)
        if (c->cur[0]) {
            ncur++;
            cur = c->cur;
        }
    for (const struct cell *c = a; c < b; c++) {
        for (int k = 0; k < V__N; k++)
            sum[k] += c->v[k];
        if (ncur > 1 || c + 1 == b) {
            struct figures f;
            const char *in = ncur > 1 ? c->cur : cur;
            figures_of(sum, in, ncur > 1, &f);
            put_item(o, a, &f, in);
            memset(sum, 0, sizeof sum);
        }
    }
}

/* Writes the total over every cell as a JSON object: one currency's cost,
 * or (several) null with one entry per currency in "costs". */
static void put_total(struct textbuf *b, const struct cells *cs)
{
    double sum[V__N] = {0};
    const char *cur = "";
    struct figures f;
    size_t ncur = 0, listed = 0;

    for (size_t i = 0; i < cs->n; i++) {
        bool seen = false;
        for (int k = 0; k < V__N; k++)
            sum[k] += cs->a[i].v[k];
        if (!cs->a[i].cur[0])
            continue;
        for (size_t j = 0; j < i && !seen; j++)
            seen = strcmp(cs->a[j].cur, cs->a[i].cur) == 0;
        if (!seen) {
            ncur++;
            cur = cs->a[i].cur;
        }
    }
    figures_of(sum, ncur > 1 ? "" : cur, false, &f);
    put_figures_json(b, &f, ncur > 1 ? "" : cur,
                     ncur > 1 ? "more than one currency: see costs, one per currency" : NULL);
    if (ncur > 1) {
        tb_puts(b, ",\"costs\":[");
        for (size_t i = 0; i < cs->n; i++) {
            double one = 0;
            char amount[48];
            bool seen = false;
            struct textbuf c = {0};
            if (!cs->a[i].cur[0])
                continue;
            for (size_t j = 0; j < i && !seen; j++)
                seen = strcmp(cs->a[j].cur, cs->a[i].cur) == 0;
            if (seen)
                continue;
            for (size_t j = i; j < cs->n; j++)
                if (strcmp(cs->a[j].cur, cs->a[i].cur) == 0)
                    one += cs->a[j].v[V_COST];
            if (!tb_json_str(&c, cs->a[i].cur) || c.failed) {
                tb_free(&c);
                continue;
            }
            usage_money_text(one, amount, sizeof amount);
            tb_puts(b, listed++ ? ",{\"amount\":" : "{\"amount\":");
            put_plain(b, amount);
            tb_puts(b, ",\"currency\":");
            tb_put(b, c.p, c.len);
            tb_puts(b, ",\"method\":\"catalog\"}");
            tb_free(&c);
        }
        tb_put(b, "]", 1);
    }
    tb_put(b, "}", 1);
}

/* Sums sorted cells of the same key (a week's days arrive apart). */
static void cells_merge(struct cells *cs)
{
    size_t w = 0;

    for (size_t i = 0; i < cs->n; i++) {
        if (w > 0 && cell_cmp(&cs->a[w - 1], &cs->a[i]) == 0) {
            for (int k = 0; k < V__N; k++)
                cs->a[w - 1].v[k] += cs->a[i].v[k];
            free(cs->a[i].group);
            free(cs->a[i].kind);
            continue;
        }
        cs->a[w++] = cs->a[i];
    }
    cs->n = w;
}

static size_t count_groups(const struct cells *cs)
{
    size_t n = 0;

    for (size_t i = 0; i < cs->n; i++)
        if (i == 0 || strcmp_null(cs->a[i].group, cs->a[i - 1].group) != 0 ||
            cs->a[i].gid != cs->a[i - 1].gid || strcmp_null(cs->a[i].kind, cs->a[i - 1].kind) != 0)
            n++;
    return n;
}

/* group_by=consumer: each consumer's share, and the rest of the owned
 * time (idle and unknown) as group null of kind "none", so that the
 * items add up to the GPU totals. `daily` (whole days, no hourly steps):
 * the consumers from usage_consumers_daily and the totals from
 * usage_groups_daily, else both from the hourly rows. */
static int consumer_cells(struct conn *c, const struct store_usage_query *q, int64_t dc_id,
                          bool daily, struct cells *cs)
{
    struct db_stmt *s = prep(c, daily ? ST_REPORT_GROUPS : ST_REPORT_HOURLY);
    struct cells rest = {0};
    int rc;

    if (!s)
        return GI_INTERNAL;
    bind_query(s, q, "", dc_id);
    if ((rc = collect(c, s, q, false, &rest, 1.0)) != GI_OK)
        goto cleanup;
    rc = GI_INTERNAL;
    if (!(s = prep(c, daily ? ST_REPORT_CONSUMER_DAYS : ST_REPORT_CONSUMERS)))
        goto cleanup;
    bind_query(s, q, "", dc_id);
    if ((rc = collect(c, s, q, true, cs, 1.0)) != GI_OK)
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
            rc = cell_add(cs, NULL, -1, "none", rest.a[j].start, rest.a[j].cur, rest.a[j].v);
    }
cleanup:
    cells_free(&rest);
    return rc;
}

/* One group of a paged consumer report: its cells a[lo..hi) of the
 * sorted cells and its owned seconds over the range. */
struct consumer_group {
    size_t lo, hi;
    double owned;
};

static const struct cell *group_cells;

static int consumer_group_cmp(const void *pa, const void *pb)
{
    const struct consumer_group *a = pa, *b = pb;
    const struct cell *x = &group_cells[a->lo], *y = &group_cells[b->lo];
    int d = a->owned > b->owned ? -1 : a->owned < b->owned;

    if (d == 0)
        d = strcmp_null(x->kind, y->kind);
    if (d == 0)
        d = strcmp_null(x->group, y->group);
    return d;
}

/* group_by=consumer with q->limit > 0: keeps the cells of the page's
 * groups only, ranked as host and GPU pages are (owned GPU-hours over the
 * range, descending, then kind and key); cs comes sorted by cell_cmp,
 * unranked. *groups_total counts every group. */
static int consumer_page(const struct store_usage_query *q, struct cells *cs, int64_t *groups_total)
{
    struct consumer_group *g = calloc(cs->n ? cs->n : 1, sizeof *g);
    size_t n = 0, w = 0;

    if (!g)
        return GI_INTERNAL;
    for (size_t i = 0; i < cs->n; i++) {
        if (n == 0 || strcmp_null(cs->a[i].kind, cs->a[g[n - 1].lo].kind) != 0 ||
            strcmp_null(cs->a[i].group, cs->a[g[n - 1].lo].group) != 0)
            g[n++] = (struct consumer_group){.lo = i, .hi = i};
        g[n - 1].hi = i + 1;
        g[n - 1].owned += cs->a[i].v[V_OWNED];
    }
    group_cells = cs->a;
    qsort(g, n, sizeof *g, consumer_group_cmp);
    for (size_t k = 0; k < n; k++)
        for (size_t i = g[k].lo; i < g[k].hi; i++)
            cs->a[i].rank = (int64_t)k >= q->offset && (int64_t)k < q->offset + q->limit
                                ? k - (size_t)q->offset + 1
                                : 0;
    for (size_t i = 0; i < cs->n; i++) {
        if (cs->a[i].rank == 0) {
            free(cs->a[i].group);
            free(cs->a[i].kind);
            continue;
        }
        cs->a[w++] = cs->a[i];
    }
    cs->n = w;
    if (cs->n)
        qsort(cs->a, cs->n, sizeof *cs->a, cell_cmp);
    *groups_total = (int64_t)n;
    free(g);
    return GI_OK;
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
 * the GPUs with no host if the page has it. */
static int page_steps(struct conn *c, const struct store_usage_query *q, int64_t dc_id, bool daily,
                      bool gpu, const struct page_key *keys, size_t n, struct cells *cs)
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
        if (pass == 1)
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
        rc = collect(c, s, q, false, cs, 1.0);
    }
    for (size_t j = 0; rc == GI_OK && j < cs->n; j++)
        cs->a[j].rank = page_rank(keys, n, gpu, &cs->a[j]);
cleanup:
    free(text);
    json_decref(list);
    return rc;
}

/* group_by=host|gpu with q->limit > 0: ranks every group with one
 * aggregate over the range (*groups_total counts them), then reads the
 * steps of the page's groups only. */
static int page_cells(struct conn *c, const struct store_usage_query *q, int64_t dc_id, bool daily,
                      struct cells *cs, int64_t *groups_total)
{
    bool gpu = strcmp(q->group_by, "gpu") == 0;
    bool team_only = !q->env && !q->pool && !q->cluster && !q->cloud && !q->model && dc_id < 0;
    struct db_stmt *s = prep(c, rank_stmt(gpu, daily, team_only));
    struct page_key *keys = NULL;
    size_t n = 0;
    int64_t row = 0;
    int step, rc = GI_OK;

    *groups_total = 0;
    if (!s || !(keys = calloc((size_t)q->limit, sizeof *keys)))
        return GI_INTERNAL;
    bind_query(s, q, q->group_by, dc_id);
    while ((step = db_step(c, s)) == DB_ROW) {
        if (row++ < q->offset || n >= (size_t)q->limit)
            continue;
        keys[n].gid = gpu ? db_col_int(s, 0) : -1;
        if (!gpu && db_col_text(s, 0) && !(keys[n].host = strdup(db_col_text(s, 0)))) {
            rc = GI_INTERNAL;
            break;
        }
        n++;
    }
    db_reset(s);
    if (rc == GI_OK && step != DB_DONE)
        rc = db_status(step);
    *groups_total = row;
    if (rc == GI_OK)
        rc = page_steps(c, q, dc_id, daily, gpu, keys, n, cs);
    for (size_t i = 0; i < n; i++)
        free(keys[i].host);
    free(keys);
    return rc;
}

/* Whether q filters by nothing but the team: then the hours of every
 * group sum to the team hours (usage_team_hours). */
static bool team_filter_only(const struct store_usage_query *q)
{
    return !q->env && !q->pool && !q->cluster && !q->cloud && !q->model && !q->datacenter;
}

/* The total of a paged report over every group, from the group rows (the
 * team hours when nothing but the team filters hours). */
static int page_total(struct conn *c, const struct store_usage_query *q, int64_t dc_id, bool daily,
                      struct cells *tot)
{
    struct db_stmt *s = prep(c, daily                 ? ST_REPORT_GROUPS
                                : team_filter_only(q) ? ST_REPORT_TEAM_HOURS
                                                      : ST_REPORT_GROUPS_HOURLY);

    if (!s)
        return GI_INTERNAL;
    bind_query(s, q, "", dc_id);
    return collect(c, s, q, false, tot, 1.0);
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
    bool consumer_paged = consumer && q->limit > 0;
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
    struct db_stmt *s;
    int64_t dc_id = -1;
    int rc;

    *text = NULL;
    *len = 0;
    cs.dc = strcmp(q->group_by, "datacenter") == 0;
    db_read_begin(c);
    rc = datacenter_id(c, q->datacenter, &dc_id);
    if (rc == GI_OK && consumer) {
        rc = consumer_cells(c, q, dc_id, daily, &cs);
    } else if (rc == GI_OK && paged) {
        rc = page_cells(c, q, dc_id, daily, &cs, &groups_total);
        if (rc == GI_OK)
            rc = page_total(c, q, dc_id, daily, &tot);
    } else if (rc == GI_OK && (s = prep(c, report))) {
        bind_query(s, q, q->group_by, dc_id);
        rc = collect(c, s, q, false, &cs, 1.0);
    } else if (rc == GI_OK) {
        rc = GI_INTERNAL;
    }
    if (rc == GI_OK && cs.n)
        qsort(cs.a, cs.n, sizeof *cs.a, cell_cmp);
    cells_merge(&cs);
    if (rc == GI_OK && (rc = name_groups(c, &cs)) == GI_OK && cs.n)
        qsort(cs.a, cs.n, sizeof *cs.a, cell_cmp);
    db_read_end(c);
    if (rc != GI_OK)
        goto cleanup;
    if (!csv) /* the total is every group's, paged or not */
        put_total(&total, paged ? &tot : &cs);
    if (consumer_paged && (rc = consumer_page(q, &cs, &groups_total)) != GI_OK)
        goto cleanup;
    if (q->max_groups > 0 && count_groups(&cs) > (size_t)q->max_groups) {
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
        emit(&o, &cs.a[i], &cs.a[j]);
        i = j;
    }
    if (!csv) {
        gi_time_format(q->from, from, sizeof from);
        gi_time_format(q->to, to, sizeof to);
        tb_puts(&o.b, "],\"total\":");
        tb_put(&o.b, total.p ? total.p : "", total.len);
        tb_puts(&o.b, ",\"from\":");
        put_plain(&o.b, from);
        tb_puts(&o.b, ",\"to\":");
        put_plain(&o.b, to);
        tb_puts(&o.b, ",\"group_by\":");
        put_plain(&o.b, q->group_by);
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
    cells_free(&cs);
    cells_free(&tot);
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
