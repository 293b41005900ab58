/* Usage insights against hand-computed fixtures: rollup rows written
 * straight into usage_hourly and usage_consumers (as the rollup job
 * would leave them), then every insight read through the store, on
 * SQLite and (as unit-pg/test_insights) on PostgreSQL.
 *
 * The fleet, from T0 = Monday 2026-11-02 00:00 UTC:
 * - team vision: 3 GPUs ($2.00/h) held by pod ml/train-1 and idle for
 *   the 10 hours T0 .. T0+10h: 60.00 of waste;
 * - team speech: pod speech/big-job on 8 GPUs ($1.50/h) for the 4 hours
 *   T0+6h .. T0+10h, 2 of them at 80 %, 6 at a peak of 1 %;
 * - team infra ($3.00/h), nobody holding them: i1 idle for the 30 hours
 *   T0-20h .. T0+10h, i2 for the 5 hours T0+5h .. T0+10h, i3 for 10 hours,
 *   a gap of one hour without data, then 19 hours up to T0+10h;
 * - team research ($1.00/h): m1 busy at 50 % at T0 (process alice/python),
 *   half measured at 20 % at T0+1h, idle at 3 % a week later at T0+168h. */
#include "unit.h"
#include "testdb.h"

#include <math.h>
#include <string.h>

#define T0 1793577600LL
#define H 3600LL

/* Adds the SQL of a file under tests/fixtures. */
static void fixture_sql(struct testdb_sql *q, const char *name)
{
    char path[512];
    FILE *f;
    char buf[1000]; /* below testdb_sql_add's bound */
    size_t n;

    snprintf(path, sizeof path, "%s/%s", GI_FIXTURES, name);
    f = fopen(path, "r");
    assert_non_null(f);
    while ((n = fread(buf, 1, sizeof buf - 1, f)) > 0) {
        buf[n] = '\0';
        testdb_sql_add(q, "%s", buf);
    }
    fclose(f);
}

/* A migration's statements that fill a table derived from the consumer
 * days (`first`: how the first of them starts): from that INSERT to the
 * migration's first CREATE INDEX after it. */
static void migration_fill_sql(struct testdb_sql *q, const char *migration, const char *first)
{
    char path[512];
    FILE *f;
    char line[1000]; /* below testdb_sql_add's bound */
    bool in = false;

    snprintf(path, sizeof path, "%s/../../src/store/migrations/%s", GI_FIXTURES, migration);
    f = fopen(path, "r");
    assert_non_null(f);
    while (fgets(line, sizeof line, f) != NULL) {
        if (strncmp(line, "CREATE INDEX", 12) == 0 && in)
            break;
        in = in || strncmp(line, first, strlen(first)) == 0;
        if (in)
            testdb_sql_add(q, "%s", line);
    }
    fclose(f);
    assert_true(in);
}

/* The group, daily and consumer-day rollups of the hour rows, as the rollup
 * job keeps them (the SQL the API tests run too). */
static void group_sums(struct testdb_sql *q)
{
    fixture_sql(q, "usage_group_sums.sql");
    fixture_sql(q, "usage_consumer_days.sql");
    migration_fill_sql(q, "062_usage_consumer_spans.sql", "INSERT INTO usage_consumer_spans");
    migration_fill_sql(q, "065_usage_consumer_totals.sql", "INSERT INTO usage_consumer_totals");
}

/* A real or NULL (NAN). */
static const char *dbl(char *buf, size_t len, double v)
{
    if (isnan(v))
        snprintf(buf, len, "NULL");
    else
        snprintf(buf, len, "%.6f", v);
    return buf;
}

struct hour {
    double owned, alloc, busy, ai, idle, unknown, measured, util, umax;
    double frac; /* share of a whole GPU; 0 stands for 1 */
};

static void host(struct testdb_sql *q, int id, const char *name)
{
    testdb_sql_add(
        q,
        "INSERT INTO hosts (id, hostname, first_seen_at, last_seen_at) VALUES (%d, '%s', 1, 1);\n",
        id, name);
}

static void gpu(struct testdb_sql *q, int id, const char *uuid, int host_id)
{
    testdb_sql_add(
        q,
        "INSERT INTO gpus (id, uuid, host_id, model, first_seen_at, last_seen_at) VALUES (%d, "
        "'%s', %d, 'H100', 1, 1);\n",
        id, uuid, host_id);
}

