/* A push batch's rows besides its GPUs: the samples (with each GPU's
 * newest readings), the processes and pods seen on the GPUs, the time of
 * the newest observation, and the row-remapping state a GPU reports.
 * Called by ingest.c inside the batch's transaction; see ingest_int.h. */
#include "store/ingest_int.h"
#include "core/log.h"
#include "core/status.h"
#include "core/util.h"

#include <math.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

/* A GPU's newest values from its newest sample, the one rule written once
 * for both forms: V is where the values come from (":" the parameters of
 * one GPU's update, "u." the rows of a batch's arrays joined in by FROM).
 * The batch form (PostgreSQL) is planned at each execution, as its
 * leading comment asks the driver (db_pg.c): a generic plan cached while
 * gpus is small is a sequential scan of gpus, kept until the table is
 * next analyzed. */
#define LATEST_SQL(V, FROM)                                                                        \
    "UPDATE gpus SET sample_at = " V "ts, util_pct = " V "ua, mem_used_mib = " V                   \
    "mem, power_w = " V "pw, temp_c = " V "temp, ecc_corrected = "                                 \
    "COALESCE(" V "ecc_c, gpus.ecc_corrected), ecc_uncorrected = COALESCE(" V                      \
    "ecc_u, gpus.ecc_uncorrected), xid_last = COALESCE(" V "xid, gpus.xid_last), "                 \
    "reading_source_id = :sid, observed_at = CASE WHEN gpus.observed_at IS NULL OR "               \
    "gpus.observed_at < " V "obs THEN " V "obs ELSE gpus.observed_at END" FROM                     \
    " WHERE gpus.id = " V                                                                          \
    "gid AND CASE WHEN gpus.source_id = :sid THEN (gpus.reading_source_id IS NULL OR "             \
    "gpus.reading_source_id <> :sid OR gpus.sample_at IS NULL OR gpus.sample_at <= " V             \
    "ts) ELSE ((gpus.reading_source_id IS NULL OR gpus.reading_source_id <> gpus.source_id) "      \
    "AND (gpus.sample_at IS NULL OR gpus.sample_at <= " V "ts)) END"

#define STATEMENTS(X)                                                                              \
    X(GPU_OBSERVED_SET, "UPDATE gpus SET observed_at = :obs WHERE id = :gid AND (observed_at IS "  \
                        "NULL OR observed_at < :obs)")                                             \
    X(SAMPLE_ADD,                                                                                  \
      "INSERT INTO gpu_samples (ts, gpu_id, util_avg, util_max, mem_used_mib, "                    \
      "power_avg_w, energy_j, temp_c, ecc_corrected, ecc_uncorrected, xid, source_id) "            \
      "VALUES (:ts, :gid, :ua, :um, :mem, :pw, :en, :temp, :ecc_c, :ecc_u, :xid, "                 \
      ":sid) ON CONFLICT DO NOTHING")                                                              \
    X(SAMPLE_ADD_MANY,                                                                             \
      "INSERT INTO gpu_samples (ts, gpu_id, util_avg, util_max, mem_used_mib, "                    \
      "power_avg_w, energy_j, temp_c, ecc_corrected, ecc_uncorrected, xid, source_id) "            \
      "SELECT u.*, CAST(:sid AS BIGINT) FROM unnest(CAST(:ts AS BIGINT[]), CAST(:gid AS "          \
      "BIGINT[]), CAST(:ua AS FLOAT8[]), CAST(:um AS FLOAT8[]), CAST(:mem AS FLOAT8[]), "          \
      "CAST(:pw AS FLOAT8[]), CAST(:en AS FLOAT8[]), CAST(:temp AS FLOAT8[]), CAST(:ecc_c AS "     \
      "BIGINT[]), CAST(:ecc_u AS BIGINT[]), CAST(:xid AS BIGINT[])) AS u ON CONFLICT DO NOTHING")  \
    X(GPU_LATEST, LATEST_SQL(":", ""))                                                             \
    X(GPU_LATEST_MANY,                                                                             \
      "/* plan each time */ " LATEST_SQL(                                                          \
          "u.", " FROM unnest(CAST(:gid AS BIGINT[]), CAST(:ts AS BIGINT[]), CAST(:obs AS "        \
                "BIGINT[]), CAST(:ua AS FLOAT8[]), CAST(:mem AS FLOAT8[]), CAST(:pw AS "           \
                "FLOAT8[]), CAST(:temp AS FLOAT8[]), CAST(:ecc_c AS BIGINT[]), CAST(:ecc_u AS "    \
                "BIGINT[]), CAST(:xid AS BIGINT[])) AS u (gid, ts, obs, ua, mem, pw, temp, "       \
                "ecc_c, ecc_u, xid)"))                                                             \
    X(PROC_ADD, "INSERT INTO gpu_processes (ts, gpu_uuid, pid, name, username, uid, container, "   \
                "pod_uid, pod, namespace, used_mib, source_id) VALUES (:ts, :uuid, :pid, :name, "  \
                ":user, :uid, :container, :pod_uid, :pod, :ns, :mem, :sid) ON CONFLICT DO "        \
                "NOTHING")                                                                         \
    X(POD_ADD, "INSERT INTO gpu_pods (ts, gpu_uuid, namespace, pod, container, source_id) VALUES " \
               "(:ts, :uuid, :ns, :pod, :container, :sid) ON CONFLICT DO NOTHING")                 \
    X(GPU_REMAP_GET, "SELECT remap_failure FROM gpus WHERE id = :gid")                             \
    X(GPU_REMAP_SET,                                                                               \
      "UPDATE gpus SET remap_corrected = COALESCE(:rc, remap_corrected), remap_uncorrectable = "   \
      "COALESCE(:ru, remap_uncorrectable), remap_pending = COALESCE(:rp, remap_pending), "         \
      "remap_failure = COALESCE(:rf, remap_failure), remap_failure_since = CASE WHEN :rf = 1 "     \
      "THEN COALESCE(remap_failure_since, :now) WHEN :rf = 0 THEN NULL ELSE remap_failure_since "  \
      "END WHERE id = :gid")

