/* Pulling a Kubernetes cluster: Nodes (GPU Feature Discovery labels,
 * GPU capacity) and Pods (GPU and MIG requests), listed in pages with
 * limit/continue; a listing whose continue token expired (410) is started
 * again once. */
#include "collect/curlso.h"
#include "collect/httpget.h"
#include "collect/pull.h"
#include "core/log.h"
#include "core/status.h"
#include "core/util.h"
#include "parse/k8s.h"
#include "store/store.h"

#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#define K8S_MAX_PAGES 200

struct k8s_pull {
    const json_t *cfg;
    const char *base;
    int64_t page_size;
    struct k8s_node *nodes;
    size_t nnodes;
    struct k8s_pod *pods;
    size_t npods;
};

/* Appends n items of size sz from src to *dst (count *have). */
static int append(void **dst, size_t *have, const void *src, size_t n, size_t sz)
{
    void *p;

    if (n == 0)
        return 0;
    p = realloc(*dst, (*have + n) * sz);
    if (p == NULL)
        return -1;
    memcpy((char *)p + *have * sz, src, n * sz);
    *dst = p;
    *have += n;
    return 0;
}

/* GETs one page of `path` after continue token `cont` into *body. */
static int get_page(struct k8s_pull *k, const char *path, const char *cont, char **body,
                    size_t *len, long *status, char *err, size_t errlen)
{
    struct httpget_opts o;
    char url[6000], *tok = NULL;

    pull_http_opts(k->cfg, &o, K8S_MAX_BODY);
    if (cont && *cont && (tok = curlso->easy_escape(NULL, cont, 0)) == NULL) {
        snprintf(err, errlen, "out of memory");
        return -1;
    }
    snprintf(url, sizeof url, "%s%s%s?limit=%lld%s%s", k->base,
             k->base[strlen(k->base) - 1] == '/' ? "" : "/", path, (long long)k->page_size,
             tok ? "&continue=" : "", tok ? tok : "");
    curlso->free(tok);
    return httpget(url, &o, body, len, status, err, errlen);
}

/* Lists every page of nodes or pods, restarting once on 410 Gone. */
static int list_all(struct k8s_pull *k, bool pods, char *err, size_t errlen)
{
    char cont[K8S_TOKEN_LEN] = "";
    bool restarted = false;

    for (int page = 0; page < K8S_MAX_PAGES; page++) {
        char *body = NULL;
        size_t len;
        long status;
        int rc;
        struct k8s_status st;
        struct k8s_list_meta meta;

        if (get_page(k, pods ? "api/v1/pods" : "api/v1/nodes", cont, &body, &len, &status, err,
                     errlen) != 0)
            return -1;
        if (pods) {
            struct k8s_pod_list l = {0};
            rc = k8s_parse_pod_list(body, len, &l, err, errlen);
            st = l.status;
            meta = l.meta;
            /* Keep only pods that ask for GPUs: most of a cluster's do not. */
            for (size_t i = 0; rc == GI_OK && i < l.nitems; i++)
                if ((l.items[i].gpus > 0 || l.items[i].mig_devices > 0) &&
                    append((void **)&k->pods, &k->npods, &l.items[i], 1, sizeof *l.items) != 0)
                    rc = GI_INTERNAL;
            k8s_pod_list_free(&l);
        } else {
            struct k8s_node_list l = {0};
            rc = k8s_parse_node_list(body, len, &l, err, errlen);
            st = l.status;
            meta = l.meta;
            if (rc == GI_OK &&
                append((void **)&k->nodes, &k->nnodes, l.items, l.nitems, sizeof *l.items) != 0)
                rc = GI_INTERNAL;
            k8s_node_list_free(&l);
        }
        free(body);
        if (rc != GI_OK && st.present && k8s_status_expired(&st) && !restarted) {
            /* The continue token expired: start the listing over, once. */
            gi_warn("kubernetes: listing expired (410); starting over");
            restarted = true;
            cont[0] = '\0';
            if (pods)
                k->npods = 0;
            else
                k->nnodes = 0;
            page = -1;
            continue;
        }
        if (rc != GI_OK) {
            if (st.present)
                snprintf(err, errlen, "the API server answered %lld %s: %s", (long long)st.code,
                         st.reason, st.message);
            else if (status < 200 || status > 299)
                snprintf(err, errlen, "the API server answered HTTP %ld", status);
            return -1;
        }
        if (meta.continue_token[0] == '\0')
            return 0;
        gi_strlcpy(cont, meta.continue_token, sizeof cont);
    }
    snprintf(err, errlen, "more than %d pages", K8S_MAX_PAGES);
    return -1;
}

