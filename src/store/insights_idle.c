/* The idle list: GPUs that nobody holds and that have sat idle, hour
 * after hour, up to the end of the range. See store.h; figures and money
 * are those of insights.c.
 *
 * A GPU is a candidate when its newest owned hour in the range's last two
 * hours (insight_recent_hour) is idle (allocated_s = 0 AND idle_s > 0).
 * Its run is the chain of consecutive hours ending at that hour, each with
 * a row that is idle and passes the filters, and none before the range's
 * start: a missing hour or one that is not idle, or not of the filter,
 * ends it. A run is read a day at a time from usage_idle_days (migrations
 * 043 and 063), which holds each GPU-day's idle tail: the idle hours in
 * one combination of the filter dimensions up to the day's newest hour,
 * with their sums. Going back from the run's newest hour:
 * - the day's tail, taken whole when it ends at that hour, lies in the
 *   range, passes the filters and has all its hours still kept (TAIL_KEPT);
 * - the day's hours below it where the run may go on (the hour before
 *   the tail idle in another combination: idle_before), or all the day's
 *   hours where the tail does not serve
 *   (a range that ends inside the day), from usage_hourly;
 * - when the day is taken to its first hour, the days before it idle
 *   whole (a tail of 24 hours), each one row, and then the day that stops
 *   those, in the same way from its last hour.
 * So a run costs about a row per day instead of one per hour. SQLite,
 * where a statement costs no round trip, walks each run so: one statement
 * over its day rows (IDLE_DAY_ROWS), newest first, that stops where the
 * run breaks, and the hours (IDLE_HOURS) only where those do not serve;
 * on PostgreSQL, where each is a round trip, one statement
 * (IDLE_RUNS) takes every candidate's run through its newest day, the
 * whole days before it and the day below those, over sets of rows, and
 * only a run that goes on past that is walked. The answer is the one the
 * hourly rows give. */
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

/* The candidates: each GPU whose newest owned hour from :lo to :to that
 * passes the filters is idle, with that hour's row, read in one pass
 * over those hours: on PostgreSQL the first row of each GPU newest first
 * (DISTINCT ON), on SQLite the row's columns beside MAX() (the bare
 * columns of such a query are those of the row that holds the maximum,
 * as SQLite documents), through the index by hour (its planner, which
 * does not know how few hours the range's newest two are, would skip
 * through every GPU's hours by the primary key). */
#define CAND_COLS                                                                                  \
    "h.allocated_s AS allocated_s, h.idle_s AS idle_s, h.host AS host, h.team AS team, h.model "   \
    "AS model, h.rate_micros * h.fraction AS rate, h.currency AS currency FROM usage_hourly h"
#define CAND_WHERE " WHERE h.hour >= :lo AND h.hour < :to AND" DIM_FILTERS "AND h.owned_s > 0 "
#define CAND_OF(newest)                                                                            \
    "SELECT n.gpu_id, n.hour, g.uuid, n.host, n.team, n.model, n.rate, n.currency FROM (" newest   \
    ") n JOIN gpus g ON g.id = n.gpu_id WHERE n.allocated_s = 0 AND n.idle_s > 0"
#define NEWEST_PG                                                                                  \
    "SELECT DISTINCT ON (h.gpu_id) h.gpu_id, h.hour AS hour, " CAND_COLS CAND_WHERE                \
    "ORDER BY h.gpu_id, h.hour DESC"
#define NEWEST_SQLITE                                                                              \
    "SELECT h.gpu_id, MAX(h.hour) AS hour, " CAND_COLS " INDEXED BY usage_hourly_hour" CAND_WHERE  \
    "GROUP BY h.gpu_id"

/* A row h of usage_idle_days whose hours are all kept: retention prunes
 * the hourly rows oldest hour first (then the day rows), so a tail whose
 * first hour is later than the oldest hour left has all of its hours. A
 * tail that starts at that hour is read by the hour. */
#define TAIL_KEPT " h.first_hour > (SELECT MIN(k.hour) FROM usage_hourly k) "

/* A day's idle tail h (usage_idle_days, migration 063) that a run takes
 * whole: inside the range, of the filters, its hours kept (TAIL_KEPT),
 * and either reaching the day's first hour `day` (the run goes on in the
 * day before) or with the hour before it not idle (the run ends there). */
#define TAIL_TAKEN(day)                                                                            \
    " h.first_hour >= CAST(:from AS BIGINT) AND" DIM_FILTERS "AND" TAIL_KEPT                       \
    "AND (h.first_hour = " day " OR h.idle_before = 0) "
#define TOP_TAIL_TAKEN TAIL_TAKEN("c.day")
#define BOT_TAIL_TAKEN TAIL_TAKEN("b.day")

/* The start of a range (:from, cast for PostgreSQL's sake) or the day d,
 * whichever is later. */
