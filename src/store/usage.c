/* Usage over time: configuration and the usage:rollup job that keeps the
 * hourly, daily and per-consumer rollups and the allocation intervals;
 * marking is in usage_mark.c, one GPU-hour is computed in usage_hour.c.
 * See store_int.h, store.h and usage_int.h.
 *
 * Ingest marks each (GPU, hour) its samples touch as dirty inside its own
 * transaction (usage_mark), with a fresh stamp. The job recomputes dirty
 * hours from the raw samples, oldest hour first, in passes: a pass reads
 * the samples of up to PASS_GPUS dirty GPUs of one hour outside any
 * transaction, then works them in small chunks (at most CHUNK_GPUS GPUs
 * and about CHUNK_BUDGET_MS of work), each its own transaction that names
 * its GPUs (db_tx_begin_keyed): on PostgreSQL it runs beside the pushes of
 * other GPUs and waits only for those of its own; on SQLite, whose one
 * writer it then is, the job steps aside after each chunk so that a
 * waiting push goes first. A chunk forgets a GPU-hour's mark only if its
 * stamp is still the one the pass read (new data came in otherwise). A
 * chunk marks its hour in usage_groups_dirty; the hour's (and its day's)
 * group rows, which sum every GPU, are summed again once per run after the
 * chunks, one hour per transaction. Every run also re-dirties the current
 * hour of every GPU still present once its row is RECENT_S old, and the previous hour until
 * it has been computed max_gap after its end, so that consumers that
 * changed without new samples (a pod list that ended a pod, a released
 * allocation) and the growing "unknown" of a silent GPU are picked up
 * without the writers of those marking anything. */
#include "store/store_int.h"
#include "store/usage_int.h"
#include "store/usage_consumer_totals.h"
#include "store/usage_spans.h"
#include "core/log.h"
#include "core/status.h"
#include "core/util.h"

#include <math.h>
#include <pthread.h>
#include <stdatomic.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>

/* GPUs of one hour whose samples are read at once (a pass), GPUs per
 * chunk transaction (each one a key the chunk locks), and chunks per job
 * run: so many that the run's time (RUN_BUDGET_MS) bounds it, since a
 * chunk cut short by CHUNK_BUDGET_MS may hold only a few GPU-hours. */
#define PASS_GPUS 512
#define CHUNK_GPUS DB_LOCK_KEYS_MAX
#define RUN_CHUNKS 100000
/* Threads that work a pass's chunks side by side on PostgreSQL: a chunk
 * is a few dozen short statements, mostly waiting on round trips, so a
 * few at once keep the database busy. */
#define CREW_SIZE 3
/* A chunk stops taking more of its GPUs once it has worked this long
 * (the rest stay dirty for the next chunk); a run stops taking chunks
 * after RUN_BUDGET_MS, within the job's lease. */
#define CHUNK_BUDGET_MS 50
#define RUN_BUDGET_MS 90000
/* How long the job steps aside after each chunk on SQLite, so that a
 * writer waiting for the store's one writer lock takes it first: half as
 * long as the chunk held it, within these bounds. */
#define YIELD_MIN_MS 2
#define YIELD_MAX_MS 50
/* Rollup rows one pruning statement deletes at most. */
#define PRUNE_BATCH 5000
/* How stale the current hour's row of a GPU may get before a run redoes
 * it without new samples (its unknown time grows; consumers change). */
#define RECENT_S 300

static struct store_usage_config cfg = {
    .busy_pct = 5.0,
    .max_gap_s = 600,
    .retain_hourly_days = 396,
    .retain_daily_days = 1825,
};

void store_usage_configure(const struct store_usage_config *c) { cfg = *c; }
void store_usage_config_get(struct store_usage_config *out) { *out = cfg; }
const struct store_usage_config *usage_config(void) { return &cfg; }

