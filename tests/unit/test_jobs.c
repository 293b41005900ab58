/* Unit tests for job leases and the readiness ping (src/store/jobs.c
 * through store.h), each on a fresh database: a slot is won once, a held
 * lease blocks others until it ends or expires, only the holder releases
 * it, racing claimants through separate store handles (as separate
 * replicas would) never both win, and a source shows who pulled it. */
#include "unit.h"
#include "testdb.h"

#include "core/log.h"
#include "core/util.h"
#include "store/store.h"

#include <pthread.h>
#include <stdbool.h>
#include <string.h>

static bool claim(struct store *st, const char *holder, int64_t now)
{
    bool run = true;

    assert_status(store_job_claim(st, "pull:1", holder, 60, 600, now, &run), GI_OK);
    return run;
}

static void test_slot_won_once(void **state)
{
    struct testdb_fixture *f = *state;
    json_t *row = NULL;

    assert_status(store_job_get(f->st, "pull:1", &row), GI_NOT_FOUND);
    assert_true(claim(f->st, "a", 1000));
    assert_false(claim(f->st, "b", 1000));
    assert_false(claim(f->st, "a", 1000));
    assert_status(store_job_get(f->st, "pull:1", &row), GI_OK);
    assert_string_equal(json_string_value(json_object_get(row, "holder")), "a");
    assert_int_equal(json_integer_value(json_object_get(row, "lease_until")), 1600);
    assert_int_equal(json_integer_value(json_object_get(row, "runs")), 0);
    json_decref(row);
}

static void test_held_until_done_or_expired(void **state)
{
    struct testdb_fixture *f = *state;
    json_t *row = NULL;

    assert_true(claim(f->st, "a", 1000));
    /* Due again at 1060, but a's run still holds the lease. */
    assert_false(claim(f->st, "b", 1060));
    assert_status(store_job_done(f->st, "pull:1", "a", 1061), GI_OK);
    assert_true(claim(f->st, "b", 1061));
    /* b dies mid-run: its lease ends at 1661, then anyone may take over. */
    assert_false(claim(f->st, "a", 1660));
    assert_true(claim(f->st, "a", 1661));
    assert_status(store_job_get(f->st, "pull:1", &row), GI_OK);
    assert_string_equal(json_string_value(json_object_get(row, "holder")), "a");
    assert_string_equal(json_string_value(json_object_get(row, "last_holder")), "a");
    assert_int_equal(json_integer_value(json_object_get(row, "runs")), 1);
    json_decref(row);
}

static void test_only_holder_releases(void **state)
{
    struct testdb_fixture *f = *state;
    json_t *row = NULL;

    assert_true(claim(f->st, "a", 1000));
    assert_status(store_job_done(f->st, "pull:1", "b", 1001), GI_OK);
    assert_status(store_job_get(f->st, "pull:1", &row), GI_OK);
    assert_int_equal(json_integer_value(json_object_get(row, "lease_until")), 1600);
    assert_int_equal(json_integer_value(json_object_get(row, "runs")), 0);
    assert_true(json_is_null(json_object_get(row, "last_holder")));
    json_decref(row);
    assert_status(store_job_done(f->st, "pull:1", "a", 1001), GI_OK);
    assert_status(store_job_get(f->st, "pull:1", &row), GI_OK);
    assert_int_equal(json_integer_value(json_object_get(row, "lease_until")), 0);
    assert_int_equal(json_integer_value(json_object_get(row, "runs")), 1);
    json_decref(row);
}

#define RACERS 6
#define ROUNDS 20

struct racer {
    struct store *st;
    char holder[16];
    pthread_barrier_t *go;
    int wins[ROUNDS];
    int errors;
};

/* Every racer claims the same slot of each round at the same time. */
static void *race(void *arg)
{
    struct racer *r = arg;

    for (int i = 0; i < ROUNDS; i++) {
        bool run = false;
        pthread_barrier_wait(r->go);
        if (store_job_claim(r->st, "pull:7", r->holder, 10, 10, 1000 + 10 * i, &run) != GI_OK)
            r->errors++;
        r->wins[i] = run ? 1 : 0;
    }
    return NULL;
}

