/* Inventory resources of every kind: CRUD, listing with filters, and the
 * allocate/release transitions used by provisioning automation. */
#include "api/api.h"
#include "api/scope.h"
#include "core/kinds.h"
#include "core/status.h"
#include "core/util.h"
#include "http/server.h"
#include "store/store.h"

#include <stdio.h>
#include <stdlib.h>
#include <string.h>

int api_resource_check(struct store *st, const json_t *obj, bool from_text,
                       struct gi_resource_in *in, struct gi_verr *err)
{
    int rc = gi_resource_check(obj, from_text, in, err);
    const json_t *host;
    char kind[16];
    int64_t dc;

    if (rc != GI_OK)
        return rc;
    host = json_object_get(in->attrs, "host_id");
    if (strcmp(in->kind, "vm") == 0 && host) {
        rc = store_res_kind(st, json_integer_value(host), kind, sizeof kind, &dc);
        if (rc == GI_NOT_FOUND ||
            (rc == GI_OK && (strcmp(kind, "server") != 0 || dc != in->datacenter_id))) {
            gi_strlcpy(err->field, "host_id", sizeof err->field);
            snprintf(err->message, sizeof err->message,
                     "host_id must name a server in the same data center");
            rc = GI_INVALID;
        }
        if (rc != GI_OK) {
            json_decref(in->attrs);
            in->attrs = NULL;
        }
    }
    return rc;
}

void api_resource_to_store(const struct gi_resource_in *in, struct store_resource *out)
{
    out->datacenter_id = in->datacenter_id;
    out->kind = in->kind;
    out->name = in->name;
    out->state = in->state;
    out->tenant = in->tenant;
    out->project = in->project;
    out->gpu_model = in->gpu_model;
    out->gpu_count = in->gpu_count;
    out->attrs = in->attrs;
    out->metadata = in->metadata;
}

/* Replies for a store status on a resource write; 409s say why. */
static void reply_res_status(struct req *r, int st, const struct gi_resource_in *in)
{
    if (st == GI_CONFLICT && in)
        reply_error(r, 409, "conflict", "name",
                    "a %s named '%s' already exists in data center %lld", in->kind, in->name,
                    (long long)in->datacenter_id);
    else if (st == GI_NOT_FOUND && in)
        reply_error(r, 400, "validation_failed", "datacenter_id", "data center %lld not found",
                    (long long)in->datacenter_id);
    else
        reply_status(r, st, "resource");
}

void api_resources_create(struct req *r)
{
    json_t *body = NULL, *out = NULL;
    struct gi_resource_in in = {0};
    struct gi_verr err = {0};
    struct store_resource sr;
    int st;

    if (!req_json_body_or_reply(r, &body))
        return;
    if ((st = api_resource_check(r->store, body, false, &in, &err)) != GI_OK) {
        if (st == GI_INVALID)
            reply_error(r, 400, "validation_failed", err.field, "%s", err.message);
        else
            reply_status(r, st, "resource");
        goto cleanup;
    }
    if (!who_may_dc_or_reply(r, in.datacenter_id))
        goto cleanup;
    api_resource_to_store(&in, &sr);
    st = store_res_create(r->store, r->who.name, &sr, &out);
    if (st != GI_OK)
        reply_res_status(r, st, &in);
    else
        reply_json(r, 201, out);
cleanup:
    json_decref(in.attrs);
    json_decref(body);
}

/* The columns of a resource CSV: exactly what POST /resources/import reads
 * back (the data center by name, the attributes of every kind present, and
 * metadata as one JSON object), so an export re-imports as it is. Takes
 * ownership of items; returns the rows to render. */
static json_t *res_csv_rows(json_t *items)
{
    static const char *const common[] = {"datacenter", "kind",      "name",      "state", "tenant",
                                         "project",    "gpu_model", "gpu_count", NULL};
    json_t *cols = json_array(), *rows = json_array(), *row;
    size_t i, j;

    for (const char *const *c = common; *c; c++)
        json_array_append_new(cols, json_string(*c));
    /* Attributes in the kinds table's order, each name once, for the kinds
     * the rows hold. */
    for (const struct gi_kind *k = gi_kinds; k->name; k++) {
        bool present = false;
        json_array_foreach(items, i, row) {
            const char *kind = json_string_value(json_object_get(row, "kind"));
            present = present || (kind && strcmp(kind, k->name) == 0);
        }
        for (const struct gi_field *f = k->fields; present && f->name; f++) {
            bool dup = false;
            json_t *col;
            json_array_foreach(cols, j, col)
                dup = dup || strcmp(json_string_value(col), f->name) == 0;
            if (!dup)
                json_array_append_new(cols, json_string(f->name));
        }
    }
    json_array_append_new(cols, json_string("metadata"));
    json_array_foreach(items, i, row) {
        json_t *out = json_object(), *col;
        json_array_foreach(cols, j, col) {
            const char *key = json_string_value(col);
            json_t *v = json_object_get(row, key);
            json_object_set(out, key, v ? v : json_null());
        }
        json_array_append_new(rows, out);
    }
    json_decref(cols);
    json_decref(items);
    return rows;
}

