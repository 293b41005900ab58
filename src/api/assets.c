/* Hardware assets: create, read, change and list them (JSON or the CSV
 * export), move them between lifecycle stages, and read their audit
 * trail (one asset's timeline, or every event of a time range for a
 * compliance export). The CSV import is in asset_import.c. */
#include "api/api.h"
#include "api/scope.h"
#include "core/status.h"
#include "core/util.h"
#include "store/store.h"

#include <stdio.h>
#include <stdlib.h>
#include <string.h>

/* The members an asset record may have in a POST or PATCH body. */
static const char *const asset_members[] = {"tag",           "kind",
                                            "serial",        "epc",
                                            "vendor",        "model",
                                            "parent",        "parent_tag",
                                            "parent_serial", "location",
                                            "datacenter",    "datacenter_id",
                                            "room",          "rack",
                                            "rack_u",        "storage",
                                            "stage",         "purchase_date",
                                            "purchase_cost", "currency",
                                            "supplier",      "order_number",
                                            "warranty_end",  "warranty_months",
                                            "lease_end",     "depreciation_years",
                                            "salvage",       "gpu_uuid",
                                            "host_id",       "source_key",
                                            "custom",        NULL};

/* What a refused stage value is told. */
static const char stage_names[] = "stage must be one of ordered, received, active, spare, "
                                  "diagnostic_repair, refurbishment_candidate, decommissioned";

/* Replies for a failed asset write: 400 naming the field, 409 for a tag
 * or EPC taken, else by status. */
static void reply_asset_err(struct req *r, int st, const struct store_asset_err *err)
{
    if (st == GI_INVALID && err->field[0])
        reply_error(r, 400, "validation_failed", err->field, "%s %s", err->field, err->message);
    else if (st == GI_CONFLICT && err->field[0])
        reply_error(r, 409, "conflict", err->field, "%s: %s", err->field, err->message);
    else
        reply_status(r, st, "asset");
}

void api_assets_create(struct req *r)
{
    struct store_asset_err err = {0};
    json_t *body = NULL, *out = NULL;
    int st;

    if (!req_json_body_or_reply(r, &body))
        return;
    if (!json_known_or_reply(r, body, asset_members) ||
        !who_may_asset_record_or_reply(r, body, true))
        goto cleanup;
    st = store_asset_create(r->store, r->who.name, body, &out, &err);
    if (st != GI_OK)
        reply_asset_err(r, st, &err);
    else
        reply_json(r, 201, out);
cleanup:
    json_decref(body);
}

/* from/to of the energy sum and the event export: RFC 3339 or unix
 * seconds; from defaults to 0 (all), to to the distant future. */
static bool range_or_reply(struct req *r, int64_t *from, int64_t *to)
{
    const char *f = req_param(r, "from"), *t = req_param(r, "to");

    *from = 0;
    *to = INT64_MAX / 2;
    if (f && *f && gi_time_parse(f, from) != GI_OK) {
        reply_error(r, 400, "invalid_parameter", "from", "from must be an RFC 3339 time");
        return false;
    }
    if (t && *t && gi_time_parse(t, to) != GI_OK) {
        reply_error(r, 400, "invalid_parameter", "to", "to must be an RFC 3339 time");
        return false;
    }
    if (*to <= *from) {
        reply_error(r, 400, "invalid_parameter", "to", "to must be after from");
        return false;
    }
    return true;
}

void api_assets_get(struct req *r)
{
    json_t *out = NULL;
    int64_t from, to;
    int st;

    if (!range_or_reply(r, &from, &to) || !who_may_see_or_reply(r, WHO_ASSET, r->key, 0))
        return;
    st = store_asset_get(r->store, r->key, from, to, &out);
    if (st == GI_OK) {
        /* the health score; absent when it cannot be read */
        json_t *health = NULL;
        int64_t id = json_integer_value(json_object_get(out, "id"));
        if (store_asset_health(r->store, id, gi_now(), &health) == GI_OK)
            json_object_set_new(out, "health", health);
    }
    if (st != GI_OK)
        reply_status(r, st, "asset");
    else
        reply_json(r, 200, out);
}

void api_assets_update(struct req *r)
{
    struct store_asset_err err = {0};
    json_t *body = NULL, *out = NULL;
    int st;

    if (!req_json_body_or_reply(r, &body))
        return;
    if (!json_known_or_reply(r, body, asset_members))
        goto cleanup;
    if (json_object_get(body, "stage")) {
        reply_error(r, 400, "validation_failed", "stage",
                    "the stage changes through POST /api/v1/assets/{tag}/stage");
        goto cleanup;
    }
    if (!who_may_asset_or_reply(r, r->key, NULL) || !who_may_asset_record_or_reply(r, body, false))
        goto cleanup;
    st = store_asset_update(r->store, r->who.name, r->key, body, &out, &err);
    if (st != GI_OK)
        reply_asset_err(r, st, &err);
    else
        reply_json(r, 200, out);
cleanup:
    json_decref(body);
}