enum stmt_id { STATEMENTS(STORE_AS_ENUM) ST__COUNT };
static const char *const stmt_sql[] = {STATEMENTS(STORE_AS_SQL)};

static struct db_stmt *prep(struct conn *c, enum stmt_id id) { return db_prep(c, stmt_sql[id]); }

int ingest_ref_cmp(const void *a, const void *b)
{
    return strcmp(((const struct gpu_ref *)a)->uuid, ((const struct gpu_ref *)b)->uuid);
}

/* The stored name of a GPU the batch names `uuid` (itself when unknown). */
static const char *canon_of(struct gpu_ref *refs, size_t nrefs, const char *uuid)
{
    struct gpu_ref key = {.uuid = uuid},
                   *ref = bsearch(&key, refs, nrefs, sizeof *refs, ingest_ref_cmp);
    return ref ? ref->canon : uuid;
}

/* The sample columns after ts and gpu_id, in the statements' order. */
#define SAMPLE_DBL(x)                                                                              \
    {                                                                                              \
        (x)->util_avg, (x)->util_max, (x)->mem_used_mib, (x)->power_avg_w, (x)->energy_j,          \
            (x)->temp_c                                                                            \
    }
#define SAMPLE_INT(x)                                                                              \
    {                                                                                              \
        (x)->ecc_corrected, (x)->ecc_uncorrected, (x)->xid                                         \
    }

static const char *const sample_params[] = {":ts", ":gid",  ":ua",    ":um",    ":mem", ":pw",
                                            ":en", ":temp", ":ecc_c", ":ecc_u", ":xid", ":sid"};

/* Finds each sample's GPU and notes every GPU's newest sample. */
static int samples_resolve(const struct gi_batch *b, struct gpu_ref *refs, size_t nrefs,
                           int64_t *gid)
{
    for (size_t i = 0; i < b->nsamples; i++) {
        const struct gi_sample *x = &b->samples[i];
        struct gpu_ref key = {.uuid = x->gpu_uuid}, *ref;
        ref = bsearch(&key, refs, nrefs, sizeof *refs, ingest_ref_cmp);
        if (ref == NULL)
            return GI_INVALID; /* the parser guarantees every sample names a batch GPU */
        if (ref->newest == NULL || x->ts < ref->oldest_ts)
            ref->oldest_ts = x->ts;
        if (ref->newest == NULL || x->ts >= ref->newest->ts)
            ref->newest = x;
        gid[i] = ref->id;
    }
    return GI_OK;
}

