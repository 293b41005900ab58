/* Slurm: a source's job accounting, the GPUs each job held, and the job
 * list. */
#include "store/store_int.h"
#include "core/status.h"
#include "core/util.h"

#include <math.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

/* GPUs handed out on one node of a job when Slurm did not record which. */
#define SLURM_GPUS_PER_NODE_MAX 64

/* A job is in a scope when every GPU it held is (a job whose GPUs were not
 * matched is in none). */
#define JOB_GPUS_FROM                                                                              \
    "FROM slurm_job_gpus x JOIN gpus g ON g.id = x.gpu_id LEFT JOIN hosts h ON h.id = g.host_id "  \
    "WHERE x.job_id = j.id"
#define JOB_WHERE                                                                                  \
    "WHERE (:cluster IS NULL OR j.cluster = :cluster) AND (:user IS NULL OR j.user_name = "        \
    ":user) AND (:account IS NULL OR j.account = :account) AND (:state IS NULL OR j.state = "      \
    ":state) AND (:from < 0 OR j.ended_at IS NULL OR j.ended_at > :from) AND (:to < 0 OR "         \
    "(j.started_at IS NOT NULL AND j.started_at < :to)) AND " STORE_SCOPE_ALL(                     \
        JOB_GPUS_FROM, "h.datacenter_id") " "

#define STATEMENTS(X)                                                                              \
    X(JOB_GET,                                                                                     \
      "SELECT id, source_id, started_at, ended_at, alloc_key, gpus_unmatched FROM "                \
      "slurm_jobs WHERE cluster = :cluster AND job_id_raw = :raw AND submit_at = :submit")         \
    X(JOB_ADD,                                                                                     \
      "INSERT INTO slurm_jobs (source_id, cluster, job_id_raw, submit_at, job_id, user_name, "     \
      "account, partition, qos, name, state, nodelist, nodes, gpus, gpu_type, started_at, "        \
      "ended_at, elapsed_s, gpu_util_sum, gpu_mem_mib, first_seen_at, last_seen_at) VALUES "       \
      "(:sid, :cluster, :raw, :submit, :job, :user, :account, :partition, :qos, :name, :state, "   \
      ":nodelist, :nodes, :gpus, :gtype, :start, :end, :elapsed, :util, :mem, :now, :now) "        \
      "RETURNING id")                                                                              \
    X(JOB_SET,                                                                                     \
      "UPDATE slurm_jobs SET job_id = :job, user_name = :user, account = :account, partition = "   \
      ":partition, qos = :qos, name = :name, state = :state, nodelist = :nodelist, nodes = "       \
      ":nodes, gpus = :gpus, gpu_type = :gtype, started_at = :start, ended_at = :end, elapsed_s "  \
      "= :elapsed, gpu_util_sum = COALESCE(:util, gpu_util_sum), gpu_mem_mib = COALESCE(:mem, "    \
      "gpu_mem_mib), last_seen_at = :now WHERE id = :id")                                          \
    X(JOB_MATCHED, "UPDATE slurm_jobs SET alloc_key = :key, gpus_matched = :matched, "             \
                   "gpus_unmatched = :unmatched WHERE id = :id")                                   \
    X(JOB_GPUS_OF, "SELECT gpu_id FROM slurm_job_gpus WHERE job_id = :id")                         \
    X(JOB_GPUS_DEL, "DELETE FROM slurm_job_gpus WHERE job_id = :id")                               \
    X(JOB_GPU_ADD, "INSERT INTO slurm_job_gpus (job_id, gpu_id, node, idx, idx_known) VALUES "     \
                   "(:id, :gid, :node, :idx, :known) ON CONFLICT (job_id, gpu_id) DO NOTHING")     \
    X(HOST_FIND,                                                                                   \
      "SELECT id FROM hosts WHERE hostname = :name OR hostname = :short OR hostname LIKE :prefix " \
      "ESCAPE '!' ORDER BY CASE WHEN hostname = :name THEN 0 WHEN hostname = :short THEN 1 ELSE "  \
      "2 END, id LIMIT 1")                                                                         \
    X(GPU_BY_IDX, "SELECT id FROM gpus WHERE host_id = :hid AND idx = :idx AND parent_uuid IS "    \
                  "NULL ORDER BY id LIMIT 1")                                                      \
    X(GPUS_FREE,                                                                                   \
      "SELECT g.id, g.idx FROM gpus g WHERE g.host_id = :hid AND g.parent_uuid IS NULL AND "       \
      "(g.missing_since IS NULL OR g.missing_since > :start) AND NOT EXISTS (SELECT 1 FROM "       \
      "slurm_job_gpus x JOIN slurm_jobs y ON y.id = x.job_id WHERE x.gpu_id = g.id AND y.id <> "   \
      ":id AND y.started_at < :end AND (y.ended_at IS NULL OR y.ended_at > :start)) ORDER BY "     \
      "g.idx, g.id LIMIT :n")                                                                      \
    X(OLDEST_SAMPLE, "SELECT MIN(ts) FROM gpu_samples")                                            \
    X(CURSOR_GET, "SELECT pulled_until FROM slurm_cursors WHERE source_id = :sid")                 \
    X(CURSOR_SET,                                                                                  \
      "INSERT INTO slurm_cursors (source_id, pulled_until, updated_at) VALUES (:sid, :until, "     \
      ":now) ON CONFLICT (source_id) DO UPDATE SET pulled_until = excluded.pulled_until, "         \
      "updated_at = excluded.updated_at")                                                          \
    X(JOBS_LIST,                                                                                   \
      "SELECT j.id, j.cluster, j.job_id, j.job_id_raw, j.user_name AS user, j.account, "           \
      "j.partition, j.qos, j.name, j.state, j.nodelist, j.nodes, j.gpus, j.gpu_type, CASE WHEN "   \
      "j.submit_at > 0 THEN j.submit_at END AS submitted_at, j.started_at, j.ended_at, "           \
      "j.elapsed_s, j.gpu_util_sum, j.gpu_mem_mib, "                                               \
      "j.gpus_matched, j.gpus_unmatched, s.name AS source, j.first_seen_at, j.last_seen_at FROM "  \
      "slurm_jobs j JOIN sources s ON s.id = j.source_id " JOB_WHERE                               \
      "ORDER BY COALESCE(j.started_at, j.submit_at) DESC, j.id DESC " PAGE)                        \
    X(JOBS_COUNT, "SELECT COUNT(*) FROM slurm_jobs j " JOB_WHERE)                                  \
    X(JOB_GPUS_LIST,                                                                               \
      "SELECT g.uuid, h.hostname AS host, x.node, x.idx AS \"index\", x.idx_known FROM "           \
      "slurm_job_gpus x JOIN gpus g ON g.id = x.gpu_id LEFT JOIN hosts h ON h.id = g.host_id "     \
      "WHERE x.job_id = :id ORDER BY x.node, x.idx, g.id")

