/* GPUs as read: the list with its filters and sorting, the summary over a
 * filter, one GPU with its details, and the inventory metrics. */
#include "store/store_int.h"
#include "core/status.h"
#include "core/util.h"
#include "store/gpu_sql.h"
#include "store/links.h"

/* Sort keys of the GPU list; NULLs (no telemetry yet) sort first. */
#define GPU_KEY_TEXT                                                                               \
    "CASE :sort WHEN 'host' THEN h.hostname WHEN 'model' THEN g.model WHEN 'cluster' THEN "        \
    "g.cluster WHEN 'team' THEN COALESCE(g.owner_team, g.team) WHEN 'datacenter' THEN d.name END"
#define GPU_KEY_NUM                                                                                \
    "CASE :sort WHEN 'util_pct' THEN g.util_pct WHEN 'mem_used_mib' THEN g.mem_used_mib WHEN "     \
    "'power_w' THEN g.power_w WHEN 'temp_c' THEN g.temp_c WHEN 'last_seen_at' THEN "               \
    "g.last_seen_at WHEN 'first_seen_at' THEN g.first_seen_at WHEN 'observed_at' THEN "            \
    "g.observed_at END"
#define GPU_SELECT                                                                                 \
    "SELECT g.uuid, g.parent_uuid, g.idx AS \"index\", g.vendor, g.model, g.serial, "              \
    "g.pci_bus_id, g.memory_total_mib, g.driver, g.vbios, g.mig_mode, g.mig_profile, g.team, "     \
    "g.env, g.cluster, h.hostname AS host, h.datacenter_id, d.name AS datacenter, s.name AS "      \
    "source, g.first_seen_at, g.last_seen_at, g.missing_since, g.sample_at, g.util_pct, "          \
    "g.mem_used_mib, g.power_w, g.temp_c, g.ecc_corrected, g.ecc_uncorrected, g.xid_last, "        \
    "rs.name AS reading_source, " GPU_OBSERVED " AS observed_at, " GPU_OBSERVED " AS newest_at, "  \
    "CASE WHEN " GPU_IS_STALE " THEN 1 ELSE 0 END AS stale, " GPU_STATE " AS state, "              \
    "l.resource_id, g.owner_json, g.source_id AS owner_source_id FROM gpus g LEFT JOIN hosts h "   \
    "ON h.id = g.host_id LEFT JOIN datacenters d ON "                                              \
    "d.id = h.datacenter_id LEFT JOIN sources s ON s.id = g.source_id LEFT JOIN sources rs ON "    \
    "rs.id = g.reading_source_id LEFT JOIN host_links l ON l.host_id = g.host_id "
#define GPU_WHERE                                                                                  \
    "WHERE (:host IS NULL OR h.hostname = :host) AND (:cluster IS NULL OR g.cluster = :cluster) "  \
    "AND (:model IS NULL OR g.model = :model) AND (:dc = 0 OR h.datacenter_id = :dc) AND (:sid = " \
    "0 OR g.source_id = :sid) AND (:stale_f < 0 OR (:stale_f = 1) = " GPU_IS_STALE ") AND (:q IS " \
    "NULL OR g.uuid LIKE :q ESCAPE '!' OR g.serial LIKE :q ESCAPE '!' OR g.model LIKE :q ESCAPE "  \
    "'!' OR h.hostname LIKE :q ESCAPE '!') AND (:gstate IS NULL OR " GPU_STATE " = :gstate) AND "  \
    "(:team IS NULL OR COALESCE(g.owner_team, g.team) = :team) AND (:env IS NULL OR "              \
    "COALESCE(g.owner_env, g.env) = :env) AND " STORE_SCOPE_IN("h.datacenter_id") " "
/* Figures over a whole GPU filter (not a page), in one pass. */
#define GPU_STATE_N(st) "COALESCE(SUM(CASE WHEN x.st = '" st "' THEN 1 ELSE 0 END), 0) AS " st ", "
#define GPU_SUMMARY_SQL                                                                            \
    "SELECT COUNT(*) AS total, " GPU_STATE_N("in_use") GPU_STATE_N("idle") GPU_STATE_N("unknown")  \
        GPU_STATE_N("stale")                                                                       \
            GPU_STATE_N("missing") "AVG(CASE WHEN x.st IN ('in_use', 'idle') "                     \
                                   "THEN x.u END) AS util_avg, COALESCE(SUM(x.unowned), 0) AS "    \
                                   "unowned FROM (SELECT " GPU_STATE                               \
                                   " AS st, g.util_pct AS u, CASE WHEN COALESCE(g.owner_team, "    \
                                   "g.team, '') = '' THEN 1 ELSE 0 END AS unowned FROM gpus g "    \
                                   "LEFT JOIN hosts h ON "                                         \
                                   "h.id = g.host_id " GPU_WHERE ") x"

