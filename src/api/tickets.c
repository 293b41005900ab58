/* Tickets: read by viewers, opened by hand and closed by editors. Rules
 * open tickets through the store (ticket_open); the ticket system's key
 * and link arrive with the reply to the ticket.opened delivery. */
#include "api/api.h"
#include "api/scope.h"
#include "core/status.h"
#include "store/store.h"

#include <string.h>

static const char *const ticket_fields[] = {"asset_tag", "gpu_uuid", "title", "body", NULL};

void api_tickets_list(struct req *r)
{
    static const char *const sortable[] = {NULL};
    struct store_ticket_filter f = {0};
    struct store_page pg;
    json_t *items = NULL;
    int64_t total = 0;
    int st;

    if (!req_page_or_reply(r, sortable, &pg) || !req_param_str_or_reply(r, "state", 16, &f.state) ||
        !req_param_str_or_reply(r, "asset", 128, &f.asset_tag) ||
        !req_param_int_or_reply(r, "datacenter", 1, INT64_MAX, &f.datacenter_id) ||
        !who_dc_filter_or_reply(r, &f.datacenter_id, &f.scope))
        return;
    if (f.state && strcmp(f.state, "open") != 0 && strcmp(f.state, "closed") != 0) {
        reply_error(r, 400, "validation_failed", "state", "state must be open or closed");
        return;
    }
    if ((st = store_ticket_list(r->store, &f, &pg, &items, &total)) != GI_OK) {
        reply_status(r, st, "tickets");
        return;
    }
    reply_list(r, items, total, pg.offset);
}

void api_tickets_get(struct req *r)
{
    json_t *out = NULL;
    int st;

    if (!who_may_see_or_reply(r, WHO_TICKET, NULL, r->id))
        return;
    st = store_ticket_get(r->store, r->id, &out);
    if (st != GI_OK)
        reply_status(r, st, "ticket");
    else
        reply_json(r, 200, out);
}

void api_tickets_create(struct req *r)
{
    const char *tag = NULL, *uuid = NULL, *title = NULL, *text = NULL;
    json_t *body = NULL, *out = NULL;
    int st;

    if (!req_json_body_or_reply(r, &body))
        return;
    if (!json_known_or_reply(r, body, ticket_fields) ||
        !json_str_or_reply(r, body, "asset_tag", false, 128, &tag) ||
        !json_str_or_reply(r, body, "gpu_uuid", false, 128, &uuid) ||
        !json_str_or_reply(r, body, "title", true, 255, &title) ||
        !json_str_or_reply(r, body, "body", false, 16384, &text))
        goto cleanup;
    if ((!tag || !*tag) && (!uuid || !*uuid)) {
        reply_error(r, 400, "validation_failed", "asset_tag",
                    "a ticket names an asset_tag or a gpu_uuid");
        goto cleanup;
    }
    if (!*title) {
        reply_error(r, 400, "validation_failed", "title", "title must not be empty");
        goto cleanup;
    }
    if (!who_may_name_or_reply(r, tag, uuid))
        goto cleanup;
    st = store_ticket_create(r->store, r->who.name, tag, uuid, title, text, &out);
    if (st != GI_OK)
        reply_status(r, st, "ticket");
    else
        reply_json(r, 201, out);
cleanup:
    json_decref(body);
}

void api_tickets_close(struct req *r)
{
    json_t *out = NULL;
    int st;

    if (!who_may_see_or_reply(r, WHO_TICKET, NULL, r->id))
        return;
    st = store_ticket_close(r->store, r->who.name, r->id, &out);
    if (st == GI_CONFLICT)
        reply_error(r, 409, "conflict", NULL, "the ticket is already closed");
    else if (st != GI_OK)
        reply_status(r, st, "ticket");
    else
        reply_json(r, 200, out);
}
