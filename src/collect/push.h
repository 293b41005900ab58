/* HTTP client for the push API (libcurl). */
#ifndef GI_PUSH_H
#define GI_PUSH_H

#include <stddef.h>

enum push_result {
    PUSH_OK,       /* 2xx: stored (or already stored), perhaps with warnings */
    PUSH_RETRY,    /* unreachable, timeout, 408, 429 or 5xx: keep and retry later */
    PUSH_DENIED,   /* 401 or 403: the token is wrong, not the batch; keep it */
    PUSH_REJECTED, /* any other 4xx: the batch itself is wrong; retrying will not help */
};

/* Global libcurl set-up and tear-down; call once per process. */
int push_global_init(void);
void push_global_cleanup(void);

/* POSTs a JSON batch to <server>/api/v1/ingest with a bearer token; err
 * receives a one-line reason for anything but PUSH_OK: for a refusal the
 * status and the server's own message and field ("HTTP 400: processes:
 * processes must be an array"). Warnings in an accepted batch's reply
 * are logged, with their count. */
enum push_result push_send(const char *server, const char *token, const char *body, size_t len,
                           long timeout_s, char *err, size_t errlen);

#endif
