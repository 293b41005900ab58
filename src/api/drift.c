/* Drift between the declared inventory and discovery, as a list with
 * per-kind counts (JSON) or the same rows as CSV. */
#include "api/api.h"
#include "api/scope.h"
#include "core/status.h"
#include "core/util.h"
#include "http/server.h"
#include "store/store.h"

#include <stdio.h>

/* The list has one fixed order. */
static const char *const unsorted[] = {NULL};

void api_drift_list(struct req *r)
{
    struct store_drift_filter f = {0};
    struct store_page pg;
    json_t *items = NULL, *counts = NULL, *body;
    int64_t total = 0;
    int st;

    if (!req_page_or_reply(r, unsorted, &pg) || !req_param_str_or_reply(r, "kind", 32, &f.kind) ||
        !req_param_int_or_reply(r, "datacenter", 1, INT64_MAX, &f.datacenter_id) ||
        !who_dc_filter_or_reply(r, &f.datacenter_id, &f.scope))
        return;
    if (f.kind && *f.kind == '\0')
        f.kind = NULL;
    if (f.kind && !store_drift_kind_valid(f.kind)) {
        reply_error(r, 400, "invalid_parameter", "kind", "kind must be one of " STORE_DRIFT_KINDS);
        return;
    }
    f.stale_before = gi_now() - server_freshness(r->srv);
    if ((st = store_drift_list(r->store, &f, &pg, &items, &total, &counts)) != GI_OK) {
        reply_status(r, st, "drift");
        return;
    }
    if (req_wants_csv(r)) {
        json_decref(counts);
        reply_list(r, items, total, pg.offset);
        return;
    }
    body = json_pack("{s:o, s:I, s:n, s:o}", "items", items, "total", (json_int_t)total, "next",
                     "counts", counts);
    if (pg.offset + (int64_t)json_array_size(json_object_get(body, "items")) < total) {
        char cur[32];
        snprintf(cur, sizeof cur, "%lld",
                 (long long)(pg.offset + (int64_t)json_array_size(json_object_get(body, "items"))));
        json_object_set_new(body, "next", json_string(cur));
    }
    reply_json(r, 200, body);
}