#define STATEMENTS(X)                                                                              \
    X(DIRTY_RECENT,                                                                                \
      "INSERT INTO usage_dirty (hour, gpu_id, marked_at) SELECT CAST(:hour AS BIGINT), "           \
      "u.gpu_id, CAST(:now AS BIGINT) FROM usage_gpus u JOIN gpus g ON g.id = u.gpu_id WHERE "     \
      "u.owned_from < CAST(:hour AS BIGINT) + 3600 AND (g.missing_since IS NULL OR "               \
      "g.missing_since > CAST(:hour AS BIGINT)) AND NOT EXISTS (SELECT 1 FROM usage_hourly x "     \
      "WHERE x.gpu_id = u.gpu_id AND x.hour = CAST(:hour AS BIGINT) AND x.updated_at >= :fresh) "  \
      "ON CONFLICT (hour, gpu_id) DO NOTHING")                                                     \
    X(DIRTY_FIRST, "SELECT MIN(hour) FROM usage_dirty WHERE hour <= :now")                         \
    X(DIRTY_FUTURE, "DELETE FROM usage_dirty WHERE hour > :now")                                   \
    X(DIRTY_OLDEST, "SELECT MIN(hour) FROM usage_dirty")                                           \
    X(DIRTY_COUNT, "SELECT COUNT(*) FROM usage_dirty")                                             \
    X(GDIRTY_COUNT, "SELECT COUNT(*) FROM usage_groups_dirty")                                     \
    X(DIRTY_CHUNK,                                                                                 \
      "SELECT d.gpu_id, COALESCE(g.uuid, ''), d.gen FROM usage_dirty d LEFT JOIN gpus g ON "       \
      "g.id = d.gpu_id WHERE d.hour = :hour ORDER BY d.gpu_id LIMIT :n")                           \
    X(DIRTY_DONE, "DELETE FROM usage_dirty WHERE hour = :hour AND gpu_id = :gid")                  \
    X(DIRTY_DONE_GEN, "DELETE FROM usage_dirty WHERE hour = :hour AND gpu_id = :gid AND gen = "    \
                      ":gen")                                                                      \
    X(CHUNK_SAMPLES,                                                                               \
      "SELECT gpu_id, COALESCE(source_id, 0), ts, util_avg, util_max, mem_used_mib, "              \
      "power_avg_w, temp_c FROM gpu_samples WHERE ts >= :lo AND ts <= :hi AND gpu_id IN (SELECT "  \
      "d.gpu_id FROM usage_dirty d WHERE d.hour = :hour AND d.gpu_id >= :g0 AND d.gpu_id <= :g1 "  \
      "UNION SELECT g.id FROM usage_dirty d JOIN gpus x ON x.id = d.gpu_id JOIN gpus g ON "        \
      "g.host_id = x.host_id WHERE d.hour = :hour AND d.gpu_id >= :g0 AND d.gpu_id <= :g1) "       \
      "ORDER BY gpu_id, COALESCE(source_id, 0), ts")                                               \
    X(GDIRTY_MARK, "INSERT INTO usage_groups_dirty (hour, marked_at) VALUES (:hour, :now) ON "     \
                   "CONFLICT (hour) DO NOTHING")                                                   \
    X(GDIRTY_LIST, "SELECT hour FROM usage_groups_dirty ORDER BY hour LIMIT 2")                    \
    X(GDIRTY_DONE, "DELETE FROM usage_groups_dirty WHERE hour = :hour")                            \
    X(PRUNE_GROUPS, "DELETE FROM usage_groups_daily WHERE day < :cut")                             \
    X(PRUNE_HDAYS, "DELETE FROM usage_host_days WHERE day < :cut")                                 \
    X(PRUNE_BLOCKS, "DELETE FROM usage_gpu_blocks WHERE start < :cut")                             \
    X(HGROUPS_DEL, "DELETE FROM usage_groups_hourly WHERE hour = :hour")                           \
    X(HGROUPS_ADD,                                                                                 \
      "INSERT INTO usage_groups_hourly (hour, team, env, pool, cluster, cloud, model, "            \
      "datacenter_id, currency, gpus, owned_s, allocated_s, busy_s, alloc_idle_s, idle_s, "        \
      "unknown_s, util_sum, measured_s, energy_wh, owned_cost, busy_cost, alloc_idle_cost, "       \
      "idle_cost, unknown_cost, unpriced_s, updated_at) SELECT hour, team, env, pool, cluster, "   \
      "cloud, model, datacenter_id, COALESCE(currency, ''), COUNT(*), SUM(owned_s * fraction), "   \
      "SUM(allocated_s * fraction), SUM(busy_s * fraction), SUM(alloc_idle_s * fraction), "        \
      "SUM(idle_s * fraction), SUM(unknown_s * fraction), SUM(util_sum * fraction), "              \
      "SUM(measured_s * fraction), SUM(energy_wh), SUM(owned_s * fraction * rate_micros), "        \
      "SUM(busy_s * fraction * rate_micros), SUM(alloc_idle_s * fraction * rate_micros), "         \
      "SUM(idle_s * fraction * rate_micros), SUM(unknown_s * fraction * rate_micros), SUM(CASE "   \
      "WHEN rate_micros IS NULL THEN owned_s * fraction ELSE 0 END), CAST(:now AS BIGINT) FROM "   \
      "usage_hourly WHERE hour = :hour GROUP BY hour, team, env, pool, cluster, cloud, model, "    \
      "datacenter_id, COALESCE(currency, '')")                                                     \
    X(THOURS_DEL, "DELETE FROM usage_team_hours WHERE hour = :hour")                               \
    X(THOURS_ADD,                                                                                  \
      "INSERT INTO usage_team_hours (hour, team, currency, gpus, owned_s, allocated_s, busy_s, "   \
      "alloc_idle_s, idle_s, unknown_s, util_sum, measured_s, energy_wh, owned_cost, busy_cost, "  \
      "alloc_idle_cost, idle_cost, unknown_cost, unpriced_s, updated_at) SELECT hour, team, "      \
      "currency, SUM(gpus), SUM(owned_s), SUM(allocated_s), SUM(busy_s), SUM(alloc_idle_s), "      \
      "SUM(idle_s), SUM(unknown_s), SUM(util_sum), SUM(measured_s), SUM(energy_wh), "              \
      "SUM(owned_cost), SUM(busy_cost), SUM(alloc_idle_cost), SUM(idle_cost), SUM(unknown_cost), " \
      "SUM(unpriced_s), CAST(:now AS BIGINT) FROM usage_groups_hourly WHERE hour = :hour GROUP "   \
      "BY hour, team, currency")                                                                   \
    /* Team hours past retention that no hour group holds any more (a few rows an hour). */        \
    X(PRUNE_THOURS, "DELETE FROM usage_team_hours WHERE hour < :cut AND hour < COALESCE((SELECT "  \
                    "MIN(g.hour) FROM usage_groups_hourly g), :cut)")                              \
    X(PRUNE_HGROUPS_SQLITE, "DELETE FROM usage_groups_hourly WHERE rowid IN (SELECT rowid FROM "   \
                            "usage_groups_hourly WHERE hour < :cut ORDER BY hour LIMIT :batch)")   \
    X(HGROUPS_PARTS_PG, "SELECT gi_usage_groups_hourly_partitions(CAST(:now AS BIGINT), "          \
                        "CAST(:keep AS INT))")                                                     \
    X(REDO_COUNT, "SELECT COUNT(*) FROM usage_redo")                                               \
    X(PRUNE_HOURLY, "DELETE FROM usage_hourly WHERE (gpu_id, hour) IN (SELECT gpu_id, hour FROM "  \
                    "usage_hourly WHERE hour < :cut ORDER BY hour LIMIT :batch)")                  \
    X(PRUNE_CONS, "DELETE FROM usage_consumers WHERE (gpu_id, hour, kind, consumer) IN (SELECT "   \
                  "gpu_id, hour, kind, consumer FROM usage_consumers WHERE hour < :cut ORDER BY "  \
                  "hour LIMIT :batch)")                                                            \
    X(PRUNE_DAILY, "DELETE FROM usage_daily WHERE (gpu_id, day) IN (SELECT gpu_id, day FROM "      \
                   "usage_daily WHERE day < :cut ORDER BY day LIMIT :batch)")                      \
    X(PRUNE_IDLE_DAYS, "DELETE FROM usage_idle_days WHERE (gpu_id, day) IN (SELECT gpu_id, day "   \
                       "FROM usage_idle_days WHERE day < :cut ORDER BY day LIMIT :batch)")         \
    X(PRUNE_IV, "DELETE FROM usage_intervals WHERE id IN (SELECT id FROM usage_intervals WHERE "   \
                "ended_at < :cut ORDER BY ended_at LIMIT :batch)")                                 \
    X(CDAY_DEL, "DELETE FROM usage_consumers_daily WHERE gpu_id = :gid AND day = :day")            \
    X(CDAY_ADD,                                                                                    \
      "INSERT INTO usage_consumers_daily (day, gpu_id, kind, consumer, consumer_team, namespace, " \
      "pod, container, username, process, tenant, project, team, env, pool, cluster, cloud, "      \
      "model, datacenter_id, host_id, host, currency, hours, idle_hours, first_hour, last_hour, "  \
      "first_idle_hour, held_s, allocated_s, busy_s, alloc_idle_s, util_sum, measured_s, "         \
      "util_max, energy_wh, allocated_cost, busy_cost, alloc_idle_cost, unpriced_s, updated_at) "  \
      "SELECT CAST(:day AS BIGINT), u.gpu_id, u.kind, u.consumer, u.team, MAX(u.namespace), "      \
      "MAX(u.pod), MAX(u.container), MAX(u.username), MAX(u.process), MAX(u.tenant), "             \
      "MAX(u.project), h.team, h.env, h.pool, h.cluster, h.cloud, h.model, h.datacenter_id, "      \
      "h.host_id, MAX(h.host), h.currency, COUNT(*), SUM(CASE WHEN u.busy_s = 0 AND "              \
      "u.alloc_idle_s > 0 THEN 1 ELSE 0 END), MIN(u.hour), MAX(u.hour), MIN(CASE WHEN "            \
      "u.alloc_idle_s > 0 THEN u.hour END), SUM(u.allocated_s), SUM(u.allocated_s * h.fraction), " \
      "SUM(u.busy_s * h.fraction), SUM(u.alloc_idle_s * h.fraction), SUM(u.util_sum * "            \
      "h.fraction), SUM(u.measured_s * h.fraction), MAX(u.util_max), SUM(CASE WHEN h.owned_s > 0 " \
      "THEN h.energy_wh * u.allocated_s / h.owned_s ELSE 0 END), SUM(u.allocated_s * h.fraction "  \
      "* h.rate_micros), SUM(u.busy_s * h.fraction * h.rate_micros), SUM(u.alloc_idle_s * "        \
      "h.fraction * h.rate_micros), SUM(CASE WHEN h.rate_micros IS NULL THEN u.allocated_s * "     \
      "h.fraction ELSE 0 END), CAST(:now AS BIGINT) FROM usage_consumers u JOIN usage_hourly h "   \
      "ON h.gpu_id = u.gpu_id AND h.hour = u.hour WHERE u.gpu_id = :gid AND u.hour >= :day AND "   \
      "u.hour < CAST(:day AS BIGINT) + 86400 AND u.allocated_s > 0 GROUP BY u.gpu_id, u.kind, "    \
      "u.consumer, u.team, h.team, h.env, h.pool, h.cluster, h.cloud, h.model, h.datacenter_id, "  \
      "h.host_id, h.currency")                                                                     \
    X(OLDEST_CDAY, "SELECT MIN(day) FROM usage_consumers_daily WHERE day < :cut")                  \
    X(PRUNE_CDAYS, "DELETE FROM usage_consumers_daily WHERE day = :day")

