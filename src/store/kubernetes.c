/* Kubernetes: a source's sync of nodes and GPU pods, and their lists. A
 * node that appears, goes, or changes its labels, cloud or host name has
 * the current owner of its host's GPUs recomputed inside the sync's
 * transaction (node_label and cloud_tag rules match on them). */
#include "store/store_int.h"
#include "core/status.h"
#include "core/util.h"

#include <stdlib.h>
#include <string.h>

#define K8S_POD_SELECT                                                                             \
    "SELECT p.uid, p.namespace, p.name, p.node, p.phase, p.gpus, p.mig_devices, p.owner_kind, "    \
    "p.owner_name, p.labels, s.name AS source, s.cluster, p.started_at, "                          \
    "p.first_seen_at, p.last_seen_at, p.ended_at FROM k8s_pods p JOIN sources s ON s.id = "        \
    "p.source_id "
/* A node is where the host of its host name (else of its name) is; a pod
 * where its node is (else the host named as its node). */
#define K8S_HOST_DC(name)                                                                          \
    "(SELECT h.datacenter_id FROM hosts h WHERE h.hostname = " name " ORDER BY h.id LIMIT 1)"
#define K8S_NODE_DC K8S_HOST_DC("COALESCE(n.hostname, n.name)")
#define K8S_POD_DC                                                                                 \
    "COALESCE((SELECT " K8S_NODE_DC " FROM k8s_nodes n WHERE n.source_id = p.source_id AND "       \
    "n.name = p.node), " K8S_HOST_DC("p.node") ")"
#define K8S_POD_WHERE                                                                              \
    "WHERE (:cluster IS NULL OR s.cluster = :cluster) AND (:node IS NULL OR p.node = :node) AND "  \
    "(:ns IS NULL OR p.namespace = :ns) AND (:active < 0 OR (:active = 1) = (p.ended_at IS "       \
    "NULL)) AND " STORE_SCOPE_IN(K8S_POD_DC) " "