#define STATEMENTS(X)                                                                              \
    X(SOURCE_LIST, store_sql_source_list)                                                          \
    X(GPU_CLOUD,                                                                                   \
      "SELECT i.provider, i.instance_id, i.name AS instance_name, i.account, i.region, i.zone, "   \
      "i.machine_type, i.state, i.launch_time AS launched_at, i.gone_at, c.idx AS "                \
      "placeholder_index, c.superseded_at, m.uuid AS merged_into FROM gpus g JOIN "                \
      "cloud_instances i ON i.id = COALESCE((SELECT c2.instance_row FROM cloud_gpus c2 WHERE "     \
      "c2.gpu_id = g.id), (SELECT MIN(i2.id) FROM cloud_instances i2 WHERE i2.host_id = "          \
      "g.host_id)) LEFT JOIN cloud_gpus c ON c.gpu_id = g.id LEFT JOIN gpus m ON m.id = "          \
      "c.superseded_by WHERE g.uuid = :uuid")                                                      \
    X(GPU_MERGED_FROM, "SELECT p.uuid FROM cloud_gpus c JOIN gpus p ON p.id = c.gpu_id JOIN gpus " \
                       "g ON g.id = c.superseded_by WHERE g.uuid = :uuid ORDER BY c.idx, p.id")    \
    X(GPU_CONFLICTS, "SELECT s.name AS source, c.field, c.theirs, c.ours, c.first_at, c.last_at "  \
                     "FROM gpu_conflicts c JOIN gpus g ON g.id = c.gpu_id JOIN sources s ON s.id " \
                     "= c.source_id WHERE g.uuid = :uuid ORDER BY s.name, c.field")                \
    X(GPU_PODS, "SELECT ts AS seen_at, namespace, pod, container FROM gpu_pods WHERE gpu_uuid = "  \
                ":uuid AND ts = (SELECT MAX(ts) FROM gpu_pods WHERE gpu_uuid = :uuid) ORDER BY "   \
                "namespace, pod")                                                                  \
    X(GPU_NODE_PODS, "SELECT p.namespace, p.name, p.gpus, p.mig_devices, p.phase, p.started_at "   \
                     "FROM k8s_pods p WHERE p.ended_at IS NULL AND p.node IN (SELECT "             \
                     "h.hostname FROM gpus g JOIN hosts h ON h.id = g.host_id WHERE g.uuid = "     \
                     ":uuid) ORDER BY p.namespace, p.name")                                        \
    X(GPU_LIST, GPU_SELECT GPU_WHERE "ORDER BY h.hostname, g.idx, g.uuid " PAGE)                   \
    X(GPU_LIST_ASC, GPU_SELECT GPU_WHERE "ORDER BY " GPU_KEY_TEXT ", " GPU_KEY_NUM                 \
                                         ", h.hostname, g.idx, g.uuid " PAGE)                      \
    X(GPU_LIST_DESC, GPU_SELECT GPU_WHERE "ORDER BY " GPU_KEY_TEXT " DESC, " GPU_KEY_NUM           \
                                          " DESC, h.hostname, g.idx, g.uuid " PAGE)                \
    X(GPU_COUNT, "SELECT COUNT(*) FROM gpus g LEFT JOIN hosts h ON h.id = g.host_id " GPU_WHERE)   \
    X(GPU_GET, GPU_SELECT "WHERE g.uuid = :uuid")                                                  \
    X(GPU_PROV, "SELECT p.field, p.value, s.name AS source, p.set_at FROM gpu_provenance p LEFT "  \
                "JOIN sources s ON s.id = p.source_id WHERE p.gpu_uuid = :uuid ORDER BY p.field")  \
    X(GPU_PROCS, "SELECT ts AS seen_at, CASE WHEN pid < 0 THEN NULL ELSE pid END AS pid, name, "   \
                 "username AS user, uid, container, pod_uid, "                                     \
                 "pod, namespace, used_mib FROM gpu_processes WHERE gpu_uuid = :uuid AND ts = "    \
                 "(SELECT MAX(ts) FROM gpu_processes WHERE gpu_uuid = :uuid) ORDER BY pid")        \
    X(GPU_EVENTS, "SELECT e.id, e.at AS occurred_at, e.kind, e.detail, s.name AS source FROM "     \
                  "gpu_events e LEFT "                                                             \
                  "JOIN sources s ON s.id = e.source_id WHERE e.gpu_uuid = :uuid ORDER BY e.at "   \
                  "DESC, e.id DESC LIMIT 100")                                                     \
    X(GPU_CHILDREN, "SELECT uuid, mig_profile FROM gpus WHERE parent_uuid = :uuid ORDER BY uuid")  \
    X(METRICS_GPUS,                                                                                \
      "SELECT COUNT(*) AS total, COALESCE(SUM(CASE WHEN " GPU_IS_STALE " THEN 1 "                  \
      "ELSE 0 END), 0) AS stale, COALESCE(SUM(CASE WHEN g.missing_since IS NOT NULL "              \
      "THEN 1 ELSE 0 END), 0) AS missing, COALESCE(SUM(CASE WHEN g.parent_uuid IS "                \
      "NOT NULL THEN 1 ELSE 0 END), 0) AS mig, COALESCE(SUM(CASE WHEN g.util_pct IS "              \
      "NULL AND g.missing_since IS NULL AND NOT " GPU_IS_STALE " THEN 1 ELSE 0 END), "             \
      "0) AS unknown FROM gpus g")                                                                 \
    X(GPU_SUMMARY, GPU_SUMMARY_SQL)

