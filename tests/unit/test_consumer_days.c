/* Unit tests for the daily per-consumer rollup (usage_consumers_daily,
 * kept by the usage:rollup job in src/store/usage.c), on each store: raw
 * samples, pod labels and processes are written straight into the raw
 * tables, the GPU-hours marked dirty as ingest would, the job run, and
 * the consumer days compared with the sums of the hourly consumer rows
 * and with figures worked out by hand, and the consumer-day spans
 * (usage_consumer_spans) and the consumer totals (usage_consumer_totals)
 * with the sums of the consumer days, also after late data, a GPU merge
 * and retention. */
#include "unit.h"
#include "testdb.h"

#include "core/util.h"
#include "store/store.h"
#include "store/store_int.h"

#include <stdio.h>
#include <string.h>

static void execf(struct testdb_fixture *f, const char *fmt, ...)
    __attribute__((format(printf, 2, 3)));
static void execf(struct testdb_fixture *f, const char *fmt, ...)
{
    char sql[2048];
    va_list ap;

    va_start(ap, fmt);
    vsnprintf(sql, sizeof sql, fmt, ap);
    va_end(ap);
    testdb_exec(f, sql);
}

/* An integer the database answers. */
static int64_t scalarf(struct testdb_fixture *f, const char *fmt, ...)
    __attribute__((format(printf, 2, 3)));
static int64_t scalarf(struct testdb_fixture *f, const char *fmt, ...)
{
    char sql[4096];
    va_list ap;

    va_start(ap, fmt);
    vsnprintf(sql, sizeof sql, fmt, ap);
    va_end(ap);
    return testdb_scalar(&f->db, sql);
}

/* 10:00 UTC two days ago: hours long closed, 14 hours left in the day. */
static int64_t t0(void)
{
    int64_t now = gi_now();
    return now - now % 86400 - 2 * 86400 + 10 * 3600;
}

static int64_t day_of(int64_t t) { return t - t % 86400; }

static void host(struct testdb_fixture *f, int64_t id, const char *name)
{
    execf(f,
          "INSERT INTO hosts (id, hostname, first_seen_at, last_seen_at) VALUES (%lld, '%s', 1, "
          "1)",
          (long long)id, name);
}

static void gpu(struct testdb_fixture *f, int64_t id, int64_t host_id, int idx)
{
    execf(f,
          "INSERT INTO gpus (id, uuid, host_id, idx, model, team, first_seen_at, last_seen_at) "
          "VALUES (%lld, 'GPU-%lld', %lld, %d, 'NVIDIA A100', 'core', 1, 1)",
          (long long)id, (long long)id, (long long)host_id, idx);
}

/* Samples of one GPU every minute over [from, to], in one statement per
 * at most 200 samples. */
static void samples(struct testdb_fixture *f, int64_t gid, int64_t from, int64_t to, double util)
{
    for (int64_t lo = from; lo <= to; lo += 200 * 60) {
        char sql[16384];
        size_t n = (size_t)snprintf(sql, sizeof sql,
                                    "INSERT INTO gpu_samples (ts, gpu_id, util_avg, power_avg_w, "
                                    "source_id) VALUES ");
        for (int64_t t = lo; t <= to && t < lo + 200 * 60; t += 60)
            n += (size_t)snprintf(sql + n, sizeof sql - n, "%s(%lld, %lld, %g, 100, 7)",
                                  t == lo ? "" : ", ", (long long)t, (long long)gid, util);
        testdb_exec(f, sql);
    }
}

/* Pod ns/pod/c labelled on GPU-gid at every sample of (from, to]. */
static void pod_seen(struct testdb_fixture *f, int64_t gid, const char *ns, const char *pod,
                     int64_t from, int64_t to)
{
    execf(f,
          "INSERT INTO gpu_pods (ts, gpu_uuid, namespace, pod, container) SELECT ts, 'GPU-%lld', "
          "'%s', '%s', 'c' FROM gpu_samples WHERE gpu_id = %lld AND ts > %lld AND ts <= %lld",
          (long long)gid, ns, pod, (long long)gid, (long long)from, (long long)to);
}

/* A process of `user` on GPU-gid at every sample of (from, to]. */
static void process_seen(struct testdb_fixture *f, int64_t gid, int pid, const char *user,
                         int64_t from, int64_t to)
{
    execf(f,
          "INSERT INTO gpu_processes (ts, gpu_uuid, pid, name, username) SELECT ts, 'GPU-%lld', "
          "%d, 'python', '%s' FROM gpu_samples WHERE gpu_id = %lld AND ts > %lld AND ts <= %lld",
          (long long)gid, pid, user, (long long)gid, (long long)from, (long long)to);
}

