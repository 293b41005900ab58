/* The consumer-day spans: usage_consumers_daily summed over aligned spans
 * of 2, 4, 8, 16 and 32 days (usage_consumer_spans, migration 062), so
 * that the consumer lists read a range of whole days from a few rows per
 * consumer instead of one per day. See usage_spans.h.
 *
 * A span's rows are the sums of the consumer days inside it, always: each
 * writer of usage_consumers_daily rewrites the spans holding the days it
 * rewrote in its own transaction. Rewriting a day re-sums the span of 2
 * days holding it from its two consumer days, then each longer span from
 * its two halves, so that a day costs ten rows read per consumer instead
 * of the 62 consumer days of its five spans; exact, since a span is
 * summed again rather than changed by a difference, and first/last hours
 * and peaks (minima and maxima) cannot be taken back out. */
#include "store/usage_spans.h"
#include "core/status.h"

#include <assert.h>
#include <stdbool.h>
#include <stdlib.h>

/* The columns of a span row, and their sums over the rows of a source
 * (alias x) grouped by the consumer day's key. */
#define SPAN_COLS                                                                                  \
    "(len, day, gpu_id, kind, consumer, consumer_team, namespace, pod, container, username, "      \
    "process, tenant, project, team, env, pool, cluster, cloud, model, datacenter_id, host_id, "   \
    "host, currency, hours, idle_hours, first_hour, last_hour, first_idle_hour, held_s, "          \
    "allocated_s, busy_s, alloc_idle_s, util_sum, measured_s, util_max, energy_wh, "               \
    "allocated_cost, busy_cost, alloc_idle_cost, unpriced_s, updated_at) "
#define SPAN_SUMS                                                                                  \
    "x.gpu_id, x.kind, x.consumer, x.consumer_team, MAX(x.namespace), MAX(x.pod), "                \
    "MAX(x.container), MAX(x.username), MAX(x.process), MAX(x.tenant), MAX(x.project), x.team, "   \
    "x.env, x.pool, x.cluster, x.cloud, x.model, x.datacenter_id, x.host_id, MAX(x.host), "        \
    "x.currency, SUM(x.hours), SUM(x.idle_hours), MIN(x.first_hour), MAX(x.last_hour), "           \
    "MIN(x.first_idle_hour), SUM(x.held_s), SUM(x.allocated_s), SUM(x.busy_s), "                   \
    "SUM(x.alloc_idle_s), SUM(x.util_sum), SUM(x.measured_s), MAX(x.util_max), "                   \
    "SUM(x.energy_wh), SUM(x.allocated_cost), SUM(x.busy_cost), SUM(x.alloc_idle_cost), "          \
    "SUM(x.unpriced_s), MAX(x.updated_at) "
#define SPAN_KEY                                                                                   \
    "x.gpu_id, x.kind, x.consumer, x.consumer_team, x.team, x.env, x.pool, x.cluster, x.cloud, "   \
    "x.model, x.datacenter_id, x.host_id, x.currency"
/* One span [:start, :end) of :len days from the rows of src (its halves,
 * or the consumer days) that `where` selects. */
#define SPAN_ADD(src, where)                                                                       \
    "INSERT INTO usage_consumer_spans " SPAN_COLS "SELECT CAST(:len AS BIGINT), CAST(:start AS "   \
    "BIGINT), " SPAN_SUMS "FROM " src " x WHERE " where " x.day >= :start AND x.day < :end "       \
    "GROUP BY " SPAN_KEY
/* Every span of :len days of the rows of src that `where` selects. */
#define SPAN_FILL(src, where)                                                                      \
    "INSERT INTO usage_consumer_spans " SPAN_COLS "SELECT CAST(:len AS BIGINT), MIN(x.day) - "     \
    "MIN(x.day) % CAST(:span AS BIGINT), " SPAN_SUMS "FROM " src " x WHERE " where                 \
    " GROUP BY x.day / CAST(:span AS BIGINT), " SPAN_KEY