enum stmt_id { STATEMENTS(STORE_AS_ENUM) ST__COUNT };
static const char *const stmt_sql[] = {STATEMENTS(STORE_AS_SQL)};

static struct db_stmt *prep(struct conn *c, enum stmt_id id) { return db_prep(c, stmt_sql[id]); }

/* See usage_int.h. */
int usage_fetch_opt_int(struct conn *c, struct db_stmt *s, int64_t *out, bool *null)
{
    int step = db_step(c, s);

    *out = 0;
    *null = true;
    if (step == DB_ROW && !db_col_is_null(s, 0)) {
        *out = db_col_int(s, 0);
        *null = false;
    }
    db_reset(s);
    return step == DB_ROW || step == DB_DONE ? GI_OK : db_status(step);
}

/* See usage_int.h. */
int usage_day_steps(struct conn *c, const char *const *sql, size_t n, int64_t day, int64_t now)
{
    int rc = GI_OK;

    for (size_t i = 0; i < n && rc == GI_OK; i++) {
        struct db_stmt *s = db_prep(c, sql[i]);
        if (s == NULL)
            return GI_INTERNAL;
        db_bind_int(s, ":day", day);
        db_bind_int(s, ":now", now);
        rc = db_exec_done(c, s);
    }
    return rc;
}

/* Sums GPU gid's consumer hours of `day` into its consumer days again,
 * leaving the spans to the caller. */
static int write_consumer_day_rows(struct conn *c, int64_t gid, int64_t day, int64_t now)
{
    struct db_stmt *s = prep(c, ST_CDAY_DEL);
    int rc;

    if (!s)
        return GI_INTERNAL;
    db_bind_int(s, ":gid", gid);
    db_bind_int(s, ":day", day);
    if ((rc = db_exec_done(c, s)) != GI_OK)
        return rc;
    if (!(s = prep(c, ST_CDAY_ADD)))
        return GI_INTERNAL;
    db_bind_int(s, ":gid", gid);
    db_bind_int(s, ":day", day);
    db_bind_int(s, ":now", now);
    return db_exec_done(c, s);
}

/* See usage_int.h. */
int usage_write_consumer_day(struct conn *c, int64_t gid, int64_t day, int64_t now)
{
    struct usage_ctot_keys k = {0};
    int rc = usage_ctot_note(c, &gid, 1, day, &k);

    if (rc == GI_OK && (rc = write_consumer_day_rows(c, gid, day, now)) == GI_OK &&
        (rc = usage_spans_write_day(c, gid, day)) == GI_OK)
        rc = usage_ctot_refresh(c, &gid, 1, day, &k);
    usage_ctot_keys_free(&k);
    return rc;
}

/* Deletes the consumer days past the daily retention, one day per
 * transaction with the spans that hold it summed again and its consumer
 * totals gone with it. */
