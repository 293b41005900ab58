/* Periodic jobs; see scheduler.h. */
#include "collect/scheduler.h"
#include "collect/deliver.h"
#include "collect/pull.h"
#include "core/log.h"
#include "core/status.h"
#include "core/util.h"
#include "store/store.h"

#include <pthread.h>
#include <stdbool.h>
#include <stdio.h>
#include <stdlib.h>
#include <sys/random.h>
#include <time.h>
#include <unistd.h>

struct scheduler {
    struct store *st;
    int tick_s;
    int retain_days;
    bool no_rollup;
    int owner_s;
    bool stop;
    char holder[128];
    pthread_mutex_t mu;
    pthread_cond_t cv;
    pthread_t thread;
};

/* "hostname:pid:random": unique per process even when pids repeat across
 * containers that all call themselves the same host. */
static void make_holder(char *buf, size_t len)
{
    char host[64] = "";
    uint32_t rnd = 0;

    if (gethostname(host, sizeof host) != 0 || host[0] == '\0')
        gi_strlcpy(host, "localhost", sizeof host);
    host[sizeof host - 1] = '\0';
    if (getrandom(&rnd, sizeof rnd, 0) != (ssize_t)sizeof rnd)
        rnd = (uint32_t)time(NULL) ^ (uint32_t)clock();
    snprintf(buf, len, "%s:%ld:%08x", host, (long)getpid(), (unsigned)rnd);
}

static bool stopping(struct scheduler *s)
{
    bool stop;

    pthread_mutex_lock(&s->mu);
    stop = s->stop;
    pthread_mutex_unlock(&s->mu);
    return stop;
}

/* Runs every due source this replica wins the claim of, one at a time:
 * each claim is taken just before its pull, so another replica may take
 * the sources queued behind a slow one. */
static void run_due(struct scheduler *s)
{
    json_t *due = NULL, *src;
    size_t i;

    if (store_source_due(s->st, gi_now(), &due) != GI_OK)
        return;
    json_array_foreach(due, i, src) {
        struct pull_result res;
        char job[32];
        int64_t interval = json_integer_value(json_object_get(src, "interval_s"));
        bool run = false;

        if (stopping(s))
            break;
        if (interval < 1)
            interval = 1;
        snprintf(job, sizeof job, "pull:%lld",
                 (long long)json_integer_value(json_object_get(src, "id")));
        if (store_job_claim(s->st, job, s->holder, interval,
                            interval > SCHEDULER_MAX_RUN_S ? interval : SCHEDULER_MAX_RUN_S,
                            gi_now(), &run) != GI_OK ||
            !run)
            continue;
        pull_run_source(s->st, src, &res);
        if (store_job_done(s->st, job, s->holder, gi_now()) != GI_OK)
            gi_warn("job %s: cannot release its lease", job);
    }
    json_decref(due);
}

/* The usage rollups, every minute on whichever replica claims the job:
 * dirty GPU-hours recomputed from raw samples, re-attributions and
 * re-pricings, rollup retention (store_usage_rollup). */
static void run_usage(struct scheduler *s)
{
    static const char job[] = "usage:rollup";
    struct store_usage_run res;
    bool run = false;
    int rc;

    if (s->no_rollup ||
        store_job_claim(s->st, job, s->holder, SCHEDULER_USAGE_S, SCHEDULER_MAX_RUN_S, gi_now(),
                        &run) != GI_OK ||
        !run)
        return;
    rc = store_usage_rollup(s->st, NULL, gi_now(), 0, &res);
    if (rc != GI_OK)
        gi_warn("job %s failed: %s", job, gi_status_name(rc));
    else if (res.dirty_left > 0)
        gi_info("job %s: %lld GPU-hour(s) rolled up, %lld still waiting", job, (long long)res.hours,
                (long long)res.dirty_left);
    if (store_job_done(s->st, job, s->holder, gi_now()) != GI_OK)
        gi_warn("job %s: cannot release its lease", job);
}

/* The current owners of GPUs whose assignment or rule came into force
 * since the last run (store_owner_due), on whichever replica claims it. */
static void run_owner(struct scheduler *s)
{
    static const char job[] = "owner:refresh";
    int64_t gpus = 0;
    bool run = false;
    int rc;

    if (store_job_claim(s->st, job, s->holder, s->owner_s, SCHEDULER_MAX_RUN_S, gi_now(), &run) !=
            GI_OK ||
        !run)
        return;
    rc = store_owner_due(s->st, gi_now(), &gpus);
    if (rc != GI_OK)
        gi_warn("job %s failed: %s", job, gi_status_name(rc));
    else if (gpus > 0)
        gi_info("job %s: %lld GPU owner(s) recomputed", job, (long long)gpus);
    if (store_job_done(s->st, job, s->holder, gi_now()) != GI_OK)
        gi_warn("job %s: cannot release its lease", job);
}

