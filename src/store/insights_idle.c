/* The idle list: GPUs that nobody holds and that have sat idle, hour
 * after hour, up to the end of the range. See store.h; figures and money
 * are those of insights.c.
 *
 * A GPU is a candidate when its newest owned hour in the range's last two
 * hours (insight_recent_hour) is idle (allocated_s = 0 AND idle_s > 0).
 * Its run is the chain of consecutive hours ending at that hour, each with
 * a row that is idle and passes the filters, and none before the range's
 * start: a missing hour or one that is not idle, or not of the filter,
 * ends it. On PostgreSQL one statement finds every run over the hours
 * (IDLE_RUNS_PG). On SQLite, where a statement costs no round trip, each
 * run is walked back from the newest hour:
 * - the hours of one day, newest first, from usage_hourly (IDLE_HOURS);
 * - when the walk reaches the day's first hour, the days before it from
 *   usage_idle_days (IDLE_DAYS, migration 043), each taken whole while
 *   it has a row there (its 24 hours idle in one combination of the filter
 *   dimensions), that row passes the filters and the day's first hourly
 *   row still exists: retention prunes the hourly rows oldest first, so a
 *   day whose first hour is kept has all of them;
 * - the day where that stops is walked hour by hour again from its last
 *   hour, and so on until the run ends.
 * A day without a row there (one with an owner change, or one the job has
 * not summed) costs only speed: its hours are read. The answer is the one the
 * hourly rows give, in about 50 rows per GPU instead of one per hour of
 * its run. */
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

/* PostgreSQL: the runs in one statement over the hours (the gaps-and-
 * islands pattern: hour / 3600 minus the row number is constant along a
 * run), from the newest hour back to the newest one that breaks the run;
 * there a walk's round trip per statement per GPU costs more than the rows
 * it saves. */
#define STATEMENTS(X)                                                                              \
    X(IDLE_RUNS_PG,                                                                                \
      "WITH newest AS (SELECT h.gpu_id, MAX(h.hour) AS hour FROM usage_hourly h WHERE " FILTERS    \
      "AND h.hour >= :recent AND h.owned_s > 0 GROUP BY h.gpu_id), "                               \
      "cand AS (SELECT n.gpu_id, n.hour, COALESCE((SELECT b.hour FROM usage_hourly b WHERE "       \
      "b.gpu_id = n.gpu_id AND b.hour < n.hour AND b.hour >= :from AND CASE WHEN b.allocated_s = " \
      "0 AND b.idle_s > 0 AND " IDLE_MATCH_B " THEN 0 ELSE 1 END = 1 ORDER BY b.hour DESC LIMIT "  \
      "1), CAST(:from AS BIGINT) - 3600) AS brk FROM newest n JOIN usage_hourly x ON x.gpu_id = "  \
      "n.gpu_id AND x.hour = n.hour WHERE x.allocated_s = 0 AND x.idle_s > 0), "                   \
      "idle AS (SELECT h.gpu_id, h.hour, h.idle_s * h.fraction AS idle_s, h.idle_s * "             \
      "h.fraction * h.rate_micros / 3600 AS cost, h.currency, h.hour / 3600 - ROW_NUMBER() OVER "  \
      "(PARTITION BY h.gpu_id ORDER BY h.hour) AS isl FROM cand c CROSS JOIN usage_hourly h "      \
      "WHERE h.gpu_id = c.gpu_id AND h.hour > c.brk AND h.hour <= c.hour AND " FILTERS             \
      "AND h.allocated_s = 0 AND h.idle_s > 0), "                                                  \
      "runs AS (SELECT gpu_id, MIN(hour) AS since, MAX(hour) AS last, COUNT(*) AS hours, "         \
      "SUM(idle_s) AS idle_s, SUM(cost) AS cost, MIN(currency) AS cur1, MAX(currency) AS cur2 "    \
      "FROM idle GROUP BY gpu_id, isl) "                                                           \
      "SELECT g.uuid, r.since, r.last + 3600, r.hours, r.idle_s / 3600, r.cost, r.cur1, r.cur2, "  \
      "l.host, l.team, l.model, l.rate_micros * l.fraction, l.currency FROM runs r JOIN cand n "   \
      "ON n.gpu_id = r.gpu_id AND n.hour = r.last JOIN usage_hourly l ON l.gpu_id = r.gpu_id AND " \
      "l.hour = r.last JOIN gpus g ON g.id = r.gpu_id WHERE r.hours >= :min_hours ORDER BY "       \
      "r.hours DESC, g.uuid LIMIT :limit")                                                         \
    X(IDLE_CAND,                                                                                   \
      "SELECT n.gpu_id, n.hour, g.uuid, x.host, x.team, x.model, x.rate_micros * x.fraction, "     \
      "x.currency FROM (SELECT h.gpu_id, MAX(h.hour) AS hour FROM usage_hourly h WHERE h.hour >= " \
      ":lo AND h.hour < :to AND " DIM_FILTERS "AND h.owned_s > 0 GROUP BY h.gpu_id) n JOIN "       \
      "usage_hourly x ON "                                                                         \
      "x.gpu_id = n.gpu_id AND x.hour = n.hour JOIN gpus g ON g.id = n.gpu_id WHERE "              \
      "x.allocated_s = 0 AND x.idle_s > 0")                                                        \
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

