/* Webhook signatures over libsodium's HMAC-SHA256; see hooksig.h. */
#include "core/hooksig.h"

#include <sodium.h>
#include <stdio.h>
#include <string.h>

void hooksig_hmac(const unsigned char *key, size_t keylen, const void *msg, size_t len,
                  unsigned char out[HOOKSIG_MAC_LEN])
{
    crypto_auth_hmacsha256_state h;

    crypto_auth_hmacsha256_init(&h, key, keylen);
    crypto_auth_hmacsha256_update(&h, msg, len);
    crypto_auth_hmacsha256_final(&h, out);
    sodium_memzero(&h, sizeof h);
}

void hooksig_hmac_hex(const unsigned char *key, size_t keylen, const void *msg, size_t len,
                      char out[2 * HOOKSIG_MAC_LEN + 1])
{
    unsigned char mac[HOOKSIG_MAC_LEN];

    hooksig_hmac(key, keylen, msg, len, mac);
    sodium_bin2hex(out, 2 * HOOKSIG_MAC_LEN + 1, mac, sizeof mac);
}

int hooksig_key(const char *secret, unsigned char *key, size_t *keylen)
{
    static const char prefix[] = "whsec_";
    size_t n = strlen(secret);
    const char *end = NULL;

    *keylen = 0;
    if (strncmp(secret, prefix, sizeof prefix - 1) != 0) {
        if (n > HOOKSIG_KEY_MAX)
            return -1;
        memcpy(key, secret, n);
        *keylen = n;
        return 0;
    }
    secret += sizeof prefix - 1;
    n -= sizeof prefix - 1;
    if (sodium_base642bin(key, HOOKSIG_KEY_MAX, secret, n, NULL, keylen, &end,
                          sodium_base64_VARIANT_ORIGINAL) != 0 ||
        end != secret + n || *keylen == 0)
        return -1;
    return 0;
}

/* The MAC of "<id>.<ts>.<body>" under the secret's key. */
static int standard_mac(const char *secret, const char *msg_id, int64_t ts, const void *body,
                        size_t len, unsigned char mac[HOOKSIG_MAC_LEN])
{
    unsigned char key[HOOKSIG_KEY_MAX];
    crypto_auth_hmacsha256_state h;
    char head[160];
    size_t keylen;
    int n;

    if (hooksig_key(secret, key, &keylen) != 0)
        return -1;
    n = snprintf(head, sizeof head, "%s.%lld.", msg_id, (long long)ts);
    if (n < 0 || (size_t)n >= sizeof head) {
        sodium_memzero(key, sizeof key);
        return -1;
    }
    crypto_auth_hmacsha256_init(&h, key, keylen);
    crypto_auth_hmacsha256_update(&h, (const unsigned char *)head, (size_t)n);
    crypto_auth_hmacsha256_update(&h, body, len);
    crypto_auth_hmacsha256_final(&h, mac);
    sodium_memzero(&h, sizeof h);
    sodium_memzero(key, sizeof key);
    return 0;
}

int hooksig_standard(const char *secret, const char *msg_id, int64_t ts, const void *body,
                     size_t len, char out[HOOKSIG_STANDARD_LEN])
{
    unsigned char mac[HOOKSIG_MAC_LEN];

    out[0] = '\0';
    if (standard_mac(secret, msg_id, ts, body, len, mac) != 0)
        return -1;
    memcpy(out, "v1,", 3);
    sodium_bin2base64(out + 3, HOOKSIG_STANDARD_LEN - 3, mac, sizeof mac,
                      sodium_base64_VARIANT_ORIGINAL);
    return 0;
}

bool hooksig_standard_verify(const char *secret, const char *msg_id, int64_t ts, const void *body,
                             size_t len, const char *header)
{
    char want[HOOKSIG_STANDARD_LEN];
    size_t wl;
    bool ok = false;

    if (hooksig_standard(secret, msg_id, ts, body, len, want) != 0)
        return false;
    wl = strlen(want);
    while (*header) {
        size_t n = strcspn(header, " ");
        /* Every candidate is compared, so the time taken does not say
         * which one matched. */
        if (n == wl && sodium_memcmp(header, want, wl) == 0)
            ok = true;
        header += n;
        header += strspn(header, " ");
    }
    return ok;
}

void hooksig_github(const char *secret, const void *body, size_t len, char out[HOOKSIG_GITHUB_LEN])
{
    memcpy(out, "sha256=", 7);
    hooksig_hmac_hex((const unsigned char *)secret, strlen(secret), body, len, out + 7);
}