static const char *opt(const char *s) { return s && *s ? s : NULL; }

int pull_run_kubernetes(struct store *st, int64_t source_id, const json_t *cfg, const char *cluster,
                        struct pull_result *res)
{
    struct k8s_pull k = {.cfg = cfg, .base = json_string_value(json_object_get(cfg, "url"))};
    struct store_k8s_node *nodes = NULL;
    struct store_k8s_pod *pods = NULL;
    json_t *labels = json_array();
    size_t np = 0;
    int rc = -1;

    k.page_size = json_is_integer(json_object_get(cfg, "page_size"))
                      ? json_integer_value(json_object_get(cfg, "page_size"))
                      : 500;
    if (list_all(&k, false, res->error, sizeof res->error) != 0 ||
        list_all(&k, true, res->error, sizeof res->error) != 0)
        goto cleanup;
    nodes = calloc(k.nnodes + 1, sizeof *nodes);
    pods = calloc(k.npods + 1, sizeof *pods);
    if (!nodes || !pods) {
        snprintf(res->error, sizeof res->error, "out of memory");
        goto cleanup;
    }
    for (size_t i = 0; i < k.nnodes; i++) {
        const struct k8s_node *n = &k.nodes[i];
        int64_t cap = -1, alloc = -1;
        for (size_t r = 0; r < n->nres; r++) {
            if (strcmp(n->res[r].name, "nvidia.com/gpu") == 0 ||
                strcmp(n->res[r].name, "amd.com/gpu") == 0 ||
                strcmp(n->res[r].name, "nvidia.com/gpu.shared") == 0 ||
                strcmp(n->res[r].name, "alpha.kubernetes.io/nvidia-gpu") == 0) {
                cap = n->res[r].capacity;
                alloc = n->res[r].allocatable;
            }
        }
        nodes[i] = (struct store_k8s_node){.name = n->name,
                                           .hostname = opt(n->hostname),
                                           .product = opt(n->product_base),
                                           .sharing = opt(n->sharing_strategy),
                                           .driver = opt(n->driver),
                                           .cloud = opt(n->cloud),
                                           .region = opt(n->region),
                                           .zone = opt(n->zone),
                                           .instance_type = opt(n->instance_type),
                                           .warning = opt(n->warning),
                                           .provider_id = opt(n->provider_id),
                                           .labels = n->labels_json,
                                           .physical_gpus = n->physical_gpus,
                                           .capacity = cap,
                                           .allocatable = alloc,
                                           .mig_devices = n->mig_devices,
                                           .replicas = n->replicas,
                                           .ready = n->ready};
        if (n->physical_gpus > 0)
            res->gpus += n->physical_gpus;
    }
    /* Only pods that ask for GPUs are kept: they are the GPU workloads. */
    for (size_t i = 0; i < k.npods; i++) {
        const struct k8s_pod *p = &k.pods[i];
        json_t *lab;
        if (p->gpus <= 0 && p->mig_devices <= 0)
            continue;
        lab = json_object();
        for (size_t l = 0; l < p->nlabels; l++)
            json_object_set_new(lab, p->labels[l].key, json_string(p->labels[l].value));
        json_array_append_new(labels, lab);
        pods[np++] = (struct store_k8s_pod){.uid = p->uid,
                                            .ns = p->namespace_,
                                            .name = p->name,
                                            .node = opt(p->node_name),
                                            .phase = opt(p->phase),
                                            .owner_kind = opt(p->owner_kind),
                                            .owner_name = opt(p->owner_name),
                                            .labels = lab,
                                            .gpus = p->gpus,
                                            .mig_devices = p->mig_devices,
                                            .started_at = p->start_time};
    }
    res->pods = (int64_t)np;
    if (!res->dry && store_k8s_sync(st, source_id, cluster, nodes, k.nnodes, pods, np) != GI_OK) {
        snprintf(res->error, sizeof res->error, "storing the cluster's nodes and pods failed");
        goto cleanup;
    }
    res->hosts = (int64_t)k.nnodes;
    rc = 0;
cleanup:
    json_decref(labels);
    free(nodes);
    free(pods);
    free(k.nodes);
    free(k.pods);
    return rc;
}