enum stmt_id { STATEMENTS(STORE_AS_ENUM) ST__COUNT };
static const char *const stmt_sql[] = {STATEMENTS(STORE_AS_SQL)};

static struct db_stmt *prep(struct conn *c, enum stmt_id id) { return db_prep(c, stmt_sql[id]); }

static int list_page(struct store *st, enum stmt_id count, enum stmt_id list, db_filter_binder bind,
                     const void *filter, const struct store_page *pg, json_t **items,
                     int64_t *total)
{
    size_t i;
    json_t *g;
    int rc = db_list_page(st, stmt_sql[count], stmt_sql[list], bind, filter, pg, items, total);

    if (rc == GI_OK)
        json_array_foreach(*items, i, g)
            owner_doc(g);
    return rc;
}

static void bind_gpu_filter(struct db_stmt *s, const void *filter)
{
    const struct store_gpu_filter *f = filter;
    db_bind_text(s, ":host", f->host);
    db_bind_text(s, ":cluster", f->cluster);
    db_bind_text(s, ":model", f->model);
    db_bind_int(s, ":dc", f->datacenter_id);
    db_bind_scope(s, &f->scope);
    db_bind_int(s, ":sid", f->source_id);
    db_bind_int(s, ":stale_f", f->stale);
    db_bind_int(s, ":stale", f->stale_before);
    db_bind_like(s, ":q", f->q);
    db_bind_text(s, ":gstate", f->state);
    db_bind_text(s, ":team", f->team);
    db_bind_text(s, ":env", f->env);
}

int store_gpu_list(struct store *st, const struct store_gpu_filter *f, const struct store_page *pg,
                   json_t **items, int64_t *total)
{
    return store_gpu_list_summary(st, f, pg, items, total, NULL);
}

int store_gpu_list_summary(struct store *st, const struct store_gpu_filter *f,
                           const struct store_page *pg, json_t **items, int64_t *total,
                           json_t **summary)
{
    enum stmt_id list = !pg->sort ? ST_GPU_LIST : pg->desc ? ST_GPU_LIST_DESC : ST_GPU_LIST_ASC;
    struct conn *c;
    struct db_stmt *s;
    json_t *sum = NULL;
    int rc = GI_INTERNAL;

    if (summary == NULL)
        return list_page(st, ST_GPU_COUNT, list, bind_gpu_filter, f, pg, items, total);
    *summary = NULL;
    c = db_conn_get(st);
    db_read_begin(c);
    if (!(s = prep(c, ST_GPU_SUMMARY)))
        goto cleanup;
    bind_gpu_filter(s, f);
    if ((rc = db_fetch_one(c, s, &sum)) != GI_OK)
        goto cleanup;
    *total = json_integer_value(json_object_get(sum, "total"));
    rc = GI_INTERNAL;
    if (!(s = prep(c, list)))
        goto cleanup;
    bind_gpu_filter(s, f);
    db_bind_page(s, pg);
    if ((rc = db_collect(c, s, items)) != GI_OK)
        goto cleanup;
    {
        size_t i;
        json_t *g;
        json_array_foreach(*items, i, g)
            owner_doc(g);
    }
    *summary = sum;
    sum = NULL;
cleanup:
    db_read_end(c);
    json_decref(sum);
    db_conn_put(st, c);
    return rc;
}