/* Marks GPU gid's hours holding [from, to] dirty, as ingest does. */
static void dirty(struct testdb_fixture *f, int64_t gid, int64_t from, int64_t to)
{
    for (int64_t h = from - from % 3600; h <= to; h += 3600)
        execf(f,
              "INSERT INTO usage_dirty (hour, gpu_id, marked_at) VALUES (%lld, %lld, 1) ON "
              "CONFLICT (hour, gpu_id) DO NOTHING",
              (long long)h, (long long)gid);
}

static void rollup(struct testdb_fixture *f)
{
    struct store_usage_run run;

    assert_status(store_usage_rollup(f->st, NULL, gi_now(), 0, &run), GI_OK);
    assert_int_equal(run.dirty_left, 0);
    assert_int_equal(run.redo_left, 0);
}

/* The consumer groups (GPU, day, kind, consumer, consumer team and the
 * hours' owner dimensions) whose hourly sums the daily rows do not
 * repeat, counted both ways; 0 when the two tables agree. */
#define HOURLY_GROUPS                                                                              \
    "SELECT u.gpu_id AS gpu_id, u.hour - u.hour %% 86400 AS day, u.kind AS kind, u.consumer AS "   \
    "consumer, COALESCE(u.team, '') AS ct, COALESCE(h.team, '') AS team, COALESCE(h.env, '') AS "  \
    "env, COALESCE(h.currency, '') AS cur, COUNT(*) AS n, SUM(u.allocated_s * h.fraction) AS a, "  \
    "SUM(u.busy_s * h.fraction) AS b, SUM(u.alloc_idle_s * h.fraction) AS i, SUM(u.util_sum * "    \
    "h.fraction) AS us, SUM(u.measured_s * h.fraction) AS m, SUM(u.allocated_s * h.fraction * "    \
    "h.rate_micros) AS cost, MIN(u.hour) AS fh, MAX(u.hour) AS lh, SUM(CASE WHEN u.busy_s = 0 "    \
    "AND u.alloc_idle_s > 0 THEN 1 ELSE 0 END) AS ih FROM usage_consumers u JOIN usage_hourly h "  \
    "ON h.gpu_id = u.gpu_id AND h.hour = u.hour GROUP BY u.gpu_id, u.hour - u.hour %% 86400, "     \
    "u.kind, u.consumer, COALESCE(u.team, ''), COALESCE(h.team, ''), COALESCE(h.env, ''), "        \
    "COALESCE(h.currency, '')"
#define DAILY_GROUPS                                                                               \
    "SELECT gpu_id, day, kind, consumer, COALESCE(consumer_team, '') AS ct, COALESCE(team, '') "   \
    "AS team, COALESCE(env, '') AS env, COALESCE(currency, '') AS cur, SUM(hours) AS n, "          \
    "SUM(allocated_s) AS a, SUM(busy_s) AS b, SUM(alloc_idle_s) AS i, SUM(util_sum) AS us, "       \
    "SUM(measured_s) AS m, SUM(allocated_cost) AS cost, MIN(first_hour) AS fh, MAX(last_hour) "    \
    "AS lh, SUM(idle_hours) AS ih FROM usage_consumers_daily GROUP BY gpu_id, day, kind, "         \
    "consumer, COALESCE(consumer_team, ''), COALESCE(team, ''), COALESCE(env, ''), "               \
    "COALESCE(currency, '')"
#define SAME_KEY                                                                                   \
    "y.gpu_id = x.gpu_id AND y.day = x.day AND y.kind = x.kind AND y.consumer = x.consumer AND "   \
    "y.ct = x.ct AND y.team = x.team AND y.env = x.env AND y.cur = x.cur"
#define DIFFERS                                                                                    \
    "y.gpu_id IS NULL OR x.n <> y.n OR ABS(x.a - y.a) > 0.001 OR ABS(x.b - y.b) > 0.001 OR "       \
    "ABS(x.i - y.i) > 0.001 OR ABS(x.us - y.us) > 0.01 OR ABS(x.m - y.m) > 0.001 OR "              \
    "ABS(COALESCE(x.cost, -1) - COALESCE(y.cost, -1)) > 1 OR x.fh <> y.fh OR x.lh <> y.lh OR "     \
    "x.ih <> y.ih"

/* The same for the spans: per span (length and start) and key, the sums
 * of the consumer days inside it and of the span rows. */
#define SPAN_LENS                                                                                  \
    "(SELECT 2 AS len UNION ALL SELECT 4 UNION ALL SELECT 8 UNION ALL SELECT 16 UNION ALL SELECT " \
    "32) l"