enum stmt_id { STATEMENTS(STORE_AS_ENUM) ST__COUNT };
static const char *const stmt_sql[] = {STATEMENTS(STORE_AS_SQL)};

static struct db_stmt *prep(struct conn *c, enum stmt_id id) { return db_prep(c, stmt_sql[id]); }

static const char *nz(const char *s) { return s ? s : ""; }

/* What the GPU matching of a job is made from: when it changes, the
 * matching is made again. */
static void alloc_key(const struct store_slurm_job *j, char *buf, size_t len)
{
    size_t n = (size_t)snprintf(buf, len, "%s|%lld|%lld", nz(j->nodelist), (long long)j->gpus,
                                (long long)(j->start > 0 ? 1 : 0));

    for (size_t i = 0; i < j->nnodes && n < len; i++) {
        const struct store_slurm_node *nd = &j->nodes[i];
        n += (size_t)snprintf(buf + n, len - n, "|");
        for (int k = 0; k < nd->nidx && n < len; k++)
            n += (size_t)snprintf(buf + n, len - n, "%s%d", k ? "," : "", nd->idx[k]);
    }
}

static int host_find(struct conn *c, const char *node, int64_t *hid, bool *found)
{
    struct db_stmt *s = prep(c, ST_HOST_FIND);
    char shortn[256], prefix[520];
    size_t n = 0;
    int step;

    *found = false;
    if (!s)
        return GI_INTERNAL;
    gi_strlcpy(shortn, node, sizeof shortn);
    shortn[strcspn(shortn, ".")] = '\0';
    /* "<node>.%": the node's FQDN when Slurm knows the short name. */
    for (const char *p = node; *p && n + 4 < sizeof prefix; p++) {
        if (*p == '!' || *p == '%' || *p == '_')
            prefix[n++] = '!';
        prefix[n++] = *p;
    }
    prefix[n++] = '.';
    prefix[n++] = '%';
    prefix[n] = '\0';
    db_bind_text(s, ":name", node);
    db_bind_text(s, ":short", shortn);
    db_bind_text(s, ":prefix", prefix);
    if ((step = db_step(c, s)) == DB_ROW) {
        *hid = db_col_int(s, 0);
        *found = true;
    }
    db_reset(s);
    return step == DB_ROW || step == DB_DONE ? GI_OK : db_status(step);
}

