/* Unit tests for the health rollup, the health score and the lifecycle
 * rules (src/store/health.c, lifecycle_rules.c), on each store, against
 * hand-made telemetry histories: the daily rollup from raw samples (p95,
 * counter resets, XID events, late data), the score's reasons, the five
 * example rules firing exactly when they should and not one day earlier,
 * a dry run changing nothing, a refused transition, one ticket per
 * dedupe key, a webhook delivery and a reserved spare. */
#include "unit.h"
#include "testdb.h"

#include "core/status.h"
#include "core/util.h"
#include "store/store.h"

#include <string.h>
#include <time.h>

#define DAY 86400

static int raw_exec(const struct testdb *t, const char *sql)
{
    sqlite3 *db = NULL;
    int rc;

    if (t->name[0] != '\0')
        return testdb_psql(t->locator, sql, NULL, 0);
    if (sqlite3_open(t->locator, &db) != SQLITE_OK)
        return -1;
    sqlite3_busy_timeout(db, 5000);
    rc = sqlite3_exec(db, sql, NULL, NULL, NULL);
    sqlite3_close(db);
    return rc == SQLITE_OK ? 0 : -1;
}

/* GPUs 1..n as GPU-<i> with serial GS<i>, model H100, and an active asset
 * G<i> in data center "dc1" for each. */
static void fleet(struct testdb_fixture *f, int n, int64_t now)
{
    struct store_dc dc = {.name = "dc1", .location = "", .rows = -1};
    struct store_asset_err err = {0};
    json_t *out = NULL;
    char sql[256], tag[16], serial[16], uuid[16];

    assert_status(store_dc_create(f->st, "t", &dc, &out), GI_OK);
    json_decref(out);
    for (int i = 1; i <= n; i++) {
        json_t *in;
        snprintf(sql, sizeof sql,
                 "INSERT INTO gpus (id, uuid, serial, model, first_seen_at, last_seen_at) VALUES "
                 "(%d, 'GPU-%d', 'GS%d', 'H100', %lld, %lld)",
                 i, i, i, (long long)now, (long long)now);
        assert_int_equal(raw_exec(&f->db, sql), 0);
        snprintf(tag, sizeof tag, "G%d", i);
        snprintf(serial, sizeof serial, "GS%d", i);
        snprintf(uuid, sizeof uuid, "GPU-%d", i);
        in = json_pack("{s:s, s:s, s:s, s:s, s:{s:s}}", "tag", tag, "kind", "gpu", "serial", serial,
                       "model", "H100", "location", "datacenter", "dc1");
        assert_status(store_asset_create(f->st, "t", in, &out, &err), GI_OK);
        assert_string_equal(json_string_value(json_object_get(out, "gpu_uuid")), uuid);
        json_decref(out);
        json_decref(in);
    }
}

static void put_day(struct store *st, int64_t gpu, int64_t day, int64_t xid, int64_t ecc_u,
                    double p95, double util)
{
    struct store_health_day d = {.gpu_id = gpu,
                                 .day = day,
                                 .samples = 100,
                                 .xid_events = xid > 0,
                                 .xid_code = xid,
                                 .ecc_corrected_inc = 0,
                                 .ecc_uncorrected_inc = ecc_u,
                                 .temp_p95_c = p95,
                                 .temp_max_c = p95,
                                 .util_avg = util};
    assert_status(store_health_day_put(st, &d, day), GI_OK);
}

static json_t *run_rule(struct store *st, int64_t id, bool dry, int64_t now)
{
    json_t *rep = NULL;
    assert_status(store_lrule_evaluate(st, id, NULL, dry, "lifecycle:rules", now, &rep), GI_OK);
    return rep;
}

static int64_t matched(const json_t *rep)
{
    return json_integer_value(json_object_get(rep, "matched"));
}

static const char *stage_of(struct store *st, const char *tag)
{
    static char buf[32];
    json_t *doc = NULL;
    assert_status(store_asset_get(st, tag, 0, 0, &doc), GI_OK);
    gi_strlcpy(buf, json_string_value(json_object_get(doc, "stage")), sizeof buf);
    json_decref(doc);
    return buf;
}

