/* Push API client; see push.h. */
#include "collect/push.h"
#include "collect/curlso.h"
#include "core/log.h"

#include <jansson.h>
#include <stdio.h>
#include <stdlib.h>
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

/* The first REPLY_MAX bytes of a reply are kept: enough for an error
 * and a full list of warnings. */
#define REPLY_MAX (64u * 1024u)

struct reply {
    char *buf; /* REPLY_MAX + 1 bytes */
    size_t len;
};

/* Keeps the first bytes of the reply body. */
static size_t on_body(char *data, size_t size, size_t n, void *ctx)
{
    struct reply *r = ctx;
    size_t total = size * n, room = REPLY_MAX - r->len;
    size_t take = total < room ? total : room;

    memcpy(r->buf + r->len, data, take);
    r->len += take;
    r->buf[r->len] = '\0';
    return total;
}

/* Writes the server's reason for refusing a batch into err: the error
 * message of the reply body (and its field), else the body's start. */
static void refusal(const struct reply *rep, long status, char *err, size_t errlen)
{
    json_t *j = json_loadb(rep->buf, rep->len, 0, NULL);
    const json_t *e = json_object_get(j, "error");
    const char *msg = json_string_value(json_object_get(e, "message"));
    const char *field = json_string_value(json_object_get(e, "field"));

    if (msg && field && *field)
        snprintf(err, errlen, "HTTP %ld: %s: %s", status, field, msg);
    else if (msg)
        snprintf(err, errlen, "HTTP %ld: %s", status, msg);
    else
        snprintf(err, errlen, "HTTP %ld: %.300s", status, rep->buf);
    json_decref(j);
}

/* Logs what the server dropped from an accepted batch. */
static void log_warnings(const struct reply *rep)
{
    json_t *j = json_loadb(rep->buf, rep->len, 0, NULL);
    const json_t *list = json_object_get(j, "warnings"), *w;
    json_int_t total = json_integer_value(json_object_get(j, "warnings_total"));
    size_t i;

    if (total > 0) {
        gi_warn("server stored the batch but dropped %lld field(s) or record(s) it could not "
                "accept:",
                (long long)total);
        json_array_foreach(list, i, w) {
            if (i == 10) {
                gi_warn("  … and %lld more", (long long)total - 10);
                break;
            }
            const char *m = json_string_value(json_object_get(w, "message"));
            gi_warn("  %s", m ? m : "(no message)");
        }
    }
    json_decref(j);
}

enum push_result push_send(const char *server, const char *token, const char *body, size_t len,
                           long timeout_s, char *err, size_t errlen)
{
    CURL *c = curlso ? curlso->easy_init() : NULL;
    struct curl_slist *h = NULL;
    struct reply rep = {.buf = malloc(REPLY_MAX + 1), .len = 0};
    char url[1024], auth[512];
    long status = 0;
    CURLcode cc;
    enum push_result res;

    if (c == NULL || rep.buf == NULL) {
        snprintf(err, errlen, curlso ? "out of memory" : "libcurl is not loaded");
        if (c)
            curlso->easy_cleanup(c);
        free(rep.buf);
        return PUSH_RETRY;
    }
    rep.buf[0] = '\0';
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
            log_warnings(&rep);
        } else {
            refusal(&rep, status, err, errlen);
            res = status == 408 || status == 429 || status >= 500 ? PUSH_RETRY
                  : status == 401 || status == 403                ? PUSH_DENIED
                                                                  : PUSH_REJECTED;
        }
    }
    curlso->slist_free_all(h);
    curlso->easy_cleanup(c);
    free(rep.buf);
    return res;
}
