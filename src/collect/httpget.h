/* A bounded HTTP GET for the pullers (libcurl). */
#ifndef GI_HTTPGET_H
#define GI_HTTPGET_H

#include <stddef.h>

struct httpget_opts {
    const char *bearer;  /* Authorization: Bearer, or NULL */
    const char *ca_file; /* CA bundle for https, or NULL for the system's */
    int insecure;        /* skip TLS verification (test clusters only) */
    long timeout_s;
    size_t max_bytes;           /* larger bodies fail */
    const char *const *headers; /* more request header lines ("Name: value"), NULL-ended; or NULL */
};

/* Fetches url; *body (NUL-terminated, caller frees) and *status are set
 * when the server answered. Returns 0, or -1 with err filled (network
 * failure, timeout, body too large). A non-2xx answer returns 0: the
 * caller reads *status. */
int httpget(const char *url, const struct httpget_opts *o, char **body, size_t *len, long *status,
            char *err, size_t errlen);

#endif
