/* The idle list: GPUs that nobody holds and that have sat idle, hour
 * after hour, up to the end of the range. See store.h; figures and money
 * are those of insights.c.
 *
 * A GPU is a candidate when its newest owned hour in the range's last two
 * hours (insight_recent_hour) is idle (allocated_s = 0 AND idle_s > 0).
 * Its run is the chain of consecutive hours ending at that hour, each with
 * a row that is idle and passes the filters, and none before the range's
 * start: a missing hour or one that is not idle, or not of the filter,
 * ends it. Each run is walked back from its newest hour, a day at a time:
 * the hours of one day, newest first, from usage_hourly (IDLE_HOURS);
 * when they reach the day's first hour, the days before it from
 * usage_idle_days (IDLE_DAYS, see below), each taken whole while it can
 * be; the day where that stops is walked by the hour again, and so on.
 * On SQLite, where a statement costs no round trip, that is the whole
 * answer: three statements per GPU that stop where the run breaks cost
 * less than the sorts a statement over all the runs needs (2,000 GPUs:
 * about 60 ms against 400 ms). On PostgreSQL, where each statement is a
 * round trip, one statement (IDLE_RUNS) takes every candidate's run as
 * far as three steps over sets of rows find it:
 * 1. the hours of the newest hour's day, from usage_hourly;
 * 2. when those reach the day's first hour, the days before it from
 *    usage_idle_days (migration 043), each taken whole while it has a row
 *    there (its 24 hours idle in one combination of the filter
 *    dimensions), that row passes the filters and the day's first hourly
 *    row still exists: retention prunes the hourly rows oldest first, so
 *    a day whose first hour is kept has all of them;
 * 3. the hours of the day below the last one taken whole;
 * and a run that fills that third day whole (its hours idle in more than
 * one combination, or a day the job has not summed) goes on by the walk.
 * A day without a row in usage_idle_days costs only speed. The answer is
 * the one the hourly rows give, in about 50 rows per GPU instead of one
 * per hour of its run. */
#include "store/insights_int.h"
#include "core/status.h"
#include "core/util.h"

#include <math.h>
#include <stdlib.h>
#include <string.h>

#define DAY 86400
#define HOUR 3600

/* The filters of FILTERS on an hour row of alias b (its range aside). */
#define IDLE_MATCH_B                                                                               \
    "(:team IS NULL OR b.team = :team) AND (:env IS NULL OR b.env = :env) AND (:pool IS NULL OR "  \
    "b.pool = :pool) AND (:cluster IS NULL OR b.cluster = :cluster) AND (:cloud IS NULL OR "       \
    "b.cloud = :cloud) AND (:model IS NULL OR b.model = :model) AND " DC_FILTERS("b")

/* The part of a run that walks w (gpu_id, hi, lo) find among the hours
 * from lo to hi: the idle hours that pass the filters there, numbered
 * newest first, the n-th in the run while it is n - 1 hours below hi (a
 * missing hour or one that is not idle or not of the filter ends it). */
#define HOUR_RUN(w)                                                                                \
    "SELECT gpu_id, MIN(hour) AS since, COUNT(*) AS hours, SUM(fs) AS fs, SUM(cost) AS cost, "     \
    "MIN(currency) AS cur1, MAX(currency) AS cur2 FROM (SELECT w.gpu_id, w.hi, h.hour, h.idle_s "  \
    "* h.fraction AS fs, h.idle_s * h.fraction * h.rate_micros AS cost, h.currency, ROW_NUMBER() " \
    "OVER (PARTITION BY w.gpu_id ORDER BY h.hour DESC) AS rn FROM " w " w JOIN usage_hourly h ON " \
    "h.gpu_id = w.gpu_id AND h.hour >= w.lo AND h.hour <= w.hi WHERE h.allocated_s = 0 AND "       \
    "h.idle_s > 0 AND" DIM_FILTERS ") t WHERE (t.hi - t.hour) / 3600 + 1 = t.rn GROUP BY gpu_id"

/* The newest owned hour of each GPU from :lo to :to that passes the
 * filters, with idx naming the index that serves it: on SQLite the one by
 * hour, which reads those few hours only, where its planner, which does
 * not know how few they are, would skip through every GPU's hours. */
#define IDLE_NEWEST(idx)                                                                           \
    "SELECT h.gpu_id, MAX(h.hour) AS hour FROM usage_hourly h" idx " WHERE h.hour >= :lo AND "     \
    "h.hour < :to AND" DIM_FILTERS "AND h.owned_s > 0 GROUP BY h.gpu_id"