static void test_racing_replicas_never_both_win(void **state)
{
    struct testdb_fixture *f = *state;
    struct store *other = NULL;
    struct racer rs[RACERS];
    pthread_t th[RACERS];
    pthread_barrier_t go;

    /* A second handle on the same database: its own connections, as
     * another process would have. */
    assert_status(store_open(f->db.locator, RACERS, &other), GI_OK);
    pthread_barrier_init(&go, NULL, RACERS);
    for (int i = 0; i < RACERS; i++) {
        memset(&rs[i], 0, sizeof rs[i]);
        rs[i].st = i % 2 ? other : f->st;
        snprintf(rs[i].holder, sizeof rs[i].holder, "r%d", i);
        rs[i].go = &go;
        assert_int_equal(pthread_create(&th[i], NULL, race, &rs[i]), 0);
    }
    for (int i = 0; i < RACERS; i++)
        pthread_join(th[i], NULL);
    for (int round = 0; round < ROUNDS; round++) {
        int wins = 0;
        for (int i = 0; i < RACERS; i++)
            wins += rs[i].wins[round];
        if (wins != 1)
            fail_msg("round %d: %d winners", round, wins);
    }
    for (int i = 0; i < RACERS; i++)
        assert_int_equal(rs[i].errors, 0);
    pthread_barrier_destroy(&go);
    store_close(other);
}

/* How many sources are due at now. */
static size_t due_count(struct store *st, int64_t now)
{
    json_t *due = NULL;
    size_t n;

    assert_status(store_source_due(st, now, &due), GI_OK);
    n = json_array_size(due);
    json_decref(due);
    return n;
}

/* A source's schedule follows its job lease once claimed; its document
 * names the claimant; deleting it drops the lease. */
static void test_source_shows_puller_and_drops_job(void **state)
{
    struct testdb_fixture *f = *state;
    json_t *cfg = json_pack("{s:s}", "url", "http://127.0.0.1:9/metrics");
    struct store_source in = {
        .name = "exp", .kind = "dcgm-exporter", .config = cfg, .interval_s = 30, .enabled = 1};
    json_t *src = NULL, *row = NULL;
    char job[32];
    int64_t id, shortest = -1;
    bool run = false;

    assert_status(store_source_create(f->st, "t", &in, &src), GI_OK);
    id = json_integer_value(json_object_get(src, "id"));
    assert_true(json_is_null(json_object_get(src, "last_pulled_by")));
    json_decref(src);
    assert_status(store_source_min_interval(f->st, &shortest), GI_OK);
    assert_int_equal(shortest, 30);
    snprintf(job, sizeof job, "pull:%lld", (long long)id);
    assert_status(store_job_claim(f->st, job, "host:1:abc", 30, 120, 5000, &run), GI_OK);
    assert_true(run);
    assert_status(store_source_get(f->st, id, 0, &src), GI_OK);
    assert_string_equal(json_string_value(json_object_get(src, "last_pulled_by")), "host:1:abc");
    json_decref(src);
    assert_status(store_job_done(f->st, job, "host:1:abc", 5001), GI_OK);
    json_decref(cfg);
    cfg = NULL;
    assert_int_equal(due_count(f->st, 5029), 0);
    assert_int_equal(due_count(f->st, 5030), 1);
    /* A new interval counts from the last pull. */
    assert_status(store_source_record(f->st, id, NULL, 0), GI_OK);
    in = (struct store_source){.interval_s = 600, .enabled = -1};
    assert_status(store_source_update(f->st, "t", id, &in, &src), GI_OK);
    json_decref(src);
    assert_int_equal(due_count(f->st, gi_now() + 590), 0);
    assert_int_equal(due_count(f->st, gi_now() + 601), 1);
    assert_status(store_source_delete(f->st, "t", id), GI_OK);
    assert_status(store_job_get(f->st, job, &row), GI_NOT_FOUND);
    assert_status(store_source_min_interval(f->st, &shortest), GI_OK);
    assert_int_equal(shortest, 0);
    json_decref(cfg);
}

static void test_ping(void **state)
{
    struct testdb_fixture *f = *state;

    assert_status(store_ping(f->st), GI_OK);
}

int main(void)
{
    const struct CMUnitTest tests[] = {
        cmocka_unit_test_setup_teardown(test_slot_won_once, testdb_setup, testdb_teardown),
        cmocka_unit_test_setup_teardown(test_held_until_done_or_expired, testdb_setup,
                                        testdb_teardown),
        cmocka_unit_test_setup_teardown(test_only_holder_releases, testdb_setup, testdb_teardown),
        cmocka_unit_test_setup_teardown(test_racing_replicas_never_both_win, testdb_setup,
                                        testdb_teardown),
        cmocka_unit_test_setup_teardown(test_source_shows_puller_and_drops_job, testdb_setup,
                                        testdb_teardown),
        cmocka_unit_test_setup_teardown(test_ping, testdb_setup, testdb_teardown),
    };
    return cmocka_run_group_tests(tests, NULL, NULL);
}
