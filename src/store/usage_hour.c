/* One GPU-hour of usage: the classification of its seconds, its consumers
 * and their allocation intervals, its hourly row, and the daily and group
 * sums built from hourly rows; called by the usage:rollup job (usage.c)
 * through usage_int.h. The consumers are gathered by usage_consumers.c
 * (through usage_hour_int.h).
 *
 * Within one hour [H, H+3600) of GPU g:
 *  - a sample at ts covers (ts - gap, ts], gap being the time since the
 *    previous sample of g from the same source, capped at max_gap; the
 *    first reading of g covers nothing before itself (g is owned from its
 *    earliest reading). Of several sources the one covering most of the
 *    hour is used alone.
 *  - the owned window is [max(H, owned_from), min(H + 3600, now,
 *    missing_since)), owned_from being the earliest reading or, when
 *    earlier, the registration of the inventory server linked to the
 *    host; what no sample with a utilization covers is unknown.
 *  - consumers: pods seen on g (dcgm-exporter labels) and processes on g
 *    hold the sample interval their observation falls in; Kubernetes pods
 *    requesting GPUs on g's node without a per-GPU mapping hold N of the
 *    node's GPUs (see pod_heuristic); Slurm jobs matched to g
 *    (slurm_job_gpus) hold it from their start to their end (open while
 *    running); the runs of g's cloud instance (g a cloud placeholder,
 *    cloud_gpus) hold it from start to stop, measured or not: where no
 *    sample covers them their seconds are allocated with an unknown
 *    utilization (neither busy nor allocated-idle); inventory allocations
 *    of the server linked to g's host hold every GPU of it for their
 *    span. When several kinds are present the most specific wins (k8s >
 *    slurm > process > cloud > inventory), and concurrent consumers of
 *    that kind share the seconds equally, so the per-consumer rows add up
 *    to the GPU's.
 *  - busy: util >= threshold; allocated-idle: a consumer is known and
 *    util < threshold; idle: nobody and util < threshold. Busy with nobody
 *    known is consumer "unknown".
 * MIG: an instance counts its slice (fraction = the profile's leading
 * number over the parent's slice count, 4 on an A30 and 7 otherwise); a
 * parent with instances counts only the rest, 1 - the sum of its present
 * instances' fractions, so a physical GPU never counts more than once.
 * A cloud placeholder GPU of a fractional type (AWS g6f, Azure
 * NVadsA10_v5) counts its instance's gpu_fraction the same way. */
#include "store/store_int.h"
#include "store/usage_int.h"
#include "store/usage_hour_int.h"
#include "core/log.h"
#include "core/status.h"
#include "core/util.h"

#include <math.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#define COLS                                                                                       \
    "team, env, pool, cluster, cloud, model, datacenter_id, host_id, host, owned_s, allocated_s, " \
    "busy_s, alloc_idle_s, idle_s, unknown_s, measured_s, util_sum, util_max, mem_max_mib, "       \
    "mem_sum, energy_wh, temp_max_c, power_max_w, fraction, rate_micros, currency, price_id, "     \
    "updated_at"

