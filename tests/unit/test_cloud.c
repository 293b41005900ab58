/* Unit tests for the cloud instance store (src/store/cloud.c) on each
 * store: listings become instances, hosts and placeholder GPU records;
 * what a complete listing leaves out is gone, and only in its own source
 * and scope; runs open and close with the state; the usage rollup counts
 * a running instance's GPUs as allocated to consumer kind cloud with the
 * team of a cloud_tag rule; an agent's real GPUs supersede the
 * placeholders; billing lines find the instance's host by its id. */
#include "unit.h"
#include "testdb.h"

#include "core/util.h"
#include "parse/billing.h"
#include "parse/cloud.h"
#include "store/store.h"
#include "store/store_int.h"

#include <stdio.h>
#include <string.h>

static int64_t scalarf(struct testdb_fixture *f, const char *fmt, ...)
    __attribute__((format(printf, 2, 3)));
static int64_t scalarf(struct testdb_fixture *f, const char *fmt, ...)
{
    char sql[4096];
    va_list ap;

    va_start(ap, fmt);
    vsnprintf(sql, sizeof sql, fmt, ap);
    va_end(ap);
    return testdb_scalar(&f->db, sql);
}

static void sources(struct testdb_fixture *f)
{
    testdb_exec(f,
                "INSERT INTO sources (id, name, kind, cluster, created_at, updated_at) VALUES "
                "(1, 'aws-prod', 'aws', 'cloud-prod', 1, 1), (2, 'aws-other', 'aws', NULL, 1, 1)");
}

static struct cloud_tag team_tag[] = {{"team", "llm-train"}, {"Name", "train-01"}};

/* An instance of `type` in us-east-1 (a p4d has 8 A100s; "x9.huge" is a
 * type nobody knows). */
static struct cloud_instance inst(const char *id, const char *name, enum cloud_state st,
                                  int64_t launch, int gpus)
{
    struct cloud_instance v = {.state = st, .launch_time = launch, .gpu_count = gpus};

    gi_strlcpy(v.provider, "aws", sizeof v.provider);
    gi_strlcpy(v.instance_id, id, sizeof v.instance_id);
    gi_strlcpy(v.name, name, sizeof v.name);
    gi_strlcpy(v.account, "123456789012", sizeof v.account);
    gi_strlcpy(v.region, "us-east-1", sizeof v.region);
    gi_strlcpy(v.zone, "us-east-1c", sizeof v.zone);
    gi_strlcpy(v.machine_type, gpus >= 0 ? "p4d.24xlarge" : "x9.huge", sizeof v.machine_type);
    gi_strlcpy(v.state_raw, st == CLOUD_RUNNING ? "running" : "stopped", sizeof v.state_raw);
    if (gpus > 0)
        gi_strlcpy(v.gpu_model, "NVIDIA A100", sizeof v.gpu_model);
    v.gpu_memory_mib = gpus > 0 ? 40960 : -1;
    return v;
}

static void do_sync(struct testdb_fixture *f, int64_t sid, const char *scope,
                    const struct cloud_instance *v, size_t n, struct cloud_sync_result *r)
{
    memset(r, 0, sizeof *r);
    assert_status(store_cloud_sync(f->st, sid, "aws", scope, v, n, NULL, 0, r), GI_OK);
}

