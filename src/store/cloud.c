/* Cloud instances: one source's listing of a scope stored as instances,
 * their run stretches and their placeholder GPU records; and the
 * instance list. See store.h and docs/ARCHITECTURE.md ("Cloud
 * instances").
 *
 * - An instance belongs to the source that first listed it (key:
 *   provider, instance id); another source's listing leaves it alone.
 * - Its host is the host it was tied to before, else a host named after
 *   the instance (its name, else its id; the id when another instance
 *   holds the name), created when none exists. An agent that reports
 *   under that name reports onto the same host.
 * - Each GPU is a GPU record "cloud:<provider>:<instance id>:<index>" on
 *   that host, of this source. When the host also has present GPUs with
 *   real UUIDs (an agent reports from the instance), the placeholders are
 *   superseded: missing from then on, so a GPU is never counted twice,
 *   and merged into the real GPUs (cloud_merge.c): their history becomes
 *   theirs.
 * - A running instance has an open run (cloud_runs) from its launch time;
 *   a stopped or terminated one closes it. Terminated and gone instances'
 *   placeholders are missing. The GPU-hours a run touches are marked for
 *   the usage rollup. */
#include "store/store_int.h"
#include "core/status.h"
#include "core/util.h"
#include "parse/cloud.h"

#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#define INST_COLS                                                                                  \
    "i.id, i.provider, i.instance_id, i.name, i.account, i.region, i.zone, i.machine_type, "       \
    "i.state, i.state_raw, i.launch_time AS launched_at, i.gpu_model, i.gpu_count, "               \
    "i.gpu_memory_mib, i.gpu_fraction, "                                                           \
    "i.private_ip, i.tags, h.hostname AS host, s.name AS source, i.scope, i.first_seen AS "        \
    "first_seen_at, i.last_seen AS last_seen_at, i.gone_at "

#define INST_WHERE                                                                                 \
    "WHERE (:provider IS NULL OR i.provider = :provider) AND (:state IS NULL OR i.state = "        \
    ":state) AND (:account IS NULL OR i.account = :account) AND (:region IS NULL OR i.region = "   \
    ":region) AND (:source < 0 OR i.source_id = :source) AND (:q IS NULL OR i.instance_id LIKE "   \
    ":q ESCAPE '!' OR i.name LIKE :q ESCAPE '!' OR i.machine_type LIKE :q ESCAPE '!' OR i.tags "   \
    "LIKE :q ESCAPE '!') AND " STORE_SCOPE_IN(                                                     \
        "(SELECT ih.datacenter_id FROM hosts ih WHERE ih.id "                                      \
        "= i.host_id)") " "