static int gpu_add(struct conn *c, int64_t jid, int64_t gid, const char *node, int64_t idx,
                   bool known)
{
    struct db_stmt *s = prep(c, ST_JOB_GPU_ADD);

    if (!s)
        return GI_INTERNAL;
    db_bind_int(s, ":id", jid);
    db_bind_int(s, ":gid", gid);
    db_bind_text(s, ":node", node);
    db_bind_opt_int(s, ":idx", idx);
    db_bind_int(s, ":known", known ? 1 : 0);
    return db_exec_done(c, s);
}

/* Marks the hours GPU gid was held by the job for the usage rollup. */
static int mark(struct conn *c, int64_t gid, int64_t start, int64_t end, int64_t now)
{
    if (start <= 0)
        return GI_OK;
    return usage_mark(c, gid, start, end > 0 && end < now ? end : now);
}

/* Makes job jid's GPU matching again; the GPUs it held before and holds
 * now are marked over [lo, hi). */
static int match_gpus(struct conn *c, int64_t jid, const struct store_slurm_job *j, int64_t lo,
                      int64_t hi, int64_t now, struct store_slurm_result *res)
{
    struct db_stmt *s;
    int64_t matched = 0, unmatched = 0, per, rest;
    char key[2048];
    int rc = GI_OK, step;

    if (!(s = prep(c, ST_JOB_GPUS_OF)))
        return GI_INTERNAL;
    db_bind_int(s, ":id", jid);
    while (rc == GI_OK && (step = db_step(c, s)) == DB_ROW)
        rc = mark(c, db_col_int(s, 0), lo, hi, now);
    db_reset(s);
    if (rc != GI_OK)
        return rc;
    if (!(s = prep(c, ST_JOB_GPUS_DEL)))
        return GI_INTERNAL;
    db_bind_int(s, ":id", jid);
    if ((rc = db_exec_done(c, s)) != GI_OK)
        return rc;
    /* Pending jobs hold nothing yet; the GPUs are spread evenly over the
     * nodes when Slurm did not say where each is. */
    per = j->nnodes ? (j->gpus > 0 ? j->gpus : 0) / (int64_t)j->nnodes : 0;
    rest = j->nnodes ? (j->gpus > 0 ? j->gpus : 0) % (int64_t)j->nnodes : 0;
    for (size_t i = 0; j->start > 0 && j->gpus > 0 && i < j->nnodes && rc == GI_OK; i++) {
        const struct store_slurm_node *nd = &j->nodes[i];
        int64_t want = nd->nidx > 0 ? nd->nidx : per + ((int64_t)i < rest ? 1 : 0), hid = 0;
        bool found;
        if (want <= 0)
            continue;
        if ((rc = host_find(c, nd->name, &hid, &found)) != GI_OK)
            break;
        if (!found) {
            unmatched += want;
            continue;
        }
        if (nd->nidx > 0) {
            for (int k = 0; k < nd->nidx && rc == GI_OK; k++) {
                if (!(s = prep(c, ST_GPU_BY_IDX))) {
                    rc = GI_INTERNAL;
                    break;
                }
                db_bind_int(s, ":hid", hid);
                db_bind_int(s, ":idx", nd->idx[k]);
                if ((step = db_step(c, s)) == DB_ROW) {
                    int64_t gid = db_col_int(s, 0);
                    db_reset(s);
                    if ((rc = gpu_add(c, jid, gid, nd->name, nd->idx[k], true)) == GI_OK)
                        rc = mark(c, gid, lo, hi, now);
                    matched++;
                } else {
                    db_reset(s);
                    if (step != DB_DONE)
                        rc = db_status(step);
                    unmatched++;
                }
            }
            continue;
        }
        {
            int64_t got = 0, ids[SLURM_GPUS_PER_NODE_MAX], idxs[SLURM_GPUS_PER_NODE_MAX];
            if (!(s = prep(c, ST_GPUS_FREE))) {
                rc = GI_INTERNAL;
                break;
            }
            db_bind_int(s, ":hid", hid);
            db_bind_int(s, ":id", jid);
            db_bind_int(s, ":start", j->start);
            db_bind_int(s, ":end", j->end > 0 ? j->end : INT64_MAX / 2);
            db_bind_int(s, ":n", want < SLURM_GPUS_PER_NODE_MAX ? want : SLURM_GPUS_PER_NODE_MAX);
            while ((step = db_step(c, s)) == DB_ROW && got < SLURM_GPUS_PER_NODE_MAX) {
                ids[got] = db_col_int(s, 0);
                idxs[got] = db_col_is_null(s, 1) ? -1 : db_col_int(s, 1);
                got++;
            }
            db_reset(s);
            if (step != DB_DONE && step != DB_ROW) {
                rc = db_status(step);
                break;
            }
            for (int64_t k = 0; k < got && rc == GI_OK; k++)
                if ((rc = gpu_add(c, jid, ids[k], nd->name, idxs[k], false)) == GI_OK)
                    rc = mark(c, ids[k], lo, hi, now);
            matched += got;
            unmatched += want - got;
        }
    }
    if (rc != GI_OK)
        return rc;
    if (j->start > 0 && j->gpus > 0 && j->nnodes == 0)
        unmatched += j->gpus;
    alloc_key(j, key, sizeof key);
    if (!(s = prep(c, ST_JOB_MATCHED)))
        return GI_INTERNAL;
    db_bind_int(s, ":id", jid);
    db_bind_text(s, ":key", key);
    db_bind_int(s, ":matched", matched);
    db_bind_int(s, ":unmatched", unmatched);
    res->gpus_matched += matched;
    res->gpus_unmatched += unmatched;
    return db_exec_done(c, s);
}

