/* Usage history of one GPU record merged into another's (a cloud
 * placeholder into the real GPU an agent on its instance reported), inside
 * the caller's writing transaction. See store_int.h (usage_merge_gpu) and
 * docs/ARCHITECTURE.md ("Cloud instances").
 *
 * - An hour only `from` has moves to `to`: its hourly row and consumer
 *   rows; an hour both have keeps `to`'s rows and drops `from`'s, so an
 *   hour is never counted twice. Days follow: a day only `from` has moves
 *   whole (its hours may be past the hourly retention), every other day
 *   `from` touched is summed again from `to`'s hours; the same for the
 *   consumer days, and the consumer-day spans of both GPUs are summed
 *   again from their consumer days (usage_spans.c), and the totals of
 *   every consumer either held on any day from what they hold after the
 *   merge (usage_consumer_totals.c).
 * - Allocation intervals move to `to`; `from`'s marks for the rollup job
 *   become `to`'s, and every hour whose rows changed is marked in
 *   usage_groups_dirty so that the group tables are summed again; the
 *   blocks of owned seconds of both GPUs (usage_gpu_blocks.c) are summed
 *   again at once, since a day moved whole marks no hour.
 * - Recomputing a moved hour later finds `to` owned in it: usage_hour.c
 *   owns a GPU from the start of the placeholders merged into it
 *   (cloud_gpus.superseded_by), as it does from an inventory
 *   registration. */
#include "store/store_int.h"
#include "store/usage_int.h"
#include "store/usage_consumer_totals.h"
#include "store/usage_spans.h"
#include "core/status.h"

#include <stdlib.h>

#define STATEMENTS(X)                                                                              \
    X(GROUPS_MARK, "INSERT INTO usage_groups_dirty (hour, marked_at) SELECT DISTINCT hour, "       \
                   "CAST(:now AS BIGINT) FROM usage_hourly WHERE gpu_id = :from ON CONFLICT "      \
                   "(hour) DO NOTHING")                                                            \
    X(DAYS_OF, "SELECT DISTINCT hour - hour % 86400 FROM usage_hourly WHERE gpu_id = :from "       \
               "ORDER BY 1")                                                                       \
    X(CONS_MOVE, "UPDATE usage_consumers SET gpu_id = :to WHERE gpu_id = :from AND hour NOT IN "   \
                 "(SELECT hour FROM usage_hourly WHERE gpu_id = :to UNION SELECT hour FROM "       \
                 "usage_consumers WHERE gpu_id = :to)")                                            \
    X(HOUR_MOVE, "UPDATE usage_hourly SET gpu_id = :to WHERE gpu_id = :from AND hour NOT IN "      \
                 "(SELECT hour FROM usage_hourly WHERE gpu_id = :to)")                             \
    X(CONS_DROP, "DELETE FROM usage_consumers WHERE gpu_id = :from")                               \
    X(HOUR_DROP, "DELETE FROM usage_hourly WHERE gpu_id = :from")                                  \
    X(DAY_MOVE, "UPDATE usage_daily SET gpu_id = :to WHERE gpu_id = :from AND day NOT IN "         \
                "(SELECT day FROM usage_daily WHERE gpu_id = :to)")                                \
    X(CDAY_MOVE, "UPDATE usage_consumers_daily SET gpu_id = :to WHERE gpu_id = :from AND day NOT " \
                 "IN (SELECT day FROM usage_consumers_daily WHERE gpu_id = :to)")                  \
    X(DAY_DROP, "DELETE FROM usage_daily WHERE gpu_id = :from")                                    \
    X(CDAY_DROP, "DELETE FROM usage_consumers_daily WHERE gpu_id = :from")                         \
    X(IV_MOVE, "UPDATE usage_intervals SET gpu_id = :to WHERE gpu_id = :from")                     \
    X(DIRTY_MOVE, "INSERT INTO usage_dirty (hour, gpu_id, marked_at, gen) SELECT hour, "           \
                  "CAST(:to AS BIGINT), marked_at, gen FROM usage_dirty WHERE gpu_id = :from ON "  \
                  "CONFLICT (hour, gpu_id) DO NOTHING")                                            \
    X(DIRTY_DROP, "DELETE FROM usage_dirty WHERE gpu_id = :from")