#define STATEMENTS(X)                                                                              \
    X(SOURCE_CLUSTER, "SELECT COALESCE(cluster, '') FROM sources WHERE id = :sid")                 \
    X(INST_GET, "SELECT id, source_id, host_id, tags, last_seen FROM cloud_instances WHERE "       \
                "provider = :provider AND instance_id = :iid")                                     \
    X(INST_ADD,                                                                                    \
      "INSERT INTO cloud_instances (source_id, provider, scope, instance_id, name, account, "      \
      "region, zone, machine_type, state, state_raw, launch_time, gpu_model, gpu_count, "          \
      "gpu_memory_mib, gpu_fraction, private_ip, tags, host_id, first_seen, last_seen) VALUES "    \
      "(:sid, :provider, :scope, :iid, :name, :account, :region, :zone, :mtype, :state, :raw, "    \
      ":launch, :model, :count, :mem, :fraction, :ip, :tags, :hid, :now, :now) RETURNING id")      \
    X(INST_SET,                                                                                    \
      "UPDATE cloud_instances SET scope = :scope, name = :name, account = :account, region = "     \
      ":region, zone = :zone, machine_type = :mtype, state = :state, state_raw = :raw, "           \
      "launch_time = :launch, gpu_model = COALESCE(:model, gpu_model), gpu_count = "               \
      "COALESCE(:count, gpu_count), gpu_memory_mib = COALESCE(:mem, gpu_memory_mib), "             \
      "gpu_fraction = CASE WHEN CAST(:count AS BIGINT) IS NULL THEN gpu_fraction ELSE :fraction "  \
      "END, private_ip = :ip, tags = :tags, host_id = :hid, last_seen = :now, gone_at = NULL "     \
      "WHERE id = :id")                                                                            \
    X(HOST_BY_NAME, "SELECT id FROM hosts WHERE hostname = :name")                                 \
    X(HOST_CLAIMED, "SELECT COUNT(*) FROM cloud_instances WHERE host_id = :hid AND id <> :id")     \
    X(HOST_ADD, "INSERT INTO hosts (hostname, cluster, source_id, first_seen_at, last_seen_at) "   \
                "VALUES (:name, :cluster, :sid, :now, :now) RETURNING id")                         \
    X(HOST_SEEN, "UPDATE hosts SET last_seen_at = :now WHERE id = :hid AND source_id = :sid AND "  \
                 "last_seen_at < :now")                                                            \
    X(REAL_GPUS, "SELECT COUNT(*) FROM gpus WHERE host_id = :hid AND parent_uuid IS NULL AND "     \
                 "missing_since IS NULL AND uuid NOT LIKE 'cloud:%'")                              \
    X(RUN_OPEN, "SELECT id, started_at FROM cloud_runs WHERE instance_row = :id AND ended_at IS "  \
                "NULL ORDER BY started_at DESC LIMIT 1")                                           \
    X(RUN_LAST_END, "SELECT MAX(ended_at) FROM cloud_runs WHERE instance_row = :id")               \
    X(RUN_ADD, "INSERT INTO cloud_runs (instance_row, started_at) VALUES (:id, :start)")           \
    X(RUN_END, "UPDATE cloud_runs SET ended_at = :now WHERE instance_row = :id AND ended_at IS "   \
               "NULL")                                                                             \
    X(CGPU_GET, "SELECT gpu_id, superseded_at FROM cloud_gpus WHERE instance_row = :id AND idx "   \
                "= :idx")                                                                          \
    X(CGPU_ADD, "INSERT INTO cloud_gpus (gpu_id, instance_row, idx) VALUES (:gid, :id, :idx)")     \
    X(CGPU_SUPERSEDE, "UPDATE cloud_gpus SET superseded_at = :now WHERE gpu_id = :gid AND "        \
                      "superseded_at IS NULL")                                                     \
    X(CGPU_OF, "SELECT c.gpu_id, c.idx, g.missing_since FROM cloud_gpus c JOIN gpus g ON g.id = "  \
               "c.gpu_id WHERE c.instance_row = :id ORDER BY c.idx")                               \
    X(GPU_ADD,                                                                                     \
      "INSERT INTO gpus (uuid, host_id, idx, vendor, model, memory_total_mib, cluster, "           \
      "source_id, first_seen_at, last_seen_at, missing_since) VALUES (:uuid, :hid, :idx, "         \
      ":vendor, :model, :mem, :cluster, :sid, :now, :now, :missing) RETURNING id")                 \
    X(GPU_SET,                                                                                     \
      "UPDATE gpus SET host_id = :hid, vendor = COALESCE(:vendor, vendor), model = "               \
      "COALESCE(:model, model), memory_total_mib = COALESCE(:mem, memory_total_mib), "             \
      "last_seen_at = :now, missing_since = CASE WHEN CAST(:missing AS BIGINT) IS NULL THEN "      \
      "NULL ELSE COALESCE(missing_since, CAST(:missing AS BIGINT)) END WHERE id = :gid")           \
    X(GPU_GONE, "UPDATE gpus SET missing_since = :now WHERE id = :gid AND missing_since IS NULL")  \
    X(SCOPE_LIVE, "SELECT id, zone, region FROM cloud_instances WHERE source_id = :sid AND "       \
                  "provider = :provider AND scope = :scope AND gone_at IS NULL")                   \
    X(INST_GONE, "UPDATE cloud_instances SET gone_at = :now WHERE id = :id")                       \
    X(LIST, "SELECT " INST_COLS "FROM cloud_instances i JOIN sources s ON s.id = i.source_id "     \
            "LEFT JOIN hosts h ON h.id = i.host_id " INST_WHERE                                    \
            "ORDER BY i.provider, i.instance_id, i.id " PAGE)                                      \
    X(COUNT, "SELECT COUNT(*) FROM cloud_instances i " INST_WHERE)                                 \
    X(LIST_GPUS, "SELECT g.uuid, c.idx AS \"index\", g.model, g.missing_since, c.superseded_at "   \
                 "FROM cloud_gpus c JOIN gpus g ON g.id = c.gpu_id WHERE c.instance_row = :id "    \
                 "ORDER BY c.idx")