/* The first action result of the report's only match. */
static const json_t *first_action(const json_t *rep)
{
    const json_t *m = json_array_get(json_object_get(rep, "matches"), 0);
    return json_array_get(json_object_get(m, "actions"), 0);
}

static const char *result_of(const json_t *action)
{
    return json_string_value(json_object_get(action, "result"));
}

/* The seeded example rules, by their place in the seed. */
static int64_t example(struct store *st, int n)
{
    json_t *items = NULL;
    int64_t id;
    bool seeded;
    assert_status(store_lrules_seed(st, &seeded), GI_OK);
    assert_status(store_lrule_list(st, &items), GI_OK);
    assert_true(json_array_size(items) >= 5);
    id = json_integer_value(json_object_get(json_array_get(items, (size_t)n - 1), "id"));
    assert_false(json_is_true(json_object_get(json_array_get(items, (size_t)n - 1), "enabled")));
    json_decref(items);
    return id;
}

static void test_xid_rule_not_a_day_early(void **state)
{
    struct testdb_fixture *f = *state;
    int64_t now = gi_now(), today = now - now % DAY, rule;
    json_t *rep;

    fleet(f, 1, now);
    rule = example(f->st, 1);
    /* XID on 3 days in the window and one day just outside it: 3 is not
     * more than 3. */
    put_day(f->st, 1, today - 30 * DAY, 79, 0, 60, 50);
    put_day(f->st, 1, today - 20 * DAY, 79, 0, 60, 50);
    put_day(f->st, 1, today - 10 * DAY, 31, 0, 60, 50);
    put_day(f->st, 1, today - 1 * DAY, 79, 0, 60, 50);
    rep = run_rule(f->st, rule, false, now);
    assert_int_equal(matched(rep), 0);
    json_decref(rep);
    assert_string_equal(stage_of(f->st, "G1"), "active");
    /* The oldest day of the 30-day window makes it 4. */
    put_day(f->st, 1, today - 29 * DAY, 79, 0, 60, 50);
    rep = run_rule(f->st, rule, false, now);
    assert_int_equal(matched(rep), 1);
    assert_string_equal(result_of(first_action(rep)), "moved");
    json_decref(rep);
    assert_string_equal(stage_of(f->st, "G1"), "diagnostic_repair");
    /* Now out of the active stage, the rule no longer matches. */
    rep = run_rule(f->st, rule, false, now);
    assert_int_equal(matched(rep), 0);
    json_decref(rep);
    /* A rule event on the asset. */
    assert_int_equal(testdb_scalar(&f->db, "SELECT COUNT(*) FROM asset_events WHERE kind = 'rule'"),
                     1);
}

static void test_ecc_rule_reserves_spare(void **state)
{
    struct testdb_fixture *f = *state;
    struct store_asset_err err = {0};
    int64_t now = gi_now(), today = now - now % DAY, rule;
    json_t *rep, *in, *out = NULL, *m;

    fleet(f, 2, now);
    rule = example(f->st, 2);
    in = json_pack("{s:s, s:s, s:s, s:s, s:{s:s}}", "tag", "SP1", "kind", "gpu", "model", "H100",
                   "stage", "spare", "location", "datacenter", "dc1");
    assert_status(store_asset_create(f->st, "t", in, &out, &err), GI_OK);
    json_decref(out);
    json_decref(in);
    put_day(f->st, 1, today - 3 * DAY, 0, 2, 60, 50); /* three days ago: not "now" */
    put_day(f->st, 1, today, 0, 0, 60, 50);
    rep = run_rule(f->st, rule, false, now);
    assert_int_equal(matched(rep), 0);
    json_decref(rep);
    put_day(f->st, 2, today, 0, 1, 60, 50);
    rep = run_rule(f->st, rule, false, now);
    assert_int_equal(matched(rep), 1);
    m = json_array_get(json_object_get(rep, "matches"), 0);
    assert_string_equal(json_string_value(json_object_get(m, "asset")), "G2");
    assert_string_equal(result_of(json_array_get(json_object_get(m, "actions"), 0)), "moved");
    assert_string_equal(result_of(json_array_get(json_object_get(m, "actions"), 1)), "reserved");
    assert_string_equal(json_string_value(json_object_get(
                            json_array_get(json_object_get(m, "actions"), 1), "spare")),
                        "SP1");
    json_decref(rep);
    assert_string_equal(stage_of(f->st, "G2"), "diagnostic_repair");
    assert_int_equal(testdb_scalar(&f->db, "SELECT COUNT(*) FROM asset_reservations WHERE "
                                           "released_at IS NULL"),
                     1);
    assert_int_equal(
        testdb_scalar(&f->db, "SELECT COUNT(*) FROM asset_events WHERE kind = 'reserved'"), 2);
    /* The spare itself (stage spare) now matches nothing: its health is clean. */
}