static int prune_consumer_days(struct store *st, int64_t now, int64_t *removed)
{
    int64_t n, day;
    bool none;
    int rc;

    do {
        struct conn *c = db_conn_get(st);
        struct db_stmt *s;
        n = 0;
        none = true;
        rc = db_tx_begin(c);
        if (rc == GI_OK && !(s = prep(c, ST_OLDEST_CDAY)))
            rc = GI_INTERNAL;
        if (rc == GI_OK) {
            db_bind_int(s, ":cut", now - (int64_t)cfg.retain_daily_days * 86400);
            rc = usage_fetch_opt_int(c, s, &day, &none);
        }
        if (rc == GI_OK && !none && !(s = prep(c, ST_PRUNE_CDAYS)))
            rc = GI_INTERNAL;
        if (rc == GI_OK && !none) {
            db_bind_int(s, ":day", day);
            if ((rc = db_exec_done(c, s)) == GI_OK)
                n = db_changes(c);
            if (rc == GI_OK)
                rc = usage_spans_prune_day(c, day);
            if (rc == GI_OK)
                rc = usage_ctot_prune_day(c, day);
        }
        rc = db_tx_end(c, rc);
        db_conn_put(st, c);
        *removed += rc == GI_OK ? n : 0;
    } while (rc == GI_OK && !none);
    return rc;
}

/* Replaces the hour's rows of usage_groups_hourly by the sums of its
 * usage_hourly rows, and the hour's rows of usage_team_hours by the sums
 * of those, inside the caller's transaction (which wrote them). */
int usage_write_hour_groups(struct conn *c, int64_t hour, int64_t now)
{
    struct db_stmt *s = prep(c, ST_HGROUPS_DEL);
    int rc;

    if (!s)
        return GI_INTERNAL;
    db_bind_int(s, ":hour", hour);
    if ((rc = db_exec_done(c, s)) != GI_OK)
        return rc;
    if (!(s = prep(c, ST_HGROUPS_ADD)))
        return GI_INTERNAL;
    db_bind_int(s, ":hour", hour);
    db_bind_int(s, ":now", now);
    if ((rc = db_exec_done(c, s)) != GI_OK)
        return rc;
    if (!(s = prep(c, ST_THOURS_DEL)))
        return GI_INTERNAL;
    db_bind_int(s, ":hour", hour);
    if ((rc = db_exec_done(c, s)) != GI_OK)
        return rc;
    if (!(s = prep(c, ST_THOURS_ADD)))
        return GI_INTERNAL;
    db_bind_int(s, ":hour", hour);
    db_bind_int(s, ":now", now);
    return db_exec_done(c, s);
}

/* ---- the job ---- */

/* Milliseconds of a monotonic clock. */
static int64_t mono_ms(void)
{
    struct timespec ts;

    clock_gettime(CLOCK_MONOTONIC, &ts);
    return (int64_t)ts.tv_sec * 1000 + ts.tv_nsec / 1000000;
}

/* Steps aside after a chunk that held the writer lock for held_ms, on
 * SQLite, whose one writer lock a push may be waiting for: the lock is not
 * handed over in order, so the job sleeps for half as long as it held it
 * (YIELD_MIN_MS..YIELD_MAX_MS), time for the waiting writer to take it.
 * The job then holds the lock at most two thirds of the time while it has
 * work. On PostgreSQL chunks and pushes of other GPUs run side by side
 * and the lock queue is fair, so nothing is needed. */
static void step_aside(bool sqlite, int64_t held_ms)
{
    int64_t ms = held_ms / 2;

    if (!sqlite)
        return;
    if (ms < YIELD_MIN_MS)
        ms = YIELD_MIN_MS;
    if (ms > YIELD_MAX_MS)
        ms = YIELD_MAX_MS;
    nanosleep(&(struct timespec){.tv_sec = 0, .tv_nsec = (long)ms * 1000000L}, NULL);
}

/* Reads the chunk's samples into *out: those of the hour's dirty GPUs
 * g0..g1 and of every GPU on the same hosts (which the pod heuristic
 * weighs), ordered by GPU. Caller frees. */
static int chunk_samples(struct conn *c, int64_t hour, int64_t g0, int64_t g1,
                         struct usage_sample **out, size_t *n)
{
    struct db_stmt *s = prep(c, ST_CHUNK_SAMPLES);
    size_t cap = 0;
    int step;

    *out = NULL;
    *n = 0;
    if (!s)
        return GI_INTERNAL;
    db_bind_int(s, ":lo", hour - cfg.max_gap_s);
    db_bind_int(s, ":hi", hour + 3600 + cfg.max_gap_s);
    db_bind_int(s, ":hour", hour);
    db_bind_int(s, ":g0", g0);
    db_bind_int(s, ":g1", g1);
    while ((step = db_step(c, s)) == DB_ROW) {
        struct usage_sample *x;
        if (*n == cap) {
            size_t ncap = cap ? cap * 2 : 1024;
            struct usage_sample *p = realloc(*out, ncap * sizeof *p);
            if (!p) {
                db_reset(s);
                return GI_INTERNAL;
            }
            *out = p;
            cap = ncap;
        }
        x = &(*out)[(*n)++];
        x->gpu = db_col_int(s, 0);
        x->src = db_col_int(s, 1);
        x->ts = db_col_int(s, 2);
        x->ua = db_col_is_null(s, 3) ? NAN : db_col_dbl(s, 3);
        x->um = db_col_is_null(s, 4) ? NAN : db_col_dbl(s, 4);
        x->mem = db_col_is_null(s, 5) ? NAN : db_col_dbl(s, 5);
        x->pw = db_col_is_null(s, 6) ? NAN : db_col_dbl(s, 6);
        x->temp = db_col_is_null(s, 7) ? NAN : db_col_dbl(s, 7);
    }
    db_reset(s);
    return step == DB_DONE ? GI_OK : db_status(step);
}

/* One GPU of a pass: its id, the name its lock is taken under, and the
 * stamp of its mark when the pass read it. */
struct chunk_gpu {
    int64_t id, gen;
    char uuid[256];
};

/* A pass: up to PASS_GPUS dirty GPUs of the oldest dirty hour and their
 * samples, read outside any transaction, then worked in chunks from
 * `next` on (`at`: the first sample of GPU ids[next]). */
struct pass {
    int64_t hour;
    struct chunk_gpu *ids;
    size_t nids, next;
    struct usage_sample *xs;
    size_t n, at;
};

static void pass_free(struct pass *p)
{
    free(p->ids);
    free(p->xs);
    memset(p, 0, sizeof *p);
}