/* The candidates: each GPU whose newest hour is idle, with that hour's row. */
#define IDLE_CAND(idx)                                                                             \
    "SELECT n.gpu_id, n.hour, g.uuid, x.host, x.team, x.model, x.rate_micros * x.fraction, "       \
    "x.currency FROM (" IDLE_NEWEST(idx) ") n JOIN usage_hourly x ON x.gpu_id = n.gpu_id AND "     \
                                         "x.hour = n.hour JOIN gpus g ON g.id = n.gpu_id WHERE "   \
                                         "x.allocated_s = 0 AND x.idle_s > 0"

/* Every candidate's run as far as three steps find it (see the top), one
 * row per step that found hours: (gpu, step, since, hours, idle
 * seconds, cost, currencies). Step 1, the hours of the newest hour's day;
 * 2, when those reach the day's first hour, the whole idle days before it
 * (numbered newest first as the hours are); 3, the hours of the day below
 * those. */
#define STATEMENTS(X)                                                                              \
    X(IDLE_RUNS,                                                                                   \
      "WITH cand AS (SELECT n.gpu_id, n.hour AS last, n.hour - n.hour % 86400 AS day FROM "        \
      "(" IDLE_NEWEST(                                                                             \
          "") ") n JOIN usage_hourly x ON x.gpu_id = n.gpu_id AND x.hour = n.hour WHERE "          \
              "x.allocated_s = 0 AND x.idle_s > 0), "                                              \
              "topw AS (SELECT gpu_id, last AS hi, CASE WHEN day > CAST(:from AS BIGINT) THEN "    \
              "day ELSE "                                                                          \
              "CAST(:from AS BIGINT) END AS lo FROM cand), "                                       \
              "topr AS (" HOUR_RUN(                                                                \
                  "topw") "), "                                                                    \
                          "dayw AS (SELECT c.gpu_id, c.day FROM cand c JOIN topr t ON t.gpu_id = " \
                          "c.gpu_id WHERE "                                                        \
                          "t.since = c.day AND c.day > CAST(:from AS BIGINT)), "                   \
                          "dayr AS (SELECT gpu_id, MIN(day) AS since, 24 * COUNT(*) AS hours, "    \
                          "SUM(idle_fs) AS fs, "                                                   \
                          "SUM(idle_cost) AS cost, MIN(currency) AS cur1, MAX(currency) AS cur2 "  \
                          "FROM (SELECT "                                                          \
                          "w.gpu_id, w.day AS top, h.day, h.idle_fs, h.idle_cost, h.currency, "    \
                          "ROW_NUMBER() OVER "                                                     \
                          "(PARTITION BY w.gpu_id ORDER BY h.day DESC) AS rn FROM dayw w JOIN "    \
                          "usage_idle_days h ON "                                                  \
                          "h.gpu_id = w.gpu_id AND h.day < w.day AND h.day >= :from_day JOIN "     \
                          "usage_hourly f ON "                                                     \
                          "f.gpu_id = h.gpu_id AND f.hour = h.day WHERE" DIM_FILTERS               \
                          ") d WHERE (d.top - d.day) / "                                           \
                          "86400 = d.rn GROUP BY gpu_id), "                                        \
                          "botw AS (SELECT b.gpu_id, b.day + 82800 AS hi, CASE WHEN b.day > "      \
                          "CAST(:from AS BIGINT) "                                                 \
                          "THEN b.day ELSE CAST(:from AS BIGINT) END AS lo FROM (SELECT gpu_id, "  \
                          "since - 86400 AS day "                                                  \
                          "FROM dayr UNION ALL SELECT gpu_id, day - 86400 FROM dayw WHERE gpu_id " \
                          "NOT IN (SELECT "                                                        \
                          "gpu_id FROM dayr)) b), "                                                \
                          "botr AS (" HOUR_RUN(                                                    \
                              "botw") ") "                                                         \
                                      "SELECT gpu_id, 1, since, hours, fs, cost, cur1, cur2 FROM " \
                                      "topr UNION ALL SELECT gpu_id, 2, "                          \
                                      "since, hours, fs, cost, cur1, cur2 FROM dayr UNION ALL "    \
                                      "SELECT gpu_id, 3, since, hours, fs, "                       \
                                      "cost, cur1, cur2 FROM botr ORDER BY 1, 2")                  \
    X(IDLE_CAND_SQLITE, IDLE_CAND(" INDEXED BY usage_hourly_hour"))                                \
    X(IDLE_CAND_PG, IDLE_CAND(""))                                                                 \
    X(IDLE_HOURS,                                                                                  \
      "SELECT h.hour, CASE WHEN h.allocated_s = 0 AND h.idle_s > 0 AND " DIM_FILTERS               \
      "THEN 1 ELSE 0 END, h.idle_s * h.fraction, h.idle_s * h.fraction * h.rate_micros, "          \
      "h.currency FROM usage_hourly h WHERE h.gpu_id = :gid AND h.hour >= :lo AND h.hour <= :hi "  \
      "ORDER BY h.hour DESC")                                                                      \
    X(IDLE_DAYS,                                                                                   \
      "SELECT h.day, CASE WHEN f.gpu_id IS NOT NULL AND " DIM_FILTERS "THEN 1 ELSE 0 END, "        \
      "h.idle_fs, h.idle_cost, h.currency FROM usage_idle_days h LEFT JOIN usage_hourly f ON "     \
      "f.gpu_id = h.gpu_id AND f.hour = h.day WHERE h.gpu_id = :gid AND h.day >= :lo AND h.day < " \
      ":before ORDER BY h.day DESC")

