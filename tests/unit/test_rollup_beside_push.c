/* The usage:rollup job against ingest (src/store/usage.c), on each store:
 * while the job works off a long backlog of dirty GPU-hours, chunk by
 * chunk, a push is taken between two chunks (or beside them) instead of
 * waiting for the whole backlog; a late sample pushed meanwhile for an
 * hour the job has already read still counts; the backlog drains
 * completely and its group rows add up to the GPUs' own rows. */
#include "unit.h"
#include "testdb.h"

#include "core/observation.h"
#include "core/util.h"
#include "store/store.h"
#include "store/store_int.h"

#include <pthread.h>
#include <stdatomic.h>
#include <stdio.h>
#include <string.h>
#include <time.h>

/* The backlog: HOSTS hosts of 8 GPUs, each with HOURS hours of samples
 * every 5 minutes, every GPU-hour marked dirty, and missing since (so
 * that nothing after its last hour is owned). One hour of it is far more
 * than one chunk's work. */
#define HOSTS 32
#define HOURS 2

struct fixture {
    struct testdb db;
    struct store *st;
    int64_t source;
    int64_t from; /* the backlog's first hour */
    struct store_usage_run run;
    int rc;
    atomic_bool done;
};

static int setup(void **state)
{
    struct fixture *f = calloc(1, sizeof *f);

    if (f == NULL)
        return -1;
    gi_log_set_level(GI_LOG_WARN);
    if (test_store_open(&f->db, 4, &f->st) != 0) {
        free(f);
        return -1;
    }
    if (store_source_ensure(f->st, "agents", "push", "legacy", NULL, NULL, &f->source) != GI_OK) {
        store_close(f->st);
        testdb_remove(&f->db);
        free(f);
        return -1;
    }
    *state = f;
    return 0;
}

static int teardown(void **state)
{
    struct fixture *f = *state;

    store_close(f->st);
    testdb_remove(&f->db);
    free(f);
    return 0;
}

/* Runs one statement on the test database outside the store. */
static void exec_sql(struct fixture *f, const char *sql)
{
    if (f->db.name[0] != '\0') {
        if (testdb_psql(f->db.locator, sql, NULL, 0) != 0)
            fail_msg("psql failed on: %s", sql);
    } else {
        sqlite3 *db = NULL;
        if (sqlite3_open(f->db.locator, &db) != SQLITE_OK ||
            sqlite3_exec(db, sql, NULL, NULL, NULL) != SQLITE_OK)
            fail_msg("sqlite3 failed on %s: %s", sql, sqlite3_errmsg(db));
        sqlite3_close(db);
    }
}

static void execf(struct fixture *f, const char *fmt, ...) __attribute__((format(printf, 2, 3)));
static void execf(struct fixture *f, const char *fmt, ...)
{
    char sql[2048];
    va_list ap;

    va_start(ap, fmt);
    vsnprintf(sql, sizeof sql, fmt, ap);
    va_end(ap);
    exec_sql(f, sql);
}

static int64_t scalarf(struct fixture *f, const char *fmt, ...)
    __attribute__((format(printf, 2, 3)));
static int64_t scalarf(struct fixture *f, const char *fmt, ...)
{
    char sql[1024];
    va_list ap;

    va_start(ap, fmt);
    vsnprintf(sql, sizeof sql, fmt, ap);
    va_end(ap);
    return testdb_scalar(&f->db, sql);
}

/* Writes the backlog straight into the raw tables, marked as ingest
 * would mark it (under ids above those the push's rows will get). */
static void backlog(struct fixture *f)
{
    int64_t now = gi_now();

    f->from = now - now % 86400 - 2 * 86400;
    for (int h = 1; h <= HOSTS; h++) {
        execf(f,
              "INSERT INTO hosts (id, hostname, first_seen_at, last_seen_at) VALUES (%d, "
              "'node%d', 1, 1)",
              1000 + h, h);
        for (int i = 0; i < 8; i++)
            execf(f,
                  "INSERT INTO gpus (id, uuid, host_id, idx, model, team, first_seen_at, "
                  "last_seen_at, missing_since) VALUES (%d, 'GPU-%d-%d', %d, %d, 'NVIDIA A100', "
                  "'core', 1, 1, %lld)",
                  10000 + h * 8 + i, h, i, 1000 + h, i, (long long)f->from + HOURS * 3600);
    }
    execf(f,
          "INSERT INTO gpu_samples (ts, gpu_id, util_avg, power_avg_w, source_id) WITH RECURSIVE "
          "t(x) AS (SELECT 0 UNION ALL SELECT x + 1 FROM t WHERE x < %d) SELECT %lld + 300 * "
          "t.x, g.id, CAST(g.id %% 3 AS DOUBLE PRECISION) * 40, 100, %lld FROM t CROSS JOIN gpus "
          "g",
          HOURS * 12 - 1, (long long)f->from + 300, (long long)f->source);
    execf(f,
          "INSERT INTO usage_dirty (hour, gpu_id, marked_at) WITH RECURSIVE t(x) AS (SELECT 0 "
          "UNION ALL SELECT x + 1 FROM t WHERE x < %d) SELECT %lld + 3600 * t.x, g.id, 1 FROM t "
          "CROSS JOIN gpus g",
          HOURS - 1, (long long)f->from);
}

