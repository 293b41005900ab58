/* The usage:rollup job over many GPUs of one hour (src/store/usage.c), on
 * each store: on PostgreSQL a pass's chunks are worked by several threads
 * at once, on SQLite one after the other; either way every GPU-hour comes
 * out as computed by hand, each exactly once, and the day and group rows
 * add up to them, also when two runs (the scheduled job and one on demand)
 * work the same backlog at the same time. */
#include "unit.h"
#include "testdb.h"

#include "core/util.h"
#include "store/store.h"
#include "store/store_int.h"

#include <pthread.h>
#include <stdio.h>
#include <string.h>

/* 25 hosts of 8 GPUs: 200 GPU-hours, more than three runs of 64. */
#define HOSTS 25
#define GPUS (HOSTS * 8)

struct fixture {
    struct testdb_fixture t;
    int64_t source;
    int64_t hour; /* the hour pushed */
};

static int setup(void **state)
{
    struct fixture *f = calloc(1, sizeof *f);

    if (f == NULL)
        return -1;
    gi_log_set_level(GI_LOG_WARN);
    /* Connections for the crew and a second run beside it. */
    if (test_store_open(&f->t.db, 6, &f->t.st) != 0) {
        free(f);
        return -1;
    }
    if (store_source_ensure(f->t.st, "agents", "push", "legacy", NULL, NULL, &f->source) != GI_OK) {
        store_close(f->t.st);
        testdb_remove(&f->t.db);
        free(f);
        return -1;
    }
    *state = f;
    return 0;
}

static int teardown(void **state)
{
    struct fixture *f = *state;

    store_close(f->t.st);
    testdb_remove(&f->t.db);
    free(f);
    return 0;
}

static void execf(struct fixture *f, const char *fmt, ...) __attribute__((format(printf, 2, 3)));
static void execf(struct fixture *f, const char *fmt, ...)
{
    char sql[2048];
    va_list ap;

    va_start(ap, fmt);
    vsnprintf(sql, sizeof sql, fmt, ap);
    va_end(ap);
    testdb_exec(&f->t, sql);
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
    return testdb_scalar(&f->t.db, sql);
}

/* The backlog, written as ingest would leave it: GPUS GPUs of team core,
 * each with a sample every 5 minutes from 5 minutes into the hour to its
 * end (12 samples) at a utilization of 0, 40 or 80 % (its id modulo 3
 * times 40), missing from the hour's end on, and its hour marked dirty.
 * By hand: owned from the first reading, 3,300 s; each sample covers the
 * 300 s before it, so all 3,300 s are measured; the GPUs at 0 % are idle
 * for 3,300 s, the others busy (with no known consumer: "unknown") for
 * 3,300 s; nothing is unknown. */
static void backlog(struct fixture *f)
{
    int64_t now = gi_now();

    f->hour = now - now % 86400 - 86400 + 5 * 3600;
    for (int h = 1; h <= HOSTS; h++) {
        execf(f,
              "INSERT INTO hosts (id, hostname, first_seen_at, last_seen_at) VALUES (%d, "
              "'crew%d', 1, 1)",
              1000 + h, h);
        execf(f,
              "INSERT INTO gpus (id, uuid, host_id, idx, model, team, first_seen_at, "
              "last_seen_at, missing_since) SELECT %d + x, 'GPU-crew-%d-' || x, %d, x, "
              "'NVIDIA A100', 'core', 1, 1, %lld FROM (SELECT 0 AS x UNION ALL SELECT 1 UNION "
              "ALL SELECT 2 UNION ALL SELECT 3 UNION ALL SELECT 4 UNION ALL SELECT 5 UNION ALL "
              "SELECT 6 UNION ALL SELECT 7) k",
              10000 + h * 8, h, 1000 + h, (long long)f->hour + 3600);
    }
    execf(f,
          "INSERT INTO gpu_samples (ts, gpu_id, util_avg, source_id) WITH RECURSIVE t(x) AS "
          "(SELECT 1 UNION ALL SELECT x + 1 FROM t WHERE x < 12) SELECT %lld + 300 * t.x, g.id, "
          "CAST(g.id %% 3 AS DOUBLE PRECISION) * 40, %lld FROM t CROSS JOIN gpus g",
          (long long)f->hour, (long long)f->source);
    execf(f, "INSERT INTO usage_dirty (hour, gpu_id, marked_at) SELECT %lld, id, 1 FROM gpus",
          (long long)f->hour);
}

/* GPUs at 0 % (ids 10008..10207 divisible by 3). */
static int64_t idle_gpus(void)
{
    int64_t n = 0;

    for (int id = 10008; id < 10008 + GPUS; id++)
        n += id % 3 == 0;
    return n;
}