static void bind_job(struct db_stmt *s, const struct store_slurm_job *j, int64_t now)
{
    db_bind_text(s, ":job", j->job_id);
    db_bind_opt_text(s, ":user", j->user);
    db_bind_opt_text(s, ":account", j->account);
    db_bind_opt_text(s, ":partition", j->partition);
    db_bind_opt_text(s, ":qos", j->qos);
    db_bind_opt_text(s, ":name", j->name);
    db_bind_opt_text(s, ":state", j->state);
    db_bind_opt_text(s, ":nodelist", j->nodelist);
    db_bind_int(s, ":nodes", (int64_t)j->nnodes);
    db_bind_opt_int(s, ":gpus", j->gpus);
    db_bind_opt_text(s, ":gtype", j->gpu_type);
    db_bind_opt_int(s, ":start", j->start > 0 ? j->start : -1);
    db_bind_opt_int(s, ":end", j->end > 0 ? j->end : -1);
    db_bind_opt_int(s, ":elapsed", j->elapsed);
    db_bind_dbl(s, ":util", j->gpu_util_sum);
    db_bind_dbl(s, ":mem", j->gpu_mem_mib);
    db_bind_int(s, ":now", now);
}

static int64_t min_pos(int64_t a, int64_t b)
{
    if (a <= 0)
        return b;
    if (b <= 0)
        return a;
    return a < b ? a : b;
}

/* One job: inserted or updated, then its GPUs matched again when what
 * they are made from changed (or some were unmatched while it runs). */
static int sync_job(struct conn *c, int64_t sid, const char *cluster,
                    const struct store_slurm_job *j, int64_t now, int64_t floor,
                    struct store_slurm_result *res)
{
    struct db_stmt *s = prep(c, ST_JOB_GET);
    int64_t id = 0, owner = 0, old_start = -1, old_end = -1, old_unmatched = 0;
    bool found = false, old_running = false;
    char key[2048], old_key[2048] = "";
    int rc, step;

