/* GPU health: the daily health rollup (the health:rollup job) and the
 * health score of an asset. See store.h and docs/LIFECYCLE.md.
 *
 * The rollup follows usage_daily: the usage:rollup job rewrites a GPU-day
 * whenever samples of that day arrive (late ones included), which moves
 * its updated_at; this job reads usage_daily past its watermark
 * (in the order updated_at, day, gpu_id) in bounded chunks and recomputes
 * those GPU-days from the raw samples, so late data re-dirties its day without a
 * second queue. Each chunk is read outside any transaction and written in
 * one short one, with the watermark. */
#include "store/assets_int.h"
#include "store/store_int.h"
#include "core/status.h"
#include "core/util.h"

#include <math.h>
#include <stdlib.h>
#include <string.h>

#define DAY_S 86400
/* GPU-days per chunk, and how long a usage_daily row must be old before
 * the watermark passes it (a usage transaction still open with an
 * earlier updated_at commits within it). */
#define HEALTH_CHUNK 1024
#define HEALTH_SETTLE_S 120
static int64_t health_settle_s = HEALTH_SETTLE_S;
/* The readings before a day that seed its ECC and XID baselines. */
#define HEALTH_BASELINE_S 3600
/* Temperatures are counted per GPU-day in 0.1 °C steps from TEMP_MIN_C
 * (TEMP_BINS of them; readings outside are counted in the end bins), so a
 * chunk's GPUs are accumulated side by side in one pass over the day's
 * samples in their stored order, in bounded memory whatever the sampling
 * interval. The 95th percentile is exact for readings in whole or tenth
 * degrees (what NVML, DCGM, amd-smi and hl-smi report); the maximum is
 * exact always. */
#define TEMP_MIN_C (-50)
#define TEMP_BINS 2000
/* The current day is rewritten by the usage rollup every minute while
 * samples arrive; it is recomputed at most this often (the day is rolled
 * up in full once it is over, with the usage rollup's rewrite of its last
 * hour). */
#define HEALTH_TODAY_S 600

#define STATEMENTS(X)                                                                              \
    X(WM_GET, "SELECT updated_at, gpu_id, day FROM health_watermark WHERE id = 1")                 \
    X(WM_SET, "INSERT INTO health_watermark (id, updated_at, gpu_id, day) VALUES (1, :u, :g, "     \
              ":d) ON CONFLICT (id) DO UPDATE SET updated_at = excluded.updated_at, gpu_id = "     \
              "excluded.gpu_id, day = excluded.day")                                               \
    X(DIRTY,                                                                                       \
      "SELECT gpu_id, day, updated_at, util_sum, measured_s, energy_wh, (SELECT h.updated_at "     \
      "FROM gpu_health_daily h WHERE h.gpu_id = usage_daily.gpu_id AND h.day = usage_daily.day) "  \
      "AS health_at "                                                                              \
      "FROM usage_daily WHERE updated_at <= :settled AND (updated_at > :u OR (updated_at = :u "    \
      "AND (day > :d OR (day = :d AND gpu_id > :g)))) ORDER BY updated_at, day, gpu_id LIMIT "     \
      ":limit")                                                                                    \
    X(DIRTY_LEFT, "SELECT COUNT(*) FROM usage_daily WHERE updated_at <= :settled AND (updated_at " \
                  "> :u OR (updated_at = :u AND (day > :d OR (day = :d AND gpu_id > :g))))")       \
    X(SAMPLES,                                                                                     \
      "SELECT gpu_id, ts, temp_c, ecc_corrected, ecc_uncorrected, xid FROM gpu_samples "           \
      "WHERE ts >= :lo AND ts < :hi AND gpu_id >= :gmin AND gpu_id <= :gmax ORDER BY ts, "         \
      "gpu_id")                                                                                    \
    X(PUT, "INSERT INTO gpu_health_daily (gpu_id, day, samples, xid_events, xid_codes, "           \
           "ecc_corrected_inc, ecc_uncorrected_inc, temp_p95_c, temp_max_c, util_avg, energy_wh, " \
           "remap_failures, updated_at) VALUES (:g, :d, :n, :xe, :xc, :ecc_c, :ecc_u, :p95, "      \
           ":tmax, :util, :wh, :remap, :now) ON CONFLICT (gpu_id, day) DO UPDATE SET samples = "   \
           "excluded.samples, xid_events = excluded.xid_events, xid_codes = excluded.xid_codes, "  \
           "ecc_corrected_inc = excluded.ecc_corrected_inc, ecc_uncorrected_inc = "                \
           "excluded.ecc_uncorrected_inc, temp_p95_c = excluded.temp_p95_c, temp_max_c = "         \
           "excluded.temp_max_c, util_avg = excluded.util_avg, energy_wh = excluded.energy_wh, "   \
           "remap_failures = excluded.remap_failures, updated_at = excluded.updated_at")           \
    X(ASSET, "SELECT a.id, a.kind, a.purchase_date, a.depreciation_years, g.id FROM assets a "     \
             "LEFT JOIN gpus g ON g.uuid = a.gpu_uuid WHERE a.id = :id")                           \
    X(CHILD_GPUS, "SELECT g.id FROM assets a JOIN gpus g ON g.uuid = a.gpu_uuid WHERE "            \
                  "a.parent_id = :id ORDER BY a.id")                                               \
    X(DAYS, "SELECT day, xid_events, xid_codes, ecc_uncorrected_inc, temp_p95_c, remap_failures "  \
            "FROM gpu_health_daily WHERE gpu_id = :g AND day >= :from ORDER BY day")               \
    X(REMAP, "SELECT id, remap_failure, remap_failure_since FROM gpus WHERE id >= :gmin AND id "   \
             "<= :gmax AND remap_failure IS NOT NULL ORDER BY id")

