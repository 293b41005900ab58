/* The host days (usage_host_days, migration 055) as the rollup job keeps
 * them, on each store, against hand-computed rows: after the first
 * rollup, after late data adds a host to a past day, after a re-run over
 * a day whose first hour moved a GPU to another host and whose later
 * hours changed a GPU's team, after a re-run that priced a GPU's day in
 * another currency, and after retention pruned old days, every sum of
 * the report compared with usage_daily's; and the paged host report with
 * no filter, which ranks its hosts and reads its page's figures from
 * them, answers byte for byte what the path over usage_daily answers (a
 * filter every GPU matches takes that path), by day, week and month.
 *
 * From D, midnight four days ago, to E = D+3d+10h (exclusive): GPUs 1 and
 * 2 on host n1 and GPU 3 on host n2 report idle every 5 minutes from
 * D-5h; GPU 4 on host n3 reports only over D+1d, and late. */
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

/* The row of usage_host_days for host on day: owned seconds (-1: no row)
 * and GPUs. */
static void host_day(struct testdb_fixture *f, const char *host, int64_t day, int64_t owned,
                     int64_t gpus)
{
    char sql[256];

    snprintf(sql, sizeof sql,
             "SELECT COALESCE(MAX(CAST(owned_s AS BIGINT)), -1) FROM usage_host_days WHERE host = "
             "'%s' AND day = %lld",
             host, (long long)day);
    assert_int_equal(testdb_scalar(&f->db, sql), owned);
    snprintf(sql, sizeof sql,
             "SELECT COALESCE(MAX(gpus), 0) FROM usage_host_days WHERE host = '%s' AND day = %lld",
             host, (long long)day);
    assert_int_equal(testdb_scalar(&f->db, sql), gpus);
}

/* usage_host_days holds exactly one row per day, host and currency of
 * usage_daily, with their count and every sum of the report (compared
 * here with the sums of usage_daily, a NULL cost matching a NULL sum);
 * returns how many rows. */
static int64_t days_match(struct testdb_fixture *f)
{
    int64_t n = testdb_scalar(&f->db, "SELECT COUNT(*) FROM (SELECT day, host, COALESCE(currency, "
                                      "'') FROM usage_daily GROUP BY day, host, COALESCE(currency, "
                                      "'')) a");

    assert_int_equal(testdb_scalar(&f->db, "SELECT COUNT(*) FROM usage_host_days"), n);
    assert_int_equal(
        testdb_scalar(
            &f->db,
            "SELECT COUNT(*) FROM usage_host_days t JOIN (SELECT day, host, COALESCE(currency, "
            "'') AS cur, COUNT(*) AS n, SUM(owned_s * fraction) AS o, SUM(allocated_s * "
            "fraction) AS al, SUM(busy_s * fraction) AS bu, SUM(alloc_idle_s * fraction) AS ai, "
            "SUM(idle_s * fraction) AS i, SUM(unknown_s * fraction) AS un, SUM(util_sum * "
            "fraction) AS us, SUM(measured_s * fraction) AS ms, SUM(energy_wh) AS e, "
            "SUM(owned_s * fraction * rate_micros) AS oc, SUM(idle_s * fraction * rate_micros) "
            "AS ic, SUM(unknown_s * fraction * rate_micros) AS uc, SUM(CASE WHEN rate_micros IS "
            "NULL THEN owned_s * fraction ELSE 0 END) AS up FROM usage_daily GROUP BY day, host, "
            "COALESCE(currency, '')) a ON a.day = t.day AND a.cur = t.currency AND (a.host = "
            "t.host OR (a.host IS NULL AND t.host IS NULL)) WHERE t.gpus = a.n AND ABS(t.owned_s "
            "- a.o) < 0.001 AND ABS(t.allocated_s - a.al) < 0.001 AND ABS(t.busy_s - a.bu) < "
            "0.001 AND ABS(t.alloc_idle_s - a.ai) < 0.001 AND ABS(t.idle_s - a.i) < 0.001 AND "
            "ABS(t.unknown_s - a.un) < 0.001 AND ABS(t.util_sum - a.us) < 0.001 AND "
            "ABS(t.measured_s - a.ms) < 0.001 AND ABS(t.energy_wh - a.e) < 0.001 AND "
            "ABS(COALESCE(t.owned_cost, -1) - COALESCE(a.oc, -1)) < 0.001 AND "
            "ABS(COALESCE(t.idle_cost, -1) - COALESCE(a.ic, -1)) < 0.001 AND "
            "ABS(COALESCE(t.unknown_cost, -1) - COALESCE(a.uc, -1)) < 0.001 AND ABS(t.unpriced_s "
            "- a.up) < 0.001"),
        n);
    return n;
}

/* The paged host report over [from, to) as text, with no filter or with a
 * filter every GPU matches. Caller frees. */
