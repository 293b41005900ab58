/* Dashboard sign-in: a user name and password exchanged for an HttpOnly,
 * SameSite=Strict session cookie; the cookie's hash is what is stored. */
#include "api/api.h"
#include "core/status.h"
#include "core/util.h"
#include "http/auth.h"
#include "http/server.h"
#include "store/store.h"

#include <stdio.h>
#include <string.h>

void api_session_create(struct req *r)
{
    json_t *body = NULL;
    const char *user, *pass;
    char stored[AUTH_PWHASH_LEN], secret[AUTH_TOKEN_LEN], hash[AUTH_HASH_LEN], cookie[256];
    int64_t uid;
    enum gi_role role;
    int64_t ttl = server_session_ttl(r->srv);
    int st;

    if (!req_json_body_or_reply(r, &body))
        return;
    if (!json_str_or_reply(r, body, "username", true, 128, &user) ||
        !json_str_or_reply(r, body, "password", true, 1024, &pass))
        goto cleanup;
    st = store_user_get(r->store, user, &uid, &role, stored, sizeof stored);
    if (st == GI_NOT_FOUND || (st == GI_OK && !auth_password_ok(stored, pass))) {
        reply_error(r, 401, "unauthenticated", "password", "wrong user name or password");
        goto cleanup;
    }
    if (st != GI_OK) {
        reply_status(r, st, "user");
        goto cleanup;
    }
    auth_token_new(secret);
    auth_hash(secret, hash);
    if ((st = store_session_create(r->store, hash, uid, gi_now() + ttl)) != GI_OK) {
        reply_status(r, st, "session");
        goto cleanup;
    }
    snprintf(cookie, sizeof cookie, "%s=%s; Path=/; HttpOnly; SameSite=Strict; Max-Age=%lld",
             AUTH_COOKIE, secret, (long long)ttl);
    reply_json(r, 200, json_pack("{s:s, s:s}", "user", user, "role", gi_role_name(role)));
    reply_header(r, MHD_HTTP_HEADER_SET_COOKIE, cookie);
cleanup:
    json_decref(body);
}

void api_session_get(struct req *r)
{
    reply_json(r, 200,
               json_pack("{s:s, s:s, s:b}", "user", r->who.name, "role", gi_role_name(r->who.role),
                         "session", r->via_session));
}

void api_session_delete(struct req *r)
{
    const char *c = req_header(r, MHD_HTTP_HEADER_COOKIE);
    const char *p = c ? strstr(c, AUTH_COOKIE "=") : NULL;
    char secret[128], hash[AUTH_HASH_LEN];

    if (p) {
        size_t n = strcspn(p + sizeof AUTH_COOKIE, ";");
        if (n < sizeof secret) {
            memcpy(secret, p + sizeof AUTH_COOKIE, n);
            secret[n] = '\0';
            auth_hash(secret, hash);
            store_session_delete(r->store, hash);
        }
    }
    reply_no_content(r);
    reply_header(r, MHD_HTTP_HEADER_SET_COOKIE,
                 AUTH_COOKIE "=; Path=/; HttpOnly; SameSite=Strict; Max-Age=0");
}