static void *rollup_thread(void *arg)
{
    struct fixture *f = arg;

    f->rc = store_usage_rollup(f->st, NULL, gi_now(), 0, &f->run);
    atomic_store(&f->done, true);
    return NULL;
}

/* Dirty GPU-hours of the backlog's hours [from, to) still waiting. */
static int64_t waiting_in(struct fixture *f, int64_t from, int64_t to)
{
    return scalarf(f, "SELECT COUNT(*) FROM usage_dirty WHERE hour >= %lld AND hour < %lld",
                   (long long)from, (long long)to);
}

static int64_t waiting(struct fixture *f) { return waiting_in(f, f->from, f->from + HOURS * 3600); }

/* A push of a new host with one GPU and one sample. */
static void push(struct fixture *f)
{
    struct gi_batch b;
    struct store_ingest_result res;
    struct gi_gpu_obs *g;

    memset(&b, 0, sizeof b);
    gi_strlcpy(b.batch_id, "beside-the-rollup", sizeof b.batch_id);
    gi_strlcpy(b.host.hostname, "pushed-meanwhile", sizeof b.host.hostname);
    g = gi_obs_add_gpu(&b.set);
    assert_non_null(g);
    gi_strlcpy(g->uuid, "GPU-pushed-0", sizeof g->uuid);
    g->index = 0;
    gi_strlcpy(g->name, "NVIDIA H100 80GB HBM3", sizeof g->name);
    b.samples = calloc(1, sizeof *b.samples);
    assert_non_null(b.samples);
    gi_sample_init(&b.samples[0]);
    b.samples[0].ts = gi_now() - 60;
    gi_strlcpy(b.samples[0].gpu_uuid, "GPU-pushed-0", sizeof b.samples[0].gpu_uuid);
    b.samples[0].util_avg = 50;
    b.nsamples = 1;
    assert_status(store_ingest(f->st, f->source, &b, &res), GI_OK);
    gi_batch_free(&b);
}

/* A late sample of a backlog GPU (host node32's last GPU, the last of the
 * oldest hour to be rolled up) 30 minutes into the oldest hour, at 99 %. */
static void push_late(struct fixture *f)
{
    struct gi_batch b;
    struct store_ingest_result res;
    struct gi_gpu_obs *g;

    memset(&b, 0, sizeof b);
    gi_strlcpy(b.batch_id, "late-for-the-backlog", sizeof b.batch_id);
    b.partial = true;
    gi_strlcpy(b.host.hostname, "node32", sizeof b.host.hostname);
    g = gi_obs_add_gpu(&b.set);
    assert_non_null(g);
    gi_strlcpy(g->uuid, "GPU-32-7", sizeof g->uuid);
    g->index = 7;
    gi_strlcpy(g->name, "NVIDIA A100", sizeof g->name);
    b.samples = calloc(1, sizeof *b.samples);
    assert_non_null(b.samples);
    gi_sample_init(&b.samples[0]);
    b.samples[0].ts = f->from + 1807;
    gi_strlcpy(b.samples[0].gpu_uuid, "GPU-32-7", sizeof b.samples[0].gpu_uuid);
    b.samples[0].util_avg = 99;
    b.samples[0].util_max = 99;
    b.nsamples = 1;
    assert_status(store_ingest(f->st, f->source, &b, &res), GI_OK);
    gi_batch_free(&b);
}

