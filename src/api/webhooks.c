/* Outbound webhooks (admin): create, list, read, change, delete, send a
 * test, the delivery log and its retries. secret and auth are
 * write-only: documents say "secret_set" and "auth_set". */
#include "api/api.h"
#include "api/scope.h"
#include "core/hookbody.h"
#include "core/status.h"
#include "store/store.h"

#include <ctype.h>
#include <stdio.h>
#include <string.h>

static const char *const hook_fields[] = {"name",   "url",    "format",  "secret", "auth",
                                          "events", "config", "enabled", NULL};

/* A URL the sender may POST to: http or https, a host, no spaces. */
static bool url_or_reply(struct req *r, const char *url)
{
    const char *host = NULL;

    if (strncmp(url, "http://", 7) == 0)
        host = url + 7;
    else if (strncmp(url, "https://", 8) == 0)
        host = url + 8;
    if (!host || *host == '\0' || *host == '/' || *host == ':' || strpbrk(url, " \t<>\"\\")) {
        reply_error(r, 400, "validation_failed", "url",
                    "url must be an http:// or https:// URL with a host");
        return false;
    }
    return true;
}

/* events: "*" or a list of event kinds ("ticket.opened", ...), stored as
 * one comma list in buf. */
static bool events_or_reply(struct req *r, const json_t *v, char *buf, size_t len)
{
    const json_t *e;
    size_t i, n = 0;

    buf[0] = '\0';
    if (json_is_string(v) && strcmp(json_string_value(v), "*") == 0) {
        snprintf(buf, len, "*");
        return true;
    }
    if (!json_is_array(v) || json_array_size(v) == 0 || json_array_size(v) > 32)
        goto bad;
    json_array_foreach(v, i, e) {
        const char *s = json_string_value(e);
        size_t sl = s ? strlen(s) : 0;
        if (sl == 0 || sl > 64 || n + sl + 2 > len)
            goto bad;
        for (size_t k = 0; k < sl; k++)
            if (!islower((unsigned char)s[k]) && !isdigit((unsigned char)s[k]) &&
                !strchr("._*-", s[k]))
                goto bad;
        n += (size_t)snprintf(buf + n, len - n, "%s%s", n ? "," : "", s);
    }
    return true;
bad:
    reply_error(r, 400, "validation_failed", "events",
                "events must be \"*\" or a list of up to 32 event kinds such as "
                "\"ticket.opened\" (lower-case letters, digits, '.', '_', '-')");
    return false;
}

/* Reads a webhook body; name, url and format required when creating.
 * `old` (PATCH) gives the format and config the change is checked with. */
static bool hook_body_or_reply(struct req *r, const json_t *body, const json_t *old,
                               struct store_webhook *w, char *events, size_t elen)
{
    const json_t *en = json_object_get(body, "enabled"), *ev = json_object_get(body, "events");
    const json_t *config;
    const char *format;
    char err[200];
    bool create = old == NULL;

    memset(w, 0, sizeof *w);
    w->enabled = -1;
    if (!json_known_or_reply(r, body, hook_fields) ||
        !json_str_or_reply(r, body, "name", create, 128, &w->name) ||
        !json_str_or_reply(r, body, "url", create, 2048, &w->url) ||
        !json_str_or_reply(r, body, "format", false, 32, &w->format) ||
        !json_str_or_reply(r, body, "secret", false, 256, &w->secret) ||
        !json_str_or_reply(r, body, "auth", false, 4096, &w->auth))
        return false;
    if (w->name && *w->name == '\0') {
        reply_error(r, 400, "validation_failed", "name", "name must not be empty");
        return false;
    }
    if (w->url && !url_or_reply(r, w->url))
        return false;
    if (create && !w->format)
        w->format = "generic";
    if (w->format && !hookbody_format_ok(w->format)) {
        reply_error(r, 400, "validation_failed", "format",
                    "format must be generic, jira, jira_v2 or servicenow");
        return false;
    }
    if (w->auth && strpbrk(w->auth, "\r\n")) {
        reply_error(r, 400, "validation_failed", "auth", "auth must be one header value");
        return false;
    }
    if (en && !json_is_boolean(en)) {
        reply_error(r, 400, "validation_failed", "enabled", "enabled must be true or false");
        return false;
    }
    if (en)
        w->enabled = json_is_true(en) ? 1 : 0;
    if (ev) {
        if (!events_or_reply(r, ev, events, elen))
            return false;
        w->events = events;
    }
    config = json_object_get(body, "config");
    w->config = config;
    format = w->format ? w->format : json_string_value(json_object_get(old, "format"));
    if (!config && old)
        config = json_object_get(old, "config");
    {
        json_t *none = json_object();
        bool ok = hookbody_config_ok(format ? format : "generic", config ? config : none, err,
                                     sizeof err);
        json_decref(none);
        if (!ok) {
            reply_error(r, 400, "validation_failed", "config", "%s", err);
            return false;
        }
    }
    return true;
}

