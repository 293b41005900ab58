/* Usage patterns read from the rollups: the hour-of-week heatmap (from the
 * hourly group rows, or from the team hours with no filter but the team's)
 * and period-over-period trends by one grouping (whole days from the day
 * groups, or from usage_daily by host or GPU; the partial
 * days at the range's ends and the day the two periods meet in from the
 * hourly group rows, or from usage_hourly by host or GPU). With no filter
 * at all, the whole days by host come from the host days
 * (usage_host_days), and the GPUs of a trend by GPU are ranked from the
 * current half's blocks (usage_gpu_blocks) and edges before both halves
 * are summed for the page's GPUs only. See store.h; figures and money are
 * those of insights.c. */
#include "store/insights_int.h"
#include "store/usage_int.h"
#include "core/status.h"

#include <math.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>

/* Per-group sums of one half of a trend over the rows of TREND_SRC_*:
 * `cmp` picks the rows (by their hour or day, t). */
#define TREND_HALF(cmp)                                                                            \
    "SUM(CASE WHEN h.t " cmp " :mid THEN h.o ELSE 0 END), "                                        \
    "SUM(CASE WHEN h.t " cmp " :mid THEN h.b ELSE 0 END), "                                        \
    "SUM(CASE WHEN h.t " cmp " :mid THEN h.a ELSE 0 END), "                                        \
    "SUM(CASE WHEN h.t " cmp " :mid THEN h.us ELSE 0 END), "                                       \
    "SUM(CASE WHEN h.t " cmp " :mid THEN h.ms ELSE 0 END), "                                       \
    "SUM(CASE WHEN h.t " cmp " :mid THEN h.oc END) / 3600, "                                       \
    "MIN(CASE WHEN h.t " cmp " :mid THEN h.cur END), "                                             \
    "MAX(CASE WHEN h.t " cmp " :mid THEN h.cur END)"

/* The hours of the range's ends (and of the day the halves meet in) from
 * usage_hourly, with `more` columns first: seconds x fraction, cost as
 * seconds x fraction x rate. */
#define TREND_HOURS(more, edge)                                                                    \
    " UNION ALL SELECT " more "h.hour, h.owned_s * h.fraction, h.busy_s * h.fraction, "            \
    "h.alloc_idle_s * h.fraction, h.util_sum * h.fraction, h.measured_s * h.fraction, "            \
    "h.owned_s * h.fraction * h.rate_micros, h.currency FROM usage_hourly h WHERE " edge
#define TREND_EDGES(more)                                                                          \
    TREND_HOURS(more, EDGE_HOURS_1) TREND_HOURS(more, EDGE_HOURS_2) TREND_HOURS(more, EDGE_HOURS_3)
/* The same hours by a dimension, from the hourly group rows (whose sums
 * are those of the GPUs' rows: seconds x fraction, cost x rate). */
#define TREND_GHOURS(edge)                                                                         \
    " UNION ALL SELECT " DIM_COLS "h.hour, h.owned_s, h.busy_s, h.alloc_idle_s, h.util_sum, "      \
    "h.measured_s, h.owned_cost, NULLIF(h.currency, '') FROM usage_groups_hourly h WHERE " edge
#define TREND_GEDGES                                                                               \
    TREND_GHOURS(EDGE_HOURS_1) TREND_GHOURS(EDGE_HOURS_2) TREND_GHOURS(EDGE_HOURS_3)

/* The rows a trend sums (alias h; t the hour or day, o/b/a owned, busy
 * and allocated-idle seconds x fraction, us/ms util_sum and measured_s x
 * fraction, oc the owned cost in micro-unit-seconds, cur its currency):
 * whole days from the day groups (by a dimension) or from usage_daily
 * (by host or GPU), the rest from the hour groups (by a dimension) or
 * from usage_hourly (by host or GPU). */
#define DIM_COLS "h.team, h.env, h.pool, h.cluster, h.cloud, h.model, h.datacenter_id, "
#define TREND_SRC_GROUPS                                                                           \
    "(SELECT " DIM_COLS "h.day AS t, h.owned_s AS o, h.busy_s AS b, h.alloc_idle_s AS a, "         \
    "h.util_sum AS us, h.measured_s AS ms, h.owned_cost AS oc, NULLIF(h.currency, '') AS cur "     \
    "FROM usage_groups_daily h WHERE " WHOLE_DAYS("day") TREND_GEDGES ") h"
#define GPU_COLS DIM_COLS "h.host, h.gpu_id, "
#define TREND_SRC_DAILY                                                                            \
    "(SELECT " GPU_COLS "h.day AS t, h.owned_s * h.fraction AS o, h.busy_s * h.fraction AS b, "    \
    "h.alloc_idle_s * h.fraction AS a, h.util_sum * h.fraction AS us, h.measured_s * h.fraction "  \
    "AS ms, h.owned_s * h.fraction * h.rate_micros AS oc, h.currency AS cur FROM usage_daily h "   \
    "WHERE " WHOLE_DAYS("day") TREND_EDGES(GPU_COLS) ") h"

/* The same rows with no filter, by host: whole days from the host days
 * (usage_host_days, whose sums are those of usage_daily's rows of the
 * host, day and currency), the rest from usage_hourly. */
