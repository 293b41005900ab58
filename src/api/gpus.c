/* GPUs as discovered: one record per physical GPU (and MIG instance), with
 * provenance, the newest telemetry, processes, events, identity conflicts
 * and freshness (judged by when the newest reading was taken). */
#include "api/api.h"
#include "api/scope.h"
#include "core/status.h"
#include "core/util.h"
#include "http/server.h"
#include "store/store.h"

#include <stdio.h>
#include <string.h>

/* Data older than this instant is stale. */
static int64_t stale_before(struct req *r) { return gi_now() - server_freshness(r->srv); }

/* GET /api/v1/gpus: a page of GPUs, with "summary" figures over the whole
 * filter (not the page) and the server's freshness limit ("freshness_s"). */
void api_gpus_list(struct req *r)
{
    static const char *const sortable[] = {
        "host",          "model",        "cluster", "team",   "datacenter",
        "util_pct",      "mem_used_mib", "power_w", "temp_c", "last_seen_at",
        "first_seen_at", "observed_at",  NULL};
    struct store_gpu_filter f = {.stale = -1};
    struct store_page pg;
    json_t *items = NULL, *summary = NULL, *body;
    int64_t total = 0, next;
    bool stale = false;
    const char *stale_p = req_param(r, "stale");
    int st;

    if (!req_page_or_reply(r, sortable, &pg) || !req_param_str_or_reply(r, "host", 253, &f.host) ||
        !req_param_str_or_reply(r, "cluster", 128, &f.cluster) ||
        !req_param_str_or_reply(r, "model", 96, &f.model) ||
        !req_param_str_or_reply(r, "team", 128, &f.team) ||
        !req_param_str_or_reply(r, "env", 64, &f.env) ||
        !req_param_str_or_reply(r, "q", 128, &f.q) ||
        !req_param_int_or_reply(r, "datacenter", 1, INT64_MAX, &f.datacenter_id) ||
        !req_param_int_or_reply(r, "source", 1, INT64_MAX, &f.source_id) ||
        !req_param_bool_or_reply(r, "stale", &stale) ||
        !req_param_str_or_reply(r, "state", 16, &f.state) ||
        !who_dc_filter_or_reply(r, &f.datacenter_id, &f.scope))
        return;
    if (f.state && strcmp(f.state, "in_use") && strcmp(f.state, "idle") &&
        strcmp(f.state, "unknown") && strcmp(f.state, "stale") && strcmp(f.state, "missing")) {
        reply_error(r, 400, "invalid_parameter", "state",
                    "state must be in_use, idle, unknown, stale or missing");
        return;
    }
    if (stale_p && *stale_p)
        f.stale = stale ? 1 : 0;
    f.stale_before = stale_before(r);
    if (req_wants_csv(r)) {
        if ((st = store_gpu_list(r->store, &f, &pg, &items, &total)) != GI_OK)
            reply_status(r, st, "GPUs");
        else
            reply_list(r, items, total, pg.offset);
        return;
    }
    if ((st = store_gpu_list_summary(r->store, &f, &pg, &items, &total, &summary)) != GI_OK) {
        reply_status(r, st, "GPUs");
        return;
    }
    next = pg.offset + (int64_t)json_array_size(items);
    body = json_pack("{s:o, s:I, s:o, s:o, s:I}", "items", items, "total", (json_int_t)total,
                     "next", json_null(), "summary", summary, "freshness_s",
                     (json_int_t)server_freshness(r->srv));
    if (body && next < total) {
        char cur[32];
        snprintf(cur, sizeof cur, "%lld", (long long)next);
        json_object_set_new(body, "next", json_string(cur));
    }
    reply_json(r, 200, body);
}

void api_gpus_get(struct req *r)
{
    json_t *out = NULL;
    int st;

    if (!who_may_see_or_reply(r, WHO_GPU, r->key, 0))
        return;
    st = store_gpu_get(r->store, r->key, stale_before(r), &out);
    if (st != GI_OK)
        reply_status(r, st, "GPU");
    else
        reply_json(r, 200, out);
}