/* PostgreSQL: the batch's samples in one statement, each column one
 * array parameter, so the insert costs one round trip, not one per row. */
static int samples_insert_many(struct conn *c, int64_t sid, const struct gi_batch *b,
                               const int64_t *gid, int64_t *stored)
{
    struct db_array a[11] = {0};
    struct db_stmt *s = prep(c, ST_SAMPLE_ADD_MANY);
    int rc = GI_INTERNAL;

    if (!s)
        return GI_INTERNAL;
    for (size_t i = 0; i < b->nsamples; i++) {
        const struct gi_sample *x = &b->samples[i];
        const double d[6] = SAMPLE_DBL(x);
        const int64_t n[3] = SAMPLE_INT(x);
        db_array_int(&a[0], x->ts);
        db_array_int(&a[1], gid[i]);
        for (int k = 0; k < 6; k++)
            db_array_dbl(&a[2 + k], d[k]);
        for (int k = 0; k < 3; k++)
            db_array_opt_int(&a[8 + k], n[k]);
    }
    for (int k = 0; k < 11; k++) {
        if (a[k].failed)
            goto cleanup;
        db_bind_array(s, sample_params[k], &a[k]);
    }
    db_bind_int(s, ":sid", sid);
    if ((rc = db_exec_done(c, s)) == GI_OK)
        *stored += db_changes(c);
cleanup:
    for (int k = 0; k < 11; k++)
        db_array_free(&a[k]);
    return rc;
}

/* SQLite: one prepared insert per row, the fastest form there; the
 * hottest statement binds by position, looked up once per batch. */
static int samples_insert_each(struct conn *c, int64_t sid, const struct gi_batch *b,
                               const int64_t *gid, int64_t *stored)
{
    struct db_stmt *s;
    int rc, ix[12];

    if (!(s = prep(c, ST_SAMPLE_ADD)))
        return GI_INTERNAL;
    for (int k = 0; k < 12; k++)
        ix[k] = db_param_index(s, sample_params[k]);
    for (size_t i = 0; i < b->nsamples; i++) {
        const struct gi_sample *x = &b->samples[i];
        const double d[6] = SAMPLE_DBL(x);
        const int64_t n[3] = SAMPLE_INT(x);
        db_bind_int_at(s, ix[0], x->ts);
        db_bind_int_at(s, ix[1], gid[i]);
        for (int k = 0; k < 6; k++) {
            if (isnan(d[k]))
                db_bind_null_at(s, ix[2 + k]);
            else
                db_bind_dbl_at(s, ix[2 + k], d[k]);
        }
        for (int k = 0; k < 3; k++) {
            if (n[k] < 0)
                db_bind_null_at(s, ix[8 + k]);
            else
                db_bind_int_at(s, ix[8 + k], n[k]);
        }
        db_bind_int_at(s, ix[11], sid);
        rc = db_step(c, s);
        db_reset(s);
        if (rc != DB_DONE)
            return db_status(rc);
        *stored += db_changes(c);
    }
    return GI_OK;
}

/* The batch GPUs with a sample, each row id once (two names the batch
 * gives one stored GPU count as one, with the newer of their samples):
 * into out, returns how many. */
static size_t latest_pick(struct gpu_ref *refs, size_t nrefs, struct gpu_ref **out)
{
    size_t n = 0;

    for (size_t k = 0; k < nrefs; k++) {
        size_t j = 0;
        if (refs[k].newest == NULL)
            continue;
        while (j < n && out[j]->id != refs[k].id)
            j++;
        if (j == n)
            out[n++] = &refs[k];
        else if (refs[k].newest->ts >= out[j]->newest->ts)
            out[j] = &refs[k];
    }
    return n;
}

/* The newest values of one GPU, in the order of latest_params. */
static void latest_values(const struct gpu_ref *r, int64_t now, int64_t *n, double *d)
{
    const struct gi_sample *x = r->newest;

    n[0] = r->id;
    n[1] = x->ts;
    n[2] = x->ts < now ? x->ts : now;
    n[3] = x->ecc_corrected;
    n[4] = x->ecc_uncorrected;
    n[5] = x->xid;
    d[0] = x->util_avg;
    d[1] = x->mem_used_mib;
    d[2] = x->power_avg_w;
    d[3] = x->temp_c;
}

