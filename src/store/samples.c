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

#include <inttypes.h>
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
    "temp_c, ecc_corrected, ecc_uncorrected, xid, source_id) FROM STDIN";

/* Text that grows; `failed` once an allocation failed. */
struct text {
    char *buf;
    size_t len, cap;
    bool failed;
};

static void text_add(struct text *t, const char *v, size_t n)
{
    if (t->failed)
        return;
    if (t->len + n > t->cap) {
        size_t cap = t->cap ? t->cap * 2 : 128 * 1024;
        char *p;
        while (cap < t->len + n)
            cap *= 2;
        if ((p = realloc(t->buf, cap)) == NULL) {
            t->failed = true;
            return;
        }
        t->buf = p;
        t->cap = cap;
    }
    memcpy(t->buf + t->len, v, n);
    t->len += n;
}

/* One value and the separator after it (a tab, or the row's newline). A
 * negative integer, like NaN or an infinite real, is NULL ("unknown"). */
static void text_int(struct text *t, int64_t v, bool opt, char sep)
{
    char b[32];
    int n = opt && v < 0 ? snprintf(b, sizeof b, "\\N%c", sep)
                         : snprintf(b, sizeof b, "%" PRId64 "%c", v, sep);
    text_add(t, b, (size_t)n);
}

static void text_dbl(struct text *t, double v, char sep)
{
    char b[40];
    int n = isnan(v) || isinf(v) ? snprintf(b, sizeof b, "\\N%c", sep)
                                 : snprintf(b, sizeof b, "%.17g%c", v, sep);
    text_add(t, b, (size_t)n);
}

int samples_copy(struct conn *c, int64_t sid, const struct gi_batch *b, const int64_t *gid,
                 int64_t *stored)
{
    struct text t = {0};
    int64_t rows = 0;
    int rc = GI_INTERNAL;

    for (size_t i = 0; i < b->nsamples; i++) {
        const struct gi_sample *x = &b->samples[i];
        const double d[6] = {x->util_avg,    x->util_max, x->mem_used_mib,
                             x->power_avg_w, x->energy_j, x->temp_c};
        text_int(&t, x->ts, false, '\t');
        text_int(&t, gid[i], false, '\t');
        for (int k = 0; k < 6; k++)
            text_dbl(&t, d[k], '\t');
        text_int(&t, x->ecc_corrected, true, '\t');
        text_int(&t, x->ecc_uncorrected, true, '\t');
        text_int(&t, x->xid, true, '\t');
        text_int(&t, sid, false, '\n');
    }
    if (!t.failed && (rc = db_copy_in(c, sql_samples_copy, t.buf, t.len, &rows)) == GI_OK)
        *stored += rows;
    free(t.buf);
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
