/* JSON Web Tokens signed with RS256 (RSASSA-PKCS1-v1_5 over SHA-256), as
 * OAuth 2.0 service-account grants ask for. The signature is GnuTLS's;
 * base64url (no padding) is libsodium's. */
#ifndef GI_JWT_H
#define GI_JWT_H

#include <jansson.h>
#include <stddef.h>

/* Builds base64url(header) "." base64url(claims) "." base64url(signature)
 * with the PEM private key pem (PKCS#1 or PKCS#8, unencrypted; borrowed).
 * header and claims are borrowed. Returns 0 with *out set (caller frees),
 * or -1 with err filled (a key GnuTLS cannot read, a failed signature). */
int jwt_sign_rs256(const char *pem, const json_t *header, const json_t *claims, char **out,
                   char *err, size_t errlen);

#endif