#define STATEMENTS(X)                                                                              \
    X(GPU_INFO,                                                                                    \
      "SELECT g.uuid, g.model, g.host_id, h.hostname, h.datacenter_id, g.missing_since, "          \
      "g.parent_uuid, g.mig_profile, (SELECT COUNT(*) FROM gpus k WHERE k.host_id = g.host_id "    \
      "AND k.parent_uuid = g.uuid AND k.missing_since IS NULL), (SELECT MIN(CASE WHEN "            \
      "r.started_at IS NOT NULL AND r.started_at < i.first_seen THEN r.started_at ELSE "           \
      "i.first_seen END) FROM cloud_gpus m JOIN cloud_instances i ON i.id = m.instance_row LEFT "  \
      "JOIN cloud_runs r ON r.instance_row = i.id WHERE m.superseded_by = g.id) FROM gpus g LEFT " \
      "JOIN hosts h ON h.id = g.host_id WHERE g.id = :gid")                                        \
    X(GPU_CHILDREN, "SELECT mig_profile FROM gpus WHERE host_id = :hid AND parent_uuid = :uuid "   \
                    "AND missing_since IS NULL")                                                   \
    X(GPU_PARENT_MODEL, "SELECT model FROM gpus WHERE uuid = :uuid")                               \
    X(CLOUD_FRACTION, "SELECT i.gpu_fraction FROM cloud_gpus c JOIN cloud_instances i ON i.id = "  \
                      "c.instance_row WHERE c.gpu_id = :gid")                                      \
    X(OWNED_GET, "SELECT owned_from FROM usage_gpus WHERE gpu_id = :gid")                          \
    X(REGISTERED, "SELECT MIN(r.created_at) FROM host_links l JOIN resources r ON r.id = "         \
                  "l.resource_id WHERE l.host_id = :hid")                                          \
    X(OWNED_SET, "INSERT INTO usage_gpus (gpu_id, owned_from, updated_at) VALUES (:gid, :from, "   \
                 ":now) ON CONFLICT (gpu_id) DO UPDATE SET owned_from = excluded.owned_from, "     \
                 "updated_at = excluded.updated_at")                                               \
    X(HOUR_DEL, "DELETE FROM usage_hourly WHERE gpu_id = :gid AND hour = :hour")                   \
    X(CONS_DEL, "DELETE FROM usage_consumers WHERE gpu_id = :gid AND hour = :hour")                \
    X(HOUR_ADD,                                                                                    \
      "INSERT INTO usage_hourly (gpu_id, hour, " COLS ") VALUES (:gid, :hour, :team, :env, "       \
      ":pool, :cluster, :cloud, :model, :dc, :hid, :host, :owned, :alloc, :busy, :aidle, :idle, "  \
      ":unknown, :measured, :usum, :umax, :mmax, :msum, :wh, :tmax, :pmax, :fraction, :rate, "     \
      ":currency, :price, :now)")                                                                  \
    X(CONS_ADD,                                                                                    \
      "INSERT INTO usage_consumers (gpu_id, hour, kind, consumer, team, namespace, pod, "          \
      "container, username, process, tenant, project, allocated_s, busy_s, alloc_idle_s, "         \
      "util_sum, measured_s, util_max) VALUES (:gid, :hour, :kind, :consumer, :team, :ns, :pod, "  \
      ":container, :user, :process, :tenant, :project, :alloc, :busy, :aidle, :usum, :measured, "  \
      ":umax)")                                                                                    \
    X(HOUR_PREV, "SELECT MAX(hour) FROM usage_hourly WHERE gpu_id = :gid AND hour < :hour")        \
    X(HOUR_NEXT, "SELECT MIN(hour) FROM usage_hourly WHERE gpu_id = :gid AND hour > :hour")        \
    X(DAY_DEL, "DELETE FROM usage_daily WHERE gpu_id = :gid AND day = :day")                       \
    X(DAY_ADD,                                                                                     \
      "INSERT INTO usage_daily (gpu_id, day, " COLS ") SELECT f.gpu_id, CAST(:day AS BIGINT), "    \
      "f.team, f.env, f.pool, f.cluster, f.cloud, f.model, f.datacenter_id, f.host_id, f.host, "   \
      "s.owned_s, s.allocated_s, s.busy_s, s.alloc_idle_s, s.idle_s, s.unknown_s, s.measured_s, "  \
      "s.util_sum, s.util_max, s.mem_max_mib, s.mem_sum, s.energy_wh, s.temp_max_c, "              \
      "s.power_max_w, f.fraction, f.rate_micros, f.currency, f.price_id, CAST(:now AS BIGINT) "    \
      "FROM usage_hourly f, (SELECT SUM(owned_s) AS owned_s, SUM(allocated_s) AS allocated_s, "    \
      "SUM(busy_s) AS busy_s, SUM(alloc_idle_s) AS alloc_idle_s, SUM(idle_s) AS idle_s, "          \
      "SUM(unknown_s) AS unknown_s, SUM(measured_s) AS measured_s, SUM(util_sum) AS util_sum, "    \
      "MAX(util_max) AS util_max, MAX(mem_max_mib) AS mem_max_mib, SUM(mem_sum) AS mem_sum, "      \
      "SUM(energy_wh) AS energy_wh, MAX(temp_max_c) AS temp_max_c, MAX(power_max_w) AS "           \
      "power_max_w FROM usage_hourly WHERE gpu_id = :gid AND hour >= :day AND hour < "             \
      "CAST(:day AS BIGINT) + 86400) s WHERE f.gpu_id = :gid AND f.hour = (SELECT MIN(hour) FROM " \
      "usage_hourly WHERE gpu_id = :gid AND hour >= :day AND hour < CAST(:day AS BIGINT) + "       \
      "86400)")                                                                                    \
    X(IDLE_DAY_DEL, "DELETE FROM usage_idle_days WHERE gpu_id = :gid AND day = :day")              \
    X(IDLE_DAY_ADD,                                                                                \
      "INSERT INTO usage_idle_days (gpu_id, day, team, env, pool, cluster, cloud, model, "         \
      "datacenter_id, currency, idle_fs, idle_cost, first_hour, last_hour, idle_before, "          \
      "updated_at) SELECT CAST(:gid AS BIGINT), CAST(:day AS BIGINT), a.team, a.env, a.pool, "     \
      "a.cluster, a.cloud, a.model, a.datacenter_id, a.currency, a.fs, a.cost, a.first_hour, "     \
      "a.last_hour, CASE WHEN a.first_hour > :day AND EXISTS (SELECT 1 FROM usage_hourly p WHERE " \
      "p.gpu_id = :gid AND p.hour = a.first_hour - 3600 AND p.allocated_s = 0 AND p.idle_s > 0) "  \
      "THEN 1 ELSE 0 END, CAST(:now AS BIGINT) FROM (SELECT team, env, pool, cluster, cloud, "     \
      "model, datacenter_id, currency, SUM(fs) AS fs, SUM(cost) AS cost, MIN(hour) AS "            \
      "first_hour, MAX(hour) AS last_hour FROM (SELECT x.hour AS top, h.hour, h.team, h.env, "     \
      "h.pool, h.cluster, h.cloud, h.model, h.datacenter_id, h.currency, h.idle_s * h.fraction "   \
      "AS fs, h.idle_s * h.fraction * h.rate_micros AS cost, ROW_NUMBER() OVER (ORDER BY h.hour "  \
      "DESC) AS rn FROM usage_hourly x JOIN usage_hourly h ON h.gpu_id = x.gpu_id AND h.hour >= "  \
      ":day AND h.hour <= x.hour WHERE x.gpu_id = :gid AND x.hour = (SELECT MAX(hour) FROM "       \
      "usage_hourly WHERE gpu_id = :gid AND hour >= :day AND hour < CAST(:day AS BIGINT) + "       \
      "86400) AND x.allocated_s = 0 AND x.idle_s > 0 AND h.allocated_s = 0 AND h.idle_s > 0 AND "  \
      "h.team IS NOT DISTINCT FROM x.team AND h.env IS NOT DISTINCT FROM x.env AND h.pool IS NOT " \
      "DISTINCT FROM x.pool AND h.cluster IS NOT DISTINCT FROM x.cluster AND h.cloud IS NOT "      \
      "DISTINCT FROM x.cloud AND h.model IS NOT DISTINCT FROM x.model AND h.datacenter_id IS NOT " \
      "DISTINCT FROM x.datacenter_id AND h.currency IS NOT DISTINCT FROM x.currency) t WHERE "     \
      "(top - hour) / 3600 + 1 = rn GROUP BY team, env, pool, cluster, cloud, model, "             \
      "datacenter_id, currency) a")                                                                \
    X(GROUPS_DEL, "DELETE FROM usage_groups_daily WHERE day = :day")                               \
    X(GROUPS_ADD,                                                                                  \
      "INSERT INTO usage_groups_daily (day, team, env, pool, cluster, cloud, model, "              \
      "datacenter_id, currency, gpus, owned_s, allocated_s, busy_s, alloc_idle_s, idle_s, "        \
      "unknown_s, util_sum, measured_s, energy_wh, owned_cost, busy_cost, alloc_idle_cost, "       \
      "idle_cost, unknown_cost, unpriced_s, updated_at) SELECT day, team, env, pool, cluster, "    \
      "cloud, model, datacenter_id, COALESCE(currency, ''), " USAGE_GROUP_TERMS                    \
      ", CAST(:now AS BIGINT) FROM "                                                               \
      "usage_daily WHERE day = :day GROUP BY day, team, env, pool, cluster, cloud, model, "        \
      "datacenter_id, COALESCE(currency, '')")                                                     \
    X(IV_FIND,                                                                                     \
      "SELECT id, started_at, ended_at FROM usage_intervals WHERE gpu_id = :gid AND kind = :kind " \
      "AND consumer = :consumer AND started_at <= :last AND (ended_at IS NULL OR ended_at >= "     \
      ":first) ORDER BY started_at LIMIT 1")                                                       \
    X(IV_ADD, "INSERT INTO usage_intervals (gpu_id, kind, consumer, team, namespace, pod, "        \
              "container, username, process, tenant, project, started_at, ended_at, updated_at) "  \
              "VALUES (:gid, :kind, :consumer, :team, :ns, :pod, :container, :user, :process, "    \
              ":tenant, :project, :start, :end, :now)")                                            \
    X(IV_SET, "UPDATE usage_intervals SET started_at = :start, ended_at = :end, team = :team, "    \
              "updated_at = :now WHERE id = :id")                                                  \
    X(IV_OF_HOUR,                                                                                  \
      "SELECT id, kind, consumer, started_at, ended_at FROM usage_intervals WHERE "                \
      "gpu_id = :gid AND ended_at IS NOT NULL AND started_at < :hi AND ended_at > :lo "            \
      "ORDER BY id LIMIT 256")                                                                     \
    X(IV_DEL, "DELETE FROM usage_intervals WHERE id = :id")                                        \
    X(IV_TRIM, "UPDATE usage_intervals SET started_at = :start, ended_at = :end, updated_at = "    \
               ":now WHERE id = :id")                                                              \
    X(IV_CLOSE_ABSENT,                                                                             \
      "UPDATE usage_intervals SET ended_at = CASE WHEN updated_at < :hour THEN updated_at ELSE "   \
      ":hour END, updated_at = :now WHERE gpu_id = :gid AND ended_at IS NULL AND started_at < "    \
      ":hour")

