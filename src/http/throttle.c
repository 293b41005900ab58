/* Sign-in throttling; see throttle.h. */
#include "http/throttle.h"
#include "core/util.h"

#include <errno.h>
#include <pthread.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>

#define SLOTS 2048 /* a power of two */
#define PROBE 16

struct slot {
    char key[160];
    int64_t start; /* when this window began; 0: free */
    int fails;
};

struct throttle {
    pthread_mutex_t mu;
    pthread_cond_t freed;
    int running, waiting;
    struct slot slots[SLOTS];
};

struct throttle *throttle_new(void)
{
    struct throttle *t = calloc(1, sizeof *t);

    if (t == NULL)
        return NULL;
    pthread_mutex_init(&t->mu, NULL);
    pthread_cond_init(&t->freed, NULL);
    return t;
}

void throttle_free(struct throttle *t)
{
    if (t == NULL)
        return;
    pthread_cond_destroy(&t->freed);
    pthread_mutex_destroy(&t->mu);
    free(t);
}

static uint32_t hash(const char *s)
{
    uint32_t h = 2166136261u;

    for (; *s; s++)
        h = (h ^ (unsigned char)*s) * 16777619u;
    return h;
}

/* How willing a slot is to be reused: free and expired slots first,
 * then the one whose window began longest ago. */
static int64_t reuse_rank(const struct slot *s, int64_t now)
{
    if (s->start == 0 || now - s->start >= THROTTLE_WINDOW)
        return INT64_MIN;
    return s->start;
}

/* The slot holding key, or (when create) the most reusable slot in key's
 * probe range, reset to hold key. An expired window starts afresh.
 * Called under t->mu. */
static struct slot *find(struct throttle *t, const char *key, int64_t now, bool create)
{
    uint32_t h = hash(key);
    struct slot *victim = NULL;

    for (uint32_t i = 0; i < PROBE; i++) {
        struct slot *s = &t->slots[(h + i) & (SLOTS - 1)];
        if (s->start != 0 && strcmp(s->key, key) == 0) {
            if (now - s->start >= THROTTLE_WINDOW) {
                s->start = now;
                s->fails = 0;
            }
            return s;
        }
        if (victim == NULL || reuse_rank(s, now) < reuse_rank(victim, now))
            victim = s;
    }
    if (!create)
        return NULL;
    gi_strlcpy(victim->key, key, sizeof victim->key);
    victim->start = now;
    victim->fails = 0;
    return victim;
}

int64_t throttle_wait(struct throttle *t, const char *key, int limit, int64_t now)
{
    int64_t wait = 0;
    struct slot *s;

    pthread_mutex_lock(&t->mu);
    s = find(t, key, now, false);
    if (s && s->fails >= limit)
        wait = s->start + THROTTLE_WINDOW - now;
    pthread_mutex_unlock(&t->mu);
    return wait > 0 ? wait : 0;
}

void throttle_failed(struct throttle *t, const char *key, int64_t now)
{
    pthread_mutex_lock(&t->mu);
    find(t, key, now, true)->fails++;
    pthread_mutex_unlock(&t->mu);
}

void throttle_reset(struct throttle *t, const char *key)
{
    struct slot *s;

    pthread_mutex_lock(&t->mu);
    if ((s = find(t, key, gi_now(), false)) != NULL)
        s->start = 0;
    pthread_mutex_unlock(&t->mu);
}

bool throttle_work_begin(struct throttle *t)
{
    struct timespec until;
    bool ok = true;

    clock_gettime(CLOCK_REALTIME, &until);
    until.tv_sec += THROTTLE_WAIT_MS / 1000;
    until.tv_nsec += (THROTTLE_WAIT_MS % 1000) * 1000000L;
    if (until.tv_nsec >= 1000000000L) {
        until.tv_sec++;
        until.tv_nsec -= 1000000000L;
    }
    pthread_mutex_lock(&t->mu);
    if (t->running >= THROTTLE_WORKERS) {
        if (t->waiting >= THROTTLE_QUEUE) {
            ok = false;
        } else {
            t->waiting++;
            while (t->running >= THROTTLE_WORKERS && ok)
                ok = pthread_cond_timedwait(&t->freed, &t->mu, &until) != ETIMEDOUT;
            t->waiting--;
            ok = t->running < THROTTLE_WORKERS;
        }
    }
    if (ok)
        t->running++;
    pthread_mutex_unlock(&t->mu);
    return ok;
}

void throttle_work_end(struct throttle *t)
{
    pthread_mutex_lock(&t->mu);
    t->running--;
    pthread_cond_signal(&t->freed);
    pthread_mutex_unlock(&t->mu);
}
