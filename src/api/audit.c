/* The audit trail: every write, who made it, and the record before/after. */
#include "api/api.h"
#include "api/scope.h"
#include "core/status.h"
#include "store/store.h"

void api_audit_list(struct req *r)
{
    static const char *const sortable[] = {NULL};
    struct store_audit_filter f = {0};
    struct store_page pg;
    json_t *items = NULL;
    int64_t total = 0;
    int st;

    if (!req_page_or_reply(r, sortable, &pg) ||
        !req_param_str_or_reply(r, "entity", 32, &f.entity) ||
        !req_param_int_or_reply(r, "entity_id", 1, INT64_MAX, &f.entity_id) ||
        !req_param_str_or_reply(r, "actor", 128, &f.actor))
        return;
    who_scope(r, &f.scope);
    if ((st = store_audit_list(r->store, &f, &pg, &items, &total)) != GI_OK) {
        reply_status(r, st, "audit");
        return;
    }
    reply_list(r, items, total, pg.offset);
}