enum stmt_id { STATEMENTS(STORE_AS_ENUM) ST__COUNT };
static const char *const stmt_sql[] = {STATEMENTS(STORE_AS_SQL)};

static struct db_stmt *prep(struct conn *c, enum stmt_id id) { return db_prep(c, stmt_sql[id]); }

/* A candidate: a GPU idle in its newest hour, with that hour's row. */
struct cand {
    int64_t gid, last;
    json_t *o; /* the item, its run's figures set by idle_walk() */
};

/* The run being walked back: since its first hour; the sums over it. */
struct run {
    int64_t since, hours;
    double idle_fs, cost; /* cost NAN while no hour is priced */
    char cur1[16], cur2[16];
};

/* Counts currency cur (NULL: none) among r's. */
static void run_cur(struct run *r, const char *cur)
{
    if (cur && (r->cur1[0] == '\0' || strcmp(cur, r->cur1) < 0))
        gi_strlcpy(r->cur1, cur, sizeof r->cur1);
    if (cur && (r->cur2[0] == '\0' || strcmp(cur, r->cur2) > 0))
        gi_strlcpy(r->cur2, cur, sizeof r->cur2);
}

/* Adds the figures of an hour, a whole day or a step of IDLE_RUNS to r:
 * the cost in column cost_col of s, its currencies in cur_col (and
 * cur2_col, -1 for none). */
static void run_add(struct run *r, int64_t since, int64_t hours, double idle_fs, struct db_stmt *s,
                    int cost_col, int cur_col, int cur2_col)
{
    r->since = since;
    r->hours += hours;
    r->idle_fs += idle_fs;
    if (!db_col_is_null(s, cost_col))
        r->cost = (isnan(r->cost) ? 0 : r->cost) + db_col_dbl(s, cost_col);
    run_cur(r, db_col_text(s, cur_col));
    if (cur2_col >= 0)
        run_cur(r, db_col_text(s, cur2_col));
}

/* Walks back over the rows of statement id for GPU gid, newest first,
 * from `expect` on in steps of step_s seconds (each row `hours` GPU-hours),
 * bound by :lo and the upper bound bound_name = hi; a gap or a row that is
 * not idle ends the walk. *next becomes the first step not taken. */
static int walk(struct conn *c, enum stmt_id id, const char *bound_name,
                const struct store_insight_filter *f, int64_t gid, int64_t hi, int64_t lo,
                int64_t expect, int64_t step_s, int hours, struct run *r, int64_t *next)
{
    struct db_stmt *s = prep(c, id);
    int step;

    if (s == NULL)
        return GI_INTERNAL;
    insight_bind_filter(s, f);
    db_bind_int(s, ":gid", gid);
    db_bind_int(s, ":lo", lo);
    db_bind_int(s, bound_name, hi);
    while ((step = db_step(c, s)) == DB_ROW) {
        if (db_col_int(s, 0) != expect || db_col_int(s, 1) == 0)
            break;
        run_add(r, expect, hours, db_col_dbl(s, 2), s, 3, 4, -1);
        expect -= step_s;
    }
    db_reset(s);
    if (step != DB_ROW && step != DB_DONE)
        return db_status(step);
    *next = expect;
    return GI_OK;
}

/* Walks gid's hours from `top` down to `lo`: *next becomes the hour below
 * the run's part found there (top when top itself breaks it); *whole
 * whether it reaches lo unbroken. */