enum stmt_id { STATEMENTS(STORE_AS_ENUM) ST__COUNT };
static const char *const stmt_sql[] = {STATEMENTS(STORE_AS_SQL)};

static struct db_stmt *prep(struct conn *c, enum stmt_id id) { return db_prep(c, stmt_sql[id]); }

/* GPUs of one instance taken at most (a bad count is not a loop). */
#define CLOUD_GPUS_MAX 64

static const char *const state_names[] = {"unknown",  "pending", "running",
                                          "stopping", "stopped", "terminated"};

static const char *state_name(enum cloud_state s)
{
    return (unsigned)s < sizeof state_names / sizeof *state_names ? state_names[s] : "unknown";
}

static const char *opt(const char *s) { return s && *s ? s : NULL; }

/* The instance's tags as a JSON object text (caller frees). */
static char *tags_text(const struct cloud_instance *v)
{
    json_t *o = json_object();
    char *t;

    for (size_t i = 0; o && i < v->ntags; i++)
        if (v->tags[i].key && gi_text_ok(v->tags[i].key))
            json_object_set_new(o, v->tags[i].key,
                                json_string(v->tags[i].value && gi_text_ok(v->tags[i].value)
                                                ? v->tags[i].value
                                                : ""));
    t = o ? json_dumps(o, JSON_COMPACT | JSON_SORT_KEYS) : NULL;
    json_decref(o);
    return t;
}

/* The vendor of a GPU model name ("nvidia", "amd"), or NULL. */
static const char *vendor_of(const char *model)
{
    if (model && strncmp(model, "NVIDIA", 6) == 0)
        return "nvidia";
    if (model && strncmp(model, "AMD", 3) == 0)
        return "amd";
    return NULL;
}

struct sync_ctx {
    struct conn *c;
    int64_t sid, now;
    const char *provider, *scope;
    const char *const *unreachable; /* scopes the listing could not see */
    size_t nunreachable;
    char cluster[128];
    struct cloud_sync_result *res;
};

static int fetch_opt_int(struct conn *c, struct db_stmt *s, int64_t *out, bool *found)
{
    int step = db_step(c, s);

    *found = step == DB_ROW && !db_col_is_null(s, 0);
    if (*found)
        *out = db_col_int(s, 0);
    db_reset(s);
    return step == DB_ROW || step == DB_DONE ? GI_OK : db_status(step);
}

/* The host of instance row id (0 when new): the one it had, else one
 * named after it, created when none exists. */
static int host_for(struct sync_ctx *x, const struct cloud_instance *v, int64_t id, int64_t had,
                    int64_t *hid)
{
    const char *names[2] = {opt(v->name), v->instance_id};
    struct db_stmt *s;
    int64_t claimed = 0;
    bool found;
    int rc;

    *hid = had;
    if (had > 0)
        return GI_OK;
    for (int k = 0; k < 2; k++) {
        if (!names[k])
            continue;
        if (!(s = prep(x->c, ST_HOST_BY_NAME)))
            return GI_INTERNAL;
        db_bind_text(s, ":name", names[k]);
        if ((rc = fetch_opt_int(x->c, s, hid, &found)) != GI_OK)
            return rc;
        if (!found) {
            if (!(s = prep(x->c, ST_HOST_ADD)))
                return GI_INTERNAL;
            db_bind_text(s, ":name", names[k]);
            db_bind_opt_text(s, ":cluster", x->cluster);
            db_bind_int(s, ":sid", x->sid);
            db_bind_int(s, ":now", x->now);
            return db_fetch_int(x->c, s, hid);
        }
        /* A name another instance's host already has (an autoscaling
         * group names all its instances alike): try the id. */
        if (!(s = prep(x->c, ST_HOST_CLAIMED)))
            return GI_INTERNAL;
        db_bind_int(s, ":hid", *hid);
        db_bind_int(s, ":id", id);
        if ((rc = db_fetch_int(x->c, s, &claimed)) != GI_OK)
            return rc;
        if (claimed == 0 || k == 1)
            return GI_OK;
    }
    return GI_OK;
}