/* One rollup hour priced at rate micro-units of cur per hour (cur NULL:
 * no rate); util is the average %, so util_sum = util x measured. */
static void hour_in(struct testdb_sql *q, int gpu_id, long long at, const char *team, int host_id,
                    const char *hostname, long long rate, const char *cur, struct hour h)
{
    char umax[32], price[64];

    if (cur)
        snprintf(price, sizeof price, "%lld, '%s'", rate, cur);
    else
        snprintf(price, sizeof price, "NULL, NULL");
    testdb_sql_add(
        q,
        "INSERT INTO usage_hourly (gpu_id, hour, team, env, pool, cluster, cloud, model, "
        "datacenter_id, host_id, host, owned_s, allocated_s, busy_s, alloc_idle_s, idle_s, "
        "unknown_s, measured_s, util_sum, util_max, mem_sum, energy_wh, fraction, rate_micros, "
        "currency, updated_at) VALUES (%d, %lld, '%s', 'prod', NULL, 'c1', NULL, 'H100', NULL, "
        "%d, '%s', %.1f, %.1f, %.1f, %.1f, %.1f, %.1f, %.1f, %.1f, %s, 0, 0, %.6f, %s, 1);\n",
        gpu_id, at, team, host_id, hostname, h.owned, h.alloc, h.busy, h.ai, h.idle, h.unknown,
        h.measured, h.util * h.measured, dbl(umax, sizeof umax, h.umax), h.frac > 0 ? h.frac : 1.0,
        price);
}

static void hour(struct testdb_sql *q, int gpu_id, long long at, const char *team, int host_id,
                 const char *hostname, long long rate, struct hour h)
{
    hour_in(q, gpu_id, at, team, host_id, hostname, rate, "USD", h);
}

/* Who held the GPU in that hour. */
static void consumer(struct testdb_sql *q, int gpu_id, long long at, const char *kind,
                     const char *name, const char *team, const char *ns, const char *pod,
                     struct hour h)
{
    char umax[32], t[80], n[80], p[80];

    snprintf(t, sizeof t, team ? "'%s'" : "NULL", team ? team : "");
    snprintf(n, sizeof n, ns ? "'%s'" : "NULL", ns ? ns : "");
    snprintf(p, sizeof p, pod ? "'%s'" : "NULL", pod ? pod : "");
    testdb_sql_add(
        q,
        "INSERT INTO usage_consumers (gpu_id, hour, kind, consumer, team, namespace, pod, "
        "allocated_s, busy_s, alloc_idle_s, util_sum, measured_s, util_max) VALUES (%d, %lld, "
        "'%s', '%s', %s, %s, %s, %.1f, %.1f, %.1f, %.1f, %.1f, %s);\n",
        gpu_id, at, kind, name, t, n, p, h.alloc, h.busy, h.ai, h.util * h.measured, h.measured,
        dbl(umax, sizeof umax, h.umax));
}

static const struct hour held_idle = {3600, 3600, 0, 3600, 0, 0, 3600, 0, 0, 1};
static const struct hour held_busy = {3600, 3600, 3600, 0, 0, 0, 3600, 80, 90, 1};
static const struct hour held_low = {3600, 3600, 0, 3600, 0, 0, 3600, 0, 1, 1};
static const struct hour unheld_idle = {3600, 0, 0, 0, 3600, 0, 3600, 0, 0, 1};

