/* Unit tests for the owner:refresh job (store_owner_due in
 * src/store/ownership.c), on each store: an assignment or rule dated in
 * the future changes the current owner materialized on the GPU row only
 * once a run at or after its time sees it; a run looks only at what took
 * effect since the previous one (its watermark), so a second run at the
 * same time, or one with nothing new, recomputes nothing. */
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
    if (store_source_ensure(f->st, "agents", "push", "legacy", NULL, NULL, &f->source) != GI_OK) {
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
    static int batches;
    struct gi_batch b;
    struct store_ingest_result res;

    memset(&b, 0, sizeof b);
    snprintf(b.batch_id, sizeof b.batch_id, "due%d", ++batches);
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

/* The team materialized on GPU uuid's row ("" when none decided it). */
static void row_team(struct fixture *f, const char *uuid, char *buf, size_t len)
{
    struct conn *c = db_conn_get(f->st);
    struct db_stmt *s = db_prep(c, "SELECT owner_team FROM gpus WHERE uuid = :uuid");
    int step;

    assert_non_null(s);
    db_bind_text(s, ":uuid", uuid);
    step = db_step(c, s);
    assert_int_equal(step, DB_ROW);
    gi_strlcpy(buf, db_col_text(s, 0) ? db_col_text(s, 0) : "", len);
    db_reset(s);
    db_conn_put(f->st, c);
}

#define assert_team(f, uuid, want)                                                                 \
    do {                                                                                           \
        char team_[64];                                                                            \
        row_team((f), (uuid), team_, sizeof team_);                                                \
        assert_string_equal(team_, (want));                                                        \
    } while (0)

static void dim(struct fixture *f, const char *name)
{
    struct store_dim d = {.name = name};
    json_t *out = NULL;
    assert_status(store_dim_create(f->st, "t", "team", &d, &out), GI_OK);
    json_decref(out);
}

static void assign(struct fixture *f, enum store_owner_target t, const char *key, const char *team,
                   int64_t from)
{
    struct store_owner_set in = {.team = team, .has_team = true, .effective_from = from};
    struct store_owner_err err;
    json_t *out = NULL;
    assert_status(store_owner_assign(f->st, "t", t, key, &in, &out, &err), GI_OK);
    json_decref(out);
}

static int64_t due(struct fixture *f, int64_t at)
{
    int64_t n = -1;
    assert_status(store_owner_due(f->st, at, &n), GI_OK);
    return n;
}

static void test_future_assignment(void **state)
{
    struct fixture *f = *state;
    int64_t now = gi_now(), eff = now + 3600;

    dim(f, "vision");
    dim(f, "nlp");
    report(f, "node-a", 2, "a");
    assign(f, STORE_OWNER_GPU, "GPU-a-0", "vision", eff);
    assign(f, STORE_OWNER_HOST, "node-a", "nlp", now - 60);
    assert_team(f, "GPU-a-0", "nlp");

    /* The first run looks back over everything that ever took effect:
     * the host's assignment, already in force (both GPUs). */
    assert_int_equal(due(f, now), 2);
    assert_team(f, "GPU-a-0", "nlp");
    /* Nothing new since: nothing recomputed. */
    assert_int_equal(due(f, now), 0);
    assert_int_equal(due(f, eff - 1), 0);
    assert_team(f, "GPU-a-0", "nlp");

    /* Its time comes: that GPU alone, once. */
    assert_int_equal(due(f, eff), 1);
    assert_team(f, "GPU-a-0", "vision");
    assert_team(f, "GPU-a-1", "nlp");
    assert_int_equal(due(f, eff), 0);
    assert_int_equal(due(f, eff + 60), 0);
}

static void test_future_rule_and_end(void **state)
{
    struct fixture *f = *state;
    int64_t now = gi_now(), eff = now + 600, end = now + 1200;
    struct store_rule r = {.match_kind = "host_pattern",
                           .match_value = "node-*",
                           .set = {"vision", NULL, NULL, NULL, NULL},
                           .position = -1,
                           .enabled = 1,
                           .effective_from = eff};
    struct store_owner_err err;
    json_t *out = NULL;

    dim(f, "vision");
    dim(f, "nlp");
    report(f, "node-b", 3, "b");
    assert_int_equal(due(f, now), 0);
    assert_status(store_rule_create(f->st, "t", &r, &out, &err), GI_OK);
    json_decref(out);
    /* An assignment whose span ends ahead: a later one closes it at end. */
    assign(f, STORE_OWNER_GPU, "GPU-b-2", "nlp", now);
    assign(f, STORE_OWNER_GPU, "GPU-b-2", NULL, end);
    assert_team(f, "GPU-b-0", "");
    /* Written after the run at `now` and recomputed as it was written:
     * nothing for the job. */
    assert_int_equal(due(f, now + 1), 0);
    assert_team(f, "GPU-b-2", "nlp");

    /* A rule coming into force may match any GPU: all are recomputed. */
    assert_int_equal(due(f, eff), 3);
    assert_team(f, "GPU-b-0", "vision");
    assert_team(f, "GPU-b-2", "nlp");
    assert_int_equal(due(f, eff + 1), 0);

    /* The GPU's assignment ends: the rule decides it from then. */
    assert_true(due(f, end) >= 1);
    assert_team(f, "GPU-b-2", "vision");
}

int main(void)
{
    const struct CMUnitTest tests[] = {
        cmocka_unit_test_setup_teardown(test_future_assignment, setup, teardown),
        cmocka_unit_test_setup_teardown(test_future_rule_and_end, setup, teardown),
    };
    return cmocka_run_group_tests(tests, NULL, NULL);
}
