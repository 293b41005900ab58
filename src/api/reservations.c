/* Spare reservations seen from the API: the list (by data center, model,
 * state or asset), a person's release of one and the change of its
 * expiry. A reservation is made by a rule's `reserve_spare` action and
 * ends by itself in the ways store/reservations.c lists. All are confined
 * to the token's data centers as the asset routes are. */
#include "api/api.h"
#include "api/scope.h"
#include "core/status.h"
#include "core/util.h"
#include "store/store.h"

#include <string.h>

static const char *const states[] = {"reserved",   "released", "consumed", "cancelled",
                                     "not_needed", "expired",  NULL};

void api_reservations_list(struct req *r)
{
    static const char *const sortable[] = {NULL};
    struct store_resv_filter f = {0};
    struct store_page pg;
    json_t *items = NULL;
    int64_t total = 0;
    bool known = false;
    int st;

    if (!req_page_or_reply(r, sortable, &pg) ||
        !req_param_str_or_reply(r, "model", 128, &f.model) ||
        !req_param_str_or_reply(r, "state", 16, &f.state) ||
        !req_param_str_or_reply(r, "asset", 128, &f.asset) ||
        !api_datacenter_param_or_reply(r, &f.datacenter_id))
        return;
    for (size_t i = 0; f.state && states[i]; i++)
        known = known || strcmp(states[i], f.state) == 0;
    if (f.state && !known) {
        reply_error(r, 400, "invalid_parameter", "state",
                    "state must be reserved, released, consumed, cancelled, not_needed or "
                    "expired");
        return;
    }
    /* With an asset, the asset's own scope decides (as its page does);
     * otherwise the list is narrowed to the token's data centers. */
    if (f.asset ? !who_may_see_or_reply(r, WHO_ASSET, f.asset, 0)
                : !who_dc_filter_or_reply(r, &f.datacenter_id, &f.scope))
        return;
    st = store_reservations_list(r->store, &f, &pg, &items, &total);
    if (st != GI_OK) {
        reply_status(r, st, f.asset ? "asset" : "reservations");
        return;
    }
    reply_list(r, items, total, pg.offset);
}

/* The reservation r->id into *cur, when the token may change it: both its
 * assets within the token's data centers (one outside reads as a missing
 * asset, 404, as on the asset routes). Replies and returns false
 * otherwise; caller owns *cur. */
static bool resv_mine_or_reply(struct req *r, json_t **cur)
{
    int st = store_reservation_get(r->store, r->id, cur);

    if (st != GI_OK) {
        reply_status(r, st, "reservation");
        return false;
    }
    return r->who.n_dcs == 0 ||
           (who_may_see_or_reply(r, WHO_ASSET, json_string_value(json_object_get(*cur, "spare")),
                                 0) &&
            who_may_see_or_reply(r, WHO_ASSET,
                                 json_string_value(json_object_get(*cur, "for_asset")), 0));
}

/* The reply to a change of a reservation that is no longer open. */
static void reply_ended(struct req *r)
{
    reply_error(r, 409, "conflict", "state",
                "this reservation is no longer reserved (it has ended: see its state)");
}

void api_reservations_release(struct req *r)
{
    static const char *const fields[] = {"reason", NULL};
    json_t *body = NULL, *cur = NULL, *out = NULL;
    const char *reason = NULL;
    int st;

    if (!req_json_body_or_reply(r, &body))
        return;
    if (!json_known_or_reply(r, body, fields) ||
        !json_str_or_reply(r, body, "reason", false, 1024, &reason) || !resv_mine_or_reply(r, &cur))
        goto cleanup;
    st = store_reservation_release(r->store, r->who.name, r->id, reason, &out);
    if (st == GI_CONFLICT)
        reply_ended(r);
    else if (st != GI_OK)
        reply_status(r, st, "reservation");
    else
        reply_json(r, 200, out);
cleanup:
    json_decref(body);
    json_decref(cur);
}

/* PATCH /reservations/{id} {"expires_at": RFC 3339 time to come | null}. */
void api_reservations_update(struct req *r)
{
    static const char *const fields[] = {"expires_at", NULL};
    json_t *body = NULL, *cur = NULL, *out = NULL, *v;
    int64_t at = 0;
    int st;

    if (!req_json_body_or_reply(r, &body))
        return;
    if (!json_known_or_reply(r, body, fields))
        goto cleanup;
    if (!(v = json_object_get(body, "expires_at"))) {
        reply_error(r, 400, "validation_failed", "expires_at", "expires_at is required");
        goto cleanup;
    }
    if (!json_is_null(v) &&
        (!json_is_string(v) || gi_time_parse(json_string_value(v), &at) != GI_OK || at <= 0)) {
        reply_error(r, 400, "validation_failed", "expires_at",
                    "expires_at must be an RFC 3339 time or null");
        goto cleanup;
    }
    if (!json_is_null(v) && at <= gi_now()) {
        reply_error(r, 400, "validation_failed", "expires_at", "expires_at must be in the future");
        goto cleanup;
    }
    if (!resv_mine_or_reply(r, &cur))
        goto cleanup;
    st = store_reservation_set_expiry(r->store, r->who.name, r->id, at, &out);
    if (st == GI_CONFLICT)
        reply_ended(r);
    else if (st != GI_OK)
        reply_status(r, st, "reservation");
    else
        reply_json(r, 200, out);
cleanup:
    json_decref(body);
    json_decref(cur);
}