static void fleet(const struct testdb *t)
{
    struct testdb_sql q = {0};
    char uuid[32];

    host(&q, 1, "hv");
    host(&q, 2, "hp");
    host(&q, 3, "hi");
    host(&q, 4, "hr");
    for (int g = 1; g <= 3; g++) {
        snprintf(uuid, sizeof uuid, "GPU-v%d", g);
        gpu(&q, g, uuid, 1);
        for (long long k = 0; k < 10; k++) {
            hour(&q, g, T0 + k * H, "vision", 1, "hv", 2000000, held_idle);
            consumer(&q, g, T0 + k * H, "k8s", "ml/train-1/main", "vision", "ml", "train-1",
                     held_idle);
        }
    }
    for (int g = 1; g <= 8; g++) {
        snprintf(uuid, sizeof uuid, "GPU-p%d", g);
        gpu(&q, 10 + g, uuid, 2);
        for (long long k = 6; k < 10; k++) {
            struct hour h = g <= 2 ? held_busy : held_low;
            hour(&q, 10 + g, T0 + k * H, "speech", 2, "hp", 1500000, h);
            consumer(&q, 10 + g, T0 + k * H, "k8s", "speech/big-job/c", "speech", "speech",
                     "big-job", h);
        }
    }
    gpu(&q, 21, "GPU-i1", 3);
    gpu(&q, 22, "GPU-i2", 3);
    gpu(&q, 23, "GPU-i3", 3);
    for (long long k = -20; k < 10; k++) {
        hour(&q, 21, T0 + k * H, "infra", 3, "hi", 3000000, unheld_idle);
        if (k >= 5)
            hour(&q, 22, T0 + k * H, "infra", 3, "hi", 3000000, unheld_idle);
        if (k != -10)
            hour(&q, 23, T0 + k * H, "infra", 3, "hi", 3000000, unheld_idle);
    }
    gpu(&q, 31, "GPU-m1", 4);
    {
        struct hour busy = {3600, 3600, 3600, 0, 0, 0, 3600, 50, 60, 1};
        struct hour half = {3600, 1800, 1800, 0, 0, 1800, 1800, 20, 25, 1};
        struct hour low = {3600, 0, 0, 0, 3600, 0, 3600, 3, 4, 1};
        hour(&q, 31, T0, "research", 4, "hr", 1000000, busy);
        consumer(&q, 31, T0, "process", "alice/python", NULL, NULL, NULL, busy);
        hour(&q, 31, T0 + H, "research", 4, "hr", 1000000, half);
        consumer(&q, 31, T0 + H, "process", "alice/python", NULL, NULL, NULL, half);
        hour(&q, 31, T0 + 168 * H, "research", 4, "hr", 1000000, low);
    }
    group_sums(&q);
    testdb_sql_run(t, &q);
}

/* The range most tests read: T0-24h .. T0+10h. */
static struct store_insight_filter range(void)
{
    struct store_insight_filter f = {.from = T0 - 24 * H, .to = T0 + 10 * H, .limit = 100};
    return f;
}

static int setup(void **state)
{
    if (testdb_setup(state) != 0)
        return -1;
    fleet(&((struct testdb_fixture *)*state)->db);
    return 0;
}

static const char *str(const json_t *o, const char *path)
{
    /* path: member names separated by '.', e.g. "cost.amount" */
    char buf[128];
    const json_t *at = o;

    snprintf(buf, sizeof buf, "%s", path);
    for (char *p = buf; at && p;) {
        char *dot = strchr(p, '.');
        if (dot)
            *dot = '\0';
        at = json_object_get(at, p);
        p = dot ? dot + 1 : NULL;
    }
    return json_string_value(at);
}

static double real(const json_t *o, const char *path)
{
    char buf[128];
    const json_t *at = o;

    snprintf(buf, sizeof buf, "%s", path);
    for (char *p = buf; at && p;) {
        char *dot = strchr(p, '.');
        if (dot)
            *dot = '\0';
        at = json_object_get(at, p);
        p = dot ? dot + 1 : NULL;
    }
    if (!json_is_number(at))
        fail_msg("%s is not a number", path);
    return json_number_value(at);
}

static void assert_near(double got, double want)
{
    if (fabs(got - want) > 1e-6)
        fail_msg("got %.9f, want %.9f", got, want);
}