/* The allowed next stages of `from` as a JSON array. */
static json_t *allowed_json(const char *from)
{
    json_t *a = json_array();
    for (const char *const *s = store_asset_stage_next(from); *s; s++)
        json_array_append_new(a, json_string(*s));
    return a;
}

void api_assets_stage(struct req *r)
{
    static const char *const members[] = {"stage", "reason", "override", NULL};
    json_t *body = NULL, *out = NULL, *ov;
    const char *to = NULL, *reason = NULL;
    char from[32] = "", why[192] = "";
    bool override = false;
    int st;

    if (!req_json_body_or_reply(r, &body))
        return;
    if (!json_known_or_reply(r, body, members) ||
        !json_str_or_reply(r, body, "stage", true, 32, &to) ||
        !json_str_or_reply(r, body, "reason", false, 1024, &reason))
        goto cleanup;
    if ((ov = json_object_get(body, "override")) != NULL && !json_is_boolean(ov)) {
        reply_error(r, 400, "validation_failed", "override", "override must be true or false");
        goto cleanup;
    }
    override = json_is_true(ov);
    if (!store_asset_stage_valid(to)) {
        reply_error(r, 400, "validation_failed", "stage", "%s", stage_names);
        goto cleanup;
    }
    if (override && r->who.role != GI_ROLE_ADMIN) {
        reply_error(r, 403, "forbidden", "override", "only an admin may override the lifecycle");
        goto cleanup;
    }
    if (!who_may_asset_or_reply(r, r->key, NULL))
        goto cleanup;
    st = store_asset_set_stage(r->store, r->who.name, r->key, to, reason, override, &out, from,
                               sizeof from, why, sizeof why);
    if (st == GI_CONFLICT) {
        reply_json(r, 409,
                   json_pack("{s:{s:s, s:s, s:s}, s:s, s:o}", "error", "code", "conflict",
                             "message", why, "field", "stage", "stage", from, "allowed",
                             allowed_json(from)));
    } else if (st == GI_INVALID) {
        reply_error(r, 400, "validation_failed", "reason", "%s", why);
    } else if (st != GI_OK) {
        reply_status(r, st, "asset");
    } else {
        reply_json(r, 200, out);
    }
cleanup:
    json_decref(body);
}

/* A data center given by name or id; 0 when the parameter is absent. */
bool api_datacenter_param_or_reply(struct req *r, int64_t *id)
{
    const char *v = req_param(r, "datacenter");
    int st;

    *id = 0;
    if (!v || !*v)
        return true;
    if (gi_parse_int64(v, 1, INT64_MAX, id) == GI_OK)
        return true;
    st = store_dc_id_by_name(r->store, v, id);
    if (st == GI_NOT_FOUND) {
        /* No data center of that name: nothing matches. */
        *id = -1;
        return true;
    }
    if (st != GI_OK) {
        reply_status(r, st, "data center");
        return false;
    }
    return true;
}

/* A date parameter (YYYY-MM-DD) or NULL when absent. */
static bool date_param_or_reply(struct req *r, const char *name, const char **out)
{
    if (!req_param_str_or_reply(r, name, 10, out))
        return false;
    if (*out && !store_asset_date_valid(*out)) {
        reply_error(r, 400, "invalid_parameter", name, "%s must be a date YYYY-MM-DD", name);
        return false;
    }
    return true;
}

/* The list's filters (kind, stage when with_stage, model, q, parent, the
 * warranty and lease dates, datacenter) into *f. */
static bool asset_filter_or_reply(struct req *r, bool with_stage, struct store_asset_filter *f)
{
    if (!req_param_str_or_reply(r, "kind", 16, &f->kind) ||
        (with_stage && !req_param_str_or_reply(r, "stage", 32, &f->stage)) ||
        !req_param_str_or_reply(r, "model", 128, &f->model) ||
        !req_param_str_or_reply(r, "q", 128, &f->q) ||
        !req_param_str_or_reply(r, "parent", 64, &f->parent) ||
        !date_param_or_reply(r, "warranty_before", &f->warranty_before) ||
        !date_param_or_reply(r, "warranty_after", &f->warranty_after) ||
        !date_param_or_reply(r, "ends_after", &f->ends_after) ||
        !date_param_or_reply(r, "ends_before", &f->ends_before) ||
        !api_datacenter_param_or_reply(r, &f->datacenter_id) ||
        !who_dc_filter_or_reply(r, &f->datacenter_id, &f->scope))
        return false;
    if (f->kind && !store_asset_kind_valid(f->kind)) {
        reply_error(r, 400, "invalid_parameter", "kind",
                    "kind must be one of server, gpu, psu, ssd, nic, switch, other");
        return false;
    }
    if (f->stage && !store_asset_stage_valid(f->stage)) {
        reply_error(r, 400, "invalid_parameter", "stage", "%s", stage_names);
        return false;
    }
    return true;
}

