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
#include "core/log.h"
#include "core/status.h"
#include "core/util.h"

#include <math.h>
#include <stdatomic.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>

/* GPUs of one hour whose samples are read at once (a pass), GPUs per
 * chunk transaction (each one a key the chunk locks), and chunks per job
 * run. */
#define PASS_GPUS 512
#define CHUNK_GPUS DB_LOCK_KEYS_MAX
#define RUN_CHUNKS 1600
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
/* Rows of usage_redo worked per chunk. */
#define REDO_ROWS 500
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
    X(REDO_FIRST, "SELECT id, what, gpu_id, next_hour, next_gpu FROM usage_redo ORDER BY id "      \
                  "LIMIT 1")                                                                       \
    X(REDO_ROWS_Q,                                                                                 \
      "SELECT u.gpu_id, u.hour, g.model, u.env, u.cloud, u.pool FROM usage_hourly u LEFT JOIN "    \
      "gpus g ON g.id = u.gpu_id WHERE (:gid = 0 OR u.gpu_id = :gid) AND (u.hour > :hour OR "      \
      "(u.hour = :hour AND u.gpu_id >= :next)) ORDER BY u.hour, u.gpu_id LIMIT :n")                \
    X(REDO_MOVE, "UPDATE usage_redo SET next_hour = :hour, next_gpu = :next WHERE id = :id")       \
    X(REDO_DONE, "DELETE FROM usage_redo WHERE id = :id")                                          \
    X(REDO_COUNT, "SELECT COUNT(*) FROM usage_redo")                                               \
    X(SET_OWNER, "UPDATE usage_hourly SET team = :team, env = :env, pool = :pool, cluster = "      \
                 ":cluster, cloud = :cloud, updated_at = :now WHERE gpu_id = :gid AND hour = "     \
                 ":hour")                                                                          \
    X(SET_RATE, "UPDATE usage_hourly SET rate_micros = :rate, currency = :currency, price_id = "   \
                ":price, updated_at = :now WHERE gpu_id = :gid AND hour = :hour")                  \
    X(CONS_OF_HOUR, "SELECT kind, consumer, COALESCE(namespace, ''), COALESCE(username, ''), "     \
                    "COALESCE(project, '') FROM usage_consumers WHERE gpu_id = :gid AND hour = "   \
                    ":hour")                                                                       \
    X(CONS_TEAM, "UPDATE usage_consumers SET team = :team WHERE gpu_id = :gid AND hour = :hour "   \
                 "AND kind = :kind AND consumer = :consumer")                                      \
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
    X(PRUNE_CDAYS, "DELETE FROM usage_consumers_daily WHERE day = (SELECT MIN(day) FROM "          \
                   "usage_consumers_daily WHERE day < :cut)")

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
int usage_write_consumer_day(struct conn *c, int64_t gid, int64_t day, int64_t now)
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

/* The (GPU, day) pairs whose consumer days a redo chunk re-sums once it
 * has applied its rows. */
struct gpu_days {
    int64_t (*v)[2];
    size_t n, cap;
};

/* Adds (gid, day) unless it is there already; false when out of memory. */
static bool gpu_days_add(struct gpu_days *d, int64_t gid, int64_t day)
{
    for (size_t i = d->n; i > 0; i--)
        if (d->v[i - 1][0] == gid && d->v[i - 1][1] == day)
            return true;
    if (d->n == d->cap) {
        size_t cap = d->cap ? d->cap * 2 : 64;
        int64_t(*p)[2] = realloc(d->v, cap * sizeof *p);
        if (!p)
            return false;
        d->v = p;
        d->cap = cap;
    }
    d->v[d->n][0] = gid;
    d->v[d->n][1] = day;
    d->n++;
    return true;
}

/* Re-sums every pair's consumer day, inside the caller's transaction. */
static int gpu_days_write(struct conn *c, const struct gpu_days *d, int64_t now)
{
    int rc = GI_OK;

    for (size_t i = 0; i < d->n && rc == GI_OK; i++)
        rc = usage_write_consumer_day(c, d->v[i][0], d->v[i][1], now);
    return rc;
}

/* Deletes the consumer days past the daily retention, one day per
 * transaction. */