/* Reads the next pass into *p (p->nids 0: nothing is dirty). Reading the
 * hour's samples scans every sample of its window, so a pass reads them
 * for many chunks at once. A push in between marks its hours again with a
 * new stamp: the chunk then keeps the mark, and a later pass recomputes
 * the hour with the new samples. */
static int pass_read(struct store *st, int64_t now, struct pass *p)
{
    struct conn *c = db_conn_get(st);
    struct db_stmt *s = prep(c, ST_DIRTY_FIRST);
    bool none = true;
    int step, rc = GI_INTERNAL;

    pass_free(p);
    if (!s)
        goto cleanup;
    db_bind_int(s, ":now", usage_hour_of(now));
    if ((rc = usage_fetch_opt_int(c, s, &p->hour, &none)) != GI_OK || none)
        goto cleanup;
    rc = GI_INTERNAL;
    if (!(p->ids = calloc(PASS_GPUS, sizeof *p->ids)) || !(s = prep(c, ST_DIRTY_CHUNK)))
        goto cleanup;
    db_bind_int(s, ":hour", p->hour);
    db_bind_int(s, ":n", PASS_GPUS);
    while ((step = db_step(c, s)) == DB_ROW && p->nids < PASS_GPUS) {
        struct chunk_gpu *g = &p->ids[p->nids++];
        g->id = db_col_int(s, 0);
        gi_strlcpy(g->uuid, db_col_text(s, 1), sizeof g->uuid);
        g->gen = db_col_int(s, 2);
    }
    db_reset(s);
    if (step != DB_DONE && step != DB_ROW) {
        rc = db_status(step);
        goto cleanup;
    }
    rc = GI_OK;
    if (p->nids)
        rc = chunk_samples(c, p->hour, p->ids[0].id, p->ids[p->nids - 1].id, &p->xs, &p->n);
cleanup:
    db_conn_put(st, c);
    if (rc != GI_OK)
        pass_free(p);
    return rc;
}

/* Marks the chunk's hour for its groups to be summed again. */
static int groups_mark(struct conn *c, int64_t hour, int64_t now)
{
    struct db_stmt *s = prep(c, ST_GDIRTY_MARK);

    if (!s)
        return GI_INTERNAL;
    db_bind_int(s, ":hour", hour);
    db_bind_int(s, ":now", now);
    return db_exec_done(c, s);
}

/* What a chunk does once usage_compute_hour has done its GPU-hours
 * g[0..n): their days and consumer days re-summed, their marks forgotten
 * (each only if its stamp is still the one the pass read: new data came
 * in otherwise) and the hour marked for its groups. Nothing reads these
 * statements' answers, so on PostgreSQL they go out together as one
 * pipeline: one round trip for the chunk instead of seven per GPU-hour
 * (on SQLite each runs at once). Each keeps its one-GPU form, whose plan
 * stays on the primary keys: the same sums over an array of GPUs were
 * planned as scans of the whole day's rows. The consumer-day spans of the
 * day follow for all the chunk's GPUs at once (usage_spans_write_days: a
 * statement per span length instead of two per GPU and length, each
 * GPU's rows still found by its key), and so do the totals of the
 * consumers those GPUs held that day before and hold now
 * (usage_ctot_refresh: two statements per chunk, and the consumers' rows
 * found by their key). */
static int chunk_finish(struct conn *c, const struct chunk_gpu *g, size_t n, int64_t hour,
                        int64_t now)
{
    int64_t day = hour - hour % 86400, ids[CHUNK_GPUS];
    struct usage_ctot_keys k = {0};
    struct db_stmt *s;
    int rc, drc;

    for (size_t i = 0; i < n; i++)
        ids[i] = g[i].id;
    rc = usage_ctot_note(c, ids, n, day, &k);
    if (rc == GI_OK)
        rc = db_defer(c, true);
    for (size_t i = 0; i < n && rc == GI_OK; i++) {
        if ((rc = usage_write_day(c, g[i].id, day, now)) != GI_OK ||
            (rc = write_consumer_day_rows(c, g[i].id, day, now)) != GI_OK)
            break;
        rc = GI_INTERNAL;
        if (!(s = prep(c, ST_DIRTY_DONE_GEN)))
            break;
        db_bind_int(s, ":hour", hour);
        db_bind_int(s, ":gid", g[i].id);
        db_bind_int(s, ":gen", g[i].gen);
        rc = db_exec_done(c, s);
    }
    /* The spans holding the day, of all the chunk's GPUs at once. */
    if (rc == GI_OK)
        rc = usage_spans_write_days(c, ids, n, day);
    if (rc == GI_OK)
        rc = groups_mark(c, hour, now);
    if (rc == GI_OK)
        rc = usage_ctot_refresh(c, ids, n, day, &k);
    drc = db_defer(c, false);
    usage_ctot_keys_free(&k);
    return rc != GI_OK ? rc : drc;
}

/* One chunk: the pass's GPUs from `from` up to (not including) `end`, at
 * most CHUNK_GPUS of them, whose samples start at or after p->xs[at], in
 * one transaction that locks those GPUs' keys (a push of one of them
 * waits for it, or it for the push), taking no more of them once
 * CHUNK_BUDGET_MS have passed. When it commits, *done is the index of the
 * first GPU it did not do (*done_at: where that GPU's samples start) and
 * *hours the GPU-hours done; otherwise nothing is done. The pass is only
 * read (several chunks of it run at once on PostgreSQL). */
static int run_chunk(struct store *st, int64_t now, const struct pass *p, size_t from, size_t end,
                     size_t at, size_t *done, size_t *done_at, int64_t *hours)
{
    struct conn *c = db_conn_get(st);
    int kinds[CHUNK_GPUS];
    const char *names[CHUNK_GPUS];
    int64_t start = mono_ms();
    size_t i;
    int nkeys = 0;
    int rc;

    *hours = 0;
    if (end - from > CHUNK_GPUS)
        end = from + CHUNK_GPUS;
    for (i = from; i < end; i++)
        if (p->ids[i].uuid[0] != '\0') {
            kinds[nkeys] = DB_LOCK_GPU;
            names[nkeys++] = p->ids[i].uuid;
        }
    rc = db_tx_begin_keyed(c, kinds, names, nkeys);
    for (i = from; i < end && rc == GI_OK; i++) {
        const struct chunk_gpu *g = &p->ids[i];
        size_t first;
        if (i > from && mono_ms() - start >= CHUNK_BUDGET_MS)
            break;
        while (at < p->n && p->xs[at].gpu < g->id)
            at++;
        first = at;
        while (at < p->n && p->xs[at].gpu == g->id)
            at++;
        rc = usage_compute_hour(c, g->id, p->hour, now, p->xs + first, at - first, p->xs, p->n);
    }
    if (rc == GI_OK)
        rc = chunk_finish(c, p->ids + from, i - from, p->hour, now);
    rc = db_tx_end(c, rc);
    db_conn_put(st, c);
    if (rc == GI_OK) {
        *hours = (int64_t)(i - from);
        *done = i;
        *done_at = at;
    }
    return rc;
}