#define STATEMENTS(X)                                                                              \
    X(K8S_NODE_UPSERT,                                                                             \
      "INSERT INTO k8s_nodes (source_id, name, cluster, hostname, product, physical_gpus, "        \
      "gpu_capacity, gpu_allocatable, mig_devices, sharing, replicas, driver, cloud, region, "     \
      "zone, instance_type, ready, warning, labels, first_seen_at, last_seen_at) VALUES (:sid, "   \
      ":name, :cluster, :hostname, :product, :phys, :cap, :alloc, :mig, :sharing, :replicas, "     \
      ":driver, :cloud, :region, :zone, :itype, :ready, :warning, :labels, :now, :now) ON "        \
      "CONFLICT (source_id, "                                                                      \
      "name) DO UPDATE SET cluster = excluded.cluster, hostname = excluded.hostname, product = "   \
      "excluded.product, physical_gpus = excluded.physical_gpus, gpu_capacity = "                  \
      "excluded.gpu_capacity, gpu_allocatable = excluded.gpu_allocatable, mig_devices = "          \
      "excluded.mig_devices, sharing = excluded.sharing, replicas = excluded.replicas, driver = "  \
      "excluded.driver, cloud = excluded.cloud, region = excluded.region, zone = excluded.zone, "  \
      "instance_type = excluded.instance_type, ready = excluded.ready, warning = "                 \
      "excluded.warning, labels = excluded.labels, seen = 1, last_seen_at = "                      \
      "excluded.last_seen_at")                                                                     \
    X(K8S_NODE_OLD, "SELECT hostname, labels, cloud FROM k8s_nodes WHERE source_id = :sid AND "    \
                    "name = :name")                                                                \
    X(K8S_NODES_UNSEEN, "SELECT hostname FROM k8s_nodes WHERE source_id = :sid AND seen = 0")      \
    X(K8S_NODE_PROVIDER, "UPDATE k8s_nodes SET provider_id = :pid WHERE source_id = :sid AND "     \
                         "name = :name")                                                           \
    X(K8S_UNSEE_NODES, "UPDATE k8s_nodes SET seen = 0 WHERE source_id = :sid")                     \
    X(K8S_UNSEE_PODS, "UPDATE k8s_pods SET seen = 0 WHERE source_id = :sid AND ended_at IS NULL")  \
    X(K8S_NODE_GONE, "DELETE FROM k8s_nodes WHERE source_id = :sid AND seen = 0")                  \
    X(K8S_POD_UPSERT,                                                                              \
      "INSERT INTO k8s_pods (source_id, uid, namespace, name, node, phase, gpus, mig_devices, "    \
      "owner_kind, owner_name, labels, started_at, first_seen_at, last_seen_at, ended_at) VALUES " \
      "(:sid, :uid, :ns, :name, :node, :phase, :gpus, :mig, :okind, :oname, :labels, :started, "   \
      ":now, :now, :ended) ON CONFLICT (source_id, uid) DO UPDATE SET node = excluded.node, "      \
      "phase "                                                                                     \
      "= excluded.phase, gpus = excluded.gpus, mig_devices = excluded.mig_devices, labels = "      \
      "excluded.labels, started_at = COALESCE(excluded.started_at, k8s_pods.started_at), seen = "  \
      "1, last_seen_at = excluded.last_seen_at, ended_at = CASE WHEN excluded.ended_at IS NULL "   \
      "THEN "                                                                                      \
      "NULL ELSE COALESCE(k8s_pods.ended_at, excluded.ended_at) END")                              \
    X(K8S_POD_GONE, "UPDATE k8s_pods SET ended_at = :now WHERE source_id = :sid AND ended_at IS "  \
                    "NULL AND seen = 0")                                                           \
    X(K8S_HOST_CLUSTER,                                                                            \
      "UPDATE hosts SET cluster = :cluster WHERE hostname = :name OR hostname = "                  \
      ":hostname")                                                                                 \
    X(K8S_GPU_CLUSTER,                                                                             \
      "UPDATE gpus SET cluster = :cluster WHERE host_id IN (SELECT id FROM hosts "                 \
      "WHERE hostname = :name OR hostname = :hostname)")                                           \
    X(K8S_NODES,                                                                                   \
      "SELECT n.name, n.cluster, n.hostname, n.product, n.physical_gpus, "                         \
      "n.gpu_capacity, n.gpu_allocatable, n.mig_devices, n.sharing, n.replicas, "                  \
      "n.driver, n.cloud, n.region, n.zone, n.instance_type, n.ready, n.warning, "                 \
      "s.name AS source, n.first_seen_at, n.last_seen_at, (SELECT COALESCE(SUM(p.gpus), "          \
      "0) FROM k8s_pods p WHERE p.source_id = n.source_id AND p.node = n.name AND "                \
      "p.ended_at IS NULL) AS gpus_requested FROM k8s_nodes n JOIN sources s ON s.id = "           \
      "n.source_id WHERE (:cluster IS NULL OR n.cluster = :cluster) AND (:node IS NULL "           \
      "OR n.name = :node) AND " STORE_SCOPE_IN(K8S_NODE_DC) " ORDER BY n.cluster, n.name")         \
    X(K8S_PODS, K8S_POD_SELECT K8S_POD_WHERE "ORDER BY p.first_seen_at DESC, p.uid " PAGE)         \
    X(K8S_PODS_COUNT,                                                                              \
      "SELECT COUNT(*) FROM k8s_pods p JOIN sources s ON s.id = p.source_id " K8S_POD_WHERE)

enum stmt_id { STATEMENTS(STORE_AS_ENUM) ST__COUNT };
static const char *const stmt_sql[] = {STATEMENTS(STORE_AS_SQL)};

static struct db_stmt *prep(struct conn *c, enum stmt_id id) { return db_prep(c, stmt_sql[id]); }

static int list_page(struct store *st, enum stmt_id count, enum stmt_id list, db_filter_binder bind,
                     const void *filter, const struct store_page *pg, json_t **items,
                     int64_t *total)
{
    return db_list_page(st, stmt_sql[count], stmt_sql[list], bind, filter, pg, items, total);
}

/* Host names whose GPUs' owners are to be recomputed. */
struct names {
    char **v;
    size_t n, cap;
};

static int names_add(struct names *ns, const char *name)
{
    if (!name || !*name)
        return GI_OK;
    for (size_t i = 0; i < ns->n; i++)
        if (strcmp(ns->v[i], name) == 0)
            return GI_OK;
    if (ns->n == ns->cap) {
        size_t nc = ns->cap ? ns->cap * 2 : 16;
        char **nv = realloc(ns->v, nc * sizeof *nv);
        if (!nv)
            return GI_INTERNAL;
        ns->v = nv;
        ns->cap = nc;
    }
    if (!(ns->v[ns->n] = strdup(name)))
        return GI_INTERNAL;
    ns->n++;
    return GI_OK;
}

