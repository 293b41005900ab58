/* Bounded HTTP GET and POST; see httpget.h. */
#include "collect/deadline.h"
#include "collect/httpget.h"
#include "collect/curlso.h"

#include <stdbool.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

struct sink {
    char *p;
    size_t len, cap, max;
    int too_large;
    int keep_prefix; /* past max: keep what fits and drop the rest */
};

static size_t on_data(char *data, size_t size, size_t n, void *ctx)
{
    struct sink *s = ctx;
    size_t add = size * n;

    if (s->len + add > s->max) {
        s->too_large = 1;
        if (!s->keep_prefix)
            return 0; /* aborts the transfer */
        add = s->max - s->len;
        if (add == 0)
            return size * n;
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
    return s->keep_prefix ? size * n : add;
}

/* The TLS verification settings of a request, the same for GET and POST. */
static void set_tls(CURL *c, const char *ca_file, int insecure)
{
    if (ca_file && *ca_file)
        curlso->easy_setopt(c, CURLOPT_CAINFO, ca_file);
    if (insecure) {
        curlso->easy_setopt(c, CURLOPT_SSL_VERIFYPEER, 0L);
        curlso->easy_setopt(c, CURLOPT_SSL_VERIFYHOST, 0L);
    }
}

int httpget(const char *url, const struct httpget_opts *o, char **body, size_t *len, long *status,
            char *err, size_t errlen)
{
    CURL *c = curlso ? curlso->easy_init() : NULL;
    struct curl_slist *h = NULL;
    struct sink s = {.max = o->max_bytes};
    char auth[4200];
    CURLcode cc;
    bool unsignable;
    long limit_ms;
    int rc = -1;

    *body = NULL;
    *len = 0;
    *status = 0;
    if (c == NULL) {
        snprintf(err, errlen, curlso ? "out of memory" : "libcurl is not loaded");
        return -1;
    }
    if (o->authorization && *o->authorization) {
        snprintf(auth, sizeof auth, "Authorization: %s", o->authorization);
        h = curlso->slist_append(h, auth);
    } else if (o->bearer && *o->bearer) {
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
    set_tls(c, o->ca_file, o->insecure);
    if (o->post_form) {
        curlso->easy_setopt(c, CURLOPT_POST, 1L);
        curlso->easy_setopt(c, CURLOPT_POSTFIELDS, o->post_form);
        curlso->easy_setopt(c, CURLOPT_POSTFIELDSIZE_LARGE, (curl_off_t)strlen(o->post_form));
    }
    cc = CURLE_OK;
    if (o->aws_sigv4) {
        curlso->easy_setopt(c, CURLOPT_USERPWD, o->userpwd ? o->userpwd : "");
        cc = curlso->easy_setopt(c, CURLOPT_AWS_SIGV4, o->aws_sigv4);
    }
    unsignable = cc != CURLE_OK;
    /* A test run's overall limit bounds this request too. */
    limit_ms = pull_deadline_clip_ms((o->timeout_s > 0 ? o->timeout_s : 30L) * 1000L);
    curlso->easy_setopt(c, CURLOPT_TIMEOUT_MS, limit_ms > 0 ? limit_ms : 1L);
    if (!unsignable && limit_ms > 0)
        cc = curlso->easy_perform(c);
    if (unsignable) {
        snprintf(err, errlen, "this libcurl cannot sign AWS requests (7.75 or newer needed): %s",
                 curlso->easy_strerror(cc));
    } else if (limit_ms <= 0) {
        snprintf(err, errlen, "no time was left to ask %s", url);
    } else if (s.too_large) {
        snprintf(err, errlen, "the answer is larger than %zu bytes", o->max_bytes);
    } else if (cc != CURLE_OK) {
        snprintf(err, errlen, "%s", curlso->easy_strerror(cc));
    } else {
        curlso->easy_getinfo(c, CURLINFO_RESPONSE_CODE, status);
        if (o->retry_after) {
            curl_off_t ra = 0;
            if (curlso->easy_getinfo(c, CURLINFO_RETRY_AFTER, &ra) != CURLE_OK || ra < 0)
                ra = 0;
            *o->retry_after = ra > 86400 ? 86400 : (long)ra;
        }
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

int httppost(const char *url, const struct httppost_opts *o, const char *data, size_t data_len,
             char **body, size_t *len, int *truncated, long *status, char *err, size_t errlen)
{
    CURL *c = curlso ? curlso->easy_init() : NULL;
    struct curl_slist *h = NULL;
    struct sink s = {.max = o->max_bytes, .keep_prefix = 1};
    CURLcode cc;
    int rc = -1;

    *body = NULL;
    *len = 0;
    *status = 0;
    *truncated = 0;
    if (c == NULL) {
        snprintf(err, errlen, curlso ? "out of memory" : "libcurl is not loaded");
        return -1;
    }
    h = curlso->slist_append(h, "Content-Type: application/json");
    h = curlso->slist_append(h, "Accept: application/json");
    /* No "Expect: 100-continue" round trip before the body. */
    h = curlso->slist_append(h, "Expect:");
    for (size_t i = 0; o->headers && o->headers[i]; i++)
        h = curlso->slist_append(h, o->headers[i]);
    curlso->easy_setopt(c, CURLOPT_URL, url);
    curlso->easy_setopt(c, CURLOPT_HTTPHEADER, h);
    curlso->easy_setopt(c, CURLOPT_POST, 1L);
    if (o->method)
        curlso->easy_setopt(c, CURLOPT_CUSTOMREQUEST, o->method);
    curlso->easy_setopt(c, CURLOPT_POSTFIELDS, data);
    curlso->easy_setopt(c, CURLOPT_POSTFIELDSIZE_LARGE, (curl_off_t)data_len);
    curlso->easy_setopt(c, CURLOPT_TIMEOUT, o->timeout_s > 0 ? o->timeout_s : 15L);
    curlso->easy_setopt(c, CURLOPT_CONNECTTIMEOUT, 10L);
    curlso->easy_setopt(c, CURLOPT_NOSIGNAL, 1L);
    curlso->easy_setopt(c, CURLOPT_WRITEFUNCTION, on_data);
    curlso->easy_setopt(c, CURLOPT_WRITEDATA, &s);
    curlso->easy_setopt(c, CURLOPT_USERAGENT, "gpuinv");
    curlso->easy_setopt(c, CURLOPT_PROTOCOLS_STR, "http,https");
    /* A redirect is answered by the receiver's code, not followed: a
     * signed POST is not re-sent elsewhere. */
    curlso->easy_setopt(c, CURLOPT_FOLLOWLOCATION, 0L);
    set_tls(c, o->ca_file, o->insecure);
    cc = curlso->easy_perform(c);
    if (cc != CURLE_OK) {
        snprintf(err, errlen, "%s", curlso->easy_strerror(cc));
    } else {
        curlso->easy_getinfo(c, CURLINFO_RESPONSE_CODE, status);
        if (o->retry_after) {
            curl_off_t ra = 0;
            if (curlso->easy_getinfo(c, CURLINFO_RETRY_AFTER, &ra) != CURLE_OK || ra < 0)
                ra = 0;
            *o->retry_after = ra > 86400 ? 86400 : (long)ra;
        }
        *body = s.p ? s.p : calloc(1, 1);
        *len = s.len;
        *truncated = s.too_large;
        s.p = NULL;
        rc = *body ? 0 : -1;
    }
    free(s.p);
    curlso->slist_free_all(h);
    curlso->easy_cleanup(c);
    return rc;
}
