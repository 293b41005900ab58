/* The consumers of one GPU-hour: pods and processes seen on the GPU,
 * Kubernetes pods placed on it by the node heuristic, Slurm jobs matched
 * to it, the runs of the cloud instance it belongs to and inventory
 * allocations of its server, and their teams;
 * gathered for usage_compute_hour (usage_hour.c, which classifies and
 * writes the hour) through usage_hour_int.h. */
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

#define STATEMENTS(X)                                                                              \
    X(PODS_SEEN,                                                                                   \
      "SELECT ts, namespace, pod, COALESCE(container, '') FROM gpu_pods WHERE gpu_uuid = :uuid "   \
      "AND ts > :lo AND ts <= :hi ORDER BY ts")                                                    \
    X(PROCS_SEEN,                                                                                  \
      "SELECT ts, COALESCE(username, ''), COALESCE(name, ''), COALESCE(container, ''), "           \
      "COALESCE(namespace, ''), COALESCE(pod, '') FROM gpu_processes WHERE gpu_uuid = :uuid AND "  \
      "ts > :lo AND ts <= :hi ORDER BY ts")                                                        \
    X(K8S_PODS,                                                                                    \
      "SELECT p.namespace, p.name, p.gpus, COALESCE(p.started_at, p.first_seen_at), "              \
      "COALESCE(p.ended_at, CASE WHEN p.seen = 1 THEN CAST(:now AS BIGINT) ELSE p.last_seen_at "   \
      "END) FROM k8s_pods p JOIN k8s_nodes n ON n.source_id = p.source_id AND n.name = p.node "    \
      "WHERE (n.hostname = :host OR n.name = :host) AND p.gpus > 0 AND COALESCE(p.started_at, "    \
      "p.first_seen_at) < :hi AND (p.ended_at IS NULL OR p.ended_at > :lo) AND NOT EXISTS "        \
      "(SELECT 1 FROM gpu_pods x WHERE x.ts > :lo_g AND x.ts <= :hi_g AND x.namespace = "          \
      "p.namespace AND x.pod = p.name) AND NOT EXISTS (SELECT 1 FROM gpu_processes y WHERE y.ts "  \
      "> :lo_g AND y.ts <= :hi_g AND y.namespace = p.namespace AND y.pod = p.name) ORDER BY "      \
      "COALESCE(p.started_at, p.first_seen_at), p.uid")                                            \
    X(HOST_GPUS_RANKED,                                                                            \
      "SELECT g.id, CASE WHEN EXISTS (SELECT 1 FROM gpu_processes q WHERE q.gpu_uuid = g.uuid "    \
      "AND q.ts > :lo AND q.ts <= :hi) THEN 1 ELSE 0 END FROM gpus g WHERE g.host_id = :hid AND "  \
      "g.parent_uuid IS NULL AND (g.missing_since IS NULL OR g.missing_since > :lo) AND NOT "      \
      "EXISTS (SELECT 1 FROM gpu_pods x WHERE x.gpu_uuid = g.uuid AND x.ts > :lo_g AND x.ts <= "   \
      ":hi_g) AND NOT EXISTS (SELECT 1 FROM gpu_processes y WHERE y.gpu_uuid = g.uuid AND y.ts > " \
      ":lo_g AND y.ts <= :hi_g AND y.pod IS NOT NULL AND y.namespace IS NOT NULL) ORDER BY "       \
      "g.idx, g.id LIMIT 1024")                                                                    \
    X(ALLOCS,                                                                                      \
      "SELECT a.tenant, COALESCE(a.project, ''), a.started_at, a.ended_at FROM allocations a "     \
      "JOIN host_links l ON l.resource_id = a.resource_id WHERE l.host_id = :hid AND "             \
      "a.started_at < :hi AND (a.ended_at IS NULL OR a.ended_at > :lo) ORDER BY a.started_at, "    \
      "a.id")                                                                                      \
    X(SLURM_JOBS,                                                                                  \
      "SELECT j.cluster, j.job_id, COALESCE(j.user_name, ''), COALESCE(j.account, ''), "           \
      "j.started_at, j.ended_at FROM slurm_job_gpus x JOIN slurm_jobs j ON j.id = x.job_id WHERE " \
      "x.gpu_id = :gid AND j.started_at < :hi AND (j.ended_at IS NULL OR j.ended_at > :lo) ORDER " \
      "BY j.started_at, j.id")                                                                     \
    X(CLOUD_RUNS,                                                                                  \
      "SELECT i.provider, i.instance_id, r.started_at, r.ended_at FROM cloud_gpus g JOIN "         \
      "cloud_runs r ON r.instance_row = g.instance_row JOIN cloud_instances i ON i.id = "          \
      "g.instance_row WHERE ((g.gpu_id = :gid AND g.superseded_by IS NULL) OR g.superseded_by = "  \
      ":gid) AND r.started_at < :hi AND (r.ended_at IS NULL OR r.ended_at > :lo) ORDER BY "        \
      "r.started_at, r.id")                                                                        \
    X(CLOUD_OWNED,                                                                                 \
      "SELECT i.first_seen, (SELECT MIN(r.started_at) FROM cloud_runs r WHERE r.instance_row = "   \
      "i.id) FROM cloud_gpus g JOIN cloud_instances i ON i.id = g.instance_row WHERE g.gpu_id = "  \
      ":gid AND g.superseded_by IS NULL")

