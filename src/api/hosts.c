/* Discovered hosts and their link to an inventory server: list, read,
 * and an admin's manual link, "not linked", or return to automatic. */
#include "api/api.h"
#include "api/scope.h"
#include "core/status.h"
#include "store/store.h"

#include <string.h>

/* These lists have one fixed order. */
static const char *const unsorted[] = {NULL};

void api_hosts_list(struct req *r)
{
    struct store_host_filter f = {.linked = -1};
    struct store_page pg;
    const char *linked_p = req_param(r, "linked");
    bool linked = false;
    json_t *items = NULL;
    int64_t total = 0;
    int st;

    if (!req_page_or_reply(r, unsorted, &pg) ||
        !req_param_int_or_reply(r, "datacenter", 1, INT64_MAX, &f.datacenter_id) ||
        !req_param_bool_or_reply(r, "linked", &linked) ||
        !req_param_str_or_reply(r, "q", 128, &f.q) ||
        !who_dc_filter_or_reply(r, &f.datacenter_id, &f.scope))
        return;
    if (linked_p && *linked_p)
        f.linked = linked ? 1 : 0;
    if ((st = store_host_list(r->store, &f, &pg, &items, &total)) != GI_OK) {
        reply_status(r, st, "hosts");
        return;
    }
    reply_list(r, items, total, pg.offset);
}

void api_hosts_get(struct req *r)
{
    json_t *out = NULL;
    int st;

    if (!who_may_see_or_reply(r, WHO_HOST, NULL, r->id))
        return;
    st = store_host_get(r->store, r->id, &out);
    if (st != GI_OK)
        reply_status(r, st, "host");
    else
        reply_json(r, 200, out);
}

/* Applies one link change and replies with the host. */
static void link_reply(struct req *r, enum store_link_mode mode, int64_t resource_id)
{
    json_t *out = NULL;
    int st = store_host_link_set(r->store, r->who.name, r->id, mode, resource_id, &out);

    if (st == GI_INVALID)
        reply_error(r, 400, "validation_failed", "resource_id",
                    "resource %lld is not an inventory server", (long long)resource_id);
    else if (st != GI_OK)
        reply_status(r, st, "host");
    else
        reply_json(r, 200, out);
}

void api_hosts_link_put(struct req *r)
{
    static const char *const allowed[] = {"resource_id", NULL};
    json_t *body = NULL;
    int64_t rid = 0;

    if (!req_json_body_or_reply(r, &body))
        return;
    if (json_known_or_reply(r, body, allowed) &&
        json_int_or_reply(r, body, "resource_id", true, 1, INT64_MAX, &rid))
        link_reply(r, STORE_LINK_MANUAL, rid);
    json_decref(body);
}

void api_hosts_link_delete(struct req *r) { link_reply(r, STORE_LINK_NONE, 0); }

void api_hosts_link_auto(struct req *r) { link_reply(r, STORE_LINK_AUTO, 0); }
