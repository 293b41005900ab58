/* Shared parts of the asset manager pulls; see pull_assets.h. */
#include "collect/pull_assets.h"
#include "collect/curlso.h"
#include "collect/httpget.h"
#include "collect/pull.h"
#include "core/log.h"
#include "core/status.h"
#include "core/util.h"
#include "store/store.h"

#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <strings.h>
#include <time.h>

/* The server's explanation in an error answer: detail (NetBox, Django
 * REST framework), message or messages (Snipe-IT, Laravel). */
static void explanation(const char *body, size_t len, char *out, size_t outlen)
{
    json_t *doc = body ? json_loadb(body, len, 0, NULL) : NULL;
    const json_t *m = json_object_get(doc, "detail");
    const char *s;

    out[0] = '\0';
    if (!json_is_string(m))
        m = json_object_get(doc, "message");
    if (!json_is_string(m))
        m = json_object_get(doc, "messages");
    s = json_string_value(m);
    if (s && gi_text_ok(s))
        snprintf(out, outlen, ": %.200s", s);
    json_decref(doc);
}

int assetpull_get(const struct assetpull *p, const char *url, char **body, size_t *len, char *err,
                  size_t errlen)
{
    struct httpget_opts o;
    long status = 0, retry_after = 0;
    char why[256];

    for (int attempt = 0;; attempt++) {
        pull_http_opts(p->cfg, &o, ASSETPULL_MAX_BODY);
        o.bearer = NULL;
        o.authorization = p->auth;
        o.retry_after = &retry_after;
        if (httpget(url, &o, body, len, &status, err, errlen) != 0)
            return -1;
        if (status >= 200 && status <= 299)
            return 0;
        explanation(*body, *len, why, sizeof why);
        free(*body);
        *body = NULL;
        if (status == 429 && retry_after <= ASSETPULL_MAX_WAIT_S &&
            attempt < ASSETPULL_MAX_RETRIES) {
            struct timespec ts = {.tv_sec = retry_after > 0 ? retry_after : 1};
            gi_warn("%s rate limited the pull; trying again in %ld s", p->system, (long)ts.tv_sec);
            nanosleep(&ts, NULL);
            continue;
        }
        if (status == 429)
            snprintf(err, errlen, "%s answered HTTP 429 (rate limited; retry after %ld s)%s",
                     p->system, retry_after, why);
        else if (status == 401 || status == 403)
            snprintf(err, errlen, "%s answered HTTP %ld (the token was refused)%s", p->system,
                     status, why);
        else
            snprintf(err, errlen, "%s answered HTTP %ld%s", p->system, status, why);
        return -1;
    }
}

/* The length of url's "scheme://authority" prefix, 0 when none. */
static size_t origin_len(const char *url)
{
    const char *a = strstr(url, "://");

    if (a == NULL)
        return 0;
    a += 3;
    return (size_t)(a - url) + strcspn(a, "/?#");
}

bool assetpull_same_origin(const char *base, const char *url)
{
    size_t n = origin_len(base);

    return n > 0 && origin_len(url) == n && strncasecmp(base, url, n) == 0;
}

bool assetpull_param(char *q, size_t qlen, const char *name, const char *value)
{
    char *e;
    size_t n = strlen(q);
    int w;

    if (value == NULL || *value == '\0')
        return true;
    if ((e = curlso->easy_escape(NULL, value, 0)) == NULL)
        return false;
    w = snprintf(q + n, qlen - n, "&%s=%s", name, e);
    curlso->free(e);
    return w > 0 && (size_t)w < qlen - n;
}

/* location.datacenter by name, else by the record's site_slug, else
 * dropped with a warning. */
