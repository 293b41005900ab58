/* A push batch's per-GPU writes done for the whole batch at once
 * (src/store/ingest_rows.c, src/store/ingest.c, usage_mark_many in
 * src/store/usage.c), on each store: with GPUs of mixed age in one batch
 * (some samples older than the stored newest, some newer, a GPU without
 * samples, a new GPU) each GPU keeps or takes the right newest values,
 * exactly the (GPU, hour)s the samples touch are marked for the usage
 * rollups, a mark already there takes a new stamp; and the serial check
 * read once per batch finds what a read per GPU found, also when two GPUs
 * of the batch swap serials; and a batch of known and new GPUs, after
 * gpus grew, takes each GPU's own newest values. On PostgreSQL the
 * batches of 16 GPUs or more take the one-statement form (planned at
 * each execution), the smaller ones the update per GPU. */
#include "unit.h"
#include "testdb.h"

#include "core/observation.h"
#include "core/util.h"
#include "store/store.h"

#include <math.h>
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

/* Pushes a batch of the GPUs and the samples (taken over: freed here). */
static void push_samples(struct fixture *f, const char *id, const char *host,
                         const struct gpu_def *gpus, size_t ngpus, struct gi_sample *xs, size_t nxs)
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
    b.samples = xs;
    b.nsamples = nxs;
    assert_status(store_ingest(f->st, f->source, &b, &res), GI_OK);
    assert_false(res.duplicate);
    assert_int_equal(res.samples, (int64_t)nxs);
    gi_batch_free(&b);
}

