/* Dashboard sign-in: a user name and password exchanged for an HttpOnly,
 * SameSite=Strict session cookie (Secure under TLS); the cookie's hash is
 * what is stored. Sign-in is throttled: repeated failures for one user
 * name or from one client address are answered 429 for the rest of the
 * window, and at most a few password verifications run at once. */
#include "api/api.h"
#include "core/status.h"
#include "core/util.h"
#include "http/auth.h"
#include "http/server.h"
#include "http/throttle.h"
#include "store/store.h"

#include <stdio.h>
#include <string.h>

/* Failures allowed per window for one user name and one client address. */
#define SIGNIN_USER_FAILURES 5
#define SIGNIN_ADDR_FAILURES 20

/* Refuses with 429 while the user name or the client address is locked
 * out; false after replying. */
static bool not_locked_or_reply(struct req *r, const char *ukey, const char *akey)
{
    struct throttle *t = server_throttle(r->srv);
    int64_t now = gi_now();
    int64_t wu = throttle_wait(t, ukey, SIGNIN_USER_FAILURES, now);
    int64_t wa = throttle_wait(t, akey, SIGNIN_ADDR_FAILURES, now);
    int64_t wait = wu > wa ? wu : wa;
    char ra[24];

    if (wait == 0)
        return true;
    snprintf(ra, sizeof ra, "%lld", (long long)wait);
    reply_error(r, 429, "too_many_attempts", NULL,
                "too many failed sign-ins %s; try again in %lld seconds",
                wu >= wa ? "for this user" : "from this address", (long long)wait);
    reply_header(r, MHD_HTTP_HEADER_RETRY_AFTER, ra);
    return false;
}

void api_session_create(struct req *r)
{
    struct throttle *t = server_throttle(r->srv);
    json_t *body = NULL;
    const char *user, *pass;
    char stored[AUTH_PWHASH_LEN], secret[AUTH_TOKEN_LEN], hash[AUTH_HASH_LEN], cookie[256];
    char ukey[160], akey[80];
    int64_t uid;
    enum gi_role role;
    int64_t ttl = server_session_ttl(r->srv);
    bool good;
    int st;

    if (!req_json_body_or_reply(r, &body))
        return;
    if (!json_str_or_reply(r, body, "username", true, 128, &user) ||
        !json_str_or_reply(r, body, "password", true, 1024, &pass))
        goto cleanup;
    snprintf(ukey, sizeof ukey, "user:%s", user);
    snprintf(akey, sizeof akey, "addr:%s", r->addr);
    if (!not_locked_or_reply(r, ukey, akey))
        goto cleanup;
    st = store_user_get(r->store, user, &uid, &role, stored, sizeof stored);
    if (st != GI_OK && st != GI_NOT_FOUND) {
        reply_status(r, st, "user");
        goto cleanup;
    }
    /* Argon2 is deliberately costly; bound how many run at once so a flood
     * of sign-ins cannot take every worker thread. An unknown user name
     * costs the same work as a wrong password. */
    if (!throttle_work_begin(t)) {
        reply_error(r, 503, "busy", NULL, "too many sign-ins at once; retry");
        reply_header(r, MHD_HTTP_HEADER_RETRY_AFTER, "1");
        goto cleanup;
    }
    good = false;
    if (st == GI_OK)
        good = auth_password_ok(stored, pass);
    else
        auth_password_dummy(pass);
    throttle_work_end(t);
    if (!good) {
        throttle_failed(t, ukey, gi_now());
        throttle_failed(t, akey, gi_now());
        reply_error(r, 401, "unauthenticated", "password", "wrong user name or password");
        goto cleanup;
    }
    throttle_reset(t, ukey);
    auth_token_new(secret);
    auth_hash(secret, hash);
    if ((st = store_session_create(r->store, hash, uid, gi_now() + ttl)) != GI_OK) {
        reply_status(r, st, "session");
        goto cleanup;
    }
    snprintf(cookie, sizeof cookie, "%s=%s; Path=/; HttpOnly; SameSite=Strict; Max-Age=%lld%s",
             AUTH_COOKIE, secret, (long long)ttl, server_tls(r->srv) ? "; Secure" : "");
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
                 server_tls(r->srv)
                     ? AUTH_COOKIE "=; Path=/; HttpOnly; SameSite=Strict; Max-Age=0; Secure"
                     : AUTH_COOKIE "=; Path=/; HttpOnly; SameSite=Strict; Max-Age=0");
}
