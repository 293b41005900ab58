/* Unit tests for raw-sample retention (src/store/samples.c through
 * store.h), on each store: samples older than the retention are removed
 * and newer ones kept; on PostgreSQL the coming days' partitions exist
 * afterwards and a partition wholly past retention is dropped, not
 * emptied row by row. */
#include "unit.h"
#include "testdb.h"

#include "core/log.h"
#include "core/util.h"
#include "store/store.h"

#include <stdio.h>
#include <string.h>
#include <time.h>

#define DAY 86400

/* Inserts `n` samples of GPU 1 at `ts`, `ts`+1, ... */
static void add_samples(struct testdb_fixture *f, int64_t ts, int n)
{
    char sql[256];

    for (int i = 0; i < n; i++) {
        snprintf(sql, sizeof sql,
                 "INSERT INTO gpu_samples (ts, gpu_id, util_avg, source_id) VALUES (%lld, 1, 5, 0)",
                 (long long)(ts + i));
        testdb_exec(f, sql);
    }
}

static int64_t count_before(struct testdb_fixture *f, int64_t ts)
{
    char sql[128];
    snprintf(sql, sizeof sql, "SELECT COUNT(*) FROM gpu_samples WHERE ts < %lld", (long long)ts);
    return testdb_scalar(&f->db, sql);
}

static void test_old_samples_go_new_stay(void **state)
{
    struct testdb_fixture *f = *state;
    int64_t now = gi_now(), changed = -1;

    add_samples(f, now - 30 * DAY, 5);
    add_samples(f, now - 20 * DAY, 3);
    add_samples(f, now - 2 * DAY, 4);
    add_samples(f, now - 60, 2);
    assert_int_equal(testdb_scalar(&f->db, "SELECT COUNT(*) FROM gpu_samples"), 14);

    assert_status(store_samples_maintain(f->st, now, 14, &changed), GI_OK);
    /* SQLite counts the rows it deleted; PostgreSQL counts partitions (these
     * old rows sat in its DEFAULT partition, which keeps no whole days). */
    if (f->db.name[0] == '\0')
        assert_int_equal(changed, 8);
    assert_int_equal(count_before(f, now - 14 * DAY), 0);
    assert_int_equal(testdb_scalar(&f->db, "SELECT COUNT(*) FROM gpu_samples"), 6);

    /* Nothing more to do: a second run changes nothing and keeps the rest. */
    assert_status(store_samples_maintain(f->st, now, 14, &changed), GI_OK);
    assert_int_equal(changed, 0);
    assert_int_equal(testdb_scalar(&f->db, "SELECT COUNT(*) FROM gpu_samples"), 6);
}

static void test_bad_retention_refused(void **state)
{
    struct testdb_fixture *f = *state;
    int64_t changed = -1;

    add_samples(f, gi_now() - 60, 1);
    assert_status(store_samples_maintain(f->st, gi_now(), 0, &changed), GI_INVALID);
    assert_int_equal(testdb_scalar(&f->db, "SELECT COUNT(*) FROM gpu_samples"), 1);
}

/* The UTC day of t as YYYYMMDD, as partitions are named. */
static void day_name(int64_t t, char *buf, size_t len)
{
    time_t tt = (time_t)t;
    struct tm tm;

    gmtime_r(&tt, &tm);
    strftime(buf, len, "%Y%m%d", &tm);
}

/* PostgreSQL: partitions exist for the coming days, and an old day's
 * partition is dropped whole. */
static void test_partitions(void **state)
{
    struct testdb_fixture *f = *state;
    int64_t now = gi_now(), changed = 0;
    char sql[320], day[16];

    if (f->db.name[0] == '\0')
        skip();
    /* Partitions for days 40..30 ago, as a copied history would have. */
    snprintf(sql, sizeof sql, "SELECT gi_samples_partitions(%lld, 10, 36500)",
             (long long)(now - 40 * DAY));
    testdb_exec(f, sql);
    add_samples(f, now - 35 * DAY, 3);
    assert_int_equal(testdb_scalar(&f->db, "SELECT COUNT(*) FROM ONLY gpu_samples_default"), 0);

    assert_status(store_samples_maintain(f->st, now, 14, &changed), GI_OK);
    assert_true(changed >= 1);
    assert_int_equal(count_before(f, now - 14 * DAY), 0);
    /* No partition of a day before the retention is left. */
    day_name(now - 15 * DAY, day, sizeof day);
    snprintf(sql, sizeof sql,
             "SELECT COUNT(*) FROM pg_inherits i JOIN pg_class c ON c.oid = i.inhrelid WHERE "
             "i.inhparent = 'gpu_samples'::regclass AND c.relname LIKE 'gpu_samples_p%%' AND "
             "c.relname < 'gpu_samples_p%s'",
             day);
    assert_int_equal(testdb_scalar(&f->db, sql), 0);
    /* The coming three days are ready. */
    day_name(now + 3 * DAY, day, sizeof day);
    snprintf(sql, sizeof sql, "SELECT COUNT(*) FROM pg_class WHERE relname = 'gpu_samples_p%s'",
             day);
    assert_int_equal(testdb_scalar(&f->db, sql), 1);
}

int main(void)
{
    const struct CMUnitTest tests[] = {
        cmocka_unit_test_setup_teardown(test_old_samples_go_new_stay, testdb_setup,
                                        testdb_teardown),
        cmocka_unit_test_setup_teardown(test_bad_retention_refused, testdb_setup, testdb_teardown),
        cmocka_unit_test_setup_teardown(test_partitions, testdb_setup, testdb_teardown),
    };
    return cmocka_run_group_tests(tests, NULL, NULL);
}
