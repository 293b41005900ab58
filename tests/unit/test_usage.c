/* Unit tests for the classification core of the usage rollups
 * (src/store/usage.c through store.h and store_int.h), on each store:
 * fixtures are written straight into the raw tables, the GPU-hours marked
 * dirty as ingest would, and the rollup's rows checked against figures
 * worked out by hand. */
#include "unit.h"
#include "testdb.h"

#include "core/util.h"
#include "store/store.h"
#include "store/store_int.h"

#include <stdio.h>
#include <string.h>

static void execf(struct testdb_fixture *f, const char *fmt, ...)
    __attribute__((format(printf, 2, 3)));
static void execf(struct testdb_fixture *f, const char *fmt, ...)
{
    char sql[1024];
    va_list ap;

    va_start(ap, fmt);
    vsnprintf(sql, sizeof sql, fmt, ap);
    va_end(ap);
    testdb_exec(f, sql);
}

/* An integer the database answers (rounded, for sums of seconds). */
static int64_t scalarf(struct testdb_fixture *f, const char *fmt, ...)
    __attribute__((format(printf, 2, 3)));
static int64_t scalarf(struct testdb_fixture *f, const char *fmt, ...)
{
    char sql[1024];
    va_list ap;

    va_start(ap, fmt);
    vsnprintf(sql, sizeof sql, fmt, ap);
    va_end(ap);
    return testdb_scalar(&f->db, sql);
}

/* 10:00 UTC two days ago: hours long closed. */
static int64_t t0(void)
{
    int64_t now = gi_now();
    return now - now % 86400 - 2 * 86400 + 10 * 3600;
}

static void host(struct testdb_fixture *f, int64_t id, const char *name)
{
    execf(f,
          "INSERT INTO hosts (id, hostname, first_seen_at, last_seen_at) VALUES (%lld, '%s', 1, "
          "1)",
          (long long)id, name);
}

static void gpu(struct testdb_fixture *f, int64_t id, int64_t host_id, int idx, const char *parent,
                const char *profile)
{
    char p[160] = "NULL", q[64] = "NULL";

    if (parent)
        snprintf(p, sizeof p, "'%s'", parent);
    if (profile)
        snprintf(q, sizeof q, "'%s'", profile);
    execf(f,
          "INSERT INTO gpus (id, uuid, host_id, idx, model, parent_uuid, mig_profile, team, "
          "first_seen_at, last_seen_at) VALUES (%lld, 'GPU-%lld', %lld, %d, 'NVIDIA A100', %s, "
          "%s, 'core', 1, 1)",
          (long long)id, (long long)id, (long long)host_id, idx, p, q);
}

/* Samples of one GPU from one source every `step` seconds over [from, to],
 * in one statement. */
static void samples(struct testdb_fixture *f, int64_t gid, int64_t src, int64_t from, int64_t to,
                    int64_t step, double util)
{
    char sql[16384];
    size_t n = (size_t)snprintf(sql, sizeof sql,
                                "INSERT INTO gpu_samples (ts, gpu_id, util_avg, power_avg_w, "
                                "source_id) VALUES ");

    for (int64_t t = from; t <= to && n < sizeof sql - 128; t += step)
        n += (size_t)snprintf(sql + n, sizeof sql - n, "%s(%lld, %lld, %g, 100, %lld)",
                              t == from ? "" : ", ", (long long)t, (long long)gid, util,
                              (long long)src);
    testdb_exec(f, sql);
}

static void dirty(struct testdb_fixture *f, int64_t gid, int64_t hour)
{
    execf(f, "INSERT INTO usage_dirty (hour, gpu_id, marked_at) VALUES (%lld, %lld, 1)",
          (long long)hour, (long long)gid);
}

static void rollup(struct testdb_fixture *f)
{
    struct store_usage_run run;

    assert_status(store_usage_rollup(f->st, NULL, gi_now(), 0, &run), GI_OK);
    assert_int_equal(run.dirty_left, 0);
}

static int64_t col(struct testdb_fixture *f, const char *expr, int64_t gid, int64_t hour)
{
    return scalarf(f,
                   "SELECT CAST(ROUND(%s) AS BIGINT) FROM usage_hourly WHERE gpu_id = %lld AND "
                   "hour = %lld",
                   expr, (long long)gid, (long long)hour);
}

/* Two sources sampling one GPU: only the one covering more of the hour
 * counts, so nothing is counted twice. */