enum stmt_id { STATEMENTS(STORE_AS_ENUM) ST__COUNT };
static const char *const stmt_sql[] = {STATEMENTS(STORE_AS_SQL)};

static struct db_stmt *prep(struct conn *c, enum stmt_id id) { return db_prep(c, stmt_sql[id]); }

/* What a GPU-day's samples add up to while they are read: the
 * temperature counts (NULL until the first reading), and the last ECC and
 * XID readings, which seed the next ones' increments. */
struct acc {
    uint32_t *temps;
    int64_t n;
    int64_t last_c, last_u, last_xid; /* -1: none yet */
};

/* One GPU-day to recompute, and what was computed. */
struct hday {
    int64_t gpu_id, day, updated_at;
    double util_avg, energy_wh;                /* NAN: none */
    int64_t samples, xid_events, ecc_c, ecc_u; /* ecc -1: no reading */
    int64_t remap;                             /* 1 a row-remap failure day, 0 none, -1 unknown */
    double p95, tmax;                          /* NAN: no reading */
    json_t *codes;
    struct acc a;
};

static size_t temp_bin(double t)
{
    double b = round(t * 10.0) - TEMP_MIN_C * 10;

    if (!(b > 0))
        return 0;
    return b >= TEMP_BINS ? TEMP_BINS - 1 : (size_t)b;
}

static void acc_sample(struct hday *h, struct db_stmt *s)
{
    struct acc *a = &h->a;
    int64_t ts = db_col_int(s, 1);
    bool in_day = ts >= h->day;

    if (in_day) {
        h->samples++;
        if (!db_col_is_null(s, 2)) {
            double t = db_col_dbl(s, 2);
            if (!a->temps)
                a->temps = calloc(TEMP_BINS, sizeof *a->temps);
            if (a->temps) {
                a->temps[temp_bin(t)]++;
                a->n++;
            }
            if (isnan(h->tmax) || t > h->tmax)
                h->tmax = t;
        }
    }
    if (!db_col_is_null(s, 3)) {
        int64_t v = db_col_int(s, 3);
        if (in_day) {
            if (h->ecc_c < 0)
                h->ecc_c = 0;
            if (a->last_c >= 0 && v > a->last_c)
                h->ecc_c += v - a->last_c;
        }
        a->last_c = v;
    }
    if (!db_col_is_null(s, 4)) {
        int64_t v = db_col_int(s, 4);
        if (in_day) {
            if (h->ecc_u < 0)
                h->ecc_u = 0;
            if (a->last_u >= 0 && v > a->last_u)
                h->ecc_u += v - a->last_u;
        }
        a->last_u = v;
    }
    if (!db_col_is_null(s, 5)) {
        int64_t x = db_col_int(s, 5);
        if (in_day && x > 0 && x != a->last_xid) {
            size_t i;
            json_t *v;
            bool seen = false;
            h->xid_events++;
            json_array_foreach(h->codes, i, v)
                seen = seen || json_integer_value(v) == x;
            if (!seen)
                json_array_append_new(h->codes, json_integer(x));
        }
        a->last_xid = x;
    }
}