#define TREND_SRC_HOST_DAYS                                                                        \
    "(SELECT h.host, h.day AS t, h.owned_s AS o, h.busy_s AS b, h.alloc_idle_s AS a, h.util_sum "  \
    "AS us, h.measured_s AS ms, h.owned_cost AS oc, NULLIF(h.currency, '') AS cur FROM "           \
    "usage_host_days h WHERE h.day >= :d1 AND h.day < :d2 AND NOT (h.day >= :x1 AND h.day < "      \
    ":x2)" TREND_EDGES("h.host, ") ") h"

/* TREND_SRC_DAILY with no filter, for the GPUs `in` names only (a page
 * ranked by TREND_RANK_GPU), read through the tables' keys (gpu_id,
 * day|hour). */
#define TREND_KEY_HOURS(in, a, b)                                                                  \
    " UNION ALL SELECT h.gpu_id, h.hour, h.owned_s * h.fraction, h.busy_s * h.fraction, "          \
    "h.alloc_idle_s * h.fraction, h.util_sum * h.fraction, h.measured_s * h.fraction, "            \
    "h.owned_s * h.fraction * h.rate_micros, h.currency FROM usage_hourly h WHERE h.gpu_id " in    \
    " AND h.hour >= " a " AND h.hour < " b
#define TREND_SRC_KEYS(in)                                                                         \
    "(SELECT h.gpu_id, h.day AS t, h.owned_s * h.fraction AS o, h.busy_s * h.fraction AS b, "      \
    "h.alloc_idle_s * h.fraction AS a, h.util_sum * h.fraction AS us, h.measured_s * h.fraction "  \
    "AS ms, h.owned_s * h.fraction * h.rate_micros AS oc, h.currency AS cur FROM usage_daily h "   \
    "WHERE h.gpu_id " in " AND h.day >= :d1 AND h.day < :d2 AND NOT (h.day >= :x1 AND h.day < "    \
    ":x2)" TREND_KEY_HOURS(in, ":from", ":d1") TREND_KEY_HOURS(in, ":d2", ":to")                   \
        TREND_KEY_HOURS(in, ":x1", ":x2") ") h"
#define KEYS_SQLITE "IN (SELECT value FROM json_each(:keys))"
#define KEYS_PG "= ANY(ARRAY(SELECT CAST(json_array_elements_text(CAST(:keys AS JSON)) AS BIGINT)))"

/* The rows that rank the GPUs of a trend by GPU with no filter by the
 * current half's owned seconds: its whole blocks of usage_gpu_blocks
 * [:a, :b), its other whole days [:lo, :a) and [:b, :hi) from
 * usage_daily and its hours [:mid, :lo) and [:hi, :to) from
 * usage_hourly, a few rows per GPU instead of one per GPU and day of both
 * halves (bind_rank). */
#define TREND_RANK_ROWS                                                                            \
    "SELECT u.gpu_id, u.owned_s AS o FROM usage_gpu_blocks u WHERE u.start >= :a AND "             \
    "u.start < :b UNION ALL SELECT u.gpu_id, u.owned_s * u.fraction FROM usage_daily u WHERE "     \
    "u.day >= :lo AND u.day < :a UNION ALL SELECT u.gpu_id, u.owned_s * u.fraction FROM "          \
    "usage_daily u WHERE u.day >= :b AND u.day < :hi UNION ALL SELECT u.gpu_id, u.owned_s * "      \
    "u.fraction FROM usage_hourly u WHERE u.hour >= :mid AND u.hour < :lo UNION ALL SELECT "       \
    "u.gpu_id, u.owned_s * u.fraction FROM usage_hourly u WHERE u.hour >= :hi AND u.hour < :to"
/* The first :limit of them in TREND's order (the current half's owned
 * seconds, most first, then the UUID). */
#define TREND_RANK_GPU                                                                             \
    "SELECT r.gpu_id, r.owned FROM (SELECT u.gpu_id, SUM(u.o) AS owned FROM (" TREND_RANK_ROWS     \
    ") u GROUP BY u.gpu_id) r JOIN gpus g ON g.id = r.gpu_id ORDER BY r.owned DESC, g.uuid LIMIT " \
    ":limit"

#define TREND(key, src, join)                                                                      \
    "SELECT " key ", " TREND_HALF(">=") ", " TREND_HALF("<") " FROM " src " " join                 \
                                                             " GROUP BY " key                      \
                                                             " ORDER BY 2 DESC, 1 LIMIT :limit"

#define JOIN_GPU "JOIN gpus g ON g.id = h.gpu_id"
#define JOIN_DC "LEFT JOIN datacenters d ON d.id = h.datacenter_id"