static void test_temp_rule_one_ticket(void **state)
{
    struct testdb_fixture *f = *state;
    int64_t now = gi_now(), today = now - now % DAY, rule;
    json_t *rep;

    fleet(f, 1, now);
    rule = example(f->st, 3);
    for (int d = 0; d < 6; d++)
        put_day(f->st, 1, today - d * DAY, 0, 0, 90, 50);
    put_day(f->st, 1, today - 6 * DAY, 0, 0, 85, 50); /* 85 is not above 85 */
    rep = run_rule(f->st, rule, false, now);
    assert_int_equal(matched(rep), 0);
    json_decref(rep);
    put_day(f->st, 1, today - 6 * DAY, 0, 0, 86, 50);
    rep = run_rule(f->st, rule, false, now);
    assert_int_equal(matched(rep), 1);
    assert_string_equal(result_of(first_action(rep)), "opened");
    json_decref(rep);
    /* Firing again opens no second ticket. */
    rep = run_rule(f->st, rule, false, now);
    assert_int_equal(matched(rep), 1);
    assert_string_equal(result_of(first_action(rep)), "existing");
    json_decref(rep);
    assert_int_equal(testdb_scalar(&f->db, "SELECT COUNT(*) FROM tickets"), 1);
    assert_int_equal(testdb_scalar(&f->db, "SELECT COUNT(*) FROM tickets WHERE dedupe_key LIKE "
                                           "'rule:%:G1' AND title LIKE 'GPU running hot%'"),
                     1);
}

static void test_util_rule_thirty_days(void **state)
{
    struct testdb_fixture *f = *state;
    int64_t now = gi_now(), today = now - now % DAY, rule;
    json_t *rep;

    fleet(f, 1, now);
    rule = example(f->st, 4);
    for (int d = 0; d < 29; d++)
        put_day(f->st, 1, today - d * DAY, 0, 0, 60, 5);
    rep = run_rule(f->st, rule, false, now);
    assert_int_equal(matched(rep), 0);
    json_decref(rep);
    put_day(f->st, 1, today - 29 * DAY, 0, 0, 60, 5);
    rep = run_rule(f->st, rule, true, now); /* dry run first: nothing changes */
    assert_int_equal(matched(rep), 1);
    assert_string_equal(result_of(first_action(rep)), "would_move");
    json_decref(rep);
    assert_string_equal(stage_of(f->st, "G1"), "active");
    assert_int_equal(testdb_scalar(&f->db, "SELECT COUNT(*) FROM asset_events WHERE kind IN "
                                           "('rule', 'stage')"),
                     0);
    rep = run_rule(f->st, rule, false, now);
    assert_int_equal(matched(rep), 1);
    json_decref(rep);
    assert_string_equal(stage_of(f->st, "G1"), "refurbishment_candidate");
}

static void date_in(int64_t days_from_now, char *buf, size_t len)
{
    time_t t = (time_t)(gi_now() + days_from_now * DAY);
    struct tm tm;
    gmtime_r(&t, &tm);
    strftime(buf, len, "%Y-%m-%d", &tm);
}