#define DAY_SPAN_GROUPS                                                                            \
    "SELECT l.len AS len, d.day - d.day %% (l.len * 86400) AS day, d.gpu_id AS gpu_id, d.kind AS " \
    "kind, d.consumer AS consumer, COALESCE(d.consumer_team, '') AS ct, COALESCE(d.team, '') AS "  \
    "team, SUM(d.hours) AS n, SUM(d.allocated_s) AS a, SUM(d.busy_s) AS b, SUM(d.alloc_idle_s) "   \
    "AS i, MIN(d.first_hour) AS fh, MAX(d.last_hour) AS lh, SUM(d.idle_hours) AS ih FROM "         \
    "usage_consumers_daily d CROSS JOIN " SPAN_LENS " GROUP BY l.len, d.day - d.day %% (l.len * "  \
    "86400), d.gpu_id, d.kind, d.consumer, COALESCE(d.consumer_team, ''), COALESCE(d.team, '')"
#define SPAN_GROUPS                                                                                \
    "SELECT len, day, gpu_id, kind, consumer, COALESCE(consumer_team, '') AS ct, COALESCE(team, "  \
    "'') AS team, SUM(hours) AS n, SUM(allocated_s) AS a, SUM(busy_s) AS b, SUM(alloc_idle_s) AS " \
    "i, MIN(first_hour) AS fh, MAX(last_hour) AS lh, SUM(idle_hours) AS ih FROM "                  \
    "usage_consumer_spans GROUP BY len, day, gpu_id, kind, consumer, COALESCE(consumer_team, "     \
    "''), COALESCE(team, '')"
#define SAME_SPAN                                                                                  \
    "y.len = x.len AND y.day = x.day AND y.gpu_id = x.gpu_id AND y.kind = x.kind AND y.consumer "  \
    "= x.consumer AND y.ct = x.ct AND y.team = x.team"
#define SPAN_DIFFERS                                                                               \
    "y.gpu_id IS NULL OR x.n <> y.n OR ABS(x.a - y.a) > 0.001 OR ABS(x.b - y.b) > 0.001 OR "       \
    "ABS(x.i - y.i) > 0.001 OR x.fh <> y.fh OR x.lh <> y.lh OR x.ih <> y.ih"

/* The same for the consumer totals: per day, consumer, block of 64 GPU
 * ids and the report's dimensions and currency, the sums of the consumer
 * days and the totals' row (one each). */
#define TOTAL_KEY(t)                                                                               \
    t "day AS day, " t "kind AS kind, " t "consumer AS consumer, COALESCE(" t "team, '') AS "      \
      "team, COALESCE(" t "env, '') AS env, COALESCE(" t "pool, '') AS pool, COALESCE(" t          \
      "cluster, '') AS cluster, COALESCE(" t "cloud, '') AS cloud, COALESCE(" t "model, '') AS "   \
      "model, COALESCE(" t "datacenter_id, -1) AS dc, COALESCE(" t "currency, '') AS cur"
#define DAY_TOTAL_SUMS                                                                             \
    ", d.gpu_id / 64 AS blk, COUNT(*) AS n, SUM(d.allocated_s) AS a, SUM(d.busy_s) AS b, "         \
    "SUM(d.alloc_idle_s) AS i, SUM(d.util_sum) AS us, SUM(d.measured_s) AS m, SUM(d.energy_wh) "   \
    "AS e, SUM(d.allocated_cost) AS cost, SUM(d.busy_cost) AS bcost, SUM(d.unpriced_s) AS up "     \
    "FROM usage_consumers_daily d GROUP BY d.day, d.kind, d.consumer, COALESCE(d.team, ''), "      \
    "COALESCE(d.env, ''), COALESCE(d.pool, ''), COALESCE(d.cluster, ''), COALESCE(d.cloud, ''), "  \
    "COALESCE(d.model, ''), COALESCE(d.datacenter_id, -1), COALESCE(d.currency, ''), "             \
    "d.gpu_id / 64"
#define DAY_TOTAL_GROUPS "SELECT " TOTAL_KEY("d.") DAY_TOTAL_SUMS
#define TOTAL_COLS                                                                                 \
    ", t.gpu_block AS blk, t.gpu_rows AS n, t.allocated_s AS a, t.busy_s AS b, t.alloc_idle_s "    \
    "AS i, t.util_sum AS us, t.measured_s AS m, t.energy_wh AS e, t.allocated_cost AS cost, "      \
    "t.busy_cost AS bcost, t.unpriced_s AS up FROM usage_consumer_totals t"
