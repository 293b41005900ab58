/* Unit tests for the retention of the processes and pods seen on GPUs
 * (gpu_processes, gpu_pods) through store_samples_maintain, on each store:
 * rows older than the retention go, in several small transactions when
 * there are more than one holds; newer rows stay; rows an hour still
 * waiting for its rollup needs are kept (store_usage_keep_days). */
#include "unit.h"
#include "testdb.h"

#include "core/log.h"
#include "core/util.h"
#include "store/store.h"

#include <stdio.h>
#include <string.h>

#define DAY 86400

/* n process rows and n pod rows of GPU `uuid`, one a second from ts. */
static void add_rows(struct testdb_fixture *f, const char *uuid, int64_t ts, int n)
{
    char sql[512];

    snprintf(sql, sizeof sql,
             "INSERT INTO gpu_processes (ts, gpu_uuid, pid, name, source_id) WITH RECURSIVE "
             "k(i) AS (SELECT 0 UNION ALL SELECT i + 1 FROM k WHERE i < %d) SELECT %lld + i, "
             "'%s', 100 + i, 'python3', 0 FROM k",
             n - 1, (long long)ts, uuid);
    testdb_exec(f, sql);
    snprintf(sql, sizeof sql,
             "INSERT INTO gpu_pods (ts, gpu_uuid, namespace, pod, container, source_id) WITH "
             "RECURSIVE k(i) AS (SELECT 0 UNION ALL SELECT i + 1 FROM k WHERE i < %d) SELECT "
             "%lld + i, '%s', 'ml', 'train-0', 'main', 0 FROM k",
             n - 1, (long long)ts, uuid);
    testdb_exec(f, sql);
}

static int64_t count_rows(struct testdb_fixture *f, const char *table, int64_t before)
{
    char sql[128];
    snprintf(sql, sizeof sql, "SELECT COUNT(*) FROM %s WHERE ts < %lld", table, (long long)before);
    return testdb_scalar(&f->db, sql);
}

static void test_old_rows_go_new_stay(void **state)
{
    struct testdb_fixture *f = *state;
    int64_t now = gi_now(), changed = -1, far = now + DAY;

    /* More old rows than one pruning transaction deletes. */
    add_rows(f, "GPU-old", now - 30 * DAY, 7000);
    add_rows(f, "GPU-old", now - 15 * DAY, 10);
    add_rows(f, "GPU-new", now - 2 * DAY, 4);
    add_rows(f, "GPU-new", now - 60, 3);
    assert_int_equal(count_rows(f, "gpu_processes", far), 7017);
    assert_int_equal(count_rows(f, "gpu_pods", far), 7017);

    assert_status(store_samples_maintain(f->st, now, 14, &changed), GI_OK);
    assert_true(changed >= 2 * 7010);
    assert_int_equal(count_rows(f, "gpu_processes", now - 14 * DAY), 0);
    assert_int_equal(count_rows(f, "gpu_pods", now - 14 * DAY), 0);
    assert_int_equal(count_rows(f, "gpu_processes", far), 7);
    assert_int_equal(count_rows(f, "gpu_pods", far), 7);

    /* A second run has nothing left to delete. */
    assert_status(store_samples_maintain(f->st, now, 14, &changed), GI_OK);
    assert_int_equal(changed, 0);
    assert_int_equal(count_rows(f, "gpu_processes", far), 7);
}

/* An hour 20 days ago still waits for its rollup: the retention the job
 * uses keeps what that hour reads, and prunes what is older still. */
static void test_rows_kept_for_the_rollup(void **state)
{
    struct testdb_fixture *f = *state;
    int64_t now = gi_now(), changed = -1, hour = now - 20 * DAY, far = now + DAY;
    char sql[256];
    int keep;

    hour -= hour % 3600;
    add_rows(f, "GPU-late", hour + 60, 5);
    add_rows(f, "GPU-late", now - 40 * DAY, 5);
    snprintf(sql, sizeof sql,
             "INSERT INTO usage_dirty (hour, gpu_id, marked_at) VALUES (%lld, 1, %lld)",
             (long long)hour, (long long)now);
    testdb_exec(f, sql);

    keep = store_usage_keep_days(f->st, now, 14);
    assert_true(keep > 20);
    assert_status(store_samples_maintain(f->st, now, keep, &changed), GI_OK);
    assert_int_equal(count_rows(f, "gpu_processes", far), 5);
    assert_int_equal(count_rows(f, "gpu_pods", far), 5);
    assert_int_equal(count_rows(f, "gpu_processes", hour), 0);

    /* Once rolled up, the plain retention applies. */
    testdb_exec(f, "DELETE FROM usage_dirty");
    keep = store_usage_keep_days(f->st, now, 14);
    assert_int_equal(keep, 14);
    assert_status(store_samples_maintain(f->st, now, keep, &changed), GI_OK);
    assert_int_equal(count_rows(f, "gpu_processes", far), 0);
    assert_int_equal(count_rows(f, "gpu_pods", far), 0);
}

int main(void)
{
    const struct CMUnitTest tests[] = {
        cmocka_unit_test_setup_teardown(test_old_rows_go_new_stay, testdb_setup, testdb_teardown),
        cmocka_unit_test_setup_teardown(test_rows_kept_for_the_rollup, testdb_setup,
                                        testdb_teardown),
    };
    return cmocka_run_group_tests(tests, NULL, NULL);
}