static void test_two_sources_counted_once(void **state)
{
    struct testdb_fixture *f = *state;
    int64_t h = t0();

    host(f, 1, "n1");
    gpu(f, 1, 1, 0, NULL, NULL);
    samples(f, 1, 7, h, h + 3600, 60, 50);        /* every minute, busy */
    samples(f, 1, 8, h + 30, h + 3600, 300, 0.0); /* every 5 minutes, idle */
    dirty(f, 1, h);
    rollup(f);
    assert_int_equal(col(f, "owned_s", 1, h), 3600);
    assert_int_equal(col(f, "measured_s", 1, h), 3600);
    assert_int_equal(col(f, "busy_s", 1, h), 3600);
    assert_int_equal(col(f, "idle_s", 1, h), 0);
    assert_int_equal(col(f, "util_sum / measured_s", 1, h), 50);
    assert_int_equal(col(f, "energy_wh", 1, h), 100);
    /* The unknown consumer holds the busy time; the day repeats the hour. */
    assert_int_equal(scalarf(f,
                             "SELECT CAST(busy_s AS BIGINT) FROM usage_consumers WHERE gpu_id = 1 "
                             "AND hour = %lld AND kind = 'unknown'",
                             (long long)h),
                     3600);
    assert_int_equal(scalarf(f,
                             "SELECT CAST(busy_s AS BIGINT) FROM usage_daily WHERE gpu_id = 1 AND "
                             "day = %lld",
                             (long long)(h - h % 86400)),
                     3600);
}

/* A sample after a silence longer than max_gap covers only max_gap; the
 * rest is unknown, and a later hour without any data is filled as owned
 * and unknown. */
static void test_gap_is_unknown(void **state)
{
    struct testdb_fixture *f = *state;
    int64_t h = t0();

    host(f, 1, "n1");
    gpu(f, 1, 1, 0, NULL, NULL);
    samples(f, 1, 7, h, h + 1200, 60, 0.0);
    samples(f, 1, 7, h + 3000, h + 3000, 60, 0.0); /* after 30 minutes' silence */
    samples(f, 1, 7, h + 3 * 3600, h + 3 * 3600 + 600, 60, 0.0);
    dirty(f, 1, h);
    dirty(f, 1, h + 3 * 3600);
    rollup(f);
    assert_int_equal(col(f, "idle_s", 1, h), 1200 + 600);
    assert_int_equal(col(f, "unknown_s", 1, h), 3600 - 1800);
    /* 11:00 and 12:00 had no data: owned, unknown, never idle. */
    assert_int_equal(col(f, "unknown_s", 1, h + 3600), 3600);
    assert_int_equal(col(f, "idle_s", 1, h + 3600), 0);
    /* 12:00: the 13:00 reading follows a three-hour silence: it covers the
     * max_gap before it, 12:50-13:00. */
    assert_int_equal(col(f, "unknown_s", 1, h + 7200), 3000);
    assert_int_equal(col(f, "idle_s", 1, h + 7200), 600);
    assert_int_equal(col(f, "idle_s", 1, h + 3 * 3600), 600);
}

/* A pod that requests 2 GPUs on a node without a per-GPU mapping takes the
 * node's GPUs with process evidence first, then the lowest indexes; a pod
 * seen on a GPU by its labels holds that GPU. */