static void resolve_datacenter(struct store *st, json_t *rec, size_t index, json_t *warnings)
{
    json_t *loc = json_object_get(rec, "location");
    const char *name = json_string_value(json_object_get(loc, "datacenter"));
    const char *slug = json_string_value(json_object_get(rec, "site_slug"));
    int64_t id;

    if (name && store_dc_id_by_name(st, name, &id) != GI_OK) {
        if (slug && store_dc_id_by_name(st, slug, &id) == GI_OK) {
            json_object_set_new(loc, "datacenter", json_string(slug));
        } else {
            json_object_del(loc, "datacenter");
            json_array_append_new(warnings, json_pack("{s:I, s:s, s:s}", "index", (json_int_t)index,
                                                      "field", "location.datacenter", "error",
                                                      "no data center has this name or slug"));
        }
    }
    json_object_del(rec, "site_slug");
}

/* parent_source_key → parent_tag (or parent_serial) of that record. */
static void resolve_parent(json_t *rec, json_t *by_key)
{
    const char *pk = json_string_value(json_object_get(rec, "parent_source_key"));
    json_t *parent = pk ? json_object_get(by_key, pk) : NULL;

    if (json_object_get(parent, "tag"))
        json_object_set(rec, "parent_tag", json_object_get(parent, "tag"));
    else if (json_object_get(parent, "serial"))
        json_object_set(rec, "parent_serial", json_object_get(parent, "serial"));
    json_object_del(rec, "parent_source_key");
}

/* "netbox:device:102: position: must be ..." for the first warning. */
static void first_warning(const json_t *records, const json_t *warnings, const json_t *errors,
                          char *out, size_t outlen)
{
    const json_t *w =
        json_array_size(warnings) ? json_array_get(warnings, 0) : json_array_get(errors, 0);
    const json_t *rec =
        json_array_get(records, (size_t)json_integer_value(json_object_get(w, "index")));
    const char *key = json_string_value(json_object_get(rec, "source_key"));

    snprintf(out, outlen, "%.80s: %.60s: %.200s", key ? key : "a record",
             json_string_value(json_object_get(w, "field")),
             json_string_value(json_object_get(w, "error")));
}

int assetpull_store(struct store *st, int64_t source_id, const char *source, json_t *records,
                    json_t *warnings, struct pull_result *res)
{
    char msg[400];

    json_t *by_key = json_object(), *report = NULL, *rec;
    size_t i;
    int rc;

    json_array_foreach(records, i, rec) {
        const char *k = json_string_value(json_object_get(rec, "source_key"));
        if (k)
            json_object_set(by_key, k, rec);
        resolve_datacenter(st, rec, i, warnings);
        if (json_is_string(json_object_get(rec, "kind")) &&
            strcmp(json_string_value(json_object_get(rec, "kind")), "gpu") == 0)
            res->gpus++;
    }
    json_array_foreach(records, i, rec)
        resolve_parent(rec, by_key);
    json_decref(by_key);
    /* A dry pull asks the store what it would do and writes nothing. */
    rc = store_asset_ingest(st, source, records, res->dry, &report);
    if (rc != GI_OK) {
        snprintf(res->error, sizeof res->error, "storing the pulled assets failed: %s",
                 gi_status_name(rc));
        json_decref(report);
        return -1;
    }
    res->assets = true;
    res->hosts = (int64_t)json_array_size(records);
    res->created = json_integer_value(json_object_get(report, "created"));
    res->updated = json_integer_value(json_object_get(report, "updated"));
    res->unchanged = json_integer_value(json_object_get(report, "unchanged"));
    res->warnings =
        (int64_t)(json_array_size(warnings) + json_array_size(json_object_get(report, "errors")));
    if (res->warnings > 0) {
        first_warning(records, warnings, json_object_get(report, "errors"), msg, sizeof msg);
        gi_strlcpy(res->warning, msg, sizeof res->warning);
    }
    if (res->warnings > 0 && !res->dry) {
        if (store_source_warn(st, source_id, res->warnings, msg) != GI_OK)
            gi_warn("could not count the dropped fields of source %lld", (long long)source_id);
    }
    json_decref(report);
    return 0;
}
