/* The raw GPU samples: PostgreSQL's bulk copy of a batch's rows, and
 * retention. On PostgreSQL gpu_samples is
 * partitioned by day: maintenance creates the coming days' partitions
 * ahead of time and drops whole partitions past retention, so pruning
 * never rewrites or locks live data. On SQLite it deletes the oldest rows
 * in small transactions, so ingest interleaves with it. The processes and
 * pods seen on GPUs (gpu_processes, gpu_pods: not partitioned) are pruned
 * to the same retention in small transactions on both stores. */
#include "core/observation.h"
#include "core/status.h"
#include "store/db.h"
#include "store/store.h"
#include "store/store_int.h"

#include <math.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

/* Rows one SQLite pruning transaction deletes at most. */
#define PRUNE_BATCH 5000
/* Days of partitions PostgreSQL keeps ready ahead of today. */
#define AHEAD_DAYS 3

static const char sql_prune_sqlite[] =
    "DELETE FROM gpu_samples WHERE (ts, gpu_id, source_id) IN (SELECT ts, gpu_id, source_id "
    "FROM gpu_samples WHERE ts < :cut ORDER BY ts LIMIT :batch)";
static const char sql_prune_procs[] =
    "DELETE FROM gpu_processes WHERE (ts, gpu_uuid, pid) IN (SELECT ts, gpu_uuid, pid FROM "
    "gpu_processes WHERE ts < :cut ORDER BY ts LIMIT :batch)";
static const char sql_prune_pods[] =
    "DELETE FROM gpu_pods WHERE (ts, gpu_uuid, namespace, pod) IN (SELECT ts, gpu_uuid, "
    "namespace, pod FROM gpu_pods WHERE ts < :cut ORDER BY ts LIMIT :batch)";
static const char sql_partitions_pg[] =
    "SELECT gi_samples_partitions(CAST(:now AS BIGINT), CAST(:ahead AS INT), CAST(:keep AS INT))";

static const char sql_samples_copy[] =
    "COPY gpu_samples (ts, gpu_id, util_avg, util_max, mem_used_mib, power_avg_w, energy_j, "
    "temp_c, ecc_corrected, ecc_uncorrected, xid, source_id) FROM STDIN WITH (FORMAT binary)";

/* Columns of one copied row. */
#define COPY_COLUMNS 12

/* COPY's binary format: a signature, flags and header extension length
 * (both 0), then per row the column count and each value as its byte
 * length (-1: NULL) and bytes, big-endian; a column count of -1 ends it.
 * No value is formatted as text or parsed back: on both ends that was
 * most of a copy's time. */
static const char copy_header[19] = "PGCOPY\n\377\r\n\0\0\0\0\0\0\0\0\0";

static unsigned char *put_be(unsigned char *p, uint64_t v, int bytes)
{
    for (int i = bytes - 1; i >= 0; i--) {
        p[i] = (unsigned char)(v & 0xff);
        v >>= 8;
    }
    return p + bytes;
}

/* An 8-byte value (BIGINT, or DOUBLE PRECISION by its bits) with its
 * length, or NULL. */
static unsigned char *put_val(unsigned char *p, bool null, uint64_t bits)
{
    if (null)
        return put_be(p, 0xffffffffu, 4);
    p = put_be(p, 8, 4);
    return put_be(p, bits, 8);
}

static uint64_t dbl_bits(double v)
{
    uint64_t bits;
    memcpy(&bits, &v, sizeof bits);
    return bits;
}

int samples_copy(struct conn *c, int64_t sid, const struct gi_batch *b, const int64_t *gid,
                 int64_t *stored)
{
    /* Per row: the column count, and each column's length and value. */
    size_t row = 2 + COPY_COLUMNS * 12, len = sizeof copy_header + b->nsamples * row + 2;
    unsigned char *buf = malloc(len), *p = buf;
    int64_t rows = 0;
    int rc = GI_INTERNAL;

    if (buf == NULL)
        return GI_INTERNAL;
    memcpy(p, copy_header, sizeof copy_header);
    p += sizeof copy_header;
    for (size_t i = 0; i < b->nsamples; i++) {
        const struct gi_sample *x = &b->samples[i];
        const double d[6] = {x->util_avg,    x->util_max, x->mem_used_mib,
                             x->power_avg_w, x->energy_j, x->temp_c};
        const int64_t n[3] = {x->ecc_corrected, x->ecc_uncorrected, x->xid};
        p = put_be(p, COPY_COLUMNS, 2);
        p = put_val(p, false, (uint64_t)x->ts);
        p = put_val(p, false, (uint64_t)gid[i]);
        /* NaN or an infinite reading is NULL, like a negative counter
         * ("unknown"). */
        for (int k = 0; k < 6; k++)
            p = put_val(p, isnan(d[k]) || isinf(d[k]), dbl_bits(d[k]));
        for (int k = 0; k < 3; k++)
            p = put_val(p, n[k] < 0, (uint64_t)n[k]);
        p = put_val(p, false, (uint64_t)sid);
    }
    p = put_be(p, 0xffff, 2);
    if ((rc = db_copy_in(c, sql_samples_copy, (const char *)buf, (size_t)(p - buf), &rows)) ==
        GI_OK)
        *stored += rows;
    free(buf);
    return rc;
}

/* Deletes the rows of `sql` (bound :cut, :batch) PRUNE_BATCH at a time,
 * each batch its own transaction. */
static int prune_rows(struct store *st, const char *sql, int64_t cut, int64_t *removed)
{
    int64_t n;
    int rc;

    do {
        struct conn *c = db_conn_get(st);
        struct db_stmt *s;
        n = 0;
        rc = db_tx_begin(c);
        if (rc == GI_OK && !(s = db_prep(c, sql)))
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
    int64_t cut = now - (int64_t)keep_days * 86400, parts = 0;
    int rc;

    db_conn_put(st, c);
    *changed = 0;
    if (keep_days < 1)
        return GI_INVALID;
    if (d == DB_PG) {
        rc = partitions_pg(st, now, keep_days, &parts);
        *changed += parts;
    } else {
        rc = prune_rows(st, sql_prune_sqlite, cut, changed);
    }
    if (rc == GI_OK)
        rc = prune_rows(st, sql_prune_procs, cut, changed);
    if (rc == GI_OK)
        rc = prune_rows(st, sql_prune_pods, cut, changed);
    return rc;
}
