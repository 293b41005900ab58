/* Bulk allocation for provisioning: N matching available resources are
 * taken atomically, or none are. */
#include "api/api.h"
#include "api/scope.h"
#include "core/kinds.h"
#include "core/status.h"
#include "store/store.h"

void api_allocations_create(struct req *r)
{
    static const char *const allowed[] = {"datacenter_id", "kind",   "count",   "min_gpus",
                                          "gpu_model",     "tenant", "project", NULL};
    json_t *body = NULL, *items = NULL;
    struct store_alloc_req q = {.count = 1};
    int64_t available = 0;
    int st;

    if (!req_json_body_or_reply(r, &body))
        return;
    if (!json_known_or_reply(r, body, allowed) ||
        !json_int_or_reply(r, body, "datacenter_id", true, 1, INT64_MAX, &q.datacenter_id) ||
        !json_str_or_reply(r, body, "kind", false, 16, &q.kind) ||
        !json_int_or_reply(r, body, "count", false, 1, 1000, &q.count) ||
        !json_int_or_reply(r, body, "min_gpus", false, 0, 1024, &q.min_gpus) ||
        !json_str_or_reply(r, body, "gpu_model", false, 64, &q.gpu_model) ||
        !json_str_or_reply(r, body, "tenant", true, 128, &q.tenant) ||
        !json_str_or_reply(r, body, "project", false, 128, &q.project))
        goto cleanup;
    if (!who_may_dc_or_reply(r, q.datacenter_id))
        goto cleanup;
    if (q.kind == NULL)
        q.kind = "server";
    if (!gi_kind_find(q.kind)) {
        reply_error(r, 400, "validation_failed", "kind",
                    "kind must be one of server, vm, storage, switch, infiniband");
        goto cleanup;
    }
    st = store_alloc_bulk(r->store, r->who.name, &q, &items, &available);
    if (st == GI_CONFLICT) {
        json_t *err = json_pack(
            "{s:s, s:s, s:s, s:I, s:I}", "code", "insufficient_capacity", "message",
            "not enough matching available resources; none "
            "were allocated",
            "field", "count", "requested", (json_int_t)q.count, "available", (json_int_t)available);
        reply_json(r, 409, json_pack("{s:o}", "error", err));
    } else if (st != GI_OK) {
        reply_status(r, st, "allocation");
    } else {
        reply_json(r, 201, json_pack("{s:o, s:I}", "items", items, "count", (json_int_t)q.count));
    }
cleanup:
    json_decref(body);
}