/* Opens or closes the instance's run as its state says; the start of the
 * stretch whose GPU-hours changed goes to *mark_from (0: none). */
static int sync_run(struct sync_ctx *x, int64_t id, const struct cloud_instance *v,
                    int64_t last_seen, int64_t *mark_from)
{
    struct db_stmt *s = prep(x->c, ST_RUN_OPEN);
    int64_t started = 0, last_end = 0;
    bool open = false, any;
    int step, rc;

    *mark_from = 0;
    if (!s)
        return GI_INTERNAL;
    db_bind_int(s, ":id", id);
    if ((step = db_step(x->c, s)) == DB_ROW) {
        open = true;
        started = db_col_int(s, 1);
    }
    db_reset(s);
    if (step != DB_ROW && step != DB_DONE)
        return db_status(step);
    if (v->state == CLOUD_RUNNING) {
        if (open) {
            *mark_from = last_seen > started ? last_seen : started;
            return GI_OK;
        }
        /* Launch time is reset on every start, so it is this run's start;
         * never before the previous run's end nor in the future. */
        started = v->launch_time > 0 && v->launch_time <= x->now ? v->launch_time : x->now;
        if (!(s = prep(x->c, ST_RUN_LAST_END)))
            return GI_INTERNAL;
        db_bind_int(s, ":id", id);
        if ((rc = fetch_opt_int(x->c, s, &last_end, &any)) != GI_OK)
            return rc;
        if (any && started < last_end)
            started = last_end;
        if (!(s = prep(x->c, ST_RUN_ADD)))
            return GI_INTERNAL;
        db_bind_int(s, ":id", id);
        db_bind_int(s, ":start", started);
        *mark_from = started;
        return db_exec_done(x->c, s);
    }
    /* Pending and unknown states leave a run as it is: the next listing
     * says more. */
    if (!open ||
        (v->state != CLOUD_STOPPING && v->state != CLOUD_STOPPED && v->state != CLOUD_TERMINATED))
        return GI_OK;
    if (!(s = prep(x->c, ST_RUN_END)))
        return GI_INTERNAL;
    db_bind_int(s, ":id", id);
    db_bind_int(s, ":now", x->now);
    *mark_from = last_seen > started ? last_seen : started;
    return db_exec_done(x->c, s);
}

/* Ends the open run of instance row id and makes its placeholders
 * missing (gone or terminated). */
static int instance_end(struct sync_ctx *x, int64_t id)
{
    struct db_stmt *s = prep(x->c, ST_RUN_END);
    int64_t gids[CLOUD_GPUS_MAX];
    size_t n = 0;
    int rc, step;

    if (!s)
        return GI_INTERNAL;
    db_bind_int(s, ":id", id);
    db_bind_int(s, ":now", x->now);
    if ((rc = db_exec_done(x->c, s)) != GI_OK)
        return rc;
    if (!(s = prep(x->c, ST_CGPU_OF)))
        return GI_INTERNAL;
    db_bind_int(s, ":id", id);
    while ((step = db_step(x->c, s)) == DB_ROW && n < CLOUD_GPUS_MAX)
        gids[n++] = db_col_int(s, 0);
    db_reset(s);
    if (step != DB_DONE && step != DB_ROW)
        return db_status(step);
    for (size_t i = 0; i < n; i++) {
        if (!(s = prep(x->c, ST_GPU_GONE)))
            return GI_INTERNAL;
        db_bind_int(s, ":gid", gids[i]);
        db_bind_int(s, ":now", x->now);
        if ((rc = db_exec_done(x->c, s)) != GI_OK)
            return rc;
        if ((rc = usage_mark(x->c, gids[i], x->now - 3600, x->now)) != GI_OK)
            return rc;
    }
    return GI_OK;
}

/* Upserts placeholder GPU idx of instance row id on host hid. missing:
 * the time it stops counting, or 0 when present. */