static void acc_finish(struct hday *h)
{
    struct acc *a = &h->a;

    if (a->n > 0) {
        int64_t k = (int64_t)ceil(0.95 * (double)a->n), seen = 0;
        size_t b = 0;
        if (k < 1)
            k = 1;
        for (; b < TEMP_BINS - 1 && (seen += a->temps[b]) < k; b++) {
        }
        h->p95 = (double)((int64_t)b + TEMP_MIN_C * 10) / 10.0;
        /* the end bins hold what lies beyond them: the maximum bounds it */
        if (h->p95 > h->tmax)
            h->p95 = h->tmax;
    }
    free(a->temps);
    a->temps = NULL;
    a->n = 0;
}

/* The row-remap state of the GPU-days h[from..to) (one day, ascending
 * gpu_id): a failure day when the GPU reports a remap failure first
 * reported before the day ended, 0 when it reports none (or its failure
 * began later), -1 when it never reported remapping. */
static int read_remap(struct conn *c, struct hday *h, size_t from, size_t to)
{
    struct db_stmt *s = prep(c, ST_REMAP);
    size_t i = from;
    int step;

    if (!s)
        return GI_INTERNAL;
    db_bind_int(s, ":gmin", h[from].gpu_id);
    db_bind_int(s, ":gmax", h[to - 1].gpu_id);
    while ((step = db_step(c, s)) == DB_ROW) {
        int64_t gid = db_col_int(s, 0);
        while (i < to && h[i].gpu_id < gid)
            i++;
        if (i == to)
            break;
        if (h[i].gpu_id == gid)
            h[i].remap = db_col_int(s, 1) == 1 && !db_col_is_null(s, 2) &&
                         db_col_int(s, 2) < h[i].day + DAY_S;
    }
    db_reset(s);
    return step == DB_ROW || step == DB_DONE ? GI_OK : db_status(step);
}

/* The GPU-day of gpu_id among h[from..to) (ascending gpu_id), or NULL. */
static struct hday *find_gpu(struct hday *h, size_t from, size_t to, int64_t gpu_id)
{
    while (from < to) {
        size_t mid = from + (to - from) / 2;
        if (h[mid].gpu_id == gpu_id)
            return &h[mid];
        if (h[mid].gpu_id < gpu_id)
            from = mid + 1;
        else
            to = mid;
    }
    return NULL;
}

/* Reads the samples of the GPU-days h[from..to) (one day, ascending
 * gpu_id) in one pass in their stored (time) order, each GPU accumulated
 * on its own, and fills their figures. */
static int read_day(struct conn *c, struct hday *h, size_t from, size_t to)
{
    struct db_stmt *s = prep(c, ST_SAMPLES);
    int step;

    if (!s)
        return GI_INTERNAL;
    for (size_t i = from; i < to; i++)
        h[i].a = (struct acc){.last_c = -1, .last_u = -1, .last_xid = -1};
    db_bind_int(s, ":lo", h[from].day - HEALTH_BASELINE_S);
    db_bind_int(s, ":hi", h[from].day + DAY_S);
    db_bind_int(s, ":gmin", h[from].gpu_id);
    db_bind_int(s, ":gmax", h[to - 1].gpu_id);
    while ((step = db_step(c, s)) == DB_ROW) {
        struct hday *d = find_gpu(h, from, to, db_col_int(s, 0));
        if (d)
            acc_sample(d, s);
    }
    db_reset(s);
    for (size_t i = from; i < to; i++)
        acc_finish(&h[i]);
    if (step != DB_ROW && step != DB_DONE)
        return db_status(step);
    return read_remap(c, h, from, to);
}