static void test_pod_heuristic(void **state)
{
    struct testdb_fixture *f = *state;
    int64_t h = t0();

    host(f, 1, "node-a.example");
    for (int i = 0; i < 4; i++) {
        gpu(f, 10 + i, 1, i, NULL, NULL);
        samples(f, 10 + i, 7, h, h + 3600, 60, i == 3 ? 90 : 1);
        dirty(f, 10 + i, h);
    }
    execf(f, "INSERT INTO sources (id, name, kind, created_at, updated_at) VALUES (5, 'k', "
             "'kubernetes', 1, 1)");
    execf(f, "INSERT INTO k8s_nodes (source_id, name, hostname, first_seen_at, last_seen_at) "
             "VALUES (5, 'node-a', 'node-a.example', 1, 1)");
    execf(f,
          "INSERT INTO k8s_pods (source_id, uid, namespace, name, node, gpus, started_at, "
          "first_seen_at, last_seen_at, ended_at, seen) VALUES (5, 'u1', 'ml', 'wide', 'node-a', "
          "2, %lld, 1, 1, %lld, 0)",
          (long long)(h - 600), (long long)(h + 7200));
    /* A second pod is known on GPU 10 by its process: it is no candidate
     * for the guess, and GPU 10 is taken. */
    execf(f,
          "INSERT INTO k8s_pods (source_id, uid, namespace, name, node, gpus, started_at, "
          "first_seen_at, last_seen_at, ended_at, seen) VALUES (5, 'u2', 'ml', 'narrow', "
          "'node-a', 1, %lld, 1, 1, %lld, 0)",
          (long long)(h - 300), (long long)(h + 7200));
    execf(f,
          "INSERT INTO gpu_processes (ts, gpu_uuid, pid, name, namespace, pod, container) SELECT "
          "ts, 'GPU-10', 2, 'serve', 'ml', 'narrow', 'c2' FROM gpu_samples WHERE gpu_id = 10 AND "
          "ts > %lld",
          (long long)h);
    /* GPU 12 runs a process; GPU 11 is labelled with another pod. */
    execf(f,
          "INSERT INTO gpu_processes (ts, gpu_uuid, pid, name, username) SELECT ts, 'GPU-12', 1, "
          "'python', 'bob' FROM gpu_samples WHERE gpu_id = 12 AND ts > %lld",
          (long long)h);
    execf(f,
          "INSERT INTO gpu_pods (ts, gpu_uuid, namespace, pod, container) SELECT ts, 'GPU-11', "
          "'web', 'one', 'c' FROM gpu_samples WHERE gpu_id = 11 AND ts > %lld",
          (long long)h);
    rollup(f);
    /* Ranked: 12 (a process) and 13 (busy); 10 and 11 are mapped to their
     * own pods. */
    assert_int_equal(scalarf(f,
                             "SELECT COUNT(*) FROM usage_consumers WHERE consumer = 'ml/wide/' AND "
                             "gpu_id IN (12, 13) AND CAST(allocated_s AS BIGINT) = 3600"),
                     2);
    assert_int_equal(scalarf(f, "SELECT COUNT(*) FROM usage_consumers WHERE consumer = 'ml/wide/' "
                                "AND gpu_id IN (10, 11)"),
                     0);
    /* GPU 12's process and the pod: the pod (more specific) holds it. */
    assert_int_equal(scalarf(f, "SELECT COUNT(*) FROM usage_consumers WHERE gpu_id = 12 AND kind "
                                "= 'process'"),
                     0);
    assert_int_equal(col(f, "alloc_idle_s", 10, h), 3600);
    assert_int_equal(scalarf(f, "SELECT COUNT(*) FROM usage_consumers WHERE consumer LIKE "
                                "'ml/narrow/%%'"),
                     1);
    assert_int_equal(scalarf(f, "SELECT COUNT(*) FROM usage_consumers WHERE gpu_id = 10 AND "
                                "consumer = 'ml/narrow/c2'"),
                     1);
    assert_int_equal(col(f, "alloc_idle_s", 11, h), 3600);
    assert_int_equal(col(f, "alloc_idle_s", 12, h), 3600);
    assert_int_equal(col(f, "busy_s", 13, h), 3600);
    assert_int_equal(scalarf(f, "SELECT COUNT(*) FROM usage_consumers WHERE kind = 'unknown'"), 0);
    /* Its interval: from the first covered second to the end of the hour. */
    assert_int_equal(scalarf(f,
                             "SELECT COUNT(*) FROM usage_intervals WHERE gpu_id = 11 AND kind = "
                             "'k8s' AND consumer = 'web/one/c' AND started_at = %lld AND ended_at "
                             "= %lld",
                             (long long)h, (long long)(h + 3600)),
                     1);
}

/* MIG: each instance counts its slice; the parent only what is left. */
static void test_mig_fractions(void **state)
{
    struct testdb_fixture *f = *state;
    int64_t h = t0();

    host(f, 1, "n1");
    gpu(f, 1, 1, 0, NULL, NULL);
    gpu(f, 2, 1, 0, "GPU-1", "3g.40gb");
    gpu(f, 3, 1, 0, "GPU-1", "1g.10gb");
    for (int64_t g = 1; g <= 3; g++) {
        samples(f, g, 7, h, h + 3600, 60, 40);
        dirty(f, g, h);
    }
    rollup(f);
    assert_int_equal(col(f, "fraction * 7000", 2, h), 3000);
    assert_int_equal(col(f, "fraction * 7000", 3, h), 1000);
    assert_int_equal(col(f, "fraction * 7000", 1, h), 3000);
    assert_int_equal(scalarf(f,
                             "SELECT CAST(ROUND(SUM(owned_s * fraction)) AS BIGINT) FROM "
                             "usage_hourly WHERE hour = %lld",
                             (long long)h),
                     3600);
}