enum stmt_id { STATEMENTS(STORE_AS_ENUM) ST__COUNT };
static const char *const stmt_sql[] = {STATEMENTS(STORE_AS_SQL)};

static struct db_stmt *prep(struct conn *c, enum stmt_id id) { return db_prep(c, stmt_sql[id]); }

static bool usable(double v) { return !isnan(v); }

/* Builds the covered segments of GPU h->gid from its samples xs[0..n)
 * (sorted by source, then time): the source covering most of the owned
 * window is used. */
static int build_segments(struct hour_calc *h, const struct usage_sample *xs, size_t n,
                          int64_t owned_from)
{
    size_t best_lo = 0, best_hi = 0;
    int64_t best_cover = -1;

    for (size_t i = 0; i < n;) {
        size_t j = i;
        int64_t cover = 0;
        while (j < n && xs[j].src == xs[i].src) {
            int64_t prev = j > i ? xs[j - 1].ts : xs[j].ts - usage_config()->max_gap_s;
            int64_t gap = xs[j].ts - prev, a, b;
            if (gap > usage_config()->max_gap_s)
                gap = usage_config()->max_gap_s;
            a = xs[j].ts - gap;
            if (a < owned_from)
                a = owned_from;
            if (a < h->lo)
                a = h->lo;
            b = xs[j].ts < h->hi ? xs[j].ts : h->hi;
            if (b > a && usable(xs[j].ua))
                cover += b - a;
            j++;
        }
        if (cover > best_cover) {
            best_cover = cover;
            best_lo = i;
            best_hi = j;
        }
        i = j;
    }
    h->nsegs = 0;
    if (best_hi == best_lo)
        return GI_OK;
    h->segs = calloc(best_hi - best_lo, sizeof *h->segs);
    if (!h->segs)
        return GI_INTERNAL;
    for (size_t j = best_lo; j < best_hi; j++) {
        int64_t prev = j > best_lo ? xs[j - 1].ts : xs[j].ts - usage_config()->max_gap_s;
        int64_t gap = xs[j].ts - prev, a, b, obs_lo;
        if (gap > usage_config()->max_gap_s)
            gap = usage_config()->max_gap_s;
        obs_lo = xs[j].ts - gap;
        a = xs[j].ts - gap;
        if (a < owned_from)
            a = owned_from;
        if (a < h->lo)
            a = h->lo;
        b = xs[j].ts < h->hi ? xs[j].ts : h->hi;
        if (b <= a || !usable(xs[j].ua))
            continue;
        h->segs[h->nsegs++] = (struct seg){.start = a, .end = b, .obs_lo = obs_lo, .x = &xs[j]};
    }
    return GI_OK;
}

/* What one hour adds up to. */
struct totals {
    double alloc, busy, aidle, idle, measured, usum, umax, mmax, msum, wh, tmax, pmax;
};

static double max_of(double a, double b)
{
    if (isnan(a))
        return b;
    if (isnan(b))
        return a;
    return a > b ? a : b;
}

static void consumer_add(struct consumer *k, int64_t a, int64_t b, double len, bool busy,
                         double util, double umax)
{
    k->alloc += len;
    if (busy)
        k->busy += len;
    else
        k->aidle += len;
    k->usum += util * len;
    k->meas += len;
    k->umax = max_of(k->umax, umax);
    if (!k->first || a < k->first)
        k->first = a;
    if (b > k->last)
        k->last = b;
}