static void test_heatmap(void **state)
{
    struct testdb_fixture *fx = *state;
    struct store_insight_filter f = {.from = T0, .to = T0 + 169 * H, .team = "research"};
    json_t *items = NULL, *c;

    assert_status(store_usage_heatmap(fx->st, &f, 0, false, &items), GI_OK);
    assert_int_equal(json_array_size(items), 168);
    c = json_array_get(items, 0);
    assert_string_equal(str(c, "day"), "Mon");
    /* (50 % x 1 h + 3 % x 1 h) / 2 h; allocated 1 h of 2 owned. */
    assert_near(real(c, "util_avg"), 26.5);
    assert_near(real(c, "value"), 26.5);
    assert_near(real(c, "allocated_pct"), 50);
    assert_near(real(c, "gpu_hours.owned"), 2);
    assert_near(real(c, "gpu_hours.busy"), 1);
    c = json_array_get(items, 1);
    assert_near(real(c, "util_avg"), 20);
    assert_near(real(c, "gpu_hours.measured"), 0.5);
    assert_near(real(c, "allocated_pct"), 50);
    assert_true(json_is_null(json_object_get(json_array_get(items, 2), "util_avg")));
    json_decref(items);

    /* One hour east of UTC, Monday 00:00 UTC is 01:00 local; one hour west
     * it is Sunday 23:00. The allocation metric picks allocated_pct. */
    assert_status(store_usage_heatmap(fx->st, &f, 3600, true, &items), GI_OK);
    assert_near(real(json_array_get(items, 1), "value"), 50);
    assert_near(real(json_array_get(items, 1), "util_avg"), 26.5);
    assert_near(real(json_array_get(items, 2), "util_avg"), 20);
    json_decref(items);
    assert_status(store_usage_heatmap(fx->st, &f, -3600, false, &items), GI_OK);
    assert_near(real(json_array_get(items, 167), "util_avg"), 26.5);
    assert_string_equal(str(json_array_get(items, 167), "day"), "Sun");
    json_decref(items);
}

static void test_trend(void **state)
{
    struct testdb_fixture *fx = *state;
    /* Current week [T0+1h, T0+169h), previous [T0-167h, T0+1h). */
    struct store_insight_filter f = {.from = T0 - 167 * H, .to = T0 + 169 * H, .limit = 10};
    json_t *items = NULL, *it = NULL;
    size_t i;
    json_t *o;

    assert_status(store_usage_trend(fx->st, &f, "nonsense", T0 + H, &items), GI_INVALID);
    assert_status(store_usage_trend(fx->st, &f, "team", T0 + H, &items), GI_OK);
    json_array_foreach(items, i, o)
        if (str(o, "group") && strcmp(str(o, "group"), "research") == 0)
            it = o;
    assert_non_null(it);
    assert_near(real(it, "owned.current"), 2);
    assert_near(real(it, "owned.previous"), 1);
    assert_near(real(it, "owned.change_pct"), 100);
    assert_string_equal(str(it, "owned.direction"), "up");
    assert_near(real(it, "busy.current"), 0.5);
    assert_near(real(it, "busy.change_pct"), -50);
    assert_string_equal(str(it, "busy.direction"), "down");
    assert_string_equal(str(it, "allocated_idle.direction"), "flat");
    assert_true(json_is_null(json_object_get(json_object_get(it, "allocated_idle"), "change_pct")));
    /* (20 % x 0.5 h + 3 % x 1 h) / 1.5 h against 50 %. */
    assert_near(real(it, "util_avg.current"), 46800.0 / 5400.0);
    assert_near(real(it, "util_avg.change_pct"), -82.7);
    assert_string_equal(str(it, "cost.current"), "2.00");
    assert_string_equal(str(it, "cost.previous"), "1.00");
    assert_string_equal(str(it, "cost.currency"), "USD");
    json_decref(items);

    /* By GPU: m1 alone under the research filter. */
    f.team = "research";
    assert_status(store_usage_trend(fx->st, &f, "gpu", T0 + H, &items), GI_OK);
    assert_int_equal(json_array_size(items), 1);
    assert_string_equal(str(json_array_get(items, 0), "group"), "GPU-m1");
    json_decref(items);
}

