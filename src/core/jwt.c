/* RS256 JSON Web Tokens; see jwt.h. */
#include "core/jwt.h"

#include <gnutls/abstract.h>
#include <gnutls/gnutls.h>
#include <sodium.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

/* Appends base64url(data) to buf at *pos (buf has room, see b64_len). */
static void b64_append(char *buf, size_t *pos, const unsigned char *data, size_t n)
{
    size_t room = sodium_base64_ENCODED_LEN(n, sodium_base64_VARIANT_URLSAFE_NO_PADDING);

    sodium_bin2base64(buf + *pos, room, data, n, sodium_base64_VARIANT_URLSAFE_NO_PADDING);
    *pos += strlen(buf + *pos);
}

int jwt_sign_rs256(const char *pem, const json_t *header, const json_t *claims, char **out,
                   char *err, size_t errlen)
{
    gnutls_privkey_t key = NULL;
    gnutls_datum_t kd, data, sig = {NULL, 0};
    char *h = json_dumps(header, JSON_COMPACT), *c = json_dumps(claims, JSON_COMPACT);
    char *buf = NULL;
    size_t cap, pos = 0;
    int rc = -1, grc;

    *out = NULL;
    if (h == NULL || c == NULL || pem == NULL) {
        snprintf(err, errlen, "out of memory");
        goto cleanup;
    }
    /* Room for both parts and an RSA-16384 signature, in base64url. */
    cap = sodium_base64_ENCODED_LEN(strlen(h), sodium_base64_VARIANT_URLSAFE_NO_PADDING) +
          sodium_base64_ENCODED_LEN(strlen(c), sodium_base64_VARIANT_URLSAFE_NO_PADDING) +
          sodium_base64_ENCODED_LEN(2048, sodium_base64_VARIANT_URLSAFE_NO_PADDING) + 4;
    buf = malloc(cap);
    if (buf == NULL) {
        snprintf(err, errlen, "out of memory");
        goto cleanup;
    }
    b64_append(buf, &pos, (const unsigned char *)h, strlen(h));
    buf[pos++] = '.';
    b64_append(buf, &pos, (const unsigned char *)c, strlen(c));
    if ((grc = gnutls_privkey_init(&key)) < 0)
        goto gnutls_failed;
    kd.data = (unsigned char *)pem;
    kd.size = (unsigned)strlen(pem);
    if ((grc = gnutls_privkey_import_x509_raw(key, &kd, GNUTLS_X509_FMT_PEM, NULL, 0)) < 0) {
        snprintf(err, errlen, "the private key is not a PEM RSA key GnuTLS can read: %s",
                 gnutls_strerror(grc));
        goto cleanup;
    }
    if (gnutls_privkey_get_pk_algorithm(key, NULL) != GNUTLS_PK_RSA) {
        snprintf(err, errlen, "the private key is not an RSA key (RS256 needs one)");
        goto cleanup;
    }
    data.data = (unsigned char *)buf;
    data.size = (unsigned)pos;
    if ((grc = gnutls_privkey_sign_data(key, GNUTLS_DIG_SHA256, 0, &data, &sig)) < 0)
        goto gnutls_failed;
    if (sig.size > 2048) {
        snprintf(err, errlen, "the signature is larger than an RSA-16384 one");
        goto cleanup;
    }
    buf[pos++] = '.';
    b64_append(buf, &pos, sig.data, sig.size);
    *out = buf;
    buf = NULL;
    rc = 0;
    goto cleanup;
gnutls_failed:
    snprintf(err, errlen, "signing the token failed: %s", gnutls_strerror(grc));
cleanup:
    if (sig.data)
        gnutls_free(sig.data);
    if (key)
        gnutls_privkey_deinit(key);
    free(buf);
    free(h);
    free(c);
    return rc;
}
