/* Push API client; see push.h. */
#include "collect/push.h"

#include <curl/curl.h>
#include <stdio.h>
#include <string.h>

int push_global_init(void) { return curl_global_init(CURL_GLOBAL_DEFAULT) == CURLE_OK ? 0 : -1; }

void push_global_cleanup(void) { curl_global_cleanup(); }

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
    CURL *c = curl_easy_init();
    struct curl_slist *h = NULL;
    struct reply rep = {.len = 0};
    char url[1024], auth[512];
    long status = 0;
    CURLcode cc;
    enum push_result res;

    if (c == NULL) {
        snprintf(err, errlen, "out of memory");
        return PUSH_RETRY;
    }
    snprintf(url, sizeof url, "%s%sapi/v1/ingest", server,
             server[0] && server[strlen(server) - 1] == '/' ? "" : "/");
    snprintf(auth, sizeof auth, "Authorization: Bearer %s", token);
    h = curl_slist_append(h, "Content-Type: application/json");
    h = curl_slist_append(h, auth);
    h = curl_slist_append(h, "Expect:");
    curl_easy_setopt(c, CURLOPT_URL, url);
    curl_easy_setopt(c, CURLOPT_HTTPHEADER, h);
    curl_easy_setopt(c, CURLOPT_POSTFIELDS, body);
    curl_easy_setopt(c, CURLOPT_POSTFIELDSIZE_LARGE, (curl_off_t)len);
    curl_easy_setopt(c, CURLOPT_TIMEOUT, timeout_s);
    curl_easy_setopt(c, CURLOPT_CONNECTTIMEOUT, timeout_s < 10 ? timeout_s : 10L);
    curl_easy_setopt(c, CURLOPT_NOSIGNAL, 1L);
    curl_easy_setopt(c, CURLOPT_WRITEFUNCTION, on_body);
    curl_easy_setopt(c, CURLOPT_WRITEDATA, &rep);
    curl_easy_setopt(c, CURLOPT_USERAGENT, "gpuinv-agent");
    curl_easy_setopt(c, CURLOPT_PROTOCOLS_STR, "http,https");
    cc = curl_easy_perform(c);
    if (cc != CURLE_OK) {
        snprintf(err, errlen, "%s", curl_easy_strerror(cc));
        res = PUSH_RETRY;
    } else {
        curl_easy_getinfo(c, CURLINFO_RESPONSE_CODE, &status);
        if (status >= 200 && status < 300) {
            res = PUSH_OK;
        } else {
            snprintf(err, errlen, "HTTP %ld: %.300s", status, rep.buf);
            res = status == 408 || status == 429 || status >= 500 ? PUSH_RETRY : PUSH_REJECTED;
        }
    }
    curl_slist_free_all(h);
    curl_easy_cleanup(c);
    return res;
}
