/* Marking usage for the rollup job (see usage.c): the (GPU, hour) pairs a
 * write touches become dirty with a fresh stamp, and re-attribution and
 * re-pricing queue their redo. See usage_int.h and store_int.h. */
#include "store/store_int.h"
#include "store/usage_int.h"
#include "core/status.h"
#include "core/util.h"

#include <stdatomic.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>

#define STATEMENTS(X)                                                                              \
    X(DIRTY_MARK, "INSERT INTO usage_dirty (hour, gpu_id, marked_at) VALUES (:hour, :gid, :now) "  \
                  "ON CONFLICT (hour, gpu_id) DO NOTHING")                                         \
    X(DIRTY_TOUCH_MANY_PG,                                                                         \
      "INSERT INTO usage_dirty (hour, gpu_id, marked_at, gen) SELECT u.hour, u.gid, CAST(:now AS " \
      "BIGINT), CAST(:gen AS BIGINT) FROM unnest(CAST(:hours AS BIGINT[]), CAST(:gids AS "         \
      "BIGINT[])) AS u(hour, gid) ON CONFLICT (hour, gpu_id) DO UPDATE SET gen = excluded.gen")    \
    X(DIRTY_TOUCH, "INSERT INTO usage_dirty (hour, gpu_id, marked_at, gen) VALUES (:hour, :gid, "  \
                   ":now, :gen) ON CONFLICT (hour, gpu_id) DO UPDATE SET gen = excluded.gen")      \
    X(REDO_ADD, "INSERT INTO usage_redo (what, gpu_id, from_hour, next_hour, next_gpu, "           \
                "created_at) VALUES (:what, :gid, :from, :from, 0, :now)")

enum stmt_id { STATEMENTS(STORE_AS_ENUM) ST__COUNT };
static const char *const stmt_sql[] = {STATEMENTS(STORE_AS_SQL)};

static struct db_stmt *prep(struct conn *c, enum stmt_id id) { return db_prep(c, stmt_sql[id]); }

/* ---- marking ---- */

/* See usage_int.h. */
int usage_mark_hour(struct conn *c, int64_t gpu_id, int64_t hour, int64_t now)
{
    struct db_stmt *s = prep(c, ST_DIRTY_MARK);

    if (!s)
        return GI_INTERNAL;
    db_bind_int(s, ":hour", hour);
    db_bind_int(s, ":gid", gpu_id);
    db_bind_int(s, ":now", now);
    return db_exec_done(c, s);
}

/* See usage_int.h. */
int usage_mark_hours(struct conn *c, int64_t gpu_id, int64_t first, int64_t last, int64_t now)
{
    int rc = GI_OK;

    if (last - first > (int64_t)FILL_MAX_HOURS * 3600)
        first = last - (int64_t)FILL_MAX_HOURS * 3600;
    for (int64_t h = last; h >= first && rc == GI_OK; h -= 3600)
        rc = usage_mark_hour(c, gpu_id, h, now);
    return rc;
}

/* A stamp no earlier mark by new data has: nanoseconds of the clock, one
 * more than the last one this process gave when the clock has not moved. */
static int64_t mark_stamp(void)
{
    static _Atomic int64_t last;
    struct timespec ts;
    int64_t t, prev;

    clock_gettime(CLOCK_REALTIME, &ts);
    t = (int64_t)ts.tv_sec * 1000000000 + ts.tv_nsec;
    prev = atomic_load(&last);
    do {
        if (t <= prev)
            t = prev + 1;
    } while (!atomic_compare_exchange_weak(&last, &prev, t));
    return t;
}

/* A (GPU, hour) to mark, in the order marks are written. */
struct mark {
    int64_t gid, hour;
};

static int mark_cmp(const void *a, const void *b)
{
    const struct mark *x = a, *y = b;

    if (x->gid != y->gid)
        return x->gid < y->gid ? -1 : 1;
    return x->hour < y->hour ? -1 : x->hour > y->hour;
}