void api_resources_list(struct req *r)
{
    static const char *const sortable[] = {"id",         "name",       "state",      "kind",
                                           "tenant",     "project",    "gpu_model",  "gpu_count",
                                           "created_at", "updated_at", "datacenter", NULL};
    struct store_res_filter f = {0};
    struct store_page pg;
    json_t *items = NULL;
    int64_t total = 0;
    int st;

    if (!req_page_or_reply(r, sortable, &pg) ||
        !req_param_int_or_reply(r, "datacenter", 1, INT64_MAX, &f.datacenter_id) ||
        !req_param_str_or_reply(r, "kind", 16, &f.kind) ||
        !req_param_str_or_reply(r, "state", 16, &f.state) ||
        !req_param_str_or_reply(r, "tenant", 128, &f.tenant) ||
        !req_param_str_or_reply(r, "project", 128, &f.project) ||
        !req_param_str_or_reply(r, "q", 128, &f.q) ||
        !who_dc_filter_or_reply(r, &f.datacenter_id, &f.scope))
        return;
    if (f.kind && !gi_kind_find(f.kind)) {
        reply_error(r, 400, "invalid_parameter", "kind",
                    "kind must be one of server, vm, storage, switch, infiniband");
        return;
    }
    if (f.state && !gi_state_valid(f.state)) {
        reply_error(r, 400, "invalid_parameter", "state", "state must be one of " GI_STATES);
        return;
    }
    if (!req_wants_csv(r)) {
        /* The hot path: rows arrive as JSON text and are passed through. */
        char *text = NULL;
        size_t len, rows;
        if ((st = store_res_list_text(r->store, &f, &pg, &text, &len, &rows, &total)) != GI_OK) {
            reply_status(r, st, "resources");
            return;
        }
        reply_list_text(r, text, len, rows, total, pg.offset);
        free(text);
        return;
    }
    if ((st = store_res_list(r->store, &f, &pg, &items, &total)) != GI_OK) {
        reply_status(r, st, "resources");
        return;
    }
    reply_list(r, res_csv_rows(items), total, pg.offset);
}

void api_resources_get(struct req *r)
{
    json_t *out = NULL, *hist = NULL;
    int st;

    if (!who_may_see_or_reply(r, WHO_RESOURCE, NULL, r->id))
        return;
    st = store_res_get(r->store, r->id, &out);

    if (st == GI_OK)
        st = store_res_allocations(r->store, r->id, &hist);
    if (st != GI_OK) {
        json_decref(out);
        reply_status(r, st, "resource");
        return;
    }
    json_object_set_new(out, "allocations", hist);
    if (strcmp(json_string_value(json_object_get(out, "kind")), "server") == 0) {
        json_t *disc = NULL;
        st = store_res_discovered(r->store, r->id, gi_now() - server_freshness(r->srv), &disc);
        if (st != GI_OK) {
            json_decref(out);
            reply_status(r, st, "resource");
            return;
        }
        json_object_set_new(out, "discovered", disc);
    }
    reply_json(r, 200, out);
}

/* True for the states in which a resource is held by a tenant. */
static bool held(const char *state)
{
    return state && (strcmp(state, "in_use") == 0 || strcmp(state, "reserved") == 0);
}

/* True while resource r->id is still at `version`: a conflict on update was
 * then its kind and name being taken, not a concurrent change. */
static bool at_version(struct req *r, int64_t version)
{
    json_t *now = NULL;
    bool same = store_res_get(r->store, r->id, &now) == GI_OK &&
                json_integer_value(json_object_get(now, "version")) == version;

    json_decref(now);
    return same;
}