#define STATEMENTS(X)                                                                              \
    X(DEL_GPU, "DELETE FROM usage_consumer_spans WHERE gpu_id = :gid AND len = :len AND day = "    \
               ":start")                                                                           \
    X(ADD_GPU_DAYS, SPAN_ADD("usage_consumers_daily", "x.gpu_id = :gid AND"))                      \
    X(ADD_GPU_HALVES, SPAN_ADD("usage_consumer_spans", "x.gpu_id = :gid AND x.len = :half AND"))   \
    X(DEL_ALL, "DELETE FROM usage_consumer_spans WHERE len = :len AND day = :start")               \
    X(ADD_ALL_DAYS, SPAN_ADD("usage_consumers_daily", ""))                                         \
    X(ADD_ALL_HALVES, SPAN_ADD("usage_consumer_spans", "x.len = :half AND"))                       \
    X(DROP_GPU, "DELETE FROM usage_consumer_spans WHERE gpu_id = :gid")                            \
    X(FILL_GPU_DAYS, SPAN_FILL("usage_consumers_daily", "x.gpu_id = :gid"))                        \
    X(FILL_GPU_HALVES, SPAN_FILL("usage_consumer_spans", "x.gpu_id = :gid AND x.len = :half"))     \
    /* The same as DEL_GPU, ADD_GPU_DAYS, ADD_GPU_HALVES for a set of GPUs                         \
     * (:ids, a JSON array), each found by its own key (SQLite). */                                \
    X(DEL_SET_SQLITE, "DELETE FROM usage_consumer_spans WHERE gpu_id IN (SELECT value FROM "       \
                      "json_each(:ids)) AND len = :len AND day = :start")                          \
    X(ADD_SET_DAYS_SQLITE,                                                                         \
      SPAN_ADD("usage_consumers_daily", "x.gpu_id IN (SELECT value FROM json_each(:ids)) AND"))    \
    X(ADD_SET_HALVES_SQLITE,                                                                       \
      SPAN_ADD("usage_consumer_spans",                                                             \
               "x.gpu_id IN (SELECT value FROM json_each(:ids)) AND x.len = :half AND"))           \
    X(DEL_SET_PG, "DELETE FROM usage_consumer_spans WHERE gpu_id = ANY(CAST(:ids AS BIGINT[])) "   \
                  "AND len = :len AND day = :start")                                               \
    X(ADD_SET_DAYS_PG,                                                                             \
      SPAN_ADD("usage_consumers_daily", "x.gpu_id = ANY(CAST(:ids AS BIGINT[])) AND"))             \
    X(ADD_SET_HALVES_PG, SPAN_ADD("usage_consumer_spans",                                          \
                                  "x.gpu_id = ANY(CAST(:ids AS BIGINT[])) AND x.len = :half AND"))

enum stmt_id { STATEMENTS(STORE_AS_ENUM) ST__COUNT };
static const char *const stmt_sql[] = {STATEMENTS(STORE_AS_SQL)};

static struct db_stmt *prep(struct conn *c, enum stmt_id id) { return db_prep(c, stmt_sql[id]); }

/* ---- the cover of a range ---- */

/* The largest power of two (at most USAGE_SPAN_TOP) that divides day
 * number n (n = 0: USAGE_SPAN_TOP). */
static int64_t align_of(int64_t n)
{
    int64_t l = 1;

    while (l < USAGE_SPAN_TOP && n % (2 * l) == 0)
        l *= 2;
    return l;
}

void usage_span_cover(int64_t dfrom, int64_t dto, struct usage_span_cover *cv)
{
    int64_t a = dfrom / 86400, b = dto / 86400;

    for (int i = 0; i < USAGE_SPAN_LEVELS; i++)
        cv->at[i][0] = cv->at[i][1] = -1;
    cv->top_lo = cv->top_hi = 0;
    /* Greedy from the left: the longest aligned span that starts at a and
     * fits. The lengths rise to the longest, which repeat, then fall, so
     * each shorter length comes at most twice (once rising, once
     * falling) and the longest spans are consecutive. */
    while (a < b) {
        int64_t l = align_of(a);
        while (a + l > b)
            l /= 2;
        if (l == USAGE_SPAN_TOP) {
            if (cv->top_lo == cv->top_hi)
                cv->top_lo = a * 86400;
            cv->top_hi = (a + l) * 86400;
        } else {
            int i = 0;
            while (((int64_t)1 << i) < l)
                i++;
            assert(cv->at[i][1] < 0);
            cv->at[i][cv->at[i][0] < 0 ? 0 : 1] = a * 86400;
        }
        a += l;
    }
}

void usage_span_bind(struct db_stmt *s, const struct usage_span_cover *cv)
{
    static const char *const names[USAGE_SPAN_LEVELS][2] = {
        {":s1a", ":s1b"}, {":s2a", ":s2b"}, {":s4a", ":s4b"}, {":s8a", ":s8b"}, {":s16a", ":s16b"}};

    for (int i = 0; i < USAGE_SPAN_LEVELS; i++) {
        db_bind_int(s, names[i][0], cv->at[i][0]);
        db_bind_int(s, names[i][1], cv->at[i][1]);
    }
    db_bind_int(s, ":m1", cv->top_lo);
    db_bind_int(s, ":m2", cv->top_hi);
}