#define TOTAL_ROWS "SELECT " TOTAL_KEY("t.") TOTAL_COLS
#define SAME_TOTAL                                                                                 \
    "y.day = x.day AND y.kind = x.kind AND y.consumer = x.consumer AND y.team = x.team AND "       \
    "y.env = x.env AND y.pool = x.pool AND y.cluster = x.cluster AND y.cloud = x.cloud AND "       \
    "y.model = x.model AND y.dc = x.dc AND y.cur = x.cur AND y.blk = x.blk"
#define TOTAL_DIFFERS                                                                              \
    "y.day IS NULL OR x.n <> y.n OR ABS(x.a - y.a) > 0.001 OR ABS(x.b - y.b) > 0.001 OR "          \
    "ABS(x.i - y.i) > 0.001 OR ABS(x.us - y.us) > 0.01 OR ABS(x.m - y.m) > 0.001 OR "              \
    "ABS(x.e - y.e) > 0.001 OR ABS(COALESCE(x.cost, -1) - COALESCE(y.cost, -1)) > 1 OR "           \
    "ABS(COALESCE(x.bcost, -1) - COALESCE(y.bcost, -1)) > 1 OR ABS(x.up - y.up) > 0.001"

static void assert_totals_match_days(struct testdb_fixture *f)
{
    assert_int_equal(scalarf(f,
                             "SELECT COUNT(*) FROM (" DAY_TOTAL_GROUPS ") x LEFT JOIN (" TOTAL_ROWS
                             ") y ON " SAME_TOTAL " WHERE " TOTAL_DIFFERS),
                     0);
    /* ... and no total without its days, nor two for one key. */
    assert_int_equal(scalarf(f, "SELECT COUNT(*) FROM usage_consumer_totals"),
                     scalarf(f, "SELECT COUNT(*) FROM (" DAY_TOTAL_GROUPS ") x"));
}

/* A consumer's allocated seconds of one day in its totals, rounded (team
 * NULL: every team). */
static int64_t total_alloc(struct testdb_fixture *f, int64_t day, const char *consumer,
                           const char *team)
{
    return scalarf(f,
                   "SELECT CAST(ROUND(COALESCE(SUM(allocated_s), 0)) AS BIGINT) FROM "
                   "usage_consumer_totals WHERE day = %lld AND consumer = '%s' AND (team = '%s' "
                   "OR %d = 1)",
                   (long long)day, consumer, team ? team : "", team ? 0 : 1);
}

static void assert_spans_match_days(struct testdb_fixture *f)
{
    assert_int_equal(scalarf(f,
                             "SELECT COUNT(*) FROM (" DAY_SPAN_GROUPS ") x LEFT JOIN (" SPAN_GROUPS
                             ") y ON " SAME_SPAN " WHERE " SPAN_DIFFERS),
                     0);
    /* ... and no span without its days. */
    assert_int_equal(scalarf(f, "SELECT COUNT(*) FROM (" SPAN_GROUPS ") x"),
                     scalarf(f, "SELECT COUNT(*) FROM (" DAY_SPAN_GROUPS ") x"));
}

static void assert_days_match_hours(struct testdb_fixture *f)
{
    int64_t hourly = scalarf(f, "SELECT COUNT(*) FROM (" HOURLY_GROUPS ") x");

    assert_true(hourly > 0);
    assert_int_equal(scalarf(f,
                             "SELECT COUNT(*) FROM (" HOURLY_GROUPS ") x LEFT JOIN (" DAILY_GROUPS
                             ") y ON " SAME_KEY " WHERE " DIFFERS),
                     0);
    /* ... and no daily row without its hours. */
    assert_int_equal(scalarf(f, "SELECT COUNT(*) FROM (" DAILY_GROUPS ") x"), hourly);
    assert_spans_match_days(f);
    assert_totals_match_days(f);
}

/* Allocated seconds of one consumer on one GPU and day, rounded. */
static int64_t day_alloc(struct testdb_fixture *f, int64_t gid, int64_t day, const char *consumer)
{
    return scalarf(f,
                   "SELECT CAST(ROUND(COALESCE(SUM(allocated_s), 0)) AS BIGINT) FROM "
                   "usage_consumers_daily WHERE gpu_id = %lld AND day = %lld AND consumer = '%s'",
                   (long long)gid, (long long)day, consumer);
}

/* A pod on 2 GPUs for 90 minutes is 3 GPU-hours: 1.5 on each, over two
 * hours, one row per GPU and day. */