/* Adds the figures of an hour or a whole day to r. */
static void run_add(struct run *r, int64_t since, int64_t hours, double idle_fs, struct db_stmt *s,
                    int cost_col, int cur_col)
{
    const char *cur = db_col_text(s, cur_col);

    r->since = since;
    r->hours += hours;
    r->idle_fs += idle_fs;
    if (!db_col_is_null(s, cost_col))
        r->cost = (isnan(r->cost) ? 0 : r->cost) + db_col_dbl(s, cost_col);
    if (cur && (r->cur1[0] == '\0' || strcmp(cur, r->cur1) < 0))
        gi_strlcpy(r->cur1, cur, sizeof r->cur1);
    if (cur && (r->cur2[0] == '\0' || strcmp(cur, r->cur2) > 0))
        gi_strlcpy(r->cur2, cur, sizeof r->cur2);
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
        run_add(r, expect, hours, db_col_dbl(s, 2), s, 3, 4);
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

/* Walks x's run back from its newest hour into r (see the top). */
static int idle_walk(struct conn *c, const struct store_insight_filter *f, const struct cand *x,
                     struct run *r)
{
    int64_t top = x->last, from = f->from;
    int rc = GI_OK;

    memset(r, 0, sizeof *r);
    r->cost = NAN;
    while (rc == GI_OK && top >= from) {
        int64_t day = top - top % DAY, next = 0;
        bool whole = false;

        rc = walk_hours(c, f, x->gid, top, day > from ? day : from, r, &next, &whole);
        if (rc != GI_OK || !whole || day <= from)
            break;
        if ((rc = walk_days(c, f, x->gid, day, day_ceil(from), r, &next)) != GI_OK)
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

/* The candidates of f (IDLE_CAND), each with its item started: *v (owned
 * by the caller, items included) and *n. */
static int idle_cands(struct conn *c, const struct store_insight_filter *f, struct cand **v,
                      size_t *n)
{
    struct db_stmt *s = prep(c, ST_IDLE_CAND);
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

static int idle_walks(struct conn *c, const struct store_insight_filter *f, int64_t min_hours,
                      json_t *items);

/* One GPU of the IDLE_RUNS_PG statement. */
static json_t *run_row(struct db_stmt *s)
{
    json_t *o = json_pack(
        "{s:o, s:o, s:o, s:o, s:o, s:o, s:I, s:o, s:o}", "gpu", insight_col_text_json(s, 0), "host",
        insight_col_text_json(s, 8), "team", insight_col_text_json(s, 9), "model",
        insight_col_text_json(s, 10), "since", insight_time_json(db_col_int(s, 1)), "until",
        insight_time_json(db_col_int(s, 2)), "hours", (json_int_t)db_col_int(s, 3),
        "idle_gpu_hours", insight_num(db_col_dbl(s, 4)), "cost",
        insight_cost_json(insight_col_opt(s, 5), db_col_text(s, 6), db_col_text(s, 7)));
    if (o)
        insight_set_hourly(o, insight_col_opt(s, 11), db_col_text(s, 12));
    return o;
}

/* The idle GPUs in one statement (PostgreSQL). */
static int idle_runs_pg(struct conn *c, const struct store_insight_filter *f, int64_t min_hours,
                        json_t *items)
{
    struct db_stmt *s = prep(c, ST_IDLE_RUNS_PG);

    if (s == NULL)
        return GI_INTERNAL;
    insight_bind_filter(s, f);
    db_bind_int(s, ":min_hours", min_hours);
    db_bind_int(s, ":recent", insight_recent_hour(f->to));
    return insight_collect_rows(c, s, run_row, items);
}

int insight_idle_items(struct conn *c, const struct store_insight_filter *f, int64_t min_hours,
                       json_t *items)
{
    if (db_dialect(c) == DB_PG)
        return idle_runs_pg(c, f, min_hours, items);
    return idle_walks(c, f, min_hours, items);
}

/* The idle GPUs by walks (SQLite). */
static int idle_walks(struct conn *c, const struct store_insight_filter *f, int64_t min_hours,
                      json_t *items)
{
    struct cand *v = NULL;
    size_t n = 0, i;
    json_t *found = json_array();
    int rc = found ? idle_cands(c, f, &v, &n) : GI_INTERNAL;

    for (i = 0; rc == GI_OK && i < n; i++) {
        struct run r;
        if ((rc = idle_walk(c, f, &v[i], &r)) != GI_OK)
            break;
        if (r.hours < min_hours)
            continue;
        if (!idle_item(&v[i], &r) || json_array_append(found, v[i].o) != 0)
            rc = GI_INTERNAL;
    }
    if (rc == GI_OK)
        rc = insight_sort_limit(found, idle_cmp, f->limit > 0 ? f->limit : 100);
    if (rc == GI_OK && json_array_extend(items, found) != 0)
        rc = GI_INTERNAL;
    for (i = 0; i < n; i++)
        json_decref(v[i].o);
    free(v);
    json_decref(found);
    return rc;
}