#define LATER_FROM(d)                                                                              \
    "CASE WHEN " d " > CAST(:from AS BIGINT) THEN " d " ELSE CAST(:from AS BIGINT) END"
#define TOP_LO LATER_FROM("day")
#define BOT_LO LATER_FROM("b.day")
#define TOP_HOURS HOUR_RUN("topw")
#define BOT_HOURS HOUR_RUN("botw")

/* PostgreSQL: every candidate's run (the :gids and their newest hours
 * :lasts, from IDLE_CAND_PG) as far as three steps find it (see the top),
 * one row per step that found hours: (gpu, step, since, hours,
 * idle seconds, cost, currencies). Step 1, the newest hour's day: its
 * tail where it ends at that hour and is taken (topt), else its hours; 2,
 * when those reach the day's first hour, the days idle whole before it,
 * numbered newest first as the hours are; 3, the day below those: its
 * tail (bott), else its hours. Planned for the values of each list (3 to
 * 4 ms at 10,000 GPUs): the generic plan PostgreSQL would settle on after
 * five lists read the runs as if of any length, 843 ms against 287. */
#define STATEMENTS(X)                                                                              \
    X(IDLE_RUNS,                                                                                   \
      "/* plan each time */ WITH cand AS (SELECT c.gpu_id, c.last, c.last - c.last % 86400 AS "    \
      "day FROM unnest(CAST(:gids AS BIGINT[]), CAST(:lasts AS BIGINT[])) AS c(gpu_id, last)), "   \
      "topt AS (SELECT c.gpu_id, h.first_hour AS since, (c.last - h.first_hour) / 3600 + 1 AS "    \
      "hours, h.idle_fs AS fs, h.idle_cost AS cost, h.currency AS cur1, h.currency AS cur2 FROM "  \
      "cand c JOIN usage_idle_days h ON h.gpu_id = c.gpu_id AND h.day = c.day AND h.last_hour = "  \
      "c.last WHERE" TOP_TAIL_TAKEN "), "                                                          \
      "topw AS (SELECT gpu_id, last AS hi, " TOP_LO " AS lo FROM cand WHERE gpu_id NOT IN "        \
      "(SELECT gpu_id FROM topt)), "                                                               \
      "topr AS (" TOP_HOURS " UNION ALL SELECT * FROM topt), "                                     \
      "dayw AS (SELECT c.gpu_id, c.day FROM cand c JOIN topr t ON t.gpu_id = c.gpu_id WHERE "      \
      "t.since = c.day AND c.day > CAST(:from AS BIGINT)), "                                       \
      "dayr AS (SELECT gpu_id, MIN(day) AS since, 24 * COUNT(*) AS hours, SUM(idle_fs) AS fs, "    \
      "SUM(idle_cost) AS cost, MIN(currency) AS cur1, MAX(currency) AS cur2 FROM (SELECT "         \
      "w.gpu_id, w.day AS top, h.day, h.idle_fs, h.idle_cost, h.currency, ROW_NUMBER() OVER "      \
      "(PARTITION BY w.gpu_id ORDER BY h.day DESC) AS rn FROM dayw w JOIN usage_idle_days h ON "   \
      "h.gpu_id = w.gpu_id AND h.day < w.day AND h.day >= :from_day WHERE h.first_hour = h.day "   \
      "AND h.last_hour = h.day + 82800 AND" TAIL_KEPT "AND" DIM_FILTERS                            \
      ") d WHERE (d.top - d.day) / 86400 = d.rn GROUP BY "                                         \
      "gpu_id), "                                                                                  \
      "botd AS (SELECT gpu_id, since - 86400 AS day FROM dayr UNION ALL SELECT gpu_id, day - "     \
      "86400 FROM dayw WHERE gpu_id NOT IN (SELECT gpu_id FROM dayr)), "                           \
      "bott AS (SELECT b.gpu_id, h.first_hour AS since, (b.day + 82800 - h.first_hour) / 3600 + "  \
      "1 AS hours, h.idle_fs AS fs, h.idle_cost AS cost, h.currency AS cur1, h.currency AS cur2 "  \
      "FROM botd b JOIN usage_idle_days h ON h.gpu_id = b.gpu_id AND h.day = b.day AND "           \
      "h.last_hour = b.day + 82800 WHERE" BOT_TAIL_TAKEN "), "                                     \
      "botw AS (SELECT b.gpu_id, b.day + 82800 AS hi, " BOT_LO " AS lo FROM botd b WHERE "         \
      "b.gpu_id NOT IN (SELECT gpu_id FROM bott)), "                                               \
      "botr AS (" BOT_HOURS " UNION ALL SELECT * FROM bott) "                                      \
      "SELECT gpu_id, 1, since, hours, fs, cost, cur1, cur2 FROM topr UNION ALL SELECT "           \
      "gpu_id, 2, since, hours, fs, cost, cur1, cur2 FROM dayr UNION ALL SELECT gpu_id, 3, "       \
      "since, hours, fs, cost, cur1, cur2 FROM botr ORDER BY 1, 2")                                \
    X(IDLE_CAND_SQLITE, CAND_OF(NEWEST_SQLITE))                                                    \
    X(IDLE_CAND_PG, CAND_OF(NEWEST_PG))                                                            \
    X(IDLE_HOURS,                                                                                  \
      "SELECT h.hour, CASE WHEN h.allocated_s = 0 AND h.idle_s > 0 AND " DIM_FILTERS               \
      "THEN 1 ELSE 0 END, h.idle_s * h.fraction, h.idle_s * h.fraction * h.rate_micros, "          \
      "h.currency FROM usage_hourly h WHERE h.gpu_id = :gid AND h.hour >= :lo AND h.hour <= :hi "  \
      "ORDER BY h.hour DESC")                                                                      \
    X(IDLE_DAY_ROWS,                                                                               \
      "SELECT h.day, h.first_hour, h.last_hour, CASE WHEN" DIM_FILTERS "THEN 1 ELSE 0 END, CASE "  \
      "WHEN h.first_hour >= :from AND" TAIL_KEPT "THEN 1 ELSE 0 END, h.idle_fs, h.idle_cost, "     \
      "h.currency, h.idle_before FROM usage_idle_days h WHERE h.gpu_id = :gid AND h.day >= :lo "   \
      "AND h.day <= :day ORDER BY h.day DESC")                                                     \
    X(IDLE_OLDEST, "SELECT MIN(hour) FROM usage_hourly")

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