static int prune_consumer_days(struct store *st, int64_t now, int64_t *removed)
{
    int64_t n;
    int rc;

    do {
        struct conn *c = db_conn_get(st);
        struct db_stmt *s;
        n = 0;
        rc = db_tx_begin(c);
        if (rc == GI_OK && !(s = prep(c, ST_PRUNE_CDAYS)))
            rc = GI_INTERNAL;
        if (rc == GI_OK) {
            db_bind_int(s, ":cut", now - (int64_t)cfg.retain_daily_days * 86400);
            if ((rc = db_exec_done(c, s)) == GI_OK)
                n = db_changes(c);
        }
        rc = db_tx_end(c, rc);
        db_conn_put(st, c);
        *removed += rc == GI_OK ? n : 0;
    } while (rc == GI_OK && n > 0);
    return rc;
}

/* Replaces the hour's rows of usage_groups_hourly by the sums of its
 * usage_hourly rows, and the hour's rows of usage_team_hours by the sums
 * of those, inside the caller's transaction (which wrote them). */
static int write_hour_groups(struct conn *c, int64_t hour, int64_t now)
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

/* One chunk: up to `limit` GPUs of the pass from p->next on, in one
 * transaction that locks those GPUs' keys (a push of one of them waits
 * for it, or it for the push), taking no more of them once
 * CHUNK_BUDGET_MS have passed. *hours counts the GPU-hours done; the pass
 * moves past them only when the chunk commits. */
