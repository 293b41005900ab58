/* The team days (usage_team_days, migration 050) as the rollup job keeps
 * them, on each store: after the first rollup, after late data adds a GPU
 * to a past day, after a rollup re-run over a day whose first hour changed
 * team, and after retention pruned old days, the table holds exactly one
 * row per day, team and currency of usage_daily, with the sums of those
 * rows and the ids of their GPUs (all, and those with allocated-idle
 * seconds); and waste by team read through it counts the GPUs by hand.
 *
 * From D, midnight four days ago, to E = D+3d+10h (exclusive): GPUs 1 and
 * 2 of team core and GPU 3 of team ml report idle every 5 minutes from
 * D-5h; a process holds GPU 2 from D+1d+1h to D+2d-1h (allocated-idle: it
 * stays at 0 %). */
#include "unit.h"
#include "testdb.h"

#include "core/util.h"
#include "store/store.h"
#include "store/store_int.h"

#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#define H 3600LL
#define DAY 86400LL

/* Idle samples of gpu every 5 minutes over the hours [from, to), each hour
 * marked dirty as ingest would; with `proc`, a process on the GPU at every
 * sample too. */
static void gpu_hours(struct testdb_fixture *f, int64_t gpu, int64_t from, int64_t to, bool proc)
{
    struct testdb_sql s = {0}, d = {0}, p = {0};

    testdb_sql_add(
        &s, "INSERT INTO gpu_samples (ts, gpu_id, util_avg, power_avg_w, source_id) VALUES ");
    testdb_sql_add(&d, "INSERT INTO usage_dirty (hour, gpu_id, marked_at) VALUES ");
    testdb_sql_add(&p, "INSERT INTO gpu_processes (ts, gpu_uuid, pid, name, username) VALUES ");
    for (int64_t h = from; h < to; h += H) {
        for (int64_t t = h; t < h + H; t += 300) {
            testdb_sql_add(&s, "%s(%lld, %lld, 0, 100, 7)", t == from ? "" : ", ", (long long)t,
                           (long long)gpu);
            testdb_sql_add(&p, "%s(%lld, 'GPU-%lld', 42, 'train', 'ana')", t == from ? "" : ", ",
                           (long long)t, (long long)gpu);
        }
        testdb_sql_add(&d, "%s(%lld, %lld, 1)", h == from ? "" : ", ", (long long)h,
                       (long long)gpu);
    }
    testdb_sql_run(&f->db, &s);
    testdb_sql_run(&f->db, &d);
    if (proc)
        testdb_sql_run(&f->db, &p);
    free(p.p);
}

/* Per day, team and currency of usage_daily: its rows' count and sums. */
#define DAY_SUMS                                                                                   \
    "(SELECT day, team, COALESCE(currency, '') AS cur, COUNT(*) AS n, SUM(owned_s * fraction) AS " \
    "o, SUM(alloc_idle_s * fraction) AS ai, SUM(idle_s * fraction) AS i, SUM(idle_s * fraction * " \
    "rate_micros) AS ic, SUM(CASE WHEN alloc_idle_s > 0 THEN 1 ELSE 0 END) AS nai FROM "           \
    "usage_daily GROUP BY day, team, COALESCE(currency, '')) a"
/* The number of ids in a comma-separated list column (0 for NULL). */
#define IDS(col) "COALESCE(LENGTH(" col ") - LENGTH(REPLACE(" col ", ',', '')) + 1, 0)"
/* Whether list column col of t holds usage_daily row d's GPU. */
#define HOLDS(col) "',' || t." col " || ',' LIKE '%,' || CAST(d.gpu_id AS TEXT) || ',%'"

/* usage_team_days holds exactly the rows of DAY_SUMS, with their sums,
 * and every GPU of usage_daily in its day's, team's and currency's lists
 * (each listed once); returns how many rows. */
