/* The GPUs' blocks of owned seconds (usage_gpu_blocks, migration 061) as
 * the rollup job, a merge of GPU records and retention keep them, on each
 * store: every block against the sums of its days computed here from
 * usage_daily, some against sums from usage_hourly; and the paged GPU
 * report with no filter, which ranks its GPUs from the whole blocks of
 * the range and its edge days, against the order computed here from
 * usage_daily and byte for byte against the path over usage_daily (a
 * filter every GPU matches takes it), over ranges aligned to blocks, not
 * aligned at either edge, holding no whole block, and empty: after the
 * first rollup, after late data adds a GPU to past days, after a re-run
 * over a day whose hours changed their fraction, after GPU 3's records
 * merged into GPU 2's, and after retention pruned old days.
 *
 * B is the start of the block two blocks before the current one; GPUs 1
 * and 2 report from B-2d+5h, GPU 3 from B+1d+7h, all up to B+8d-3h;
 * GPU 4 reports only over B+2d..B+3d, and late. */
#include "unit.h"
#include "testdb.h"

#include "core/util.h"
#include "store/store.h"
#include "store/store_int.h"
#include "store/usage_int.h"

#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#define H 3600LL
#define DAY 86400LL
#define BLOCK (4 * DAY)

/* usage_gpu_blocks holds exactly one row per block and GPU of usage_daily
 * (the blocks from the oldest day group on), each the sum of its days'
 * owned seconds x fraction; returns how many rows. */
static int64_t blocks_match(struct testdb_fixture *f)
{
    const char *daily = "(SELECT day - day % 345600 AS start, gpu_id, SUM(owned_s * fraction) AS "
                        "o FROM usage_daily GROUP BY day - day % 345600, gpu_id) a";
    char sql[512];
    int64_t n;

    snprintf(sql, sizeof sql,
             "SELECT COUNT(*) FROM %s WHERE a.start >= (SELECT MIN(day) FROM "
             "usage_groups_daily)",
             daily);
    n = testdb_scalar(&f->db, sql);
    assert_int_equal(testdb_scalar(&f->db, "SELECT COUNT(*) FROM usage_gpu_blocks"), n);
    snprintf(sql, sizeof sql,
             "SELECT COUNT(*) FROM usage_gpu_blocks b JOIN %s ON a.start = b.start AND "
             "a.gpu_id = b.gpu_id WHERE ABS(a.o - b.owned_s) < 0.001",
             daily);
    assert_int_equal(testdb_scalar(&f->db, sql), n);
    return n;
}

/* The block of gpu from `start` as the sum of its hours (usage_hourly,
 * independent of usage_daily) and as stored (-1: no row), in seconds. */
static void assert_block(struct testdb_fixture *f, int64_t gpu, int64_t start)
{
    char sql[320];
    int64_t hourly, stored;

    snprintf(sql, sizeof sql,
             "SELECT COALESCE(CAST(ROUND(SUM(owned_s * fraction)) AS BIGINT), -1) FROM "
             "usage_hourly WHERE gpu_id = %lld AND hour >= %lld AND hour < %lld",
             (long long)gpu, (long long)start, (long long)(start + BLOCK));
    hourly = testdb_scalar(&f->db, sql);
    snprintf(sql, sizeof sql,
             "SELECT COALESCE(MAX(CAST(ROUND(owned_s) AS BIGINT)), -1) FROM usage_gpu_blocks "
             "WHERE gpu_id = %lld AND start = %lld",
             (long long)gpu, (long long)start);
    stored = testdb_scalar(&f->db, sql);
    assert_int_equal(stored, hourly);
}

/* The paged GPU report over [from, to) as text, with no filter or with a
 * filter every GPU matches. Caller frees. */
static char *report(struct testdb_fixture *f, int64_t from, int64_t to, enum store_usage_step step,
                    int64_t limit, int64_t offset, bool filtered)
{
    struct store_usage_query q = {.group_by = "gpu",
                                  .from = from,
                                  .to = to,
                                  .step = step,
                                  .limit = limit,
                                  .offset = offset,
                                  .model = filtered ? "NVIDIA A100" : NULL};
    char *text = NULL;
    size_t len = 0;

    assert_status(store_usage_report_text(f->st, &q, false, &text, &len), GI_OK);
    assert_non_null(text);
    assert_int_equal(strlen(text), len);
    return text;
}

/* The page of every GPU over [from, to) lists them in the order computed
 * here from usage_daily (owned seconds descending, then UUID), and its
 * groups_total counts them. */