static void test_push_completes_while_backlog_drains(void **state)
{
    struct fixture *f = *state;
    int64_t total = (int64_t)HOSTS * 8 * HOURS, left_after_push;
    pthread_t th;

    backlog(f);
    assert_int_equal(waiting(f), total);
    assert_int_equal(pthread_create(&th, NULL, rollup_thread, f), 0);
    /* The job has begun: its first chunk has committed. */
    while (waiting(f) == total && !atomic_load(&f->done))
        nanosleep(&(struct timespec){.tv_sec = 0, .tv_nsec = 2000000}, NULL);
    push(f);
    left_after_push = waiting(f);
    push_late(f);
    assert_int_equal(pthread_join(th, NULL), 0);
    assert_status(f->rc, GI_OK);
    /* A run stops at its time budget: later runs finish what is left. */
    for (int i = 0; i < 20 && f->run.dirty_left > 0; i++) {
        struct store_usage_run more;
        assert_status(store_usage_rollup(f->st, NULL, gi_now(), 0, &more), GI_OK);
        f->run.hours += more.hours;
        f->run.chunks += more.chunks;
        f->run.dirty_left = more.dirty_left;
    }
    /* The push did not wait for the backlog (the GPUs of an hour are
     * worked a chunk at a time, and a push goes between two chunks or
     * beside them): when it returned, the run had more to do, and it went
     * on to finish everything. How much of the oldest hour was left is
     * not asserted: on PostgreSQL several threads work its chunks at once,
     * and they may finish it while the push waits for its turn. */
    assert_true(left_after_push > 0);
    assert_int_equal(waiting(f), 0);
    assert_true(f->run.hours >= total);
    assert_true(f->run.chunks > 1);
    /* Every GPU-hour rolled up; the pushed GPU's sample marked its hour. */
    assert_int_equal(scalarf(f,
                             "SELECT COUNT(*) FROM usage_hourly WHERE hour >= %lld AND hour < "
                             "%lld AND gpu_id >= 10000",
                             (long long)f->from, (long long)f->from + HOURS * 3600),
                     total);
    assert_true(scalarf(f, "SELECT COUNT(*) FROM usage_dirty d JOIN gpus g ON g.id = d.gpu_id "
                           "WHERE g.uuid = 'GPU-pushed-0'") +
                    scalarf(f, "SELECT COUNT(*) FROM usage_hourly u JOIN gpus g ON g.id = "
                               "u.gpu_id WHERE g.uuid = 'GPU-pushed-0'") >
                0);
    /* The late sample counts in its hour, though the run had read the
     * hour's samples before it came. */
    assert_true(scalarf(f,
                        "SELECT CAST(ROUND(util_max) AS BIGINT) FROM usage_hourly WHERE gpu_id "
                        "= %d AND hour = %lld",
                        10000 + 32 * 8 + 7, (long long)f->from) >= 99);
    /* The hour groups, summed once per hour after the chunks, add up to
     * the GPUs' rows of every hour. */
    assert_int_equal(scalarf(f, "SELECT COUNT(*) FROM usage_groups_dirty"), 0);
    assert_int_equal(scalarf(f,
                             "SELECT COUNT(*) FROM (SELECT hour, SUM(owned_s) AS s FROM "
                             "usage_hourly WHERE hour >= %lld AND hour < %lld GROUP BY hour) "
                             "a LEFT JOIN (SELECT hour, SUM(owned_s) AS s, SUM(gpus) AS n FROM "
                             "usage_groups_hourly GROUP BY hour) b ON b.hour = a.hour WHERE "
                             "b.s IS NULL OR ABS(a.s - b.s) > 0.5 OR b.n <> %d",
                             (long long)f->from, (long long)f->from + HOURS * 3600, HOSTS * 8),
                     0);
    assert_int_equal(scalarf(f,
                             "SELECT COUNT(*) FROM (SELECT day, SUM(owned_s) AS s FROM "
                             "usage_daily WHERE day >= %lld AND day < %lld GROUP BY day) a LEFT "
                             "JOIN (SELECT day, SUM(owned_s) AS s FROM usage_groups_daily GROUP "
                             "BY day) b ON b.day = a.day WHERE b.s IS NULL OR ABS(a.s - b.s) > "
                             "0.5",
                             (long long)f->from, (long long)f->from + 86400),
                     0);
}

int main(void)
{
    const struct CMUnitTest tests[] = {
        cmocka_unit_test_setup_teardown(test_push_completes_while_backlog_drains, setup, teardown),
    };
    return cmocka_run_group_tests(tests, NULL, NULL);
}
