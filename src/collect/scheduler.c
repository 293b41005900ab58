/* Periodic jobs; see scheduler.h. */
#include "collect/scheduler.h"
#include "collect/pull.h"
#include "core/log.h"
#include "core/status.h"
#include "core/util.h"
#include "store/store.h"

#include <pthread.h>
#include <stdbool.h>
#include <stdlib.h>
#include <time.h>

struct scheduler {
    struct store *st;
    int tick_s;
    bool stop;
    pthread_mutex_t mu;
    pthread_cond_t cv;
    pthread_t thread;
};

/* Runs every due source once. */
static void run_due(struct scheduler *s)
{
    json_t *due = NULL, *src;
    size_t i;

    if (store_source_due(s->st, gi_now(), &due) != GI_OK)
        return;
    json_array_foreach(due, i, src) {
        struct pull_result res;
        bool stop;
        pthread_mutex_lock(&s->mu);
        stop = s->stop;
        pthread_mutex_unlock(&s->mu);
        if (stop)
            break;
        pull_run_source(s->st, src, &res);
    }
    json_decref(due);
}

static void *loop(void *arg)
{
    struct scheduler *s = arg;

    pthread_mutex_lock(&s->mu);
    while (!s->stop) {
        struct timespec until;
        pthread_mutex_unlock(&s->mu);
        run_due(s);
        pthread_mutex_lock(&s->mu);
        clock_gettime(CLOCK_REALTIME, &until);
        until.tv_sec += s->tick_s;
        while (!s->stop && pthread_cond_timedwait(&s->cv, &s->mu, &until) == 0) {
        }
    }
    pthread_mutex_unlock(&s->mu);
    return NULL;
}

struct scheduler *scheduler_start(struct store *st, int tick_s)
{
    struct scheduler *s = calloc(1, sizeof *s);

    if (s == NULL)
        return NULL;
    s->st = st;
    s->tick_s = tick_s > 0 ? tick_s : 5;
    pthread_mutex_init(&s->mu, NULL);
    pthread_cond_init(&s->cv, NULL);
    if (pthread_create(&s->thread, NULL, loop, s) != 0) {
        pthread_mutex_destroy(&s->mu);
        pthread_cond_destroy(&s->cv);
        free(s);
        return NULL;
    }
    return s;
}

void scheduler_stop(struct scheduler *s)
{
    if (s == NULL)
        return;
    pthread_mutex_lock(&s->mu);
    s->stop = true;
    pthread_cond_broadcast(&s->cv);
    pthread_mutex_unlock(&s->mu);
    pthread_join(s->thread, NULL);
    pthread_mutex_destroy(&s->mu);
    pthread_cond_destroy(&s->cv);
    free(s);
}