static void test_idle(void **state)
{
    struct testdb_fixture *fx = *state;
    struct store_insight_filter f = range();
    json_t *items = NULL, *o;

    assert_status(store_insight_idle(fx->st, &f, 24, &items), GI_OK);
    assert_int_equal(json_array_size(items), 1);
    o = json_array_get(items, 0);
    assert_string_equal(str(o, "gpu"), "GPU-i1");
    assert_string_equal(str(o, "since"), "2026-11-01T04:00:00Z");
    assert_string_equal(str(o, "until"), "2026-11-02T10:00:00Z");
    assert_int_equal(json_integer_value(json_object_get(o, "hours")), 30);
    assert_near(real(o, "idle_gpu_hours"), 30);
    assert_string_equal(str(o, "cost.amount"), "90.00");
    assert_string_equal(str(o, "hourly.amount"), "3.00");
    assert_string_equal(str(o, "team"), "infra");
    assert_string_equal(str(o, "host"), "hi");
    assert_null(json_object_get(o, "_hourly"));
    json_decref(items);

    /* The hour without data breaks i3's run: 19 hours since T0-9h. */
    assert_status(store_insight_idle(fx->st, &f, 10, &items), GI_OK);
    assert_int_equal(json_array_size(items), 2);
    o = json_array_get(items, 1);
    assert_string_equal(str(o, "gpu"), "GPU-i3");
    assert_int_equal(json_integer_value(json_object_get(o, "hours")), 19);
    assert_string_equal(str(o, "since"), "2026-11-01T15:00:00Z");
    json_decref(items);
    assert_status(store_insight_idle(fx->st, &f, 1, &items), GI_OK);
    assert_int_equal(json_array_size(items), 3);
    assert_string_equal(str(json_array_get(items, 2), "gpu"), "GPU-i2");
    json_decref(items);

    /* A run that stopped before the end of the range is not idle now. */
    f.to = T0 + 20 * H;
    assert_status(store_insight_idle(fx->st, &f, 1, &items), GI_OK);
    assert_int_equal(json_array_size(items), 0);
    json_decref(items);
    f = range();
    f.team = "vision";
    assert_status(store_insight_idle(fx->st, &f, 1, &items), GI_OK);
    assert_int_equal(json_array_size(items), 0);
    json_decref(items);
}

static void test_alloc_idle(void **state)
{
    struct testdb_fixture *fx = *state;
    struct store_insight_filter f = range();
    json_t *items = NULL, *o;
    double vision = 0;
    size_t i;

    assert_status(store_insight_alloc_idle(fx->st, &f, &items), GI_OK);
    assert_int_equal(json_array_size(items), 9);
    json_array_foreach(items, i, o) {
        if (i < 3) {
            /* 3 GPUs x 10 h x $2.00 = 60.00, largest first. */
            assert_string_equal(str(o, "team"), "vision");
            assert_string_equal(str(o, "consumer.name"), "ml/train-1/main");
            assert_string_equal(str(o, "consumer.kind"), "k8s");
            assert_string_equal(str(o, "cost.amount"), "20.00");
            assert_string_equal(str(o, "since"), "2026-11-02T00:00:00Z");
            assert_true(json_is_true(json_object_get(o, "idle_now")));
            vision += strtod(str(o, "cost.amount"), NULL);
        } else {
            assert_string_equal(str(o, "consumer.name"), "speech/big-job/c");
            assert_near(real(o, "allocated_idle_gpu_hours"), 4);
            assert_string_equal(str(o, "cost.amount"), "6.00");
            assert_string_equal(str(o, "since"), "2026-11-02T06:00:00Z");
        }
    }
    assert_near(vision, 60);
    json_decref(items);
}

static void test_waste_by_team(void **state)
{
    struct testdb_fixture *fx = *state;
    struct store_insight_filter f = range();
    json_t *items = NULL, *o;

    assert_status(store_insight_waste_by_team(fx->st, &f, &items), GI_OK);
    assert_int_equal(json_array_size(items), 4);
    o = json_array_get(items, 0);
    assert_string_equal(str(o, "team"), "vision");
    assert_string_equal(str(o, "allocated_idle_cost.amount"), "60.00");
    assert_string_equal(str(o, "idle_cost.amount"), "0.00");
    assert_int_equal(json_integer_value(json_object_get(o, "rank")), 1);
    assert_int_equal(json_integer_value(json_object_get(o, "gpus_allocated_idle")), 3);
    o = json_array_get(items, 1);
    assert_string_equal(str(o, "team"), "speech");
    assert_string_equal(str(o, "allocated_idle_cost.amount"), "36.00");
    assert_string_equal(str(o, "owned_cost.amount"), "48.00");
    o = json_array_get(items, 2);
    /* i1 30 h + i2 5 h + i3 29 h at $3.00. */
    assert_string_equal(str(o, "team"), "infra");
    assert_string_equal(str(o, "idle_cost.amount"), "192.00");
    assert_near(real(o, "gpu_hours.idle"), 64);
    assert_string_equal(str(json_array_get(items, 3), "team"), "research");
    json_decref(items);
}

