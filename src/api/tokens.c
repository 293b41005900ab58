/* API tokens, managed by admins. A new token's secret is in the create
 * reply only; the database keeps its hash. A pusher token may be confined
 * to host-name patterns (`hosts`) and to one cluster (`limit_cluster`).
 * Any token but an admin's may be confined to data centers
 * (`datacenters`, ids or names): it then changes and lists assets and
 * resources only there (see scope.h). */
#include "api/api.h"
#include "core/status.h"
#include "core/util.h"
#include "http/auth.h"
#include "store/store.h"

#include <stdio.h>
#include <string.h>

/* Reads a pusher token's `hosts` scope: a comma-separated string or an
 * array of glob patterns, joined into `out`; "" when absent. */
static bool hosts_or_reply(struct req *r, const json_t *body, char *out, size_t len)
{
    const json_t *v = json_object_get(body, "hosts"), *it;
    size_t i, n = 0;

    out[0] = '\0';
    if (v == NULL || json_is_null(v))
        return true;
    if (json_is_string(v)) {
        gi_strlcpy(out, json_string_value(v), len);
        n = strlen(json_string_value(v));
    } else if (json_is_array(v)) {
        json_array_foreach(v, i, it) {
            const char *p = json_string_value(it);
            size_t pl = p ? strlen(p) : 0;
            if (p == NULL || n + pl + 2 > len) {
                n = len; /* refused below */
                break;
            }
            if (n)
                out[n++] = ',';
            memcpy(out + n, p, pl + 1);
            n += pl;
        }
    }
    if ((!json_is_string(v) && !json_is_array(v)) || n >= len || !gi_host_patterns_valid(out)) {
        reply_error(r, 400, "validation_failed", "hosts",
                    "hosts must be host-name patterns such as \"fra1-*,ams1-*\" (letters, "
                    "digits, '.', '-', '_', '*', '?'; under 512 bytes)");
        return false;
    }
    return true;
}

/* Reads `datacenters`: an array of data-center ids or names, each of an
 * existing data center, into dcs (deduplicated, *n 0 when absent or
 * empty); 400 naming the entry (`datacenters[2]`) otherwise. */
static bool dcs_or_reply(struct req *r, const json_t *body, int64_t *dcs, int *n)
{
    const json_t *v = json_object_get(body, "datacenters"), *it;
    size_t i;

    *n = 0;
    if (v == NULL || json_is_null(v))
        return true;
    if (!json_is_array(v) || json_array_size(v) > GI_TOKEN_DCS_MAX) {
        reply_error(r, 400, "validation_failed", "datacenters",
                    "datacenters must be an array of at most %d data-center ids or names",
                    GI_TOKEN_DCS_MAX);
        return false;
    }
    json_array_foreach(v, i, it) {
        char field[48];
        json_t *dc = NULL;
        int64_t id = 0;
        int st = GI_NOT_FOUND;
        bool dup = false;
        if (json_is_integer(it) && json_integer_value(it) > 0) {
            id = json_integer_value(it);
            st = store_dc_get(r->store, id, &dc);
            json_decref(dc);
        } else if (json_is_string(it) && json_string_length(it) > 0) {
            st = store_dc_id_by_name(r->store, json_string_value(it), &id);
        }
        snprintf(field, sizeof field, "datacenters[%zu]", i);
        if (st == GI_NOT_FOUND) {
            reply_error(r, 400, "validation_failed", field,
                        "%s must be the id or name of an existing data center", field);
            return false;
        }
        if (st != GI_OK) {
            reply_status(r, st, "data center");
            return false;
        }
        for (int k = 0; k < *n; k++)
            dup = dup || dcs[k] == id;
        if (!dup)
            dcs[(*n)++] = id;
    }
    return true;
}