/* An owner change re-attributes the stored hours from its time on, in
 * place, through the queue the job works. */
static void test_reattribute(void **state)
{
    struct testdb_fixture *f = *state;
    int64_t h = t0();

    host(f, 1, "n1");
    gpu(f, 1, 1, 0, NULL, NULL);
    samples(f, 1, 7, h, h + 7200, 60, 40);
    dirty(f, 1, h);
    dirty(f, 1, h + 3600);
    rollup(f);
    assert_int_equal(scalarf(f,
                             "SELECT COUNT(*) FROM usage_hourly WHERE gpu_id = 1 AND team = "
                             "'core' AND hour <= %lld",
                             (long long)(h + 3600)),
                     2);
    /* The raw samples are gone, as they are after retention. */
    testdb_exec(f, "DELETE FROM gpu_samples");
    /* The GPU is assigned to vision from 11:00; the assignment queues the
     * re-attribution. */
    {
        struct store_dim team = {.name = "vision"};
        struct store_owner_set set = {
            .team = "vision", .has_team = true, .effective_from = h + 3600};
        struct store_owner_err err;
        json_t *out = NULL;

        assert_status(store_dim_create(f->st, "test", "team", &team, &out), GI_OK);
        json_decref(out);
        out = NULL;
        assert_status(store_owner_assign(f->st, "test", STORE_OWNER_GPU, "GPU-1", &set, &out, &err),
                      GI_OK);
        json_decref(out);
    }
    assert_int_equal(scalarf(f, "SELECT COUNT(*) FROM usage_redo"), 1);
    rollup(f);
    assert_int_equal(scalarf(f,
                             "SELECT COUNT(*) FROM usage_hourly WHERE team = 'core' AND hour = "
                             "%lld",
                             (long long)h),
                     1);
    assert_int_equal(scalarf(f,
                             "SELECT COUNT(*) FROM usage_hourly WHERE team = 'vision' AND hour "
                             "= %lld",
                             (long long)(h + 3600)),
                     1);
    assert_int_equal(col(f, "busy_s", 1, h + 3600), 3600);
    assert_int_equal(scalarf(f, "SELECT COUNT(*) FROM usage_redo"), 0);
}

/* Rollups past retention are pruned; raw samples wait for their rollup. */
static void test_retention(void **state)
{
    struct testdb_fixture *f = *state;
    struct store_usage_config keep, cfg;
    int64_t old = gi_now() - 40 * 86400, hour = 0;

    store_usage_config_get(&keep);
    cfg = keep;
    cfg.retain_hourly_days = 30;
    host(f, 1, "n1");
    gpu(f, 1, 1, 0, NULL, NULL);
    execf(f,
          "INSERT INTO usage_hourly (gpu_id, hour, owned_s, allocated_s, busy_s, alloc_idle_s, "
          "idle_s, unknown_s, measured_s, util_sum, mem_sum, energy_wh, updated_at) VALUES (1, "
          "%lld, 3600, 0, 0, 0, 0, 3600, 0, 0, 0, 0, 1)",
          (long long)(old - old % 3600));
    dirty(f, 1, old - old % 3600 + 86400);
    assert_status(store_usage_oldest_dirty(f->st, &hour), GI_OK);
    assert_int_equal(hour, old - old % 3600 + 86400);
    /* Raw samples of that hour (39 days back) outlive a 14-day retention. */
    assert_true(store_usage_keep_days(f->st, gi_now(), 14) >= 40);
    assert_int_equal(store_usage_keep_days(f->st, gi_now(), 60), 60);
    store_usage_configure(&cfg);
    rollup(f);
    store_usage_configure(&keep);
    assert_int_equal(
        scalarf(f, "SELECT COUNT(*) FROM usage_hourly WHERE hour < %lld", (long long)(old + 3600)),
        0);
    assert_status(store_usage_oldest_dirty(f->st, &hour), GI_NOT_FOUND);
    assert_int_equal(store_usage_keep_days(f->st, gi_now(), 14), 14);
}