static void names_free(struct names *ns)
{
    for (size_t i = 0; i < ns->n; i++)
        free(ns->v[i]);
    free(ns->v);
}

static bool text_differs(const char *a, const char *b)
{
    return strcmp(a ? a : "", b ? b : "") != 0;
}

/* Before node n's upsert: adds its old and new host names to ns when the
 * node is new or its host name, labels or cloud change. */
static int node_note(struct conn *c, int64_t source_id, const struct store_k8s_node *n,
                     const char *labels, struct names *ns)
{
    struct db_stmt *s = prep(c, ST_K8S_NODE_OLD);
    int rc = GI_OK, step;

    if (!s)
        return GI_INTERNAL;
    db_bind_int(s, ":sid", source_id);
    db_bind_text(s, ":name", n->name);
    step = db_step(c, s);
    if (step == DB_ROW &&
        (text_differs(db_col_text(s, 0), n->hostname) || text_differs(db_col_text(s, 1), labels) ||
         text_differs(db_col_text(s, 2), n->cloud))) {
        rc = names_add(ns, db_col_text(s, 0));
        if (rc == GI_OK)
            rc = names_add(ns, n->hostname);
    } else if (step == DB_DONE) {
        rc = names_add(ns, n->hostname);
    } else if (step != DB_ROW) {
        rc = db_status(step);
    }
    db_reset(s);
    return rc;
}

/* Adds the host names of the nodes this listing did not mark again. */
static int nodes_gone_note(struct conn *c, int64_t source_id, struct names *ns)
{
    struct db_stmt *s = prep(c, ST_K8S_NODES_UNSEEN);
    int rc = GI_OK, step;

    if (!s)
        return GI_INTERNAL;
    db_bind_int(s, ":sid", source_id);
    while (rc == GI_OK && (step = db_step(c, s)) == DB_ROW)
        rc = names_add(ns, db_col_text(s, 0));
    db_reset(s);
    return rc != GI_OK ? rc : step == DB_DONE ? GI_OK : db_status(step);
}