/* ---- writing ---- */

/* Binds the span of len days holding `day` (and its halves' length). */
static void bind_span(struct db_stmt *s, int64_t len, int64_t day)
{
    int64_t span = len * 86400, start = day - day % span;

    db_bind_int(s, ":len", len);
    db_bind_int(s, ":half", len / 2);
    db_bind_int(s, ":start", start);
    db_bind_int(s, ":end", start + span);
}

/* Replaces the spans of every length holding `day`, of GPU gid (gid > 0)
 * or of every GPU (gid 0): each deleted, then summed from the rows below
 * it (the consumer days for the shortest). */
static int rewrite_spans(struct conn *c, int64_t gid, int64_t day)
{
    int rc = GI_OK;

    for (int64_t len = 2; len <= USAGE_SPAN_TOP && rc == GI_OK; len *= 2) {
        struct db_stmt *s = prep(c, gid ? ST_DEL_GPU : ST_DEL_ALL);
        if (s == NULL)
            return GI_INTERNAL;
        db_bind_int(s, ":gid", gid);
        bind_span(s, len, day);
        if ((rc = db_exec_done(c, s)) != GI_OK)
            break;
        if (len == 2)
            s = prep(c, gid ? ST_ADD_GPU_DAYS : ST_ADD_ALL_DAYS);
        else
            s = prep(c, gid ? ST_ADD_GPU_HALVES : ST_ADD_ALL_HALVES);
        if (s == NULL)
            return GI_INTERNAL;
        db_bind_int(s, ":gid", gid);
        bind_span(s, len, day);
        rc = db_exec_done(c, s);
    }
    return rc;
}

int usage_spans_write_day(struct conn *c, int64_t gid, int64_t day)
{
    if (gid <= 0)
        return GI_INVALID;
    return rewrite_spans(c, gid, day);
}

int usage_spans_prune_day(struct conn *c, int64_t day) { return rewrite_spans(c, 0, day); }

/* A statement per span length for all the GPUs, each GPU's rows found by
 * their keys. */
int usage_spans_write_days(struct conn *c, const int64_t *gids, size_t n, int64_t day)
{
    bool pg = db_dialect(c) == DB_PG;
    int rc = GI_OK;

    if (n == 0)
        return GI_OK;
    for (int64_t len = 2; len <= USAGE_SPAN_TOP && rc == GI_OK; len *= 2) {
        struct db_stmt *s = prep(c, pg ? ST_DEL_SET_PG : ST_DEL_SET_SQLITE);
        if (s == NULL || !db_bind_ids(c, s, ":ids", gids, n))
            return GI_INTERNAL;
        bind_span(s, len, day);
        if ((rc = db_exec_done(c, s)) != GI_OK)
            break;
        if (len == 2)
            s = prep(c, pg ? ST_ADD_SET_DAYS_PG : ST_ADD_SET_DAYS_SQLITE);
        else
            s = prep(c, pg ? ST_ADD_SET_HALVES_PG : ST_ADD_SET_HALVES_SQLITE);
        if (s == NULL || !db_bind_ids(c, s, ":ids", gids, n))
            return GI_INTERNAL;
        bind_span(s, len, day);
        rc = db_exec_done(c, s);
    }
    return rc;
}

int usage_spans_rebuild_gpu(struct conn *c, int64_t gid)
{
    struct db_stmt *s = prep(c, ST_DROP_GPU);
    int rc;

    if (s == NULL)
        return GI_INTERNAL;
    db_bind_int(s, ":gid", gid);
    if ((rc = db_exec_done(c, s)) != GI_OK)
        return rc;
    for (int64_t len = 2; len <= USAGE_SPAN_TOP && rc == GI_OK; len *= 2) {
        if ((s = prep(c, len == 2 ? ST_FILL_GPU_DAYS : ST_FILL_GPU_HALVES)) == NULL)
            return GI_INTERNAL;
        db_bind_int(s, ":gid", gid);
        db_bind_int(s, ":len", len);
        db_bind_int(s, ":half", len / 2);
        db_bind_int(s, ":span", len * 86400);
        rc = db_exec_done(c, s);
    }
    return rc;
}
