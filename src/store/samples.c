/* Retention of the raw GPU samples. On PostgreSQL gpu_samples is
 * partitioned by day: maintenance creates the coming days' partitions
 * ahead of time and drops whole partitions past retention, so pruning
 * never rewrites or locks live data. On SQLite it deletes the oldest rows
 * in small transactions, so ingest interleaves with it. */
#include "core/status.h"
#include "store/db.h"
#include "store/store.h"

/* Rows one SQLite pruning transaction deletes at most. */
#define PRUNE_BATCH 5000
/* Days of partitions PostgreSQL keeps ready ahead of today. */
#define AHEAD_DAYS 3

static const char sql_prune_sqlite[] =
    "DELETE FROM gpu_samples WHERE (ts, gpu_id, source_id) IN (SELECT ts, gpu_id, source_id "
    "FROM gpu_samples WHERE ts < :cut ORDER BY ts LIMIT :batch)";
static const char sql_partitions_pg[] =
    "SELECT gi_samples_partitions(CAST(:now AS BIGINT), CAST(:ahead AS INT), CAST(:keep AS INT))";

static int prune_sqlite(struct store *st, int64_t cut, int64_t *removed)
{
    int64_t n;
    int rc;

    do {
        struct conn *c = db_conn_get(st);
        struct db_stmt *s;
        n = 0;
        rc = db_tx_begin(c);
        if (rc == GI_OK && !(s = db_prep(c, sql_prune_sqlite)))
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
    return rc;
}

static int partitions_pg(struct store *st, int64_t now, int keep_days, int64_t *changed)
{
    struct conn *c = db_conn_get(st);
    struct db_stmt *s = db_prep(c, sql_partitions_pg);
    int rc = GI_INTERNAL;

    if (s) {
        db_bind_int(s, ":now", now);
        db_bind_int(s, ":ahead", AHEAD_DAYS);
        db_bind_int(s, ":keep", keep_days);
        rc = db_fetch_int(c, s, changed);
    }
    db_conn_put(st, c);
    return rc;
}

int store_samples_maintain(struct store *st, int64_t now, int keep_days, int64_t *changed)
{
    struct conn *c = db_conn_get(st);
    enum db_dialect d = db_dialect(c);

    db_conn_put(st, c);
    *changed = 0;
    if (keep_days < 1)
        return GI_INVALID;
    if (d == DB_PG)
        return partitions_pg(st, now, keep_days, changed);
    return prune_sqlite(st, now - (int64_t)keep_days * 86400, changed);
}
