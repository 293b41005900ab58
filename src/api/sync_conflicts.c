/* Sync with asset managers seen from the API: the conflicts a push found
 * (a field NetBox or Snipe-IT changed since gpuinv last synced it, which
 * the push did not overwrite), their resolution, and the push log. */
#include "api/api.h"
#include "api/scope.h"
#include "core/status.h"
#include "store/store.h"

#include <string.h>

/* state=open (default) or all into *open_only. */
static bool state_or_reply(struct req *r, bool *open_only)
{
    const char *state = NULL;

    if (!req_param_str_or_reply(r, "state", 16, &state))
        return false;
    if (state && strcmp(state, "open") != 0 && strcmp(state, "all") != 0) {
        reply_error(r, 400, "validation_failed", "state", "state must be open or all");
        return false;
    }
    *open_only = !state || strcmp(state, "open") == 0;
    return true;
}

static void conflicts_reply(struct req *r, const char *tag)
{
    static const char *const sortable[] = {NULL};
    struct store_page pg;
    json_t *items = NULL;
    int64_t total = 0;
    bool open_only;
    int st;

    struct store_scope sc;

    if (!req_page_or_reply(r, sortable, &pg) || !state_or_reply(r, &open_only) ||
        (tag && !who_may_see_or_reply(r, WHO_ASSET, tag, 0)))
        return;
    who_scope(r, &sc);
    if ((st = store_sync_conflicts(r->store, tag, open_only, &sc, &pg, &items, &total)) != GI_OK) {
        reply_status(r, st, tag ? "asset" : "sync conflicts");
        return;
    }
    reply_list(r, items, total, pg.offset);
}

void api_assets_conflicts(struct req *r) { conflicts_reply(r, r->key); }

void api_sync_conflicts_list(struct req *r)
{
    const char *tag = NULL;

    if (!req_param_str_or_reply(r, "asset", 128, &tag))
        return;
    conflicts_reply(r, tag);
}

void api_sync_conflicts_resolve(struct req *r)
{
    static const char *const fields[] = {"keep", NULL};
    json_t *body = NULL, *out = NULL;
    const char *keep = NULL;
    int st;

    if (!who_may_see_or_reply(r, WHO_SYNC_CONFLICT, NULL, r->id) ||
        !req_json_body_or_reply(r, &body))
        return;
    if (!json_known_or_reply(r, body, fields) ||
        !json_str_or_reply(r, body, "keep", true, 16, &keep))
        goto cleanup;
    if (strcmp(keep, "ours") != 0 && strcmp(keep, "theirs") != 0) {
        reply_error(r, 400, "validation_failed", "keep", "keep must be ours or theirs");
        goto cleanup;
    }
    st = store_sync_conflict_resolve(r->store, r->who.name, r->id, keep, &out);
    if (st == GI_CONFLICT)
        reply_error(r, 409, "conflict", "id", "this conflict is already resolved");
    else if (st != GI_OK)
        reply_status(r, st, "sync conflict");
    else
        reply_json(r, 200, out);
cleanup:
    json_decref(body);
}

void api_sync_pushes_list(struct req *r)
{
    static const char *const sortable[] = {NULL};
    struct store_page pg;
    const char *tag = NULL;
    json_t *items = NULL;
    int64_t total = 0;
    struct store_scope sc;
    int st;

    if (!req_page_or_reply(r, sortable, &pg) || !req_param_str_or_reply(r, "asset", 128, &tag) ||
        (tag && !who_may_see_or_reply(r, WHO_ASSET, tag, 0)))
        return;
    who_scope(r, &sc);
    if ((st = store_sync_pushes(r->store, tag, &sc, &pg, &items, &total)) != GI_OK) {
        reply_status(r, st, tag ? "asset" : "sync pushes");
        return;
    }
    reply_list(r, items, total, pg.offset);
}
