/* The consumer totals: usage_consumers_daily summed over the GPUs of each
 * consumer and day (usage_consumer_totals, migration 065), so that the
 * usage report by consumer reads a row per consumer, day, block of 64 GPU
 * ids and combination of the dimensions it filters by, instead of one per
 * GPU. See usage_consumer_totals.h.
 *
 * The totals are the sums of the consumer days there are, always: each
 * writer of usage_consumers_daily sums the totals of the consumers whose
 * days it rewrote again in its own transaction, from their consumer days
 * (found through the index on day, consumer and GPU), rather than
 * changing them by a difference, which would not give back the same sums.
 * The blocks bound that work: rewriting a chunk's GPUs sums a consumer
 * that thousands of GPUs hold (consumer "unknown") from the consumer days
 * of the chunk's blocks only. */
#include "store/usage_consumer_totals.h"
#include "core/status.h"

#include <jansson.h>
#include <stdbool.h>
#include <stdlib.h>
#include <string.h>

/* The GPU ids of a block of the totals: [block * 64, block * 64 + 64)
 * (NOTE_COLS and migration 065 divide by the same 64). */
#define BLOCK_GPUS 64

/* The consumer days' rows of the totals of one day and block of GPUs,
 * grouped by their key, each consumer's rows numbered (part). */
#define TOTAL_ADD(where)                                                                           \
    "INSERT INTO usage_consumer_totals (day, kind, consumer, gpu_block, part, team, env, pool, "   \
    "cluster, cloud, model, datacenter_id, currency, gpu_rows, allocated_s, busy_s, "              \
    "alloc_idle_s, util_sum, measured_s, energy_wh, allocated_cost, busy_cost, alloc_idle_cost, "  \
    "unpriced_s, updated_at) SELECT x.day, x.kind, x.consumer, CAST(:block AS BIGINT), "           \
    "ROW_NUMBER() OVER (PARTITION BY x.kind, x.consumer), x.team, x.env, x.pool, x.cluster, "      \
    "x.cloud, x.model, x.datacenter_id, x.currency, COUNT(*), SUM(x.allocated_s), "                \
    "SUM(x.busy_s), SUM(x.alloc_idle_s), SUM(x.util_sum), SUM(x.measured_s), SUM(x.energy_wh), "   \
    "SUM(x.allocated_cost), SUM(x.busy_cost), SUM(x.alloc_idle_cost), SUM(x.unpriced_s), "         \
    "MAX(x.updated_at) FROM usage_consumers_daily x WHERE x.day = :day" where                      \
    " AND x.gpu_id >= :lo AND x.gpu_id < :hi GROUP BY x.day, x.kind, x.consumer, x.team, x.env, "  \
    "x.pool, x.cluster, x.cloud, x.model, x.datacenter_id, x.currency"
/* The consumers :names, a JSON array of strings. */
#define NAMES_SQLITE " IN (SELECT value FROM json_each(:names))"
#define NAMES_PG " = ANY(ARRAY(SELECT json_array_elements_text(CAST(:names AS JSON))))"
#define NOTE_COLS "SELECT DISTINCT day, gpu_id / 64, consumer FROM usage_consumers_daily WHERE "
#define DEL_BLOCK "DELETE FROM usage_consumer_totals WHERE day = :day AND gpu_block = :block"

#define STATEMENTS(X)                                                                              \
    X(NOTE_GPU_DAY, NOTE_COLS "gpu_id = :gid AND day = :day")                                      \
    X(NOTE_GPU, NOTE_COLS "gpu_id = :gid")                                                         \
    X(NOTE_SET_SQLITE, NOTE_COLS "gpu_id IN (SELECT value FROM json_each(:ids)) AND day = :day")   \
    X(NOTE_SET_PG, NOTE_COLS "gpu_id = ANY(CAST(:ids AS BIGINT[])) AND day = :day")                \
    X(DEL_SQLITE, DEL_BLOCK " AND consumer" NAMES_SQLITE)                                          \
    X(DEL_PG, DEL_BLOCK " AND consumer" NAMES_PG)                                                  \
    X(ADD_SQLITE, TOTAL_ADD(" AND x.consumer" NAMES_SQLITE))                                       \
    X(ADD_PG, TOTAL_ADD(" AND x.consumer" NAMES_PG))                                               \
    X(LOCK_PG, "SELECT pg_advisory_xact_lock(CAST(:kind AS INT), CAST(:key AS INT))")              \
    X(DEL_ALL_BLOCK, DEL_BLOCK)                                                                    \
    X(ADD_ALL_BLOCK, TOTAL_ADD(""))                                                                \
    X(DEL_DAY, "DELETE FROM usage_consumer_totals WHERE day = :day")

