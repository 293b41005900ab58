/* Data-center scope checks; see scope.h. */
#include "api/scope.h"
#include "core/status.h"
#include "store/store.h"

static bool in_scope(const struct gi_principal *p, int64_t dc_id)
{
    if (p->n_dcs == 0)
        return true;
    for (int i = 0; i < p->n_dcs; i++)
        if (p->dcs[i] == dc_id)
            return true;
    return false;
}

bool who_may_dc_or_reply(struct req *r, int64_t dc_id)
{
    json_t *dc = NULL;
    const char *name = NULL;

    if (in_scope(&r->who, dc_id))
        return true;
    if (dc_id <= 0) {
        reply_error(r, 403, "forbidden", "datacenter",
                    "this token is confined to data centers; it may not change what is in no "
                    "data center");
        return false;
    }
    if (store_dc_get(r->store, dc_id, &dc) == GI_OK)
        name = json_string_value(json_object_get(dc, "name"));
    reply_error(r, 403, "forbidden", "datacenter",
                "this token may not change what is in data center %s (id %lld)", name ? name : "?",
                (long long)dc_id);
    json_decref(dc);
    return false;
}

bool who_may_asset_or_reply(struct req *r, const char *tag, const char *epc)
{
    int64_t dc = 0;
    int st;

    if (r->who.n_dcs == 0)
        return true;
    st = store_asset_dc(r->store, tag, epc, &dc);
    if (st == GI_NOT_FOUND)
        return true;
    if (st != GI_OK) {
        reply_status(r, st, "asset");
        return false;
    }
    return who_may_dc_or_reply(r, dc);
}

bool who_may_resource_or_reply(struct req *r, int64_t id)
{
    char kind[16];
    int64_t dc = 0;
    int st;

    if (r->who.n_dcs == 0)
        return true;
    st = store_res_kind(r->store, id, kind, sizeof kind, &dc);
    if (st == GI_NOT_FOUND)
        return true;
    if (st != GI_OK) {
        reply_status(r, st, "resource");
        return false;
    }
    return who_may_dc_or_reply(r, dc);
}

bool who_may_asset_record_or_reply(struct req *r, const json_t *rec, bool creating)
{
    const json_t *loc = json_object_get(rec, "location");
    const json_t *src = json_is_object(loc) ? loc : rec;
    const json_t *name = json_object_get(src, "datacenter");
    const json_t *id = json_object_get(rec, "datacenter_id");
    bool named = false;

    if (r->who.n_dcs == 0)
        return true;
    if (name) {
        int64_t dc = 0;
        int st = GI_OK;
        named = true;
        if (json_is_string(name) && json_string_length(name) > 0) {
            st = store_dc_id_by_name(r->store, json_string_value(name), &dc);
            if (st == GI_NOT_FOUND)
                return true;
            if (st != GI_OK) {
                reply_status(r, st, "data center");
                return false;
            }
        } else if (!json_is_null(name) && !json_is_string(name)) {
            return true; /* not a name: refused by the handler */
        }
        if (!who_may_dc_or_reply(r, dc))
            return false;
    }
    if (id && !json_is_null(id)) {
        named = true;
        if (json_is_integer(id) && !who_may_dc_or_reply(r, json_integer_value(id)))
            return false;
    } else if (id) {
        named = true;
        if (!who_may_dc_or_reply(r, 0))
            return false;
    }
    return named || !creating || who_may_dc_or_reply(r, 0);
}

bool who_dc_filter_or_reply(struct req *r, int64_t *dc_id)
{
    if (r->who.n_dcs == 0)
        return true;
    if (*dc_id == 0 && r->who.n_dcs == 1) {
        *dc_id = r->who.dcs[0];
        return true;
    }
    if (*dc_id == 0) {
        reply_error(r, 400, "invalid_parameter", "datacenter",
                    "this token is confined to several data centers; give datacenter to list "
                    "one of them");
        return false;
    }
    if (!in_scope(&r->who, *dc_id)) {
        reply_error(r, 403, "forbidden", "datacenter", "this token may not read data center %lld",
                    (long long)*dc_id);
        return false;
    }
    return true;
}