static int write_chunk(struct conn *c, struct hday *h, size_t n, const struct hday *mark,
                       int64_t now)
{
    struct db_stmt *s;
    int rc = db_tx_begin(c);

    for (size_t i = 0; rc == GI_OK && i < n; i++) {
        rc = GI_INTERNAL;
        if (!(s = prep(c, ST_PUT)))
            break;
        db_bind_int(s, ":g", h[i].gpu_id);
        db_bind_int(s, ":d", h[i].day);
        db_bind_int(s, ":n", h[i].samples);
        db_bind_int(s, ":xe", h[i].xid_events);
        db_bind_json(s, ":xc", h[i].codes);
        db_bind_opt_int(s, ":ecc_c", h[i].ecc_c);
        db_bind_opt_int(s, ":ecc_u", h[i].ecc_u);
        db_bind_dbl(s, ":p95", h[i].p95);
        db_bind_dbl(s, ":tmax", h[i].tmax);
        db_bind_dbl(s, ":util", h[i].util_avg);
        db_bind_dbl(s, ":wh", h[i].energy_wh);
        db_bind_opt_int(s, ":remap", h[i].remap);
        db_bind_int(s, ":now", now);
        rc = db_exec_done(c, s);
    }
    if (rc == GI_OK) {
        rc = GI_INTERNAL;
        if ((s = prep(c, ST_WM_SET))) {
            db_bind_int(s, ":u", mark->updated_at);
            db_bind_int(s, ":g", mark->gpu_id);
            db_bind_int(s, ":d", mark->day);
            rc = db_exec_done(c, s);
        }
    }
    return db_tx_end(c, rc);
}

static int cmp_hday(const void *a, const void *b)
{
    const struct hday *x = a, *y = b;
    if (x->day != y->day)
        return x->day < y->day ? -1 : 1;
    return x->gpu_id < y->gpu_id ? -1 : x->gpu_id > y->gpu_id;
}

/* The watermark of the last GPU-day rolled up, in usage_daily's order
 * (updated_at, day, gpu_id). */
static int read_watermark(struct conn *c, int64_t *wu, int64_t *wg, int64_t *wd)
{
    struct db_stmt *s = prep(c, ST_WM_GET);
    int step;

    *wu = *wg = *wd = 0;
    if (!s)
        return GI_INTERNAL;
    if ((step = db_step(c, s)) == DB_ROW) {
        *wu = db_col_int(s, 0);
        *wg = db_col_int(s, 1);
        *wd = db_col_int(s, 2);
    }
    db_reset(s);
    return step == DB_ROW || step == DB_DONE ? GI_OK : db_status(step);
}

/* Reads the next chunk of GPU-days past the watermark into h (*k of them
 * to recompute, *seen read, `last` the last read in usage_daily's order:
 * the next watermark). */
static int read_dirty(struct conn *c, int64_t now, struct hday *h, size_t *k, size_t *seen,
                      struct hday *last)
{
    int64_t wu, wg, wd;
    struct db_stmt *s;
    int rc = read_watermark(c, &wu, &wg, &wd), step;

