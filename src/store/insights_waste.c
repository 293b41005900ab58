/* Inefficiency lists read from the rollups: allocated-idle GPUs, top
 * consumers and over-requesting workloads (the idle GPUs are
 * insights_idle.c's, waste by team insights_team_waste.c's, the savings
 * drawn from them insights_savings.c's).
 * See store.h; figures and money are those of insights.c.
 *
 * The consumer lists (allocated-idle, top consumers, over-requesting
 * workloads) read the whole days of their range as aligned spans of
 * consumer days (usage_consumer_spans, usage_spans.c: a few rows per
 * consumer for any range instead of one per day) and only the hours of
 * the partial days at either end from usage_consumers and usage_hourly
 * (CONSUMER_ROWS); all give the same sums, as a day's rows are the sums
 * of its hours per consumer and combination of the hours' dimensions,
 * and a span's those of its days. Runs of consecutive hours
 * ("since when") need hours: an allocated-idle run is walked back hour by
 * hour over its first and last day and by whole idle days in between. An
 * hour without a row breaks a run, so a gap in the data is never taken
 * for idleness. */
#include "store/insights_int.h"
#include "store/usage_spans.h"
#include "core/status.h"
#include "core/util.h"

#include <math.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

/* Consumer hours with their GPU-hour (alias u and h). The consumer rows
 * lead (CROSS JOIN keeps that order on SQLite; PostgreSQL plans it as an
 * inner join) and are read by their hour, each finding its hour row by
 * its primary key: led by usage_hourly, SQLite would search each GPU's
 * consumer rows over the whole range instead of by the hour. */
#define CONSUMER_HOURS(more)                                                                       \
    " usage_consumers u CROSS JOIN usage_hourly h " more " WHERE u.hour >= :from AND u.hour < "    \
    ":to AND h.gpu_id = u.gpu_id AND h.hour = u.hour AND "

/* The filters of FILTERS on usage_consumers_daily and usage_consumer_spans
 * (alias d) but the range (DAY_DIMS), and with the whole days of the
 * range [:dfrom, :dto) (DAY_FILTERS). */
#define DAY_DIMS                                                                                   \
    " (:team IS NULL OR d.team = :team) AND (:env IS NULL OR d.env = :env) AND (:pool IS NULL OR " \
    "d.pool = :pool) AND (:cluster IS NULL OR d.cluster = :cluster) AND (:cloud IS NULL OR "       \
    "d.cloud = :cloud) AND (:model IS NULL OR d.model = :model) AND " DC_FILTERS("d")
#define DAY_FILTERS " d.day >= :dfrom AND d.day < :dto AND" DAY_DIMS

/* The consumer rows of the range (alias r): one per GPU, consumer, whole
 * day and combination of dimensions from usage_consumers_daily, and one
 * per hour of the partial days at either end ([:lo1, :hi1) and [:lo2,
 * :hi2)) from the hourly rows, in the same columns. The hour range is
 * stated on both hourly tables, so that whichever way a database joins
 * them (PostgreSQL's generic plan of a prepared statement included) it
 * reads only those hours, none at all for a range of whole days. */
#define CONSUMER_HOUR_ROWS(lo, hi)                                                                 \
    "SELECT u.gpu_id, u.kind, u.consumer, u.team, u.namespace, u.pod, h.team, h.host_id, "         \
    "h.host, h.currency, 1, CASE WHEN u.busy_s = 0 AND u.alloc_idle_s > 0 THEN 1 ELSE 0 END, "     \
    "u.hour, u.hour, CASE WHEN u.alloc_idle_s > 0 THEN u.hour END, u.allocated_s, u.allocated_s "  \
    "* h.fraction, u.busy_s * h.fraction, u.alloc_idle_s * h.fraction, u.util_sum * h.fraction, "  \
    "u.measured_s * h.fraction, u.util_max, u.allocated_s * h.fraction * h.rate_micros, "          \
    "u.alloc_idle_s * h.fraction * h.rate_micros FROM usage_consumers u CROSS JOIN "               \
    "usage_hourly h WHERE u.hour >= " lo " AND u.hour < " hi " AND h.hour >= " lo                  \
    " AND h.hour < " hi " AND h.gpu_id = u.gpu_id AND h.hour = u.hour AND " FILTERS                \
    "AND u.allocated_s > 0"
/* The rows of one table of consumer days or spans (alias d) that `cond`
 * selects, in the columns of CONSUMER_ROWS. */
#define DAY_ROWS(table, cond)                                                                      \
    "SELECT d.gpu_id, d.kind, d.consumer, d.consumer_team AS holder, d.namespace, d.pod, "         \
    "d.team, d.host_id, d.host, d.currency, d.hours, d.idle_hours, d.first_hour, d.last_hour, "    \
    "d.first_idle_hour, d.held_s, d.allocated_s, d.busy_s, d.alloc_idle_s, d.util_sum, "           \
    "d.measured_s, d.util_max, d.allocated_cost, d.alloc_idle_cost FROM " table " d WHERE " cond   \
    " AND" DAY_DIMS