#define STATEMENTS(X)                                                                              \
    /* From the hourly group rows (their sums are already x fraction). */                          \
    X(HEATMAP, "SELECT ((h.hour + :tz) / 3600 + 72) % 168, SUM(h.util_sum), SUM(h.measured_s), "   \
               "SUM(h.allocated_s), SUM(h.owned_s), SUM(h.busy_s) FROM usage_groups_hourly h "     \
               "WHERE " FILTERS "GROUP BY ((h.hour + :tz) / 3600 + 72) % 168")                     \
    /* With no filter but the team's, from the team hours (the same sums). */                      \
    X(HEATMAP_TEAM,                                                                                \
      "SELECT ((h.hour + :tz) / 3600 + 72) % 168, SUM(h.util_sum), SUM(h.measured_s), "            \
      "SUM(h.allocated_s), SUM(h.owned_s), SUM(h.busy_s) FROM usage_team_hours h WHERE h.hour >= " \
      ":from AND h.hour < :to AND (:team IS NULL OR h.team = :team) GROUP BY ((h.hour + :tz) / "   \
      "3600 + 72) % 168")                                                                          \
    X(TREND_TEAM, TREND("h.team", TREND_SRC_GROUPS, ""))                                           \
    X(TREND_ENV, TREND("h.env", TREND_SRC_GROUPS, ""))                                             \
    X(TREND_POOL, TREND("h.pool", TREND_SRC_GROUPS, ""))                                           \
    X(TREND_CLUSTER, TREND("h.cluster", TREND_SRC_GROUPS, ""))                                     \
    X(TREND_CLOUD, TREND("h.cloud", TREND_SRC_GROUPS, ""))                                         \
    X(TREND_MODEL, TREND("h.model", TREND_SRC_GROUPS, ""))                                         \
    X(TREND_DC, TREND("d.name", TREND_SRC_GROUPS, JOIN_DC))                                        \
    X(TREND_HOST, TREND("h.host", TREND_SRC_DAILY, ""))                                            \
    X(TREND_GPU, TREND("g.uuid", TREND_SRC_DAILY, JOIN_GPU))                                       \
    /* With no filter (trend_plain). */                                                            \
    X(TREND_HOST_DAYS, TREND("h.host", TREND_SRC_HOST_DAYS, ""))                                   \
    /* SQLite: its rows unsummed, whole days and hours apart (trend_host_fold). */                 \
    X(TREND_HOST_DAY_ROWS,                                                                         \
      "SELECT h.host, h.day, h.owned_s, h.busy_s, h.alloc_idle_s, h.util_sum, h.measured_s, 1, "   \
      "h.owned_cost, NULLIF(h.currency, '') FROM usage_host_days h WHERE h.day >= :d1 AND "        \
      "h.day < :d2 AND NOT (h.day >= :x1 AND h.day < :x2)")                                        \
    X(TREND_HOST_HOUR_ROWS,                                                                        \
      "SELECT h.host, h.hour, h.owned_s, h.busy_s, h.alloc_idle_s, h.util_sum, h.measured_s, "     \
      "h.fraction, h.rate_micros, h.currency FROM usage_hourly h WHERE h.hour >= :p AND h.hour < " \
      ":q")                                                                                        \
    X(TREND_RANK_GPU, TREND_RANK_GPU)                                                              \
    /* SQLite: the same ranking's rows unsummed (trend_rank_fold). */                              \
    X(TREND_RANK_ROWS, TREND_RANK_ROWS)                                                            \
    X(GPU_MAX_ID, "SELECT MAX(id) FROM gpus")                                                      \
    X(GPU_UUIDS, "SELECT id, uuid FROM gpus")                                                      \
    X(TREND_GPU_KEYS, TREND("g.uuid", TREND_SRC_KEYS(KEYS_SQLITE), JOIN_GPU))                      \
    X(TREND_GPU_KEYS_PG, TREND("g.uuid", TREND_SRC_KEYS(KEYS_PG), JOIN_GPU))

enum stmt_id { STATEMENTS(STORE_AS_ENUM) ST__COUNT };
static const char *const stmt_sql[] = {STATEMENTS(STORE_AS_SQL)};

static struct db_stmt *prep(struct conn *c, enum stmt_id id) { return db_prep(c, stmt_sql[id]); }

/* ---- heatmap ---- */

static const char *const day_names[7] = {"Mon", "Tue", "Wed", "Thu", "Fri", "Sat", "Sun"};

/* One hour of the week: sums of seconds (and of util % x seconds), each
 * weighted by the GPU's fraction. */
struct cell {
    double util_sum, measured_s, allocated_s, owned_s, busy_s;
};