enum stmt_id { STATEMENTS(STORE_AS_ENUM) ST__COUNT };
static const char *const stmt_sql[] = {STATEMENTS(STORE_AS_SQL)};

static struct db_stmt *prep(struct conn *c, enum stmt_id id) { return db_prep(c, stmt_sql[id]); }

/* The consumer named kind/key, added when new (NULL when the table is
 * full). */
static struct consumer *consumer_get(struct hour_calc *h, int rank, const char *kind,
                                     const char *key)
{
    struct consumer *k;

    for (size_t i = 0; i < h->ncons; i++)
        if (strcmp(h->cons[i].kind, kind) == 0 && strcmp(h->cons[i].key, key) == 0)
            return &h->cons[i];
    if (h->ncons >= MAX_CONSUMERS) {
        gi_warn("usage: GPU %lld has more than %d consumers in one hour; the rest are left out",
                (long long)h->gid, MAX_CONSUMERS);
        return NULL;
    }
    k = &h->cons[h->ncons++];
    memset(k, 0, sizeof *k);
    k->rank = rank;
    gi_strlcpy(k->kind, kind, sizeof k->kind);
    gi_strlcpy(k->key, key, sizeof k->key);
    k->umax = NAN;
    if (h->nsegs && !(k->on = calloc(h->nsegs, 1))) {
        h->ncons--;
        return NULL;
    }
    return k;
}

/* Marks consumer k seen at t: in the segment whose observation range
 * holds t. */
static void observe(struct hour_calc *h, struct consumer *k, int64_t t)
{
    for (size_t i = 0; i < h->nsegs; i++)
        if (t > h->segs[i].obs_lo && t <= h->segs[i].x->ts) {
            k->on[i] = 1;
            return;
        }
}

/* The consumer's team: a rule on its namespace, Slurm account or user,
 * else the GPU owner's. */
int usage_consumer_team(struct conn *c, const char *kind, const char *ns, const char *project,
                        const char *user, int64_t hour, const char *owner_team, char *team,
                        size_t len)
{
    int rc = GI_OK;

    team[0] = '\0';
    if (strcmp(kind, "k8s") == 0 && ns[0])
        rc = owner_consumer_team(c, "k8s", ns, hour, team, len);
    else if (strcmp(kind, "slurm") == 0 && project[0])
        rc = owner_consumer_team(c, "slurm", project, hour, team, len);
    if (rc == GI_OK && !team[0] && strcmp(kind, "k8s") != 0 && user[0])
        rc = owner_consumer_team(c, "user", user, hour, team, len);
    if (rc == GI_OK && !team[0])
        gi_strlcpy(team, owner_team, len);
    return rc;
}

int usage_hour_consumer_team(struct conn *c, struct hour_calc *h, struct consumer *k)
{
    return usage_consumer_team(c, k->kind, k->ns, k->project, k->user, h->hour, h->owner.team,
                               k->team, sizeof k->team);
}

