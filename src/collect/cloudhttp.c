/* HTTP for the cloud pull sources; see cloudhttp.h. */
#include "collect/cloudhttp.h"
#include "collect/deadline.h"
#include "collect/httpget.h"
#include "collect/pull.h"
#include "core/util.h"

#include <stdio.h>

#include <stdlib.h>
#include <string.h>
#include <time.h>

int cloudhttp_get(const char *url, const struct httpget_opts *o, char **body, size_t *len,
                  long *status, char *err, size_t errlen)
{
    struct httpget_opts oo = *o;
    long ra = 0, backoff = 1;
    int rc = -1;

    oo.retry_after = &ra;
    for (int i = 0; i < CLOUDHTTP_TRIES; i++) {
        struct timespec ts = {0, 0};
        rc = httpget(url, &oo, body, len, status, err, errlen);
        if (rc != 0 || (*status != 429 && *status != 503) || i + 1 == CLOUDHTTP_TRIES)
            break;
        ts.tv_sec = ra > 0 ? ra : backoff;
        if (ts.tv_sec > CLOUDHTTP_MAX_WAIT_S)
            ts.tv_sec = CLOUDHTTP_MAX_WAIT_S;
        /* Under a test run's overall limit: no wait past it. */
        if (pull_deadline_clip_ms((long)ts.tv_sec * 1000L) < (long)ts.tv_sec * 1000L)
            break;
        backoff *= 2;
        free(*body);
        *body = NULL;
        while (nanosleep(&ts, &ts) != 0)
            ;
    }
    return rc;
}

bool cloudhttp_escape(const char *s, char *out, size_t cap)
{
    static const char hex[] = "0123456789ABCDEF";
    size_t n = 0;

    for (; *s; s++) {
        unsigned char c = (unsigned char)*s;
        bool plain = (c >= 'A' && c <= 'Z') || (c >= 'a' && c <= 'z') || (c >= '0' && c <= '9') ||
                     c == '-' || c == '.' || c == '_' || c == '~';
        if (n + (plain ? 1 : 3) >= cap)
            return false;
        if (plain) {
            out[n++] = (char)c;
        } else {
            out[n++] = '%';
            out[n++] = hex[c >> 4];
            out[n++] = hex[c & 15];
        }
    }
    if (n >= cap)
        return false;
    out[n] = '\0';
    return true;
}

bool cloudhttp_form_add(char *buf, size_t cap, const char *key, const char *value)
{
    size_t n0 = strlen(buf), n = n0, k = strlen(key);

    if (n + 1 + k + 1 >= cap)
        return false;
    if (n)
        buf[n++] = '&';
    memcpy(buf + n, key, k);
    n += k;
    buf[n++] = '=';
    if (!cloudhttp_escape(value, buf + n, cap - n)) {
        buf[n0] = '\0';
        return false;
    }
    return true;
}

bool cloudhttp_same_origin(const char *url, const char *base)
{
    const char *a = strstr(base, "://");
    size_t n;

    if (a == NULL)
        return false;
    n = (size_t)(a - base) + 3;
    n += strcspn(base + n, "/?#");
    return strncmp(url, base, n) == 0 && strchr("/?#", url[n]) != NULL;
}

int cloudhttp_token(const json_t *cfg, const char *url, const char *form,
                    cloudhttp_errmsg_fn errmsg, const struct cloudhttp_token_words *w, char *token,
                    size_t tlen, char *err, size_t errlen)
{
    struct httpget_opts o;
    char why[400], *body = NULL;
    json_t *ans = NULL;
    size_t len = 0;
    long status = 0;
    int rc = -1;

    pull_http_opts(cfg, &o, 1u << 20);
    o.bearer = NULL;
    o.post_form = form;
    if (cloudhttp_get(url, &o, &body, &len, &status, why, sizeof why) != 0) {
        snprintf(err, errlen, "%s: %s", w->where, why);
        goto cleanup;
    }
    if (status < 200 || status > 299) {
        errmsg(body, len, why, sizeof why);
        snprintf(err, errlen, "%s refused %s (HTTP %ld%s%s); %s", w->who, w->what, status,
                 why[0] ? ": " : "", why, w->hint);
        goto cleanup;
    }
    ans = json_loadb(body, len, 0, NULL);
    if (!json_is_string(json_object_get(ans, "access_token")) ||
        !gi_strlcpy(token, json_string_value(json_object_get(ans, "access_token")), tlen) ||
        !gi_text_ok(token) || strpbrk(token, "\r\n")) {
        snprintf(err, errlen, "%s answered without a usable access_token", w->who);
        goto cleanup;
    }
    rc = 0;
cleanup:
    json_decref(ans);
    free(body);
    return rc;
}

void cloudhttp_base_url(const char *v, const char *def, char *out, size_t len)
{
    size_t n;

    gi_strlcpy(out, v ? v : def, len);
    n = strlen(out);
    if (n > 0 && out[n - 1] == '/')
        out[n - 1] = '\0';
}
