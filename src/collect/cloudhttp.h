/* HTTP for the cloud pull sources: retries of throttled answers and
 * form/query encoding. */
#ifndef GI_CLOUDHTTP_H
#define GI_CLOUDHTTP_H

#include <jansson.h>
#include <stdbool.h>
#include <stddef.h>

struct httpget_opts;

/* Tries in all for one request, and the longest wait between two. */
#define CLOUDHTTP_TRIES 4
#define CLOUDHTTP_MAX_WAIT_S 30

/* httpget(url, o, ...) that answers a 429 or 503 by waiting what its
 * Retry-After asks (1, 2, 4 s without one; at most CLOUDHTTP_MAX_WAIT_S)
 * and trying again, CLOUDHTTP_TRIES times in all. Returns as httpget
 * does; *status and *body are the last answer's. o->retry_after is
 * ignored. */
int cloudhttp_get(const char *url, const struct httpget_opts *o, char **body, size_t *len,
                  long *status, char *err, size_t errlen);

/* Appends "key=value" (value percent-encoded; "&" before it unless buf
 * is empty) to the NUL-terminated buf of capacity cap. False when it
 * does not fit (buf unchanged). */
bool cloudhttp_form_add(char *buf, size_t cap, const char *key, const char *value);

/* Percent-encodes s into out (capacity cap); false when it does not fit. */
bool cloudhttp_escape(const char *s, char *out, size_t cap);

/* True when url starts with base's scheme and authority (so a next-page
 * link the server gave may carry the source's credentials). */
bool cloudhttp_same_origin(const char *url, const char *base);

/* v (or def when v is NULL) into out, one trailing '/' trimmed. */
void cloudhttp_base_url(const char *v, const char *def, char *out, size_t len);

/* Reads a provider's error answer into a one-line message (out "" when
 * it has none). */
typedef void (*cloudhttp_errmsg_fn)(const char *body, size_t len, char *out, size_t outlen);

/* What the OAuth exchanges say when they fail: where (e.g. "the login
 * endpoint https://..."), who answers ("Microsoft Entra ID"), what it
 * refused ("the client credentials") and what that usually means. */
struct cloudhttp_token_words {
    const char *where, *who, *what, *hint;
};

/* POSTs form (application/x-www-form-urlencoded) to url with the
 * source's HTTP settings (no bearer) and copies the answer's
 * access_token into token (tlen bytes). 0, or -1 with err saying why in
 * the words given. */
int cloudhttp_token(const json_t *cfg, const char *url, const char *form,
                    cloudhttp_errmsg_fn errmsg, const struct cloudhttp_token_words *w, char *token,
                    size_t tlen, char *err, size_t errlen);

#endif