/* Classifies one stretch [a, b) of segment i. */
static void classify(struct hour_calc *h, size_t i, int64_t a, int64_t b, struct totals *t)
{
    const struct usage_sample *x = h->segs[i].x;
    double len = (double)(b - a), util = x->ua, umax = usable(x->um) ? x->um : x->ua;
    bool busy = util >= usage_config()->busy_pct;
    struct consumer *act[MAX_CONSUMERS];
    size_t nact = 0;
    int top = 0;

    for (size_t k = 0; k < h->ncons; k++) {
        struct consumer *q = &h->cons[k];
        bool on = q->iv_hi ? (q->iv_lo <= a && q->iv_hi >= b) : (q->on && q->on[i]);
        if (on && q->rank > top)
            top = q->rank;
    }
    for (size_t k = 0; k < h->ncons && top; k++) {
        struct consumer *q = &h->cons[k];
        bool on = q->iv_hi ? (q->iv_lo <= a && q->iv_hi >= b) : (q->on && q->on[i]);
        if (on && q->rank == top)
            act[nact++] = q;
    }
    t->measured += len;
    t->usum += util * len;
    t->umax = max_of(t->umax, umax);
    if (usable(x->mem)) {
        t->msum += x->mem * len;
        t->mmax = max_of(t->mmax, x->mem);
    }
    if (usable(x->pw)) {
        t->wh += x->pw * len / 3600.0;
        t->pmax = max_of(t->pmax, x->pw);
    }
    t->tmax = max_of(t->tmax, x->temp);
    if (nact == 0 && busy) {
        struct consumer *u = &h->cons[MAX_CONSUMERS];
        act[nact++] = u;
    }
    if (nact == 0) {
        t->idle += len;
        return;
    }
    t->alloc += len;
    if (busy)
        t->busy += len;
    else
        t->aidle += len;
    for (size_t k = 0; k < nact; k++)
        consumer_add(act[k], a, b, len / (double)nact, busy, util, umax);
}

/* Splits each segment at the interval consumers' edges and classifies
 * the pieces. */
static void classify_all(struct hour_calc *h, struct totals *t)
{
    for (size_t i = 0; i < h->nsegs; i++) {
        int64_t a = h->segs[i].start, end = h->segs[i].end;
        while (a < end) {
            int64_t b = end;
            for (size_t k = 0; k < h->ncons; k++) {
                const struct consumer *q = &h->cons[k];
                if (!q->iv_hi)
                    continue;
                if (q->iv_lo > a && q->iv_lo < b)
                    b = q->iv_lo;
                if (q->iv_hi > a && q->iv_hi < b)
                    b = q->iv_hi;
            }
            classify(h, i, a, b, t);
            a = b;
        }
    }
}

/* Adds the unmeasured stretch [a, b) to the cloud consumers holding all
 * of it: allocated, neither busy nor allocated-idle (its utilization is
 * unknown). */
static void classify_gap(struct hour_calc *h, int64_t a, int64_t b, struct totals *t)
{
    struct consumer *act[MAX_CONSUMERS];
    size_t nact = 0;

    for (size_t k = 0; k < h->ncons; k++) {
        struct consumer *q = &h->cons[k];
        if (q->rank == K_CLOUD && q->iv_lo <= a && q->iv_hi >= b)
            act[nact++] = q;
    }
    if (nact == 0)
        return;
    t->alloc += (double)(b - a);
    for (size_t k = 0; k < nact; k++) {
        act[k]->alloc += (double)(b - a) / (double)nact;
        if (!act[k]->first || a < act[k]->first)
            act[k]->first = a;
        if (b > act[k]->last)
            act[k]->last = b;
    }
}

/* The owned time no segment covers, split at the cloud consumers' edges:
 * a running cloud instance holds its GPUs whether or not anything
 * measured them. */
static void classify_unmeasured(struct hour_calc *h, struct totals *t)
{
    int64_t a = h->lo;

    while (a < h->hi) {
        int64_t b = h->hi;
        bool covered = false;
        for (size_t i = 0; i < h->nsegs; i++) {
            if (h->segs[i].start <= a && h->segs[i].end > a) {
                a = h->segs[i].end;
                covered = true;
                break;
            }
            if (h->segs[i].start > a && h->segs[i].start < b)
                b = h->segs[i].start;
        }
        if (covered)
            continue;
        for (size_t k = 0; k < h->ncons; k++) {
            const struct consumer *q = &h->cons[k];
            if (q->rank != K_CLOUD)
                continue;
            if (q->iv_lo > a && q->iv_lo < b)
                b = q->iv_lo;
            if (q->iv_hi > a && q->iv_hi < b)
                b = q->iv_hi;
        }
        classify_gap(h, a, b, t);
        a = b;
    }
}

/* The share of a whole GPU: see the top of the file. */
static double slice_share(const char *profile, const char *parent_model)
{
    char *end = NULL;
    long n = profile && *profile ? strtol(profile, &end, 10) : 0;
    double slices = parent_model && strstr(parent_model, "A30") ? 4.0 : 7.0;

    if (n <= 0 || end == profile)
        return 1.0 / slices;
    return (double)n / slices > 1.0 ? 1.0 : (double)n / slices;
}

static int gpu_fraction(struct conn *c, struct hour_calc *h, double *fraction)
{
    struct db_stmt *s;
    char pmodel[128] = "";
    double used = 0;
    int step;

    *fraction = 1.0;
    /* A cloud placeholder of a fractional type (g6f, NVadsA10) is a
     * share of one GPU. */
    if (strncmp(h->uuid, "cloud:", 6) == 0) {
        if (!(s = prep(c, ST_CLOUD_FRACTION)))
            return GI_INTERNAL;
        db_bind_int(s, ":gid", h->gid);
        if ((step = db_step(c, s)) == DB_ROW && !db_col_is_null(s, 0) && db_col_dbl(s, 0) > 0 &&
            db_col_dbl(s, 0) < 1)
            *fraction = db_col_dbl(s, 0);
        db_reset(s);
        return step == DB_ROW || step == DB_DONE ? GI_OK : db_status(step);
    }
    if (h->parent[0]) {
        if (!(s = prep(c, ST_GPU_PARENT_MODEL)))
            return GI_INTERNAL;
        db_bind_text(s, ":uuid", h->parent);
        if ((step = db_step(c, s)) == DB_ROW && db_col_text(s, 0))
            gi_strlcpy(pmodel, db_col_text(s, 0), sizeof pmodel);
        db_reset(s);
        *fraction = slice_share(h->profile, pmodel[0] ? pmodel : h->model);
        return step == DB_ROW || step == DB_DONE ? GI_OK : db_status(step);
    }
    if (h->children == 0)
        return GI_OK;
    if (!(s = prep(c, ST_GPU_CHILDREN)))
        return GI_INTERNAL;
    db_bind_text(s, ":uuid", h->uuid);
    db_bind_int(s, ":hid", h->host_id);
    while ((step = db_step(c, s)) == DB_ROW)
        used += slice_share(db_col_text(s, 0), h->model);
    db_reset(s);
    *fraction = used >= 1.0 ? 0.0 : 1.0 - used;
    return step == DB_DONE ? GI_OK : db_status(step);
}