    if (!s)
        return GI_INTERNAL;
    db_bind_text(s, ":cluster", cluster);
    db_bind_int(s, ":raw", j->job_id_raw);
    db_bind_int(s, ":submit", j->submit > 0 ? j->submit : 0);
    if ((step = db_step(c, s)) == DB_ROW) {
        found = true;
        id = db_col_int(s, 0);
        owner = db_col_int(s, 1);
        old_start = db_col_is_null(s, 2) ? -1 : db_col_int(s, 2);
        old_running = db_col_is_null(s, 3);
        old_end = old_running ? -1 : db_col_int(s, 3);
        gi_strlcpy(old_key, db_col_text(s, 4) ? db_col_text(s, 4) : "", sizeof old_key);
        old_unmatched = db_col_int(s, 5);
    }
    db_reset(s);
    if (step != DB_ROW && step != DB_DONE)
        return db_status(step);
    if (found && owner != sid) {
        res->jobs_foreign++;
        return GI_OK; /* a source speaks only for what it owns */
    }
    if (!(s = prep(c, found ? ST_JOB_SET : ST_JOB_ADD)))
        return GI_INTERNAL;
    bind_job(s, j, now);
    if (found) {
        db_bind_int(s, ":id", id);
        rc = db_exec_done(c, s);
        res->jobs_updated++;
    } else {
        db_bind_int(s, ":sid", sid);
        db_bind_text(s, ":cluster", cluster);
        db_bind_int(s, ":raw", j->job_id_raw);
        db_bind_int(s, ":submit", j->submit > 0 ? j->submit : 0);
        rc = db_fetch_int(c, s, &id);
        res->jobs_new++;
    }
    if (rc != GI_OK)
        return rc;
    alloc_key(j, key, sizeof key);
    if (!found || strcmp(key, old_key) != 0 || (old_unmatched > 0 && j->end <= 0) ||
        old_start != (j->start > 0 ? j->start : -1) || old_end != (j->end > 0 ? j->end : -1)) {
        /* The hours between the old and the new interval change too. */
        int64_t lo = min_pos(old_start, j->start);
        int64_t hi =
            (old_running && found) || j->end <= 0 ? now : (old_end > j->end ? old_end : j->end);
        /* Hours whose raw samples are gone are never recomputed: their
         * figures would be lost. */
        if (lo < floor)
            lo = floor;
        if (!found || strcmp(key, old_key) != 0 || (old_unmatched > 0 && j->end <= 0))
            return match_gpus(c, id, j, lo, hi, now, res);
        /* Same GPUs, another interval: only the marks. */
        if (!(s = prep(c, ST_JOB_GPUS_OF)))
            return GI_INTERNAL;
        db_bind_int(s, ":id", id);
        rc = GI_OK;
        while (rc == GI_OK && (step = db_step(c, s)) == DB_ROW)
            rc = mark(c, db_col_int(s, 0), lo, hi, now);
        db_reset(s);
        return rc;
    }
    return GI_OK;
}

/* The first hour that raw-sample retention has not cut into: the hour
 * after the one the oldest sample's coverage (ts - 1 back) falls in, as
 * that one may have lost earlier samples; now when no sample is kept. */
static int first_kept_hour(struct conn *c, int64_t now, int64_t *out)
{
    struct db_stmt *s = prep(c, ST_OLDEST_SAMPLE);
    int step;

    *out = now;
    if (!s)
        return GI_INTERNAL;
    if ((step = db_step(c, s)) == DB_ROW && !db_col_is_null(s, 0))
        *out = (db_col_int(s, 0) - 1) - (db_col_int(s, 0) - 1) % 3600 + 3600;
    db_reset(s);
    return step == DB_ROW || step == DB_DONE ? GI_OK : db_status(step);
}

struct store_slurm_tx {
    struct store *st;
    struct conn *c;
    int rc;
    int64_t now;
    int64_t floor; /* the first hour whose raw samples are all still kept */
};