static int64_t days_match(struct testdb_fixture *f)
{
    int64_t n = testdb_scalar(&f->db, "SELECT COUNT(*) FROM " DAY_SUMS);

    assert_int_equal(testdb_scalar(&f->db, "SELECT COUNT(*) FROM usage_team_days"), n);
    assert_int_equal(
        testdb_scalar(
            &f->db,
            "SELECT COUNT(*) FROM usage_team_days t JOIN " DAY_SUMS
            " ON a.day = t.day AND a.cur = t.currency AND (a.team = t.team OR (a.team "
            "IS NULL AND t.team IS NULL)) WHERE t.gpus = a.n AND " IDS(
                "t.gpu_ids") " = a.n AND " IDS("t.alloc_idle_ids") " = a.nai AND ABS(t.owned_s - "
                                                                   "a.o) < "
                                                                   "0.001 AND ABS(t.alloc_idle_s - "
                                                                   "a.ai) < 0.001 AND ABS(t.idle_s "
                                                                   "- a.i) < "
                                                                   "0.001 AND ((t.idle_cost IS "
                                                                   "NULL AND a.ic IS NULL) OR "
                                                                   "ABS(t.idle_cost - "
                                                                   "a.ic) < 1)"),
        n);
    assert_int_equal(
        testdb_scalar(
            &f->db,
            "SELECT COUNT(*) FROM usage_daily d JOIN usage_team_days t ON t.day = d.day "
            "AND t.currency = COALESCE(d.currency, '') AND (t.team = d.team OR (t.team "
            "IS NULL AND d.team IS NULL)) WHERE " HOLDS(
                "gpu_ids") " AND (d.alloc_idle_s "
                           "> 0) = (t.alloc_idle_ids IS NOT NULL AND " HOLDS("alloc_idle_ids") ")"),
        testdb_scalar(&f->db, "SELECT COUNT(*) FROM usage_daily"));
    return n;
}

/* Waste by team over [from, to): the GPU counts of `team`'s item (-1 when
 * it has none). */
static void waste_gpus(struct testdb_fixture *f, int64_t from, int64_t to, const char *team,
                       int64_t *gpus, int64_t *idle)
{
    struct store_insight_filter q = {.from = from, .to = to};
    json_t *items = NULL, *o;
    size_t i;

    *gpus = *idle = -1;
    assert_status(store_insight_waste_by_team(f->st, &q, &items), GI_OK);
    json_array_foreach(items, i, o) {
        const char *t = json_string_value(json_object_get(o, "team"));
        if (t && strcmp(t, team) == 0) {
            *gpus = json_integer_value(json_object_get(o, "gpus"));
            *idle = json_integer_value(json_object_get(o, "gpus_allocated_idle"));
        }
    }
    json_decref(items);
}

/* Asserts team's GPU counts over [from, to). */
static void assert_gpus(struct testdb_fixture *f, int64_t from, int64_t to, const char *team,
                        int64_t gpus, int64_t idle)
{
    int64_t g, i;

    waste_gpus(f, from, to, team, &g, &i);
    assert_int_equal(g, gpus);
    assert_int_equal(i, idle);
}