static int sync_gpu(struct sync_ctx *x, const struct cloud_instance *v, int64_t id, int64_t hid,
                    int idx, int64_t missing, bool superseded, int64_t mark_from)
{
    struct db_stmt *s = prep(x->c, ST_CGPU_GET);
    char uuid[320];
    int64_t gid = 0;
    bool found = false, was_superseded = false;
    int rc, step;

    if (!s)
        return GI_INTERNAL;
    db_bind_int(s, ":id", id);
    db_bind_int(s, ":idx", idx);
    if ((step = db_step(x->c, s)) == DB_ROW) {
        found = true;
        gid = db_col_int(s, 0);
        was_superseded = !db_col_is_null(s, 1);
    }
    db_reset(s);
    if (step != DB_ROW && step != DB_DONE)
        return db_status(step);
    /* Once an agent reported the real GPUs, the placeholder stays retired. */
    if (was_superseded && !missing)
        missing = x->now;
    if (!(s = prep(x->c, found ? ST_GPU_SET : ST_GPU_ADD)))
        return GI_INTERNAL;
    db_bind_int(s, ":hid", hid);
    db_bind_opt_text(s, ":vendor", vendor_of(v->gpu_model));
    db_bind_opt_text(s, ":model", opt(v->gpu_model));
    if (v->gpu_memory_mib > 0)
        db_bind_dbl(s, ":mem", (double)v->gpu_memory_mib);
    else
        db_bind_text(s, ":mem", NULL);
    db_bind_int(s, ":now", x->now);
    db_bind_opt_int(s, ":missing", missing > 0 ? missing : -1);
    if (found) {
        db_bind_int(s, ":gid", gid);
        rc = db_exec_done(x->c, s);
    } else {
        snprintf(uuid, sizeof uuid, "cloud:%s:%s:%d", x->provider, v->instance_id, idx);
        db_bind_text(s, ":uuid", uuid);
        db_bind_int(s, ":idx", idx);
        db_bind_opt_text(s, ":cluster", x->cluster);
        db_bind_int(s, ":sid", x->sid);
        if ((rc = db_fetch_int(x->c, s, &gid)) == GI_OK && (s = prep(x->c, ST_CGPU_ADD))) {
            db_bind_int(s, ":gid", gid);
            db_bind_int(s, ":id", id);
            db_bind_int(s, ":idx", idx);
            rc = db_exec_done(x->c, s);
        } else if (rc == GI_OK) {
            rc = GI_INTERNAL;
        }
        if (rc == GI_OK)
            rc = owner_refresh(x->c, gid);
    }
    if (rc != GI_OK)
        return rc;
    if (superseded && !was_superseded) {
        if (!(s = prep(x->c, ST_CGPU_SUPERSEDE)))
            return GI_INTERNAL;
        db_bind_int(s, ":gid", gid);
        db_bind_int(s, ":now", x->now);
        if ((rc = db_exec_done(x->c, s)) != GI_OK)
            return rc;
    }
    x->res->gpus++;
    if (mark_from > 0)
        rc = usage_mark(x->c, gid, mark_from, x->now);
    return rc;
}

/* The placeholders of instance row id: one per GPU of its type (none
 * changed when the type's GPUs are unknown); those past the count (the
 * type changed) are missing. */