static int walk_hours(struct conn *c, const struct store_insight_filter *f, int64_t gid,
                      int64_t top, int64_t lo, struct run *r, int64_t *next, bool *whole)
{
    int rc = walk(c, ST_IDLE_HOURS, ":hi", f, gid, top, lo, top, HOUR, 1, r, next);

    *whole = rc == GI_OK && *next < lo;
    return rc;
}

/* Takes the whole idle days before the day `day` (a day start) that
 * start at lo or later: *next becomes the first of them not taken. */
static int walk_days(struct conn *c, const struct store_insight_filter *f, int64_t gid, int64_t day,
                     int64_t lo, struct run *r, int64_t *next)
{
    return walk(c, ST_IDLE_DAYS, ":before", f, gid, day, lo, day - DAY, DAY, 24, r, next);
}

/* The first day start at or after t. */
static int64_t day_ceil(int64_t t) { return t % DAY ? t - t % DAY + DAY : t; }

/* Walks gid's run on from the hour top (the hour below the part r holds)
 * into r, a day at a time (see the top). */
static int idle_walk(struct conn *c, const struct store_insight_filter *f, int64_t gid, int64_t top,
                     struct run *r)
{
    int64_t from = f->from;
    int rc = GI_OK;

    while (rc == GI_OK && top >= from) {
        int64_t day = top - top % DAY, next = 0;
        bool whole = false;

        rc = walk_hours(c, f, gid, top, day > from ? day : from, r, &next, &whole);
        if (rc != GI_OK || !whole || day <= from)
            break;
        if ((rc = walk_days(c, f, gid, day, day_ceil(from), r, &next)) != GI_OK)
            break;
        top = next + DAY - HOUR; /* the last hour of the day not taken whole */
    }
    return rc;
}

/* Most hours first, then by GPU UUID. */
static int idle_cmp(const void *a, const void *b)
{
    const json_t *x = *(json_t *const *)a, *y = *(json_t *const *)b;
    json_int_t hx = json_integer_value(json_object_get(x, "hours"));
    json_int_t hy = json_integer_value(json_object_get(y, "hours"));
    const char *ux = json_string_value(json_object_get(x, "gpu"));
    const char *uy = json_string_value(json_object_get(y, "gpu"));

    if (hx != hy)
        return hx < hy ? 1 : -1;
    return strcmp(ux ? ux : "", uy ? uy : "");
}

/* The candidates of f (IDLE_CAND_*), each with its item started: *v (owned
 * by the caller, items included) and *n. */
static int idle_cands(struct conn *c, const struct store_insight_filter *f, struct cand **v,
                      size_t *n)
{
    struct db_stmt *s = prep(c, db_dialect(c) == DB_PG ? ST_IDLE_CAND_PG : ST_IDLE_CAND_SQLITE);
    size_t cap = 0;
    int step, rc = GI_OK;

    *v = NULL;
    *n = 0;
    if (s == NULL)
        return GI_INTERNAL;
    /* One lower bound, the later of the two, so that the index serves the
     * range's newest hours only. */
    insight_bind_filter(s, f);
    db_bind_int(s, ":lo",
                insight_recent_hour(f->to) > f->from ? insight_recent_hour(f->to) : f->from);
    while ((step = db_step(c, s)) == DB_ROW) {
        json_t *o;
        if (*n == cap) {
            size_t ncap = cap ? cap * 2 : 64;
            struct cand *nv = realloc(*v, ncap * sizeof *nv);
            if (nv == NULL) {
                rc = GI_INTERNAL;
                break;
            }
            *v = nv;
            cap = ncap;
        }
        o = json_pack("{s:o, s:o, s:o, s:o}", "gpu", insight_col_text_json(s, 2), "host",
                      insight_col_text_json(s, 3), "team", insight_col_text_json(s, 4), "model",
                      insight_col_text_json(s, 5));
        if (o == NULL) {
            rc = GI_INTERNAL;
            break;
        }
        insight_set_hourly(o, insight_col_opt(s, 6), db_col_text(s, 7));
        (*v)[(*n)++] = (struct cand){db_col_int(s, 0), db_col_int(s, 1), o};
    }
    db_reset(s);
    return rc != GI_OK ? rc : db_status(step);
}