/* Integer parameters (the last three optional: negative is absent), then
 * the readings. */
static const char *const latest_params[] = {":gid", ":ts", ":obs", ":ecc_c", ":ecc_u",
                                            ":xid", ":ua", ":mem", ":pw",    ":temp"};

/* GPUs from which a batch's newest values are one statement on
 * PostgreSQL. Below, one update per GPU (pipelined, so no round trip
 * each) costs the server less than planning the one statement: measured
 * 267 against 303 us of backend CPU for 8 GPUs, 460 against 380 for 16,
 * 1,420 against 580 for 64 (bench/ingest_latest.sh). */
#define LATEST_MANY_MIN 16

/* One cached update per GPU: on SQLite always (a set from json_each
 * measured three times dearer there: it has no round trips to save), on
 * PostgreSQL for batches of fewer than LATEST_MANY_MIN GPUs. */
static int latest_each(struct conn *c, int64_t sid, struct gpu_ref *const *p, size_t n, int64_t now)
{
    struct db_stmt *s;
    int rc;

    for (size_t k = 0; k < n; k++) {
        int64_t v[6];
        double d[4];
        if (!(s = prep(c, ST_GPU_LATEST)))
            return GI_INTERNAL;
        latest_values(p[k], now, v, d);
        for (int i = 0; i < 3; i++)
            db_bind_int(s, latest_params[i], v[i]);
        for (int i = 3; i < 6; i++)
            db_bind_opt_int(s, latest_params[i], v[i]);
        for (int i = 0; i < 4; i++)
            db_bind_dbl(s, latest_params[6 + i], d[i]);
        db_bind_int(s, ":sid", sid);
        if ((rc = db_exec_done(c, s)) != GI_OK)
            return rc;
    }
    return GI_OK;
}

/* PostgreSQL: the batch's GPUs in one UPDATE ... FROM unnest, each
 * column one array parameter (latest_pick() leaves each row id once, so
 * no row is joined twice), planned for its values at each execution. */
static int latest_many(struct conn *c, int64_t sid, struct gpu_ref *const *p, size_t n, int64_t now)
{
    struct db_array a[10] = {0};
    struct db_stmt *s = prep(c, ST_GPU_LATEST_MANY);
    int rc = GI_INTERNAL;

    if (n == 0)
        return GI_OK;
    if (!s)
        return GI_INTERNAL;
    for (size_t k = 0; k < n; k++) {
        int64_t v[6];
        double d[4];
        latest_values(p[k], now, v, d);
        for (int i = 0; i < 3; i++)
            db_array_int(&a[i], v[i]);
        for (int i = 3; i < 6; i++)
            db_array_opt_int(&a[i], v[i]);
        for (int i = 0; i < 4; i++)
            db_array_dbl(&a[6 + i], d[i]);
    }
    for (int i = 0; i < 10; i++) {
        if (a[i].failed)
            goto cleanup;
        db_bind_array(s, latest_params[i], &a[i]);
    }
    db_bind_int(s, ":sid", sid);
    rc = db_exec_done(c, s);
cleanup:
    for (int i = 0; i < 10; i++)
        db_array_free(&a[i]);
    return rc;
}

/* Moves each batch GPU's newest sample onto its record (the owning
 * source's newest sample replaces any other, and another source's only
 * while the record holds none of its owner's; an older sample never
 * replaces a newer one; a counter the sample leaves absent keeps its
 * value) and marks the hours the batch's samples touch for the usage
 * rollups (usage_mark_many(): one statement for the batch on
 * PostgreSQL). The shown sample also
 * advances the GPU's observed_at (never past the arrival time). */