static int gpu_info(struct conn *c, struct hour_calc *h, bool *found)
{
    struct db_stmt *s = prep(c, ST_GPU_INFO);
    int step;

    *found = false;
    if (!s)
        return GI_INTERNAL;
    db_bind_int(s, ":gid", h->gid);
    step = db_step(c, s);
    if (step == DB_ROW) {
        *found = true;
        gi_strlcpy(h->uuid, db_col_text(s, 0), sizeof h->uuid);
        gi_strlcpy(h->model, db_col_text(s, 1) ? db_col_text(s, 1) : "", sizeof h->model);
        h->has_host = !db_col_is_null(s, 2);
        h->host_id = db_col_int(s, 2);
        gi_strlcpy(h->host, db_col_text(s, 3) ? db_col_text(s, 3) : "", sizeof h->host);
        h->has_dc = !db_col_is_null(s, 4);
        h->dc_id = db_col_int(s, 4);
        h->missing = db_col_is_null(s, 5) ? 0 : db_col_int(s, 5);
        gi_strlcpy(h->parent, db_col_text(s, 6) ? db_col_text(s, 6) : "", sizeof h->parent);
        gi_strlcpy(h->profile, db_col_text(s, 7) ? db_col_text(s, 7) : "", sizeof h->profile);
        h->children = db_col_int(s, 8);
        h->merged_from = db_col_is_null(s, 9) ? 0 : db_col_int(s, 9);
    }
    db_reset(s);
    return step == DB_ROW || step == DB_DONE ? GI_OK : db_status(step);
}

/* The start of the GPU's owned span, moved earlier when these samples
 * hold an earlier reading; the hour the old start fell in is marked, as
 * its window grows. */
static int owned_from_update(struct conn *c, struct hour_calc *h, const struct usage_sample *xs,
                             size_t n, int64_t *owned_from)
{
    struct db_stmt *s = prep(c, ST_OWNED_GET);
    int64_t have = 0, first = INT64_MAX;
    bool none;
    int rc;

    if (!s)
        return GI_INTERNAL;
    db_bind_int(s, ":gid", h->gid);
    if ((rc = usage_fetch_opt_int(c, s, &have, &none)) != GI_OK)
        return rc;
    for (size_t i = 0; i < n; i++)
        if (xs[i].ts < first)
            first = xs[i].ts;
    *owned_from = none ? first : have;
    if (first == INT64_MAX || (!none && first >= have))
        return GI_OK;
    *owned_from = first;
    if (!(s = prep(c, ST_OWNED_SET)))
        return GI_INTERNAL;
    db_bind_int(s, ":gid", h->gid);
    db_bind_int(s, ":from", first);
    db_bind_int(s, ":now", h->now);
    if ((rc = db_exec_done(c, s)) != GI_OK)
        return rc;
    if (!none && usage_hour_of(have) != h->hour)
        rc = usage_mark_hour(c, h->gid, usage_hour_of(have), h->now);
    return rc;
}

/* Moves the start of the owned span back to the registration of the
 * inventory server linked to the GPU's host, when that is earlier. */
static int registered(struct conn *c, struct hour_calc *h)
{
    struct db_stmt *s;
    int64_t at = 0;
    bool none = true;
    int rc;

    if (!h->has_host)
        return GI_OK;
    if (!(s = prep(c, ST_REGISTERED)))
        return GI_INTERNAL;
    db_bind_int(s, ":hid", h->host_id);
    if ((rc = usage_fetch_opt_int(c, s, &at, &none)) == GI_OK && !none && at > 0 &&
        at < h->owned_lo)
        h->owned_lo = at;
    return rc;
}

static int write_hour(struct conn *c, struct hour_calc *h, const struct totals *t, double fraction)
{
    struct db_stmt *s;
    int64_t rate = 0, price = 0;
    char cur[4] = "";
    double owned = (double)(h->hi - h->lo);
    int rc;

    rc = price_rate(c, h->model[0] ? h->model : NULL, h->owner.env, h->owner.cloud, h->owner.pool,
                    h->hour, &rate, cur, &price);
    if (rc != GI_OK && rc != GI_NOT_FOUND)
        return rc;
    if (!(s = prep(c, ST_HOUR_ADD)))
        return GI_INTERNAL;
    db_bind_int(s, ":gid", h->gid);
    db_bind_int(s, ":hour", h->hour);
    db_bind_opt_text(s, ":team", h->owner.team);
    db_bind_opt_text(s, ":env", h->owner.env);
    db_bind_opt_text(s, ":pool", h->owner.pool);
    db_bind_opt_text(s, ":cluster", h->owner.cluster);
    db_bind_opt_text(s, ":cloud", h->owner.cloud);
    db_bind_opt_text(s, ":model", h->model);
    db_bind_opt_int(s, ":dc", h->has_dc ? h->dc_id : -1);
    db_bind_opt_int(s, ":hid", h->has_host ? h->host_id : -1);
    db_bind_opt_text(s, ":host", h->host);
    db_bind_dbl(s, ":owned", owned);
    db_bind_dbl(s, ":alloc", t->alloc);
    db_bind_dbl(s, ":busy", t->busy);
    db_bind_dbl(s, ":aidle", t->aidle);
    db_bind_dbl(s, ":idle", t->idle);
    db_bind_dbl(s, ":unknown", owned - t->measured > 0 ? owned - t->measured : 0);
    db_bind_dbl(s, ":measured", t->measured);
    db_bind_dbl(s, ":usum", t->usum);
    db_bind_dbl(s, ":umax", t->umax);
    db_bind_dbl(s, ":mmax", t->mmax);
    db_bind_dbl(s, ":msum", t->msum);
    db_bind_dbl(s, ":wh", t->wh);
    db_bind_dbl(s, ":tmax", t->tmax);
    db_bind_dbl(s, ":pmax", t->pmax);
    db_bind_dbl(s, ":fraction", fraction);
    db_bind_opt_int(s, ":rate", rc == GI_OK ? rate : -1);
    db_bind_opt_text(s, ":currency", rc == GI_OK ? cur : "");
    db_bind_opt_int(s, ":price", rc == GI_OK && price > 0 ? price : -1);
    db_bind_int(s, ":now", h->now);
    return db_exec_done(c, s);
}