int store_usage_heatmap(struct store *st, const struct store_insight_filter *f, int64_t tz_s,
                        bool allocation, json_t **items)
{
    struct conn *c = db_conn_get(st);
    struct db_stmt *s = prep(c, insight_team_only(f) ? ST_HEATMAP_TEAM : ST_HEATMAP);
    struct cell cells[168] = {{0}};
    int step, rc = GI_INTERNAL;

    *items = NULL;
    if (s == NULL)
        goto cleanup;
    insight_bind_filter(s, f);
    db_bind_int(s, ":tz", tz_s);
    while ((step = db_step(c, s)) == DB_ROW) {
        int64_t how = db_col_int(s, 0);
        struct cell *e;
        if (how < 0 || how >= 168)
            continue;
        e = &cells[how];
        e->util_sum = db_col_dbl(s, 1);
        e->measured_s = db_col_dbl(s, 2);
        e->allocated_s = db_col_dbl(s, 3);
        e->owned_s = db_col_dbl(s, 4);
        e->busy_s = db_col_dbl(s, 5);
    }
    db_reset(s);
    if ((rc = db_status(step)) != GI_OK)
        goto cleanup;
    rc = GI_INTERNAL;
    if ((*items = json_array()) == NULL)
        goto cleanup;
    for (int i = 0; i < 168; i++) {
        const struct cell *e = &cells[i];
        json_t *util = e->measured_s > 0 ? insight_num(e->util_sum / e->measured_s) : json_null();
        json_t *alloc =
            e->owned_s > 0 ? insight_num(100.0 * e->allocated_s / e->owned_s) : json_null();
        json_t *o = json_pack(
            "{s:i, s:s, s:i, s:O, s:o, s:o, s:{s:o, s:o, s:o, s:o}}", "hour_of_week", i, "day",
            day_names[i / 24], "hour", i % 24, "value", allocation ? alloc : util, "util_avg", util,
            "allocated_pct", alloc, "gpu_hours", "owned", insight_num(e->owned_s / 3600),
            "measured", insight_num(e->measured_s / 3600), "allocated",
            insight_num(e->allocated_s / 3600), "busy", insight_num(e->busy_s / 3600));
        if (!insight_append(*items, o))
            goto cleanup;
    }
    rc = GI_OK;
cleanup:
    if (rc != GI_OK) {
        json_decref(*items);
        *items = NULL;
    }
    db_conn_put(st, c);
    return rc;
}

/* ---- trend ---- */

static const struct {
    const char *name;
    enum stmt_id id;
} trend_groups[] = {
    {"team", ST_TREND_TEAM},       {"env", ST_TREND_ENV},     {"pool", ST_TREND_POOL},
    {"cluster", ST_TREND_CLUSTER}, {"cloud", ST_TREND_CLOUD}, {"model", ST_TREND_MODEL},
    {"datacenter", ST_TREND_DC},   {"host", ST_TREND_HOST},   {"gpu", ST_TREND_GPU},
};

/* The trend statement of a grouping, -1 for an unknown one. */
static int trend_stmt(const char *group_by)
{
    for (size_t i = 0; i < sizeof trend_groups / sizeof trend_groups[0]; i++)
        if (group_by && strcmp(trend_groups[i].name, group_by) == 0)
            return (int)trend_groups[i].id;
    return -1;
}

bool store_insight_group_valid(const char *group_by) { return trend_stmt(group_by) >= 0; }

/* "up", "down" or "flat" from previous to current. */
static const char *direction(double cur, double prev)
{
    double d = cur - prev, scale = fabs(prev) > 1 ? fabs(prev) : 1;

    if (fabs(d) <= 1e-9 * scale)
        return "flat";
    return d > 0 ? "up" : "down";
}

/* {"current","previous","change_pct","direction"}; change_pct null when
 * the previous figure is zero or either is unknown (NAN). cur_j and
 * prev_j are the figures as shown (stolen). */
static json_t *change_json(double cur, double prev, json_t *cur_j, json_t *prev_j)
{
    json_t *pct = json_null();
    const char *dir = "flat";

    if (!isnan(cur) && !isnan(prev)) {
        dir = direction(cur, prev);
        if (prev != 0)
            pct = json_real(round((cur - prev) / fabs(prev) * 1000.0) / 10.0);
    }
    return json_pack("{s:o, s:o, s:o, s:s}", "current", cur_j, "previous", prev_j, "change_pct",
                     pct, "direction", dir);
}

/* One half of a trend row, from column i on (8 columns). */
struct half {
    double owned, busy, alloc_idle, util, cost;
    const char *cur1, *cur2;
};

/* Reads a half of a trend row from column i on (8 columns). */
static void half_read(struct db_stmt *s, int i, struct half *h)
{
    double measured = db_col_dbl(s, i + 4);

    h->owned = db_col_dbl(s, i) / 3600;
    h->busy = db_col_dbl(s, i + 1) / 3600;
    h->alloc_idle = db_col_dbl(s, i + 2) / 3600;
    h->util = measured > 0 ? db_col_dbl(s, i + 3) / measured : NAN;
    h->cost = insight_col_opt(s, i + 5);
    h->cur1 = db_col_text(s, i + 6);
    h->cur2 = db_col_text(s, i + 7);
}

/* A half's cost in micros, NAN when it cannot be compared (no rate or
 * mixed currencies). */
static double half_cost(const struct half *h)
{
    if (h->cur1 == NULL || (h->cur2 && strcmp(h->cur1, h->cur2) != 0))
        return NAN;
    return isnan(h->cost) ? 0 : h->cost;
}

/* A figure as JSON, null for NAN (unknown). */
static json_t *opt_num(double x) { return isnan(x) ? json_null() : insight_num(x); }

/* The currency of a half: NULL when no hour had a rate, "mixed" when
 * rates differ in currency. */
static const char *half_currency(const struct half *h)
{
    if (h->cur1 == NULL)
        return NULL;
    return h->cur2 && strcmp(h->cur1, h->cur2) != 0 ? "mixed" : h->cur1;
}

/* One group of a trend (group: stolen, NULL when out of memory): each
 * figure of the current half beside the previous one. */