static int sync_gpus(struct sync_ctx *x, const struct cloud_instance *v, int64_t id, int64_t hid,
                     int64_t mark_from)
{
    struct db_stmt *s = prep(x->c, ST_REAL_GPUS);
    int64_t real = 0, gids[CLOUD_GPUS_MAX], idxs[CLOUD_GPUS_MAX];
    int count = v->gpu_count > CLOUD_GPUS_MAX ? CLOUD_GPUS_MAX : v->gpu_count;
    size_t n = 0;
    int rc = GI_OK, step;
    bool superseded;

    if (!s)
        return GI_INTERNAL;
    db_bind_int(s, ":hid", hid);
    if ((rc = db_fetch_int(x->c, s, &real)) != GI_OK)
        return rc;
    superseded = real > 0;
    if (v->state == CLOUD_TERMINATED)
        return instance_end(x, id);
    if (count < 0) {
        x->res->unknown_types++;
        return GI_OK;
    }
    for (int i = 0; i < count && rc == GI_OK; i++)
        rc = sync_gpu(x, v, id, hid, i, superseded ? x->now : 0, superseded, mark_from);
    /* Superseded placeholders merge into the real GPUs (cloud_merge.c). */
    if (rc == GI_OK && superseded)
        rc = cloud_merge_instance(x->c, id, hid, x->now);
    if (rc != GI_OK)
        return rc;
    if (!(s = prep(x->c, ST_CGPU_OF)))
        return GI_INTERNAL;
    db_bind_int(s, ":id", id);
    while ((step = db_step(x->c, s)) == DB_ROW && n < CLOUD_GPUS_MAX) {
        gids[n] = db_col_int(s, 0);
        idxs[n++] = db_col_int(s, 1);
    }
    db_reset(s);
    if (step != DB_DONE && step != DB_ROW)
        return db_status(step);
    for (size_t i = 0; i < n && rc == GI_OK; i++) {
        if (idxs[i] < count)
            continue;
        if (!(s = prep(x->c, ST_GPU_GONE)))
            return GI_INTERNAL;
        db_bind_int(s, ":gid", gids[i]);
        db_bind_int(s, ":now", x->now);
        rc = db_exec_done(x->c, s);
    }
    return rc;
}

static void bind_instance(struct db_stmt *s, const struct sync_ctx *x,
                          const struct cloud_instance *v, const char *tags, int64_t hid)
{
    db_bind_text(s, ":scope", x->scope);
    db_bind_opt_text(s, ":name", opt(v->name));
    db_bind_opt_text(s, ":account", opt(v->account));
    db_bind_opt_text(s, ":region", opt(v->region));
    db_bind_opt_text(s, ":zone", opt(v->zone));
    db_bind_opt_text(s, ":mtype", opt(v->machine_type));
    db_bind_text(s, ":state", state_name(v->state));
    db_bind_opt_text(s, ":raw", opt(v->state_raw));
    db_bind_opt_int(s, ":launch", v->launch_time > 0 ? v->launch_time : -1);
    db_bind_opt_text(s, ":model", opt(v->gpu_model));
    db_bind_opt_int(s, ":count", v->gpu_count);
    db_bind_opt_int(s, ":mem", v->gpu_memory_mib);
    /* A share of one GPU; whole (or unknown) is NULL. */
    if (v->gpu_fraction > 0 && v->gpu_fraction < 1)
        db_bind_dbl(s, ":fraction", v->gpu_fraction);
    else
        db_bind_text(s, ":fraction", NULL);
    db_bind_opt_text(s, ":ip", opt(v->private_ip));
    db_bind_text(s, ":tags", tags ? tags : "{}");
    db_bind_opt_int(s, ":hid", hid > 0 ? hid : -1);
    db_bind_int(s, ":now", x->now);
}