static void test_pod_on_two_gpus(void **state)
{
    struct testdb_fixture *f = *state;
    int64_t h = t0(), d = day_of(h);

    host(f, 1, "n1");
    gpu(f, 1, 1, 0);
    gpu(f, 2, 1, 1);
    for (int64_t g = 1; g <= 2; g++) {
        samples(f, g, h, h + 7200, g == 1 ? 60 : 0);
        pod_seen(f, g, "ml", "train", h, h + 5400);
        dirty(f, g, h, h + 7200);
    }
    rollup(f);
    assert_days_match_hours(f);
    assert_int_equal(day_alloc(f, 1, d, "ml/train/c"), 5400);
    assert_int_equal(day_alloc(f, 2, d, "ml/train/c"), 5400);
    assert_int_equal(scalarf(f, "SELECT CAST(ROUND(SUM(allocated_s)) AS BIGINT) FROM "
                                "usage_consumers_daily WHERE consumer = 'ml/train/c'"),
                     3 * 3600);
    /* One total for the pod's day, over both GPUs. */
    assert_int_equal(total_alloc(f, d, "ml/train/c", NULL), 3 * 3600);
    assert_int_equal(scalarf(f, "SELECT gpu_rows * 10 + COUNT(*) FROM usage_consumer_totals "
                                "WHERE consumer = 'ml/train/c' GROUP BY gpu_rows"),
                     21);
    assert_int_equal(scalarf(f,
                             "SELECT COUNT(*) FROM usage_consumers_daily WHERE consumer = "
                             "'ml/train/c' AND hours = 2 AND first_hour = %lld AND last_hour = "
                             "%lld AND namespace = 'ml' AND pod = 'train' AND team = 'core'",
                             (long long)h, (long long)(h + 3600)),
                     2);
    /* GPU 1 is busy (60 %), GPU 2 held idle: its first hour is wholly
     * allocated-idle, the second only half allocated (idle_hours 2: both
     * had no busy second and some allocated-idle ones). */
    assert_int_equal(scalarf(f, "SELECT CAST(ROUND(busy_s) AS BIGINT) FROM usage_consumers_daily "
                                "WHERE gpu_id = 1"),
                     5400);
    assert_int_equal(scalarf(f, "SELECT CAST(ROUND(alloc_idle_s) AS BIGINT) * 10 + idle_hours FROM "
                                "usage_consumers_daily WHERE gpu_id = 2"),
                     54000 + 2);
    assert_int_equal(scalarf(f, "SELECT COUNT(*) FROM usage_consumers_daily WHERE gpu_id = 2 AND "
                                "first_idle_hour = first_hour"),
                     1);
}

/* A pod on GPUs 63 and 64 has a total in each of their blocks of 64 GPU
 * ids; late data on GPU 64 sums its block again and leaves the other's. */
static void test_pod_across_blocks(void **state)
{
    struct testdb_fixture *f = *state;
    int64_t h = t0(), d = day_of(h);

    host(f, 1, "n1");
    gpu(f, 63, 1, 0);
    gpu(f, 64, 1, 1);
    for (int64_t g = 63; g <= 64; g++) {
        samples(f, g, h, h + 3600, 50);
        pod_seen(f, g, "ml", "wide", h, h + 3600);
        dirty(f, g, h, h + 3600);
    }
    rollup(f);
    assert_days_match_hours(f);
    assert_int_equal(total_alloc(f, d, "ml/wide/c", NULL), 2 * 3600);
    assert_int_equal(scalarf(f, "SELECT COUNT(*) FROM usage_consumer_totals WHERE consumer = "
                                "'ml/wide/c' AND gpu_rows = 1 AND gpu_block IN (0, 1)"),
                     2);
    samples(f, 64, h + 3 * 3600, h + 4 * 3600, 50);
    pod_seen(f, 64, "ml", "wide", h + 3 * 3600, h + 4 * 3600);
    dirty(f, 64, h + 3 * 3600, h + 4 * 3600);
    rollup(f);
    assert_days_match_hours(f);
    assert_int_equal(total_alloc(f, d, "ml/wide/c", NULL), 3 * 3600);
    assert_int_equal(scalarf(f, "SELECT CAST(ROUND(allocated_s) AS BIGINT) FROM "
                                "usage_consumer_totals WHERE consumer = 'ml/wide/c' AND "
                                "gpu_block = 0"),
                     3600);
}

/* Two users' processes on one GPU at once share its seconds: two rows
 * of half the GPU's allocated time each. */