static void cost_row(struct testdb_fixture *f, int64_t gid, int64_t hour, const char *team,
                     double busy, double idle, double unknown, double fraction, const char *rate,
                     const char *cur)
{
    execf(f,
          "INSERT INTO usage_hourly (gpu_id, hour, team, owned_s, allocated_s, busy_s, "
          "alloc_idle_s, idle_s, unknown_s, measured_s, util_sum, mem_sum, energy_wh, fraction, "
          "rate_micros, currency, updated_at) VALUES (%lld, %lld, '%s', 3600, %g, %g, %g, %g, %g, "
          "%g, 0, 0, 0, %g, %s, %s, 1)",
          (long long)gid, (long long)hour, team, 3600 - idle - unknown, busy,
          3600 - idle - unknown - busy, idle, unknown, 3600 - unknown, fraction, rate, cur);
}

static const char *cost_of(const json_t *item, const char *field)
{
    const json_t *c = json_object_get(item, "cost");
    const json_t *v = json_object_get(c, field);
    if (!v)
        v = json_object_get(json_object_get(c, "split"), field);
    return json_string_value(v);
}

/* Cost is owned GPU-hours x fraction x the rate at the hour, split by
 * use, as decimal strings; unpriced hours are named in a note; a group
 * with two currencies gives one item per currency. */