static char *report_by(struct testdb_fixture *f, int64_t from, int64_t to,
                       enum store_usage_step step, int64_t limit, int64_t offset, bool filtered)
{
    struct store_usage_query q = {.group_by = "host",
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

/* The report by day. Caller frees. */
static char *report(struct testdb_fixture *f, int64_t from, int64_t to, int64_t limit,
                    int64_t offset, bool filtered)
{
    return report_by(f, from, to, USAGE_STEP_DAY, limit, offset, filtered);
}

/* The two paths answer the same bytes for every page of [from, to), by
 * day, week and month. */
static void assert_same(struct testdb_fixture *f, int64_t from, int64_t to)
{
    static const enum store_usage_step steps[] = {USAGE_STEP_DAY, USAGE_STEP_WEEK,
                                                  USAGE_STEP_MONTH};

    for (size_t k = 0; k < sizeof steps / sizeof *steps; k++)
        for (int64_t limit = 1; limit <= 4; limit++)
            for (int64_t off = 0; off <= 3; off++) {
                char *a = report_by(f, from, to, steps[k], limit, off, false),
                     *b = report_by(f, from, to, steps[k], limit, off, true);
                assert_string_equal(a, b);
                free(a);
                free(b);
            }
}

/* The hosts of the report's page, in order, joined by commas, and its
 * groups_total (-1: the distinct hosts of usage_daily over the range). */
static void assert_page(struct testdb_fixture *f, int64_t from, int64_t to, int64_t limit,
                        const char *hosts, int64_t groups_total)
{
    char *text = report(f, from, to, limit, 0, false), got[128] = "", last[32] = "", sql[200];
    json_t *o = json_loads(text, 0, NULL), *it;
    size_t i;

    assert_non_null(o);
    json_array_foreach(json_object_get(o, "items"), i, it) {
        const char *g = json_string_value(json_object_get(it, "group"));
        size_t n = strlen(got);
        assert_non_null(g);
        if (strcmp(g, last) != 0)
            snprintf(got + n, sizeof got - n, "%s%s", n ? "," : "", g);
        snprintf(last, sizeof last, "%s", g);
    }
    assert_string_equal(got, hosts);
    snprintf(sql, sizeof sql,
             "SELECT COUNT(DISTINCT host) FROM usage_daily WHERE day >= %lld AND day < %lld",
             (long long)from, (long long)to);
    assert_int_equal(json_integer_value(json_object_get(o, "groups_total")),
                     groups_total >= 0 ? groups_total : testdb_scalar(&f->db, sql));
    json_decref(o);
    free(text);
}

static void test_host_days(void **state)
{
    struct testdb_fixture *f = *state;
    struct store_usage_config keep, cfg;
    int64_t now = gi_now(), d = now - now % DAY - 4 * DAY, start = d - 5 * H;
    int64_t end = d + 3 * DAY + 10 * H;
    char sql[256];

    testdb_exec(f, "INSERT INTO hosts (id, hostname, first_seen_at, last_seen_at) VALUES (1, "
                   "'n1', 1, 1), (2, 'n2', 1, 1), (3, 'n3', 1, 1)");
    for (int g = 1; g <= 4; g++) {
        snprintf(sql, sizeof sql,
                 "INSERT INTO gpus (id, uuid, host_id, idx, model, team, first_seen_at, "
                 "last_seen_at) VALUES (%d, 'GPU-%d', %d, %d, 'NVIDIA A100', '%s', 1, 1)",
                 g, g, g <= 2 ? 1 : g - 1, g - 1, g <= 2 ? "core" : "ml");
        testdb_exec(f, sql);
    }
    testdb_idle_hours(&f->db, 1, start, end, 300, 0);
    testdb_idle_hours(&f->db, 2, start, end, 300, 0);
    testdb_idle_hours(&f->db, 3, start, end, 300, 0);
    testdb_rollup_summed(f);
    assert_true(days_match(f) >= 10);
    /* D-1: the 5 hours from D-5h of each GPU; then whole days. */
    host_day(f, "n1", d - DAY, 2 * 5 * H, 2);
    host_day(f, "n2", d - DAY, 5 * H, 1);
    host_day(f, "n1", d, 2 * DAY, 2);
    host_day(f, "n2", d + DAY, DAY, 1);
    host_day(f, "n3", d + DAY, -1, 0);
    assert_page(f, d, d + 3 * DAY, 1, "n1", 2);
    assert_page(f, d, d + 3 * DAY, 5, "n1,n2", 2);
    assert_same(f, d - DAY, d + 3 * DAY);

    /* Late data: GPU 4 on n3 reports over D+1d. */
    testdb_idle_hours(&f->db, 4, d + DAY, d + 2 * DAY, 300, 0);
    testdb_rollup_summed(f);
    assert_true(days_match(f) >= 10);
    host_day(f, "n3", d + DAY, DAY, 1);
    host_day(f, "n3", d, -1, 0);
    host_day(f, "n1", d + DAY, 2 * DAY, 2);
    assert_page(f, d + DAY, d + 2 * DAY, 5, "n1,n2,n3", 3);
    assert_same(f, d - DAY, d + 3 * DAY);
    assert_same(f, d + DAY, d + 2 * DAY);

    /* GPU 1's first hour of D+2d is on n2 (its day follows its first
     * hour) and GPU 3 is team core from D+2d+12h; a re-run of another
     * hour of that day sums it again. */
    snprintf(sql, sizeof sql,
             "UPDATE usage_hourly SET host = 'n2', host_id = 2 WHERE gpu_id = 1 AND hour = %lld",
             (long long)(d + 2 * DAY));
    testdb_exec(f, sql);
    snprintf(
        sql, sizeof sql,
        "UPDATE usage_hourly SET team = 'core' WHERE gpu_id = 3 AND hour >= %lld AND hour < %lld",
        (long long)(d + 2 * DAY + 12 * H), (long long)(d + 3 * DAY));
    testdb_exec(f, sql);
    testdb_mark_dirty(f, 1, d + 2 * DAY + 9 * H);
    testdb_rollup_summed(f);
    assert_true(days_match(f) >= 10);
    host_day(f, "n1", d + 2 * DAY, DAY, 1);
    host_day(f, "n2", d + 2 * DAY, 2 * DAY, 2);
    host_day(f, "n1", d + DAY, 2 * DAY, 2);
    /* D+2d alone: n2 first now; over D..D+3d n1 still leads. */
    assert_page(
        f, d + 2 * DAY, d + 3 * DAY, 1, "n2",
        2 + (testdb_scalar(&f->db, "SELECT COUNT(*) FROM usage_host_days WHERE host = 'n3'") > 1));
    assert_page(f, d, d + 3 * DAY, 1, "n1", 3);
    assert_same(f, d - DAY, d + 3 * DAY);
    assert_same(f, d + 2 * DAY, d + 3 * DAY);

    /* GPU 3's hours of D+1d but the first are priced in EUR, then the
     * first is computed again, which sums the day again: n2's day has a
     * row in EUR (the day's row takes its first hour's price) and GPU 3's
     * cost; the page's figures read from the host days show it as the
     * path over usage_daily does. */
    snprintf(sql, sizeof sql,
             "UPDATE usage_hourly SET rate_micros = 1500000, currency = 'EUR' WHERE gpu_id = 3 "
             "AND hour >= %lld AND hour < %lld",
             (long long)(d + DAY), (long long)(d + 2 * DAY));
    testdb_exec(f, sql);
    testdb_mark_dirty(f, 3, d + DAY + 5 * H);
    testdb_rollup_summed(f);
    assert_true(days_match(f) >= 10);
    snprintf(sql, sizeof sql,
             "SELECT CAST(ROUND(owned_cost / 1000000) AS BIGINT) FROM usage_host_days WHERE host "
             "= 'n2' AND day = %lld AND currency = 'EUR'",
             (long long)(d + DAY));
    assert_int_equal(testdb_scalar(&f->db, sql), 86400 * 3 / 2);
    {
        char *text = report(f, d + DAY, d + 2 * DAY, 5, 0, false);
        assert_non_null(strstr(text, "\"amount\":\"36.00\",\"currency\":\"EUR\""));
        free(text);
    }
    assert_same(f, d - DAY, d + 3 * DAY);
    assert_same(f, d + DAY, d + 2 * DAY);

    /* The ranking is read from usage_host_days: a row changed there by
     * hand changes the order (the rollup writes it again below). */
    snprintf(sql, sizeof sql, "UPDATE usage_host_days SET owned_s = 0 WHERE host = 'n1'");
    testdb_exec(f, sql);
    assert_page(f, d, d + 3 * DAY, 1, "n2", 3);

    /* Retention keeps two days of daily rollups: the older days go, from
     * the host days too once a day is written again; a range that reaches
     * them takes the path over usage_daily. */
    store_usage_config_get(&keep);
    cfg = keep;
    cfg.retain_daily_days = 2;
    store_usage_configure(&cfg);
    testdb_mark_dirty(f, 1, end - H);
    testdb_rollup_summed(f);
    testdb_mark_dirty(f, 1, end - H);
    testdb_rollup_summed(f);
    assert_same(f, d - DAY, now - now % DAY + DAY);
    store_usage_configure(&keep);
    assert_true(testdb_scalar(&f->db, "SELECT MIN(day) FROM usage_daily") > d);
    assert_int_equal(testdb_scalar(&f->db, "SELECT COUNT(*) FROM usage_host_days WHERE day < "
                                           "(SELECT MIN(day) FROM usage_groups_daily)"),
                     0);
}

int main(void)
{
    const struct CMUnitTest tests[] = {
        cmocka_unit_test_setup_teardown(test_host_days, testdb_setup, testdb_teardown),
    };
    return cmocka_run_group_tests(tests, NULL, NULL);
}