static int64_t rules_interval_s = SCHEDULER_RULES_S, health_interval_s = SCHEDULER_USAGE_S;

void scheduler_rules_configure(int64_t interval_s)
{
    if (interval_s > 0)
        rules_interval_s = interval_s;
}

void scheduler_health_configure(int64_t interval_s)
{
    if (interval_s > 0)
        health_interval_s = interval_s;
}

/* The health rollup, every health_interval_s (a minute) on whichever
 * replica claims it, after
 * the usage rollup it follows (store_health_rollup, bounded chunks); then
 * the enabled lifecycle rules every rules_interval_s (store_rules_run). */
static void run_health(struct scheduler *s)
{
    static const char job[] = "health:rollup", rules[] = "lifecycle:rules";
    struct store_health_run res = {0};
    int64_t fired = 0, expired = 0;
    bool run = false;
    int rc = GI_OK;

    if (store_job_claim(s->st, job, s->holder, health_interval_s, SCHEDULER_MAX_RUN_S, gi_now(),
                        &run) == GI_OK &&
        run) {
        /* a chunk at a time (at most 16 a run), so that a stopping
         * server waits for one chunk, not for the run */
        int64_t days = 0;
        for (int i = 0; i < 16 && !stopping(s); i++) {
            if ((rc = store_health_rollup(s->st, gi_now(), 1, &res)) != GI_OK)
                break;
            days += res.days;
            if (res.left == 0)
                break;
        }
        res.days = days;
        if (rc != GI_OK)
            gi_warn("job %s failed: %s", job, gi_status_name(rc));
        else if (res.left > 0)
            gi_info("job %s: %lld GPU-day(s) rolled up, %lld still waiting", job,
                    (long long)res.days, (long long)res.left);
        if (store_job_done(s->st, job, s->holder, gi_now()) != GI_OK)
            gi_warn("job %s: cannot release its lease", job);
    }
    run = false;
    if (store_job_claim(s->st, rules, s->holder, rules_interval_s, SCHEDULER_MAX_RUN_S * 5,
                        gi_now(), &run) != GI_OK ||
        !run)
        return;
    rc = store_lrules_run(s->st, rules, gi_now(), &fired, &expired);
    if (rc != GI_OK)
        gi_warn("job %s failed: %s", rules, gi_status_name(rc));
    else if (fired > 0 || expired > 0)
        gi_info("job %s: %lld match(es), %lld reservation(s) expired", rules, (long long)fired,
                (long long)expired);
    if (store_job_done(s->st, rules, s->holder, gi_now()) != GI_OK)
        gi_warn("job %s: cannot release its lease", rules);
}

/* Raw-sample retention, hourly on whichever replica claims it: on
 * PostgreSQL this also creates the coming days' partitions. */
static void run_maintenance(struct scheduler *s)
{
    static const char job[] = "samples:retention";
    int64_t changed = 0;
    bool run = false;
    int rc;

    if (store_job_claim(s->st, job, s->holder, SCHEDULER_MAINTAIN_S, SCHEDULER_MAX_RUN_S, gi_now(),
                        &run) != GI_OK ||
        !run)
        return;
    rc = store_samples_maintain(s->st, gi_now(),
                                store_usage_keep_days(s->st, gi_now(), s->retain_days), &changed);
    if (rc != GI_OK)
        gi_warn("job %s failed: %s", job, gi_status_name(rc));
    else if (changed > 0)
        gi_info("job %s: %lld partition(s) or row(s) changed (keeping %d days)", job,
                (long long)changed, s->retain_days);
    if (store_job_done(s->st, job, s->holder, gi_now()) != GI_OK)
        gi_warn("job %s: cannot release its lease", job);
}

/* Assets against discovery, hourly on whichever replica claims it:
 * last-seen times and drift events (store_asset_reconcile). */
static void run_assets(struct scheduler *s)
{
    static const char job[] = "assets:reconcile";
    int64_t drifts = 0, filled = 0;
    bool run = false;
    int rc;

    /* Every tick: assets without a stored document (written before it was
     * stored, or by SQL from outside) get one; a partial index finds them,
     * so with none missing this reads nothing. */
    if ((rc = store_asset_docs_fill(s->st, &filled)) != GI_OK)
        gi_warn("assets: cannot render the stored documents: %s", gi_status_name(rc));
    else if (filled > 0)
        gi_info("assets: rendered %lld stored documents", (long long)filled);
    if (store_job_claim(s->st, job, s->holder, SCHEDULER_MAINTAIN_S, SCHEDULER_MAX_RUN_S, gi_now(),
                        &run) != GI_OK ||
        !run)
        return;
    rc = store_asset_reconcile(s->st, gi_now(), &drifts);
    if (rc != GI_OK)
        gi_warn("job %s failed: %s", job, gi_status_name(rc));
    else if (drifts > 0)
        gi_info("job %s: %lld drift event(s) recorded", job, (long long)drifts);
    if (store_job_done(s->st, job, s->holder, gi_now()) != GI_OK)
        gi_warn("job %s: cannot release its lease", job);
}