static void test_report_cost(void **state)
{
    struct testdb_fixture *f = *state;
    int64_t h = t0();
    struct store_usage_query q = {
        .group_by = "team", .from = h, .to = h + 3600, .step = USAGE_STEP_HOUR};
    json_t *out = NULL, *items, *x, *y1, *y2, *total;
    char *text = NULL, *dumped, *line, *save = NULL;
    size_t len = 0;

    cost_row(f, 1, h, "x", 1800, 0, 0, 1.0, "2500000", "'USD'"); /* half busy, half waste */
    cost_row(f, 2, h, "x", 0, 3600, 0, 0.5, "2500000", "'USD'"); /* half a GPU, idle */
    cost_row(f, 3, h, "x", 0, 0, 3600, 1.0, "NULL", "NULL");     /* no rate */
    cost_row(f, 4, h, "y", 3600, 0, 0, 1.0, "1000000", "'EUR'");
    cost_row(f, 5, h, "y", 3600, 0, 0, 1.0, "2500000", "'USD'");
    /* the group sums the rollup job keeps beside the hour's rows, and their team sums */
    testdb_exec(f,
                "INSERT INTO usage_groups_hourly (hour, team, env, pool, cluster, cloud, model, "
                "datacenter_id, currency, gpus, owned_s, allocated_s, busy_s, alloc_idle_s, "
                "idle_s, unknown_s, util_sum, measured_s, energy_wh, owned_cost, busy_cost, "
                "alloc_idle_cost, idle_cost, unknown_cost, unpriced_s, updated_at) SELECT hour, "
                "team, env, pool, cluster, cloud, model, datacenter_id, COALESCE(currency, ''), "
                "COUNT(*), SUM(owned_s * fraction), SUM(allocated_s * fraction), SUM(busy_s * "
                "fraction), SUM(alloc_idle_s * fraction), SUM(idle_s * fraction), SUM(unknown_s "
                "* fraction), SUM(util_sum * fraction), SUM(measured_s * fraction), "
                "SUM(energy_wh), SUM(owned_s * fraction * rate_micros), SUM(busy_s * fraction * "
                "rate_micros), SUM(alloc_idle_s * fraction * rate_micros), SUM(idle_s * fraction "
                "* rate_micros), SUM(unknown_s * fraction * rate_micros), SUM(CASE WHEN "
                "rate_micros IS NULL THEN owned_s * fraction ELSE 0 END), 1 FROM usage_hourly "
                "GROUP BY hour, team, env, pool, cluster, cloud, model, datacenter_id, "
                "COALESCE(currency, '')");
    testdb_exec(f,
                "INSERT INTO usage_team_hours (hour, team, currency, gpus, owned_s, allocated_s, "
                "busy_s, alloc_idle_s, idle_s, unknown_s, util_sum, measured_s, energy_wh, "
                "owned_cost, busy_cost, alloc_idle_cost, idle_cost, unknown_cost, unpriced_s, "
                "updated_at) SELECT hour, team, currency, SUM(gpus), SUM(owned_s), "
                "SUM(allocated_s), SUM(busy_s), SUM(alloc_idle_s), SUM(idle_s), SUM(unknown_s), "
                "SUM(util_sum), SUM(measured_s), SUM(energy_wh), SUM(owned_cost), "
                "SUM(busy_cost), SUM(alloc_idle_cost), SUM(idle_cost), SUM(unknown_cost), "
                "SUM(unpriced_s), 1 FROM usage_groups_hourly GROUP BY hour, team, currency");
    assert_status(store_usage_report(f->st, &q, &out), GI_OK);
    items = json_object_get(out, "items");
    assert_int_equal(json_array_size(items), 3);
    x = json_array_get(items, 0);
    assert_string_equal(json_string_value(json_object_get(x, "group")), "x");
    assert_true(json_real_value(json_object_get(json_object_get(x, "gpu_hours"), "owned")) == 2.5);
    assert_string_equal(cost_of(x, "amount"), "3.75");
    assert_string_equal(cost_of(x, "currency"), "USD");
    assert_string_equal(cost_of(x, "method"), "catalog");
    assert_string_equal(cost_of(x, "busy"), "1.25");
    assert_string_equal(cost_of(x, "allocated_idle"), "1.25");
    assert_string_equal(cost_of(x, "idle"), "1.25");
    assert_string_equal(cost_of(x, "unknown"), "0.00");
    assert_non_null(strstr(json_string_value(json_object_get(x, "cost_note")), "1.00 of these"));
    y1 = json_array_get(items, 1);
    y2 = json_array_get(items, 2);
    assert_string_equal(cost_of(y1, "currency"), "EUR");
    assert_string_equal(cost_of(y1, "amount"), "1.00");
    assert_string_equal(cost_of(y2, "currency"), "USD");
    assert_string_equal(cost_of(y2, "amount"), "2.50");
    assert_true(json_real_value(json_object_get(json_object_get(y2, "gpu_hours"), "busy")) == 1.0);
    total = json_object_get(out, "total");
    assert_true(json_is_null(json_object_get(total, "cost")));
    assert_int_equal(json_array_size(json_object_get(total, "costs")), 2);
    assert_true(json_real_value(json_object_get(json_object_get(total, "gpu_hours"), "owned")) ==
                4.5);
    /* The text written without jansson is what jansson writes for the same
     * document, byte for byte. */
    assert_status(store_usage_report_text(f->st, &q, false, &text, &len), GI_OK);
    dumped = json_dumps(out, JSON_COMPACT);
    assert_int_equal(len, strlen(text));
    assert_string_equal(text, dumped);
    free(text);
    free(dumped);
    /* CSV: a header and one row per item; money guarded as text. */
    assert_status(store_usage_report_text(f->st, &q, true, &text, &len), GI_OK);
    line = strtok_r(text, "\n", &save);
    assert_string_equal(line, "group,start,gpu_hours_owned,gpu_hours_allocated,gpu_hours_busy,"
                              "gpu_hours_allocated_idle,gpu_hours_idle,gpu_hours_unknown,util_avg,"
                              "energy_kwh,cost_amount,cost_currency,cost_method,cost_note\r");
    line = strtok_r(NULL, "\n", &save);
    assert_int_equal(strncmp(line, "x,", 2), 0);
    assert_non_null(strstr(line, ",3.75,USD,catalog,1.00 of these GPU-hours have no catalog rate "
                                 "and are not in the amount\r"));
    line = strtok_r(NULL, "\n", &save);
    assert_non_null(strstr(line, ",1.00,EUR,catalog,more than one currency: one item per "
                                 "currency\r"));
    line = strtok_r(NULL, "\n", &save);
    assert_non_null(strstr(line, ",2.50,USD,catalog,"));
    assert_null(strtok_r(NULL, "\n", &save));
    free(text);
    json_decref(out);
    /* Past the group bound: refused, nothing half done. */
    q.max_groups = 1;
    assert_status(store_usage_report(f->st, &q, &out), GI_TOO_LARGE);
    assert_null(out);
}

/* A GPU whose server was registered in the inventory before its first
 * reading is owned (and unknown) from the registration on; the first
 * reading still covers nothing before itself. */