static json_t *dcs_json(const int64_t *dcs, int n)
{
    json_t *a = json_array();

    for (int i = 0; i < n; i++)
        json_array_append_new(a, json_integer(dcs[i]));
    return a;
}

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
    static const char *const allowed[] = {"name",    "role",  "source",        "team",        "env",
                                          "cluster", "hosts", "limit_cluster", "datacenters", NULL};
    json_t *body = NULL;
    const char *name, *role_s, *source, *team, *env, *cluster, *limit_cluster;
    char hosts[sizeof r->who.hosts];
    enum gi_role role;
    char secret[AUTH_TOKEN_LEN], hash[AUTH_HASH_LEN];
    int64_t id, dcs[GI_TOKEN_DCS_MAX];
    int st, n_dcs = 0;

    if (!req_json_body_or_reply(r, &body))
        return;
    if (!json_known_or_reply(r, body, allowed) ||
        !json_str_or_reply(r, body, "name", true, 128, &name) ||
        !json_str_or_reply(r, body, "role", true, 16, &role_s) ||
        !json_str_or_reply(r, body, "source", false, 63, &source) ||
        !json_str_or_reply(r, body, "team", false, 128, &team) ||
        !json_str_or_reply(r, body, "env", false, 64, &env) ||
        !json_str_or_reply(r, body, "cluster", false, 128, &cluster) ||
        !json_str_or_reply(r, body, "limit_cluster", false, 127, &limit_cluster) ||
        !hosts_or_reply(r, body, hosts, sizeof hosts) || !dcs_or_reply(r, body, dcs, &n_dcs))
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
    if (role != GI_ROLE_PUSHER && (hosts[0] || (limit_cluster && *limit_cluster))) {
        reply_error(r, 400, "validation_failed", hosts[0] ? "hosts" : "limit_cluster",
                    "only a pusher token is confined to hosts or a cluster");
        goto cleanup;
    }
    if (role == GI_ROLE_ADMIN && n_dcs > 0) {
        /* an admin makes tokens, so a confined admin could make itself an
         * unconfined one */
        reply_error(r, 400, "validation_failed", "datacenters",
                    "an admin token is not confined to data centers");
        goto cleanup;
    }
    auth_token_new(secret);
    auth_hash(secret, hash);
    if ((st = store_token_create(r->store, r->who.name, name, role, hash, &id)) != GI_OK) {
        reply_status(r, st, "token");
        goto cleanup;
    }
    if (n_dcs > 0 &&
        (st = store_token_set_datacenters(r->store, r->who.name, id, dcs, n_dcs)) != GI_OK) {
        store_token_revoke(r->store, r->who.name, id);
        reply_status(r, st, "token");
        goto cleanup;
    }
    if (source) {
        int64_t sid;
        st = store_source_ensure(r->store, source, "push", team, env, cluster, &sid);
        if (st == GI_OK)
            st = store_token_set_source(r->store, id, sid);
        if (st == GI_OK && (hosts[0] || (limit_cluster && *limit_cluster)))
            st = store_token_set_scope(r->store, id, hosts, limit_cluster);
        if (st != GI_OK) {
            store_token_revoke(r->store, r->who.name, id);
            if (st == GI_CONFLICT)
                reply_error(r, 409, "conflict", "source",
                            "source %s is not a push source; a pusher token needs a push source "
                            "name",
                            source);
            else
                reply_status(r, st, "source");
            goto cleanup;
        }
    }
    reply_json(r, 201,
               json_pack("{s:I, s:s, s:s, s:s, s:s?, s:s?, s:o}", "id", (json_int_t)id, "name",
                         name, "role", gi_role_name(role), "token", secret, "hosts",
                         hosts[0] ? hosts : NULL, "limit_cluster",
                         limit_cluster && *limit_cluster ? limit_cluster : NULL, "datacenters",
                         dcs_json(dcs, n_dcs)));
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

/* PATCH /api/v1/tokens/{id} {"datacenters": [...]}: sets the data centers
 * the token is confined to ([] or null: every one), audited; the token's
 * next request has the new scope. An admin token is never confined; a
 * revoked token is not changed (409). */
void api_tokens_update(struct req *r)
{
    static const char *const allowed[] = {"datacenters", NULL};
    json_t *body = NULL, *tok = NULL;
    int64_t dcs[GI_TOKEN_DCS_MAX];
    enum gi_role role;
    int st, n_dcs = 0;

    if (!req_json_body_or_reply(r, &body))
        return;
    if (!json_known_or_reply(r, body, allowed))
        goto cleanup;
    if (!json_object_get(body, "datacenters")) {
        reply_error(r, 400, "validation_failed", "datacenters",
                    "datacenters is required: an array of data-center ids or names, [] for every "
                    "data center");
        goto cleanup;
    }
    if (!dcs_or_reply(r, body, dcs, &n_dcs))
        goto cleanup;
    if ((st = store_token_get(r->store, r->id, &tok)) != GI_OK) {
        reply_status(r, st, "token");
        goto cleanup;
    }
    if (!json_is_null(json_object_get(tok, "revoked_at"))) {
        reply_error(r, 409, "conflict", NULL, "token %lld is revoked", (long long)r->id);
        goto cleanup;
    }
    if (gi_role_parse(json_string_value(json_object_get(tok, "role")), &role) == GI_OK &&
        role == GI_ROLE_ADMIN && n_dcs > 0) {
        reply_error(r, 400, "validation_failed", "datacenters",
                    "an admin token is not confined to data centers");
        goto cleanup;
    }
    if ((st = store_token_set_datacenters(r->store, r->who.name, r->id, dcs, n_dcs)) != GI_OK) {
        reply_status(r, st, "token");
        goto cleanup;
    }
    json_object_set_new(tok, "datacenters", dcs_json(dcs, n_dcs));
    reply_json(r, 200, tok);
    tok = NULL;
cleanup:
    json_decref(tok);
    json_decref(body);
}