static void k8s_consumer(struct hour_calc *h, const char *ns, const char *pod,
                         const char *container, struct consumer **out)
{
    char key[3 * 128];
    struct consumer *k;

    snprintf(key, sizeof key, "%s/%s/%s", ns, pod, container);
    k = consumer_get(h, K_K8S, "k8s", key);
    if (k) {
        gi_strlcpy(k->ns, ns, sizeof k->ns);
        gi_strlcpy(k->pod, pod, sizeof k->pod);
        gi_strlcpy(k->container, container, sizeof k->container);
    }
    *out = k;
}

/* Pods and processes seen on the GPU around the hour. */
int usage_observed_consumers(struct conn *c, struct hour_calc *h)
{
    struct db_stmt *s;
    int step;

    if (h->nsegs == 0)
        return GI_OK;
    if (!(s = prep(c, ST_PODS_SEEN)))
        return GI_INTERNAL;
    db_bind_text(s, ":uuid", h->uuid);
    db_bind_int(s, ":lo", h->lo - usage_config()->max_gap_s);
    db_bind_int(s, ":hi", h->hi + usage_config()->max_gap_s);
    while ((step = db_step(c, s)) == DB_ROW) {
        struct consumer *k;
        k8s_consumer(h, db_col_text(s, 1), db_col_text(s, 2), db_col_text(s, 3), &k);
        if (k)
            observe(h, k, db_col_int(s, 0));
    }
    db_reset(s);
    if (step != DB_DONE)
        return db_status(step);
    if (!(s = prep(c, ST_PROCS_SEEN)))
        return GI_INTERNAL;
    db_bind_text(s, ":uuid", h->uuid);
    db_bind_int(s, ":lo", h->lo - usage_config()->max_gap_s);
    db_bind_int(s, ":hi", h->hi + usage_config()->max_gap_s);
    while ((step = db_step(c, s)) == DB_ROW) {
        const char *user = db_col_text(s, 1), *name = db_col_text(s, 2);
        const char *container = db_col_text(s, 3), *ns = db_col_text(s, 4),
                   *pod = db_col_text(s, 5);
        struct consumer *k;
        char key[3 * 128];
        if (ns[0] && pod[0]) {
            k8s_consumer(h, ns, pod, container, &k);
        } else {
            if (user[0] || name[0])
                snprintf(key, sizeof key, "%s/%s", user[0] ? user : "?", name[0] ? name : "?");
            else
                snprintf(key, sizeof key, "%s", container[0] ? container : "?");
            if ((k = consumer_get(h, K_PROCESS, "process", key))) {
                gi_strlcpy(k->user, user, sizeof k->user);
                gi_strlcpy(k->process, name, sizeof k->process);
                gi_strlcpy(k->container, container, sizeof k->container);
            }
        }
        if (k)
            observe(h, k, db_col_int(s, 0));
    }
    db_reset(s);
    return step == DB_DONE ? GI_OK : db_status(step);
}

/* Whether the chunk's samples show GPU gid at or above the threshold in
 * the hour's window. */
static bool busy_in_chunk(const struct hour_calc *h, int64_t gid)
{
    for (size_t i = 0; i < h->nchunk; i++)
        if (h->chunk[i].gpu == gid && h->chunk[i].ts > h->lo && h->chunk[i].ts <= h->hi &&
            h->chunk[i].ua >= usage_config()->busy_pct)
            return true;
    return false;
}

/* This GPU's place among the node's GPUs without a mapped pod, those
 * with evidence of use (a process, or utilization at or above the
 * threshold in the samples read with it) first, then by index; -1 when
 * it is not among them. */