static void test_listing(void **state)
{
    struct testdb_fixture *f = *state;
    int64_t now = gi_now();
    struct cloud_instance v[3] = {
        inst("i-0aaa", "train-01", CLOUD_RUNNING, now - 600, 8),
        inst("i-0bbb", "", CLOUD_RUNNING, now - 600, -1), /* unknown type, no tags */
        inst("i-0ccc", "", CLOUD_STOPPED, 0, 8),
    };
    struct cloud_sync_result r;
    json_t *items = NULL;
    int64_t total = 0;
    struct store_page pg = {.limit = 100};
    struct store_cloud_filter flt = {.provider = "aws"};

    sources(f);
    v[0].tags = team_tag;
    v[0].ntags = 2;
    do_sync(f, 1, "us-east-1", v, 3, &r);
    assert_int_equal(r.instances, 3);
    assert_int_equal(r.gpus, 16);
    assert_int_equal(r.unknown_types, 1);
    assert_int_equal(r.gone, 0);
    /* The host is named after the instance, by its name or else its id. */
    assert_int_equal(scalarf(f,
                             "SELECT COUNT(*) FROM gpus g JOIN hosts h ON h.id = g.host_id "
                             "WHERE h.hostname = 'train-01' AND g.uuid LIKE 'cloud:aws:i-0aaa:%%' "
                             "AND g.model = 'NVIDIA A100' AND g.cluster = 'cloud-prod'"),
                     8);
    assert_int_equal(scalarf(f, "SELECT COUNT(*) FROM gpus WHERE uuid = 'cloud:aws:i-0aaa:7'"), 1);
    assert_int_equal(scalarf(f, "SELECT COUNT(*) FROM hosts WHERE hostname = 'i-0bbb'"), 1);
    assert_int_equal(scalarf(f, "SELECT COUNT(*) FROM gpus g JOIN hosts h ON h.id = g.host_id "
                                "WHERE h.hostname = 'i-0bbb'"),
                     0);
    /* A running instance has an open run from its launch time. */
    assert_int_equal(scalarf(f, "SELECT r.started_at FROM cloud_runs r JOIN cloud_instances i ON "
                                "i.id = r.instance_row WHERE i.instance_id = 'i-0aaa' AND "
                                "r.ended_at IS NULL"),
                     now - 600);
    assert_int_equal(scalarf(f, "SELECT COUNT(*) FROM cloud_runs r JOIN cloud_instances i ON i.id "
                                "= r.instance_row WHERE i.instance_id = 'i-0ccc'"),
                     0);

    assert_status(store_cloud_instances(f->st, &flt, &pg, &items, &total), GI_OK);
    assert_int_equal(total, 3);
    {
        json_t *a = json_array_get(items, 0), *b = json_array_get(items, 1);
        assert_string_equal(json_string_value(json_object_get(a, "instance_id")), "i-0aaa");
        assert_string_equal(json_string_value(json_object_get(json_object_get(a, "tags"), "team")),
                            "llm-train");
        assert_int_equal(json_array_size(json_object_get(a, "gpus")), 8);
        assert_string_equal(json_string_value(json_object_get(a, "host")), "train-01");
        assert_true(json_is_null(json_object_get(b, "gpu_count")));
        assert_int_equal(json_object_size(json_object_get(b, "tags")), 0);
    }
    json_decref(items);
    flt.state = "stopped";
    assert_status(store_cloud_instances(f->st, &flt, &pg, &items, &total), GI_OK);
    assert_int_equal(total, 1);
    json_decref(items);
    flt.state = NULL;
    flt.q = "train";
    assert_status(store_cloud_instances(f->st, &flt, &pg, &items, &total), GI_OK);
    assert_int_equal(total, 1);
    json_decref(items);
}