static void test_team_days(void **state)
{
    struct testdb_fixture *f = *state;
    struct store_usage_config keep, cfg;
    int64_t now = gi_now(), d = now - now % DAY - 4 * DAY, start = d - 5 * H;
    int64_t end = d + 3 * DAY + 10 * H;

    testdb_exec(f, "INSERT INTO hosts (id, hostname, first_seen_at, last_seen_at) VALUES (1, "
                   "'n1', 1, 1)");
    for (int g = 1; g <= 4; g++) {
        char sql[512];
        snprintf(sql, sizeof sql,
                 "INSERT INTO gpus (id, uuid, host_id, idx, model, team, first_seen_at, "
                 "last_seen_at) VALUES (%d, 'GPU-%d', 1, %d, 'NVIDIA A100', '%s', 1, 1)",
                 g, g, g - 1, g == 1 || g == 2 ? "core" : "ml");
        testdb_exec(f, sql);
    }
    gpu_hours(f, 1, start, end, false);
    gpu_hours(f, 2, start, d + DAY + H, false);
    gpu_hours(f, 2, d + DAY + H, d + 2 * DAY - H, true);
    gpu_hours(f, 2, d + 2 * DAY - H, end, false);
    gpu_hours(f, 3, start, end, false);
    testdb_rollup_summed(f);
    /* Days D-1 .. D+3 (and any later day the rollup fills): core and ml
     * each day. */
    assert_true(days_match(f) >= 10);
    assert_gpus(f, d, d + 3 * DAY, "core", 2, 1);
    assert_gpus(f, d, d + DAY, "core", 2, 0);
    assert_gpus(f, d + 2 * DAY, d + 3 * DAY, "core", 2, 0);
    assert_gpus(f, d, d + 3 * DAY, "ml", 1, 0);
    /* Hours at either end come from the hourly rows. */
    assert_gpus(f, d + DAY + 20 * H, d + 2 * DAY + 3 * H, "core", 2, 1);

    /* Late data: GPU 4 (team ml) reports over D+1d, and is owned from
     * then on (it is not missing). */
    gpu_hours(f, 4, d + DAY, d + 2 * DAY, false);
    testdb_rollup_summed(f);
    assert_true(days_match(f) >= 10);
    assert_gpus(f, d, d + 3 * DAY, "ml", 2, 0);
    assert_gpus(f, d, d + DAY, "ml", 1, 0);
    assert_gpus(f, d + 2 * DAY, d + 3 * DAY, "ml", 2, 0);

    /* GPU 1's first hour of D+2d moves to team ml (its day follows its
     * first hour); a re-run of another hour of that day sums it again. */
    {
        char sql[200];
        snprintf(sql, sizeof sql,
                 "UPDATE usage_hourly SET team = 'ml' WHERE gpu_id = 1 AND hour = %lld",
                 (long long)(d + 2 * DAY));
        testdb_exec(f, sql);
    }
    testdb_mark_dirty(f, 1, d + 2 * DAY + 9 * H);
    testdb_rollup_summed(f);
    assert_true(days_match(f) >= 10);
    assert_gpus(f, d + 2 * DAY, d + 3 * DAY, "core", 1, 0);
    assert_gpus(f, d + 2 * DAY, d + 3 * DAY, "ml", 3, 0);
    assert_gpus(f, d, d + 3 * DAY, "ml", 3, 0);

    /* Retention keeps two days of daily rollups: the older days go, from
     * the team days too once a day is written again. */
    store_usage_config_get(&keep);
    cfg = keep;
    cfg.retain_daily_days = 2;
    store_usage_configure(&cfg);
    testdb_mark_dirty(f, 1, end - H);
    testdb_rollup_summed(f);
    testdb_mark_dirty(f, 1, end - H);
    testdb_rollup_summed(f);
    store_usage_configure(&keep);
    {
        int64_t oldest = testdb_scalar(&f->db, "SELECT MIN(day) FROM usage_daily");
        assert_true(oldest > d);
        assert_true(days_match(f) < 10);
        assert_true(days_match(f) > 0);
        assert_int_equal(testdb_scalar(&f->db,
                                       "SELECT COUNT(*) FROM usage_team_days WHERE day < (SELECT "
                                       "MIN(day) FROM usage_groups_daily)"),
                         0);
    }
    /* The days pruned count no GPU; the hours after them still do. */
    assert_gpus(f, d, end, "core", 2, 0);
}

int main(void)
{
    const struct CMUnitTest tests[] = {
        cmocka_unit_test_setup_teardown(test_team_days, testdb_setup, testdb_teardown),
    };
    return cmocka_run_group_tests(tests, NULL, NULL);
}