static json_t *trend_json(json_t *group, const struct half *cur_h, const struct half *prev_h)
{
    struct half cur = *cur_h, prev = *prev_h;
    const char *currency;
    json_t *cost;

    if (group == NULL)
        return NULL;
    currency = half_currency(&cur) ? half_currency(&cur) : half_currency(&prev);
    cost = change_json(half_cost(&cur), half_cost(&prev), insight_money_json(half_cost(&cur)),
                       insight_money_json(half_cost(&prev)));
    if (cost == NULL) {
        json_decref(group);
        return NULL;
    }
    json_object_set_new(cost, "currency", currency ? json_string(currency) : json_null());
    json_object_set_new(cost, "method", json_string("catalog"));
    return json_pack(
        "{s:o, s:o, s:o, s:o, s:o, s:o}", "group", group, "owned",
        change_json(cur.owned, prev.owned, insight_num(cur.owned), insight_num(prev.owned)), "busy",
        change_json(cur.busy, prev.busy, insight_num(cur.busy), insight_num(prev.busy)),
        "allocated_idle",
        change_json(cur.alloc_idle, prev.alloc_idle, insight_num(cur.alloc_idle),
                    insight_num(prev.alloc_idle)),
        "util_avg", change_json(cur.util, prev.util, opt_num(cur.util), opt_num(prev.util)), "cost",
        cost);
}

/* One row of a TREND statement as a trend item. */
static json_t *trend_row(struct db_stmt *s)
{
    struct half cur, prev;

    half_read(s, 1, &cur);
    half_read(s, 9, &prev);
    return trend_json(insight_col_text_json(s, 0), &cur, &prev);
}

/* ---- SQLite: a trend by host with no filter folded here ---- */

/* One host's sums ([0] the previous half, [1] the current one) as
 * TREND_HALF sums them: o, b, a, us, ms; the owned cost (NAN until a
 * priced row) and the least and greatest currency (NULL until one). */
struct host_fold {
    char *host; /* NULL: the GPUs with no host */
    double v[2][5], oc[2];
    char *cmin[2], *cmax[2];
};

/* The hosts folded so far, with an open-addressing index of a[] by host
 * (slot: index + 1, 0 empty; cap a power of two, at least twice n). */
struct host_folds {
    struct host_fold *a;
    size_t n, cap;
    uint32_t *slot;
};

/* Hosts a trend folds at most (a row each in a few kB). */
#define MAX_HOSTS 1000000

static void host_folds_free(struct host_folds *t)
{
    for (size_t i = 0; i < t->n; i++) {
        free(t->a[i].host);
        for (int k = 0; k < 2; k++) {
            free(t->a[i].cmin[k]);
            free(t->a[i].cmax[k]);
        }
    }
    free(t->a);
    free(t->slot);
}

/* FNV-1a of a host name, NULL a value of its own. */
static uint32_t host_hash(const char *h)
{
    uint32_t x = 2166136261u;

    if (!h)
        return 1;
    for (; *h; h++)
        x = (x ^ (unsigned char)*h) * 16777619u;
    return x;
}

static bool host_eq(const char *a, const char *b)
{
    return a == NULL || b == NULL ? a == b : strcmp(a, b) == 0;
}

/* Doubles the index (and the rows' room). */
static int host_folds_grow(struct host_folds *t)
{
    size_t cap = t->cap ? t->cap * 2 : 1024;
    struct host_fold *a = realloc(t->a, cap / 2 * sizeof *a);
    uint32_t *slot = calloc(cap, sizeof *slot);

    if (a)
        t->a = a;
    if (!a || !slot) {
        free(slot);
        return GI_INTERNAL;
    }
    for (size_t i = 0; i < t->n; i++) {
        size_t j = host_hash(t->a[i].host) & (cap - 1);
        while (slot[j])
            j = (j + 1) & (cap - 1);
        slot[j] = (uint32_t)i + 1;
    }
    free(t->slot);
    t->slot = slot;
    t->cap = cap;
    return GI_OK;
}

/* The fold of host (borrowed), added when new; NULL when out of memory
 * or past MAX_HOSTS (*rc says which). */
static struct host_fold *host_get(struct host_folds *t, const char *host, int *rc)
{
    size_t j;
    struct host_fold *f;

    if (t->n * 2 >= t->cap && (*rc = host_folds_grow(t)) != GI_OK)
        return NULL;
    for (j = host_hash(host) & (t->cap - 1); t->slot[j]; j = (j + 1) & (t->cap - 1))
        if (host_eq(t->a[t->slot[j] - 1].host, host))
            return &t->a[t->slot[j] - 1];
    if (t->n >= MAX_HOSTS) {
        *rc = GI_TOO_LARGE;
        return NULL;
    }
    f = &t->a[t->n];
    memset(f, 0, sizeof *f);
    f->oc[0] = f->oc[1] = NAN;
    if (host && !(f->host = strdup(host))) {
        *rc = GI_INTERNAL;
        return NULL;
    }
    t->slot[j] = (uint32_t)++t->n;
    return f;
}

/* Keeps a copy of cur (borrowed, not NULL) in *keep (owned) when *keep
 * is NULL or cur sorts before it (less) or after it (!less), as MIN and
 * MAX of a text column; false when out of memory. */