static void test_warranty_rule(void **state)
{
    struct testdb_fixture *f = *state;
    struct store_asset_err err = {0};
    int64_t now = gi_now(), rule;
    json_t *rep, *in, *out = NULL;
    char d31[16], d30[16];

    fleet(f, 1, now);
    rule = example(f->st, 5);
    date_in(31, d31, sizeof d31);
    date_in(30, d30, sizeof d30);
    in = json_pack("{s:s}", "warranty_end", d31);
    assert_status(store_asset_update(f->st, "t", "G1", in, &out, &err), GI_OK);
    json_decref(out);
    json_decref(in);
    rep = run_rule(f->st, rule, false, now);
    assert_int_equal(matched(rep), 0);
    json_decref(rep);
    in = json_pack("{s:s}", "warranty_end", d30);
    assert_status(store_asset_update(f->st, "t", "G1", in, &out, &err), GI_OK);
    json_decref(out);
    json_decref(in);
    rep = run_rule(f->st, rule, false, now);
    assert_int_equal(matched(rep), 1);
    assert_string_equal(result_of(first_action(rep)), "opened");
    json_decref(rep);
}

/* A custom rule: a refused transition is reported, not a failure, and a
 * webhook action enqueues a rule.fired delivery. */
static void test_refused_and_webhook(void **state)
{
    struct testdb_fixture *f = *state;
    struct store_webhook w = {.name = "ops",
                              .url = "http://127.0.0.1:9/x",
                              .format = "generic",
                              .events = "rule.fired",
                              .enabled = 1};
    struct store_lrule r = {.name = "odd", .enabled = 1};
    int64_t now = gi_now(), id, fired = 0, expired = -1;
    json_t *out = NULL, *rep;
    char field[128], err[256];

    fleet(f, 1, now);
    assert_status(store_webhook_create(f->st, "t", &w, &out), GI_OK);
    json_decref(out);
    r.condition = json_pack("{s:s, s:s}", "attr", "tag", "=", "G1");
    r.actions =
        json_pack("[{s:s, s:s}, {s:s}]", "type", "stage", "to", "received", "type", "webhook");
    assert_true(store_lrule_check(r.condition, r.actions, field, sizeof field, err, sizeof err));
    assert_status(store_lrule_create(f->st, "t", &r, &out), GI_OK);
    id = json_integer_value(json_object_get(out, "id"));
    assert_int_equal(json_integer_value(json_object_get(out, "version")), 1);
    json_decref(out);
    rep = run_rule(f->st, id, false, now);
    assert_int_equal(matched(rep), 1);
    assert_string_equal(result_of(first_action(rep)), "refused");
    assert_non_null(json_object_get(first_action(rep), "error"));
    json_decref(rep);
    assert_string_equal(stage_of(f->st, "G1"), "active");
    assert_int_equal(testdb_scalar(&f->db, "SELECT COUNT(*) FROM webhook_deliveries WHERE event "
                                           "= 'rule.fired'"),
                     1);
    /* The job runs the enabled rules: this one (the seeds are disabled). */
    assert_status(store_lrules_run(f->st, "lifecycle:rules", now, &fired, &expired), GI_OK);
    assert_int_equal(fired, 1);
    assert_int_equal(expired, 0);
    json_decref(r.condition);
    json_decref(r.actions);
}

static void test_check_names_the_field(void **state)
{
    char field[128], err[256];
    json_t *c = json_pack("{s:[{s:s, s:s}, {s:s, s:i, s:i}]}", "all", "attr", "kind", "=", "gpu",
                          "metric", "xid_days", "window_days", 400, ">", 3);
    json_t *a = json_pack("[{s:s, s:s}]", "type", "stage", "to", "active");
    json_t *bad = json_pack("[{s:s, s:s}]", "type", "stage", "to", "broken");

    (void)state;
    assert_false(store_lrule_check(c, a, field, sizeof field, err, sizeof err));
    assert_string_equal(field, "condition.all[1].window_days");
    json_decref(c);
    c = json_pack("{s:s, s:i, s:i}", "metric", "xid_days", "window_days", 30, ">", 3);
    assert_true(store_lrule_check(c, a, field, sizeof field, err, sizeof err));
    assert_false(store_lrule_check(c, bad, field, sizeof field, err, sizeof err));
    assert_string_equal(field, "actions[0].to");
    json_decref(c);
    c = json_pack("{s:s, s:s}", "attr", "colour", "=", "red");
    assert_false(store_lrule_check(c, a, field, sizeof field, err, sizeof err));
    assert_string_equal(field, "condition.attr");
    json_decref(c);
    json_decref(a);
    json_decref(bad);
}