/* The cloud instance the GPU belongs to (its placeholder's, else the one
 * its host is) as g's "cloud", null when none; with the real GPU a
 * placeholder was merged into, or the placeholders merged into this one. */
static int gpu_cloud(struct conn *c, const char *uuid, json_t *g)
{
    struct db_stmt *s = prep(c, ST_GPU_CLOUD);
    json_t *o = NULL, *from = NULL;
    int rc, step;

    if (!s)
        return GI_INTERNAL;
    db_bind_text(s, ":uuid", uuid);
    if ((rc = db_fetch_one(c, s, &o)) == GI_NOT_FOUND) {
        json_object_set_new(g, "cloud", json_null());
        return GI_OK;
    }
    if (rc != GI_OK)
        return rc;
    if (!(s = prep(c, ST_GPU_MERGED_FROM)) || !(from = json_array())) {
        json_decref(o);
        return GI_INTERNAL;
    }
    db_bind_text(s, ":uuid", uuid);
    while ((step = db_step(c, s)) == DB_ROW)
        json_array_append_new(from, json_string(db_col_text(s, 0)));
    db_reset(s);
    json_object_set_new(o, "merged_from", from);
    json_object_set_new(g, "cloud", o);
    return step == DB_DONE ? GI_OK : db_status(step);
}

int store_gpu_get(struct store *st, const char *uuid, int64_t stale_before, json_t **out)
{
    static const struct {
        enum stmt_id id;
        const char *key;
    } parts[] = {{ST_GPU_PROV, "provenance"},    {ST_GPU_PROCS, "processes"},
                 {ST_GPU_PODS, "pods"},          {ST_GPU_NODE_PODS, "node_pods"},
                 {ST_GPU_EVENTS, "events"},      {ST_GPU_CHILDREN, "mig_instances"},
                 {ST_GPU_CONFLICTS, "conflicts"}};
    struct conn *c = db_conn_get(st);
    struct db_stmt *s;
    json_t *g = NULL, *arr;
    int rc = GI_INTERNAL;

    *out = NULL;
    db_read_begin(c);
    if (!(s = prep(c, ST_GPU_GET)))
        goto cleanup;
    db_bind_text(s, ":uuid", uuid);
    db_bind_int(s, ":stale", stale_before);
    if ((rc = db_fetch_one(c, s, &g)) != GI_OK)
        goto cleanup;
    owner_doc(g);
    for (size_t i = 0; i < sizeof parts / sizeof *parts; i++) {
        rc = GI_INTERNAL;
        if (!(s = prep(c, parts[i].id)))
            goto cleanup;
        db_bind_text(s, ":uuid", uuid);
        if ((rc = db_collect(c, s, &arr)) != GI_OK)
            goto cleanup;
        json_object_set_new(g, parts[i].key, arr);
    }
    if ((rc = links_gpu_resource(c, uuid, &arr)) != GI_OK)
        goto cleanup;
    json_object_set_new(g, "resource", arr);
    if ((rc = gpu_cloud(c, uuid, g)) != GI_OK)
        goto cleanup;
    *out = g;
    g = NULL;
cleanup:
    db_read_end(c);
    json_decref(g);
    db_conn_put(st, c);
    return rc;
}

int store_metrics(struct store *st, int64_t stale_before, json_t **out)
{
    struct conn *c = db_conn_get(st);
    struct db_stmt *s;
    json_t *gpus = NULL, *sources = NULL;
    int rc = GI_INTERNAL;

    *out = NULL;
    db_read_begin(c);
    if (!(s = prep(c, ST_METRICS_GPUS)))
        goto cleanup;
    db_bind_int(s, ":stale", stale_before);
    if ((rc = db_fetch_one(c, s, &gpus)) != GI_OK)
        goto cleanup;
    rc = GI_INTERNAL;
    if (!(s = prep(c, ST_SOURCE_LIST)))
        goto cleanup;
    db_bind_int(s, ":stale", stale_before);
    if ((rc = db_collect(c, s, &sources)) != GI_OK)
        goto cleanup;
    *out = json_pack("{s:o, s:o}", "gpus", gpus, "sources", sources);
    gpus = sources = NULL;
    rc = *out ? GI_OK : GI_INTERNAL;
cleanup:
    db_read_end(c);
    json_decref(gpus);
    json_decref(sources);
    db_conn_put(st, c);
    return rc;
}