void api_resources_update(struct req *r)
{
    json_t *body = NULL, *cur = NULL;
    json_t *out = NULL;
    struct gi_resource_in in = {0};
    struct gi_verr err = {0};
    struct store_resource sr;
    int64_t version;
    const char *key;
    json_t *v;
    int st;

    if (!req_json_body_or_reply(r, &body))
        return;
    if (!who_may_resource_or_reply(r, r->id))
        goto cleanup;
    if ((st = store_res_get(r->store, r->id, &cur)) != GI_OK) {
        reply_status(r, st, "resource");
        goto cleanup;
    }
    /* A client may send the version it read to refuse lost updates. */
    version = json_integer_value(json_object_get(cur, "version"));
    if (!json_int_or_reply(r, body, "version", false, 1, INT64_MAX, &version))
        goto cleanup;
    if (json_object_get(body, "kind") &&
        !json_equal(json_object_get(body, "kind"), json_object_get(cur, "kind"))) {
        reply_error(r, 400, "validation_failed", "kind", "the kind of a resource cannot change");
        goto cleanup;
    }
    json_object_foreach(body, key, v) {
        if (json_is_null(v))
            json_object_del(cur, key);
        else
            json_object_set(cur, key, v);
    }
    /* Leaving a held state ends the tenancy unless the body sets one. */
    if (!held(json_string_value(json_object_get(cur, "state")))) {
        if (!json_object_get(body, "tenant"))
            json_object_del(cur, "tenant");
        if (!json_object_get(body, "project"))
            json_object_del(cur, "project");
    }
    if ((st = api_resource_check(r->store, cur, false, &in, &err)) != GI_OK) {
        if (st == GI_INVALID)
            reply_error(r, 400, "validation_failed", err.field, "%s", err.message);
        else
            reply_status(r, st, "resource");
        goto cleanup;
    }
    if (!who_may_dc_or_reply(r, in.datacenter_id))
        goto cleanup;
    api_resource_to_store(&in, &sr);
    st = store_res_update(r->store, r->who.name, r->id, version, &sr, &out);
    if (st == GI_CONFLICT && !at_version(r, version))
        reply_error(r, 409, "conflict", "version",
                    "the resource changed since version %lld was read; fetch it and retry",
                    (long long)version);
    else if (st != GI_OK)
        reply_res_status(r, st, &in);
    else
        reply_json(r, 200, out);
cleanup:
    json_decref(in.attrs);
    json_decref(cur);
    json_decref(body);
}

/* DELETE /resources/{id}[?force=true]: a resource a tenant holds is only
 * deleted when forced; the refusal names the tenant (and project). */
void api_resources_delete(struct req *r)
{
    bool force = false;
    json_t *held = NULL;
    int st;

    if (!req_param_bool_or_reply(r, "force", &force) || !who_may_resource_or_reply(r, r->id))
        return;
    st = store_res_delete(r->store, r->who.name, r->id, force, &held);
    if (st == GI_CONFLICT && held) {
        const char *tenant = json_string_value(json_object_get(held, "tenant"));
        const char *project = json_string_value(json_object_get(held, "project"));
        const char *state = json_string_value(json_object_get(held, "state"));
        char msg[512];
        snprintf(msg, sizeof msg,
                 "resource %lld is %s by tenant '%s'%s%s%s; release it first or pass ?force=true",
                 (long long)r->id,
                 strcmp(state ? state : "", "reserved") == 0 ? "reserved" : "in use",
                 tenant ? tenant : "", project ? " (project '" : "", project ? project : "",
                 project ? "')" : "");
        reply_json(r, 409,
                   json_pack("{s:{s:s, s:s, s:s, s:s?, s:s?}}", "error", "code", "allocated",
                             "message", msg, "field", "state", "tenant", tenant, "project",
                             project));
    } else if (st != GI_OK) {
        reply_status(r, st, "resource");
    } else {
        reply_no_content(r);
    }
    json_decref(held);
}

void api_resources_allocate(struct req *r)
{
    static const char *const allowed[] = {"tenant", "project", NULL};
    json_t *body = NULL, *out = NULL;
    const char *tenant, *project;
    int st;

    if (!req_json_body_or_reply(r, &body))
        return;
    if (!json_known_or_reply(r, body, allowed) ||
        !json_str_or_reply(r, body, "tenant", true, 128, &tenant) ||
        !json_str_or_reply(r, body, "project", false, 128, &project) ||
        !who_may_resource_or_reply(r, r->id))
        goto cleanup;
    st = store_res_allocate(r->store, r->who.name, r->id, tenant, project, &out);
    if (st == GI_CONFLICT) {
        json_t *cur = NULL;
        const char *state = "unknown";
        if (store_res_get(r->store, r->id, &cur) == GI_OK)
            state = json_string_value(json_object_get(cur, "state"));
        reply_error(r, 409, "not_available", "state", "resource %lld is %s, not available",
                    (long long)r->id, state);
        json_decref(cur);
    } else if (st != GI_OK) {
        reply_status(r, st, "resource");
    } else {
        reply_json(r, 200, out);
    }
cleanup:
    json_decref(body);
}

void api_resources_release(struct req *r)
{
    json_t *out = NULL;
    int st;

    if (!who_may_resource_or_reply(r, r->id))
        return;
    st = store_res_release(r->store, r->who.name, r->id, &out);
    if (st == GI_CONFLICT)
        reply_error(r, 409, "not_allocated", "state", "resource %lld is not in use or reserved",
                    (long long)r->id);
    else if (st != GI_OK)
        reply_status(r, st, "resource");
    else
        reply_json(r, 200, out);
}