static void test_two_consumers_share_a_gpu(void **state)
{
    struct testdb_fixture *f = *state;
    int64_t h = t0(), d = day_of(h);

    host(f, 1, "n1");
    gpu(f, 3, 1, 0);
    samples(f, 3, h, h + 7200, 30);
    process_seen(f, 3, 11, "bob", h, h + 7200);
    process_seen(f, 3, 12, "carol", h, h + 7200);
    dirty(f, 3, h, h + 7200);
    rollup(f);
    assert_days_match_hours(f);
    assert_int_equal(day_alloc(f, 3, d, "bob/python"), 3600);
    assert_int_equal(day_alloc(f, 3, d, "carol/python"), 3600);
    assert_int_equal(scalarf(f,
                             "SELECT CAST(ROUND(allocated_s) AS BIGINT) FROM usage_daily WHERE "
                             "gpu_id = 3 AND day = %lld",
                             (long long)d),
                     7200);
    assert_int_equal(scalarf(f, "SELECT COUNT(*) FROM usage_consumers_daily WHERE gpu_id = 3 AND "
                                "kind = 'process' AND username IN ('bob', 'carol')"),
                     2);
}

/* Late data: a batch for an hour already rolled up, and one for a later
 * hour of the same day, correct the day's consumer rows. */
static void test_late_data(void **state)
{
    struct testdb_fixture *f = *state;
    int64_t h = t0(), d = day_of(h);

    host(f, 1, "n1");
    gpu(f, 4, 1, 0);
    samples(f, 4, h, h + 1800, 50);
    pod_seen(f, 4, "ml", "late", h, h + 1800);
    dirty(f, 4, h, h + 1800);
    rollup(f);
    assert_int_equal(day_alloc(f, 4, d, "ml/late/c"), 1800);
    assert_int_equal(total_alloc(f, d, "ml/late/c", NULL), 1800);
    /* The rest of the hour and two hours of the afternoon arrive late. */
    samples(f, 4, h + 1860, h + 3600, 50);
    pod_seen(f, 4, "ml", "late", h + 1800, h + 3600);
    samples(f, 4, h + 4 * 3600, h + 6 * 3600, 50);
    pod_seen(f, 4, "ml", "late", h + 4 * 3600, h + 6 * 3600);
    dirty(f, 4, h, h + 6 * 3600);
    rollup(f);
    assert_days_match_hours(f);
    assert_int_equal(day_alloc(f, 4, d, "ml/late/c"), 3600 + 2 * 3600);
    assert_int_equal(total_alloc(f, d, "ml/late/c", NULL), 3600 + 2 * 3600);
    assert_int_equal(scalarf(f,
                             "SELECT COUNT(*) FROM usage_consumers_daily WHERE gpu_id = 4 AND "
                             "last_hour = %lld",
                             (long long)(h + 5 * 3600)),
                     1);
}

/* An owner change effective mid-day splits the GPU's day: the hours
 * before it stay with the old team, those from it on go to the new one,
 * and the prices re-applied afterwards reach the rows' cost. */
static void test_owner_change_mid_day(void **state)
{
    struct testdb_fixture *f = *state;
    int64_t h = t0(), d = day_of(h);

    host(f, 1, "n1");
    gpu(f, 5, 1, 0);
    samples(f, 5, h, h + 4 * 3600, 50);
    pod_seen(f, 5, "ml", "long", h, h + 4 * 3600);
    dirty(f, 5, h, h + 4 * 3600);
    rollup(f);
    assert_int_equal(scalarf(f, "SELECT COUNT(*) FROM usage_consumers_daily WHERE gpu_id = 5"), 1);
    testdb_exec(f, "DELETE FROM gpu_samples"); /* as after retention: only the rollups remain */
    {
        struct store_dim team = {.name = "vision"};
        struct store_owner_set set = {
            .team = "vision", .has_team = true, .effective_from = h + 2 * 3600};
        struct store_owner_err err;
        json_t *out = NULL;

        assert_status(store_dim_create(f->st, "test", "team", &team, &out), GI_OK);
        json_decref(out);
        out = NULL;
        assert_status(store_owner_assign(f->st, "test", STORE_OWNER_GPU, "GPU-5", &set, &out, &err),
                      GI_OK);
        json_decref(out);
    }
    rollup(f);
    assert_days_match_hours(f);
    assert_int_equal(scalarf(f,
                             "SELECT CAST(ROUND(allocated_s) AS BIGINT) FROM "
                             "usage_consumers_daily WHERE gpu_id = 5 AND day = %lld AND team = "
                             "'core' AND first_hour = %lld AND last_hour = %lld",
                             (long long)d, (long long)h, (long long)(h + 3600)),
                     7200);
    assert_int_equal(scalarf(f,
                             "SELECT CAST(ROUND(allocated_s) AS BIGINT) FROM "
                             "usage_consumers_daily WHERE gpu_id = 5 AND day = %lld AND team = "
                             "'vision' AND first_hour = %lld AND last_hour = %lld",
                             (long long)d, (long long)(h + 2 * 3600), (long long)(h + 3 * 3600)),
                     7200);
    /* The owner change splits the consumer's total of the day by team. */
    assert_int_equal(total_alloc(f, d, "ml/long/c", "core"), 7200);
    assert_int_equal(total_alloc(f, d, "ml/long/c", "vision"), 7200);
    /* A rate from h + 3h on, re-applied to the stored hours: one of the
     * hours is priced ($2.00/h, 3600 s x 2,000,000 micros). */
    {
        struct store_price p = {.kind = "hourly",
                                .model = "NVIDIA A100",
                                .currency = "USD",
                                .micros = 2000000,
                                .effective_from = h + 3 * 3600};
        json_t *out = NULL;

        assert_status(store_price_create(f->st, "test", &p, &out), GI_OK);
        json_decref(out);
    }
    rollup(f);
    assert_days_match_hours(f);
    assert_int_equal(scalarf(f, "SELECT CAST(ROUND(SUM(allocated_cost) / 1e6) AS BIGINT) FROM "
                                "usage_consumers_daily WHERE gpu_id = 5"),
                     7200);
}