static void test_top_consumers(void **state)
{
    struct testdb_fixture *fx = *state;
    struct store_insight_filter f = range();
    json_t *items = NULL, *o;

    assert_status(store_insight_top_consumers(fx->st, &f, &items), GI_OK);
    assert_int_equal(json_array_size(items), 3);
    o = json_array_get(items, 0);
    assert_string_equal(str(o, "consumer"), "speech/big-job/c");
    assert_near(real(o, "gpu_hours"), 32);
    assert_near(real(o, "busy_pct"), 25);
    assert_int_equal(json_integer_value(json_object_get(o, "gpus")), 8);
    o = json_array_get(items, 1);
    assert_string_equal(str(o, "consumer"), "ml/train-1/main");
    assert_near(real(o, "busy_pct"), 0);
    o = json_array_get(items, 2);
    assert_string_equal(str(o, "consumer"), "alice/python");
    assert_near(real(o, "gpu_hours"), 1.5);
    assert_near(real(o, "busy_pct"), 100);
    assert_true(json_is_null(json_object_get(o, "team")));
    json_decref(items);
}

static void test_overrequest(void **state)
{
    struct testdb_fixture *fx = *state;
    struct store_insight_filter f = range();
    json_t *items = NULL, *o;

    assert_status(store_insight_overrequest(fx->st, &f, 5.0, &items), GI_OK);
    /* The pod that uses none of its 3 GPUs is allocated-idle, not
     * over-requesting. */
    assert_int_equal(json_array_size(items), 1);
    o = json_array_get(items, 0);
    assert_string_equal(str(o, "workload"), "speech/big-job");
    assert_int_equal(json_integer_value(json_object_get(o, "n")), 8);
    assert_int_equal(json_integer_value(json_object_get(o, "k")), 6);
    assert_int_equal(json_array_size(json_object_get(o, "idle_gpus")), 6);
    assert_string_equal(json_string_value(json_array_get(json_object_get(o, "idle_gpus"), 0)),
                        "GPU-p3");
    assert_string_equal(str(o, "idle_cost.amount"), "36.00");
    assert_near(real(o, "idle_gpu_hours"), 24);
    assert_string_equal(str(o, "host"), "hp");
    json_decref(items);

    /* Below a peak of 0.5 % no GPU is unused (the 6 peak at 1 %). */
    assert_status(store_insight_overrequest(fx->st, &f, 0.5, &items), GI_OK);
    assert_int_equal(json_array_size(items), 0);
    json_decref(items);
}

static void test_savings(void **state)
{
    struct testdb_fixture *fx = *state;
    struct store_insight_filter f = range();
    json_t *items = NULL, *o;

    assert_status(store_insight_savings(fx->st, &f, 24, 5.0, &items), GI_OK);
    assert_int_equal(json_array_size(items), 3);
    /* 6 unused GPUs x $1.50 x 720 h. */
    o = json_array_get(items, 0);
    assert_string_equal(str(o, "kind"), "overrequest");
    assert_string_equal(str(o, "saving.monthly"), "6480.00");
    assert_int_equal(json_integer_value(json_object_get(o, "gpus")), 6);
    assert_int_equal(json_array_size(json_object_get(o, "gpu_uuids")), 6);
    /* 3 allocated-idle GPUs x $2.00 x 720 h. */
    o = json_array_get(items, 1);
    assert_string_equal(str(o, "kind"), "allocated_idle");
    assert_string_equal(str(o, "team"), "vision");
    assert_string_equal(str(o, "saving.monthly"), "4320.00");
    assert_string_equal(str(o, "saving.currency"), "USD");
    assert_string_equal(str(o, "text"), "release 3 allocated-idle GPUs held by team vision since "
                                        "2026-11-02: ~$4320.00/month");
    assert_string_equal(str(o, "since"), "2026-11-02T00:00:00Z");
    /* i1 alone has been idle for 24 hours or more: 1 x $3.00 x 720 h. */
    o = json_array_get(items, 2);
    assert_string_equal(str(o, "kind"), "idle");
    assert_string_equal(str(o, "team"), "infra");
    assert_string_equal(str(o, "saving.monthly"), "2160.00");
    assert_string_equal(json_string_value(json_array_get(json_object_get(o, "gpu_uuids"), 0)),
                        "GPU-i1");
    json_decref(items);

    f.limit = 1;
    assert_status(store_insight_savings(fx->st, &f, 24, 5.0, &items), GI_OK);
    assert_int_equal(json_array_size(items), 1);
    json_decref(items);
}