static bool keep_text(char **keep, const char *cur, bool less)
{
    char *dup;

    if (*keep && (less ? strcmp(cur, *keep) >= 0 : strcmp(cur, *keep) <= 0))
        return true;
    if (!(dup = strdup(cur)))
        return false;
    free(*keep);
    *keep = dup;
    return true;
}

/* Adds a row of TREND_HOST_DAY_ROWS or TREND_HOST_HOUR_ROWS (host, t, o,
 * b, a, us, ms, fraction, then the cost or the rate, currency): the hours'
 * seconds times the fraction and their cost times the rate, as
 * TREND_SRC_HOST_DAYS computes them, the days' sums as they are. */
static int host_fold_row(struct host_folds *t, struct db_stmt *s, int64_t mid, bool hourly)
{
    int rc = GI_OK;
    struct host_fold *f = host_get(t, db_col_text(s, 0), &rc);
    int k = db_col_int(s, 1) >= mid;
    double fr = hourly ? db_col_dbl(s, 7) : 1;
    const char *cur = db_col_text(s, 9);

    if (!f)
        return rc;
    for (int i = 0; i < 5; i++)
        f->v[k][i] += hourly ? db_col_dbl(s, 2 + i) * fr : db_col_dbl(s, 2 + i);
    if (!db_col_is_null(s, 8)) {
        double oc = hourly ? db_col_dbl(s, 2) * fr * db_col_dbl(s, 8) : db_col_dbl(s, 8);
        f->oc[k] = (isnan(f->oc[k]) ? 0 : f->oc[k]) + oc;
    }
    if (cur && (!keep_text(&f->cmin[k], cur, true) || !keep_text(&f->cmax[k], cur, false)))
        return GI_INTERNAL;
    return GI_OK;
}

/* Folds every row of s (bound, borrowed, reset afterwards) into t. */
static int host_fold_rows(struct conn *c, struct db_stmt *s, struct host_folds *t, int64_t mid,
                          bool hourly)
{
    int step = DB_DONE, rc = GI_OK;

    while (rc == GI_OK && (step = db_step(c, s)) == DB_ROW)
        rc = host_fold_row(t, s, mid, hourly);
    db_reset(s);
    return rc == GI_OK ? db_status(step) : rc;
}

/* TREND's order: the current half's owned seconds, most first, then the
 * host (BINARY, no host first, as SQLite orders NULL). */
static int host_fold_cmp(const void *pa, const void *pb)
{
    const struct host_fold *a = pa, *b = pb;

    if (a->v[1][0] != b->v[1][0])
        return a->v[1][0] > b->v[1][0] ? -1 : 1;
    if (!a->host || !b->host)
        return a->host ? 1 : b->host ? -1 : 0;
    return strcmp(a->host, b->host);
}

/* A half of a fold as half_read() reads it from a TREND row. */
static void host_half(const struct host_fold *f, int k, struct half *h)
{
    h->owned = f->v[k][0] / 3600;
    h->busy = f->v[k][1] / 3600;
    h->alloc_idle = f->v[k][2] / 3600;
    h->util = f->v[k][4] > 0 ? f->v[k][3] / f->v[k][4] : NAN;
    h->cost = f->oc[k] / 3600;
    h->cur1 = f->cmin[k];
    h->cur2 = f->cmax[k];
}

/* SQLite: the trend by host with no filter (TREND_HOST_DAYS's answer)
 * folded here from its rows unsummed, each part of the range read by a
 * statement of its own: the sorter of SQLite's GROUP BY over the hourly
 * rows of the partial days was most of its cost, and the UNION ALL's
 * co-routine and products much of the rest. */
static int trend_host_fold(struct conn *c, const struct store_insight_filter *f, int64_t mid,
                           json_t *items)
{
    struct db_stmt *s = prep(c, ST_TREND_HOST_DAY_ROWS);
    struct host_folds t = {0};
    int64_t limit = f->limit > 0 ? f->limit : 100;
    /* the split insight_bind_days() binds: whole days [d1, d2) but the
     * day [x1, x2), the hours [from, d1), [d2, to) and [x1, x2) */
    struct insight_days d = insight_days_split(f, mid);
    int rc;

    if (!s)
        return GI_INTERNAL;
    insight_bind_days(s, f, mid);
    rc = host_fold_rows(c, s, &t, mid, false);
    {
        const int64_t edges[3][2] = {{f->from, d.d1}, {d.d2, f->to}, {d.x1, d.x2}};
        for (int e = 0; rc == GI_OK && e < 3; e++) {
            if (edges[e][0] >= edges[e][1])
                continue;
            if (!(s = prep(c, ST_TREND_HOST_HOUR_ROWS))) {
                rc = GI_INTERNAL;
                break;
            }
            db_bind_int(s, ":p", edges[e][0]);
            db_bind_int(s, ":q", edges[e][1]);
            rc = host_fold_rows(c, s, &t, mid, true);
        }
    }
    if (rc == GI_OK && t.n)
        qsort(t.a, t.n, sizeof *t.a, host_fold_cmp);
    for (size_t i = 0; rc == GI_OK && i < t.n && (int64_t)i < limit; i++) {
        struct half cur, prev;
        host_half(&t.a[i], 1, &cur);
        host_half(&t.a[i], 0, &prev);
        if (!insight_append(items, trend_json(t.a[i].host ? json_string(t.a[i].host) : json_null(),
                                              &cur, &prev)))
            rc = GI_INTERNAL;
    }
    host_folds_free(&t);
    return rc;
}

