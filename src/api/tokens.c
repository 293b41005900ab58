/* API tokens, managed by admins. A new token's secret is in the create
 * reply only; the database keeps its hash. */
#include "api/api.h"
#include "core/status.h"
#include "http/auth.h"
#include "store/store.h"

void api_tokens_list(struct req *r)
{
    json_t *items = NULL;
    int st = store_token_list(r->store, &items);

    if (st != GI_OK) {
        reply_status(r, st, "tokens");
        return;
    }
    reply_list(r, items, (int64_t)json_array_size(items), 0);
}

void api_tokens_create(struct req *r)
{
    static const char *const allowed[] = {"name", "role", "source", "team", "env", "cluster", NULL};
    json_t *body = NULL;
    const char *name, *role_s, *source, *team, *env, *cluster;
    enum gi_role role;
    char secret[AUTH_TOKEN_LEN], hash[AUTH_HASH_LEN];
    int64_t id;
    int st;

    if (!req_json_body_or_reply(r, &body))
        return;
    if (!json_known_or_reply(r, body, allowed) ||
        !json_str_or_reply(r, body, "name", true, 128, &name) ||
        !json_str_or_reply(r, body, "role", true, 16, &role_s) ||
        !json_str_or_reply(r, body, "source", false, 63, &source) ||
        !json_str_or_reply(r, body, "team", false, 128, &team) ||
        !json_str_or_reply(r, body, "env", false, 64, &env) ||
        !json_str_or_reply(r, body, "cluster", false, 128, &cluster))
        goto cleanup;
    if (gi_role_parse(role_s, &role) != GI_OK) {
        reply_error(r, 400, "validation_failed", "role",
                    "role must be admin, editor, viewer or pusher");
        goto cleanup;
    }
    if ((role == GI_ROLE_PUSHER) != (source != NULL && *source)) {
        reply_error(r, 400, "validation_failed", "source",
                    "source is required for, and only for, a pusher token");
        goto cleanup;
    }
    auth_token_new(secret);
    auth_hash(secret, hash);
    if ((st = store_token_create(r->store, r->who.name, name, role, hash, &id)) != GI_OK) {
        reply_status(r, st, "token");
        goto cleanup;
    }
    if (source) {
        int64_t sid;
        st = store_source_ensure(r->store, source, "push", team, env, cluster, &sid);
        if (st == GI_OK)
            st = store_token_set_source(r->store, id, sid);
        if (st != GI_OK) {
            store_token_revoke(r->store, r->who.name, id);
            reply_status(r, st, "source");
            goto cleanup;
        }
    }
    reply_json(r, 201,
               json_pack("{s:I, s:s, s:s, s:s}", "id", (json_int_t)id, "name", name, "role",
                         gi_role_name(role), "token", secret));
cleanup:
    json_decref(body);
}

void api_tokens_revoke(struct req *r)
{
    int st = store_token_revoke(r->store, r->who.name, r->id);

    if (st == GI_CONFLICT) {
        reply_error(r, 409, "conflict", NULL, "token %lld is already revoked", (long long)r->id);
        return;
    }
    if (st != GI_OK) {
        reply_status(r, st, "token");
        return;
    }
    reply_no_content(r);
}
