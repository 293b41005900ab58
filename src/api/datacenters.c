/* Data centers: create, search, read, rename/relocate, delete, overview. */
#include "api/api.h"
#include "api/scope.h"
#include "core/status.h"
#include "core/util.h"
#include "http/server.h"
#include "store/store.h"

#include <string.h>

static const char *const dc_fields[] = {"name", "location", "rows", NULL};

/* Reads name/location/rows from a body; name required when creating. */
static bool dc_body_or_reply(struct req *r, const json_t *body, bool create, struct store_dc *dc)
{
    dc->rows = -1;
    if (!json_known_or_reply(r, body, dc_fields) ||
        !json_str_or_reply(r, body, "name", create, 128, &dc->name) ||
        !json_str_or_reply(r, body, "location", false, 128, &dc->location) ||
        !json_int_or_reply(r, body, "rows", false, 0, 100000, &dc->rows))
        return false;
    if (!create && json_object_get(body, "name") && dc->name && *dc->name == '\0') {
        reply_error(r, 400, "validation_failed", "name", "name must not be empty");
        return false;
    }
    if (!create && json_object_get(body, "name") && dc->name == NULL) {
        reply_error(r, 400, "validation_failed", "name", "name must not be null");
        return false;
    }
    return true;
}

void api_datacenters_create(struct req *r)
{
    json_t *body = NULL, *out = NULL;
    struct store_dc dc;
    int st;

    if (!req_json_body_or_reply(r, &body))
        return;
    if (!dc_body_or_reply(r, body, true, &dc))
        goto cleanup;
    st = store_dc_create(r->store, r->who.name, &dc, &out);
    if (st == GI_CONFLICT)
        reply_error(r, 409, "conflict", "name", "a data center named '%s' already exists", dc.name);
    else if (st != GI_OK)
        reply_status(r, st, "data center");
    else
        reply_json(r, 201, out);
cleanup:
    json_decref(body);
}

void api_datacenters_list(struct req *r)
{
    static const char *const sortable[] = {"id", "name", "location", "rows", "created_at", NULL};
    struct store_page pg;
    const char *q;
    json_t *items = NULL;
    int64_t total = 0;
    int st;

    if (!req_page_or_reply(r, sortable, &pg) || !req_param_str_or_reply(r, "q", 128, &q))
        return;
    if ((st = store_dc_list(r->store, q, &pg, &items, &total)) != GI_OK) {
        reply_status(r, st, "data centers");
        return;
    }
    reply_list(r, items, total, pg.offset);
}

void api_datacenters_get(struct req *r)
{
    json_t *out = NULL;
    int st = store_dc_get(r->store, r->id, &out);

    if (st != GI_OK)
        reply_status(r, st, "data center");
    else
        reply_json(r, 200, out);
}

void api_datacenters_update(struct req *r)
{
    json_t *body = NULL, *out = NULL;
    struct store_dc dc;
    int st;

    if (!req_json_body_or_reply(r, &body))
        return;
    if (!dc_body_or_reply(r, body, false, &dc))
        goto cleanup;
    st = store_dc_update(r->store, r->who.name, r->id, &dc, &out);
    if (st == GI_CONFLICT)
        reply_error(r, 409, "conflict", "name", "a data center named '%s' already exists", dc.name);
    else if (st != GI_OK)
        reply_status(r, st, "data center");
    else
        reply_json(r, 200, out);
cleanup:
    json_decref(body);
}

void api_datacenters_delete(struct req *r)
{
    bool force = false;
    json_t *counts = NULL;
    int st;

    if (!req_param_bool_or_reply(r, "force", &force))
        return;
    st = store_dc_delete(r->store, r->who.name, r->id, force, &counts);
    if (st == GI_CONFLICT) {
        json_t *err = json_pack("{s:s, s:s, s:O}", "code", "conflict", "message",
                                "the data center still holds resources; delete them first or "
                                "pass ?force=true",
                                "counts", counts);
        reply_json(r, 409, json_pack("{s:o}", "error", err));
    } else if (st != GI_OK) {
        reply_status(r, st, "data center");
    } else {
        reply_no_content(r);
    }
    json_decref(counts);
}

void api_datacenters_overview(struct req *r)
{
    json_t *out = NULL, *disc = NULL, *gpus;
    int st;

    if (!who_may_see_or_reply(r, WHO_DATACENTER, NULL, r->id))
        return;
    st = store_dc_overview(r->store, r->id, gi_now() - server_freshness(r->srv), &out, &disc);
    if (st != GI_OK) {
        reply_status(r, st, "data center");
        return;
    }
    /* Both figures, each saying what it counts; the declared totals stay
     * at the top level of `gpus` as before. */
    gpus = json_object_get(out, "gpus");
    json_object_set_new(gpus, "declared", json_deep_copy(gpus));
    json_object_set_new(gpus, "discovered", disc);
    json_object_set_new(
        gpus, "basis",
        json_pack("{s:s, s:s}", "declared",
                  "gpu_count of the inventory servers in this data center (retired excluded), by "
                  "allocation state",
                  "discovered",
                  "physical GPUs (MIG instances not counted) reported by discovered hosts in this "
                  "data center; a linked host is in its server's data center"));
    reply_json(r, 200, out);
}