/* Money without a rate, or in several currencies, is never added up:
 * team lab's idle GPUs are priced in USD, in EUR and not at all. */
static void test_unpriced_and_mixed(void **state)
{
    struct testdb_fixture *fx = *state;
    struct store_insight_filter f = range();
    struct testdb_sql q = {0};
    json_t *items = NULL, *o;
    size_t i_;

    gpu(&q, 41, "GPU-n1", 3);
    gpu(&q, 42, "GPU-e1", 3);
    gpu(&q, 43, "GPU-u1", 3);
    for (long long k = -20; k < 10; k++) {
        hour_in(&q, 41, T0 + k * H, "lab", 3, "hi", 0, NULL, unheld_idle);
        hour_in(&q, 42, T0 + k * H, "lab", 3, "hi", 1000000, "EUR", unheld_idle);
        hour_in(&q, 43, T0 + k * H, "lab", 3, "hi", 1000000, "USD", unheld_idle);
    }
    group_sums(&q);
    testdb_sql_run(&fx->db, &q);
    f.team = "lab";

    assert_status(store_insight_waste_by_team(fx->st, &f, &items), GI_OK);
    assert_int_equal(json_array_size(items), 1);
    o = json_array_get(items, 0);
    assert_true(json_is_null(json_object_get(json_object_get(o, "idle_cost"), "amount")));
    assert_string_equal(str(o, "idle_cost.currency"), "mixed");
    assert_near(real(o, "gpu_hours.idle"), 90);
    json_decref(items);

    assert_status(store_insight_idle(fx->st, &f, 24, &items), GI_OK);
    assert_int_equal(json_array_size(items), 3);
    json_array_foreach(items, i_, o) {
        if (strcmp(str(o, "gpu"), "GPU-n1") == 0) {
            assert_true(json_is_null(json_object_get(o, "hourly")));
            assert_true(json_is_null(json_object_get(json_object_get(o, "cost"), "currency")));
        }
    }
    json_decref(items);

    /* One opportunity per currency; the one without a rate comes last. */
    assert_status(store_insight_savings(fx->st, &f, 24, 5.0, &items), GI_OK);
    assert_int_equal(json_array_size(items), 3);
    assert_string_equal(str(json_array_get(items, 0), "text"),
                        "reclaim 1 GPU of team lab idle for 30 hours or more since 2026-11-01: "
                        "~$720.00/month");
    assert_string_equal(str(json_array_get(items, 1), "text"),
                        "reclaim 1 GPU of team lab idle for 30 hours or more since 2026-11-01: "
                        "~720.00 EUR/month");
    o = json_array_get(items, 2);
    assert_true(json_is_null(json_object_get(json_object_get(o, "saving"), "monthly")));
    assert_string_equal(str(o, "text"), "reclaim 1 GPU of team lab idle for 30 hours or more "
                                        "since 2026-11-01: no catalog rate, saving unknown");
    json_decref(items);
}

/* MIG slices count by their share: two halves of a GPU at $4.00/h held
 * idle by one pod for 4 hours are 4 GPU-hours and 16.00 of waste. */
static void test_fractions(void **state)
{
    struct testdb_fixture *fx = *state;
    struct store_insight_filter f = range();
    struct hour slice = held_idle;
    struct testdb_sql q = {0};
    json_t *items = NULL, *o;
    size_t i;

    slice.frac = 0.5;
    gpu(&q, 51, "MIG-s1", 1);
    gpu(&q, 52, "MIG-s2", 1);
    for (int g = 51; g <= 52; g++) {
        for (long long k = 6; k < 10; k++) {
            hour(&q, g, T0 + k * H, "mig", 1, "hv", 4000000, slice);
            consumer(&q, g, T0 + k * H, "k8s", "mig/job/c", "mig", "mig", "job", slice);
        }
    }
    group_sums(&q);
    testdb_sql_run(&fx->db, &q);
    f.team = "mig";

    assert_status(store_insight_waste_by_team(fx->st, &f, &items), GI_OK);
    o = json_array_get(items, 0);
    assert_string_equal(str(o, "allocated_idle_cost.amount"), "16.00");
    assert_near(real(o, "gpu_hours.allocated_idle"), 4);
    json_decref(items);

    assert_status(store_insight_alloc_idle(fx->st, &f, &items), GI_OK);
    assert_int_equal(json_array_size(items), 2);
    json_array_foreach(items, i, o) {
        assert_near(real(o, "allocated_idle_gpu_hours"), 2);
        assert_string_equal(str(o, "cost.amount"), "8.00");
        assert_string_equal(str(o, "hourly.amount"), "2.00");
    }
    json_decref(items);

    assert_status(store_insight_savings(fx->st, &f, 24, 5.0, &items), GI_OK);
    assert_int_equal(json_array_size(items), 1);
    assert_string_equal(str(json_array_get(items, 0), "saving.monthly"), "2880.00");
    json_decref(items);

    f.from = T0;
    assert_status(store_usage_heatmap(fx->st, &f, 0, true, &items), GI_OK);
    assert_near(real(json_array_get(items, 6), "gpu_hours.owned"), 1);
    assert_near(real(json_array_get(items, 6), "value"), 100);
    json_decref(items);
}