    if (rc != GI_OK)
        return rc;
    if (!(s = prep(c, ST_DIRTY)))
        return GI_INTERNAL;
    db_bind_int(s, ":settled", now - health_settle_s);
    db_bind_int(s, ":u", wu);
    db_bind_int(s, ":g", wg);
    db_bind_int(s, ":d", wd);
    db_bind_int(s, ":limit", HEALTH_CHUNK);
    while (*seen < HEALTH_CHUNK && (step = db_step(c, s)) == DB_ROW) {
        double measured = db_col_dbl(s, 4);
        struct hday *d = &h[*k];
        (*seen)++;
        last->gpu_id = db_col_int(s, 0);
        last->day = db_col_int(s, 1);
        last->updated_at = db_col_int(s, 2);
        if (last->day == now - now % DAY_S && !db_col_is_null(s, 6) &&
            db_col_int(s, 6) > now - HEALTH_TODAY_S)
            continue;
        memset(d, 0, sizeof *d);
        d->gpu_id = last->gpu_id;
        d->day = last->day;
        d->updated_at = last->updated_at;
        d->util_avg = measured > 0 ? db_col_dbl(s, 3) / measured : NAN;
        d->energy_wh = db_col_is_null(s, 5) ? NAN : db_col_dbl(s, 5);
        d->ecc_c = d->ecc_u = -1;
        d->remap = -1;
        d->p95 = d->tmax = NAN;
        d->codes = json_array();
        (*k)++;
    }
    db_reset(s);
    return step == DB_ROW || step == DB_DONE ? GI_OK : db_status(step);
}

/* One chunk: *n GPU-days read past the watermark (0: none left), *done of
 * them rolled up (the current day is skipped while its row is fresh). */
static int rollup_chunk(struct conn *c, int64_t now, size_t *n, size_t *done)
{
    struct hday *h = calloc(HEALTH_CHUNK, sizeof *h), last = {0};
    size_t k = 0, seen = 0, i, j;
    int rc;

    *n = *done = 0;
    if (!h)
        return GI_INTERNAL;
    rc = read_dirty(c, now, h, &k, &seen, &last);
    if (rc == GI_OK && seen > 0) {
        qsort(h, k, sizeof *h, cmp_hday);
        for (i = 0; rc == GI_OK && i < k; i = j) {
            for (j = i; j < k && h[j].day == h[i].day; j++) {
            }
            rc = read_day(c, h, i, j);
        }
        if (rc == GI_OK)
            rc = write_chunk(c, h, k, &last, now);
        if (rc == GI_OK) {
            *n = seen;
            *done = k;
        }
    }
    for (i = 0; i < k; i++) {
        json_decref(h[i].codes);
        free(h[i].a.temps);
    }
    free(h);
    return rc;
}

void store_health_configure(int64_t settle_s)
{
    if (settle_s >= 0)
        health_settle_s = settle_s;
}

int store_health_rollup(struct store *st, int64_t now, int max_chunks, struct store_health_run *res)
{
    struct conn *c = db_conn_get(st);
    struct db_stmt *s;
    int rc = GI_OK;
    size_t n = 1, done = 0;

    memset(res, 0, sizeof *res);
    for (int i = 0; rc == GI_OK && n > 0 && (max_chunks <= 0 || i < max_chunks); i++) {
        rc = rollup_chunk(c, now, &n, &done);
        res->days += (int64_t)done;
    }
    if (rc == GI_OK && n > 0) {
        int64_t wu, wg, wd;
        if ((rc = read_watermark(c, &wu, &wg, &wd)) == GI_OK) {
            rc = GI_INTERNAL;
            if ((s = prep(c, ST_DIRTY_LEFT))) {
                db_bind_int(s, ":settled", now - health_settle_s);
                db_bind_int(s, ":u", wu);
                db_bind_int(s, ":g", wg);
                db_bind_int(s, ":d", wd);
                rc = db_fetch_int(c, s, &res->left);
            }
        }
    }
    db_conn_put(st, c);
    return rc;
}