void api_webhooks_create(struct req *r)
{
    json_t *body = NULL, *out = NULL;
    struct store_webhook w;
    char events[2400];
    int st;

    if (!req_json_body_or_reply(r, &body))
        return;
    if (!hook_body_or_reply(r, body, NULL, &w, events, sizeof events))
        goto cleanup;
    st = store_webhook_create(r->store, r->who.name, &w, &out);
    if (st == GI_CONFLICT)
        reply_error(r, 409, "conflict", "name", "a webhook named '%s' already exists", w.name);
    else if (st != GI_OK)
        reply_status(r, st, "webhook");
    else
        reply_json(r, 201, out);
cleanup:
    json_decref(body);
}

void api_webhooks_list(struct req *r)
{
    static const char *const sortable[] = {NULL};
    struct store_page pg;
    json_t *items = NULL;
    int64_t total = 0;
    int st;

    if (!req_page_or_reply(r, sortable, &pg))
        return;
    if ((st = store_webhook_list(r->store, &pg, &items, &total)) != GI_OK) {
        reply_status(r, st, "webhooks");
        return;
    }
    reply_list(r, items, total, pg.offset);
}

void api_webhooks_get(struct req *r)
{
    json_t *out = NULL;
    int st = store_webhook_get(r->store, r->id, &out);

    if (st != GI_OK)
        reply_status(r, st, "webhook");
    else
        reply_json(r, 200, out);
}

void api_webhooks_update(struct req *r)
{
    json_t *body = NULL, *old = NULL, *out = NULL;
    struct store_webhook w;
    char events[2400];
    int st;

    if (!req_json_body_or_reply(r, &body))
        return;
    if ((st = store_webhook_get(r->store, r->id, &old)) != GI_OK) {
        reply_status(r, st, "webhook");
        goto cleanup;
    }
    if (!hook_body_or_reply(r, body, old, &w, events, sizeof events))
        goto cleanup;
    st = store_webhook_update(r->store, r->who.name, r->id, &w, &out);
    if (st == GI_CONFLICT)
        reply_error(r, 409, "conflict", "name", "a webhook named '%s' already exists", w.name);
    else if (st != GI_OK)
        reply_status(r, st, "webhook");
    else
        reply_json(r, 200, out);
cleanup:
    json_decref(old);
    json_decref(body);
}

void api_webhooks_delete(struct req *r)
{
    int st = store_webhook_delete(r->store, r->who.name, r->id);

    if (st != GI_OK)
        reply_status(r, st, "webhook");
    else
        reply_no_content(r);
}

void api_webhooks_test(struct req *r)
{
    json_t *out = NULL;
    int st = store_webhook_test(r->store, r->who.name, r->id, &out);

    if (st == GI_CONFLICT)
        reply_error(r, 409, "conflict", NULL, "the webhook is disabled; enable it first");
    else if (st != GI_OK)
        reply_status(r, st, "webhook");
    else
        reply_json(r, 202, out);
}

void api_webhooks_deliveries(struct req *r)
{
    static const char *const sortable[] = {NULL};
    struct store_page pg;
    json_t *items = NULL;
    int64_t total = 0;
    struct store_scope sc;
    int st;

    if (!req_page_or_reply(r, sortable, &pg))
        return;
    who_scope(r, &sc);
    if ((st = store_delivery_list(r->store, r->id, &sc, &pg, &items, &total)) != GI_OK) {
        reply_status(r, st, "webhook");
        return;
    }
    reply_list(r, items, total, pg.offset);
}

void api_webhook_deliveries_retry(struct req *r)
{
    json_t *out = NULL;
    int st = store_delivery_retry(r->store, r->who.name, r->id, &out);

    if (st == GI_CONFLICT)
        reply_error(r, 409, "conflict", NULL, "only a failed or dead delivery can be retried");
    else if (st != GI_OK)
        reply_status(r, st, "delivery");
    else
        reply_json(r, 202, out);
}