static void assert_order(struct testdb_fixture *f, int64_t from, int64_t to)
{
    char *text = report(f, from, to, USAGE_STEP_DAY, 10, 0, false), got[128] = "", want[128] = "",
         last[32] = "", sql[400];
    json_t *o = json_loads(text, 0, NULL), *it;
    size_t i, n = 0;

    assert_non_null(o);
    json_array_foreach(json_object_get(o, "items"), i, it) {
        const char *g = json_string_value(json_object_get(it, "group"));
        size_t len = strlen(got);
        assert_non_null(g);
        if (strcmp(g, last) != 0)
            snprintf(got + len, sizeof got - len, "%s%s", len ? "," : "", g);
        snprintf(last, sizeof last, "%s", g);
    }
    for (int64_t k = 1; k <= 4; k++) {
        int64_t id;
        snprintf(sql, sizeof sql,
                 "SELECT COALESCE(MAX(gpu_id), 0) FROM (SELECT u.gpu_id, g.uuid, SUM(u.owned_s * "
                 "u.fraction) AS o FROM usage_daily u JOIN gpus g ON g.id = u.gpu_id WHERE u.day "
                 ">= %lld AND u.day < %lld GROUP BY u.gpu_id, g.uuid ORDER BY o DESC, g.uuid "
                 "LIMIT 1 OFFSET %lld) r",
                 (long long)from, (long long)to, (long long)(k - 1));
        if ((id = testdb_scalar(&f->db, sql)) == 0)
            break;
        n++;
        snprintf(want + strlen(want), sizeof want - strlen(want), "%sGPU-%lld", k > 1 ? "," : "",
                 (long long)id);
    }
    assert_string_equal(got, want);
    assert_int_equal(json_integer_value(json_object_get(o, "groups_total")), (json_int_t)n);
    json_decref(o);
    free(text);
}

/* The two paths answer the same bytes for every page of [from, to), by
 * day and by week. */
static void assert_same(struct testdb_fixture *f, int64_t from, int64_t to)
{
    for (int step = 0; step < 2; step++)
        for (int64_t limit = 1; limit <= 3; limit++)
            for (int64_t off = 0; off <= 3; off++) {
                enum store_usage_step st = step ? USAGE_STEP_WEEK : USAGE_STEP_DAY;
                char *a = report(f, from, to, st, limit, off, false),
                     *b = report(f, from, to, st, limit, off, true);
                assert_string_equal(a, b);
                free(a);
                free(b);
            }
}

/* Every range of the test against both checks. */
static void assert_ranges(struct testdb_fixture *f, int64_t b)
{
    const int64_t ranges[][2] = {
        {b, b + 2 * BLOCK},                 /* two whole blocks */
        {b - DAY, b + 2 * BLOCK - DAY},     /* edges on both sides */
        {b - 2 * DAY, b + BLOCK + 3 * DAY}, /* one whole block */
        {b + DAY, b + 3 * DAY},             /* within a block */
        {b + DAY, b + BLOCK + DAY},         /* no whole block */
        {b + 3 * BLOCK, b + 4 * BLOCK},     /* nothing there */
    };

    for (size_t i = 0; i < sizeof ranges / sizeof *ranges; i++) {
        assert_order(f, ranges[i][0], ranges[i][1]);
        assert_same(f, ranges[i][0], ranges[i][1]);
    }
}

/* Merges GPU from's usage records into to's in one transaction, as a
 * cloud placeholder's are merged into the GPU reported on its instance. */
static void merge(struct testdb_fixture *f, int64_t from, int64_t to)
{
    struct conn *c = db_conn_get(f->st);
    int rc = db_tx_begin(c);

    if (rc == GI_OK)
        rc = usage_merge_gpu(c, from, to, gi_now());
    assert_status(db_tx_end(c, rc), GI_OK);
    db_conn_put(f->st, c);
}