int store_health_day_put(struct store *st, const struct store_health_day *d, int64_t now)
{
    struct conn *c = db_conn_get(st);
    struct hday h = {.gpu_id = d->gpu_id,
                     .day = d->day - d->day % DAY_S,
                     .samples = d->samples,
                     .xid_events = d->xid_events,
                     .ecc_c = d->ecc_corrected_inc,
                     .ecc_u = d->ecc_uncorrected_inc,
                     .p95 = d->temp_p95_c,
                     .tmax = d->temp_max_c,
                     .util_avg = d->util_avg,
                     .energy_wh = NAN,
                     .codes = json_array()};
    struct db_stmt *s;
    int rc = db_tx_begin(c);

    if (d->xid_code > 0)
        json_array_append_new(h.codes, json_integer(d->xid_code));
    if (rc == GI_OK) {
        rc = GI_INTERNAL;
        if ((s = prep(c, ST_PUT))) {
            db_bind_int(s, ":g", h.gpu_id);
            db_bind_int(s, ":d", h.day);
            db_bind_int(s, ":n", h.samples);
            db_bind_int(s, ":xe", h.xid_events);
            db_bind_json(s, ":xc", h.codes);
            db_bind_opt_int(s, ":ecc_c", h.ecc_c);
            db_bind_opt_int(s, ":ecc_u", h.ecc_u);
            db_bind_dbl(s, ":p95", h.p95);
            db_bind_dbl(s, ":tmax", h.tmax);
            db_bind_dbl(s, ":util", h.util_avg);
            db_bind_dbl(s, ":wh", h.energy_wh);
            db_bind_text(s, ":remap", NULL);
            db_bind_int(s, ":now", now);
            rc = db_exec_done(c, s);
        }
    }
    rc = db_tx_end(c, rc);
    json_decref(h.codes);
    db_conn_put(st, c);
    return rc;
}

/* ---- the score ---- */

static void penalty(json_t *reasons, int *score, const char *reason, int p, json_t *detail)
{
    if (p <= 0) {
        json_decref(detail);
        return;
    }
    *score -= p;
    json_array_append_new(
        reasons, json_pack("{s:s, s:o, s:i}", "reason", reason, "detail", detail, "penalty", p));
}

/* The penalties of one GPU's last 30 days into reasons. */
static int gpu_penalties(struct conn *c, int64_t gpu_id, int64_t now, json_t *reasons, int *score,
                         int64_t *days_seen, bool *remap_known)
{
    struct db_stmt *s = prep(c, ST_DAYS);
    int64_t today = now - now % DAY_S, xid_days = 0, ecc = 0, hot = 0, remap_days = 0;
    json_t *codes = json_array();
    int step;

    if (!s) {
        json_decref(codes);
        return GI_INTERNAL;
    }
    db_bind_int(s, ":g", gpu_id);
    db_bind_int(s, ":from", today - 29 * DAY_S);
    while ((step = db_step(c, s)) == DB_ROW) {
        (*days_seen)++;
        if (db_col_int(s, 1) > 0) {
            json_t *day_codes = json_loads(db_col_text(s, 2) ? db_col_text(s, 2) : "[]", 0, NULL);
            size_t i, j;
            json_t *v, *w;
            xid_days++;
            json_array_foreach(day_codes, i, v) {
                bool seen = false;
                json_array_foreach(codes, j, w)
                    seen = seen || json_equal(v, w);
                if (!seen)
                    json_array_append(codes, v);
            }
            json_decref(day_codes);
        }
        ecc += db_col_int(s, 3);
        if (db_col_int(s, 0) >= today - 6 * DAY_S && !db_col_is_null(s, 4) && db_col_dbl(s, 4) > 85)
            hot++;
        if (!db_col_is_null(s, 5)) {
            *remap_known = true;
            remap_days += db_col_int(s, 5) > 0;
        }
    }
    db_reset(s);
    if (step != DB_DONE) {
        json_decref(codes);
        return db_status(step);
    }
    if (remap_days > 0)
        penalty(reasons, score, "remap_failure", 50,
                json_sprintf("memory row remapping failed: reported on %lld of the last 30 days",
                             (long long)remap_days));
    if (ecc > 0)
        penalty(
            reasons, score, "ecc_uncorrected", 40,
            json_sprintf("%lld uncorrectable ECC error(s) in the last 30 days", (long long)ecc));
    if (xid_days > 0) {
        char list[128] = "";
        size_t i, off = 0;
        json_t *v;
        json_array_foreach(codes, i, v) {
            int w = snprintf(list + off, sizeof list - off, "%s%lld", i ? ", " : "",
                             (long long)json_integer_value(v));
            if (w < 0 || (size_t)w >= sizeof list - off)
                break;
            off += (size_t)w;
        }
        penalty(reasons, score, "xid", xid_days * 10 > 40 ? 40 : (int)xid_days * 10,
                json_sprintf("XID %s on %lld of the last 30 days", list, (long long)xid_days));
    }
    if (hot > 0)
        penalty(
            reasons, score, "temperature", hot * 5 > 20 ? 20 : (int)hot * 5,
            json_sprintf("temperature p95 above 85 C on %lld of the last 7 days", (long long)hot));
    json_decref(codes);
    return GI_OK;
}