/* The hours span x marks onto out (NULL: only counted); returns how many. */
static size_t span_hours(const struct usage_span *x, int64_t now, struct mark *out)
{
    int64_t last = usage_hour_of(x->to_ts + usage_config()->max_gap_s), first;
    size_t n = 0;

    if (x->gpu_id <= 0 || x->to_ts < x->from_ts)
        return 0;
    if (last > usage_hour_of(now))
        last = usage_hour_of(now);
    first = usage_hour_of(x->from_ts - usage_config()->max_gap_s);
    if (last - first > (int64_t)FILL_MAX_HOURS * 3600)
        first = last - (int64_t)FILL_MAX_HOURS * 3600;
    for (int64_t h = first; h <= last; h += 3600, n++)
        if (out)
            out[n] = (struct mark){.gid = x->gpu_id, .hour = h};
    return n;
}

/* The marks: on PostgreSQL one upsert from two array parameters; on
 * SQLite one cached upsert each, the cheapest form there (it has no round
 * trips; a set from json_each costs it more). */
static int marks_write(struct conn *c, const struct mark *m, size_t n, int64_t now, int64_t gen)
{
    bool pg = db_dialect(c) == DB_PG;
    struct db_array hours = {0}, gids = {0};
    struct db_stmt *s;
    int rc = GI_OK;

    for (size_t i = 0; i < n && rc == GI_OK; i++) {
        if (pg) {
            db_array_int(&hours, m[i].hour);
            db_array_int(&gids, m[i].gid);
        } else if ((s = prep(c, ST_DIRTY_TOUCH)) == NULL) {
            rc = GI_INTERNAL;
        } else {
            db_bind_int(s, ":hour", m[i].hour);
            db_bind_int(s, ":gid", m[i].gid);
            db_bind_int(s, ":now", now);
            db_bind_int(s, ":gen", gen);
            rc = db_exec_done(c, s);
        }
    }
    if (rc == GI_OK && pg) {
        if (hours.failed || gids.failed || (s = prep(c, ST_DIRTY_TOUCH_MANY_PG)) == NULL) {
            rc = GI_INTERNAL;
        } else {
            db_bind_array(s, ":hours", &hours);
            db_bind_array(s, ":gids", &gids);
            db_bind_int(s, ":now", now);
            db_bind_int(s, ":gen", gen);
            rc = db_exec_done(c, s);
        }
    }
    db_array_free(&hours);
    db_array_free(&gids);
    return rc;
}

int usage_mark_many(struct conn *c, const struct usage_span *spans, size_t n)
{
    int64_t now = gi_now();
    struct mark *m;
    size_t total = 0, k = 0;
    int rc;

    for (size_t i = 0; i < n; i++)
        total += span_hours(&spans[i], now, NULL);
    if (total == 0)
        return GI_OK;
    if ((m = malloc(total * sizeof *m)) == NULL)
        return GI_INTERNAL;
    for (size_t i = 0; i < n; i++)
        k += span_hours(&spans[i], now, m + k);
    /* Each (GPU, hour) once: one statement may not upsert a row twice. */
    qsort(m, total, sizeof *m, mark_cmp);
    k = 0;
    for (size_t i = 0; i < total; i++)
        if (k == 0 || mark_cmp(&m[k - 1], &m[i]) != 0)
            m[k++] = m[i];
    rc = marks_write(c, m, k, now, mark_stamp());
    free(m);
    return rc;
}

int usage_mark(struct conn *c, int64_t gpu_id, int64_t from_ts, int64_t to_ts)
{
    const struct usage_span x = {.gpu_id = gpu_id, .from_ts = from_ts, .to_ts = to_ts};

    return usage_mark_many(c, &x, 1);
}

int usage_reattribute(struct conn *c, int64_t gpu_id, int64_t from)
{
    struct db_stmt *s = prep(c, ST_REDO_ADD);

    if (!s)
        return GI_INTERNAL;
    db_bind_text(s, ":what", "owner");
    db_bind_int(s, ":gid", gpu_id > 0 ? gpu_id : 0);
    db_bind_int(s, ":from", usage_hour_of(from));
    db_bind_int(s, ":now", gi_now());
    return db_exec_done(c, s);
}

int usage_reprice(struct conn *c, int64_t from)
{
    struct db_stmt *s = prep(c, ST_REDO_ADD);

    if (!s)
        return GI_INTERNAL;
    db_bind_text(s, ":what", "price");
    db_bind_int(s, ":gid", 0);
    db_bind_int(s, ":from", usage_hour_of(from));
    db_bind_int(s, ":now", gi_now());
    return db_exec_done(c, s);
}