/* Every GPU-hour, day and group row as computed by hand (see backlog). */
static void check_rows(struct fixture *f)
{
    long long H = (long long)f->hour, D = H - H % 86400;
    int64_t idle = idle_gpus();

    assert_int_equal(scalarf(f, "SELECT COUNT(*) FROM usage_dirty"), 0);
    assert_int_equal(scalarf(f, "SELECT COUNT(*) FROM usage_groups_dirty"), 0);
    assert_int_equal(scalarf(f, "SELECT COUNT(*) FROM usage_hourly"), GPUS);
    /* Each GPU-hour once, and each exactly as by hand. */
    assert_int_equal(scalarf(f,
                             "SELECT COUNT(*) FROM usage_hourly WHERE hour = %lld AND owned_s = "
                             "3300 AND measured_s = 3300 AND unknown_s = 0 AND ((gpu_id %% 3 = "
                             "0 AND idle_s = 3300 AND busy_s = 0 AND allocated_s = 0 AND "
                             "util_sum = 0) OR (gpu_id %% 3 <> 0 AND busy_s = 3300 AND "
                             "allocated_s = 3300 AND idle_s = 0 AND ABS(util_sum - 3300 * 40 * "
                             "(gpu_id %% 3)) < 0.5))",
                             H),
                     GPUS);
    assert_int_equal(scalarf(f,
                             "SELECT COUNT(*) FROM usage_consumers WHERE hour = %lld AND kind = "
                             "'unknown' AND allocated_s = 3300 AND busy_s = 3300",
                             H),
                     GPUS - idle);
    /* Their days: one row each, the hour's sums. */
    assert_int_equal(scalarf(f,
                             "SELECT COUNT(*) FROM usage_daily WHERE day = %lld AND owned_s = "
                             "3300 AND (busy_s = 3300 OR idle_s = 3300)",
                             D),
                     GPUS);
    assert_int_equal(scalarf(f, "SELECT COUNT(*) FROM usage_consumers_daily WHERE day = %lld", D),
                     GPUS - idle);
    /* The groups: one row for the hour and one for the day, over all. */
    assert_int_equal(scalarf(f,
                             "SELECT COUNT(*) FROM usage_groups_hourly WHERE hour = %lld AND "
                             "team = 'core' AND gpus = %d AND owned_s = %d AND busy_s = %lld AND "
                             "idle_s = %lld",
                             H, GPUS, GPUS * 3300, (long long)(GPUS - idle) * 3300,
                             (long long)idle * 3300),
                     1);
    assert_int_equal(scalarf(f, "SELECT COUNT(*) FROM usage_groups_hourly"), 1);
    assert_int_equal(scalarf(f,
                             "SELECT COUNT(*) FROM usage_groups_daily WHERE day = %lld AND team "
                             "= 'core' AND gpus = %d AND owned_s = %d AND busy_s = %lld",
                             D, GPUS, GPUS * 3300, (long long)(GPUS - idle) * 3300),
                     1);
    assert_int_equal(scalarf(f,
                             "SELECT COUNT(*) FROM usage_team_hours WHERE hour = %lld AND team = "
                             "'core' AND gpus = %d AND owned_s = %d",
                             H, GPUS, GPUS * 3300),
                     1);
}

static void test_many_gpus_of_one_hour(void **state)
{
    struct fixture *f = *state;
    struct store_usage_run run;

    backlog(f);
    assert_status(store_usage_rollup(f->t.st, NULL, gi_now(), 0, &run), GI_OK);
    for (int i = 0; i < 20 && (run.dirty_left > 0 || run.groups_left > 0); i++)
        assert_status(store_usage_rollup(f->t.st, NULL, gi_now(), 0, &run), GI_OK);
    check_rows(f);
}

struct run_arg {
    struct store *st;
    struct store_usage_run run;
    int rc;
};

static void *run_thread(void *p)
{
    struct run_arg *a = p;

    a->rc = store_usage_rollup(a->st, NULL, gi_now(), 0, &a->run);
    return NULL;
}

static void test_two_runs_at_once(void **state)
{
    struct fixture *f = *state;
    struct run_arg a = {.st = f->t.st}, b = {.st = f->t.st};
    struct store_usage_run run;
    pthread_t ta, tb;

    backlog(f);
    assert_int_equal(pthread_create(&ta, NULL, run_thread, &a), 0);
    assert_int_equal(pthread_create(&tb, NULL, run_thread, &b), 0);
    assert_int_equal(pthread_join(ta, NULL), 0);
    assert_int_equal(pthread_join(tb, NULL), 0);
    assert_status(a.rc, GI_OK);
    assert_status(b.rc, GI_OK);
    /* Between them they did every GPU-hour (one may redo what the other
     * did: the rows are replaced, never added twice). */
    assert_true(a.run.hours + b.run.hours >= GPUS);
    run = b.run;
    for (int i = 0; i < 20 && (run.dirty_left > 0 || run.groups_left > 0); i++)
        assert_status(store_usage_rollup(f->t.st, NULL, gi_now(), 0, &run), GI_OK);
    check_rows(f);
}

int main(void)
{
    const struct CMUnitTest tests[] = {
        cmocka_unit_test_setup_teardown(test_many_gpus_of_one_hour, setup, teardown),
        cmocka_unit_test_setup_teardown(test_two_runs_at_once, setup, teardown),
    };
    return cmocka_run_group_tests(tests, NULL, NULL);
}