int store_asset_health(struct store *st, int64_t asset_id, int64_t now, json_t **out)
{
    struct conn *c = db_conn_get(st);
    struct db_stmt *s;
    json_t *reasons = json_array();
    int64_t gpu_id = 0, days = 0, start;
    char kind[32] = "", date[16] = "", at[32];
    double years = 0;
    int score = 100, rc = GI_INTERNAL, step;
    bool server, remap_known = false;

    *out = NULL;
    db_read_begin(c);
    if (!(s = prep(c, ST_ASSET)))
        goto cleanup;
    db_bind_int(s, ":id", asset_id);
    step = db_step(c, s);
    if (step == DB_ROW) {
        gi_strlcpy(kind, db_col_text(s, 1) ? db_col_text(s, 1) : "", sizeof kind);
        gi_strlcpy(date, db_col_text(s, 2) ? db_col_text(s, 2) : "", sizeof date);
        years = db_col_is_null(s, 3) ? 0 : db_col_dbl(s, 3);
        gpu_id = db_col_is_null(s, 4) ? 0 : db_col_int(s, 4);
    }
    db_reset(s);
    if (step != DB_ROW) {
        rc = step == DB_DONE ? GI_NOT_FOUND : db_status(step);
        goto cleanup;
    }
    server = strcmp(kind, "server") == 0;
    if (gpu_id > 0 &&
        (rc = gpu_penalties(c, gpu_id, now, reasons, &score, &days, &remap_known)) != GI_OK)
        goto cleanup;
    if (server) {
        /* the worst of its GPUs: each GPU's penalties, the largest total kept */
        json_t *ids = NULL, *row, *worst = NULL;
        size_t i;
        int worst_score = 101;
        if (!(s = prep(c, ST_CHILD_GPUS)))
            goto cleanup;
        db_bind_int(s, ":id", asset_id);
        if ((rc = db_collect(c, s, &ids)) != GI_OK)
            goto cleanup;
        json_array_foreach(ids, i, row) {
            json_t *r = json_array();
            int sc = 100;
            rc = gpu_penalties(c, json_integer_value(json_object_get(row, "id")), now, r, &sc,
                               &days, &remap_known);
            if (rc == GI_OK && sc < worst_score) {
                json_decref(worst);
                worst = r;
                worst_score = sc;
            } else
                json_decref(r);
            if (rc != GI_OK)
                break;
        }
        json_decref(ids);
        if (worst) {
            score -= 100 - worst_score;
            json_array_extend(reasons, worst);
            json_decref(worst);
        }
        if (rc != GI_OK)
            goto cleanup;
    }
    /* age against the expected life (depreciation_years, else 5 years) */
    if (asset_date_parse(date, &start)) {
        double life = years > 0 ? years : 5.0, age = (double)(now / DAY_S - start) / 365.25;
        if (age >= life)
            penalty(
                reasons, &score, "age", 20,
                json_sprintf("%.1f years old, past its expected life of %.1f years", age, life));
        else if (age >= 0.8 * life)
            penalty(
                reasons, &score, "age", 10,
                json_sprintf("%.1f years old, near its expected life of %.1f years", age, life));
    }
    if (score < 0)
        score = 0;
    gi_time_format(now, at, sizeof at);
    /* remap_failures is absent while no GPU of the asset reports row
     * remapping (older GPUs, collectors that cannot read it). */
    *out = json_pack("{s:i, s:O, s:s, s:I, s:o}", "score", score, "reasons", reasons, "as_of", at,
                     "days", (json_int_t)days, "absent",
                     remap_known ? json_array() : json_pack("[s]", "remap_failures"));
    rc = *out ? GI_OK : GI_INTERNAL;
cleanup:
    db_read_end(c);
    db_conn_put(st, c);
    json_decref(reasons);
    return rc;
}