static int gpu_rank(struct conn *c, struct hour_calc *h, int64_t *rank)
{
    struct db_stmt *s = prep(c, ST_HOST_GPUS_RANKED);
    int64_t used_before = 0, idle_before = 0, used_all = 0;
    bool seen = false, mine_used = false;
    int step;

    *rank = -1;
    if (!s)
        return GI_INTERNAL;
    db_bind_int(s, ":hid", h->host_id);
    db_bind_int(s, ":lo", h->lo);
    db_bind_int(s, ":hi", h->hi);
    db_bind_int(s, ":lo_g", h->lo - usage_config()->max_gap_s);
    db_bind_int(s, ":hi_g", h->hi + usage_config()->max_gap_s);
    while ((step = db_step(c, s)) == DB_ROW) {
        int64_t id = db_col_int(s, 0);
        bool used = db_col_int(s, 1) == 1 || busy_in_chunk(h, id);
        if (id == h->gid) {
            seen = true;
            mine_used = used;
        } else if (!seen) {
            used_before += used;
            idle_before += !used;
        }
        used_all += used;
    }
    db_reset(s);
    if (step != DB_DONE)
        return db_status(step);
    if (seen)
        *rank = mine_used ? used_before : used_all + idle_before;
    return GI_OK;
}

/* Kubernetes pods that request GPUs on the GPU's node but were never seen
 * on a particular GPU (by a dcgm-exporter label or a process naming the
 * pod): the node's GPUs without such a mapped pod are ranked
 * (gpu_rank) and handed out to the pods in the order they started, each
 * taking as many as it requests. This GPU gets the pods whose share
 * includes it. */
int usage_pod_heuristic(struct conn *c, struct hour_calc *h)
{
    struct pod {
        char ns[128], name[128];
        int64_t gpus, lo, hi;
    } *pods = NULL;
    struct db_stmt *s;
    size_t n = 0, cap = 0;
    int64_t rank = -1, pos = 0;
    int step, rc = GI_OK;

    if (!h->has_host || h->parent[0])
        return GI_OK;
    if (!(s = prep(c, ST_K8S_PODS)))
        return GI_INTERNAL;
    db_bind_text(s, ":host", h->host);
    db_bind_int(s, ":now", h->now);
    db_bind_int(s, ":lo", h->lo);
    db_bind_int(s, ":hi", h->hi);
    db_bind_int(s, ":lo_g", h->lo - usage_config()->max_gap_s);
    db_bind_int(s, ":hi_g", h->hi + usage_config()->max_gap_s);
    while ((step = db_step(c, s)) == DB_ROW && n < MAX_CONSUMERS * 8) {
        if (n == cap) {
            size_t ncap = cap ? cap * 2 : 8;
            struct pod *p = realloc(pods, ncap * sizeof *p);
            if (!p) {
                rc = GI_INTERNAL;
                break;
            }
            pods = p;
            cap = ncap;
        }
        gi_strlcpy(pods[n].ns, db_col_text(s, 0), sizeof pods[n].ns);
        gi_strlcpy(pods[n].name, db_col_text(s, 1), sizeof pods[n].name);
        pods[n].gpus = db_col_int(s, 2);
        pods[n].lo = db_col_int(s, 3);
        pods[n].hi = db_col_int(s, 4);
        n++;
    }
    db_reset(s);
    if (rc == GI_OK && step != DB_DONE && step != DB_ROW)
        rc = db_status(step);
    /* The ranking is read only when some pod needs it. */
    if (rc == GI_OK && n > 0)
        rc = gpu_rank(c, h, &rank);
    for (size_t i = 0; rc == GI_OK && rank >= 0 && i < n; i++) {
        if (rank >= pos && rank < pos + pods[i].gpus) {
            struct consumer *k;
            k8s_consumer(h, pods[i].ns, pods[i].name, "", &k);
            if (k && !k->iv_hi) {
                k->iv_lo = pods[i].lo;
                k->iv_hi = pods[i].hi;
            }
        }
        pos += pods[i].gpus;
    }
    free(pods);
    return rc;
}

/* Slurm jobs that held this GPU (matched by node and index when the
 * source stored them): consumer "<cluster>/<job id>", with the job's
 * user as username and its account as project; a running job holds it
 * up to now. */
