/* Credentials; see auth.h. */
#include "http/auth.h"
#include "core/log.h"
#include "core/status.h"
#include "core/util.h"
#include "http/request.h"
#include "http/routes.h"
#include "store/store.h"

#include <pthread.h>
#include <sodium.h>
#include <string.h>
#include <strings.h>

int auth_init(void) { return sodium_init() < 0 ? GI_INTERNAL : GI_OK; }

void auth_token_new(char token[AUTH_TOKEN_LEN])
{
    unsigned char raw[32];

    randombytes_buf(raw, sizeof raw);
    memcpy(token, "gpi_", 4);
    sodium_bin2base64(token + 4, AUTH_TOKEN_LEN - 4, raw, sizeof raw,
                      sodium_base64_VARIANT_URLSAFE_NO_PADDING);
    sodium_memzero(raw, sizeof raw);
}

void auth_hash(const char *secret, char out[AUTH_HASH_LEN])
{
    unsigned char h[32];

    crypto_generichash(h, sizeof h, (const unsigned char *)secret, strlen(secret), NULL, 0);
    gi_hex(h, sizeof h, out);
}

int auth_password_hash(const char *password, char out[AUTH_PWHASH_LEN])
{
    /* Argon2id at OWASP's minimum (19 MiB, 2 passes) keeps sign-in fast
     * and bounded in memory while staying costly to brute-force. */
    if (crypto_pwhash_str(out, password, strlen(password), 2, 19u << 20) != 0)
        return GI_INTERNAL;
    return GI_OK;
}

bool auth_password_ok(const char *stored, const char *password)
{
    return crypto_pwhash_str_verify(stored, password, strlen(password)) == 0;
}

/* The hash of a random password nobody knows, made once. */
static char dummy_hash[AUTH_PWHASH_LEN];

static void dummy_make(void)
{
    char secret[AUTH_TOKEN_LEN];

    auth_token_new(secret);
    if (auth_password_hash(secret, dummy_hash) != GI_OK)
        dummy_hash[0] = '\0';
    sodium_memzero(secret, sizeof secret);
}

void auth_password_dummy(const char *password)
{
    static pthread_once_t once = PTHREAD_ONCE_INIT;

    pthread_once(&once, dummy_make);
    /* It cannot match; the result is of no interest, the time spent is. */
    if (dummy_hash[0] && crypto_pwhash_str_verify(dummy_hash, password, strlen(password)) == 0)
        gi_warn("a password matched the dummy hash");
}

/* Finds the value of cookie `name` in a Cookie header into out. */
static bool cookie_value(const char *header, const char *name, char *out, size_t len)
{
    size_t nl = strlen(name);

    for (const char *p = header; p && *p;) {
        while (*p == ' ' || *p == ';')
            p++;
        if (strncmp(p, name, nl) == 0 && p[nl] == '=') {
            const char *v = p + nl + 1, *e = strchr(v, ';');
            size_t vl = e ? (size_t)(e - v) : strlen(v);
            if (vl == 0 || vl >= len)
                return false;
            memcpy(out, v, vl);
            out[vl] = '\0';
            return true;
        }
        p = strchr(p, ';');
    }
    return false;
}

/* The password of HTTP Basic credentials ("Basic base64(user:password)")
 * into out; false when h is not such a header or the password is empty
 * or longer than len - 1. */
static bool basic_password(const char *h, char *out, size_t len)
{
    unsigned char raw[512];
    const unsigned char *colon;
    size_t n = 0, pwlen = 0;
    bool ok = false;

    if (strncasecmp(h, "Basic ", 6) == 0 &&
        sodium_base642bin(raw, sizeof raw - 1, h + 6, strlen(h + 6), NULL, &n, NULL,
                          sodium_base64_VARIANT_ORIGINAL) == 0 &&
        memchr(raw, '\0', n) == NULL && (colon = memchr(raw, ':', n)) != NULL) {
        pwlen = n - (size_t)(colon + 1 - raw);
        if (pwlen > 0 && pwlen < len) {
            memcpy(out, colon + 1, pwlen);
            out[pwlen] = '\0';
            ok = true;
        }
    }
    sodium_memzero(raw, sizeof raw);
    return ok;
}

int auth_resolve(struct req *r)
{
    const char *h = req_header(r, MHD_HTTP_HEADER_AUTHORIZATION);
    char hash[AUTH_HASH_LEN], val[128], pw[260];

    if (h && route_basic_auth(r->route) && strncasecmp(h, "Basic ", 6) == 0) {
        int rc = GI_NOT_FOUND;
        if (basic_password(h, pw, sizeof pw)) {
            auth_hash(pw, hash);
            rc = store_token_auth(r->store, hash, &r->who);
        }
        sodium_memzero(pw, sizeof pw);
        return rc;
    }
    if (h) {
        if (strncasecmp(h, "Bearer ", 7) != 0 || strlen(h + 7) > 256 || h[7] == '\0')
            return GI_NOT_FOUND;
        auth_hash(h + 7, hash);
        return store_token_auth(r->store, hash, &r->who);
    }
    if (cookie_value(req_header(r, MHD_HTTP_HEADER_COOKIE), AUTH_COOKIE, val, sizeof val)) {
        int rc;
        auth_hash(val, hash);
        rc = store_session_auth(r->store, hash, &r->who);
        r->via_session = rc == GI_OK;
        return rc;
    }
    return GI_NOT_FOUND;
}