/* Merges the consumer's stretch into its interval: one that overlaps or
 * adjoins it (within max_gap) grows, else a new one starts. The interval
 * is open (ended_at NULL) while the consumer holds the GPU to within
 * max_gap of now; recomputing an older hour never closes it. */
static int write_interval(struct conn *c, struct hour_calc *h, const struct consumer *k)
{
    struct db_stmt *s = prep(c, ST_IV_FIND);
    bool open =
        k->last >= h->hi - usage_config()->max_gap_s && h->hi >= h->now - usage_config()->max_gap_s;
    bool found = false, was_open = false;
    int64_t id = 0, start = k->first, end = k->last;
    int step;

    if (!s)
        return GI_INTERNAL;
    db_bind_int(s, ":gid", h->gid);
    db_bind_text(s, ":kind", k->kind);
    db_bind_text(s, ":consumer", k->key);
    db_bind_int(s, ":first", k->first - usage_config()->max_gap_s);
    db_bind_int(s, ":last", k->last + usage_config()->max_gap_s);
    if ((step = db_step(c, s)) == DB_ROW) {
        found = true;
        id = db_col_int(s, 0);
        if (db_col_int(s, 1) < start)
            start = db_col_int(s, 1);
        was_open = db_col_is_null(s, 2);
        if (!was_open && db_col_int(s, 2) > end)
            end = db_col_int(s, 2);
    }
    db_reset(s);
    if (step != DB_ROW && step != DB_DONE)
        return db_status(step);
    /* A stretch that ended inside this hour closes the interval only if
     * nothing later kept it open. */
    if (was_open && !open && k->last < h->hi - usage_config()->max_gap_s &&
        h->hour < usage_hour_of(h->now) - 3600)
        open = true;
    /* A cloud run that ended (the instance stopped) is over, however
     * recently. */
    if (k->rank == K_CLOUD && k->iv_hi != INT64_MAX && k->iv_hi <= h->hi)
        open = false;
    if (!(s = prep(c, found ? ST_IV_SET : ST_IV_ADD)))
        return GI_INTERNAL;
    db_bind_int(s, ":id", id);
    db_bind_int(s, ":gid", h->gid);
    db_bind_text(s, ":kind", k->kind);
    db_bind_text(s, ":consumer", k->key);
    db_bind_opt_text(s, ":team", k->team);
    db_bind_opt_text(s, ":ns", k->ns);
    db_bind_opt_text(s, ":pod", k->pod);
    db_bind_opt_text(s, ":container", k->container);
    db_bind_opt_text(s, ":user", k->user);
    db_bind_opt_text(s, ":process", k->process);
    db_bind_opt_text(s, ":tenant", k->tenant);
    db_bind_opt_text(s, ":project", k->project);
    db_bind_int(s, ":start", start);
    db_bind_opt_int(s, ":end", open ? -1 : end);
    db_bind_int(s, ":now", h->now);
    return db_exec_done(c, s);
}

/* Whether kind/key holds allocated time in this hour's result. */
static bool consumer_present(const struct hour_calc *h, const char *kind, const char *key)
{
    for (size_t i = 0; i <= MAX_CONSUMERS; i++) {
        const struct consumer *k = &h->cons[i];
        if ((i < h->ncons || i == MAX_CONSUMERS) && k->alloc > 0 && strcmp(k->kind, kind) == 0 &&
            strcmp(k->key, key) == 0)
            return true;
    }
    return false;
}

/* Closed intervals of consumers this recomputed hour no longer has (late
 * data named who it was: a Slurm job instead of "unknown", say) give the
 * hour back: one inside the hour goes, one reaching into it from either
 * side ends (or starts) at the hour's edge. One spanning the whole hour
 * and beyond is left whole. */
static int trim_absent(struct conn *c, struct hour_calc *h)
{
    struct iv {
        int64_t id, start, end;
    } ivs[256];
    struct db_stmt *s = prep(c, ST_IV_OF_HOUR);
    int64_t lo = h->hour, hi = h->hour + 3600;
    size_t n = 0;
    int step, rc = GI_OK;

    if (!s)
        return GI_INTERNAL;
    db_bind_int(s, ":gid", h->gid);
    db_bind_int(s, ":lo", lo);
    db_bind_int(s, ":hi", hi);
    while ((step = db_step(c, s)) == DB_ROW && n < sizeof ivs / sizeof *ivs) {
        if (consumer_present(h, db_col_text(s, 1), db_col_text(s, 2)))
            continue;
        ivs[n++] = (struct iv){db_col_int(s, 0), db_col_int(s, 3), db_col_int(s, 4)};
    }
    db_reset(s);
    if (step != DB_DONE && step != DB_ROW)
        return db_status(step);
    for (size_t i = 0; i < n && rc == GI_OK; i++) {
        int64_t start = ivs[i].start, end = ivs[i].end;
        bool inside = start >= lo && end <= hi;
        if (start < lo && end > hi)
            continue;
        if (!(s = prep(c, inside ? ST_IV_DEL : ST_IV_TRIM)))
            return GI_INTERNAL;
        db_bind_int(s, ":id", ivs[i].id);
        if (!inside) {
            db_bind_int(s, ":start", start >= lo ? hi : start);
            db_bind_int(s, ":end", start >= lo ? end : lo);
            db_bind_int(s, ":now", h->now);
        }
        rc = db_exec_done(c, s);
    }
    return rc;
}