static void test_owned_from_registration(void **state)
{
    struct testdb_fixture *f = *state;
    int64_t h = t0(), reg = h - 5 * 3600 + 1800;

    host(f, 1, "n1");
    gpu(f, 1, 1, 0, NULL, NULL);
    execf(f, "INSERT INTO datacenters (id, name, created_at, updated_at) VALUES (1, 'dc', 1, 1)");
    execf(f,
          "INSERT INTO resources (id, datacenter_id, kind, name, created_at, updated_at) VALUES "
          "(1, 1, 'server', 'n1', %lld, %lld)",
          (long long)reg, (long long)reg);
    execf(f, "INSERT INTO host_links (host_id, resource_id, rule, linked_at, linked_by) VALUES (1, "
             "1, 'hostname', 1, 'test')");
    samples(f, 1, 7, h, h + 3600, 60, 40);
    dirty(f, 1, h);
    rollup(f);
    assert_int_equal(col(f, "owned_s", 1, h - 5 * 3600), 1800);
    assert_int_equal(col(f, "unknown_s", 1, h - 5 * 3600), 1800);
    for (int k = 1; k <= 4; k++)
        assert_int_equal(col(f, "unknown_s", 1, h - k * 3600), 3600);
    assert_int_equal(scalarf(f, "SELECT COUNT(*) FROM usage_hourly WHERE hour < %lld",
                             (long long)(h - 5 * 3600)),
                     0);
    assert_int_equal(col(f, "busy_s", 1, h), 3600);
    assert_int_equal(col(f, "unknown_s", 1, h), 0);
}

/* A GPU-hour that cannot be written is skipped (logged) and does not hold
 * up the others of its chunk. */
static void test_bad_hour_skipped(void **state)
{
    struct testdb_fixture *f = *state;
    int64_t h = t0();

    host(f, 1, "n1");
    gpu(f, 1, 1, 0, NULL, NULL);
    gpu(f, 99, 1, 1, NULL, NULL);
    samples(f, 1, 7, h, h + 3600, 60, 40);
    samples(f, 99, 7, h, h + 3600, 60, 40);
    dirty(f, 1, h);
    dirty(f, 99, h);
    if (f->db.name[0] != '\0') {
        testdb_exec(f, "CREATE FUNCTION boom() RETURNS trigger LANGUAGE plpgsql AS $$ BEGIN IF "
                       "NEW.gpu_id = 99 THEN RAISE EXCEPTION 'boom'; END IF; RETURN NEW; END $$");
        testdb_exec(f, "CREATE TRIGGER boom BEFORE INSERT ON usage_hourly FOR EACH ROW EXECUTE "
                       "FUNCTION boom()");
    } else {
        testdb_exec(f,
                    "CREATE TRIGGER boom BEFORE INSERT ON usage_hourly WHEN NEW.gpu_id = 99 BEGIN "
                    "SELECT RAISE(ABORT, 'boom'); END");
    }
    gi_log_set_level((enum gi_log_level)(GI_LOG_ERROR + 1));
    rollup(f);
    gi_log_set_level(GI_LOG_WARN);
    assert_int_equal(col(f, "busy_s", 1, h), 3600);
    assert_int_equal(scalarf(f, "SELECT COUNT(*) FROM usage_hourly WHERE gpu_id = 99"), 0);
}

int main(void)
{
    const struct CMUnitTest tests[] = {
        cmocka_unit_test_setup_teardown(test_two_sources_counted_once, testdb_setup,
                                        testdb_teardown),
        cmocka_unit_test_setup_teardown(test_gap_is_unknown, testdb_setup, testdb_teardown),
        cmocka_unit_test_setup_teardown(test_pod_heuristic, testdb_setup, testdb_teardown),
        cmocka_unit_test_setup_teardown(test_mig_fractions, testdb_setup, testdb_teardown),
        cmocka_unit_test_setup_teardown(test_reattribute, testdb_setup, testdb_teardown),
        cmocka_unit_test_setup_teardown(test_retention, testdb_setup, testdb_teardown),
        cmocka_unit_test_setup_teardown(test_report_cost, testdb_setup, testdb_teardown),
        cmocka_unit_test_setup_teardown(test_bad_hour_skipped, testdb_setup, testdb_teardown),
        cmocka_unit_test_setup_teardown(test_owned_from_registration, testdb_setup,
                                        testdb_teardown),
    };
    return cmocka_run_group_tests(tests, NULL, NULL);
}
