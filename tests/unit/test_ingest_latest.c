/* A push batch's per-GPU writes done for the whole batch at once
 * (src/store/ingest_rows.c, src/store/ingest.c, usage_mark_many in
 * src/store/usage.c), on each store: with GPUs of mixed age in one batch
 * (some samples older than the stored newest, some newer, a GPU without
 * samples, a new GPU) each GPU keeps or takes the right newest values,
 * exactly the (GPU, hour)s the samples touch are marked for the usage
 * rollups, a mark already there takes a new stamp; and the serial check
 * read once per batch finds what a read per GPU found, also when two GPUs
 * of the batch swap serials. */
#include "unit.h"
#include "testdb.h"

#include "core/observation.h"
#include "core/util.h"
#include "store/store.h"

#include <stdarg.h>
#include <stdio.h>
#include <string.h>

struct fixture {
    struct testdb db;
    struct store *st;
    int64_t source;
    int64_t hour; /* a past hour the samples fall around */
};

static int setup(void **state)
{
    struct fixture *f = calloc(1, sizeof *f);
    int64_t now = gi_now();

    if (f == NULL)
        return -1;
    gi_log_set_level(GI_LOG_WARN);
    if (test_store_open(&f->db, 2, &f->st) != 0) {
        free(f);
        return -1;
    }
    if (store_source_ensure(f->st, "agents", "push", "legacy", NULL, NULL, &f->source) != GI_OK) {
        store_close(f->st);
        testdb_remove(&f->db);
        free(f);
        return -1;
    }
    f->hour = now - now % 3600 - 10 * 3600;
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

/* One GPU a batch reports. */
struct gpu_def {
    const char *uuid, *serial;
};
/* One sample of a batch: its GPU, time, utilization and corrected ECC
 * count (-1: absent). */
struct sample_def {
    const char *uuid;
    int64_t ts;
    double util;
    int64_t ecc;
};

static void push(struct fixture *f, const char *id, const char *host, const struct gpu_def *gpus,
                 size_t ngpus, const struct sample_def *xs, size_t nxs)
{
    struct gi_batch b;
    struct store_ingest_result res;

    memset(&b, 0, sizeof b);
    gi_strlcpy(b.batch_id, id, sizeof b.batch_id);
    gi_strlcpy(b.host.hostname, host, sizeof b.host.hostname);
    for (size_t i = 0; i < ngpus; i++) {
        struct gi_gpu_obs *g = gi_obs_add_gpu(&b.set);
        assert_non_null(g);
        gi_strlcpy(g->uuid, gpus[i].uuid, sizeof g->uuid);
        g->index = (int)i;
        gi_strlcpy(g->name, "NVIDIA A100-SXM4-80GB", sizeof g->name);
        if (gpus[i].serial)
            gi_strlcpy(g->serial, gpus[i].serial, sizeof g->serial);
    }
    if (nxs) {
        b.samples = calloc(nxs, sizeof *b.samples);
        assert_non_null(b.samples);
    }
    for (size_t i = 0; i < nxs; i++) {
        gi_sample_init(&b.samples[i]);
        gi_strlcpy(b.samples[i].gpu_uuid, xs[i].uuid, sizeof b.samples[i].gpu_uuid);
        b.samples[i].ts = xs[i].ts;
        b.samples[i].util_avg = xs[i].util;
        b.samples[i].ecc_corrected = xs[i].ecc;
    }
    b.nsamples = nxs;
    assert_status(store_ingest(f->st, f->source, &b, &res), GI_OK);
    assert_false(res.duplicate);
    gi_batch_free(&b);
}

static int64_t gpu_id(struct fixture *f, const char *uuid)
{
    return scalarf(f, "SELECT id FROM gpus WHERE uuid = '%s'", uuid);
}

/* The stored newest sample time, utilization and corrected ECC count. */
static void assert_latest(struct fixture *f, const char *uuid, int64_t ts, int64_t util,
                          int64_t ecc)
{
    assert_int_equal(scalarf(f, "SELECT sample_at FROM gpus WHERE uuid = '%s'", uuid), ts);
    assert_int_equal(
        scalarf(f, "SELECT CAST(util_pct AS INTEGER) FROM gpus WHERE uuid = '%s'", uuid), util);
    assert_int_equal(
        scalarf(f, "SELECT COALESCE(ecc_corrected, -1) FROM gpus WHERE uuid = '%s'", uuid), ecc);
}

/* Whether GPU uuid's hour `hour` is marked dirty. */
static bool marked(struct fixture *f, const char *uuid, int64_t hour)
{
    return scalarf(f, "SELECT COUNT(*) FROM usage_dirty WHERE gpu_id = %lld AND hour = %lld",
                   (long long)gpu_id(f, uuid), (long long)hour) == 1;
}

static void test_mixed_age_batch(void **state)
{
    struct fixture *f = *state;
    int64_t h = f->hour, gen_a;
    const struct gpu_def first[] = {{"GPU-A", NULL}, {"GPU-B", NULL}, {"GPU-C", NULL}};
    const struct sample_def first_xs[] = {
        {"GPU-A", h + 1800, 10, 1}, {"GPU-B", h + 1800, 20, 3}, {"GPU-C", h + 1800, 30, -1}};
    const struct gpu_def mixed[] = {
        {"GPU-A", NULL}, {"GPU-B", NULL}, {"GPU-C", NULL}, {"GPU-D", NULL}};
    /* A: only older than what is stored. B: older and newer (the newest
     * without an ECC count). C: none. D: new. */
    const struct sample_def mixed_xs[] = {
        {"GPU-A", h + 600, 11, 5},
        {"GPU-B", h + 300, 21, 7},
        {"GPU-B", h + 3 * 3600 + 1200, 23, -1},
        {"GPU-D", h + 2 * 3600 + 3000, 40, 2},
        {"GPU-B", h + 3 * 3600 + 600, 22, 9},
    };

    push(f, "first", "node1", first, 3, first_xs, 3);
    assert_latest(f, "GPU-A", h + 1800, 10, 1);
    assert_latest(f, "GPU-B", h + 1800, 20, 3);
    assert_latest(f, "GPU-C", h + 1800, 30, -1);
    /* Each sample 30 minutes into its hour marks that hour alone. */
    assert_int_equal(scalarf(f, "SELECT COUNT(*) FROM usage_dirty"), 3);
    assert_true(marked(f, "GPU-A", h) && marked(f, "GPU-B", h) && marked(f, "GPU-C", h));
    assert_int_equal(scalarf(f, "SELECT COUNT(*) FROM usage_dirty WHERE gen = 0"), 0);
    /* What the rollup job would have finished, but A's mark. */
    gen_a = scalarf(f, "SELECT gen FROM usage_dirty WHERE gpu_id = %lld AND hour = %lld",
                    (long long)gpu_id(f, "GPU-A"), (long long)h);
    exec_sql(f, "DELETE FROM usage_dirty WHERE gpu_id <> (SELECT id FROM gpus WHERE uuid = "
                "'GPU-A')");

    push(f, "mixed", "node1", mixed, 4, mixed_xs, 5);
    /* An older sample never replaces a newer one. */
    assert_latest(f, "GPU-A", h + 1800, 10, 1);
    /* The newest of the batch's samples wins; the count it lacks keeps
     * the stored one, not that of an older sample of the batch. */
    assert_latest(f, "GPU-B", h + 3 * 3600 + 1200, 23, 3);
    assert_latest(f, "GPU-C", h + 1800, 30, -1);
    assert_latest(f, "GPU-D", h + 2 * 3600 + 3000, 40, 2);
    assert_int_equal(scalarf(f, "SELECT observed_at FROM gpus WHERE uuid = 'GPU-B'"),
                     h + 3 * 3600 + 1200);

    /* The hours each GPU's samples touch, widened by the coverage gap
     * (600 s): A: h; B: h - 1 .. h + 3; D: h + 2 .. h + 3; C: none. */
    assert_true(marked(f, "GPU-A", h));
    for (int k = -1; k <= 3; k++)
        assert_true(marked(f, "GPU-B", h + k * 3600));
    assert_true(marked(f, "GPU-D", h + 2 * 3600));
    assert_true(marked(f, "GPU-D", h + 3 * 3600));
    assert_int_equal(scalarf(f, "SELECT COUNT(*) FROM usage_dirty"), 8);
    /* A's mark was there: it takes a new stamp, so that a rollup pass
     * that read its hour before this batch does not forget it. */
    assert_true(scalarf(f, "SELECT gen FROM usage_dirty WHERE gpu_id = %lld AND hour = %lld",
                        (long long)gpu_id(f, "GPU-A"), (long long)h) > gen_a);
    assert_int_equal(
        scalarf(f, "SELECT COUNT(*) FROM usage_dirty WHERE gen <= %lld", (long long)gen_a), 0);
}

static int64_t conflicts(struct fixture *f, const char *uuid, const char *other)
{
    return scalarf(f,
                   "SELECT COUNT(*) FROM gpu_events WHERE kind = 'serial_conflict' AND gpu_uuid = "
                   "'%s' AND detail LIKE '%%\"other_uuid\":\"%s\"%%'",
                   uuid, other);
}

static void test_serial_checks(void **state)
{
    struct fixture *f = *state;
    const struct gpu_def node1[] = {{"GPU-A", "S-A"}, {"GPU-B", "S-B"}};
    const struct gpu_def node2[] = {{"GPU-X", "S-A"}, {"GPU-Y", "S-Y"}};
    const struct gpu_def swapped[] = {{"GPU-A", "S-B"}, {"GPU-B", "S-A"}};

    push(f, "n1", "node1", node1, 2, NULL, 0);
    assert_int_equal(scalarf(f, "SELECT COUNT(*) FROM gpu_events WHERE kind = 'serial_conflict'"),
                     0);
    /* X reports A's serial; Y's is its own. */
    push(f, "n2", "node2", node2, 2, NULL, 0);
    assert_int_equal(conflicts(f, "GPU-X", "GPU-A"), 1);
    assert_int_equal(scalarf(f, "SELECT COUNT(*) FROM gpu_events WHERE kind = 'serial_conflict'"),
                     1);
    /* A and B swap serials in one batch: A (first) finds B still under
     * S-B; B then finds S-A no longer on A (just rewritten) but on X. */
    push(f, "n1-swap", "node1", swapped, 2, NULL, 0);
    assert_int_equal(conflicts(f, "GPU-A", "GPU-B"), 1);
    assert_int_equal(conflicts(f, "GPU-B", "GPU-X"), 1);
    assert_int_equal(conflicts(f, "GPU-B", "GPU-A"), 0);
    assert_int_equal(scalarf(f, "SELECT COUNT(*) FROM gpu_events WHERE kind = 'serial_conflict'"),
                     3);
}

int main(void)
{
    const struct CMUnitTest tests[] = {
        cmocka_unit_test_setup_teardown(test_mixed_age_batch, setup, teardown),
        cmocka_unit_test_setup_teardown(test_serial_checks, setup, teardown),
    };
    return cmocka_run_group_tests(tests, NULL, NULL);
}