static int write_consumers(struct conn *c, struct hour_calc *h)
{
    struct db_stmt *s;
    int rc;

    if ((rc = trim_absent(c, h)) != GI_OK)
        return rc;

    /* Intervals still open that nobody held in this recent hour end when
     * they were last written, at the latest at the hour's start (a
     * consumer gone without a trace). */
    if (h->hour >= usage_hour_of(h->now) - 3600) {
        if (!(s = prep(c, ST_IV_CLOSE_ABSENT)))
            return GI_INTERNAL;
        db_bind_int(s, ":gid", h->gid);
        db_bind_int(s, ":hour", h->hour);
        db_bind_int(s, ":now", h->now);
        if ((rc = db_exec_done(c, s)) != GI_OK)
            return rc;
    }
    for (size_t i = 0; i <= MAX_CONSUMERS; i++) {
        struct consumer *k = &h->cons[i];
        if (i >= h->ncons && i != MAX_CONSUMERS)
            continue;
        if (k->alloc <= 0)
            continue;
        if ((rc = usage_hour_consumer_team(c, h, k)) != GI_OK)
            return rc;
        if (!(s = prep(c, ST_CONS_ADD)))
            return GI_INTERNAL;
        db_bind_int(s, ":gid", h->gid);
        db_bind_int(s, ":hour", h->hour);
        db_bind_text(s, ":kind", k->kind);
        db_bind_text(s, ":consumer", k->key);
        db_bind_opt_text(s, ":team", k->team);
        db_bind_opt_text(s, ":ns", k->ns);
        db_bind_opt_text(s, ":pod", k->pod);
        db_bind_opt_text(s, ":container", k->container);
        db_bind_opt_text(s, ":user", k->user);
        db_bind_opt_text(s, ":process", k->process);
        db_bind_opt_text(s, ":tenant", k->tenant);
        db_bind_opt_text(s, ":project", k->project);
        db_bind_dbl(s, ":alloc", k->alloc);
        db_bind_dbl(s, ":busy", k->busy);
        db_bind_dbl(s, ":aidle", k->aidle);
        db_bind_dbl(s, ":usum", k->usum);
        db_bind_dbl(s, ":measured", k->meas);
        db_bind_dbl(s, ":umax", k->umax);
        if ((rc = db_exec_done(c, s)) != GI_OK)
            return rc;
        if ((rc = write_interval(c, h, k)) != GI_OK)
            return rc;
    }
    return GI_OK;
}

/* Re-sums the GPU's day from its hours (usage_daily, usage_idle_days). */
int usage_write_day(struct conn *c, int64_t gid, int64_t day, int64_t now)
{
    struct db_stmt *s = prep(c, ST_DAY_DEL);
    int rc;

    if (!s)
        return GI_INTERNAL;
    db_bind_int(s, ":gid", gid);
    db_bind_int(s, ":day", day);
    if ((rc = db_exec_done(c, s)) != GI_OK)
        return rc;
    if (!(s = prep(c, ST_DAY_ADD)))
        return GI_INTERNAL;
    db_bind_int(s, ":gid", gid);
    db_bind_int(s, ":day", day);
    db_bind_int(s, ":now", now);
    if ((rc = db_exec_done(c, s)) != GI_OK)
        return rc;
    /* The day's idle tail (usage_idle_days, migration 063): its idle hours
     * in one combination of the filter dimensions up to its newest hour,
     * or no row. */
    if (!(s = prep(c, ST_IDLE_DAY_DEL)))
        return GI_INTERNAL;
    db_bind_int(s, ":gid", gid);
    db_bind_int(s, ":day", day);
    if ((rc = db_exec_done(c, s)) != GI_OK)
        return rc;
    if (!(s = prep(c, ST_IDLE_DAY_ADD)))
        return GI_INTERNAL;
    db_bind_int(s, ":gid", gid);
    db_bind_int(s, ":day", day);
    db_bind_int(s, ":now", now);
    return db_exec_done(c, s);
}

/* Replaces the day's rows of usage_groups_daily by the sums of its
 * usage_daily rows, so that the group table always matches them; called
 * once per day re-summed, inside the same transaction. */
int usage_write_groups(struct conn *c, int64_t day, int64_t now)
{
    struct db_stmt *s = prep(c, ST_GROUPS_DEL);
    int rc;

    if (!s)
        return GI_INTERNAL;
    db_bind_int(s, ":day", day);
    if ((rc = db_exec_done(c, s)) != GI_OK)
        return rc;
    if (!(s = prep(c, ST_GROUPS_ADD)))
        return GI_INTERNAL;
    db_bind_int(s, ":day", day);
    db_bind_int(s, ":now", now);
    if ((rc = db_exec_done(c, s)) == GI_OK)
        rc = usage_host_days_write(c, day, now);
    if (rc == GI_OK)
        rc = usage_gpu_blocks_write(c, day, now);
    return rc != GI_OK ? rc : insight_sums_day(c, day, now);
}

static int fill_trailing(struct conn *c, struct hour_calc *h);

/* Hours of a present GPU with no row between this one and its neighbours
 * (or, after the newest, up to now) are marked, so that a gap without
 * data still counts as owned and unknown. */