static int run_chunk(struct store *st, int64_t now, struct pass *p, size_t limit, int64_t *hours)
{
    struct conn *c = db_conn_get(st);
    struct db_stmt *s;
    int kinds[CHUNK_GPUS];
    const char *names[CHUNK_GPUS];
    int64_t start = mono_ms();
    size_t end, at = p->at, i;
    int nkeys = 0;
    int rc;

    *hours = 0;
    if (limit > CHUNK_GPUS)
        limit = CHUNK_GPUS;
    end = p->next + limit < p->nids ? p->next + limit : p->nids;
    for (i = p->next; i < end; i++)
        if (p->ids[i].uuid[0] != '\0') {
            kinds[nkeys] = DB_LOCK_GPU;
            names[nkeys++] = p->ids[i].uuid;
        }
    rc = db_tx_begin_keyed(c, kinds, names, nkeys);
    for (i = p->next; i < end && rc == GI_OK; i++) {
        const struct chunk_gpu *g = &p->ids[i];
        size_t from;
        if (i > p->next && mono_ms() - start >= CHUNK_BUDGET_MS)
            break;
        while (at < p->n && p->xs[at].gpu < g->id)
            at++;
        from = at;
        while (at < p->n && p->xs[at].gpu == g->id)
            at++;
        rc = usage_compute_hour(c, g->id, p->hour, now, p->xs + from, at - from, p->xs, p->n);
        if (rc == GI_OK)
            rc = usage_write_consumer_day(c, g->id, p->hour - p->hour % 86400, now);
        if (rc == GI_OK) {
            rc = GI_INTERNAL;
            if ((s = prep(c, ST_DIRTY_DONE_GEN))) {
                db_bind_int(s, ":hour", p->hour);
                db_bind_int(s, ":gid", g->id);
                db_bind_int(s, ":gen", g->gen);
                rc = db_exec_done(c, s);
            }
        }
    }
    if (rc == GI_OK)
        rc = groups_mark(c, p->hour, now);
    rc = db_tx_end(c, rc);
    db_conn_put(st, c);
    if (rc == GI_OK) {
        *hours = (int64_t)(i - p->next);
        p->next = i;
        p->at = at;
    }
    return rc;
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
    if ((rc = write_hour_groups(c, hours[0], now)) != GI_OK)
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

/* Re-resolves the consumer teams of one GPU-hour after an owner change. */
static int redo_consumers(struct conn *c, int64_t gid, int64_t hour, const char *owner_team)
{
    struct db_stmt *s = prep(c, ST_CONS_OF_HOUR);
    json_t *rows = json_array(), *row;
    size_t i;
    int step, rc = GI_OK;

    if (!s || !rows) {
        json_decref(rows);
        return GI_INTERNAL;
    }
    db_bind_int(s, ":gid", gid);
    db_bind_int(s, ":hour", hour);
    while ((step = db_step(c, s)) == DB_ROW)
        json_array_append_new(rows,
                              json_pack("[sssss]", db_col_text(s, 0), db_col_text(s, 1),
                                        db_col_text(s, 2), db_col_text(s, 3), db_col_text(s, 4)));
    db_reset(s);
    if (step != DB_DONE)
        rc = db_status(step);
    json_array_foreach(rows, i, row) {
        const char *kind = json_string_value(json_array_get(row, 0));
        const char *ns = json_string_value(json_array_get(row, 2));
        const char *user = json_string_value(json_array_get(row, 3));
        const char *project = json_string_value(json_array_get(row, 4));
        char team[OWNER_LEN] = "";
        if (rc != GI_OK || !kind || !ns || !user || !project)
            break;
        if ((rc = usage_consumer_team(c, kind, ns, project, user, hour, owner_team, team,
                                      sizeof team)) != GI_OK)
            break;
        rc = GI_INTERNAL;
        if (!(s = prep(c, ST_CONS_TEAM)))
            break;
        db_bind_opt_text(s, ":team", team);
        db_bind_int(s, ":gid", gid);
        db_bind_int(s, ":hour", hour);
        db_bind_text(s, ":kind", kind);
        db_bind_text(s, ":consumer", json_string_value(json_array_get(row, 1)));
        rc = db_exec_done(c, s);
    }
    json_decref(rows);
    return rc;
}

/* Applies one row of a re-attribution or re-pricing. */
static int redo_row(struct conn *c, bool owner, int64_t gid, int64_t hour, const char *model,
                    const char *env, const char *cloud, const char *pool, int64_t now)
{
    struct db_stmt *s;
    int rc;

    if (owner) {
        struct owner_fields o;
        rc = owner_resolve(c, gid, hour, &o);
        if (rc == GI_NOT_FOUND)
            return GI_OK;
        if (rc != GI_OK || !(s = prep(c, ST_SET_OWNER)))
            return rc != GI_OK ? rc : GI_INTERNAL;
        db_bind_opt_text(s, ":team", o.team);
        db_bind_opt_text(s, ":env", o.env);
        db_bind_opt_text(s, ":pool", o.pool);
        db_bind_opt_text(s, ":cluster", o.cluster);
        db_bind_opt_text(s, ":cloud", o.cloud);
        db_bind_int(s, ":now", now);
        db_bind_int(s, ":gid", gid);
        db_bind_int(s, ":hour", hour);
        if ((rc = db_exec_done(c, s)) == GI_OK)
            rc = redo_consumers(c, gid, hour, o.team);
        return rc;
    }
    {
        int64_t rate = 0, price = 0;
        char cur[4] = "";
        rc = price_rate(c, model, env, cloud, pool, hour, &rate, cur, &price);
        if (rc != GI_OK && rc != GI_NOT_FOUND)
            return rc;
        if (!(s = prep(c, ST_SET_RATE)))
            return GI_INTERNAL;
        db_bind_opt_int(s, ":rate", rc == GI_OK ? rate : -1);
        db_bind_opt_text(s, ":currency", rc == GI_OK ? cur : "");
        db_bind_opt_int(s, ":price", rc == GI_OK && price > 0 ? price : -1);
        db_bind_int(s, ":now", now);
        db_bind_int(s, ":gid", gid);
        db_bind_int(s, ":hour", hour);
        return db_exec_done(c, s);
    }
}

/* Works REDO_ROWS rows of the oldest queued re-attribution or
 * re-pricing, in one transaction; *rows counts them (0: queue empty). */
static int redo_chunk(struct store *st, int64_t now, int64_t *rows)
{
    struct conn *c = db_conn_get(st);
    struct db_stmt *s;
    json_t *todo = json_array(), *row;
    struct gpu_days days = {0};
    int64_t id = 0, gid = 0, hour = 0, next = 0, last_day = -1, last_gid = 0;
    char what[16] = "";
    size_t i;
    int step, rc = db_tx_begin(c);

    *rows = 0;
    if (rc != GI_OK || !todo)
        goto cleanup;
    rc = GI_INTERNAL;
    if (!(s = prep(c, ST_REDO_FIRST)))
        goto cleanup;
    step = db_step(c, s);
    if (step == DB_ROW) {
        id = db_col_int(s, 0);
        gi_strlcpy(what, db_col_text(s, 1), sizeof what);
        gid = db_col_int(s, 2);
        hour = db_col_int(s, 3);
        next = db_col_int(s, 4);
    }
    db_reset(s);
    rc = step == DB_ROW || step == DB_DONE ? GI_OK : db_status(step);
    if (rc != GI_OK || step == DB_DONE)
        goto cleanup;
    rc = GI_INTERNAL;
    if (!(s = prep(c, ST_REDO_ROWS_Q)))
        goto cleanup;
    db_bind_int(s, ":gid", gid);
    db_bind_int(s, ":hour", hour);
    db_bind_int(s, ":next", next);
    db_bind_int(s, ":n", REDO_ROWS);
    while ((step = db_step(c, s)) == DB_ROW)
        json_array_append_new(todo, db_row_values(s));
    db_reset(s);
    if (step != DB_DONE) {
        rc = db_status(step);
        goto cleanup;
    }
    rc = GI_OK;
    json_array_foreach(todo, i, row) {
        int64_t g = json_integer_value(json_array_get(row, 0));
        int64_t h = json_integer_value(json_array_get(row, 1));
        rc = redo_row(
            c, strcmp(what, "owner") == 0, g, h, json_string_value(json_array_get(row, 2)),
            json_string_value(json_array_get(row, 3)), json_string_value(json_array_get(row, 4)),
            json_string_value(json_array_get(row, 5)), now);
        if (rc == GI_OK && (g != last_gid || h - h % 86400 != last_day))
            rc = usage_write_day(c, g, h - h % 86400, now);
        if (rc == GI_OK && !gpu_days_add(&days, g, h - h % 86400))
            rc = GI_INTERNAL;
        /* rows come by hour: an hour's groups are re-summed once it is done */
        if (rc == GI_OK && last_day >= 0 && h != hour)
            rc = write_hour_groups(c, hour, now);
        /* rows come by hour: a day's groups are re-summed once it is done */
        if (rc == GI_OK && last_day >= 0 && h - h % 86400 != last_day)
            rc = usage_write_groups(c, last_day, now);
        if (rc != GI_OK)
            break;
        last_gid = g;
        last_day = h - h % 86400;
        hour = h;
        next = g + 1;
    }
    if (rc == GI_OK && last_day >= 0)
        rc = write_hour_groups(c, hour, now);
    if (rc == GI_OK && last_day >= 0)
        rc = usage_write_groups(c, last_day, now);
    /* Every hour of a consumer day counts (its owner and rate are keys),
     * so each one touched is re-summed after all the chunk's rows. */
    if (rc == GI_OK)
        rc = gpu_days_write(c, &days, now);
    if (rc != GI_OK)
        goto cleanup;
    rc = GI_INTERNAL;
    if (json_array_size(todo) < REDO_ROWS) {
        if (!(s = prep(c, ST_REDO_DONE)))
            goto cleanup;
    } else {
        if (!(s = prep(c, ST_REDO_MOVE)))
            goto cleanup;
        db_bind_int(s, ":hour", hour);
        db_bind_int(s, ":next", next);
    }
    db_bind_int(s, ":id", id);
    rc = db_exec_done(c, s);
    *rows = (int64_t)json_array_size(todo) + 1;
cleanup:
    rc = db_tx_end(c, rc);
    db_conn_put(st, c);
    json_decref(todo);
    free(days.v);
    if (rc != GI_OK)
        *rows = 0;
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
    if (rc == GI_OK) { /* the groups of the days gone (a few rows a day: one statement) */
        struct conn *c = db_conn_get(st);
        struct db_stmt *s;
        rc = db_tx_begin(c);
        if (rc == GI_OK && !(s = prep(c, ST_PRUNE_GROUPS)))
            rc = GI_INTERNAL;
        if (rc == GI_OK) {
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
 * *out. */
static int run_chunks(struct store *st, int64_t now, int max_chunks, bool sqlite,
                      struct store_usage_run *out)
{
    struct pass p = {0};
    int64_t n = 0, start = mono_ms();
    size_t limit = CHUNK_GPUS;
    int rc = GI_OK;

    for (int i = 0; i < max_chunks; i++) {
        int64_t t = mono_ms();
        if (i > 0 && t - start >= RUN_BUDGET_MS)
            break;
        if (p.next >= p.nids) {
            if ((rc = pass_read(st, now, &p)) != GI_OK || p.nids == 0)
                break;
        }
        rc = run_chunk(st, now, &p, limit, &n);
        if (rc == GI_UNAVAILABLE)
            break;
        if (rc != GI_OK && limit > 1) {
            /* Something in the chunk fails: go on one GPU-hour at a time,
             * so that one bad GPU-hour cannot hold up the others. */
            gi_warn("usage: a rollup chunk failed (%s); going on one GPU-hour at a time",
                    gi_status_name(rc));
            limit = 1;
            rc = GI_OK;
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
        out->hours += n;
        out->chunks++;
        step_aside(sqlite, mono_ms() - t);
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
        if ((rc = redo_chunk(st, now, &n)) != GI_OK)
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
