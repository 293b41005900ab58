/* The idle list's day rows (usage_idle_days: each GPU-day's idle tail,
 * migrations 043 and 063), as the rollup job keeps them, on each store:
 * after the first rollup, after late data fills two hours, after a rollup
 * re-run over a day one of whose hours changed environment, and after
 * retention pruned old hourly rows, the table holds exactly the tails the
 * hourly rows give (told apart from how the job finds them), its whole
 * days exactly the GPU-days of 24 idle hours in one combination of the
 * filter dimensions, with their sums; and the idle list read through
 * those rows equals the one read hour by hour.
 *
 * From D, midnight four days ago: GPUs 1 and 2 of team core, never held,
 * report idle from D-5h to E = D+3d+10h (exclusive); GPU 2 misses the
 * hours D+1d+6h and D+1d+7h at first, which breaks its run (the first of
 * them has no reading at all) until late data fills them. */
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

static int64_t day0(void)
{
    int64_t now = gi_now();
    return now - now % DAY - 4 * DAY;
}

static void rollup(struct testdb_fixture *f)
{
    struct store_usage_run run;

    assert_status(store_usage_rollup(f->st, NULL, gi_now(), 0, &run), GI_OK);
    assert_int_equal(run.dirty_left, 0);
}

/* The GPU-days whose 24 hours are idle in one combination of the filter
 * dimensions, with their sums, from the hourly rows. */
#define IDLE_SUMS                                                                                  \
    "(SELECT gpu_id, hour - hour % 86400 AS day, COUNT(*) AS n, SUM(idle_s * fraction) AS fs, "    \
    "SUM(idle_s * fraction * rate_micros) AS c, MIN(team) AS team FROM usage_hourly WHERE "        \
    "allocated_s = 0 AND idle_s > 0 GROUP BY gpu_id, hour - hour % 86400, team, env, pool, "       \
    "cluster, cloud, model, datacenter_id, currency HAVING COUNT(*) = 24) a"

/* The idle tail of every GPU-day, from the hourly rows, told apart from
 * how the rollup job finds it: an idle hour of the day's newest hour's
 * combination is in the tail when every hour from it to the newest is
 * one. */
#define SAME_AS_X(k)                                                                               \
    k ".allocated_s = 0 AND " k ".idle_s > 0 AND " k ".team IS NOT DISTINCT FROM x.team AND " k    \
      ".env IS NOT DISTINCT FROM x.env AND " k ".pool IS NOT DISTINCT FROM x.pool AND " k          \
      ".cluster IS NOT DISTINCT FROM x.cluster AND " k                                             \
      ".cloud IS NOT DISTINCT FROM x.cloud AND " k ".model IS NOT DISTINCT FROM x.model AND " k    \
      ".datacenter_id IS NOT DISTINCT FROM "                                                       \
      "x.datacenter_id AND " k ".currency IS NOT DISTINCT FROM x.currency"
#define TAIL_SUMS                                                                                  \
    "(SELECT n.gpu_id, n.day, MIN(h.hour) AS first, MAX(h.hour) AS last, SUM(h.idle_s * "          \
    "h.fraction) AS fs FROM (SELECT gpu_id, hour - hour % 86400 AS day, MAX(hour) AS top FROM "    \
    "usage_hourly GROUP BY gpu_id, hour - hour % 86400) n JOIN usage_hourly x ON x.gpu_id = "      \
    "n.gpu_id AND x.hour = n.top JOIN usage_hourly h ON h.gpu_id = n.gpu_id AND h.hour >= n.day "  \
    "AND h.hour <= n.top WHERE " SAME_AS_X("x") " AND " SAME_AS_X(                                 \
        "h") " AND (SELECT COUNT(*) "                                                              \
             "FROM usage_hourly k WHERE k.gpu_id = n.gpu_id AND k.hour >= h.hour AND k.hour <= "   \
             "n.top AND " SAME_AS_X(                                                               \
                 "k") ") = (n.top - h.hour) / 3600 + 1 GROUP BY n.gpu_id, n.day) t"

/* From day min_day on, usage_idle_days holds exactly the tails of
 * TAIL_SUMS, with their sums, and its whole days are exactly the GPU-days
 * of IDLE_SUMS (retention drops a day's row with the day's first hours,
 * so a day it has cut into is left out); returns how many whole days. */