/* A GPU merged into another: the day only `from` had moves whole, the
 * hour only it had moves into `to`'s day; `from` keeps no span, and
 * `to`'s spans are the sums of its consumer days, moved ones included. */
static void test_merge_keeps_spans(void **state)
{
    struct testdb_fixture *f = *state;
    int64_t h = t0(), d = day_of(h), old = h - 3 * 86400;
    int64_t both, moved;
    struct conn *c;
    int rc;

    host(f, 1, "n1");
    gpu(f, 7, 1, 0);
    gpu(f, 8, 1, 1);
    samples(f, 7, old, old + 3600, 50);
    pod_seen(f, 7, "ml", "m", old, old + 3600);
    dirty(f, 7, old, old + 3600);
    samples(f, 7, h, h + 3600, 50);
    pod_seen(f, 7, "ml", "m", h, h + 3600);
    dirty(f, 7, h, h + 3600);
    samples(f, 8, h + 2 * 3600, h + 3 * 3600, 50);
    pod_seen(f, 8, "ml", "n", h + 2 * 3600, h + 3 * 3600);
    dirty(f, 8, h + 2 * 3600, h + 3 * 3600);
    rollup(f);
    assert_days_match_hours(f);
    assert_true(scalarf(f, "SELECT COUNT(*) FROM usage_consumer_spans WHERE gpu_id = 7") > 0);
    /* The two GPUs' consumer seconds (no hour held by both), and those of
     * the old day, which only GPU 7 has. */
    both = scalarf(f, "SELECT CAST(ROUND(SUM(allocated_s)) AS BIGINT) FROM usage_consumers_daily");
    moved = day_alloc(f, 7, day_of(old), "ml/m/c");
    assert_true(moved >= 3600);

    c = db_conn_get(f->st);
    assert_status(db_tx_begin(c), GI_OK);
    rc = usage_merge_gpu(c, 7, 8, gi_now());
    assert_status(db_tx_end(c, rc), GI_OK);
    db_conn_put(f->st, c);

    assert_spans_match_days(f);
    assert_totals_match_days(f);
    assert_int_equal(total_alloc(f, day_of(old), "ml/m/c", NULL), moved);
    assert_int_equal(scalarf(f, "SELECT CAST(ROUND(SUM(allocated_s)) AS BIGINT) FROM "
                                "usage_consumer_totals"),
                     both);
    assert_int_equal(scalarf(f, "SELECT COUNT(*) FROM usage_consumer_spans WHERE gpu_id = 7"), 0);
    /* The 32-day spans of GPU 8 hold both GPUs' hours. */
    assert_int_equal(scalarf(f, "SELECT CAST(ROUND(SUM(allocated_s)) AS BIGINT) FROM "
                                "usage_consumer_spans WHERE gpu_id = 8 AND len = 32"),
                     both);
    assert_int_equal(scalarf(f,
                             "SELECT CAST(ROUND(SUM(allocated_s)) AS BIGINT) FROM "
                             "usage_consumer_spans WHERE gpu_id = 8 AND len = 2 AND consumer = "
                             "'ml/m/c' AND day = %lld",
                             (long long)(day_of(old) - day_of(old) % (2 * 86400))),
                     moved);
    assert_true(day_alloc(f, 8, d, "ml/m/c") >= 3600);
}

/* A GPU merged into another that held the same pod in the same hour:
 * `to`'s hour stays and `from`'s goes, so the pod's total of that day
 * loses `from`'s share; the day only `from` had moves whole and keeps its
 * total. */