/* One listed instance; its row id goes to *row (0 when skipped). */
static int sync_instance(struct sync_ctx *x, const struct cloud_instance *v, int64_t *row)
{
    struct db_stmt *s = prep(x->c, ST_INST_GET);
    int64_t id = 0, owner = 0, had_host = 0, hid = 0, mark_from = 0, last_seen = x->now;
    char *tags = NULL, old_tags[4096] = "";
    bool found = false;
    int rc, step;

    *row = 0;
    if (!s)
        return GI_INTERNAL;
    if (!v->instance_id[0] || !gi_text_ok(v->instance_id)) {
        x->res->warnings++;
        return GI_OK;
    }
    db_bind_text(s, ":provider", x->provider);
    db_bind_text(s, ":iid", v->instance_id);
    if ((step = db_step(x->c, s)) == DB_ROW) {
        found = true;
        id = db_col_int(s, 0);
        owner = db_col_int(s, 1);
        had_host = db_col_int(s, 2);
        gi_strlcpy(old_tags, db_col_text(s, 3) ? db_col_text(s, 3) : "", sizeof old_tags);
        last_seen = db_col_int(s, 4);
    }
    db_reset(s);
    if (step != DB_ROW && step != DB_DONE)
        return db_status(step);
    if (found && owner != x->sid) {
        x->res->warnings++; /* a source speaks only for what it owns */
        return GI_OK;
    }
    if ((rc = host_for(x, v, id, had_host, &hid)) != GI_OK)
        return rc;
    if (!(tags = tags_text(v)))
        return GI_INTERNAL;
    if (!(s = prep(x->c, found ? ST_INST_SET : ST_INST_ADD))) {
        rc = GI_INTERNAL;
        goto cleanup;
    }
    bind_instance(s, x, v, tags, hid);
    if (found) {
        db_bind_int(s, ":id", id);
        rc = db_exec_done(x->c, s);
    } else {
        db_bind_int(s, ":sid", x->sid);
        db_bind_text(s, ":provider", x->provider);
        db_bind_text(s, ":iid", v->instance_id);
        rc = db_fetch_int(x->c, s, &id);
    }
    if (rc != GI_OK)
        goto cleanup;
    *row = id;
    x->res->instances++;
    if ((s = prep(x->c, ST_HOST_SEEN))) {
        db_bind_int(s, ":hid", hid);
        db_bind_int(s, ":sid", x->sid);
        db_bind_int(s, ":now", x->now);
        rc = db_exec_done(x->c, s);
    } else {
        rc = GI_INTERNAL;
    }
    if (rc == GI_OK)
        rc = sync_run(x, id, v, last_seen, &mark_from);
    if (rc == GI_OK)
        rc = sync_gpus(x, v, id, hid, mark_from);
    /* Changed tags change what the ownership rules match. */
    if (rc == GI_OK && found && strcmp(old_tags, tags) != 0)
        rc = owner_host_changed(x->c, hid, x->now);
cleanup:
    free(tags);
    return rc;
}

static int cmp_i64(const void *a, const void *b)
{
    int64_t x = *(const int64_t *)a, y = *(const int64_t *)b;
    return x < y ? -1 : x > y;
}

/* True when the zone or region of an instance is one the listing could
 * not see ("zones/<zone>", "regions/<region>", or a bare zone name). */
static bool unseen(const struct sync_ctx *x, const char *zone, const char *region)
{
    for (size_t i = 0; i < x->nunreachable; i++) {
        const char *u = x->unreachable[i];
        if (u == NULL)
            continue;
        if (strncmp(u, "zones/", 6) == 0 && zone && strcmp(u + 6, zone) == 0)
            return true;
        if (strncmp(u, "regions/", 8) == 0 && region && strcmp(u + 8, region) == 0)
            return true;
        if (!strchr(u, '/') && zone && strcmp(u, zone) == 0)
            return true;
    }
    return false;
}

/* Instances of this source and scope that the listing did not name, but
 * for those in zones it could not see. */
static int mark_gone(struct sync_ctx *x, int64_t *seen, size_t nseen)
{
    struct db_stmt *s = prep(x->c, ST_SCOPE_LIVE);
    int64_t *ids = NULL;
    size_t n = 0, cap = 0;
    int rc = GI_OK, step;

    if (!s)
        return GI_INTERNAL;
    qsort(seen, nseen, sizeof *seen, cmp_i64);
    db_bind_int(s, ":sid", x->sid);
    db_bind_text(s, ":provider", x->provider);
    db_bind_text(s, ":scope", x->scope);
    while ((step = db_step(x->c, s)) == DB_ROW) {
        int64_t id = db_col_int(s, 0);
        if (bsearch(&id, seen, nseen, sizeof *seen, cmp_i64) ||
            unseen(x, db_col_text(s, 1), db_col_text(s, 2)))
            continue;
        if (n == cap) {
            int64_t *p = realloc(ids, (cap ? cap * 2 : 16) * sizeof *ids);
            if (!p) {
                rc = GI_INTERNAL;
                break;
            }
            ids = p;
            cap = cap ? cap * 2 : 16;
        }
        ids[n++] = id;
    }
    db_reset(s);
    if (rc == GI_OK && step != DB_DONE && step != DB_ROW)
        rc = db_status(step);
    for (size_t i = 0; rc == GI_OK && i < n; i++) {
        if (!(s = prep(x->c, ST_INST_GONE))) {
            rc = GI_INTERNAL;
            break;
        }
        db_bind_int(s, ":id", ids[i]);
        db_bind_int(s, ":now", x->now);
        if ((rc = db_exec_done(x->c, s)) == GI_OK)
            rc = instance_end(x, ids[i]);
        x->res->gone++;
    }
    free(ids);
    return rc;
}