/* A walk's statement, prepared and bound with the filters once for the
 * whole list: each GPU's walk binds only its own three parameters, by
 * position (a statement's bindings outlive its resets). */
struct walk_stmt {
    struct db_stmt *s;
    int gid, lo, hi; /* :gid, and the statement's lower and upper bound */
};

/* The walks' statements for the filters f. */
struct walker {
    struct conn *c;
    int64_t from, oldest; /* the range's start; the oldest hour kept */
    struct walk_stmt hours, days;
};

static int walk_stmt_init(struct conn *c, const struct store_insight_filter *f, enum stmt_id id,
                          const char *lo, const char *hi, struct walk_stmt *w)
{
    if ((w->s = prep(c, id)) == NULL)
        return GI_INTERNAL;
    insight_bind_filter(w->s, f);
    w->gid = db_param_index(w->s, ":gid");
    w->lo = db_param_index(w->s, lo);
    w->hi = db_param_index(w->s, hi);
    return GI_OK;
}

static int walker_init(struct conn *c, const struct store_insight_filter *f, struct walker *w)
{
    struct db_stmt *s = prep(c, ST_IDLE_OLDEST);
    int rc;

    w->c = c;
    w->from = f->from;
    if (s == NULL)
        return GI_INTERNAL;
    rc = db_step(c, s);
    w->oldest = rc == DB_ROW ? db_col_int(s, 0) : 0; /* 0 with no rows: none to take */
    db_reset(s);
    if ((rc = db_status(rc)) != GI_OK)
        return rc;
    if ((rc = walk_stmt_init(c, f, ST_IDLE_HOURS, ":lo", ":hi", &w->hours)) == GI_OK)
        rc = walk_stmt_init(c, f, ST_IDLE_DAY_ROWS, ":lo", ":day", &w->days);
    return rc;
}

/* Binds w's statement for GPU gid and the bounds lo, hi. */
static struct db_stmt *walk_bind(const struct walk_stmt *w, int64_t gid, int64_t lo, int64_t hi)
{
    db_bind_int_at(w->s, w->gid, gid);
    db_bind_int_at(w->s, w->lo, lo);
    db_bind_int_at(w->s, w->hi, hi);
    return w->s;
}

/* The first day start at or after t. */
static int64_t day_ceil(int64_t t) { return t % DAY ? t - t % DAY + DAY : t; }

/* Walks gid's hours from `top` down to `lo` (IDLE_HOURS), newest first:
 * *next becomes the hour below the run's part found there (top when top
 * itself breaks it); *whole whether it reaches lo unbroken. */
static int walk_hours(const struct walker *w, int64_t gid, int64_t top, int64_t lo, struct run *r,
                      int64_t *next, bool *whole)
{
    struct db_stmt *s = walk_bind(&w->hours, gid, lo, top);
    int64_t expect = top;
    int step;

    while ((step = db_step(w->c, s)) == DB_ROW) {
        if (db_col_int(s, 0) != expect || db_col_int(s, 1) == 0)
            break;
        run_add(r, expect, 1, db_col_dbl(s, 2), s, 3, 4, -1);
        expect -= HOUR;
    }
    db_reset(s);
    if (step != DB_ROW && step != DB_DONE)
        return db_status(step);
    *next = expect;
    *whole = expect < lo;
    return GI_OK;
}