/* Webhook deliveries, every deliver_interval() seconds on whichever
 * replica claims the job; once an hour the delivery log is cut to
 * DELIVER_KEEP_DAYS. */
static void run_deliver(struct scheduler *s)
{
    static const char job[] = "webhooks:deliver", keep[] = "webhooks:retention";
    struct deliver_stats res;
    int64_t deleted = 0;
    bool run = false;
    int rc;

    if (store_job_claim(s->st, job, s->holder, deliver_interval(),
                        (int64_t)DELIVER_BATCH * (DELIVER_TIMEOUT_S + 5) + 60, gi_now(),
                        &run) == GI_OK &&
        run) {
        if ((rc = deliver_run(s->st, gi_now(), &res)) != GI_OK)
            gi_warn("job %s failed: %s", job, gi_status_name(rc));
        if (store_job_done(s->st, job, s->holder, gi_now()) != GI_OK)
            gi_warn("job %s: cannot release its lease", job);
    }
    run = false;
    if (store_job_claim(s->st, keep, s->holder, SCHEDULER_MAINTAIN_S, SCHEDULER_MAX_RUN_S, gi_now(),
                        &run) != GI_OK ||
        !run)
        return;
    rc = store_delivery_prune(s->st, gi_now() - (int64_t)DELIVER_KEEP_DAYS * 86400, &deleted);
    if (rc != GI_OK)
        gi_warn("job %s failed: %s", keep, gi_status_name(rc));
    else if (deleted > 0)
        gi_info("job %s: %lld old deliveries deleted", keep, (long long)deleted);
    if (store_job_done(s->st, keep, s->holder, gi_now()) != GI_OK)
        gi_warn("job %s: cannot release its lease", keep);
}

/* Seconds to the next look: a quarter of the shortest interval, between 1
 * and tick_s. */
static int next_wait(struct scheduler *s)
{
    int64_t shortest = 0;
    int64_t w = s->tick_s;

    if (store_source_min_interval(s->st, &shortest) == GI_OK && shortest > 0 && shortest / 4 < w)
        w = shortest / 4;
    if (s->owner_s < w)
        w = s->owner_s;
    if (deliver_interval() < w)
        w = deliver_interval();
    return w < 1 ? 1 : (int)w;
}

static void *loop(void *arg)
{
    struct scheduler *s = arg;

    pthread_mutex_lock(&s->mu);
    while (!s->stop) {
        struct timespec until;
        int wait_s;
        pthread_mutex_unlock(&s->mu);
        run_due(s);
        run_maintenance(s);
        run_owner(s);
        run_usage(s);
        run_health(s);
        run_assets(s);
        run_deliver(s);
        wait_s = next_wait(s);
        pthread_mutex_lock(&s->mu);
        clock_gettime(CLOCK_REALTIME, &until);
        until.tv_sec += wait_s;
        while (!s->stop && pthread_cond_timedwait(&s->cv, &s->mu, &until) == 0) {
        }
    }
    pthread_mutex_unlock(&s->mu);
    return NULL;
}

struct scheduler *scheduler_start(struct store *st, const struct scheduler_options *o)
{
    struct scheduler *s = calloc(1, sizeof *s);

    if (s == NULL)
        return NULL;
    s->st = st;
    s->tick_s = o->tick_s > 0 ? o->tick_s : 5;
    s->retain_days = o->retain_days > 0 ? o->retain_days : SCHEDULER_RETAIN_DAYS;
    s->no_rollup = o->no_rollup;
    s->owner_s = o->owner_s > 0 ? o->owner_s : SCHEDULER_OWNER_S;
    make_holder(s->holder, sizeof s->holder);
    pthread_mutex_init(&s->mu, NULL);
    pthread_cond_init(&s->cv, NULL);
    if (pthread_create(&s->thread, NULL, loop, s) != 0) {
        pthread_mutex_destroy(&s->mu);
        pthread_cond_destroy(&s->cv);
        free(s);
        return NULL;
    }
    gi_info("scheduler: job holder %s", s->holder);
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