static void test_gone_and_scopes(void **state)
{
    struct testdb_fixture *f = *state;
    int64_t now = gi_now();
    struct cloud_instance a[2] = {inst("i-1", "", CLOUD_RUNNING, now - 60, 1),
                                  inst("i-2", "", CLOUD_RUNNING, now - 60, 1)};
    struct cloud_instance west = inst("i-3", "", CLOUD_RUNNING, now - 60, 1);
    struct cloud_instance other = inst("i-4", "", CLOUD_RUNNING, now - 60, 1);
    struct cloud_sync_result r;

    sources(f);
    do_sync(f, 1, "us-east-1", a, 2, &r);
    do_sync(f, 1, "us-west-2", &west, 1, &r);
    do_sync(f, 2, "us-east-1", &other, 1, &r);
    /* The next listing of us-east-1 by source 1 lacks i-2. */
    do_sync(f, 1, "us-east-1", a, 1, &r);
    assert_int_equal(r.gone, 1);
    assert_int_equal(scalarf(f, "SELECT COUNT(*) FROM cloud_instances WHERE gone_at IS NOT NULL"),
                     1);
    assert_int_equal(
        scalarf(f, "SELECT COUNT(*) FROM cloud_instances WHERE instance_id = 'i-2' AND gone_at "
                   "IS NOT NULL"),
        1);
    assert_int_equal(scalarf(f, "SELECT COUNT(*) FROM gpus WHERE uuid = 'cloud:aws:i-2:0' AND "
                                "missing_since IS NOT NULL"),
                     1);
    assert_int_equal(scalarf(f, "SELECT COUNT(*) FROM gpus WHERE missing_since IS NOT NULL"), 1);
    assert_int_equal(
        scalarf(f, "SELECT COUNT(*) FROM cloud_runs r JOIN cloud_instances i ON i.id = "
                   "r.instance_row WHERE i.instance_id = 'i-2' AND r.ended_at IS NOT NULL"),
        1);
    /* An empty but complete listing of us-west-2 makes only i-3 gone. */
    do_sync(f, 1, "us-west-2", NULL, 0, &r);
    assert_int_equal(r.gone, 1);
    assert_int_equal(scalarf(f, "SELECT COUNT(*) FROM cloud_instances WHERE gone_at IS NULL"), 2);
    /* Another source listing i-1 does not take it over. */
    do_sync(f, 2, "us-east-1", a, 1, &r);
    assert_int_equal(r.warnings, 1);
    assert_int_equal(r.instances, 0);
    assert_int_equal(scalarf(f, "SELECT source_id FROM cloud_instances WHERE instance_id = 'i-1'"),
                     1);
    assert_int_equal(scalarf(f, "SELECT COUNT(*) FROM cloud_instances WHERE instance_id = 'i-4' "
                                "AND gone_at IS NULL"),
                     0);
    /* i-2 comes back: present again. */
    do_sync(f, 1, "us-east-1", a, 2, &r);
    assert_int_equal(scalarf(f, "SELECT COUNT(*) FROM gpus WHERE uuid = 'cloud:aws:i-2:0' AND "
                                "missing_since IS NULL"),
                     1);
    assert_int_equal(scalarf(f, "SELECT COUNT(*) FROM cloud_runs r JOIN cloud_instances i ON i.id "
                                "= r.instance_row WHERE i.instance_id = 'i-2'"),
                     2);
}

static void test_stop_and_terminate(void **state)
{
    struct testdb_fixture *f = *state;
    int64_t now = gi_now();
    struct cloud_instance v = inst("i-9", "", CLOUD_RUNNING, now - 100, 2);
    struct cloud_sync_result r;

    sources(f);
    do_sync(f, 1, "us-east-1", &v, 1, &r);
    v.state = CLOUD_STOPPED;
    do_sync(f, 1, "us-east-1", &v, 1, &r);
    assert_int_equal(scalarf(f, "SELECT COUNT(*) FROM cloud_runs WHERE ended_at IS NOT NULL"), 1);
    assert_int_equal(scalarf(f, "SELECT COUNT(*) FROM gpus WHERE missing_since IS NULL"), 2);
    v.state = CLOUD_TERMINATED;
    do_sync(f, 1, "us-east-1", &v, 1, &r);
    assert_int_equal(scalarf(f, "SELECT COUNT(*) FROM gpus WHERE missing_since IS NULL"), 0);
    assert_int_equal(scalarf(f, "SELECT COUNT(*) FROM cloud_instances WHERE state = 'terminated'"),
                     1);
}

