/* Unit tests for owner resolution (src/store/ownership.c through
 * store_int.h), each on a fresh database: the precedence of assignments,
 * rules and the source's defaults per field with what decided each, the
 * history of assignments and rule versions at times before, between and
 * after changes, Kubernetes node labels for rules, the consumer mapping,
 * and the cached resolver agreeing with itself over many GPU-hours. */
#include "unit.h"
#include "testdb.h"

#include "core/log.h"
#include "core/observation.h"
#include "core/util.h"
#include "store/store.h"
#include "store/store_int.h"

#include <string.h>

struct fixture {
    struct testdb db;
    struct store *st;
    int64_t source;
    int batches;
};

static int setup(void **state)
{
    struct fixture *f = calloc(1, sizeof *f);

    if (f == NULL)
        return -1;
    gi_log_set_level(GI_LOG_WARN);
    if (test_store_open(&f->db, 2, &f->st) != 0) {
        free(f);
        return -1;
    }
    if (store_source_ensure(f->st, "agents", "push", "legacy", "lab", "c1", &f->source) != GI_OK) {
        store_close(f->st);
        testdb_remove(&f->db);
        free(f);
        return -1;
    }
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

/* Reports host `hostname` with n GPUs GPU-<tag>-<i>. */
static void report(struct fixture *f, const char *hostname, int n, const char *tag)
{
    struct gi_batch b;
    struct store_ingest_result res;

    memset(&b, 0, sizeof b);
    snprintf(b.batch_id, sizeof b.batch_id, "b%d", ++f->batches);
    gi_strlcpy(b.host.hostname, hostname, sizeof b.host.hostname);
    for (int i = 0; i < n; i++) {
        struct gi_gpu_obs *g = gi_obs_add_gpu(&b.set);
        assert_non_null(g);
        snprintf(g->uuid, sizeof g->uuid, "GPU-%s-%d", tag, i);
        g->index = i;
        gi_strlcpy(g->name, "NVIDIA H100 80GB HBM3", sizeof g->name);
    }
    assert_status(store_ingest(f->st, f->source, &b, &res), GI_OK);
    gi_batch_free(&b);
}

static const char sql_gpu_id[] = "SELECT id FROM gpus WHERE uuid = :uuid";
static const char sql_host_id[] = "SELECT id FROM hosts WHERE hostname = :name";

static int64_t id_of(struct fixture *f, const char *sql, const char *name, const char *v)
{
    struct conn *c = db_conn_get(f->st);
    struct db_stmt *s = db_prep(c, sql);
    int64_t id = 0;

    assert_non_null(s);
    db_bind_text(s, name, v);
    assert_status(db_fetch_int(c, s, &id), GI_OK);
    db_conn_put(f->st, c);
    return id;
}

static void resolve(struct fixture *f, const char *uuid, int64_t at, struct owner_fields *o)
{
    int64_t id = id_of(f, sql_gpu_id, ":uuid", uuid);
    struct conn *c = db_conn_get(f->st);
    assert_status(owner_resolve(c, id, at, o), GI_OK);
    db_conn_put(f->st, c);
}

static void dim(struct fixture *f, const char *kind, const char *name)
{
    struct store_dim d = {.name = name};
    json_t *out = NULL;
    assert_status(store_dim_create(f->st, "t", kind, &d, &out), GI_OK);
    json_decref(out);
}

static int64_t rule(struct fixture *f, const char *kind, const char *key, const char *value,
                    const char *team, const char *pool, int64_t position, int64_t from)
{
    struct store_rule r = {.match_kind = kind,
                           .match_key = key,
                           .match_value = value,
                           .set = {team, NULL, pool, NULL, NULL},
                           .position = position,
                           .enabled = 1,
                           .effective_from = from};
    struct store_owner_err err;
    json_t *out = NULL;
    int64_t id;

    assert_status(store_rule_create(f->st, "t", &r, &out, &err), GI_OK);
    id = json_integer_value(json_object_get(out, "id"));
    json_decref(out);
    return id;
}

static void assign(struct fixture *f, enum store_owner_target t, const char *key,
                   const struct store_owner_set *in, int want)
{
    struct store_owner_err err;
    json_t *out = NULL;
    assert_status(store_owner_assign(f->st, "t", t, key, in, &out, &err), want);
    json_decref(out);
}

static void k8s_node(struct fixture *f, const char *hostname, const char *labels)
{
    struct store_k8s_node n = {.name = hostname,
                               .hostname = hostname,
                               .cloud = "aws",
                               .labels = labels,
                               .physical_gpus = -1,
                               .capacity = -1,
                               .allocatable = -1,
                               .mig_devices = -1,
                               .replicas = -1,
                               .ready = 1};
    int64_t sid;
    assert_status(store_source_ensure(f->st, "k8s", "kubernetes", NULL, NULL, NULL, &sid), GI_OK);
    assert_status(store_k8s_sync(f->st, sid, "c1", &n, 1, NULL, 0), GI_OK);
}

#define assert_field(o, field, value, by)                                                          \
    do {                                                                                           \
        assert_string_equal((o).field, (value));                                                   \
        assert_string_equal((o).field##_by, (by));                                                 \
    } while (0)

static void test_precedence_and_history(void **state)
{
    struct fixture *f = *state;
    int64_t now = gi_now(), t0 = now - 30 * 86400, t1 = now - 20 * 86400, t2 = now - 10 * 86400;
    struct owner_fields o;
    char by[OWNER_BY_LEN], src[OWNER_BY_LEN];
    int64_t r1, r2, gid, hid;

    snprintf(src, sizeof src, "source:%lld", (long long)f->source);
    report(f, "node-a", 2, "a");
    report(f, "node-b", 1, "b");
    dim(f, "team", "vision");
    dim(f, "team", "nlp");
    dim(f, "environment", "prod");
    dim(f, "pool", "fast-pool");
    k8s_node(f, "node-a", "{\"pool\":\"fast\",\"kubernetes.io/hostname\":\"node-a\"}");

    /* Only the source's defaults, and the node's cloud from its source. */
    resolve(f, "GPU-a-0", now, &o);
    assert_field(o, team, "legacy", src);
    assert_field(o, env, "lab", src);
    assert_field(o, cluster, "c1", src);
    assert_field(o, pool, "", "");
    assert_string_equal(o.cloud, "aws");

    r1 = rule(f, "host_pattern", NULL, "node-?", "nlp", NULL, 1, t0);
    r2 = rule(f, "node_label", "pool", "fa*", "vision", "fast-pool", 2, t0);
    assign(f, STORE_OWNER_HOST, "node-a",
           &(struct store_owner_set){.env = "prod", .has_env = true, .effective_from = t1}, GI_OK);
    assign(f, STORE_OWNER_GPU, "GPU-a-0",
           &(struct store_owner_set){.team = "vision", .has_team = true, .effective_from = t2},
           GI_OK);
    gid = id_of(f, sql_gpu_id, ":uuid", "GPU-a-0");
    hid = id_of(f, sql_host_id, ":name", "node-a");

    /* Before every change: the source. */
    resolve(f, "GPU-a-0", t0 - 3600, &o);
    assert_field(o, team, "legacy", src);
    assert_field(o, pool, "", "");
    /* Rules only: the first match per field (r1 sets the team first). */
    resolve(f, "GPU-a-0", t0 + 3600, &o);
    snprintf(by, sizeof by, "rule:%lld", (long long)r1);
    assert_field(o, team, "nlp", by);
    snprintf(by, sizeof by, "rule:%lld", (long long)r2);
    assert_field(o, pool, "fast-pool", by);
    assert_field(o, env, "lab", src);
    /* The host's assignment decides env from t1 on. */
    resolve(f, "GPU-a-0", t1 + 3600, &o);
    snprintf(by, sizeof by, "assignment:host:%lld", (long long)hid);
    assert_field(o, env, "prod", by);
    snprintf(by, sizeof by, "rule:%lld", (long long)r1);
    assert_field(o, team, "nlp", by);
    /* And the GPU's decides its team from t2 on; the other GPU keeps the rule's. */
    resolve(f, "GPU-a-0", t2 + 1, &o);
    snprintf(by, sizeof by, "assignment:gpu:%lld", (long long)gid);
    assert_field(o, team, "vision", by);
    assert_field(o, cluster, "c1", src);
    resolve(f, "GPU-a-1", t2 + 1, &o);
    snprintf(by, sizeof by, "rule:%lld", (long long)r1);
    assert_field(o, team, "nlp", by);
    /* node-b has no labels: no pool. */
    resolve(f, "GPU-b-0", now, &o);
    assert_field(o, team, "nlp", by);
    assert_field(o, pool, "", "");
    assert_field(o, env, "lab", src);

    /* The past is not rewritten. */
    assign(f, STORE_OWNER_GPU, "GPU-a-0",
           &(struct store_owner_set){.team = "nlp", .has_team = true, .effective_from = t1},
           GI_CONFLICT);
    /* An unknown team is refused. */
    assign(f, STORE_OWNER_GPU, "GPU-a-0",
           &(struct store_owner_set){.team = "nope", .has_team = true}, GI_INVALID);
}

static void test_rule_versions(void **state)
{
    struct fixture *f = *state;
    int64_t now = gi_now(), t0 = now - 30 * 86400, t3 = now - 5 * 86400;
    struct store_rule upd = {.has_set = true,
                             .set = {"vision", NULL, NULL, NULL, NULL},
                             .position = -1,
                             .enabled = -1,
                             .effective_from = t3};
    struct store_owner_err err;
    struct owner_fields o;
    json_t *out = NULL;
    char by[OWNER_BY_LEN];
    int64_t r;

    report(f, "edge-1", 1, "e");
    dim(f, "team", "vision");
    dim(f, "team", "nlp");
    r = rule(f, "host_pattern", NULL, "EDGE-*", "nlp", NULL, -1, t0);
    assert_status(store_rule_update(f->st, "t", r, &upd, &out, &err), GI_OK);
    assert_int_equal(json_integer_value(json_object_get(out, "id")), r);
    json_decref(out);
    snprintf(by, sizeof by, "rule:%lld", (long long)r);
    resolve(f, "GPU-e-0", t0 + 60, &o);
    assert_field(o, team, "nlp", by);
    resolve(f, "GPU-e-0", t3 + 60, &o);
    assert_field(o, team, "vision", by);
    /* The materialized current owner follows. */
    assert_status(store_gpu_get(f->st, "GPU-e-0", 0, &out), GI_OK);
    assert_string_equal(json_string_value(json_object_get(
                            json_object_get(json_object_get(out, "owner"), "team"), "value")),
                        "vision");
    json_decref(out);
    /* Deleted: from now on the source decides again; the past keeps the rule. */
    assert_status(store_rule_delete(f->st, "t", r), GI_OK);
    resolve(f, "GPU-e-0", now + 60, &o);
    assert_string_equal(o.team, "legacy");
    resolve(f, "GPU-e-0", t3 + 60, &o);
    assert_field(o, team, "vision", by);
    assert_status(store_rule_get(f->st, r, &out), GI_NOT_FOUND);
}

static void test_consumer_team(void **state)
{
    struct fixture *f = *state;
    int64_t now = gi_now();
    char team[OWNER_LEN];
    struct conn *c;

    dim(f, "team", "vision");
    rule(f, "k8s_namespace", NULL, "ml-*", "vision", NULL, -1, now - 3600);
    c = db_conn_get(f->st);
    assert_status(owner_consumer_team(c, "k8s", "ml-train", now, team, sizeof team), GI_OK);
    assert_string_equal(team, "vision");
    assert_status(owner_consumer_team(c, "k8s", "web", now, team, sizeof team), GI_OK);
    assert_string_equal(team, "");
    assert_status(owner_consumer_team(c, "k8s", "ml-train", now - 7200, team, sizeof team), GI_OK);
    assert_string_equal(team, "");
    assert_status(owner_consumer_team(c, "slurm", "ml-train", now, team, sizeof team), GI_OK);
    assert_string_equal(team, "");
    db_conn_put(f->st, c);
}

/* The rollups resolve every GPU-hour: the cached resolver gives the same
 * answers GPU after GPU, hour after hour, as a fresh resolution does. */
static void test_many_hours(void **state)
{
    struct fixture *f = *state;
    int64_t now = gi_now(), day = now - now % 86400 - 86400, ids[8];
    struct owner_fields o, fresh;
    char uuid[32];
    struct conn *c;

    dim(f, "team", "vision");
    dim(f, "team", "nlp");
    report(f, "rack-1", 8, "r");
    rule(f, "host_pattern", NULL, "rack-*", "nlp", NULL, -1, day + 12 * 3600);
    assign(f, STORE_OWNER_GPU, "GPU-r-3",
           &(struct store_owner_set){
               .team = "vision", .has_team = true, .effective_from = day + 6 * 3600},
           GI_OK);
    for (int i = 0; i < 8; i++) {
        snprintf(uuid, sizeof uuid, "GPU-r-%d", i);
        ids[i] = id_of(f, sql_gpu_id, ":uuid", uuid);
    }
    c = db_conn_get(f->st);
    for (int i = 0; i < 8; i++) {
        for (int h = 0; h < 24; h++) {
            int64_t at = day + h * 3600;
            const char *want = i == 3 && h >= 6 ? "vision" : h >= 12 ? "nlp" : "legacy";
            assert_status(owner_resolve(c, ids[i], at, &o), GI_OK);
            assert_string_equal(o.team, want);
        }
    }
    db_conn_put(f->st, c);
    resolve(f, "GPU-r-3", day + 13 * 3600, &fresh);
    assert_string_equal(fresh.team, "vision");
}

int main(void)
{
    const struct CMUnitTest tests[] = {
        cmocka_unit_test_setup_teardown(test_precedence_and_history, setup, teardown),
        cmocka_unit_test_setup_teardown(test_rule_versions, setup, teardown),
        cmocka_unit_test_setup_teardown(test_consumer_team, setup, teardown),
        cmocka_unit_test_setup_teardown(test_many_hours, setup, teardown),
    };
    return cmocka_run_group_tests(tests, NULL, NULL);
}