static void push(struct fixture *f, const char *id, const char *host, const struct gpu_def *gpus,
                 size_t ngpus, const struct sample_def *xs, size_t nxs)
{
    struct gi_sample *b = nxs ? calloc(nxs, sizeof *b) : NULL;

    assert_true(nxs == 0 || b != NULL);
    for (size_t i = 0; i < nxs; i++) {
        gi_sample_init(&b[i]);
        gi_strlcpy(b[i].gpu_uuid, xs[i].uuid, sizeof b[i].gpu_uuid);
        b[i].ts = xs[i].ts;
        b[i].util_avg = xs[i].util;
        b[i].ecc_corrected = xs[i].ecc;
    }
    push_samples(f, id, host, gpus, ngpus, b, nxs);
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

/* A sample of GPU uuid at ts with utilization, corrected ECC count and
 * power (-1 and NAN: absent). */
static struct gi_sample sample(const char *uuid, int64_t ts, double util, int64_t ecc, double power)
{
    struct gi_sample x;

    gi_sample_init(&x);
    gi_strlcpy(x.gpu_uuid, uuid, sizeof x.gpu_uuid);
    x.ts = ts;
    x.util_avg = util;
    x.ecc_corrected = ecc;
    x.power_avg_w = power;
    x.temp_c = 50;
    return x;
}

/* The stored newest power reading, -1 when absent. */
static int64_t power_of(struct fixture *f, const char *uuid)
{
    return scalarf(f, "SELECT COALESCE(CAST(power_w AS INTEGER), -1) FROM gpus WHERE uuid = '%s'",
                   uuid);
}

/* A batch of 40 GPUs, half of them known and half new, after a batch of
 * the known ones alone, so that gpus grew between the two: the newest
 * values of all of them are set by one statement on PostgreSQL (one
 * update per GPU on SQLite), each GPU from its own newest sample. */
static void test_latest_known_and_new(void **state)
{
    struct fixture *f = *state;
    enum { KNOWN = 20, NEW = 20 };
    struct gpu_def gpus[KNOWN + NEW];
    char names[KNOWN + NEW][16];
    struct gi_sample *xs = calloc(KNOWN + 2 * NEW, sizeof *xs);
    int64_t h = f->hour;
    size_t n = 0;

    assert_non_null(xs);
    for (int i = 0; i < KNOWN + NEW; i++) {
        snprintf(names[i], sizeof names[i], "%s-%02d", i < KNOWN ? "GPU-K" : "GPU-N", i % KNOWN);
        gpus[i] = (struct gpu_def){names[i], NULL};
    }
    for (int k = 0; k < KNOWN; k++)
        xs[n++] = sample(names[k], h + 1800, k, k, 100 + k);
    push_samples(f, "known", "node3", gpus, KNOWN, xs, n);
    assert_latest(f, "GPU-K-07", h + 1800, 7, 7);
    assert_int_equal(power_of(f, "GPU-K-07"), 107);

    xs = calloc(KNOWN + 2 * NEW, sizeof *xs);
    assert_non_null(xs);
    n = 0;
    for (int k = 0; k < KNOWN; k++) {
        /* Even: newer, without power or ECC count. Odd: older. */
        if (k % 2 == 0)
            xs[n++] = sample(names[k], h + 3600 + 60 * k, 50 + k, -1, NAN);
        else
            xs[n++] = sample(names[k], h + 600, 90, 99, 190);
    }
    for (int i = 0; i < NEW; i++) {
        /* The newer of two samples, the later one in the batch first. */
        xs[n++] = sample(names[KNOWN + i], h + 7500, 70 + i, i + 1, 200 + i);
        xs[n++] = sample(names[KNOWN + i], h + 7200, i, 0, 300);
    }
    push_samples(f, "known-and-new", "node3", gpus, KNOWN + NEW, xs, n);

    /* Each GPU's expected values, checked for all of them in a few
     * statements (k: the number in its name), and in full for three. */
    assert_latest(f, "GPU-K-04", h + 3600 + 240, 54, 4);
    assert_int_equal(power_of(f, "GPU-K-04"), -1);
    assert_latest(f, "GPU-K-07", h + 1800, 7, 7);
    assert_int_equal(power_of(f, "GPU-K-07"), 107);
    assert_latest(f, "GPU-N-03", h + 7500, 73, 4);
    assert_int_equal(power_of(f, "GPU-N-03"), 203);
    /* Even: the newer sample; the absent ECC count keeps the stored one,
     * the absent power is absent now. */
    assert_int_equal(
        scalarf(f,
                "SELECT COUNT(*) FROM (SELECT g.*, CAST(SUBSTR(uuid, 7) AS INTEGER) AS k "
                "FROM gpus g WHERE uuid LIKE 'GPU-K-%%') x WHERE k %% 2 = 0 AND "
                "sample_at = %lld + 60 * k AND CAST(util_pct AS INTEGER) = 50 + k AND "
                "ecc_corrected = k AND power_w IS NULL AND observed_at = sample_at AND "
                "reading_source_id = %lld",
                (long long)(h + 3600), (long long)f->source),
        KNOWN / 2);
    /* Odd: only an older sample, so all as before. */
    assert_int_equal(
        scalarf(f,
                "SELECT COUNT(*) FROM (SELECT g.*, CAST(SUBSTR(uuid, 7) AS INTEGER) AS k "
                "FROM gpus g WHERE uuid LIKE 'GPU-K-%%') x WHERE k %% 2 = 1 AND "
                "sample_at = %lld AND CAST(util_pct AS INTEGER) = k AND ecc_corrected = "
                "k AND CAST(power_w AS INTEGER) = 100 + k AND observed_at = %lld",
                (long long)(h + 1800), (long long)(h + 1800)),
        KNOWN / 2);
    /* New: the newer of their two samples. */
    assert_int_equal(
        scalarf(f,
                "SELECT COUNT(*) FROM (SELECT g.*, CAST(SUBSTR(uuid, 7) AS INTEGER) AS k "
                "FROM gpus g WHERE uuid LIKE 'GPU-N-%%') x WHERE sample_at = %lld AND "
                "CAST(util_pct AS INTEGER) = 70 + k AND ecc_corrected = k + 1 AND "
                "CAST(power_w AS INTEGER) = 200 + k AND observed_at = %lld AND "
                "reading_source_id = %lld",
                (long long)(h + 7500), (long long)(h + 7500), (long long)f->source),
        NEW);
    assert_int_equal(scalarf(f, "SELECT COUNT(*) FROM gpus WHERE uuid LIKE 'GPU-_-%%'"),
                     KNOWN + NEW);
    assert_int_equal(scalarf(f, "SELECT COUNT(*) FROM gpu_samples"), KNOWN + KNOWN + 2 * NEW);
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
        cmocka_unit_test_setup_teardown(test_latest_known_and_new, setup, teardown),
    };
    return cmocka_run_group_tests(tests, NULL, NULL);
}