/* Whether a trend by host or GPU may read the tables kept for the
 * reports with no filter (usage_host_days, usage_gpu_blocks): f filters
 * by nothing, and its range holds no day retention may be pruning. */
static bool trend_plain(const struct store_insight_filter *f)
{
    return (!f->team || !*f->team) && insight_team_only(f) &&
           usage_host_days_cover(f->from, (int64_t)time(NULL));
}

/* Binds the parts of a trend's current half [mid, f->to) that
 * TREND_RANK_GPU reads, split as insight_bind_days() splits the range:
 * the whole days [lo, hi) the trend reads from usage_daily, of them the
 * whole blocks [a, b) (a = b = hi: none), and the hours around them
 * (lo = hi = to: every hour of the half). */
static void bind_rank(struct db_stmt *s, const struct store_insight_filter *f, int64_t mid)
{
    const int64_t day = 86400;
    int64_t d1 = f->from % day ? f->from - f->from % day + day : f->from;
    int64_t lo = mid % day ? mid - mid % day + day : mid, hi = f->to - f->to % day, a, b;

    if (lo < d1)
        lo = d1;
    if (d1 >= hi || lo >= hi)
        lo = hi = f->to;
    a = lo + (USAGE_BLOCK_S - lo % USAGE_BLOCK_S) % USAGE_BLOCK_S;
    b = hi - hi % USAGE_BLOCK_S;
    if (a >= b)
        a = b = hi;
    db_bind_int(s, ":lo", lo);
    db_bind_int(s, ":hi", hi);
    db_bind_int(s, ":a", a);
    db_bind_int(s, ":b", b);
    db_bind_int(s, ":mid", mid);
}

/* The first f->limit GPUs of TREND_RANK_GPU as JSON ids appended to keys,
 * *last the owned seconds of the last of them. */
static int trend_rank_sql(struct conn *c, const struct store_insight_filter *f, int64_t mid,
                          json_t *keys, double *last)
{
    struct db_stmt *s = prep(c, ST_TREND_RANK_GPU);
    int step = DB_DONE;

    if (!s)
        return GI_INTERNAL;
    insight_bind_filter(s, f);
    bind_rank(s, f, mid);
    while ((step = db_step(c, s)) == DB_ROW) {
        *last = db_col_dbl(s, 1);
        if (json_array_append_new(keys, json_integer(db_col_int(s, 0))) != 0)
            break;
    }
    db_reset(s);
    return step == DB_ROW ? GI_INTERNAL : db_status(step);
}

/* A GPU of a folded ranking: its owned seconds and UUID (owned). */
struct ranked {
    double owned;
    int64_t id;
    char *uuid;
};

/* TREND's order: most owned first, then the UUID (BINARY). */
static int ranked_cmp(const void *pa, const void *pb)
{
    const struct ranked *a = pa, *b = pb;

    if (a->owned != b->owned)
        return a->owned > b->owned ? -1 : 1;
    return strcmp(a->uuid, b->uuid);
}

/* GPU ids a folded ranking indexes directly (8 bytes and 1 each). */
#define MAX_FOLD_ID 10000000

/* SQLite: TREND_RANK_GPU's answer from its rows unsummed
 * (TREND_RANK_ROWS), summed here in an array indexed by GPU id and
 * ordered with the GPUs' UUIDs: SQLite's GROUP BY sorter and ORDER BY
 * over every GPU were most of the ranking's cost. GI_UNAVAILABLE when the
 * ids are too sparse for the array (then TREND_RANK_GPU answers). */