static void test_usage_owner_and_merge(void **state)
{
    struct testdb_fixture *f = *state;
    int64_t now = gi_now(), t0 = now - now % 86400 - 2 * 86400 + 10 * 3600;
    struct cloud_instance v = inst("i-0aaa", "train-01", CLOUD_RUNNING, t0, 2);
    struct store_rule rule = {.match_kind = "cloud_tag",
                              .match_key = "team",
                              .match_value = "llm-train",
                              .set = {"llm-train", NULL, NULL, NULL, NULL},
                              .position = 1,
                              .enabled = 1,
                              .effective_from = 1};
    struct store_dim d = {.name = "llm-train"};
    struct store_owner_err err;
    struct store_usage_run run;
    struct cloud_sync_result r;
    json_t *out = NULL;

    sources(f);
    assert_status(store_dim_create(f->st, "t", "team", &d, &out), GI_OK);
    json_decref(out);
    assert_status(store_rule_create(f->st, "t", &rule, &out, &err), GI_OK);
    json_decref(out);
    v.tags = team_tag;
    v.ntags = 1;
    do_sync(f, 1, "us-east-1", &v, 1, &r);
    assert_int_equal(scalarf(f, "SELECT COUNT(*) FROM gpus WHERE owner_team = 'llm-train' AND "
                                "owner_cloud = 'aws'"),
                     2);
    assert_status(store_usage_rollup(f->st, NULL, gi_now(), 0, &run), GI_OK);
    assert_int_equal(run.dirty_left, 0);
    /* The whole hour of t0 is allocated on both GPUs, to the instance,
     * with an unknown utilization. */
    assert_int_equal(scalarf(f,
                             "SELECT CAST(SUM(allocated_s) AS BIGINT) FROM usage_hourly WHERE "
                             "hour = %lld AND team = 'llm-train' AND cloud = 'aws'",
                             (long long)t0),
                     7200);
    assert_int_equal(scalarf(f,
                             "SELECT CAST(SUM(busy_s + alloc_idle_s) AS BIGINT) FROM "
                             "usage_hourly WHERE hour = %lld",
                             (long long)t0),
                     0);
    assert_int_equal(scalarf(f,
                             "SELECT CAST(SUM(allocated_s) AS BIGINT) FROM usage_consumers "
                             "WHERE hour = %lld AND kind = 'cloud' AND consumer = 'aws/i-0aaa' "
                             "AND team = 'llm-train'",
                             (long long)t0),
                     7200);
    /* Before the launch nothing is owned. */
    assert_int_equal(
        scalarf(f, "SELECT COUNT(*) FROM usage_hourly WHERE hour < %lld", (long long)t0), 0);

    /* A billing line for the instance finds its host by the id. */
    {
        struct billing_line l = {.provider = "aws",
                                 .account = "123456789012",
                                 .line_key = "line-1",
                                 .resource_id = "i-0aaa",
                                 .resource_name = "",
                                 .instance_type = "p4d.24xlarge",
                                 .team = "",
                                 .currency = "USD",
                                 .start = t0,
                                 .end = t0 + 3600,
                                 .cost_micros = 32000000};
        struct billing_file bf = {.format = BILLING_AWS, .variant = "aws-cur", .lines = &l, .n = 1};
        json_t *bo = NULL;
        l.tags = json_object();
        assert_status(store_billing_import(f->st, "t", &bf, false, &bo), GI_OK);
        assert_int_equal(json_integer_value(json_object_get(bo, "matched_instance")), 1);
        json_decref(bo);
        json_decref(l.tags);
        assert_int_equal(scalarf(f, "SELECT COUNT(*) FROM billing_costs"), 2);
    }

    /* An agent on the instance reports its real GPU on the same host: the
     * placeholders are superseded at the next listing. */
    testdb_exec(f,
                "INSERT INTO gpus (uuid, host_id, idx, model, first_seen_at, last_seen_at) SELECT "
                "'GPU-real-0', id, 0, 'NVIDIA A100', 1, 1 FROM hosts WHERE hostname = 'train-01'");
    do_sync(f, 1, "us-east-1", &v, 1, &r);
    assert_int_equal(scalarf(f, "SELECT COUNT(*) FROM cloud_gpus WHERE superseded_at IS NOT NULL"),
                     2);
    assert_int_equal(scalarf(f, "SELECT COUNT(*) FROM gpus WHERE missing_since IS NULL"), 1);
    /* The real GPU gets the instance's tags through the same rule. */
    {
        struct conn *c = db_conn_get(f->st);
        struct owner_fields o;
        int64_t gid = scalarf(f, "SELECT id FROM gpus WHERE uuid = 'GPU-real-0'");
        assert_status(owner_resolve(c, gid, now, &o), GI_OK);
        db_conn_put(f->st, c);
        assert_string_equal(o.team, "llm-train");
        assert_string_equal(o.cloud, "aws");
    }
}

int main(void)
{
    const struct CMUnitTest tests[] = {
        cmocka_unit_test_setup_teardown(test_listing, testdb_setup, testdb_teardown),
        cmocka_unit_test_setup_teardown(test_gone_and_scopes, testdb_setup, testdb_teardown),
        cmocka_unit_test_setup_teardown(test_stop_and_terminate, testdb_setup, testdb_teardown),
        cmocka_unit_test_setup_teardown(test_usage_owner_and_merge, testdb_setup, testdb_teardown),
    };
    return cmocka_run_group_tests(tests, NULL, NULL);
}