static void test_merge_drops_totals(void **state)
{
    struct testdb_fixture *f = *state;
    int64_t h = t0(), d = day_of(h), old = h - 3 * 86400;
    struct conn *c;
    int rc;

    host(f, 1, "n1");
    gpu(f, 7, 1, 0);
    gpu(f, 8, 1, 1);
    for (int64_t g = 7; g <= 8; g++) {
        samples(f, g, h, h + 3600, 50);
        pod_seen(f, g, "ml", "both", h, h + 3600);
        dirty(f, g, h, h + 3600);
    }
    samples(f, 7, old, old + 3600, 50);
    pod_seen(f, 7, "ml", "both", old, old + 3600);
    dirty(f, 7, old, old + 3600);
    rollup(f);
    assert_days_match_hours(f);
    assert_int_equal(total_alloc(f, d, "ml/both/c", NULL), 2 * 3600);
    assert_int_equal(total_alloc(f, day_of(old), "ml/both/c", NULL), 3600);
    assert_int_equal(scalarf(f, "SELECT MAX(gpu_rows) FROM usage_consumer_totals WHERE day = %lld",
                             (long long)d),
                     2);

    c = db_conn_get(f->st);
    assert_status(db_tx_begin(c), GI_OK);
    rc = usage_merge_gpu(c, 7, 8, gi_now());
    assert_status(db_tx_end(c, rc), GI_OK);
    db_conn_put(f->st, c);

    assert_totals_match_days(f);
    assert_int_equal(total_alloc(f, d, "ml/both/c", NULL), 3600);
    assert_int_equal(total_alloc(f, day_of(old), "ml/both/c", NULL), 3600);
    /* ... from one GPU's consumer days now, where two held it before. */
    assert_int_equal(scalarf(f, "SELECT MAX(gpu_rows) FROM usage_consumer_totals WHERE day = %lld",
                             (long long)d),
                     1);
}

/* Retention drops the consumer days older than its cut and their totals
 * with them; the days kept keep theirs. */
static void test_retention_drops_totals(void **state)
{
    struct testdb_fixture *f = *state;
    int64_t h = t0(), d = day_of(h), old = h - 3 * 86400;
    struct store_usage_config saved, cfg;

    host(f, 1, "n1");
    gpu(f, 9, 1, 0);
    samples(f, 9, old, old + 3600, 50);
    pod_seen(f, 9, "ml", "kept", old, old + 3600);
    samples(f, 9, h, h + 7200, 50);
    pod_seen(f, 9, "ml", "kept", h, h + 7200);
    dirty(f, 9, old, old + 3600);
    dirty(f, 9, h, h + 7200);
    rollup(f);
    assert_days_match_hours(f);
    assert_int_equal(total_alloc(f, day_of(old), "ml/kept/c", NULL), 3600);
    assert_int_equal(total_alloc(f, d, "ml/kept/c", NULL), 7200);

    store_usage_config_get(&saved);
    cfg = saved;
    cfg.retain_daily_days = 3; /* the cut falls between the two days */
    store_usage_configure(&cfg);
    rollup(f);
    store_usage_configure(&saved);
    assert_int_equal(scalarf(f, "SELECT COUNT(*) FROM usage_consumers_daily WHERE day = %lld",
                             (long long)day_of(old)),
                     0);
    assert_totals_match_days(f);
    assert_int_equal(total_alloc(f, day_of(old), "ml/kept/c", NULL), 0);
    assert_int_equal(total_alloc(f, d, "ml/kept/c", NULL), 7200);
}

int main(void)
{
    const struct CMUnitTest tests[] = {
        cmocka_unit_test_setup_teardown(test_pod_on_two_gpus, testdb_setup, testdb_teardown),
        cmocka_unit_test_setup_teardown(test_pod_across_blocks, testdb_setup, testdb_teardown),
        cmocka_unit_test_setup_teardown(test_two_consumers_share_a_gpu, testdb_setup,
                                        testdb_teardown),
        cmocka_unit_test_setup_teardown(test_late_data, testdb_setup, testdb_teardown),
        cmocka_unit_test_setup_teardown(test_owner_change_mid_day, testdb_setup, testdb_teardown),
        cmocka_unit_test_setup_teardown(test_merge_keeps_spans, testdb_setup, testdb_teardown),
        cmocka_unit_test_setup_teardown(test_merge_drops_totals, testdb_setup, testdb_teardown),
        cmocka_unit_test_setup_teardown(test_retention_drops_totals, testdb_setup, testdb_teardown),
    };
    return cmocka_run_group_tests(tests, NULL, NULL);
}