void api_assets_list(struct req *r)
{
    static const char *const sortable[] = {
        "tag",        "kind",       "stage",        "model",
        "serial",     "vendor",     "warranty_end", "purchase_date",
        "datacenter", "created_at", "updated_at",   "stage_since",
        "id",         NULL};
    struct store_asset_filter f = {0};
    struct store_page pg;
    json_t *items = NULL;
    int64_t total = 0;
    int st;

    if (!req_page_or_reply(r, sortable, &pg) || !asset_filter_or_reply(r, true, &f))
        return;
    if (!req_wants_csv(r)) {
        /* The hot path: the stored documents, passed through as text. */
        char *text = NULL;
        size_t len, rows;
        if ((st = store_asset_list_text(r->store, &f, &pg, &text, &len, &rows, &total)) != GI_OK) {
            reply_status(r, st, "assets");
            return;
        }
        reply_list_text(r, text, len, rows, total, pg.offset);
        free(text);
        return;
    }
    if ((st = store_asset_list(r->store, &f, &pg, &items, &total)) != GI_OK) {
        reply_status(r, st, "assets");
        return;
    }
    reply_list(r, api_asset_csv_rows(items), total, pg.offset);
}

void api_asset_stage_counts(struct req *r)
{
    struct store_asset_filter f = {0};
    json_t *counts = NULL, *v;
    const char *k;
    json_int_t total = 0;
    int st;

    if (!asset_filter_or_reply(r, false, &f))
        return;
    if ((st = store_asset_stage_counts(r->store, &f, &counts)) != GI_OK) {
        reply_status(r, st, "assets");
        return;
    }
    json_object_foreach(counts, k, v)
        total += json_integer_value(v);
    reply_json(r, 200, json_pack("{s:o, s:I}", "stages", counts, "total", total));
}

/* Events for CSV: detail as its JSON text. Takes ownership of items. */
static json_t *event_rows(json_t *items)
{
    json_t *e;
    size_t i;

    if (!items)
        return NULL;
    json_array_foreach(items, i, e) {
        char *d = json_dumps(json_object_get(e, "detail"), JSON_COMPACT | JSON_SORT_KEYS);
        json_object_set_new(e, "detail", json_string(d ? d : "{}"));
        free(d);
    }
    return items;
}

void api_assets_events(struct req *r)
{
    static const char *const sortable[] = {"seq", NULL};
    struct store_page pg;
    json_t *items = NULL;
    int64_t total = 0, id = 0;
    int st;

    if (!req_page_or_reply(r, sortable, &pg) || !who_may_see_or_reply(r, WHO_ASSET, r->key, 0))
        return;
    st = store_asset_id(r->store, r->key, &id);
    if (st == GI_OK)
        st = store_asset_events(r->store, id, &pg, &items, &total);
    if (st != GI_OK) {
        reply_status(r, st, "asset");
        return;
    }
    reply_list(r, req_wants_csv(r) ? event_rows(items) : items, total, pg.offset);
}

void api_asset_events_export(struct req *r)
{
    static const char *const sortable[] = {"seq", NULL};
    struct store_page pg;
    json_t *items = NULL;
    int64_t total = 0, from, to;
    int st;

    struct store_event_filter f = {0};

    if (!req_page_or_reply(r, sortable, &pg) || !range_or_reply(r, &from, &to) ||
        !req_param_str_or_reply(r, "kind", 32, &f.kind) ||
        !req_param_str_or_reply(r, "asset_kind", 16, &f.asset_kind) ||
        !api_datacenter_param_or_reply(r, &f.datacenter_id) ||
        !who_dc_filter_or_reply(r, &f.datacenter_id, &f.scope))
        return;
    if (f.asset_kind && !store_asset_kind_valid(f.asset_kind)) {
        reply_error(r, 400, "invalid_parameter", "asset_kind",
                    "asset_kind must be one of server, gpu, psu, ssd, nic, switch, other");
        return;
    }
    f.from = from;
    f.to = to;
    st = store_asset_events_find(r->store, &f, &pg, &items, &total);
    if (st != GI_OK) {
        reply_status(r, st, "asset events");
        return;
    }
    reply_list(r, req_wants_csv(r) ? event_rows(items) : items, total, pg.offset);
}
