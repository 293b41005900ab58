/* What Kubernetes sources found: nodes with GPU capacity and the pods that
 * requested GPUs, running now or ended. */
#include "api/api.h"
#include "api/scope.h"
#include "core/status.h"
#include "store/store.h"

#include <string.h>

/* Reads the shared filters; false after replying 400. */
static bool filter_or_reply(struct req *r, struct store_k8s_filter *f)
{
    bool active = true;
    const char *a = req_param(r, "active");

    f->active = -1;
    who_scope(r, &f->scope);
    if (!req_param_str_or_reply(r, "cluster", 128, &f->cluster) ||
        !req_param_str_or_reply(r, "node", 253, &f->node) ||
        !req_param_str_or_reply(r, "namespace", 253, &f->ns) ||
        !req_param_bool_or_reply(r, "active", &active))
        return false;
    if (a && *a)
        f->active = active ? 1 : 0;
    return true;
}

void api_k8s_nodes(struct req *r)
{
    struct store_k8s_filter f;
    json_t *items = NULL;
    int st;

    if (!filter_or_reply(r, &f))
        return;
    if ((st = store_k8s_nodes(r->store, &f, &items)) != GI_OK) {
        reply_status(r, st, "nodes");
        return;
    }
    reply_list(r, items, (int64_t)json_array_size(items), 0);
}

void api_k8s_pods(struct req *r)
{
    static const char *const sortable[] = {NULL};
    struct store_k8s_filter f;
    struct store_page pg;
    json_t *items = NULL;
    int64_t total = 0;
    int st;

    if (!req_page_or_reply(r, sortable, &pg) || !filter_or_reply(r, &f))
        return;
    if ((st = store_k8s_pods(r->store, &f, &pg, &items, &total)) != GI_OK) {
        reply_status(r, st, "pods");
        return;
    }
    reply_list(r, items, total, pg.offset);
}