enum stmt_id { STATEMENTS(STORE_AS_ENUM) ST__COUNT };
static const char *const stmt_sql[] = {STATEMENTS(STORE_AS_SQL)};

static struct db_stmt *prep(struct conn *c, enum stmt_id id) { return db_prep(c, stmt_sql[id]); }

void usage_ctot_keys_free(struct usage_ctot_keys *k)
{
    for (size_t i = 0; i < k->n; i++)
        free(k->a[i].consumer);
    free(k->a);
    *k = (struct usage_ctot_keys){0};
}

/* Appends (day, block, consumer) to k (a copy of consumer). */
static int key_add(struct usage_ctot_keys *k, int64_t day, int64_t block, const char *consumer)
{
    char *copy;

    if (k->n == k->cap) {
        size_t ncap = k->cap ? k->cap * 2 : 16;
        struct usage_ctot_key *p = realloc(k->a, ncap * sizeof *p);
        if (!p)
            return GI_INTERNAL;
        k->a = p;
        k->cap = ncap;
    }
    if (!(copy = strdup(consumer ? consumer : "")))
        return GI_INTERNAL;
    k->a[k->n++] = (struct usage_ctot_key){.day = day, .block = block, .consumer = copy};
    return GI_OK;
}

/* Adds the rows (day, block, consumer) of the bound statement s to k. */
static int note_rows(struct conn *c, struct db_stmt *s, struct usage_ctot_keys *k)
{
    int step, rc = GI_OK;

    while (rc == GI_OK && (step = db_step(c, s)) == DB_ROW)
        rc = key_add(k, db_col_int(s, 0), db_col_int(s, 1), db_col_text(s, 2));
    db_reset(s);
    if (rc == GI_OK && step != DB_DONE)
        rc = db_status(step);
    return rc;
}

int usage_ctot_note(struct conn *c, const int64_t *gids, size_t n, int64_t day,
                    struct usage_ctot_keys *k)
{
    bool pg = db_dialect(c) == DB_PG;
    struct db_stmt *s;
    int rc = GI_OK;

    if (n > 1 && day >= 0) { /* a rollup chunk: one statement for its GPUs */
        if (!(s = prep(c, pg ? ST_NOTE_SET_PG : ST_NOTE_SET_SQLITE)) ||
            !db_bind_ids(c, s, ":ids", gids, n))
            return GI_INTERNAL;
        db_bind_int(s, ":day", day);
        return note_rows(c, s, k);
    }
    for (size_t i = 0; i < n && rc == GI_OK; i++) {
        if (!(s = prep(c, day >= 0 ? ST_NOTE_GPU_DAY : ST_NOTE_GPU)))
            return GI_INTERNAL;
        db_bind_int(s, ":gid", gids[i]);
        if (day >= 0)
            db_bind_int(s, ":day", day);
        rc = note_rows(c, s, k);
    }
    return rc;
}

static int key_cmp(const void *pa, const void *pb)
{
    const struct usage_ctot_key *a = pa, *b = pb;

    if (a->day != b->day)
        return a->day < b->day ? -1 : 1;
    if (a->block != b->block)
        return a->block < b->block ? -1 : 1;
    return strcmp(a->consumer, b->consumer);
}

/* Runs statement id with :day, the block (:block, :lo, :hi; block < 0:
 * none) and (when names is not NULL) :names bound. */
static int run_block(struct conn *c, enum stmt_id id, int64_t day, int64_t block, const char *names)
{
    struct db_stmt *s = prep(c, id);

    if (!s)
        return GI_INTERNAL;
    db_bind_int(s, ":day", day);
    if (block >= 0) {
        db_bind_int(s, ":block", block);
        db_bind_int(s, ":lo", block * BLOCK_GPUS);
        db_bind_int(s, ":hi", (block + 1) * BLOCK_GPUS);
    }
    if (names)
        db_bind_text(s, ":names", names);
    return db_exec_done(c, s);
}

/* Sums the totals of the consumers k[lo..hi) of one day and block again
 * (sorted, distinct): those consumers' rows, or the whole block's when a
 * name does not encode as JSON (not UTF-8). */
