/* Unit tests for listings that could not see every zone
 * (store_cloud_sync's unreachable scopes), on each store: an instance of
 * a zone or region the listing names as unreachable keeps its state (not
 * gone, its run open, its GPUs present) while one absent from a zone the
 * listing did see is gone; the next complete listing handles it as
 * usual. */
#include "unit.h"
#include "testdb.h"

#include "core/util.h"
#include "parse/cloud.h"
#include "store/store.h"

#include <stdio.h>
#include <string.h>

static int64_t scalarf(struct testdb_fixture *f, const char *fmt, ...)
    __attribute__((format(printf, 2, 3)));
static int64_t scalarf(struct testdb_fixture *f, const char *fmt, ...)
{
    char sql[2048];
    va_list ap;

    va_start(ap, fmt);
    vsnprintf(sql, sizeof sql, fmt, ap);
    va_end(ap);
    return testdb_scalar(&f->db, sql);
}

/* A running GCP instance with 2 GPUs in zone (region: zone less "-x"). */
static struct cloud_instance inst(const char *id, const char *zone, int64_t launch)
{
    struct cloud_instance v = {.state = CLOUD_RUNNING, .launch_time = launch, .gpu_count = 2};
    char *dash;

    gi_strlcpy(v.provider, "gcp", sizeof v.provider);
    gi_strlcpy(v.instance_id, id, sizeof v.instance_id);
    snprintf(v.name, sizeof v.name, "vm-%s", id);
    gi_strlcpy(v.account, "ml-prod", sizeof v.account);
    gi_strlcpy(v.zone, zone, sizeof v.zone);
    gi_strlcpy(v.region, zone, sizeof v.region);
    dash = strrchr(v.region, '-');
    if (dash)
        *dash = '\0';
    gi_strlcpy(v.machine_type, "g2-standard-24", sizeof v.machine_type);
    gi_strlcpy(v.state_raw, "RUNNING", sizeof v.state_raw);
    gi_strlcpy(v.gpu_model, "NVIDIA L4", sizeof v.gpu_model);
    v.gpu_memory_mib = 24576;
    return v;
}

static int64_t gone(struct testdb_fixture *f, const char *id)
{
    return scalarf(f,
                   "SELECT COUNT(*) FROM cloud_instances WHERE instance_id = '%s' AND gone_at IS "
                   "NOT NULL",
                   id);
}

static int64_t open_runs(struct testdb_fixture *f, const char *id)
{
    return scalarf(f,
                   "SELECT COUNT(*) FROM cloud_runs r JOIN cloud_instances i ON i.id = "
                   "r.instance_row WHERE i.instance_id = '%s' AND r.ended_at IS NULL",
                   id);
}

static int64_t present_gpus(struct testdb_fixture *f, const char *id)
{
    return scalarf(f,
                   "SELECT COUNT(*) FROM gpus WHERE uuid LIKE 'cloud:gcp:%s:%%' AND "
                   "missing_since IS NULL",
                   id);
}

static void do_sync(struct testdb_fixture *f, const struct cloud_instance *v, size_t n,
                    const char *const *unreachable, size_t nun, struct cloud_sync_result *r)
{
    memset(r, 0, sizeof *r);
    assert_status(store_cloud_sync(f->st, 1, "gcp", "ml-prod", v, n, unreachable, nun, r), GI_OK);
}

static void test_unreachable_zone_keeps_state(void **state)
{
    struct testdb_fixture *f = *state;
    int64_t now = gi_now();
    struct cloud_instance v[3] = {
        inst("101", "us-central1-a", now - 600),
        inst("202", "asia-east2-c", now - 600),
        inst("303", "us-central1-b", now - 600),
    };
    const char *const asia[] = {"zones/asia-east2-c"};
    struct cloud_sync_result r;

    testdb_exec(f, "INSERT INTO sources (id, name, kind, created_at, updated_at) VALUES "
                   "(1, 'gcp-ml', 'gcp', 1, 1)");
    do_sync(f, v, 3, NULL, 0, &r);
    assert_int_equal(r.instances, 3);
    assert_int_equal(open_runs(f, "202"), 1);

    /* asia-east2-c did not answer, 303 is absent from a zone that did:
     * 202 keeps its state, 303 is gone. */
    do_sync(f, v, 1, asia, 1, &r);
    assert_int_equal(r.gone, 1);
    assert_int_equal(gone(f, "101"), 0);
    assert_int_equal(gone(f, "202"), 0);
    assert_int_equal(open_runs(f, "202"), 1);
    assert_int_equal(present_gpus(f, "202"), 2);
    assert_int_equal(gone(f, "303"), 1);
    assert_int_equal(open_runs(f, "303"), 0);
    assert_int_equal(present_gpus(f, "303"), 0);

    /* A bare zone name and a region name the same way. */
    do_sync(f, v, 1, (const char *const[]){"asia-east2-c"}, 1, &r);
    assert_int_equal(r.gone, 0);
    do_sync(f, NULL, 0, (const char *const[]){"regions/us-central1", "zones/asia-east2-c"}, 2, &r);
    assert_int_equal(r.gone, 0);
    assert_int_equal(gone(f, "101"), 0);
    assert_int_equal(gone(f, "202"), 0);
    /* Another zone's name does not cover it. */
    do_sync(f, v, 1, (const char *const[]){"zones/asia-east2-a", "regions/asia-east"}, 2, &r);
    assert_int_equal(r.gone, 1);
    assert_int_equal(gone(f, "202"), 1);
    assert_int_equal(open_runs(f, "202"), 0);

    /* Back in a complete listing, it is live again. */
    do_sync(f, v, 2, NULL, 0, &r);
    assert_int_equal(gone(f, "202"), 0);
    assert_int_equal(present_gpus(f, "202"), 2);
}

int main(void)
{
    const struct CMUnitTest tests[] = {
        cmocka_unit_test_setup_teardown(test_unreachable_zone_keeps_state, testdb_setup,
                                        testdb_teardown),
    };
    return cmocka_run_group_tests(tests, NULL, NULL);
}
