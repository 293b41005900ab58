/* Unit tests for src/http/workq.c, the request workers: every item pushed
 * runs exactly once, one worker runs them in the order pushed, stopping
 * runs what is still queued, and a push after that is refused. */
#include "unit.h"

#include "http/workq.h"

#include <pthread.h>
#include <stdatomic.h>
#include <string.h>

#define N_ITEMS 2000
#define N_PUSHERS 4

struct item {
    struct workq_item work; /* first: the queue hands back its address */
    int id;
};

struct record {
    pthread_mutex_t mu;
    int order[N_ITEMS]; /* ids in the order run */
    int runs[N_ITEMS];  /* times each id ran */
    int n;
    atomic_int gate; /* 0: workers wait before running anything */
};

static void on_item(struct workq_item *w, void *cls)
{
    struct record *rec = cls;
    struct item *it = (struct item *)(void *)w;

    while (atomic_load(&rec->gate) == 0)
        usleep(100);
    pthread_mutex_lock(&rec->mu);
    rec->order[rec->n++] = it->id;
    rec->runs[it->id]++;
    pthread_mutex_unlock(&rec->mu);
}

static struct record *record_new(int gate)
{
    struct record *rec = calloc(1, sizeof *rec);

    assert_non_null(rec);
    pthread_mutex_init(&rec->mu, NULL);
    atomic_store(&rec->gate, gate);
    return rec;
}

static void record_free(struct record *rec)
{
    pthread_mutex_destroy(&rec->mu);
    free(rec);
}

static void test_one_worker_runs_in_order(void **state)
{
    struct record *rec = record_new(1);
    struct item *items = calloc(N_ITEMS, sizeof *items);
    struct workq *q = workq_start(1, on_item, rec);

    (void)state;
    assert_non_null(q);
    for (int i = 0; i < N_ITEMS; i++) {
        items[i].id = i;
        assert_true(workq_push(q, &items[i].work));
    }
    workq_stop(q);
    assert_int_equal(rec->n, N_ITEMS);
    for (int i = 0; i < N_ITEMS; i++)
        assert_int_equal(rec->order[i], i);
    assert_false(workq_push(q, &items[0].work)); /* stopped: left to the caller */
    workq_free(q);
    assert_int_equal(rec->n, N_ITEMS);
    free(items);
    record_free(rec);
}

struct pusher {
    struct workq *q;
    struct item *items; /* this pusher's share */
    int n;
};

static void *push_all(void *arg)
{
    struct pusher *p = arg;

    for (int i = 0; i < p->n; i++)
        if (!workq_push(p->q, &p->items[i].work))
            return (void *)1;
    return NULL;
}

static void test_many_workers_run_each_once(void **state)
{
    /* The workers are held back until every item is queued, so that
     * stopping has a full queue to drain. */
    struct record *rec = record_new(0);
    struct item *items = calloc(N_ITEMS, sizeof *items);
    struct workq *q = workq_start(8, on_item, rec);
    struct pusher ps[N_PUSHERS];
    pthread_t th[N_PUSHERS];
    const int share = N_ITEMS / N_PUSHERS;

    (void)state;
    assert_non_null(q);
    for (int i = 0; i < N_ITEMS; i++)
        items[i].id = i;
    for (int k = 0; k < N_PUSHERS; k++) {
        ps[k] = (struct pusher){q, items + k * share, share};
        assert_int_equal(pthread_create(&th[k], NULL, push_all, &ps[k]), 0);
    }
    for (int k = 0; k < N_PUSHERS; k++) {
        void *failed = NULL;
        pthread_join(th[k], &failed);
        assert_null(failed);
    }
    atomic_store(&rec->gate, 1);
    workq_stop(q);
    workq_free(q);
    assert_int_equal(rec->n, N_ITEMS);
    for (int i = 0; i < N_ITEMS; i++)
        assert_int_equal(rec->runs[i], 1);
    free(items);
    record_free(rec);
}

static void test_stop_without_items(void **state)
{
    struct record *rec = record_new(1);
    struct workq *q = workq_start(3, on_item, rec);

    (void)state;
    assert_non_null(q);
    workq_stop(q);
    workq_stop(q); /* twice is harmless */
    workq_free(q);
    workq_stop(NULL);
    workq_free(NULL);
    assert_int_equal(rec->n, 0);
    record_free(rec);
}

int main(void)
{
    const struct CMUnitTest tests[] = {
        cmocka_unit_test(test_one_worker_runs_in_order),
        cmocka_unit_test(test_many_workers_run_each_once),
        cmocka_unit_test(test_stop_without_items),
    };
    return cmocka_run_group_tests(tests, NULL, NULL);
}