/* How a walk over the day rows stopped. */
enum days_end {
    DAYS_DONE,  /* the run ends (or the range starts) where r's part does */
    DAYS_HOURS, /* go on by the hours from *top, in its day */
};

/* Takes gid's day rows (IDLE_DAY_ROWS) newest first from the day of the
 * hour top: each day's tail while it ends where the run has come to (top,
 * then the last hour of each day before) and passes, going on to the day
 * before while a tail reaches its day's first hour. *top becomes the hour
 * the walk stopped at.
 *
 * Where the run has come to a day's last hour, that hour is idle only if
 * the day has a tail that ends there, and of the filters only if the tail
 * is (it is of that hour's combination), so no such tail, or one that
 * fails the filters, ends the run; but for a day older than the oldest
 * hour kept, whose row retention may have taken before all its hours. */
static int walk_days(const struct walker *w, int64_t gid, int64_t *top, struct run *r,
                     enum days_end *end)
{
    int64_t from = w->from, day = *top - *top % DAY;
    struct db_stmt *s = walk_bind(&w->days, gid, from - from % DAY, day);
    int step;

    for (;;) {
        bool at_last = *top == day + DAY - HOUR && day >= w->oldest;
        int64_t first;

        step = db_step(w->c, s);
        if (step != DB_ROW || db_col_int(s, 0) != day || db_col_int(s, 2) != *top ||
            db_col_int(s, 3) == 0) {
            *end = at_last ? DAYS_DONE : DAYS_HOURS;
            break;
        }
        if (db_col_int(s, 4) == 0) { /* before the range, or hours pruned */
            *end = DAYS_HOURS;
            break;
        }
        first = db_col_int(s, 1);
        run_add(r, first, (*top - first) / HOUR + 1, db_col_dbl(s, 5), s, 6, 7, -1);
        *top = first - HOUR;
        if (first > day) { /* the hour before the tail ends the run unless idle */
            *end = db_col_int(s, 8) != 0 ? DAYS_HOURS : DAYS_DONE;
            break;
        }
        if (day <= from) { /* the range starts with this day */
            *end = DAYS_DONE;
            break;
        }
        day -= DAY;
    }
    db_reset(s);
    return step == DB_ROW || step == DB_DONE ? GI_OK : db_status(step);
}

/* Walks gid's run on from the hour top (the hour below the part r holds)
 * into r (see the top): the day rows as far as they serve, then the hours
 * of the day where they stop; when those reach the day's first hour, on
 * from the last hour of the day before. */
static int idle_walk(const struct walker *w, int64_t gid, int64_t top, struct run *r)
{
    int64_t from = w->from;
    int rc = GI_OK;

    while (rc == GI_OK && top >= from) {
        int64_t day, next = 0;
        enum days_end end;
        bool whole = false;

        if ((rc = walk_days(w, gid, &top, r, &end)) != GI_OK || end == DAYS_DONE || top < from)
            break;
        day = top - top % DAY;
        rc = walk_hours(w, gid, top, day > from ? day : from, r, &next, &whole);
        if (rc != GI_OK || !whole || day <= from)
            break;
        top = day - HOUR;
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
    struct db_array gids = {0}, lasts = {0};
    int st;

    if (s == NULL)
        return GI_INTERNAL;
    for (size_t i = 0; i < n; i++) {
        db_array_int(&gids, v[i].gid);
        db_array_int(&lasts, v[i].last);
    }
    insight_bind_filter(s, f);
    db_bind_array(s, ":gids", &gids);
    db_bind_array(s, ":lasts", &lasts); /* the binds keep copies */
    db_array_free(&gids);
    db_array_free(&lasts);
    db_bind_int(s, ":from_day", day_ceil(f->from));
    while ((st = db_step(c, s)) == DB_ROW) {
        struct cand key = {.gid = db_col_int(s, 0)};
        const struct cand *x = bsearch(&key, v, n, sizeof *v, cand_cmp);
        size_t i;

        if (x == NULL)
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
    struct walker w;
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
    if (rc == GI_OK && n > 0)
        rc = walker_init(c, f, &w);
    for (i = 0; rc == GI_OK && i < n; i++) {
        int64_t top = -1;

        /* SQLite walks every run from its newest hour; on PostgreSQL a run
         * that fills the third step's day whole goes on before it. */
        if (db_dialect(c) != DB_PG)
            top = v[i].last;
        else if (step[i] == 3 && r[i].since % DAY == 0 && r[i].since > f->from)
            top = r[i].since - HOUR;
        if (top >= 0 && (rc = idle_walk(&w, v[i].gid, top, &r[i])) != GI_OK)
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
