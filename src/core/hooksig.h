/* Signatures of outbound webhook deliveries: HMAC-SHA256 (libsodium) in
 * the two forms receivers check. Pure functions, no I/O.
 *
 * Standard Webhooks 1.0: the signed content is "<msg id>.<unix ts>.<raw
 * body>" and the header value "v1,<base64 MAC>"; the key is the secret's
 * bytes after the "whsec_" prefix decoded from base64 when the secret has
 * that prefix, else the secret's own bytes. GitHub style: "sha256=<hex
 * MAC>" over the raw body alone, keyed with the secret's bytes as written
 * (what GitHub-style receivers configure). */
#ifndef GI_HOOKSIG_H
#define GI_HOOKSIG_H

#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>

#define HOOKSIG_MAC_LEN 32
/* Longest key a whsec_ secret may decode to. */
#define HOOKSIG_KEY_MAX 256
/* Room for "v1,<base64 of 32 bytes>" and "sha256=<64 hex>" with the NUL. */
#define HOOKSIG_STANDARD_LEN 48
#define HOOKSIG_GITHUB_LEN 72

/* HMAC-SHA256 of msg under key (any length) into out. */
void hooksig_hmac(const unsigned char *key, size_t keylen, const void *msg, size_t len,
                  unsigned char out[HOOKSIG_MAC_LEN]);
/* The same MAC as 64 lower-case hex digits and a NUL (out: 65 bytes). */
void hooksig_hmac_hex(const unsigned char *key, size_t keylen, const void *msg, size_t len,
                      char out[2 * HOOKSIG_MAC_LEN + 1]);
/* The Standard Webhooks key of `secret` into key (HOOKSIG_KEY_MAX bytes):
 * 0, or -1 when a whsec_ secret is not valid base64, decodes to nothing,
 * or decodes to more than HOOKSIG_KEY_MAX bytes. */
int hooksig_key(const char *secret, unsigned char *key, size_t *keylen);
/* The webhook-signature value "v1,<base64>" for msg_id, ts and the raw
 * body into out (HOOKSIG_STANDARD_LEN bytes): 0, or -1 for a bad secret. */
int hooksig_standard(const char *secret, const char *msg_id, int64_t ts, const void *body,
                     size_t len, char out[HOOKSIG_STANDARD_LEN]);
/* True when one of the space-separated signatures in `header` is a v1
 * signature that matches (compared in constant time); other schemes are
 * skipped, as the standard asks during rotation. */
bool hooksig_standard_verify(const char *secret, const char *msg_id, int64_t ts, const void *body,
                             size_t len, const char *header);
/* The GitHub-style value "sha256=<hex>" over the raw body into out
 * (HOOKSIG_GITHUB_LEN bytes). */
void hooksig_github(const char *secret, const void *body, size_t len, char out[HOOKSIG_GITHUB_LEN]);

#endif