static int64_t days_match(struct testdb_fixture *f, int64_t min_day)
{
    char sql[4096];
    int64_t n, tails;

#define SCALAR(...) (snprintf(sql, sizeof sql, __VA_ARGS__), testdb_scalar(&f->db, sql))
    n = SCALAR("SELECT COUNT(*) FROM %s WHERE a.day >= %lld", IDLE_SUMS, (long long)min_day);
    tails = SCALAR("SELECT COUNT(*) FROM %s WHERE t.day >= %lld", TAIL_SUMS, (long long)min_day);
    assert_int_equal(
        SCALAR("SELECT COUNT(*) FROM usage_idle_days WHERE day >= %lld", (long long)min_day),
        tails);
    assert_int_equal(SCALAR("SELECT COUNT(*) FROM usage_idle_days d JOIN %s ON t.gpu_id = d.gpu_id "
                            "AND t.day = d.day WHERE t.day >= %lld AND t.first = d.first_hour AND "
                            "t.last = d.last_hour AND ABS(d.idle_fs - t.fs) < 0.001",
                            TAIL_SUMS, (long long)min_day),
                     tails);
    assert_int_equal(SCALAR("SELECT COUNT(*) FROM usage_idle_days WHERE day >= %lld AND "
                            "first_hour = day AND last_hour = day + 82800",
                            (long long)min_day),
                     n);
    assert_int_equal(SCALAR("SELECT COUNT(*) FROM usage_idle_days d JOIN %s ON a.gpu_id = d.gpu_id "
                            "AND a.day = d.day WHERE a.day >= %lld AND a.team = d.team AND "
                            "d.first_hour = d.day AND ABS(d.idle_fs - a.fs) < 0.001 AND "
                            "((d.idle_cost IS NULL AND a.c IS NULL) OR ABS(d.idle_cost - a.c) < 1)",
                            IDLE_SUMS, (long long)min_day),
                     n);
#undef SCALAR
    return n;
}

/* The idle list of the range, as JSON text (caller frees). */
static char *idle_list(struct testdb_fixture *f, int64_t from, int64_t to, const char *team)
{
    struct store_insight_filter q = {.team = team, .from = from, .to = to};
    json_t *items = NULL;
    char *text;

    assert_status(store_insight_idle(f->st, &q, 1, &items), GI_OK);
    text = json_dumps(items, JSON_SORT_KEYS);
    assert_non_null(text);
    json_decref(items);
    return text;
}

/* The idle list read through the idle days equals the one read hour by
 * hour (every tail moved before the range for the while, so that none is
 * taken); returns gpu's hours in it, -1 when it is not in it. */
static int64_t list_same(struct testdb_fixture *f, int64_t from, int64_t to, const char *team,
                         const char *gpu)
{
    char *by_days = idle_list(f, from, to, team), *by_hours;
    json_t *v;
    json_int_t hours = -1;
    size_t i;
    json_t *o;

    testdb_exec(f, "UPDATE usage_idle_days SET first_hour = first_hour - 1000000000000");
    by_hours = idle_list(f, from, to, team);
    testdb_exec(f, "UPDATE usage_idle_days SET first_hour = first_hour + 1000000000000");
    assert_string_equal(by_days, by_hours);
    v = json_loads(by_days, 0, NULL);
    assert_non_null(v);
    json_array_foreach(v, i, o)
        if (strcmp(json_string_value(json_object_get(o, "gpu")), gpu) == 0)
            hours = json_integer_value(json_object_get(o, "hours"));
    json_decref(v);
    free(by_days);
    free(by_hours);
    return hours;
}