static int fill_gaps(struct conn *c, struct hour_calc *h)
{
    struct db_stmt *s = prep(c, ST_HOUR_PREV);
    int64_t prev, next;
    bool none;
    int rc;

    if (!s)
        return GI_INTERNAL;
    db_bind_int(s, ":gid", h->gid);
    db_bind_int(s, ":hour", h->hour);
    if ((rc = usage_fetch_opt_int(c, s, &prev, &none)) != GI_OK)
        return rc;
    if (!none && prev < h->hour - 3600 &&
        (rc = usage_mark_hours(c, h->gid, prev + 3600, h->hour - 3600, h->now)) != GI_OK)
        return rc;
    /* Registered in the inventory before its first reading: owned (and
     * unknown) from then on. */
    if (none && h->owned_lo < h->hour &&
        (rc = usage_mark_hours(c, h->gid, usage_hour_of(h->owned_lo), h->hour - 3600, h->now)) !=
            GI_OK)
        return rc;
    if (!(s = prep(c, ST_HOUR_NEXT)))
        return GI_INTERNAL;
    db_bind_int(s, ":gid", h->gid);
    db_bind_int(s, ":hour", h->hour);
    if ((rc = usage_fetch_opt_int(c, s, &next, &none)) != GI_OK)
        return rc;
    if (none)
        return fill_trailing(c, h);
    if (next > h->hour + 3600)
        rc = usage_mark_hours(c, h->gid, h->hour + 3600, next - 3600, h->now);
    return rc;
}

/* After the GPU's newest row: marks the hours up to now, oldest first,
 * stopping at the first one already marked (the rest of the run was
 * marked by an earlier fill). */
static int fill_trailing(struct conn *c, struct hour_calc *h)
{
    int64_t last = usage_hour_of(h->now);
    int rc = GI_OK;

    if (h->missing)
        last = usage_hour_of(h->missing);
    if (last - h->hour > (int64_t)FILL_MAX_HOURS * 3600)
        last = h->hour + (int64_t)FILL_MAX_HOURS * 3600;
    for (int64_t t = h->hour + 3600; t <= last && rc == GI_OK; t += 3600) {
        if ((rc = usage_mark_hour(c, h->gid, t, h->now)) == GI_OK && db_changes(c) == 0)
            break;
    }
    return rc;
}

static int clear_hour(struct conn *c, int64_t gid, int64_t hour)
{
    struct db_stmt *s = prep(c, ST_HOUR_DEL);
    int rc;

    if (!s)
        return GI_INTERNAL;
    db_bind_int(s, ":gid", gid);
    db_bind_int(s, ":hour", hour);
    if ((rc = db_exec_done(c, s)) != GI_OK)
        return rc;
    if (!(s = prep(c, ST_CONS_DEL)))
        return GI_INTERNAL;
    db_bind_int(s, ":gid", gid);
    db_bind_int(s, ":hour", hour);
    return db_exec_done(c, s);
}

/* Recomputes GPU gid's hour from its samples xs[0..n). */
int usage_compute_hour(struct conn *c, int64_t gid, int64_t hour, int64_t now,
                       const struct usage_sample *xs, size_t n, const struct usage_sample *all,
                       size_t nall)
{
    struct hour_calc *h = calloc(1, sizeof *h);
    struct totals t = {.umax = NAN, .mmax = NAN, .tmax = NAN, .pmax = NAN};
    int64_t owned_from = 0;
    double fraction = 1;
    bool found;
    int rc;

    if (!h)
        return GI_INTERNAL;
    h->gid = gid;
    h->hour = hour;
    h->now = now;
    h->chunk = all;
    h->nchunk = nall;
    gi_strlcpy(h->cons[MAX_CONSUMERS].kind, "unknown", sizeof h->cons[0].kind);
    gi_strlcpy(h->cons[MAX_CONSUMERS].key, "unknown", sizeof h->cons[0].key);
    h->cons[MAX_CONSUMERS].umax = NAN;
    if ((rc = gpu_info(c, h, &found)) != GI_OK || !found)
        goto cleanup;
    if ((rc = clear_hour(c, gid, hour)) != GI_OK)
        goto cleanup;
    if ((rc = owned_from_update(c, h, xs, n, &owned_from)) != GI_OK)
        goto cleanup;
    /* A cloud placeholder has no readings: owned from its instance's. */
    if (owned_from == INT64_MAX && (rc = usage_cloud_owned(c, gid, &owned_from)) != GI_OK)
        goto cleanup;
    h->owned_lo = owned_from;
    if (owned_from != INT64_MAX && (rc = registered(c, h)) != GI_OK)
        goto cleanup;
    /* A real GPU cloud placeholders were merged into: owned from theirs. */
    if (h->merged_from > 0 && h->merged_from < h->owned_lo)
        h->owned_lo = h->merged_from;
    if (owned_from == INT64_MAX && h->merged_from > 0)
        owned_from = h->merged_from;
    h->lo = h->owned_lo > hour ? h->owned_lo : hour;
    h->hi = hour + 3600 < now ? hour + 3600 : now;
    if (h->missing && h->missing < h->hi)
        h->hi = h->missing;
    if (owned_from == INT64_MAX || h->hi <= h->lo) /* not owned in this hour */
        goto cleanup;
    if ((rc = owner_resolve(c, gid, hour, &h->owner)) != GI_OK)
        goto cleanup;
    if ((rc = build_segments(h, xs, n, owned_from)) != GI_OK)
        goto cleanup;
    if ((rc = usage_observed_consumers(c, h)) != GI_OK ||
        (rc = usage_pod_heuristic(c, h)) != GI_OK || (rc = usage_slurm_consumers(c, h)) != GI_OK ||
        (rc = usage_cloud_consumers(c, h)) != GI_OK ||
        (rc = usage_inventory_consumers(c, h)) != GI_OK)
        goto cleanup;
    classify_all(h, &t);
    classify_unmeasured(h, &t);
    if ((rc = gpu_fraction(c, h, &fraction)) != GI_OK)
        goto cleanup;
    if ((rc = write_hour(c, h, &t, fraction)) != GI_OK)
        goto cleanup;
    if ((rc = write_consumers(c, h)) != GI_OK)
        goto cleanup;
    rc = fill_gaps(c, h);
cleanup:
    for (size_t i = 0; i < h->ncons; i++)
        free(h->cons[i].on);
    free(h->segs);
    free(h);
    return rc;
}