enum stmt_id { STATEMENTS(STORE_AS_ENUM) ST__COUNT };
static const char *const stmt_sql[] = {STATEMENTS(STORE_AS_SQL)};

static struct db_stmt *prep(struct conn *c, enum stmt_id id) { return db_prep(c, stmt_sql[id]); }

/* Runs statement id with :from and :to bound (where it names them). */
static int run2(struct conn *c, enum stmt_id id, int64_t from, int64_t to, int64_t now)
{
    struct db_stmt *s = prep(c, id);

    if (!s)
        return GI_INTERNAL;
    db_bind_int(s, ":from", from);
    db_bind_int(s, ":to", to);
    db_bind_int(s, ":now", now);
    return db_exec_done(c, s);
}

/* The days `from` has hourly rows in (caller frees *days). */
static int days_of(struct conn *c, int64_t from, int64_t **days, size_t *n)
{
    struct db_stmt *s = prep(c, ST_DAYS_OF);
    size_t cap = 0;
    int step;

    *days = NULL;
    *n = 0;
    if (!s)
        return GI_INTERNAL;
    db_bind_int(s, ":from", from);
    while ((step = db_step(c, s)) == DB_ROW) {
        if (*n == cap) {
            int64_t *p = realloc(*days, (cap ? cap * 2 : 16) * sizeof **days);
            if (!p) {
                db_reset(s);
                return GI_INTERNAL;
            }
            *days = p;
            cap = cap ? cap * 2 : 16;
        }
        (*days)[(*n)++] = db_col_int(s, 0);
    }
    db_reset(s);
    return step == DB_DONE ? GI_OK : db_status(step);
}

int usage_merge_gpu(struct conn *c, int64_t from, int64_t to, int64_t now)
{
    static const enum stmt_id moves[] = {ST_GROUPS_MARK, ST_CONS_MOVE, ST_HOUR_MOVE, ST_CONS_DROP,
                                         ST_HOUR_DROP,   ST_DAY_MOVE,  ST_CDAY_MOVE};
    static const enum stmt_id drops[] = {ST_DAY_DROP, ST_CDAY_DROP, ST_IV_MOVE, ST_DIRTY_MOVE,
                                         ST_DIRTY_DROP};
    int64_t *days = NULL, both[2] = {from, to};
    struct usage_ctot_keys k = {0};
    size_t ndays = 0;
    int rc;

    if (from <= 0 || to <= 0 || from == to)
        return GI_INVALID;
    /* the consumers of both GPUs' days, whose totals are summed again at
     * the end from what the two hold then */
    if ((rc = usage_ctot_note(c, both, 2, -1, &k)) != GI_OK ||
        (rc = days_of(c, from, &days, &ndays)) != GI_OK)
        goto cleanup;
    for (size_t i = 0; i < sizeof moves / sizeof *moves && rc == GI_OK; i++)
        rc = run2(c, moves[i], from, to, now);
    /* Days both had (or whose hours moved in beside to's) are summed
     * again from to's hours. */
    for (size_t i = 0; i < ndays && rc == GI_OK; i++)
        if ((rc = usage_write_day(c, to, days[i], now)) == GI_OK)
            rc = usage_write_consumer_day(c, to, days[i], now);
    for (size_t i = 0; i < sizeof drops / sizeof *drops && rc == GI_OK; i++)
        rc = run2(c, drops[i], from, to, now);
    if (rc == GI_OK) /* every day of to's may have changed, moved whole or summed again */
        rc = usage_gpu_blocks_merge(c, from, to, now);
    /* The consumer days that moved whole (and those from dropped) change
     * the spans of both: summed again from what each has now. */
    if (rc == GI_OK && (rc = usage_spans_rebuild_gpu(c, from)) == GI_OK)
        rc = usage_spans_rebuild_gpu(c, to);
    if (rc == GI_OK)
        rc = usage_ctot_refresh(c, both, 2, -1, &k);
cleanup:
    usage_ctot_keys_free(&k);
    free(days);
    return rc;
}
