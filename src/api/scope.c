/* Data-center scope checks; see scope.h. */
#include "api/scope.h"
#include "core/status.h"
#include "core/util.h"
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

void who_scope(const struct req *r, struct store_scope *out)
{
    out->n = r->who.n_dcs;
    for (int i = 0; i < r->who.n_dcs && i < GI_TOKEN_DCS_MAX; i++)
        out->dcs[i] = r->who.dcs[i];
}

bool who_dc_filter_or_reply(struct req *r, int64_t *dc_id, struct store_scope *sc)
{
    if (r->who.n_dcs == 0)
        return true;
    if (*dc_id == 0 && r->who.n_dcs == 1) {
        *dc_id = r->who.dcs[0];
        return true;
    }
    if (*dc_id == 0 && sc) {
        who_scope(r, sc);
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

/* The data center of the thing into *dc: the store's status (GI_NOT_FOUND
 * when there is no such thing). */
static int where(struct req *r, enum who_thing t, const char *key, int64_t id, int64_t *dc)
{
    char kind[16];
    int st = GI_OK;

    *dc = 0;
    switch (t) {
    case WHO_ASSET:
        st = store_asset_dc(r->store, key, NULL, dc);
        break;
    case WHO_GPU:
        st = store_thing_dc(r->store, STORE_THING_GPU, key, 0, dc);
        break;
    case WHO_HOST:
        st = store_thing_dc(r->store, STORE_THING_HOST, NULL, id, dc);
        break;
    case WHO_HOST_NAME: /* a host name, else a host id, as the owner routes read it */
        st = store_thing_dc(r->store, STORE_THING_HOST_NAME, key, 0, dc);
        if (st == GI_NOT_FOUND && key && gi_parse_int64(key, 1, INT64_MAX, &id) == GI_OK)
            st = store_thing_dc(r->store, STORE_THING_HOST, NULL, id, dc);
        break;
    case WHO_TICKET:
        st = store_thing_dc(r->store, STORE_THING_TICKET, NULL, id, dc);
        break;
    case WHO_RESOURCE:
        st = store_res_kind(r->store, id, kind, sizeof kind, dc);
        break;
    case WHO_ROOM_AUDIT:
        st = store_thing_dc(r->store, STORE_THING_ROOM_AUDIT, NULL, id, dc);
        break;
    case WHO_DATACENTER:
        *dc = id;
        break;
    case WHO_SOURCE:
        st = store_thing_dc(r->store, STORE_THING_SOURCE, NULL, id, dc);
        break;
    case WHO_SYNC_CONFLICT:
        st = store_thing_dc(r->store, STORE_THING_SYNC_CONFLICT, NULL, id, dc);
        break;
    }
    return st;
}

int who_sees(struct req *r, enum who_thing t, const char *key, int64_t id)
{
    int64_t dc = 0;
    int st;

    if (r->who.n_dcs == 0)
        return GI_OK;
    st = where(r, t, key, id, &dc);
    if (st == GI_NOT_FOUND)
        return GI_OK;
    if (st != GI_OK)
        return st;
    return dc > 0 && in_scope(&r->who, dc) ? GI_OK : GI_NOT_FOUND;
}

bool who_may_name_or_reply(struct req *r, const char *tag, const char *uuid)
{
    int64_t dc = 0;
    int st;

    if (r->who.n_dcs == 0)
        return true;
    for (int i = 0; i < 2; i++) {
        const char *key = i == 0 ? tag : uuid;
        if (!key || !*key)
            continue;
        st = where(r, i == 0 ? WHO_ASSET : WHO_GPU, key, 0, &dc);
        if (st == GI_OK && (dc <= 0 || !in_scope(&r->who, dc)))
            st = GI_NOT_FOUND;
        if (st != GI_OK) {
            reply_status(r, st, i == 0 ? "asset" : "GPU");
            return false;
        }
    }
    return true;
}

bool who_may_see_or_reply(struct req *r, enum who_thing t, const char *key, int64_t id)
{
    static const char *const words[] = {
        [WHO_ASSET] = "asset",      [WHO_GPU] = "GPU",
        [WHO_HOST] = "host",        [WHO_HOST_NAME] = "host",
        [WHO_TICKET] = "ticket",    [WHO_RESOURCE] = "resource",
        [WHO_ROOM_AUDIT] = "audit", [WHO_DATACENTER] = "data center",
        [WHO_SOURCE] = "source",    [WHO_SYNC_CONFLICT] = "sync conflict"};
    int st = who_sees(r, t, key, id);

    if (st == GI_OK)
        return true;
    /* outside the scope: the reply of a thing that does not exist, so
     * that a confined token learns nothing of other data centers */
    reply_status(r, st, words[t]);
    return false;
}

bool who_dc_name_scope_or_reply(struct req *r, const char **name, char *buf, size_t len,
                                struct store_scope *sc)
{
    json_t *dc = NULL;
    const char *canon;
    int64_t id = 0;
    int st;

    if (r->who.n_dcs == 0)
        return true;
    if (*name && **name) {
        st = store_dc_id_by_name(r->store, *name, &id);
        if (st == GI_NOT_FOUND && gi_parse_int64(*name, 1, INT64_MAX, &id) != GI_OK)
            return true; /* names no data center: the report matches nothing */
        if (st != GI_OK && st != GI_NOT_FOUND) {
            reply_status(r, st, "data center");
            return false;
        }
    }
    if (!who_dc_filter_or_reply(r, &id, sc))
        return false;
    if (id == 0) { /* several data centers, none named: *sc holds them */
        *name = NULL;
        return true;
    }
    if ((st = store_dc_get(r->store, id, &dc)) != GI_OK) {
        reply_status(r, st, "data center");
        return false;
    }
    canon = json_string_value(json_object_get(dc, "name"));
    gi_strlcpy(buf, canon ? canon : "", len);
    *name = buf;
    json_decref(dc);
    return true;
}

bool who_unconfined_or_reply(struct req *r, const char *what)
{
    if (r->who.n_dcs == 0)
        return true;
    reply_error(r, 403, "forbidden", "datacenter",
                "%s spans every data center; a token confined to data centers may not use it",
                what);
    return false;
}
