/* Request workers; see workq.h. */
#define _GNU_SOURCE /* pthread_setname_np */
#include "http/workq.h"
#include "core/log.h"

#include <pthread.h>
#include <stdlib.h>

struct workq {
    pthread_mutex_t mu;
    pthread_cond_t cv;
    struct workq_item *head, *tail; /* first in, first run */
    bool stopping;
    workq_fn fn;
    void *cls;
    unsigned n; /* threads started */
    pthread_t *threads;
};

static void *worker(void *arg)
{
    struct workq *q = arg;

    for (;;) {
        struct workq_item *it;
        pthread_mutex_lock(&q->mu);
        while (q->head == NULL && !q->stopping)
            pthread_cond_wait(&q->cv, &q->mu);
        it = q->head;
        if (it) {
            q->head = it->next;
            if (q->head == NULL)
                q->tail = NULL;
        }
        pthread_mutex_unlock(&q->mu);
        if (it == NULL)
            return NULL; /* stopping, and nothing left */
        it->next = NULL;
        q->fn(it, q->cls);
    }
}

struct workq *workq_start(unsigned n, workq_fn fn, void *cls)
{
    struct workq *q = calloc(1, sizeof *q);

    if (q == NULL || (q->threads = calloc(n ? n : 1, sizeof *q->threads)) == NULL) {
        free(q);
        return NULL;
    }
    pthread_mutex_init(&q->mu, NULL);
    pthread_cond_init(&q->cv, NULL);
    q->fn = fn;
    q->cls = cls;
    for (; q->n < n; q->n++) {
        if (pthread_create(&q->threads[q->n], NULL, worker, q) != 0) {
            gi_error("cannot start request worker %u of %u", q->n + 1, n);
            workq_stop(q);
            workq_free(q);
            return NULL;
        }
        /* Named so that a benchmark can count the CPU of request handling
         * apart from the background jobs; a failure changes nothing. */
        (void)pthread_setname_np(q->threads[q->n], "gi-worker");
    }
    return q;
}

bool workq_push(struct workq *q, struct workq_item *item)
{
    bool queued;

    item->next = NULL;
    pthread_mutex_lock(&q->mu);
    queued = !q->stopping;
    if (queued) {
        if (q->tail)
            q->tail->next = item;
        else
            q->head = item;
        q->tail = item;
        pthread_cond_signal(&q->cv);
    }
    pthread_mutex_unlock(&q->mu);
    return queued;
}

void workq_stop(struct workq *q)
{
    if (q == NULL)
        return;
    pthread_mutex_lock(&q->mu);
    q->stopping = true;
    pthread_cond_broadcast(&q->cv);
    pthread_mutex_unlock(&q->mu);
    for (unsigned i = 0; i < q->n; i++)
        pthread_join(q->threads[i], NULL);
    q->n = 0;
}

void workq_free(struct workq *q)
{
    if (q == NULL)
        return;
    pthread_mutex_destroy(&q->mu);
    pthread_cond_destroy(&q->cv);
    free(q->threads);
    free(q);
}