/* Finishes x's item from its run; false when out of memory. */
static bool idle_item(struct cand *x, const struct run *r)
{
    json_t *o = x->o, *hourly = json_incref(json_object_get(o, "hourly"));
    json_t *hidden = json_incref(json_object_get(o, HOURLY));
    bool ok;

    /* The members in the order the list has always shown them. */
    json_object_del(o, "hourly");
    json_object_del(o, HOURLY);
    ok = json_object_set_new(o, "since", insight_time_json(r->since)) == 0 &&
         json_object_set_new(o, "until", insight_time_json(x->last + HOUR)) == 0 &&
         json_object_set_new(o, "hours", json_integer((json_int_t)r->hours)) == 0 &&
         json_object_set_new(o, "idle_gpu_hours", insight_num(r->idle_fs / 3600)) == 0 &&
         json_object_set_new(o, "cost",
                             insight_cost_json(r->cost / 3600, r->cur1[0] ? r->cur1 : NULL,
                                               r->cur2[0] ? r->cur2 : NULL)) == 0 &&
         json_object_set(o, "hourly", hourly) == 0 &&
         (hidden == NULL || json_object_set(o, HOURLY, hidden) == 0);
    json_decref(hourly);
    json_decref(hidden);
    return ok;
}

/* By GPU id. */
static int cand_cmp(const void *a, const void *b)
{
    const struct cand *x = a, *y = b;

    return x->gid < y->gid ? -1 : x->gid > y->gid;
}

/* Reads IDLE_RUNS into r[] (parallel to v[], sorted by GPU id); *step[i]
 * the last step that found hours of v[i]'s run. */
static int idle_runs(struct conn *c, const struct store_insight_filter *f, const struct cand *v,
                     size_t n, struct run *r, int *step)
{
    struct db_stmt *s = prep(c, ST_IDLE_RUNS);
    int st;

    if (s == NULL)
        return GI_INTERNAL;
    insight_bind_filter(s, f);
    db_bind_int(s, ":lo",
                insight_recent_hour(f->to) > f->from ? insight_recent_hour(f->to) : f->from);
    db_bind_int(s, ":from_day", day_ceil(f->from));
    while ((st = db_step(c, s)) == DB_ROW) {
        struct cand key = {.gid = db_col_int(s, 0)};
        const struct cand *x = bsearch(&key, v, n, sizeof *v, cand_cmp);
        size_t i;

        if (x == NULL) /* a candidate that appeared since IDLE_CAND_PG read them */
            continue;
        i = (size_t)(x - v);
        run_add(&r[i], db_col_int(s, 2), db_col_int(s, 3), db_col_dbl(s, 4), s, 5, 6, 7);
        step[i] = (int)db_col_int(s, 1);
    }
    db_reset(s);
    return db_status(st);
}

int insight_idle_items(struct conn *c, const struct store_insight_filter *f, int64_t min_hours,
                       json_t *items)
{
    struct cand *v = NULL;
    struct run *r = NULL;
    int *step = NULL;
    size_t n = 0, i;
    json_t *found = json_array();
    int rc = found ? idle_cands(c, f, &v, &n) : GI_INTERNAL;

    if (rc == GI_OK && n > 0) {
        qsort(v, n, sizeof *v, cand_cmp);
        r = calloc(n, sizeof *r);
        step = calloc(n, sizeof *step);
        if (r == NULL || step == NULL)
            rc = GI_INTERNAL;
        for (i = 0; rc == GI_OK && i < n; i++)
            r[i].cost = NAN;
    }
    if (rc == GI_OK && n > 0 && db_dialect(c) == DB_PG)
        rc = idle_runs(c, f, v, n, r, step);
    for (i = 0; rc == GI_OK && i < n; i++) {
        int64_t top = -1;

        /* SQLite walks every run from its newest hour; on PostgreSQL a run
         * that fills the third step's day whole goes on before it. */
        if (db_dialect(c) != DB_PG)
            top = v[i].last;
        else if (step[i] == 3 && r[i].since % DAY == 0 && r[i].since > f->from)
            top = r[i].since - HOUR;
        if (top >= 0 && (rc = idle_walk(c, f, v[i].gid, top, &r[i])) != GI_OK)
            break;
        if (r[i].hours == 0 || r[i].hours < min_hours)
            continue;
        if (!idle_item(&v[i], &r[i]) || json_array_append(found, v[i].o) != 0)
            rc = GI_INTERNAL;
    }
    if (rc == GI_OK)
        rc = insight_sort_limit(found, idle_cmp, f->limit > 0 ? f->limit : 100);
    if (rc == GI_OK && json_array_extend(items, found) != 0)
        rc = GI_INTERNAL;
    for (i = 0; i < n; i++)
        json_decref(v[i].o);
    free(v);
    free(r);
    free(step);
    json_decref(found);
    return rc;
}