int store_k8s_sync(struct store *st, int64_t source_id, const char *cluster,
                   const struct store_k8s_node *nodes, size_t nn, const struct store_k8s_pod *pods,
                   size_t np)
{
    struct conn *c = db_conn_get(st);
    struct db_stmt *s;
    struct names changed = {0};
    int64_t now = gi_now();
    int rc = db_tx_begin(c);

    /* Whatever this listing does not mark again is gone. */
    for (int k = 0; rc == GI_OK && k < 2; k++) {
        if (!(s = prep(c, k ? ST_K8S_UNSEE_PODS : ST_K8S_UNSEE_NODES))) {
            rc = GI_INTERNAL;
            break;
        }
        db_bind_int(s, ":sid", source_id);
        rc = db_exec_done(c, s);
    }
    for (size_t i = 0; rc == GI_OK && i < nn; i++) {
        const struct store_k8s_node *n = &nodes[i];
        const char *labels = n->labels && *n->labels ? n->labels : "{}";
        if ((rc = node_note(c, source_id, n, labels, &changed)) != GI_OK)
            break;
        if (!(s = prep(c, ST_K8S_NODE_UPSERT))) {
            rc = GI_INTERNAL;
            break;
        }
        db_bind_int(s, ":sid", source_id);
        db_bind_text(s, ":name", n->name);
        db_bind_opt_text(s, ":cluster", cluster);
        db_bind_opt_text(s, ":hostname", n->hostname);
        db_bind_opt_text(s, ":product", n->product);
        db_bind_opt_int(s, ":phys", n->physical_gpus);
        db_bind_opt_int(s, ":cap", n->capacity);
        db_bind_opt_int(s, ":alloc", n->allocatable);
        db_bind_opt_int(s, ":mig", n->mig_devices);
        db_bind_opt_text(s, ":sharing", n->sharing);
        db_bind_opt_int(s, ":replicas", n->replicas);
        db_bind_opt_text(s, ":driver", n->driver);
        db_bind_opt_text(s, ":cloud", n->cloud);
        db_bind_opt_text(s, ":region", n->region);
        db_bind_opt_text(s, ":zone", n->zone);
        db_bind_opt_text(s, ":itype", n->instance_type);
        db_bind_opt_int(s, ":ready", n->ready);
        db_bind_opt_text(s, ":warning", n->warning);
        db_bind_text(s, ":labels", labels);
        db_bind_int(s, ":now", now);
        rc = db_exec_done(c, s);
        /* The cloud instance behind the node, for billing lines. */
        if (rc == GI_OK) {
            if (!(s = prep(c, ST_K8S_NODE_PROVIDER)))
                rc = GI_INTERNAL;
            else {
                db_bind_int(s, ":sid", source_id);
                db_bind_text(s, ":name", n->name);
                db_bind_opt_text(s, ":pid", n->provider_id);
                rc = db_exec_done(c, s);
            }
        }
        if (rc == GI_OK && cluster && *cluster) {
            for (int k = 0; rc == GI_OK && k < 2; k++) {
                if (!(s = prep(c, k ? ST_K8S_GPU_CLUSTER : ST_K8S_HOST_CLUSTER))) {
                    rc = GI_INTERNAL;
                    break;
                }
                db_bind_text(s, ":cluster", cluster);
                db_bind_text(s, ":name", n->name);
                db_bind_text(s, ":hostname", n->hostname ? n->hostname : n->name);
                rc = db_exec_done(c, s);
            }
        }
    }
    for (size_t i = 0; rc == GI_OK && i < np; i++) {
        const struct store_k8s_pod *p = &pods[i];
        bool done =
            p->phase && (strcmp(p->phase, "Succeeded") == 0 || strcmp(p->phase, "Failed") == 0);
        if (!(s = prep(c, ST_K8S_POD_UPSERT))) {
            rc = GI_INTERNAL;
            break;
        }
        db_bind_int(s, ":sid", source_id);
        db_bind_text(s, ":uid", p->uid);
        db_bind_text(s, ":ns", p->ns);
        db_bind_text(s, ":name", p->name);
        db_bind_opt_text(s, ":node", p->node);
        db_bind_opt_text(s, ":phase", p->phase);
        db_bind_int(s, ":gpus", p->gpus < 0 ? 0 : p->gpus);
        db_bind_int(s, ":mig", p->mig_devices < 0 ? 0 : p->mig_devices);
        db_bind_opt_text(s, ":okind", p->owner_kind);
        db_bind_opt_text(s, ":oname", p->owner_name);
        if (p->labels)
            db_bind_json(s, ":labels", p->labels);
        else
            db_bind_text(s, ":labels", "{}");
        db_bind_opt_int(s, ":started", p->started_at);
        db_bind_int(s, ":now", now);
        if (done)
            db_bind_int(s, ":ended", now);
        else
            db_bind_text(s, ":ended", NULL);
        rc = db_exec_done(c, s);
    }
    if (rc == GI_OK)
        rc = nodes_gone_note(c, source_id, &changed);
    for (int k = 0; rc == GI_OK && k < 2; k++) {
        if (!(s = prep(c, k ? ST_K8S_POD_GONE : ST_K8S_NODE_GONE))) {
            rc = GI_INTERNAL;
            break;
        }
        db_bind_int(s, ":sid", source_id);
        db_bind_int(s, ":now", now);
        rc = db_exec_done(c, s);
    }
    for (size_t i = 0; rc == GI_OK && i < changed.n; i++)
        rc = owner_hostname_changed(c, changed.v[i], now);
    rc = db_tx_end(c, rc);
    names_free(&changed);
    db_conn_put(st, c);
    return rc;
}

static void bind_k8s_filter(struct db_stmt *s, const void *filter)
{
    const struct store_k8s_filter *f = filter;
    db_bind_text(s, ":cluster", f->cluster);
    db_bind_text(s, ":node", f->node);
    db_bind_text(s, ":ns", f->ns);
    db_bind_int(s, ":active", f->active);
    db_bind_scope(s, &f->scope);
}

int store_k8s_nodes(struct store *st, const struct store_k8s_filter *f, json_t **items)
{
    struct conn *c = db_conn_get(st);
    struct db_stmt *s = prep(c, ST_K8S_NODES);
    int rc = GI_INTERNAL;

    if (s) {
        bind_k8s_filter(s, f);
        rc = db_collect(c, s, items);
    }
    db_conn_put(st, c);
    return rc;
}

int store_k8s_pods(struct store *st, const struct store_k8s_filter *f, const struct store_page *pg,
                   json_t **items, int64_t *total)
{
    return list_page(st, ST_K8S_PODS_COUNT, ST_K8S_PODS, bind_k8s_filter, f, pg, items, total);
}