/* The rollup from raw samples: p95, counter increases across a reset,
 * XID events, util from usage_daily; late samples re-roll their day. */
static void test_rollup_from_samples(void **state)
{
    struct testdb_fixture *f = *state;
    int64_t now = gi_now(), day = now - now % DAY - 2 * DAY, old = now - 3600;
    struct store_health_run res;
    json_t *health = NULL;
    char sql[4096];
    size_t off = 0;
    int64_t asset = 0;

    fleet(f, 1, now);
    /* 20 temperature samples 61..80: p95 (nearest rank) is 79. ECC
     * uncorrected 5 before the day, then 5, 6, 0 (reset), 2: +1 +2 = 3.
     * XID 79 held over two samples, then 31: two events. */
    off += (size_t)snprintf(sql + off, sizeof sql - off,
                            "INSERT INTO gpu_samples (ts, gpu_id, temp_c, ecc_uncorrected, xid) "
                            "VALUES (%lld, 1, NULL, 5, NULL)",
                            (long long)(day - 60));
    for (int i = 0; i < 20; i++) {
        long long ecc = i < 5 ? 5 : i < 10 ? 6 : i < 15 ? 0 : 2;
        const char *xid = i == 3 || i == 4 ? "79" : i == 8 ? "31" : "NULL";
        off += (size_t)snprintf(sql + off, sizeof sql - off, ", (%lld, 1, %d, %lld, %s)",
                                (long long)(day + i * 600), 61 + i, ecc, xid);
    }
    assert_true(off < sizeof sql);
    assert_int_equal(raw_exec(&f->db, sql), 0);
    snprintf(sql, sizeof sql,
             "INSERT INTO usage_daily (gpu_id, day, owned_s, allocated_s, busy_s, alloc_idle_s, "
             "idle_s, unknown_s, measured_s, util_sum, mem_sum, energy_wh, updated_at) VALUES "
             "(1, %lld, 86400, 0, 0, 0, 0, 0, 1000, 40000, 0, 12.5, %lld)",
             (long long)day, (long long)old);
    assert_int_equal(raw_exec(&f->db, sql), 0);
    assert_status(store_health_rollup(f->st, now, 0, &res), GI_OK);
    assert_int_equal(res.days, 1);
    assert_int_equal(testdb_scalar(&f->db, "SELECT COUNT(*) FROM gpu_health_daily WHERE "
                                           "temp_p95_c = 79 AND temp_max_c = 80 AND "
                                           "ecc_uncorrected_inc = 3 AND xid_events = 2 AND "
                                           "samples = 20 AND util_avg = 40"),
                     1);
    /* Nothing new: nothing rolled up. */
    assert_status(store_health_rollup(f->st, now, 0, &res), GI_OK);
    assert_int_equal(res.days, 0);
    /* A late sample: the usage rollup rewrites the day, which moves it past
     * the watermark again. */
    snprintf(sql, sizeof sql,
             "INSERT INTO gpu_samples (ts, gpu_id, temp_c) VALUES (%lld, 1, 95);"
             "UPDATE usage_daily SET updated_at = %lld WHERE gpu_id = 1",
             (long long)(day + 30000), (long long)(old + 60));
    assert_int_equal(raw_exec(&f->db, sql), 0);
    assert_status(store_health_rollup(f->st, now, 0, &res), GI_OK);
    assert_int_equal(res.days, 1);
    assert_int_equal(
        testdb_scalar(&f->db, "SELECT COUNT(*) FROM gpu_health_daily WHERE temp_max_c = 95 AND "
                              "samples = 21"),
        1);
    /* The score: uncorrectable ECC and XID days, with reasons. */
    assert_status(store_asset_id(f->st, "G1", &asset), GI_OK);
    assert_status(store_asset_health(f->st, asset, now, &health), GI_OK);
    assert_int_equal(json_integer_value(json_object_get(health, "score")), 100 - 40 - 10);
    assert_int_equal(json_array_size(json_object_get(health, "reasons")), 2);
    assert_string_equal(json_string_value(json_object_get(
                            json_array_get(json_object_get(health, "reasons"), 1), "detail")),
                        "XID 79, 31 on 1 of the last 30 days");
    json_decref(health);
}

