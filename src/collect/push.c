/* Push API client; see push.h. */
#include "collect/push.h"
#include "collect/curlso.h"
#include "core/log.h"

#include <stdio.h>
#include <string.h>

int push_global_init(void)
{
    char err[256];

    if (curlso_open(err, sizeof err) != 0) {
        gi_error("%s", err);
        return -1;
    }
    return 0;
}

void push_global_cleanup(void) { curlso_close(); }

struct reply {
    char buf[512];
    size_t len;
};

/* Keeps the first bytes of the reply body for error messages. */
static size_t on_body(char *data, size_t size, size_t n, void *ctx)
{
    struct reply *r = ctx;
    size_t total = size * n, room = sizeof r->buf - 1 - r->len;
    size_t take = total < room ? total : room;

    memcpy(r->buf + r->len, data, take);
    r->len += take;
    r->buf[r->len] = '\0';
    return total;
}

enum push_result push_send(const char *server, const char *token, const char *body, size_t len,
                           long timeout_s, char *err, size_t errlen)
{
    CURL *c = curlso ? curlso->easy_init() : NULL;
    struct curl_slist *h = NULL;
    struct reply rep = {.len = 0};
    char url[1024], auth[512];
    long status = 0;
    CURLcode cc;
    enum push_result res;

    if (c == NULL) {
        snprintf(err, errlen, curlso ? "out of memory" : "libcurl is not loaded");
        return PUSH_RETRY;
    }
    snprintf(url, sizeof url, "%s%sapi/v1/ingest", server,
             server[0] && server[strlen(server) - 1] == '/' ? "" : "/");
    snprintf(auth, sizeof auth, "Authorization: Bearer %s", token);
    h = curlso->slist_append(h, "Content-Type: application/json");
    h = curlso->slist_append(h, auth);
    h = curlso->slist_append(h, "Expect:");
    curlso->easy_setopt(c, CURLOPT_URL, url);
    curlso->easy_setopt(c, CURLOPT_HTTPHEADER, h);
    curlso->easy_setopt(c, CURLOPT_POSTFIELDS, body);
    curlso->easy_setopt(c, CURLOPT_POSTFIELDSIZE_LARGE, (curl_off_t)len);
    curlso->easy_setopt(c, CURLOPT_TIMEOUT, timeout_s);
    curlso->easy_setopt(c, CURLOPT_CONNECTTIMEOUT, timeout_s < 10 ? timeout_s : 10L);
    curlso->easy_setopt(c, CURLOPT_NOSIGNAL, 1L);
    curlso->easy_setopt(c, CURLOPT_WRITEFUNCTION, on_body);
    curlso->easy_setopt(c, CURLOPT_WRITEDATA, &rep);
    curlso->easy_setopt(c, CURLOPT_USERAGENT, "gpuinv-agent");
    curlso->easy_setopt(c, CURLOPT_PROTOCOLS_STR, "http,https");
    cc = curlso->easy_perform(c);
    if (cc != CURLE_OK) {
        snprintf(err, errlen, "%s", curlso->easy_strerror(cc));
        res = PUSH_RETRY;
    } else {
        curlso->easy_getinfo(c, CURLINFO_RESPONSE_CODE, &status);
        if (status >= 200 && status < 300) {
            res = PUSH_OK;
        } else {
            snprintf(err, errlen, "HTTP %ld: %.300s", status, rep.buf);
            res = status == 408 || status == 429 || status >= 500 ? PUSH_RETRY : PUSH_REJECTED;
        }
    }
    curlso->slist_free_all(h);
    curlso->easy_cleanup(c);
    return res;
}