static int trend_rank_fold(struct conn *c, const struct store_insight_filter *f, int64_t mid,
                           int64_t limit, json_t *keys, double *last)
{
    struct db_stmt *s = prep(c, ST_GPU_MAX_ID);
    double *sum = NULL;
    unsigned char *seen = NULL;
    struct ranked *v = NULL;
    size_t n = 0, cap = 0;
    int64_t max = -1;
    int step = DB_DONE, rc = GI_INTERNAL;

    if (!s)
        return GI_INTERNAL;
    if ((step = db_step(c, s)) == DB_ROW && !db_col_is_null(s, 0))
        max = db_col_int(s, 0);
    db_reset(s);
    if ((rc = db_status(step)) != GI_OK)
        return rc;
    if (max < 0)
        return GI_OK; /* no GPU: an empty ranking */
    if (max > MAX_FOLD_ID)
        return GI_UNAVAILABLE;
    rc = GI_INTERNAL;
    if (!(sum = calloc((size_t)max + 1, sizeof *sum)) || !(seen = calloc((size_t)max + 1, 1)) ||
        !(s = prep(c, ST_TREND_RANK_ROWS)))
        goto cleanup;
    insight_bind_filter(s, f);
    bind_rank(s, f, mid);
    while ((step = db_step(c, s)) == DB_ROW) {
        int64_t id = db_col_int(s, 0);
        if (id < 0 || id > max)
            continue; /* no such GPU: the join drops it */
        sum[id] += db_col_dbl(s, 1);
        seen[id] = 1;
    }
    db_reset(s);
    if ((rc = db_status(step)) != GI_OK)
        goto cleanup;
    rc = GI_INTERNAL;
    if (!(s = prep(c, ST_GPU_UUIDS)))
        goto cleanup;
    while ((step = db_step(c, s)) == DB_ROW) {
        int64_t id = db_col_int(s, 0);
        const char *uuid = db_col_text(s, 1);
        if (id < 0 || id > max || !seen[id] || !uuid)
            continue;
        if (n == cap) {
            struct ranked *w = realloc(v, (cap = cap ? cap * 2 : 1024) * sizeof *v);
            if (!w)
                break;
            v = w;
        }
        if (!(v[n].uuid = strdup(uuid)))
            break;
        v[n].owned = sum[id];
        v[n++].id = id;
    }
    db_reset(s);
    if (step == DB_ROW || (rc = db_status(step)) != GI_OK)
        goto cleanup;
    if (n)
        qsort(v, n, sizeof *v, ranked_cmp);
    for (size_t i = 0; i < n && (int64_t)i < limit; i++) {
        if (json_array_append_new(keys, json_integer(v[i].id)) != 0) {
            rc = GI_INTERNAL;
            break;
        }
        *last = v[i].owned;
    }
cleanup:
    for (size_t i = 0; i < n; i++)
        free(v[i].uuid);
    free(v);
    free(seen);
    free(sum);
    return rc;
}

/* A trend by GPU with no filter: ranks the GPUs by the current half alone
 * (TREND_RANK_GPU), then sums both halves of the first f->limit of them
 * only (TREND_GPU_KEYS), appending their rows to items. *done false, and
 * nothing appended, when fewer GPUs than the limit own anything in the
 * current half: the page then holds GPUs that only the sums over every
 * row of both halves find. c and f are borrowed. */
static int trend_gpu_plain(struct conn *c, const struct store_insight_filter *f, int64_t mid,
                           json_t *items, bool *done)
{
    int64_t limit = f->limit > 0 ? f->limit : 100;
    struct db_stmt *s = NULL;
    json_t *keys = json_array();
    char *text = NULL;
    double last = 0;
    int rc = GI_INTERNAL;

    *done = false;
    if (!keys)
        goto cleanup;
    rc = db_dialect(c) == DB_PG ? GI_UNAVAILABLE : trend_rank_fold(c, f, mid, limit, keys, &last);
    if (rc == GI_UNAVAILABLE)
        rc = trend_rank_sql(c, f, mid, keys, &last);
    if (rc != GI_OK)
        goto cleanup;
    if ((int64_t)json_array_size(keys) < limit || !(last > 0))
        goto cleanup;
    rc = GI_INTERNAL;
    if (!(text = json_dumps(keys, JSON_COMPACT)) ||
        !(s = prep(c, db_dialect(c) == DB_PG ? ST_TREND_GPU_KEYS_PG : ST_TREND_GPU_KEYS)))
        goto cleanup;
    insight_bind_days(s, f, mid);
    db_bind_int(s, ":mid", mid);
    db_bind_text(s, ":keys", text);
    rc = insight_collect_rows(c, s, trend_row, items);
    *done = true;
cleanup:
    free(text);
    json_decref(keys);
    return rc;
}

int store_usage_trend(struct store *st, const struct store_insight_filter *f, const char *group_by,
                      int64_t cur_from, json_t **items)
{
    int id = trend_stmt(group_by);
    bool plain, done = false;
    struct conn *c;
    struct db_stmt *s;
    int rc = GI_INTERNAL;

    *items = NULL;
    if (id < 0)
        return GI_INVALID;
    plain = (id == ST_TREND_HOST || id == ST_TREND_GPU) && trend_plain(f);
    c = db_conn_get(st);
    if ((*items = json_array()) == NULL)
        goto cleanup;
    if (plain && id == ST_TREND_GPU) {
        /* the ranking and the page's sums in one snapshot */
        db_read_begin(c);
        rc = trend_gpu_plain(c, f, cur_from, *items, &done);
        db_read_end(c);
        if (rc != GI_OK || done)
            goto cleanup;
        rc = GI_INTERNAL;
    }
    if (plain && id == ST_TREND_HOST && db_dialect(c) != DB_PG) {
        rc = trend_host_fold(c, f, cur_from, *items);
        goto cleanup;
    }
    if ((s = prep(c, plain && id == ST_TREND_HOST ? ST_TREND_HOST_DAYS : (enum stmt_id)id)) == NULL)
        goto cleanup;
    /* The day the two halves meet in is read by the hour. */
    insight_bind_days(s, f, cur_from);
    db_bind_int(s, ":mid", cur_from);
    rc = insight_collect_rows(c, s, trend_row, *items);
cleanup:
    if (rc != GI_OK) {
        json_decref(*items);
        *items = NULL;
    }
    db_conn_put(st, c);
    return rc;
}