static void test_gpu_blocks(void **state)
{
    struct testdb_fixture *f = *state;
    struct store_usage_config keep, cfg;
    int64_t now = gi_now(), today = now - now % DAY;
    int64_t b = today - today % BLOCK - 2 * BLOCK, end = b + 2 * BLOCK - 3 * H;
    int64_t owned;
    char sql[320];

    testdb_exec(f, "INSERT INTO hosts (id, hostname, first_seen_at, last_seen_at) VALUES (1, "
                   "'n1', 1, 1), (2, 'n2', 1, 1)");
    for (int g = 1; g <= 4; g++) {
        snprintf(sql, sizeof sql,
                 "INSERT INTO gpus (id, uuid, host_id, idx, model, team, first_seen_at, "
                 "last_seen_at) VALUES (%d, 'GPU-%d', %d, %d, 'NVIDIA A100', 'core', 1, 1)",
                 g, g, g <= 2 ? 1 : 2, g - 1);
        testdb_exec(f, sql);
    }
    testdb_idle_hours(&f->db, 1, b - 2 * DAY + 5 * H, end, 900, 0);
    testdb_idle_hours(&f->db, 2, b - 2 * DAY + 5 * H, end, 900, 0);
    testdb_idle_hours(&f->db, 3, b + DAY + 7 * H, end, 900, 0);
    testdb_rollup_summed(f);
    assert_true(blocks_match(f) >= 6);
    assert_block(f, 1, b);
    assert_block(f, 3, b);
    assert_block(f, 2, b + BLOCK);
    assert_ranges(f, b);

    /* The ranking is read from usage_gpu_blocks: a block changed there by
     * hand changes the order of a range holding it (the rollup writes it
     * again below). */
    snprintf(sql, sizeof sql,
             "UPDATE usage_gpu_blocks SET owned_s = owned_s + 30 * 86400 WHERE gpu_id = 3 AND "
             "start = %lld",
             (long long)b);
    testdb_exec(f, sql);
    {
        char *text = report(f, b, b + BLOCK, USAGE_STEP_DAY, 1, 0, false);
        assert_non_null(strstr(text, "\"group\":\"GPU-3\""));
        free(text);
    }

    /* Late data: GPU 4 reports over B+2d..B+3d. */
    testdb_idle_hours(&f->db, 4, b + 2 * DAY, b + 3 * DAY, 900, 0);
    testdb_rollup_summed(f);
    blocks_match(f);
    assert_block(f, 4, b);
    assert_block(f, 3, b);
    assert_ranges(f, b);

    /* A re-run: GPU 2's hours of B+5d but the ninth count half (a MIG
     * slice), and the ninth is computed again, which sums the day again:
     * the day's row takes its first hour's fraction, so the block loses
     * half a day. */
    snprintf(sql, sizeof sql,
             "SELECT CAST(ROUND(owned_s) AS BIGINT) FROM usage_gpu_blocks WHERE gpu_id = 2 AND "
             "start = %lld",
             (long long)(b + BLOCK));
    owned = testdb_scalar(&f->db, sql);
    snprintf(sql, sizeof sql,
             "UPDATE usage_hourly SET fraction = 0.5 WHERE gpu_id = 2 AND hour >= %lld AND hour "
             "< %lld AND hour <> %lld",
             (long long)(b + 5 * DAY), (long long)(b + 6 * DAY), (long long)(b + 5 * DAY + 9 * H));
    testdb_exec(f, sql);
    testdb_mark_dirty(f, 2, b + 5 * DAY + 9 * H);
    testdb_rollup_summed(f);
    blocks_match(f);
    snprintf(sql, sizeof sql,
             "SELECT CAST(ROUND(owned_s) AS BIGINT) FROM usage_gpu_blocks WHERE gpu_id = 2 AND "
             "start = %lld",
             (long long)(b + BLOCK));
    assert_int_equal(testdb_scalar(&f->db, sql), owned - DAY / 2);
    assert_ranges(f, b);

    /* GPU 3's records merge into GPU 2's: the blocks follow at once, before
     * the rollup sums the day groups again, and after it. */
    merge(f, 3, 2);
    assert_int_equal(
        testdb_scalar(&f->db, "SELECT COUNT(*) FROM usage_gpu_blocks WHERE gpu_id = 3"), 0);
    blocks_match(f);
    assert_block(f, 2, b);
    assert_ranges(f, b);
    testdb_rollup_summed(f);
    blocks_match(f);
    assert_ranges(f, b);

    /* Retention drops the daily rollups of the days before B+4d: the
     * blocks that start before go with them (B+4d's stays whole); a range
     * that reaches retention's edge takes the path over usage_daily. */
    store_usage_config_get(&keep);
    cfg = keep;
    cfg.retain_daily_days = (int)((now - (b + 3 * DAY)) / DAY);
    store_usage_configure(&cfg);
    testdb_mark_dirty(f, 1, end - H);
    testdb_rollup_summed(f);
    testdb_mark_dirty(f, 1, end - H);
    testdb_rollup_summed(f);
    assert_true(testdb_scalar(&f->db, "SELECT MIN(day) FROM usage_daily") > b);
    snprintf(sql, sizeof sql, "SELECT COUNT(*) FROM usage_gpu_blocks WHERE start < %lld",
             (long long)(b + BLOCK));
    assert_int_equal(testdb_scalar(&f->db, sql), 0);
    blocks_match(f);
    assert_block(f, 1, b + BLOCK);
    assert_same(f, b + BLOCK, b + 2 * BLOCK);
    assert_same(f, b - DAY, b + 2 * BLOCK);
    store_usage_configure(&keep);
}

int main(void)
{
    const struct CMUnitTest tests[] = {
        cmocka_unit_test_setup_teardown(test_gpu_blocks, testdb_setup, testdb_teardown),
    };
    return cmocka_run_group_tests(tests, NULL, NULL);
}