/* The current day, rewritten by the usage rollup every minute, is rolled
 * up again at most every ten minutes. */
static void test_today_throttled(void **state)
{
    struct testdb_fixture *f = *state;
    int64_t now = gi_now(), today = now - now % DAY;
    struct store_health_run res;
    char sql[1024];

    fleet(f, 1, now);
    snprintf(sql, sizeof sql,
             "INSERT INTO gpu_samples (ts, gpu_id, temp_c) VALUES (%lld, 1, 50);"
             "INSERT INTO usage_daily (gpu_id, day, owned_s, allocated_s, busy_s, alloc_idle_s, "
             "idle_s, unknown_s, measured_s, util_sum, mem_sum, energy_wh, updated_at) VALUES "
             "(1, %lld, 60, 0, 0, 0, 0, 0, 60, 600, 0, 1, %lld)",
             (long long)today, (long long)today, (long long)(now - 3600));
    assert_int_equal(raw_exec(&f->db, sql), 0);
    assert_status(store_health_rollup(f->st, now, 0, &res), GI_OK);
    assert_int_equal(res.days, 1);
    snprintf(sql, sizeof sql,
             "INSERT INTO gpu_samples (ts, gpu_id, temp_c) VALUES (%lld, 1, 99);"
             "UPDATE usage_daily SET updated_at = %lld",
             (long long)today + 1, (long long)(now - 3000));
    assert_int_equal(raw_exec(&f->db, sql), 0);
    assert_status(store_health_rollup(f->st, now + 60, 0, &res), GI_OK);
    assert_int_equal(res.days, 0);
    assert_int_equal(testdb_scalar(&f->db, "SELECT COUNT(*) FROM gpu_health_daily WHERE "
                                           "temp_max_c = 50"),
                     1);
    snprintf(sql, sizeof sql, "UPDATE usage_daily SET updated_at = %lld", (long long)(now - 2900));
    assert_int_equal(raw_exec(&f->db, sql), 0);
    assert_status(store_health_rollup(f->st, now + 601, 0, &res), GI_OK);
    assert_int_equal(res.days, 1);
    assert_int_equal(testdb_scalar(&f->db, "SELECT COUNT(*) FROM gpu_health_daily WHERE "
                                           "temp_max_c = 99"),
                     1);
}

/* Three GPUs' samples interleaved in time, as agents write them: each
 * GPU-day is accumulated on its own in the one pass over the day. GPU 1:
 * 20 readings 70.1..72.0 (p95 by nearest rank 71.9), ECC 0 then 4 (+4).
 * GPU 2: 40.0..49.5 in half degrees (p95 49.0), ECC 7 before the day,
 * then 9 (+2), XID 48 once. GPU 3: a usage day without samples. */