static int refresh_block(struct conn *c, const struct usage_ctot_key *k, size_t lo, size_t hi)
{
    bool pg = db_dialect(c) == DB_PG;
    json_t *list = json_array();
    char *names = NULL;
    int rc;

    for (size_t i = lo; list && i < hi; i++) {
        json_t *name = json_string(k[i].consumer);
        if (!name || json_array_append_new(list, name) != 0) {
            json_decref(list);
            list = NULL;
        }
    }
    if (list && (names = json_dumps(list, JSON_COMPACT)) != NULL) {
        rc = run_block(c, pg ? ST_DEL_PG : ST_DEL_SQLITE, k[lo].day, k[lo].block, names);
        if (rc == GI_OK)
            rc = run_block(c, pg ? ST_ADD_PG : ST_ADD_SQLITE, k[lo].day, k[lo].block, names);
    } else {
        rc = run_block(c, ST_DEL_ALL_BLOCK, k[lo].day, k[lo].block, NULL);
        if (rc == GI_OK)
            rc = run_block(c, ST_ADD_ALL_BLOCK, k[lo].day, k[lo].block, NULL);
    }
    free(names);
    json_decref(list);
    return rc;
}

/* The lock of a day and block of the totals (two may share one). */
static int32_t lock_key(int64_t day, int64_t block)
{
    uint64_t h = (uint64_t)(day / 86400) * 0x9e3779b97f4a7c15ull ^ (uint64_t)block;

    h *= 0xff51afd7ed558ccdull;
    return (int32_t)(uint32_t)(h >> 32);
}

static int key32_cmp(const void *pa, const void *pb)
{
    int32_t a = *(const int32_t *)pa, b = *(const int32_t *)pb;
    return a < b ? -1 : a > b;
}

/* PostgreSQL: waits for the totals of the days and blocks of k[0..n)
 * (transaction-scoped locks, in the order of their keys, so that two
 * writers cannot deadlock on them). Writers of different GPUs run beside
 * each other there (the rollup job's crew, a run on demand beside the
 * scheduled one) and may share a consumer's day and block; under READ
 * COMMITTED each would sum it again without the other's uncommitted
 * consumer days, and the last to commit would win. Taken as each
 * writer's last step: the second sums the block once the first has
 * committed, from what both wrote. */
static int lock_blocks(struct conn *c, const struct usage_ctot_key *k, size_t n)
{
    int32_t *keys;
    size_t m = 0;
    int rc = GI_OK;

    if (db_dialect(c) != DB_PG || n == 0)
        return GI_OK; /* SQLite: one writer */
    if (!(keys = malloc(n * sizeof *keys)))
        return GI_INTERNAL;
    for (size_t i = 0; i < n; i++)
        if (i == 0 || k[i].day != k[i - 1].day || k[i].block != k[i - 1].block)
            keys[m++] = lock_key(k[i].day, k[i].block);
    qsort(keys, m, sizeof *keys, key32_cmp);
    for (size_t i = 0; i < m && rc == GI_OK; i++) {
        struct db_stmt *s;
        int step;
        if (i > 0 && keys[i] == keys[i - 1])
            continue;
        if (!(s = prep(c, ST_LOCK_PG))) {
            rc = GI_INTERNAL;
            break;
        }
        db_bind_int(s, ":kind", DB_LOCK_CONSUMER_DAY);
        db_bind_int(s, ":key", keys[i]);
        step = db_step(c, s);
        db_reset(s);
        rc = step == DB_ROW || step == DB_DONE ? GI_OK : db_status(step);
    }
    free(keys);
    return rc;
}

int usage_ctot_refresh(struct conn *c, const int64_t *gids, size_t n, int64_t day,
                       struct usage_ctot_keys *k)
{
    size_t w = 0;
    int rc = usage_ctot_note(c, gids, n, day, k);

    if (rc == GI_OK && k->n)
        qsort(k->a, k->n, sizeof *k->a, key_cmp);
    for (size_t i = 0; rc == GI_OK && i < k->n; i++) { /* distinct keys */
        if (w > 0 && key_cmp(&k->a[w - 1], &k->a[i]) == 0) {
            free(k->a[i].consumer);
            k->a[i].consumer = NULL;
            continue;
        }
        k->a[w++] = k->a[i];
    }
    if (rc == GI_OK) {
        k->n = w;
        rc = lock_blocks(c, k->a, k->n);
    }
    for (size_t lo = 0; rc == GI_OK && lo < k->n;) {
        size_t hi = lo + 1;
        while (hi < k->n && k->a[hi].day == k->a[lo].day && k->a[hi].block == k->a[lo].block)
            hi++;
        rc = refresh_block(c, k->a, lo, hi);
        lo = hi;
    }
    usage_ctot_keys_free(k);
    return rc;
}

int usage_ctot_prune_day(struct conn *c, int64_t day)
{
    return run_block(c, ST_DEL_DAY, day, -1, NULL);
}