int usage_slurm_consumers(struct conn *c, struct hour_calc *h)
{
    struct db_stmt *s;
    int step;

    if (h->nsegs == 0)
        return GI_OK;
    if (!(s = prep(c, ST_SLURM_JOBS)))
        return GI_INTERNAL;
    db_bind_int(s, ":gid", h->gid);
    db_bind_int(s, ":lo", h->lo);
    db_bind_int(s, ":hi", h->hi);
    while ((step = db_step(c, s)) == DB_ROW) {
        char key[3 * 128];
        struct consumer *k;
        snprintf(key, sizeof key, "%s/%s", db_col_text(s, 0), db_col_text(s, 1));
        if (!(k = consumer_get(h, K_SLURM, "slurm", key)))
            continue;
        gi_strlcpy(k->user, db_col_text(s, 2), sizeof k->user);
        gi_strlcpy(k->project, db_col_text(s, 3), sizeof k->project);
        k->iv_lo = db_col_int(s, 4);
        k->iv_hi = db_col_is_null(s, 5) ? INT64_MAX : db_col_int(s, 5);
    }
    db_reset(s);
    return step == DB_DONE ? GI_OK : db_status(step);
}

/* The runs of the GPU's cloud instance (of a placeholder not merged, or
 * of the real GPU a placeholder was merged into); several runs in one
 * hour make one consumer spanning from the first start to the last end.
 * Unlike the other interval consumers it counts where no sample measured
 * the GPU too (a cloud placeholder never has samples): see usage_hour.c. */
int usage_cloud_consumers(struct conn *c, struct hour_calc *h)
{
    struct db_stmt *s = prep(c, ST_CLOUD_RUNS);
    int step;

    if (!s)
        return GI_INTERNAL;
    db_bind_int(s, ":gid", h->gid);
    db_bind_int(s, ":lo", h->lo);
    db_bind_int(s, ":hi", h->hi);
    while ((step = db_step(c, s)) == DB_ROW) {
        char key[3 * 128];
        struct consumer *k;
        int64_t lo = db_col_int(s, 2), hi = db_col_is_null(s, 3) ? INT64_MAX : db_col_int(s, 3);
        snprintf(key, sizeof key, "%s/%s", db_col_text(s, 0), db_col_text(s, 1));
        if (!(k = consumer_get(h, K_CLOUD, "cloud", key)))
            continue;
        if (!k->iv_hi || lo < k->iv_lo)
            k->iv_lo = lo;
        if (hi > k->iv_hi)
            k->iv_hi = hi;
    }
    db_reset(s);
    return step == DB_DONE ? GI_OK : db_status(step);
}

int usage_cloud_owned(struct conn *c, int64_t gid, int64_t *owned_from)
{
    struct db_stmt *s = prep(c, ST_CLOUD_OWNED);
    int step;

    *owned_from = INT64_MAX;
    if (!s)
        return GI_INTERNAL;
    db_bind_int(s, ":gid", gid);
    if ((step = db_step(c, s)) == DB_ROW) {
        *owned_from = db_col_int(s, 0);
        if (!db_col_is_null(s, 1) && db_col_int(s, 1) < *owned_from)
            *owned_from = db_col_int(s, 1);
    }
    db_reset(s);
    return step == DB_ROW || step == DB_DONE ? GI_OK : db_status(step);
}

/* Inventory allocations of the server linked to the GPU's host. */
int usage_inventory_consumers(struct conn *c, struct hour_calc *h)
{
    struct db_stmt *s;
    int step;

    if (!h->has_host)
        return GI_OK;
    if (!(s = prep(c, ST_ALLOCS)))
        return GI_INTERNAL;
    db_bind_int(s, ":hid", h->host_id);
    db_bind_int(s, ":lo", h->lo);
    db_bind_int(s, ":hi", h->hi);
    while ((step = db_step(c, s)) == DB_ROW) {
        char key[3 * 128];
        const char *tenant = db_col_text(s, 0), *project = db_col_text(s, 1);
        struct consumer *k;
        snprintf(key, sizeof key, "%s/%s", tenant, project);
        if (!(k = consumer_get(h, K_INVENTORY, "inventory", key)))
            continue;
        gi_strlcpy(k->tenant, tenant, sizeof k->tenant);
        gi_strlcpy(k->project, project, sizeof k->project);
        k->iv_lo = db_col_int(s, 2);
        k->iv_hi = db_col_is_null(s, 3) ? INT64_MAX : db_col_int(s, 3);
    }
    db_reset(s);
    return step == DB_DONE ? GI_OK : db_status(step);
}