/* The chunks of one pass worked side by side on PostgreSQL: CREW_SIZE
 * threads, each on its own connection, take runs of CHUNK_GPUS GPUs in
 * turn and work each run to its end, chunk after chunk. */
struct crew {
    pthread_mutex_t mu;
    struct store *st;
    const struct pass *p;
    int64_t now, deadline;
    size_t next, at; /* the first GPU not yet taken, and where its samples start */
    int left;        /* chunks the run may still take */
    int64_t hours, chunks;
    int rc; /* the first failure */
};

/* Takes the next run of GPUs [*from, *end) and where its samples start;
 * false when the pass is done, the run's chunks or time are spent, or a
 * chunk failed. Under w->mu. */
static bool crew_take(struct crew *w, size_t *from, size_t *end, size_t *at)
{
    const struct pass *p = w->p;

    if (w->rc != GI_OK || w->left <= 0 || w->next >= p->nids || mono_ms() >= w->deadline)
        return false;
    *from = w->next;
    *at = w->at;
    *end = w->next + CHUNK_GPUS < p->nids ? w->next + CHUNK_GPUS : p->nids;
    w->next = *end;
    while (w->at < p->n && (w->next >= p->nids || p->xs[w->at].gpu < p->ids[w->next].id))
        w->at++;
    return true;
}

static void *crew_work(void *arg)
{
    struct crew *w = arg;
    size_t from, end, at;

    pthread_mutex_lock(&w->mu);
    while (crew_take(w, &from, &end, &at)) {
        while (from < end && w->rc == GI_OK && w->left > 0) {
            size_t done = from, done_at = at;
            int64_t n = 0;
            int rc;
            w->left--;
            pthread_mutex_unlock(&w->mu);
            rc = run_chunk(w->st, w->now, w->p, from, end, at, &done, &done_at, &n);
            pthread_mutex_lock(&w->mu);
            if (rc != GI_OK) {
                if (w->rc == GI_OK)
                    w->rc = rc;
                break;
            }
            w->hours += n;
            w->chunks++;
            from = done;
            at = done_at;
        }
    }
    pthread_mutex_unlock(&w->mu);
    return NULL;
}

/* Works the whole pass p with the crew, at most *left chunks (decreased
 * by those taken) until `deadline`; adds the GPU-hours and chunks done
 * to *out. A failed chunk stops the crew and is returned; the GPU-hours
 * it held stay dirty. */
static int crew_run(struct store *st, int64_t now, const struct pass *p, int64_t deadline,
                    int *left, struct store_usage_run *out)
{
    struct crew w = {.st = st, .p = p, .now = now, .deadline = deadline, .left = *left};
    pthread_t th[CREW_SIZE];
    int started = 0;

    pthread_mutex_init(&w.mu, NULL);
    for (int k = 0; k < CREW_SIZE && (size_t)k * CHUNK_GPUS < p->nids; k++)
        if (pthread_create(&th[started], NULL, crew_work, &w) == 0)
            started++;
    if (started == 0)
        crew_work(&w);
    for (int k = 0; k < started; k++)
        pthread_join(th[k], NULL);
    pthread_mutex_destroy(&w.mu);
    *left = w.left;
    out->hours += w.hours;
    out->chunks += w.chunks;
    return w.rc;
}

/* Sums the groups of the oldest hour marked in usage_groups_dirty again,
 * and its day's when no later hour of that day is marked, in one
 * transaction with the writer lock (the sums read every GPU's rows);
 * *left is false once nothing is marked. */
static int flush_groups_hour(struct store *st, int64_t now, bool *left)
{
    struct conn *c = db_conn_get(st);
    struct db_stmt *s;
    int64_t hours[2];
    size_t n = 0;
    int step, rc = db_tx_begin(c);

    *left = false;
    if (rc != GI_OK)
        goto cleanup;
    rc = GI_INTERNAL;
    if (!(s = prep(c, ST_GDIRTY_LIST)))
        goto cleanup;
    while ((step = db_step(c, s)) == DB_ROW && n < 2)
        hours[n++] = db_col_int(s, 0);
    db_reset(s);
    if (step != DB_DONE && step != DB_ROW) {
        rc = db_status(step);
        goto cleanup;
    }
    rc = GI_OK;
    if (n == 0)
        goto cleanup;
    if ((rc = usage_write_hour_groups(c, hours[0], now)) != GI_OK)
        goto cleanup;
    /* hours come in order: the day is summed once its last marked hour is */
    if (n == 1 || hours[1] - hours[1] % 86400 != hours[0] - hours[0] % 86400)
        if ((rc = usage_write_groups(c, hours[0] - hours[0] % 86400, now)) != GI_OK)
            goto cleanup;
    rc = GI_INTERNAL;
    if (!(s = prep(c, ST_GDIRTY_DONE)))
        goto cleanup;
    db_bind_int(s, ":hour", hours[0]);
    rc = db_exec_done(c, s);
    *left = rc == GI_OK;
cleanup:
    rc = db_tx_end(c, rc);
    db_conn_put(st, c);
    if (rc != GI_OK)
        *left = false;
    return rc;
}

/* Sums the groups of every hour the chunks marked, one hour per
 * transaction, stepping aside between them like the chunks. */
static int flush_groups(struct store *st, int64_t now, bool sqlite)
{
    bool left = true;
    int rc = GI_OK;

    while (left && rc == GI_OK) {
        int64_t t = mono_ms();
        rc = flush_groups_hour(st, now, &left);
        if (left)
            step_aside(sqlite, mono_ms() - t);
    }
    return rc;
}

