/* Bounded HTTP GET; see httpget.h. */
#include "collect/httpget.h"
#include "collect/curlso.h"

#include <stdio.h>
#include <stdlib.h>
#include <string.h>

struct sink {
    char *p;
    size_t len, cap, max;
    int too_large;
};

static size_t on_data(char *data, size_t size, size_t n, void *ctx)
{
    struct sink *s = ctx;
    size_t add = size * n;

    if (s->len + add > s->max) {
        s->too_large = 1;
        return 0; /* aborts the transfer */
    }
    if (s->len + add + 1 > s->cap) {
        size_t cap = s->cap ? s->cap : 65536;
        char *np;
        while (cap < s->len + add + 1)
            cap *= 2;
        if ((np = realloc(s->p, cap)) == NULL)
            return 0;
        s->p = np;
        s->cap = cap;
    }
    memcpy(s->p + s->len, data, add);
    s->len += add;
    s->p[s->len] = '\0';
    return add;
}

int httpget(const char *url, const struct httpget_opts *o, char **body, size_t *len, long *status,
            char *err, size_t errlen)
{
    CURL *c = curlso ? curlso->easy_init() : NULL;
    struct curl_slist *h = NULL;
    struct sink s = {.max = o->max_bytes};
    char auth[4200];
    CURLcode cc;
    int rc = -1;

    *body = NULL;
    *len = 0;
    *status = 0;
    if (c == NULL) {
        snprintf(err, errlen, curlso ? "out of memory" : "libcurl is not loaded");
        return -1;
    }
    if (o->bearer && *o->bearer) {
        snprintf(auth, sizeof auth, "Authorization: Bearer %s", o->bearer);
        h = curlso->slist_append(h, auth);
    }
    for (const char *const *x = o->headers; x && *x; x++)
        h = curlso->slist_append(h, *x);
    h = curlso->slist_append(h, "Accept: application/json, text/plain;q=0.9, */*;q=0.5");
    curlso->easy_setopt(c, CURLOPT_URL, url);
    curlso->easy_setopt(c, CURLOPT_HTTPHEADER, h);
    curlso->easy_setopt(c, CURLOPT_TIMEOUT, o->timeout_s > 0 ? o->timeout_s : 30L);
    curlso->easy_setopt(c, CURLOPT_CONNECTTIMEOUT, 10L);
    curlso->easy_setopt(c, CURLOPT_NOSIGNAL, 1L);
    curlso->easy_setopt(c, CURLOPT_WRITEFUNCTION, on_data);
    curlso->easy_setopt(c, CURLOPT_WRITEDATA, &s);
    curlso->easy_setopt(c, CURLOPT_USERAGENT, "gpuinv");
    curlso->easy_setopt(c, CURLOPT_PROTOCOLS_STR, "http,https");
    curlso->easy_setopt(c, CURLOPT_ACCEPT_ENCODING, "");
    if (o->ca_file && *o->ca_file)
        curlso->easy_setopt(c, CURLOPT_CAINFO, o->ca_file);
    if (o->insecure) {
        curlso->easy_setopt(c, CURLOPT_SSL_VERIFYPEER, 0L);
        curlso->easy_setopt(c, CURLOPT_SSL_VERIFYHOST, 0L);
    }
    cc = curlso->easy_perform(c);
    if (s.too_large) {
        snprintf(err, errlen, "the answer is larger than %zu bytes", o->max_bytes);
    } else if (cc != CURLE_OK) {
        snprintf(err, errlen, "%s", curlso->easy_strerror(cc));
    } else {
        curlso->easy_getinfo(c, CURLINFO_RESPONSE_CODE, status);
        *body = s.p ? s.p : calloc(1, 1);
        *len = s.len;
        s.p = NULL;
        rc = *body ? 0 : -1;
    }
    free(s.p);
    curlso->slist_free_all(h);
    curlso->easy_cleanup(c);
    return rc;
}
