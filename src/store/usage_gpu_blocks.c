/* The owned GPU-seconds of each GPU per aligned block of USAGE_BLOCK_DAYS
 * days (usage_gpu_blocks, migration 061), written by the usage:rollup job
 * inside its transactions (usage_write_groups() in usage_hour.c calls
 * usage_gpu_blocks_write()) and by a merge of GPU records
 * (usage_merge.c); read by usage_query.c to rank the GPUs of a paged
 * report with no filter: the whole blocks of the range from here, a row
 * per GPU and block, the days at its edges from usage_daily. See
 * usage_int.h.
 *
 * A block's rows are written again from its usage_daily rows whenever the
 * day groups of one of its days are, in the same transaction, so the two
 * describe the same rows: late data, a re-run, a re-attribution and a
 * merge re-sum the day's groups. The blocks that start before the oldest
 * day group (some of their days pruned by retention) are dropped then and
 * by retention itself; a reader does not use the days retention may be
 * pruning (usage_host_days_cover). */
#include "store/usage_int.h"
#include "core/status.h"

#define STATEMENTS(X)                                                                              \
    X(BLOCK_DEL, "DELETE FROM usage_gpu_blocks WHERE start = :start")                              \
    X(BLOCK_ADD, "INSERT INTO usage_gpu_blocks (start, gpu_id, owned_s, updated_at) SELECT "       \
                 "CAST(:start AS BIGINT), gpu_id, SUM(owned_s * fraction), CAST(:now AS BIGINT) "  \
                 "FROM usage_daily WHERE day >= :start AND day < CAST(:start AS BIGINT) + "        \
                 "CAST(:span AS BIGINT) GROUP BY gpu_id")                                          \
    X(BLOCK_PRUNE, "DELETE FROM usage_gpu_blocks WHERE start < (SELECT MIN(day) FROM "             \
                   "usage_groups_daily)")                                                          \
    X(GPU_DEL, "DELETE FROM usage_gpu_blocks WHERE gpu_id IN (:from, :to) AND start IN (SELECT "   \
               "DISTINCT day - day % CAST(:span AS BIGINT) FROM usage_daily WHERE gpu_id = :to)")  \
    X(GPU_ADD, "INSERT INTO usage_gpu_blocks (start, gpu_id, owned_s, updated_at) SELECT day - "   \
               "day % CAST(:span AS BIGINT), gpu_id, SUM(owned_s * fraction), CAST(:now AS "       \
               "BIGINT) FROM usage_daily WHERE gpu_id = :to AND day >= 0 GROUP BY day - day % "    \
               "CAST(:span AS BIGINT), gpu_id")

enum stmt_id { STATEMENTS(STORE_AS_ENUM) ST__COUNT };
static const char *const stmt_sql[] = {STATEMENTS(STORE_AS_SQL)};

/* Runs statement id with the names it uses bound. */
static int run(struct conn *c, enum stmt_id id, int64_t start, int64_t from, int64_t to,
               int64_t now)
{
    struct db_stmt *s = db_prep(c, stmt_sql[id]);

    if (!s)
        return GI_INTERNAL;
    db_bind_int(s, ":start", start);
    db_bind_int(s, ":span", USAGE_BLOCK_S);
    db_bind_int(s, ":from", from);
    db_bind_int(s, ":to", to);
    db_bind_int(s, ":now", now);
    return db_exec_done(c, s);
}

/* See usage_int.h. */
int usage_gpu_blocks_write(struct conn *c, int64_t day, int64_t now)
{
    int64_t start = day - ((day % USAGE_BLOCK_S) + USAGE_BLOCK_S) % USAGE_BLOCK_S;
    int rc = run(c, ST_BLOCK_DEL, start, 0, 0, now);

    if (rc == GI_OK)
        rc = run(c, ST_BLOCK_ADD, start, 0, 0, now);
    return rc == GI_OK ? run(c, ST_BLOCK_PRUNE, 0, 0, 0, now) : rc;
}

/* See usage_int.h. Every day `from` had is one of `to`'s now (moved, or
 * dropped where `to` had it), so the blocks of `to`'s days are all the
 * blocks either may have: they are found through the key, not by a scan
 * of every block. */
int usage_gpu_blocks_merge(struct conn *c, int64_t from, int64_t to, int64_t now)
{
    int rc = run(c, ST_GPU_DEL, 0, from, to, now);

    if (rc == GI_OK)
        rc = run(c, ST_GPU_ADD, 0, from, to, now);
    return rc == GI_OK ? run(c, ST_BLOCK_PRUNE, 0, 0, 0, now) : rc;
}