static void test_interleaved_gpus(void **state)
{
    struct testdb_fixture *f = *state;
    int64_t now = gi_now(), day = now - now % DAY - DAY, old = now - 3600;
    struct store_health_run res;
    char sql[8192];
    size_t off = 0;

    fleet(f, 3, now);
    off += (size_t)snprintf(sql + off, sizeof sql - off,
                            "INSERT INTO gpu_samples (ts, gpu_id, temp_c, ecc_uncorrected, xid) "
                            "VALUES (%lld, 2, NULL, 7, NULL)",
                            (long long)(day - 120));
    for (int i = 0; i < 20; i++) {
        long long ts = day + i * 300;
        off += (size_t)snprintf(
            sql + off, sizeof sql - off, ", (%lld, 1, %.1f, %d, NULL), (%lld, 2, %.1f, 9, %s)", ts,
            70.1 + i * 0.1, i < 10 ? 0 : 4, ts, 40.0 + i * 0.5, i == 5 ? "48" : "NULL");
    }
    assert_true(off < sizeof sql);
    assert_int_equal(raw_exec(&f->db, sql), 0);
    for (int g = 1; g <= 3; g++) {
        snprintf(sql, sizeof sql,
                 "INSERT INTO usage_daily (gpu_id, day, owned_s, allocated_s, busy_s, "
                 "alloc_idle_s, idle_s, unknown_s, measured_s, util_sum, mem_sum, energy_wh, "
                 "updated_at) VALUES (%d, %lld, 86400, 0, 0, 0, 0, 0, 1000, 30000, 0, 1, %lld)",
                 g, (long long)day, (long long)old);
        assert_int_equal(raw_exec(&f->db, sql), 0);
    }
    assert_status(store_health_rollup(f->st, now, 0, &res), GI_OK);
    assert_int_equal(res.days, 3);
    assert_int_equal(testdb_scalar(&f->db, "SELECT COUNT(*) FROM gpu_health_daily WHERE "
                                           "gpu_id = 1 AND samples = 20 AND temp_p95_c = 71.9 "
                                           "AND temp_max_c = 72.0 AND ecc_uncorrected_inc = 4 "
                                           "AND xid_events = 0"),
                     1);
    assert_int_equal(testdb_scalar(&f->db, "SELECT COUNT(*) FROM gpu_health_daily WHERE "
                                           "gpu_id = 2 AND samples = 20 AND temp_p95_c = 49.0 "
                                           "AND temp_max_c = 49.5 AND ecc_uncorrected_inc = 2 "
                                           "AND xid_events = 1"),
                     1);
    assert_int_equal(testdb_scalar(&f->db, "SELECT COUNT(*) FROM gpu_health_daily WHERE "
                                           "gpu_id = 3 AND samples = 0 AND temp_p95_c IS NULL "
                                           "AND util_avg = 30"),
                     1);
}

/* Several rules in one pass over the same assets find, for each rule, the
 * same matches (reasons and actions included) as that rule evaluated
 * alone; and in a real pass a stage one rule moved an asset to is what the
 * next rule sees, as when the rules run alone one after the other. */