static int latest_set(struct conn *c, int64_t sid, struct gpu_ref *refs, size_t nrefs)
{
    struct gpu_ref **p = nrefs ? malloc(nrefs * sizeof *p) : NULL;
    struct usage_span *spans = nrefs ? malloc(nrefs * sizeof *spans) : NULL;
    size_t n, m = 0;
    int rc = GI_INTERNAL;

    if (nrefs == 0)
        return GI_OK;
    if (p == NULL || spans == NULL)
        goto cleanup;
    n = latest_pick(refs, nrefs, p);
    rc = db_dialect(c) == DB_PG && n >= LATEST_MANY_MIN ? latest_many(c, sid, p, n, gi_now())
                                                        : latest_each(c, sid, p, n, gi_now());
    if (rc != GI_OK)
        goto cleanup;
    for (size_t k = 0; k < nrefs; k++)
        if (refs[k].newest)
            spans[m++] = (struct usage_span){
                .gpu_id = refs[k].id, .from_ts = refs[k].oldest_ts, .to_ts = refs[k].newest->ts};
    rc = usage_mark_many(c, spans, m);
cleanup:
    free(spans);
    free(p);
    return rc;
}

/* Inserts samples (kept per source) and moves each GPU's newest values
 * onto its record (latest_set()). refs (sorted by uuid) maps the batch's
 * GPUs to their row ids. */
int ingest_samples(struct conn *c, int64_t sid, const struct gi_batch *b, struct gpu_ref *refs,
                   size_t nrefs, int64_t *stored)
{
    int64_t *gid = b->nsamples ? malloc(b->nsamples * sizeof *gid) : NULL;
    int rc;

    if (b->nsamples && gid == NULL)
        return GI_INTERNAL;
    rc = samples_resolve(b, refs, nrefs, gid);
    /* PostgreSQL copies the rows; when one was already stored (a re-sent
     * interval) the copy undoes itself and the insert skips those. */
    if (rc == GI_OK && b->nsamples && db_dialect(c) == DB_PG &&
        (rc = samples_copy(c, sid, b, gid, stored)) == GI_CONFLICT)
        rc = samples_insert_many(c, sid, b, gid, stored);
    else if (rc == GI_OK && b->nsamples && db_dialect(c) != DB_PG)
        rc = samples_insert_each(c, sid, b, gid, stored);
    free(gid);
    if (rc != GI_OK)
        return rc;
    return latest_set(c, sid, refs, nrefs);
}

/* Freshness of the owned GPUs this batch carries no sample for and no
 * observation time: their reading was taken with the batch's newest
 * sample (now when it has none). A GPU with its own samples was settled
 * by ingest_samples(): its own newest sample, not its neighbours'. */
int ingest_observed(struct conn *c, const struct gpu_ref *refs, size_t nrefs, int64_t when)
{
    struct db_stmt *s;
    int rc;

    for (size_t k = 0; k < nrefs; k++) {
        if (!refs[k].owned || refs[k].newest || refs[k].stamped)
            continue;
        if (!(s = prep(c, ST_GPU_OBSERVED_SET)))
            return GI_INTERNAL;
        db_bind_int(s, ":gid", refs[k].id);
        db_bind_int(s, ":obs", when);
        if ((rc = db_exec_done(c, s)) != GI_OK)
            return rc;
    }
    return GI_OK;
}

/* The time a batch's processes and pods were seen: its newest sample's,
 * or now when it has none. */
int64_t ingest_batch_time(const struct gi_batch *b)
{
    int64_t newest = 0;

    for (size_t i = 0; i < b->nsamples; i++)
        if (b->samples[i].ts > newest)
            newest = b->samples[i].ts;
    return newest ? newest : gi_now();
}

/* Stores the batch's processes. An anonymous process (pid hidden from
 * the reporter, pid < 0) is stored under a synthetic negative pid, -1,
 * -2, … per GPU and batch, so that several of them on one GPU at one
 * time are all kept under the key (ts, gpu_uuid, pid); readers show a
 * negative pid as null. */