int store_slurm_begin(struct store *st, struct store_slurm_tx **out)
{
    struct store_slurm_tx *tx = calloc(1, sizeof *tx);

    *out = NULL;
    if (!tx)
        return GI_INTERNAL;
    tx->st = st;
    tx->c = db_conn_get(st);
    tx->now = gi_now();
    if ((tx->rc = db_tx_begin(tx->c)) == GI_OK)
        tx->rc = first_kept_hour(tx->c, tx->now, &tx->floor);
    if (tx->rc != GI_OK) {
        int rc = db_tx_end(tx->c, tx->rc);
        db_conn_put(st, tx->c);
        free(tx);
        return rc;
    }
    *out = tx;
    return GI_OK;
}

int store_slurm_add(struct store_slurm_tx *tx, int64_t source_id, const char *cluster_default,
                    const struct store_slurm_job *jobs, size_t n, struct store_slurm_result *res)
{
    for (size_t i = 0; tx->rc == GI_OK && i < n; i++) {
        const char *cl = jobs[i].cluster && *jobs[i].cluster ? jobs[i].cluster : cluster_default;
        tx->rc = sync_job(tx->c, source_id, nz(cl), &jobs[i], tx->now, tx->floor, res);
    }
    return tx->rc;
}

int store_slurm_end(struct store_slurm_tx *tx, int64_t source_id, int64_t pulled_until, int rc)
{
    struct db_stmt *s;

    if (rc == GI_OK)
        rc = tx->rc;
    if (rc == GI_OK) {
        if (!(s = prep(tx->c, ST_CURSOR_SET))) {
            rc = GI_INTERNAL;
        } else {
            db_bind_int(s, ":sid", source_id);
            db_bind_int(s, ":until", pulled_until);
            db_bind_int(s, ":now", tx->now);
            rc = db_exec_done(tx->c, s);
        }
    }
    rc = db_tx_end(tx->c, rc);
    db_conn_put(tx->st, tx->c);
    free(tx);
    return rc;
}

int store_slurm_cursor(struct store *st, int64_t source_id, int64_t *pulled_until)
{
    struct conn *c = db_conn_get(st);
    struct db_stmt *s = prep(c, ST_CURSOR_GET);
    int rc = GI_INTERNAL;

    *pulled_until = -1;
    if (s) {
        db_bind_int(s, ":sid", source_id);
        rc = db_fetch_int(c, s, pulled_until);
        if (rc == GI_NOT_FOUND) {
            *pulled_until = -1;
            rc = GI_OK;
        }
    }
    db_conn_put(st, c);
    return rc;
}

static void bind_filter(struct db_stmt *s, const void *filter)
{
    const struct store_slurm_filter *f = filter;
    db_bind_text(s, ":cluster", f->cluster);
    db_bind_text(s, ":user", f->user);
    db_bind_text(s, ":account", f->account);
    db_bind_text(s, ":state", f->state);
    db_bind_int(s, ":from", f->from);
    db_bind_int(s, ":to", f->to);
    db_bind_scope(s, &f->scope);
}

int store_slurm_jobs(struct store *st, const struct store_slurm_filter *f,
                     const struct store_page *pg, json_t **items, int64_t *total)
{
    struct conn *c;
    size_t i;
    json_t *o;
    int rc = db_list_page(st, stmt_sql[ST_JOBS_COUNT], stmt_sql[ST_JOBS_LIST], bind_filter, f, pg,
                          items, total);

    if (rc != GI_OK)
        return rc;
    c = db_conn_get(st);
    json_array_foreach(*items, i, o) {
        struct db_stmt *s = prep(c, ST_JOB_GPUS_LIST);
        json_t *gpus = NULL;
        if (!s) {
            rc = GI_INTERNAL;
            break;
        }
        db_bind_int(s, ":id", json_integer_value(json_object_get(o, "id")));
        if ((rc = db_collect(c, s, &gpus)) != GI_OK)
            break;
        for (size_t k = 0; k < json_array_size(gpus); k++) {
            json_t *g = json_array_get(gpus, k);
            json_object_set_new(g, "index_known",
                                json_boolean(json_integer_value(json_object_get(g, "idx_known"))));
            json_object_del(g, "idx_known");
        }
        json_object_set_new(o, "gpus_held", gpus);
    }
    db_conn_put(st, c);
    if (rc != GI_OK) {
        json_decref(*items);
        *items = NULL;
    }
    return rc;
}