#define SPAN_ROWS(n)                                                                               \
    " UNION ALL " DAY_ROWS("usage_consumer_spans",                                                 \
                           "d.len = " #n " AND d.day IN (:s" #n "a, :s" #n "b)")
#define TOP_SPAN_ROWS                                                                              \
    " UNION ALL " DAY_ROWS("usage_consumer_spans", "d.len = 32 AND d.day >= :m1 AND d.day < :m2")
/* The whole days as aligned spans (usage_span_cover, bound by
 * usage_span_bind): a day or two from the consumer days, at most two
 * spans of each length up to 16 days and the run of 32-day spans between
 * from usage_consumer_spans, each row the sums of its days' rows. */
#define CONSUMER_DAY_ROWS                                                                          \
    DAY_ROWS("usage_consumers_daily", "d.day IN (:s1a, :s1b)")                                     \
    SPAN_ROWS(2) SPAN_ROWS(4) SPAN_ROWS(8) SPAN_ROWS(16) TOP_SPAN_ROWS
#define CONSUMER_ROWS                                                                              \
    " (" CONSUMER_DAY_ROWS " UNION ALL " CONSUMER_HOUR_ROWS(                                       \
        ":lo1", ":hi1") " UNION ALL " CONSUMER_HOUR_ROWS(":lo2", ":hi2") ") r "

/* A workload: a pod (on whichever container), else the consumer, on one
 * host. */
#define WORKLOAD                                                                                   \
    "CASE WHEN r.kind = 'k8s' AND r.pod IS NOT NULL THEN COALESCE(r.namespace, '') || '/' || "     \
    "r.pod ELSE r.consumer END"

/* The GPUs whose consumers' runs are walked (alias j: the GPU, and the
 * lowest and highest hour or day start read of it), from a JSON array of
 * [gpu, lo, hi] on SQLite, from three arrays on PostgreSQL. */
#define WALKS_SQLITE                                                                               \
    "(SELECT json_extract(value, '$[0]') AS gid, json_extract(value, '$[1]') AS lo, "              \
    "json_extract(value, '$[2]') AS hi FROM json_each(:walks)) j"
#define WALKS_PG                                                                                   \
    "unnest(CAST(:gids AS BIGINT[]), CAST(:los AS BIGINT[]), CAST(:his AS BIGINT[])) AS j(gid, "   \
    "lo, hi)"
/* Planned for the GPUs and hours of each walk on PostgreSQL (db_pg.c). */
#define PG_PLAN_EACH_SQL "/* plan each time */ "
/* The consumer hours of the walks' GPUs in [j.lo, j.hi] that the filters
 * keep, each with whether it was wholly allocated-idle, newest first per
 * consumer. A walk's hours lie inside the range, and the index of the
 * consumer hours is searched from j.lo (not from :from). */
#define WALK_HOURS(walks)                                                                          \
    "SELECT u.gpu_id, u.kind, u.consumer, u.hour, CASE WHEN u.busy_s = 0 AND u.alloc_idle_s > 0 "  \
    "THEN 1 ELSE 0 END FROM " walks " CROSS JOIN usage_consumers u CROSS JOIN usage_hourly h "     \
    "WHERE u.gpu_id = j.gid AND u.hour >= j.lo AND u.hour <= j.hi AND h.gpu_id = j.gid AND "       \
    "h.hour = u.hour AND h.hour >= j.lo AND h.hour <= j.hi AND" FILTERS                            \
    "AND u.allocated_s > 0 ORDER BY u.gpu_id, u.kind, u.consumer, u.hour DESC"
/* The idle hours of each whole day (of the range's, before j.hi) of the
 * consumers of the walks' GPUs, newest day first per consumer. */
#define WALK_DAYS(walks)                                                                           \
    "SELECT d.gpu_id, d.kind, d.consumer, d.day, SUM(d.idle_hours) FROM " walks " CROSS JOIN "     \
    "usage_consumers_daily d WHERE d.gpu_id = j.gid AND d.day < j.hi AND" DAY_FILTERS              \
    "GROUP BY d.gpu_id, d.kind, d.consumer, d.day ORDER BY d.gpu_id, d.kind, d.consumer, d.day "   \
    "DESC"

/* The allocated-idle GPUs and consumers of the range, most idle cost
 * first (alias a_ for the columns the savings filter on). */
#define ALLOC_IDLE_SQL                                                                             \
    "SELECT g.uuid AS a_uuid, t.kind AS a_kind, t.consumer AS a_cons, t.holder, l.team, l.host, "  \
    "t.gh AS a_gh, t.cost AS a_cost, t.cur1, t.cur2, t.first_idle, t.last + 3600, t.held, "        \
    "t.gpu_id AS a_gid, l.rate_micros * l.fraction, l.currency, t.last AS a_last FROM (SELECT "    \
    "r.gpu_id, r.kind, r.consumer, MAX(r.holder) AS holder, SUM(r.alloc_idle_s) / 3600 AS gh, "    \
    "SUM(r.alloc_idle_cost) / 3600 AS cost, MIN(r.currency) AS cur1, MAX(r.currency) AS cur2, "    \
    "MAX(r.last_hour) AS last, MIN(r.first_idle_hour) AS first_idle, SUM(r.allocated_s) / 3600 "   \
    "AS held FROM" CONSUMER_ROWS                                                                   \
    "GROUP BY r.gpu_id, r.kind, r.consumer HAVING MIN(r.first_idle_hour) IS NOT NULL) t JOIN "     \
    "gpus g ON g.id = t.gpu_id LEFT JOIN usage_hourly l ON l.gpu_id = t.gpu_id AND l.hour = "      \
    "t.last ORDER BY COALESCE(t.cost, 0) DESC, t.gh DESC, g.uuid, t.consumer LIMIT :limit"

#define STATEMENTS(X)                                                                              \
    X(ALLOC_IDLE, ALLOC_IDLE_SQL)                                                                  \
    /* Those of the ALLOC_IDLE rows, in the same order, whose consumer may                         \
     * be idle now: its newest hour is recent (:recent on) and wholly                              \
     * allocated-idle (the first hour its run is walked back from). */                             \
    X(ALLOC_IDLE_NOW,                                                                              \
      "SELECT a.* FROM (" ALLOC_IDLE_SQL ") a WHERE a.a_last >= :recent AND EXISTS (SELECT 1 "     \
      "FROM usage_consumers x WHERE x.gpu_id = a.a_gid AND x.hour = a.a_last AND x.kind = "        \
      "a.a_kind AND x.consumer = a.a_cons AND x.allocated_s > 0 AND x.busy_s = 0 AND "             \
      "x.alloc_idle_s > 0) ORDER BY COALESCE(a.a_cost, 0) DESC, a.a_gh DESC, a.a_uuid, a.a_cons")  \
    X(HOURS_AFTER, "SELECT 1 FROM usage_consumers WHERE hour >= :to AND hour < :end LIMIT 1")      \
    /* The hours and the whole days the runs of a set of consumers are                             \
     * walked over (WALK_HOURS, WALK_DAYS), from the GPUs of the walks                             \
     * (:walks on SQLite, :gids/:los/:his on PostgreSQL). */                                       \
    X(WALK_HOURS_SQLITE, WALK_HOURS(WALKS_SQLITE))                                                 \
    X(WALK_HOURS_PG, PG_PLAN_EACH_SQL WALK_HOURS(WALKS_PG))                                        \
    X(WALK_DAYS_SQLITE, WALK_DAYS(WALKS_SQLITE))                                                   \
    X(WALK_DAYS_PG, PG_PLAN_EACH_SQL WALK_DAYS(WALKS_PG))                                          \
    X(TOP_CONSUMERS,                                                                               \
      "SELECT r.kind, r.consumer, MAX(r.holder), SUM(r.allocated_s) / 3600, SUM(r.busy_s) / "      \
      "3600, SUM(r.alloc_idle_s) / 3600, SUM(r.util_sum), SUM(r.measured_s), COUNT(DISTINCT "      \
      "r.gpu_id), SUM(r.allocated_cost) / 3600, MIN(r.currency), MAX(r.currency), "                \
      "MIN(r.first_hour), MAX(r.last_hour) + 3600 FROM" CONSUMER_ROWS                              \
      "GROUP BY r.kind, r.consumer ORDER BY SUM(r.allocated_s) DESC, r.kind, r.consumer LIMIT "    \
      ":limit")                                                                                    \
    X(OVERREQUEST,                                                                                 \
      "SELECT r.kind, " WORKLOAD ", COALESCE(r.host_id, 0), MAX(r.host), MAX(r.holder), "          \
      "MAX(r.team), g.uuid, MAX(r.util_max), SUM(r.held_s), SUM(r.allocated_s) / 3600, "           \
      "SUM(r.allocated_cost) / 3600, MIN(r.currency), MIN(r.first_hour), MAX(r.last_hour) + 3600 " \
      "FROM" CONSUMER_ROWS "JOIN gpus g ON g.id = r.gpu_id WHERE r.kind <> 'unknown' GROUP BY "    \
      "r.kind, " WORKLOAD ", COALESCE(r.host_id, 0), g.uuid ORDER BY 1, 2, 3, g.uuid")

enum stmt_id { STATEMENTS(STORE_AS_ENUM) ST__COUNT };
static const char *const stmt_sql[] = {STATEMENTS(STORE_AS_SQL)};

static struct db_stmt *prep(struct conn *c, enum stmt_id id) { return db_prep(c, stmt_sql[id]); }

/* Rows an over-request query reads at most, so one request stays bounded
 * however many GPUs the range holds. */
#define OVERREQUEST_MAX_ROWS 200000

/* RFC 3339 of t as JSON. */
json_t *insight_time_json(int64_t t)
{
    char buf[32];

    gi_time_format(t, buf, sizeof buf);
    return json_string(buf);
}

/* {"amount","currency","method"} from a sum of micro-units and the least
 * and greatest currency behind it: amount and currency null when no hour
 * had a rate; amount null and currency "mixed" when rates differ in
 * currency. */
json_t *insight_cost_json(double micros, const char *cur1, const char *cur2)
{
    bool mixed = cur1 && cur2 && strcmp(cur1, cur2) != 0;

    if (cur1 == NULL || isnan(micros))
        return json_pack("{s:n, s:n, s:s}", "amount", "currency", "method", "catalog");
    if (mixed)
        return json_pack("{s:n, s:s, s:s}", "amount", "currency", "mixed", "method", "catalog");
    return json_pack("{s:o, s:s, s:s}", "amount", insight_money_json(micros), "currency", cur1,
                     "method", "catalog");
}

/* A cost from columns i (micros), i+1 and i+2 (currencies). */
static json_t *col_cost(struct db_stmt *s, int i)
{
    return insight_cost_json(insight_col_opt(s, i), db_col_text(s, i + 1), db_col_text(s, i + 2));
}

/* ---- idle and allocated-idle GPUs ---- */

/* {"amount","currency"} of a cost per hour, or null without a rate. */
static json_t *hourly_json(double micros, const char *currency)
{
    if (isnan(micros) || currency == NULL)
        return json_null();
    return json_pack("{s:o, s:s}", "amount", insight_money_json(micros), "currency", currency);
}

/* Sets o's "hourly" cost and, with a rate, its hidden HOURLY figure. */
void insight_set_hourly(json_t *o, double micros, const char *currency)
{
    json_object_set_new(o, "hourly", hourly_json(micros, currency));
    if (!isnan(micros) && currency)
        json_object_set_new(o, HOURLY, json_real(micros));
}

/* Removes the hidden members from every item. */
static void strip_hidden(json_t *items)
{
    size_t i;
    json_t *o;

    json_array_foreach(items, i, o)
        json_object_del(o, HOURLY);
}

/* The oldest hour a run may end with and still count as lasting up to
 * the end of the range: the hour before the range's newest hour (the one
 * holding to - 1), so that an hour not yet rolled up does not end every
 * run. */
int64_t insight_recent_hour(int64_t to) { return (to - 1) - (to - 1) % 3600 - 3600; }

/* The whole days [dfrom, dto) of the range, which CONSUMER_ROWS reads
 * from usage_consumers_daily; the hours before and after them come from
 * the hourly rows. The range holds the hours that start in [from, to); the
 * whole days are read as the spans that cover them (usage_span_cover).
 * rows_dto is where the days CONSUMER_ROWS reads end: dto, or the day
 * after it when the range ends inside that day and the day has no
 * consumer hour from `to` on (a range that ends now), so that the day is
 * read whole, from its consumer days, instead of by the hour. */
struct day_split {
    int64_t dfrom, dto, rows_dto;
};

static struct day_split split_days(const struct store_insight_filter *f)
{
    int64_t top = f->to % 3600 ? f->to + 3600 - f->to % 3600 : f->to;
    struct day_split d = {f->from % 86400 ? f->from + 86400 - f->from % 86400 : f->from,
                          top - top % 86400, 0};

    if (d.dto <= d.dfrom) /* no whole day: every hour from the hourly rows */
        d.dfrom = d.dto = f->from;
    d.rows_dto = d.dto;
    return d;
}

/* The split of CONSUMER_ROWS for f: split_days(), with the range's last
 * day read whole when no consumer hour of it starts at or after f->to. */
static int rows_split(struct conn *c, const struct store_insight_filter *f, struct day_split *d)
{
    struct db_stmt *s;
    int step;

    *d = split_days(f);
    if (d->dto % 86400 != 0 || f->to <= d->dto || f->to - d->dto >= 86400)
        return GI_OK;
    if ((s = prep(c, ST_HOURS_AFTER)) == NULL)
        return GI_INTERNAL;
    db_bind_int(s, ":to", f->to);
    db_bind_int(s, ":end", d->dto + 86400);
    step = db_step(c, s);
    db_reset(s);
    if (step == DB_DONE)
        d->rows_dto = d->dto + 86400;
    return step == DB_ROW || step == DB_DONE ? GI_OK : db_status(step);
}

/* Binds the filters and the day split d of a CONSUMER_ROWS statement
 * (also of WALK_DAYS, which reads [:dfrom, :dto)). */
static void bind_rows(struct db_stmt *s, const struct store_insight_filter *f,
                      const struct day_split *d)
{
    struct usage_span_cover cv;

    usage_span_cover(d->dfrom, d->rows_dto, &cv);
    usage_span_bind(s, &cv);
    insight_bind_filter(s, f);
    db_bind_int(s, ":dfrom", d->dfrom);
    db_bind_int(s, ":dto", d->dto);
    db_bind_int(s, ":lo1", f->from);
    db_bind_int(s, ":hi1", d->dfrom);
    db_bind_int(s, ":lo2", d->rows_dto);
    db_bind_int(s, ":hi2", f->to);
}

/* Hidden members of an allocated-idle item until its run is known: the
 * GPU's id and the consumer's newest hour. */
#define ITEM_GID "_gid"
#define ITEM_LAST "_last"

/* One GPU and consumer of the ALLOC_IDLE statement; "since" is its first
 * allocated-idle hour until alloc_idle_runs() finds it idle now. */
static json_t *alloc_idle_row(struct db_stmt *s)
{
    json_t *o = json_pack(
        "{s:o, s:o, s:o, s:{s:o, s:o, s:o}, s:o, s:b, s:o, s:o, s:o, s:o, s:I, s:I}", "gpu",
        insight_col_text_json(s, 0), "host", insight_col_text_json(s, 5), "team",
        insight_col_text_json(s, 4), "consumer", "kind", insight_col_text_json(s, 1), "name",
        insight_col_text_json(s, 2), "team", insight_col_text_json(s, 3), "since",
        insight_time_json(db_col_int(s, 10)), "idle_now", false, "last_seen",
        insight_time_json(db_col_int(s, 11)), "held_gpu_hours", insight_num(db_col_dbl(s, 12)),
        "allocated_idle_gpu_hours", insight_num(db_col_dbl(s, 6)), "cost", col_cost(s, 7), ITEM_GID,
        (json_int_t)db_col_int(s, 13), ITEM_LAST, (json_int_t)db_col_int(s, 16));
    if (o)
        insight_set_hourly(o, insight_col_opt(s, 14), db_col_text(s, 15));
    return o;
}

/* One consumer on one GPU whose run of wholly allocated-idle hours is
 * sought: the run ending at its newest hour `last` in the range, as the
 * hourly rows have it; now whether there is one, start its first hour.
 * The hours of last's day and of the day where the run begins are read
 * hour by hour; the whole days between are taken from
 * usage_consumers_daily. All the walks of a list go together, a
 * statement per step for all of them. */
struct walk {
    int64_t gid;
    const char *kind, *consumer; /* borrowed from the item */
    json_t *o;                   /* the item, borrowed */
    int64_t last, start;
    bool now, broken;
    bool active;             /* taking part in the step being read */
    bool stop;               /* its rows of that step are read to where its run stops */
    int64_t top, lo, expect; /* a step over hours: [lo, top], the hour due */
};

/* Orders walks by GPU. */
static int walk_cmp(const void *a, const void *b)
{
    const struct walk *x = a, *y = b;
    return x->gid < y->gid ? -1 : x->gid > y->gid;
}

/* The active walk of GPU gid and consumer (kind, consumer) in v[0..n)
 * (sorted by GPU), NULL when none. */
static struct walk *walk_find(struct walk *v, size_t n, int64_t gid, const char *kind,
                              const char *consumer)
{
    size_t lo = 0, hi = n;

    while (lo < hi) {
        size_t mid = lo + (hi - lo) / 2;
        if (v[mid].gid < gid)
            lo = mid + 1;
        else
            hi = mid;
    }
    for (; lo < n && v[lo].gid == gid; lo++)
        if (v[lo].active && kind && consumer && strcmp(v[lo].kind, kind) == 0 &&
            strcmp(v[lo].consumer, consumer) == 0)
            return &v[lo];
    return NULL;
}

/* Binds the GPUs of the active walks, each with the lowest lo and the
 * highest hi of its walks (lo, hi: per walk); false when out of memory. */
static bool walks_bind(struct db_stmt *s, bool pg, const struct walk *v, size_t n,
                       int64_t (*lo)(const struct walk *), int64_t (*hi)(const struct walk *))
{
    struct db_array gids = {0}, los = {0}, his = {0};
    size_t len = 0, cap = 3 + n * 72; /* ",[a,b,c]": at most 65 characters */
    char *json = pg ? NULL : malloc(cap);
    bool ok;

    if (!pg && json == NULL)
        return false;
    if (json)
        json[len++] = '[';
    for (size_t i = 0; i < n;) {
        int64_t gid = v[i].gid, l = INT64_MAX, h = INT64_MIN;
        bool any = false;
        for (; i < n && v[i].gid == gid; i++) {
            if (!v[i].active)
                continue;
            any = true;
            l = lo(&v[i]) < l ? lo(&v[i]) : l;
            h = hi(&v[i]) > h ? hi(&v[i]) : h;
        }
        if (!any)
            continue;
        if (pg) {
            db_array_int(&gids, gid);
            db_array_int(&los, l);
            db_array_int(&his, h);
        } else {
            len += (size_t)snprintf(json + len, cap - len, "%s[%lld,%lld,%lld]", len > 1 ? "," : "",
                                    (long long)gid, (long long)l, (long long)h);
        }
    }
    if (pg) {
        ok = !gids.failed && !los.failed && !his.failed;
        db_bind_array(s, ":gids", &gids);
        db_bind_array(s, ":los", &los);
        db_bind_array(s, ":his", &his);
        db_array_free(&gids);
        db_array_free(&los);
        db_array_free(&his);
        return ok;
    }
    json[len++] = ']';
    json[len] = '\0';
    db_bind_text(s, ":walks", json);
    free(json);
    return true;
}

static int64_t walk_lo(const struct walk *w) { return w->lo; }
static int64_t walk_top(const struct walk *w) { return w->top; }
static int64_t walk_start(const struct walk *w) { return w->start; }

/* The hour where a step back from hour t stops: t's day's first hour,
 * or the range's first when later. */
static int64_t day_floor(int64_t t, int64_t from)
{
    return t - t % 86400 > from ? t - t % 86400 : from;
}

/* Steps each active walk back through its hours from top down to lo:
 * start becomes the earliest hour of the run of wholly allocated-idle
 * hours ending at top (top + 3600 when top is none), broken whether the
 * run stops above lo (an hour not idle, or one without a row). */
static int walk_hours(struct conn *c, const struct store_insight_filter *f, struct walk *v,
                      size_t n)
{
    bool pg = db_dialect(c) == DB_PG;
    struct db_stmt *s = prep(c, pg ? ST_WALK_HOURS_PG : ST_WALK_HOURS_SQLITE);
    int step;

    if (s == NULL)
        return GI_INTERNAL;
    for (size_t i = 0; i < n; i++) {
        if (!v[i].active)
            continue;
        v[i].start = v[i].top + 3600;
        v[i].expect = v[i].top;
        v[i].stop = false;
    }
    insight_bind_filter(s, f);
    if (!walks_bind(s, pg, v, n, walk_lo, walk_top))
        return GI_INTERNAL;
    while ((step = db_step(c, s)) == DB_ROW) {
        struct walk *w = walk_find(v, n, db_col_int(s, 0), db_col_text(s, 1), db_col_text(s, 2));
        int64_t hour = db_col_int(s, 3);
        if (w == NULL || w->stop || hour > w->top || hour < w->lo)
            continue;
        if (hour != w->expect || db_col_int(s, 4) == 0) {
            w->stop = true;
            continue;
        }
        w->start = w->expect;
        w->expect -= 3600;
    }
    db_reset(s);
    if (step != DB_DONE)
        return db_status(step);
    for (size_t i = 0; i < n; i++)
        if (v[i].active)
            v[i].broken = v[i].expect >= v[i].lo;
    return GI_OK;
}

/* Moves each active walk's start back over the whole days before it that
 * its consumer held wholly allocated-idle (24 idle hours in
 * usage_consumers_daily). */
static int walk_days(struct conn *c, const struct store_insight_filter *f, struct walk *v, size_t n)
{
    bool pg = db_dialect(c) == DB_PG;
    struct db_stmt *s = prep(c, pg ? ST_WALK_DAYS_PG : ST_WALK_DAYS_SQLITE);
    struct day_split d = split_days(f);
    int step;

    if (s == NULL)
        return GI_INTERNAL;
    for (size_t i = 0; i < n; i++) {
        if (!v[i].active)
            continue;
        v[i].top = v[i].start; /* the days before it */
        v[i].lo = d.dfrom;
        v[i].stop = false;
    }
    bind_rows(s, f, &d);
    if (!walks_bind(s, pg, v, n, walk_lo, walk_start))
        return GI_INTERNAL;
    while ((step = db_step(c, s)) == DB_ROW) {
        struct walk *w = walk_find(v, n, db_col_int(s, 0), db_col_text(s, 1), db_col_text(s, 2));
        int64_t day = db_col_int(s, 3);
        if (w == NULL || w->stop || day >= w->top)
            continue;
        if (day != w->start - 86400 || db_col_int(s, 4) != 24) {
            w->stop = true;
            continue;
        }
        w->start -= 86400;
    }
    db_reset(s);
    return step == DB_DONE ? GI_OK : db_status(step);
}

/* Walks the runs of v[0..n) (sorted by GPU): each walk's hours of last's
 * day; while a run reaches back through a whole day, the whole idle days
 * before it and then the hours of the day below them, for all the walks
 * still going at once. */
static int walk_runs(struct conn *c, const struct store_insight_filter *f, struct walk *v, size_t n)
{
    int64_t from = f->from;
    bool going = false;
    int rc;

    for (size_t i = 0; i < n; i++) {
        v[i].active = true;
        v[i].top = v[i].last;
        v[i].lo = day_floor(v[i].last, from);
    }
    if ((rc = walk_hours(c, f, v, n)) != GI_OK)
        return rc;
    for (size_t i = 0; i < n; i++) {
        v[i].now = v[i].start <= v[i].last;
        v[i].active = v[i].now && !v[i].broken && v[i].start > from;
        going = going || v[i].active;
    }
    while (going) {
        if ((rc = walk_days(c, f, v, n)) != GI_OK)
            return rc;
        for (size_t i = 0; i < n; i++) {
            if (!v[i].active)
                continue;
            if (v[i].start <= from) {
                v[i].active = false;
                continue;
            }
            v[i].top = v[i].start - 3600;
            v[i].lo = day_floor(v[i].top, from);
        }
        if ((rc = walk_hours(c, f, v, n)) != GI_OK)
            return rc;
        going = false;
        for (size_t i = 0; i < n; i++) {
            if (!v[i].active)
                continue;
            if (v[i].start > v[i].top) { /* the hour before the run is not idle */
                v[i].start = v[i].top + 3600;
                v[i].active = false;
            } else {
                v[i].active = !v[i].broken && v[i].start > from;
            }
            going = going || v[i].active;
        }
    }
    return GI_OK;
}

/* Finds the runs of the allocated-idle items from index `first` on:
 * those whose consumer is idle now get "since" = the start of the run
 * and "idle_now"; the hidden members are removed. */
static int alloc_idle_runs(struct conn *c, const struct store_insight_filter *f, json_t *items,
                           size_t first)
{
    size_t total = json_array_size(items), n = 0;
    struct walk *v = total > first ? calloc(total - first, sizeof *v) : NULL;
    int rc = GI_OK;

    if (total > first && v == NULL)
        return GI_INTERNAL;
    for (size_t i = first; i < total; i++) {
        json_t *o = json_array_get(items, i), *cons = json_object_get(o, "consumer");
        struct walk *w = &v[n];
        w->o = o;
        w->gid = json_integer_value(json_object_get(o, ITEM_GID));
        w->kind = json_string_value(json_object_get(cons, "kind"));
        w->consumer = json_string_value(json_object_get(cons, "name"));
        w->last = json_integer_value(json_object_get(o, ITEM_LAST));
        if (w->kind && w->consumer)
            n++;
    }
    if (n > 0) {
        qsort(v, n, sizeof *v, walk_cmp);
        rc = walk_runs(c, f, v, n);
    }
    for (size_t i = 0; rc == GI_OK && i < n; i++) {
        if (v[i].now) {
            json_object_set_new(v[i].o, "since", insight_time_json(v[i].start));
            json_object_set_new(v[i].o, "idle_now", json_true());
        }
    }
    for (size_t i = first; i < total; i++) {
        json_object_del(json_array_get(items, i), ITEM_GID);
        json_object_del(json_array_get(items, i), ITEM_LAST);
    }
    free(v);
    return rc;
}

/* Appends the allocated-idle GPUs to items (with the hidden HOURLY
 * figures): all of them, or (now) only those whose consumer is idle now,
 * the others dropped before their runs are walked. */
static int alloc_idle_items(struct conn *c, const struct store_insight_filter *f, bool now,
                            json_t *items)
{
    struct db_stmt *s;
    size_t first = json_array_size(items);
    struct day_split d;
    int rc;

    if ((rc = rows_split(c, f, &d)) != GI_OK)
        return rc;
    if ((s = prep(c, now ? ST_ALLOC_IDLE_NOW : ST_ALLOC_IDLE)) == NULL)
        return GI_INTERNAL;
    bind_rows(s, f, &d);
    if (now)
        db_bind_int(s, ":recent", insight_recent_hour(f->to));
    if ((rc = insight_collect_rows(c, s, alloc_idle_row, items)) != GI_OK)
        return rc;
    return alloc_idle_runs(c, f, items, first);
}

int insight_alloc_idle_items(struct conn *c, const struct store_insight_filter *f, json_t *items)
{
    return alloc_idle_items(c, f, false, items);
}

int insight_alloc_idle_now_items(struct conn *c, const struct store_insight_filter *f,
                                 json_t *items)
{
    return alloc_idle_items(c, f, true, items);
}

/* Runs one item producer on a borrowed connection in one snapshot. */
int insight_run_items(struct store *st, json_t **items,
                      int (*fn)(struct conn *c, const void *arg, json_t *items), const void *arg)
{
    struct conn *c = db_conn_get(st);
    int rc = GI_INTERNAL;

    if ((*items = json_array()) != NULL) {
        db_read_begin(c);
        rc = fn(c, arg, *items);
        db_read_end(c);
    }
    if (rc != GI_OK) {
        json_decref(*items);
        *items = NULL;
    } else {
        strip_hidden(*items);
    }
    db_conn_put(st, c);
    return rc;
}

/* The producers insight_run_items() runs, one per public function. */
static int idle_fn(struct conn *c, const void *arg, json_t *items)
{
    const struct insight_arg *a = arg;
    return insight_idle_items(c, a->f, a->min_hours, items);
}

int store_insight_idle(struct store *st, const struct store_insight_filter *f, int64_t min_hours,
                       json_t **items)
{
    struct insight_arg a = {f, min_hours, 0};
    return insight_run_items(st, items, idle_fn, &a);
}

static int alloc_idle_fn(struct conn *c, const void *arg, json_t *items)
{
    return insight_alloc_idle_items(c, arg, items);
}

int store_insight_alloc_idle(struct store *st, const struct store_insight_filter *f, json_t **items)
{
    return insight_run_items(st, items, alloc_idle_fn, f);
}

/* ---- top consumers ---- */

/* One consumer of the TOP_CONSUMERS statement. */
static json_t *top_row(struct db_stmt *s)
{
    double gh = db_col_dbl(s, 3), busy = db_col_dbl(s, 4), measured = db_col_dbl(s, 7);

    return json_pack("{s:o, s:o, s:o, s:o, s:o, s:o, s:o, s:o, s:I, s:o, s:o, s:o}", "kind",
                     insight_col_text_json(s, 0), "consumer", insight_col_text_json(s, 1), "team",
                     insight_col_text_json(s, 2), "gpu_hours", insight_num(gh), "busy_gpu_hours",
                     insight_num(busy), "allocated_idle_gpu_hours", insight_num(db_col_dbl(s, 5)),
                     "busy_pct", gh > 0 ? insight_num(100.0 * busy / gh) : json_null(), "util_avg",
                     measured > 0 ? insight_num(db_col_dbl(s, 6) / measured) : json_null(), "gpus",
                     (json_int_t)db_col_int(s, 8), "first", insight_time_json(db_col_int(s, 12)),
                     "last", insight_time_json(db_col_int(s, 13)), "cost", col_cost(s, 9));
}

static int top_fn(struct conn *c, const void *arg, json_t *items)
{
    struct db_stmt *s;
    struct day_split d;
    int rc;

    if ((rc = rows_split(c, arg, &d)) != GI_OK)
        return rc;
    if ((s = prep(c, ST_TOP_CONSUMERS)) == NULL)
        return GI_INTERNAL;
    bind_rows(s, arg, &d);
    return insight_collect_rows(c, s, top_row, items);
}

int store_insight_top_consumers(struct store *st, const struct store_insight_filter *f,
                                json_t **items)
{
    return insight_run_items(st, items, top_fn, f);
}

/* ---- over-requesting workloads ---- */

/* One workload being gathered from its per-GPU rows. */
struct workload {
    json_t *o;                 /* the item */
    json_t *gpus, *idle;       /* borrowed from o */
    double idle_gh, idle_cost; /* NAN cost: no rate */
    double idle_hourly;        /* micros per hour of the idle GPUs */
    const char *currency;      /* borrowed from o */
    int64_t first, last;
};

/* A new workload item from the first of its rows. */
static json_t *workload_new(struct db_stmt *s)
{
    return json_pack("{s:o, s:o, s:I, s:o, s:o, s:o, s:[], s:[]}", "kind",
                     insight_col_text_json(s, 0), "workload", insight_col_text_json(s, 1),
                     "host_id", (json_int_t)db_col_int(s, 2), "host", insight_col_text_json(s, 3),
                     "team", insight_col_text_json(s, 4), "owner_team", insight_col_text_json(s, 5),
                     "gpus", "idle_gpus");
}

/* Adds this row's GPU to w: idle when its peak stayed below peak_below. */
static void workload_add(struct workload *w, struct db_stmt *s, double peak_below)
{
    double peak = insight_col_opt(s, 7), held_s = db_col_dbl(s, 8), cost = insight_col_opt(s, 10);
    const char *cur = db_col_text(s, 11);

    json_array_append_new(w->gpus, insight_col_text_json(s, 6));
    if (db_col_int(s, 12) < w->first || w->first == 0)
        w->first = db_col_int(s, 12);
    if (db_col_int(s, 13) > w->last)
        w->last = db_col_int(s, 13);
    if (isnan(peak) || peak >= peak_below)
        return;
    json_array_append_new(w->idle, insight_col_text_json(s, 6));
    w->idle_gh += db_col_dbl(s, 9);
    if (!isnan(cost) && cur) {
        if (w->currency == NULL) {
            json_object_set_new(w->o, "currency", json_string(cur));
            w->currency = json_string_value(json_object_get(w->o, "currency"));
        }
        w->idle_cost = (isnan(w->idle_cost) ? 0 : w->idle_cost) + cost;
        if (held_s > 0)
            w->idle_hourly += cost / (held_s / 3600);
    }
}

/* Finishes w into items when it over-requests (it uses some of its n >= 2
 * GPUs and leaves 1 <= k < n unused; one that uses none is allocated-idle
 * instead); frees it otherwise. */
static bool workload_end(struct workload *w, json_t *items)
{
    size_t n = json_array_size(w->gpus), k = json_array_size(w->idle);
    json_t *o = w->o;
    char cur[8] = "";

    w->o = NULL;
    if (o == NULL)
        return true;
    if (w->currency)
        gi_strlcpy(cur, w->currency, sizeof cur);
    if (n < 2 || k < 1 || k >= n) {
        json_decref(o);
        return true;
    }
    json_object_set_new(o, "n", json_integer((json_int_t)n));
    json_object_set_new(o, "k", json_integer((json_int_t)k));
    json_object_set_new(o, "idle_gpu_hours", insight_num(w->idle_gh));
    json_object_set_new(o, "idle_cost",
                        insight_cost_json(w->idle_cost, cur[0] ? cur : NULL, cur[0] ? cur : NULL));
    json_object_set_new(o, "first", insight_time_json(w->first));
    json_object_set_new(o, "last", insight_time_json(w->last));
    json_object_set_new(o, "_last", json_integer(w->last));
    json_object_del(o, "currency");
    if (!isnan(w->idle_cost) && cur[0]) {
        json_object_set_new(o, HOURLY, json_real(w->idle_hourly));
        json_object_set_new(o, "_currency", json_string(cur));
    }
    return json_array_append_new(items, o) == 0;
}

/* Larger idle cost first (no rate last), then more idle GPU-hours. */
static int workload_cmp(const void *a, const void *b)
{
    const json_t *x = *(json_t *const *)a, *y = *(json_t *const *)b;
    const char *ax = json_string_value(json_object_get(json_object_get(x, "idle_cost"), "amount"));
    const char *ay = json_string_value(json_object_get(json_object_get(y, "idle_cost"), "amount"));
    double cx = ax ? strtod(ax, NULL) : -1, cy = ay ? strtod(ay, NULL) : -1;
    double hx = json_real_value(json_object_get(x, "idle_gpu_hours"));
    double hy = json_real_value(json_object_get(y, "idle_gpu_hours"));

    if (cx != cy)
        return cx < cy ? 1 : -1;
    if (hx != hy)
        return hx < hy ? 1 : -1;
    return 0;
}

/* Sorts items by workload_cmp and keeps the first `limit`. */
int insight_sort_limit(json_t *items, int (*cmp)(const void *, const void *), int64_t limit)
{
    size_t n = json_array_size(items);
    json_t **v = n ? calloc(n, sizeof *v) : NULL;

    if (n == 0)
        return GI_OK;
    if (v == NULL)
        return GI_INTERNAL;
    for (size_t i = 0; i < n; i++)
        v[i] = json_incref(json_array_get(items, i));
    qsort(v, n, sizeof *v, cmp);
    json_array_clear(items);
    for (size_t i = 0; i < n; i++) {
        if ((int64_t)i < limit)
            json_array_append(items, v[i]);
        json_decref(v[i]);
    }
    free(v);
    return GI_OK;
}

/* Appends the over-requesting workloads to items, largest idle cost
 * first, at most f->limit (with the hidden members the savings read). */
int insight_overrequest_items(struct conn *c, const struct store_insight_filter *f,
                              double peak_below, json_t *items)
{
    struct db_stmt *s;
    struct workload w = {0};
    struct day_split d;
    char key[1024] = "", prev[1024] = "";
    int64_t rows = 0;
    int step, rc;

    if ((rc = rows_split(c, f, &d)) != GI_OK)
        return rc;
    if ((s = prep(c, ST_OVERREQUEST)) == NULL)
        return GI_INTERNAL;
    bind_rows(s, f, &d);
    while ((step = db_step(c, s)) == DB_ROW) {
        const char *kind = db_col_text(s, 0), *wl = db_col_text(s, 1);
        if (++rows > OVERREQUEST_MAX_ROWS) {
            rc = GI_TOO_LARGE;
            break;
        }
        snprintf(key, sizeof key, "%s\x1f%s\x1f%lld", kind ? kind : "", wl ? wl : "",
                 (long long)db_col_int(s, 2));
        if (w.o == NULL || strcmp(key, prev) != 0) {
            if (!workload_end(&w, items)) {
                rc = GI_INTERNAL;
                break;
            }
            memset(&w, 0, sizeof w);
            w.idle_cost = NAN;
            if ((w.o = workload_new(s)) == NULL) {
                rc = GI_INTERNAL;
                break;
            }
            w.gpus = json_object_get(w.o, "gpus");
            w.idle = json_object_get(w.o, "idle_gpus");
            gi_strlcpy(prev, key, sizeof prev);
        }
        workload_add(&w, s, peak_below);
    }
    db_reset(s);
    if (rc == GI_OK)
        rc = db_status(step);
    if (rc == GI_OK && !workload_end(&w, items))
        rc = GI_INTERNAL;
    json_decref(w.o);
    if (rc == GI_OK)
        rc = insight_sort_limit(items, workload_cmp, f->limit > 0 ? f->limit : 100);
    return rc;
}

/* Removes the members only the savings read. */
static void strip_workload(json_t *items)
{
    size_t i;
    json_t *o;

    json_array_foreach(items, i, o) {
        json_object_del(o, "_last");
        json_object_del(o, "_currency");
    }
}

static int overrequest_fn(struct conn *c, const void *arg, json_t *items)
{
    const struct insight_arg *a = arg;
    int rc = insight_overrequest_items(c, a->f, a->peak_below, items);

    strip_workload(items);
    return rc;
}

int store_insight_overrequest(struct store *st, const struct store_insight_filter *f,
                              double peak_below, json_t **items)
{
    struct insight_arg a = {f, 0, peak_below};
    return insight_run_items(st, items, overrequest_fn, &a);
}