/* Forgets one GPU-hour's mark, in its own transaction. */
static int drop_mark(struct store *st, int64_t gid, int64_t hour)
{
    struct conn *c = db_conn_get(st);
    struct db_stmt *s;
    int rc = db_tx_begin(c);

    if (rc == GI_OK) {
        rc = GI_INTERNAL;
        if ((s = prep(c, ST_DIRTY_DONE))) {
            db_bind_int(s, ":hour", hour);
            db_bind_int(s, ":gid", gid);
            rc = db_exec_done(c, s);
        }
    }
    rc = db_tx_end(c, rc);
    db_conn_put(st, c);
    return rc;
}

/* Marks the current and the previous hour of every present GPU unless
 * their rows are fresh enough, and drops marks of hours still to come. */
static int mark_recent(struct store *st, int64_t now)
{
    struct conn *c = db_conn_get(st);
    struct db_stmt *s;
    int rc = db_tx_begin(c);

    for (int k = 0; k < 2 && rc == GI_OK; k++) {
        rc = GI_INTERNAL;
        if (!(s = prep(c, ST_DIRTY_RECENT)))
            break;
        db_bind_int(s, ":hour", usage_hour_of(now) - k * 3600);
        db_bind_int(s, ":now", now);
        /* The current hour is redone when its row is RECENT_S old; the
         * previous one until it has been computed max_gap after its end. */
        db_bind_int(s, ":fresh", k == 0 ? now - RECENT_S : usage_hour_of(now) + cfg.max_gap_s);
        rc = db_exec_done(c, s);
    }
    if (rc == GI_OK) {
        rc = GI_INTERNAL;
        if ((s = prep(c, ST_DIRTY_FUTURE))) {
            db_bind_int(s, ":now", usage_hour_of(now));
            rc = db_exec_done(c, s);
        }
    }
    rc = db_tx_end(c, rc);
    db_conn_put(st, c);
    return rc;
}

/* The hourly groups past the hourly retention: on PostgreSQL whole
 * monthly partitions dropped (and the coming months' made ready), on
 * SQLite bounded deletes, one transaction each. */
static int prune_hour_groups(struct store *st, int64_t now, int64_t *removed)
{
    int64_t n;
    int rc;

    do {
        struct conn *c = db_conn_get(st);
        bool pg = db_dialect(c) == DB_PG;
        struct db_stmt *s = NULL;
        n = 0;
        rc = db_tx_begin(c);
        if (rc == GI_OK && !(s = prep(c, pg ? ST_HGROUPS_PARTS_PG : ST_PRUNE_HGROUPS_SQLITE)))
            rc = GI_INTERNAL;
        if (rc == GI_OK && pg) {
            db_bind_int(s, ":now", now);
            db_bind_int(s, ":keep", cfg.retain_hourly_days > 0 ? cfg.retain_hourly_days : 1);
            rc = db_fetch_int(c, s, &n);
            n = 0; /* partitions, not rows; one call does all */
        } else if (rc == GI_OK) {
            db_bind_int(s, ":cut", now - (int64_t)cfg.retain_hourly_days * 86400);
            db_bind_int(s, ":batch", PRUNE_BATCH);
            if ((rc = db_exec_done(c, s)) == GI_OK)
                n = db_changes(c);
        }
        rc = db_tx_end(c, rc);
        db_conn_put(st, c);
        *removed += rc == GI_OK ? n : 0;
    } while (rc == GI_OK && n == PRUNE_BATCH);
    return rc;
}

/* Bounded deletes of rollups past retention, one transaction each. */
static int prune(struct store *st, int64_t now, int64_t *removed)
{
    static const enum stmt_id which[] = {ST_PRUNE_HOURLY, ST_PRUNE_CONS, ST_PRUNE_IV,
                                         ST_PRUNE_DAILY, ST_PRUNE_IDLE_DAYS};
    int rc = GI_OK;

    for (size_t w = 0; w < sizeof which / sizeof which[0] && rc == GI_OK; w++) {
        bool daily = which[w] == ST_PRUNE_DAILY;
        int64_t cut =
                    now - (int64_t)(daily ? cfg.retain_daily_days : cfg.retain_hourly_days) * 86400,
                n;
        do {
            struct conn *c = db_conn_get(st);
            struct db_stmt *s;
            n = 0;
            rc = db_tx_begin(c);
            if (rc == GI_OK && !(s = prep(c, which[w])))
                rc = GI_INTERNAL;
            if (rc == GI_OK) {
                db_bind_int(s, ":cut", cut);
                db_bind_int(s, ":batch", PRUNE_BATCH);
                if ((rc = db_exec_done(c, s)) == GI_OK)
                    n = db_changes(c);
            }
            rc = db_tx_end(c, rc);
            db_conn_put(st, c);
            *removed += rc == GI_OK ? n : 0;
        } while (rc == GI_OK && n == PRUNE_BATCH);
    }
    if (rc == GI_OK)
        rc = prune_consumer_days(st, now, removed);
    if (rc == GI_OK)
        rc = prune_hour_groups(st, now, removed);
    if (rc == GI_OK) { /* the team hours of the hour groups gone (one statement) */
        struct conn *c = db_conn_get(st);
        struct db_stmt *s;
        rc = db_tx_begin(c);
        if (rc == GI_OK && !(s = prep(c, ST_PRUNE_THOURS)))
            rc = GI_INTERNAL;
        if (rc == GI_OK) {
            db_bind_int(s, ":cut", now - (int64_t)cfg.retain_hourly_days * 86400);
            if ((rc = db_exec_done(c, s)) == GI_OK)
                *removed += db_changes(c);
        }
        rc = db_tx_end(c, rc);
        db_conn_put(st, c);
    }
    if (rc == GI_OK) { /* the groups, host days and blocks of the days gone: a block that
                        * starts before the cut lost some of its days */
        static const enum stmt_id prunes[] = {ST_PRUNE_GROUPS, ST_PRUNE_HDAYS, ST_PRUNE_BLOCKS};
        struct conn *c = db_conn_get(st);
        struct db_stmt *s;
        rc = db_tx_begin(c);
        for (size_t i = 0; rc == GI_OK && i < sizeof prunes / sizeof *prunes; i++) {
            if (!(s = prep(c, prunes[i]))) {
                rc = GI_INTERNAL;
                break;
            }
            db_bind_int(s, ":cut", now - (int64_t)cfg.retain_daily_days * 86400);
            rc = db_exec_done(c, s);
        }
        rc = db_tx_end(c, rc);
        db_conn_put(st, c);
    }
    return rc;
}