/* Each hour belongs to the owner it had: a GPU handed from team old to
 * team new halfway through a pod's idle hold is 2 hours of each team's
 * waste, and shows under its newest owner. */
static void test_owner_change(void **state)
{
    struct testdb_fixture *fx = *state;
    struct store_insight_filter f = range();
    struct testdb_sql q = {0};
    json_t *items = NULL, *o;
    size_t i;
    int seen = 0;

    gpu(&q, 61, "GPU-o1", 1);
    for (long long k = 6; k < 10; k++) {
        hour(&q, 61, T0 + k * H, k < 8 ? "old" : "new", 1, "hv", 1000000, held_idle);
        consumer(&q, 61, T0 + k * H, "k8s", "x/hold/c", NULL, "x", "hold", held_idle);
    }
    group_sums(&q);
    testdb_sql_run(&fx->db, &q);

    assert_status(store_insight_waste_by_team(fx->st, &f, &items), GI_OK);
    json_array_foreach(items, i, o) {
        const char *team = str(o, "team");
        if (team && (strcmp(team, "old") == 0 || strcmp(team, "new") == 0)) {
            assert_string_equal(str(o, "allocated_idle_cost.amount"), "2.00");
            seen++;
        }
    }
    assert_int_equal(seen, 2);
    json_decref(items);

    assert_status(store_insight_alloc_idle(fx->st, &f, &items), GI_OK);
    json_array_foreach(items, i, o) {
        if (strcmp(str(o, "gpu"), "GPU-o1") == 0) {
            assert_string_equal(str(o, "team"), "new");
            assert_string_equal(str(o, "since"), "2026-11-02T06:00:00Z");
            assert_near(real(o, "allocated_idle_gpu_hours"), 4);
        }
    }
    json_decref(items);

    f.team = "new";
    assert_status(store_insight_alloc_idle(fx->st, &f, &items), GI_OK);
    assert_int_equal(json_array_size(items), 1);
    o = json_array_get(items, 0);
    assert_string_equal(str(o, "since"), "2026-11-02T08:00:00Z");
    assert_near(real(o, "allocated_idle_gpu_hours"), 2);
    json_decref(items);
}

int main(void)
{
    const struct CMUnitTest tests[] = {
        cmocka_unit_test_setup_teardown(test_heatmap, setup, testdb_teardown),
        cmocka_unit_test_setup_teardown(test_trend, setup, testdb_teardown),
        cmocka_unit_test_setup_teardown(test_idle, setup, testdb_teardown),
        cmocka_unit_test_setup_teardown(test_alloc_idle, setup, testdb_teardown),
        cmocka_unit_test_setup_teardown(test_waste_by_team, setup, testdb_teardown),
        cmocka_unit_test_setup_teardown(test_top_consumers, setup, testdb_teardown),
        cmocka_unit_test_setup_teardown(test_overrequest, setup, testdb_teardown),
        cmocka_unit_test_setup_teardown(test_savings, setup, testdb_teardown),
        cmocka_unit_test_setup_teardown(test_unpriced_and_mixed, setup, testdb_teardown),
        cmocka_unit_test_setup_teardown(test_fractions, setup, testdb_teardown),
        cmocka_unit_test_setup_teardown(test_owner_change, setup, testdb_teardown),
    };
    return cmocka_run_group_tests(tests, NULL, NULL);
}