static void test_one_pass_same_as_alone(void **state)
{
    struct testdb_fixture *f = *state;
    struct store_lrule custom = {.name = "active gets a ticket", .enabled = 0};
    int64_t now = gi_now(), today = now - now % DAY, ids[6], two[2];
    json_t *in, *out = NULL, *pass, *rules;
    struct store_asset_err err = {0};
    char d10[16];

    fleet(f, 5, now);
    for (int d = 0; d < 30; d++) {
        put_day(f->st, 1, today - d * DAY, d % 6 == 0 ? 79 : 0, 0, 90, 50); /* XID, hot */
        put_day(f->st, 2, today - d * DAY, 0, d == 0, 60, 50);              /* ECC today */
        put_day(f->st, 3, today - d * DAY, 0, 0, 88, 5);                    /* idle, hot */
        put_day(f->st, 4, today - d * DAY, d % 5 == 0 ? 31 : 0, 0, 60, 50); /* XID */
        put_day(f->st, 5, today - d * DAY, 0, 0, 60, 50);                   /* clean */
    }
    date_in(10, d10, sizeof d10);
    in = json_pack("{s:s}", "warranty_end", d10);
    assert_status(store_asset_update(f->st, "t", "G4", in, &out, &err), GI_OK);
    json_decref(out);
    json_decref(in);
    for (int i = 0; i < 5; i++)
        ids[i] = example(f->st, i + 1);
    custom.condition = json_pack("{s:s, s:s}", "attr", "stage", "=", "active");
    custom.actions = json_pack("[{s:s, s:s}]", "type", "ticket", "title", "check");
    assert_status(store_lrule_create(f->st, "t", &custom, &out), GI_OK);
    ids[5] = json_integer_value(json_object_get(out, "id"));
    json_decref(out);

    assert_status(store_lrules_evaluate(f->st, ids, 6, true, "t", now, &pass), GI_OK);
    rules = json_object_get(pass, "rules");
    assert_int_equal(json_array_size(rules), 6);
    assert_int_equal(json_integer_value(json_object_get(pass, "evaluated")), 5);
    for (size_t i = 0; i < 6; i++) {
        json_t *alone = run_rule(f->st, ids[i], true, now), *one = json_array_get(rules, i);
        assert_int_equal(json_integer_value(json_object_get(json_object_get(one, "rule"), "id")),
                         ids[i]);
        assert_int_equal(matched(one), matched(alone));
        assert_true(json_equal(json_object_get(one, "matches"), json_object_get(alone, "matches")));
        json_decref(alone);
    }
    /* Each example finds what its history was made for. */
    assert_int_equal(matched(json_array_get(rules, 0)), 2); /* G1, G4: XID on 5 and 6 days */
    assert_int_equal(matched(json_array_get(rules, 1)), 1); /* G2 */
    assert_int_equal(matched(json_array_get(rules, 2)), 2); /* G1, G3 */
    assert_int_equal(matched(json_array_get(rules, 3)), 1); /* G3 */
    assert_int_equal(matched(json_array_get(rules, 4)), 1); /* G4 */
    assert_int_equal(matched(json_array_get(rules, 5)), 5); /* all active */
    json_decref(pass);
    assert_int_equal(testdb_scalar(&f->db, "SELECT COUNT(*) FROM asset_events WHERE kind IN "
                                           "('rule', 'stage')"),
                     0);

    /* A real pass: the XID rule moves G1 and G4 first, so the ticket rule
     * (stage active) then finds only G2, G3 and G5. */
    two[0] = ids[0];
    two[1] = ids[5];
    assert_status(store_lrules_evaluate(f->st, two, 2, false, "t", now, &pass), GI_OK);
    rules = json_object_get(pass, "rules");
    assert_int_equal(matched(json_array_get(rules, 0)), 2);
    assert_int_equal(matched(json_array_get(rules, 1)), 3);
    assert_int_equal(json_integer_value(json_object_get(pass, "matched")), 5);
    json_decref(pass);
    assert_string_equal(stage_of(f->st, "G1"), "diagnostic_repair");
    assert_string_equal(stage_of(f->st, "G4"), "diagnostic_repair");
    assert_int_equal(testdb_scalar(&f->db, "SELECT COUNT(*) FROM tickets WHERE dedupe_key IN "
                                           "('rule:' || (SELECT MAX(id) FROM lifecycle_rules) || "
                                           "':G1', 'rule:' || (SELECT MAX(id) FROM "
                                           "lifecycle_rules) || ':G4')"),
                     0);
    assert_int_equal(testdb_scalar(&f->db, "SELECT COUNT(*) FROM tickets"), 3);
    assert_int_equal(testdb_scalar(&f->db, "SELECT COUNT(*) FROM lifecycle_rules WHERE "
                                           "last_run_at IS NOT NULL"),
                     2);
    /* An id that names no rule. */
    two[1] = ids[5] + 100;
    assert_status(store_lrules_evaluate(f->st, two, 2, true, "t", now, &pass), GI_NOT_FOUND);
    json_decref(custom.condition);
    json_decref(custom.actions);
}

int main(void)
{
    const struct CMUnitTest tests[] = {
        cmocka_unit_test_setup_teardown(test_xid_rule_not_a_day_early, testdb_setup,
                                        testdb_teardown),
        cmocka_unit_test_setup_teardown(test_ecc_rule_reserves_spare, testdb_setup,
                                        testdb_teardown),
        cmocka_unit_test_setup_teardown(test_temp_rule_one_ticket, testdb_setup, testdb_teardown),
        cmocka_unit_test_setup_teardown(test_util_rule_thirty_days, testdb_setup, testdb_teardown),
        cmocka_unit_test_setup_teardown(test_warranty_rule, testdb_setup, testdb_teardown),
        cmocka_unit_test_setup_teardown(test_refused_and_webhook, testdb_setup, testdb_teardown),
        cmocka_unit_test(test_check_names_the_field),
        cmocka_unit_test_setup_teardown(test_rollup_from_samples, testdb_setup, testdb_teardown),
        cmocka_unit_test_setup_teardown(test_today_throttled, testdb_setup, testdb_teardown),
        cmocka_unit_test_setup_teardown(test_one_pass_same_as_alone, testdb_setup, testdb_teardown),
        cmocka_unit_test_setup_teardown(test_interleaved_gpus, testdb_setup, testdb_teardown),
    };
    return cmocka_run_group_tests(tests, NULL, NULL);
}
