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
    /* An Authorization header value ("Token abc") used instead of bearer,
     * or NULL. */
    const char *authorization;
    /* When not NULL: receives the seconds a Retry-After header asked for
     * (0 when none). */
    long *retry_after;
    /* When not NULL: the request is a POST of this
     * application/x-www-form-urlencoded body instead of a GET. */
    const char *post_form;
    /* When not NULL: the request is signed with AWS Signature Version 4
     * (CURLOPT_AWS_SIGV4, "aws:amz:<region>:<service>") with userpwd
     * ("<access key id>:<secret>") as the credentials. */
    const char *aws_sigv4;
    const char *userpwd;
};

/* Fetches url (or posts o->post_form to it); *body (NUL-terminated, caller frees) and *status are
 * set when the server answered. Returns 0, or -1 with err filled (network failure, timeout, body
 * too large). A non-2xx answer returns 0: the caller reads *status. */
int httpget(const char *url, const struct httpget_opts *o, char **body, size_t *len, long *status,
            char *err, size_t errlen);

/* A bounded HTTP POST of a JSON body (webhook deliveries). headers: extra
 * "Name: value" lines, NULL-terminated (borrowed). The answer's body is
 * read up to max_bytes and the rest dropped (*truncated set), so a
 * chatty receiver never fails a delivery. Returns 0 when the server
 * answered (*status, *body NUL-terminated, caller frees), or -1 with err
 * filled (network failure, timeout). */
struct httppost_opts {
    const char *const *headers;
    long timeout_s;
    size_t max_bytes;
    /* Another method with the same body ("PATCH"), or NULL for POST. */
    const char *method;
    /* When not NULL: receives the seconds a Retry-After header asked for
     * (0 when none). */
    long *retry_after;
    /* TLS verification, as for httpget: a CA bundle (NULL: the system's)
     * and skipping verification (test set-ups only). */
    const char *ca_file;
    int insecure;
};
int httppost(const char *url, const struct httppost_opts *o, const char *data, size_t data_len,
             char **body, size_t *len, int *truncated, long *status, char *err, size_t errlen);

#endif