static void test_idle_days(void **state)
{
    struct testdb_fixture *f = *state;
    struct store_usage_config keep, cfg;
    int64_t d = day0(), start = d - 5 * H, end = d + 3 * DAY + 10 * H, gap = d + DAY + 6 * H;

    testdb_exec(f, "INSERT INTO hosts (id, hostname, first_seen_at, last_seen_at) VALUES (1, 'n1', "
                   "1, 1)");
    for (int g = 1; g <= 2; g++) {
        char sql[512];
        snprintf(sql, sizeof sql,
                 "INSERT INTO gpus (id, uuid, host_id, idx, model, team, first_seen_at, "
                 "last_seen_at) VALUES (%d, 'GPU-%d', 1, %d, 'NVIDIA A100', 'core', 1, 1)",
                 g, g, g - 1);
        testdb_exec(f, sql);
    }
    testdb_idle_hours(&f->db, 1, start, end, 300, 0);
    testdb_idle_hours(&f->db, 2, start, end, 300, gap);
    rollup(f);
    /* GPU 1's days D, D+1, D+2; GPU 2's D and D+2. */
    assert_int_equal(days_match(f, 0), 5);
    /* GPU 1 is idle over the whole range; GPU 2 since the second hour of its
     * gap (the rollup fills the first as owned and unknown; the reading after
     * the gap covers the last 10 minutes of the second). */
    assert_int_equal(list_same(f, start, end, NULL, "GPU-1"), (end - start) / H);
    assert_int_equal(list_same(f, start, end, NULL, "GPU-2"), (end - gap - H) / H);
    assert_int_equal(list_same(f, start + 30 * 60, end, "core", "GPU-1"), (end - start) / H - 1);
    assert_int_equal(list_same(f, d + DAY, end, NULL, "GPU-1"), (end - d - DAY) / H);
    assert_int_equal(list_same(f, start, end, "other", "GPU-1"), -1);

    /* Late data fills GPU 2's gap: its run now spans the range too. */
    testdb_idle_hours(&f->db, 2, gap, gap + 2 * H, 300, 0);
    rollup(f);
    assert_int_equal(days_match(f, 0), 6);
    assert_int_equal(list_same(f, start, end, NULL, "GPU-2"), (end - start) / H);

    /* One hour of GPU 1 in another environment; a re-run of another hour of
     * that day sums the day again: no longer one combination, read by
     * hours, same answer. */
    {
        char sql[256];
        snprintf(sql, sizeof sql,
                 "UPDATE usage_hourly SET env = 'lab' WHERE gpu_id = 1 AND hour = %lld; INSERT "
                 "INTO usage_dirty (hour, gpu_id, marked_at) VALUES (%lld, 1, 1)",
                 (long long)(d + 2 * DAY + 3 * H), (long long)(d + 2 * DAY + 9 * H));
        testdb_exec(f, sql);
    }
    rollup(f);
    assert_int_equal(days_match(f, 0), 5);
    assert_int_equal(testdb_scalar(&f->db, "SELECT COUNT(*) FROM usage_idle_days WHERE gpu_id = 1 "
                                           "AND first_hour = day AND last_hour = day + 82800"),
                     2);
    /* That day's tail starts after the hour in the other environment. */
    {
        char sql[160];
        snprintf(sql, sizeof sql,
                 "SELECT first_hour FROM usage_idle_days WHERE gpu_id = 1 AND day = %lld",
                 (long long)(d + 2 * DAY));
        assert_int_equal(testdb_scalar(&f->db, sql), d + 2 * DAY + 4 * H);
    }
    /* ... with the hour before it idle (in the other environment): the only
     * tail so marked. */
    assert_int_equal(testdb_scalar(&f->db, "SELECT COUNT(*) FROM usage_idle_days WHERE "
                                           "idle_before = 1"),
                     1);
    {
        char sql[160];
        snprintf(sql, sizeof sql,
                 "SELECT idle_before FROM usage_idle_days WHERE gpu_id = 1 AND day = %lld",
                 (long long)(d + 2 * DAY));
        assert_int_equal(testdb_scalar(&f->db, sql), 1);
    }
    /* A team filter that both environments pass: the run goes on there. */
    assert_int_equal(list_same(f, start, end, "core", "GPU-1"), (end - start) / H);
    assert_int_equal(list_same(f, start, end, NULL, "GPU-1"), (end - start) / H);

    /* Retention prunes the hourly rows older than two days, and the idle days
     * with them: the run starts at the oldest hour kept. */
    store_usage_config_get(&keep);
    cfg = keep;
    cfg.retain_hourly_days = 2;
    store_usage_configure(&cfg);
    {
        char sql[160];
        snprintf(sql, sizeof sql,
                 "INSERT INTO usage_dirty (hour, gpu_id, marked_at) VALUES (%lld, 1, 1)",
                 (long long)(end - H));
        testdb_exec(f, sql);
    }
    rollup(f);
    store_usage_configure(&keep);
    {
        int64_t oldest = testdb_scalar(&f->db, "SELECT MIN(hour) FROM usage_hourly WHERE "
                                               "gpu_id = 1");
        assert_true(oldest > start);
        assert_true(days_match(f, oldest - oldest % DAY + DAY) < 5);
        assert_int_equal(list_same(f, start, end, NULL, "GPU-1"), (end - oldest) / H);
    }
}

int main(void)
{
    const struct CMUnitTest tests[] = {
        cmocka_unit_test_setup_teardown(test_idle_days, testdb_setup, testdb_teardown),
    };
    return cmocka_run_group_tests(tests, NULL, NULL);
}