static int count_of(struct store *st, enum stmt_id id, int64_t *n)
{
    struct conn *c = db_conn_get(st);
    struct db_stmt *s = prep(c, id);
    int rc = s ? db_fetch_int(c, s, n) : GI_INTERNAL;

    db_conn_put(st, c);
    return rc;
}

/* Records a rollup run on demand in the audit trail. */
static int audit_run(struct store *st, const char *actor, const struct store_usage_run *r)
{
    struct conn *c = db_conn_get(st);
    json_t *after = json_pack("{s:I, s:I, s:I, s:I}", "hours", (json_int_t)r->hours, "redone",
                              (json_int_t)r->redone, "pruned", (json_int_t)r->pruned, "dirty_left",
                              (json_int_t)r->dirty_left);
    int rc = db_tx_begin(c);

    if (rc == GI_OK)
        rc = db_audit(c, actor, "rollup", "usage", 0, NULL, after);
    rc = db_tx_end(c, rc);
    db_conn_put(st, c);
    json_decref(after);
    return rc;
}

/* Works dirty GPU-hours pass by pass and chunk by chunk (see pass_read,
 * run_chunk), at most max_chunks chunks and RUN_BUDGET_MS of time, into
 * *out: on PostgreSQL a pass's chunks by the crew (crew_run), on SQLite,
 * whose one writer the job then is, one after the other, stepping aside
 * after each. After a failed chunk the rest of the run goes one GPU-hour
 * at a time, so that one bad GPU-hour cannot hold up the others. */
static int run_chunks(struct store *st, int64_t now, int max_chunks, bool sqlite,
                      struct store_usage_run *out)
{
    struct pass p = {0};
    int64_t start = mono_ms();
    size_t limit = CHUNK_GPUS;
    int left = max_chunks, rc = GI_OK;

    while (left > 0) {
        int64_t t = mono_ms(), n = 0;
        size_t done = 0, done_at = 0;
        if (left < max_chunks && t - start >= RUN_BUDGET_MS)
            break;
        if (p.next >= p.nids) {
            if ((rc = pass_read(st, now, &p)) != GI_OK || p.nids == 0)
                break;
        }
        if (!sqlite && limit > 1) {
            rc = crew_run(st, now, &p, start + RUN_BUDGET_MS, &left, out);
            p.next = p.nids; /* what the crew left undone is read again */
        } else {
            left--;
            rc = run_chunk(st, now, &p, p.next, p.next + limit < p.nids ? p.next + limit : p.nids,
                           p.at, &done, &done_at, &n);
        }
        if (rc == GI_UNAVAILABLE)
            break;
        if (rc != GI_OK && limit > 1) {
            gi_warn("usage: a rollup chunk failed (%s); going on one GPU-hour at a time",
                    gi_status_name(rc));
            limit = 1;
            rc = GI_OK;
            p.next = p.nids;
            continue;
        }
        if (rc != GI_OK) {
            const struct chunk_gpu *g = &p.ids[p.next];
            gi_warn("usage: GPU %lld, hour %lld cannot be rolled up (%s); it is skipped",
                    (long long)g->id, (long long)p.hour, gi_status_name(rc));
            if ((rc = drop_mark(st, g->id, p.hour)) != GI_OK)
                break;
            p.next++;
            continue;
        }
        if (sqlite || limit == 1) {
            out->hours += n;
            out->chunks++;
            p.next = done;
            p.at = done_at;
            step_aside(sqlite, mono_ms() - t);
        }
    }
    pass_free(&p);
    return rc;
}

int store_usage_rollup(struct store *st, const char *actor, int64_t now, int max_chunks,
                       struct store_usage_run *out)
{
    struct conn *c = db_conn_get(st);
    bool sqlite = db_dialect(c) == DB_SQLITE;
    int64_t n = 0;
    int rc;

    db_conn_put(st, c);
    memset(out, 0, sizeof *out);
    if (max_chunks < 1)
        max_chunks = RUN_CHUNKS;
    if ((rc = mark_recent(st, now)) != GI_OK)
        return rc;
    rc = run_chunks(st, now, max_chunks, sqlite, out);
    /* The groups of the hours done are summed even when a chunk failed;
     * marks left behind are summed by a later run. */
    {
        int frc = flush_groups(st, now, sqlite);
        if (rc == GI_OK)
            rc = frc;
    }
    if (rc != GI_OK)
        return rc;
    for (int i = 0; i < max_chunks; i++) {
        if ((rc = usage_redo_chunk(st, now, &n)) != GI_OK)
            return rc;
        if (n == 0)
            break;
        out->redone += n - 1;
    }
    if ((rc = prune(st, now, &out->pruned)) != GI_OK)
        return rc;
    if ((rc = count_of(st, ST_DIRTY_COUNT, &out->dirty_left)) != GI_OK ||
        (rc = count_of(st, ST_GDIRTY_COUNT, &out->groups_left)) != GI_OK ||
        (rc = count_of(st, ST_REDO_COUNT, &out->redo_left)) != GI_OK)
        return rc;
    return actor ? audit_run(st, actor, out) : GI_OK;
}

int store_usage_oldest_dirty(struct store *st, int64_t *hour)
{
    struct conn *c = db_conn_get(st);
    struct db_stmt *s = prep(c, ST_DIRTY_OLDEST);
    bool none = true;
    int rc = s ? usage_fetch_opt_int(c, s, hour, &none) : GI_INTERNAL;

    db_conn_put(st, c);
    if (rc == GI_OK && none)
        rc = GI_NOT_FOUND;
    return rc;
}

int store_usage_keep_days(struct store *st, int64_t now, int retain_days)
{
    int64_t oldest = 0;

    if (store_usage_oldest_dirty(st, &oldest) == GI_OK && oldest - cfg.max_gap_s < now) {
        int64_t need = (now - oldest + cfg.max_gap_s) / 86400 + 2;
        if (need > retain_days)
            return need > 36500 ? 36500 : (int)need;
    }
    return retain_days;
}