int ingest_procs(struct conn *c, int64_t sid, const struct gi_batch *b, struct gpu_ref *refs,
                 size_t nrefs, int64_t *stored)
{
    int64_t newest = ingest_batch_time(b), pid;
    struct db_stmt *s;
    int rc;

    for (size_t i = 0; i < b->set.nprocs; i++) {
        const struct gi_proc_obs *p = &b->set.procs[i];
        struct gpu_ref key = {.uuid = p->gpu_uuid}, *ref;
        if (!(s = prep(c, ST_PROC_ADD)))
            return GI_INTERNAL;
        pid = p->pid;
        if (pid < 0) {
            ref = bsearch(&key, refs, nrefs, sizeof *refs, ingest_ref_cmp);
            pid = ref ? -++ref->anon : -1;
        }
        db_bind_int(s, ":ts", p->ts_ms > 0 ? p->ts_ms / 1000 : newest);
        db_bind_text(s, ":uuid", canon_of(refs, nrefs, p->gpu_uuid));
        db_bind_int(s, ":pid", pid);
        db_bind_opt_text(s, ":name", p->name);
        db_bind_opt_text(s, ":user", p->user);
        db_bind_opt_int(s, ":uid", p->uid);
        db_bind_opt_text(s, ":container", p->container);
        db_bind_opt_text(s, ":pod_uid", p->pod_uid);
        db_bind_opt_text(s, ":pod", p->pod);
        db_bind_opt_text(s, ":ns", p->namespace_);
        db_bind_dbl(s, ":mem", p->used_mib);
        db_bind_int(s, ":sid", sid);
        if ((rc = db_exec_done(c, s)) != GI_OK)
            return rc;
        *stored += db_changes(c);
    }
    return GI_OK;
}

/* Records the pods seen on the batch's GPUs at the newest sample time. */
int ingest_pods(struct conn *c, int64_t sid, const struct gi_batch *b, struct gpu_ref *refs,
                size_t nrefs)
{
    int64_t newest = ingest_batch_time(b);
    struct db_stmt *s;
    int rc;

    for (size_t i = 0; i < b->set.npods; i++) {
        const struct gi_pod_obs *p = &b->set.pods[i];
        if (!(s = prep(c, ST_POD_ADD)))
            return GI_INTERNAL;
        db_bind_int(s, ":ts", newest);
        db_bind_text(s, ":uuid", canon_of(refs, nrefs, p->gpu_uuid));
        db_bind_text(s, ":ns", p->namespace_);
        db_bind_text(s, ":pod", p->pod);
        db_bind_opt_text(s, ":container", p->container);
        db_bind_int(s, ":sid", sid);
        if ((rc = db_exec_done(c, s)) != GI_OK)
            return rc;
    }
    return GI_OK;
}

/* Stores the row-remapping state a GPU reported (fields it left absent
 * keep their value) and records a `remap_failure` event when a failure is
 * reported that was not before. */
int ingest_remap(struct conn *c, int64_t sid, int64_t gpu_id, const struct gi_gpu_obs *g,
                 int64_t *events)
{
    struct db_stmt *s;
    int64_t before = -1;
    int rc;

    if (g->remap_corrected < 0 && g->remap_uncorrectable < 0 && g->remap_pending < 0 &&
        g->remap_failure < 0)
        return GI_OK;
    if (g->remap_failure == 1) {
        if (!(s = prep(c, ST_GPU_REMAP_GET)))
            return GI_INTERNAL;
        db_bind_int(s, ":gid", gpu_id);
        if ((rc = db_step(c, s)) == DB_ROW && !db_col_is_null(s, 0))
            before = db_col_int(s, 0);
        db_reset(s);
        if (rc != DB_ROW && rc != DB_DONE)
            return db_status(rc);
    }
    if (!(s = prep(c, ST_GPU_REMAP_SET)))
        return GI_INTERNAL;
    db_bind_int(s, ":gid", gpu_id);
    db_bind_opt_int(s, ":rc", g->remap_corrected);
    db_bind_opt_int(s, ":ru", g->remap_uncorrectable);
    db_bind_opt_int(s, ":rp", g->remap_pending);
    db_bind_opt_int(s, ":rf", g->remap_failure);
    db_bind_int(s, ":now", gi_now());
    if ((rc = db_exec_done(c, s)) != GI_OK)
        return rc;
    if (g->remap_failure == 1 && before != 1) {
        rc = ingest_gpu_event(
            c, sid, g->uuid, "remap_failure",
            json_pack("{s:I, s:I}", "uncorrectable_rows",
                      (json_int_t)(g->remap_uncorrectable < 0 ? 0 : g->remap_uncorrectable),
                      "correctable_rows",
                      (json_int_t)(g->remap_corrected < 0 ? 0 : g->remap_corrected)));
        if (rc != GI_OK)
            return rc;
        (*events)++;
    }
    return GI_OK;
}