int store_cloud_sync(struct store *st, int64_t source_id, const char *provider, const char *scope,
                     const struct cloud_instance *v, size_t n, const char *const *unreachable,
                     size_t nunreachable, struct cloud_sync_result *res)
{
    struct sync_ctx x = {.sid = source_id,
                         .provider = provider,
                         .scope = scope,
                         .unreachable = unreachable,
                         .nunreachable = unreachable ? nunreachable : 0,
                         .res = res};
    struct cloud_sync_result r = {0};
    int64_t *seen = calloc(n + 1, sizeof *seen);
    size_t nseen = 0;
    struct db_stmt *s;
    int rc;

    x.res = &r;
    if (!seen)
        return GI_INTERNAL;
    if (!provider || !*provider || !scope) {
        free(seen);
        return GI_INVALID;
    }
    x.c = db_conn_get(st);
    x.now = gi_now();
    if ((rc = db_tx_begin(x.c)) != GI_OK)
        goto cleanup;
    if (!(s = prep(x.c, ST_SOURCE_CLUSTER))) {
        rc = GI_INTERNAL;
    } else {
        db_bind_int(s, ":sid", source_id);
        if (db_step(x.c, s) == DB_ROW)
            gi_strlcpy(x.cluster, db_col_text(s, 0), sizeof x.cluster);
        else
            rc = GI_NOT_FOUND;
        db_reset(s);
    }
    for (size_t i = 0; rc == GI_OK && i < n; i++) {
        int64_t row = 0;
        if ((rc = sync_instance(&x, &v[i], &row)) == GI_OK && row > 0)
            seen[nseen++] = row;
    }
    if (rc == GI_OK)
        rc = mark_gone(&x, seen, nseen);
    rc = db_tx_end(x.c, rc);
cleanup:
    db_conn_put(st, x.c);
    free(seen);
    if (rc == GI_OK && res) {
        res->instances += r.instances;
        res->gpus += r.gpus;
        res->gone += r.gone;
        res->unknown_types += r.unknown_types;
        res->warnings += r.warnings;
    }
    return rc;
}

static void bind_filter(struct db_stmt *s, const void *filter)
{
    const struct store_cloud_filter *f = filter;
    db_bind_text(s, ":provider", f->provider);
    db_bind_text(s, ":state", f->state);
    db_bind_text(s, ":account", f->account);
    db_bind_text(s, ":region", f->region);
    db_bind_int(s, ":source", f->source_id > 0 ? f->source_id : -1);
    db_bind_like(s, ":q", f->q);
    db_bind_scope(s, &f->scope);
}

int store_cloud_instances(struct store *st, const struct store_cloud_filter *f,
                          const struct store_page *pg, json_t **items, int64_t *total)
{
    struct conn *c;
    size_t i;
    json_t *o;
    int rc =
        db_list_page(st, stmt_sql[ST_COUNT], stmt_sql[ST_LIST], bind_filter, f, pg, items, total);

    if (rc != GI_OK)
        return rc;
    c = db_conn_get(st);
    json_array_foreach(*items, i, o) {
        struct db_stmt *s = prep(c, ST_LIST_GPUS);
        json_t *gpus = NULL, *tags;
        if (!s) {
            rc = GI_INTERNAL;
            break;
        }
        tags = json_loads(json_string_value(json_object_get(o, "tags")), 0, NULL);
        json_object_set_new(o, "tags", json_is_object(tags) ? tags : json_object());
        if (!json_is_object(tags))
            json_decref(tags);
        db_bind_int(s, ":id", json_integer_value(json_object_get(o, "id")));
        if ((rc = db_collect(c, s, &gpus)) != GI_OK)
            break;
        json_object_set_new(o, "gpus", gpus);
    }
    db_conn_put(st, c);
    if (rc != GI_OK) {
        json_decref(*items);
        *items = NULL;
    }
    return rc;
}
