/* Data sources: push sources (created with their pusher tokens) and pull
 * sources the server polls on their own schedule (Prometheus, a
 * dcgm-exporter, a Kubernetes API server). Secrets in a source's config
 * are write-only: replies show that they are set, never their value. */
#include "api/api.h"
#include "api/scope.h"
#include "collect/pull.h"
#include "core/status.h"
#include "core/util.h"
#include "http/server.h"
#include "store/store.h"

#include <stdio.h>
#include <stdlib.h>
#include <string.h>

static int64_t stale_before(struct req *r) { return gi_now() - server_freshness(r->srv); }

/* The shortest interval_s a pull source may have: 10 s, or 1..10 from
 * GPUINV_MIN_INTERVAL_S (documented in `gpuinv serve --help`, for tests
 * that watch several pulls happen). */
static int64_t min_interval(void)
{
    const char *v = getenv("GPUINV_MIN_INTERVAL_S");
    int64_t n;

    return v && gi_parse_int64(v, 1, 10, &n) == GI_OK ? n : 10;
}

/* A URL with its user information (stored before such URLs were refused)
 * masked; NULL when it has none. Caller owns the result. */
static json_t *url_masked(const char *url)
{
    const char *a = strstr(url, "://"), *at = NULL;
    char out[2100];

    if (a == NULL)
        return NULL;
    for (const char *p = a + 3; *p && *p != '/' && *p != '?' && *p != '#'; p++)
        if (*p == '@')
            at = p;
    if (at == NULL)
        return NULL;
    snprintf(out, sizeof out, "%.*s(redacted)%s", (int)(a + 3 - url), url, at);
    return json_string(out);
}

/* Replaces secret config values with "(set)" and masks credentials in a
 * URL. */
static void redact(json_t *src)
{
    json_t *cfg = json_object_get(src, "config");
    const char *key;
    json_t *v;

    json_object_foreach(cfg, key, v) {
        if (pull_config_secret(key) && !json_is_null(v))
            json_object_set_new(cfg, key, json_string("(set)"));
        else if (json_is_string(v) && strcmp(key, "url") == 0) {
            json_t *m = url_masked(json_string_value(v));
            if (m)
                json_object_set_new(cfg, key, m);
        }
    }
}

/* A config value, absent read as null. */
static const json_t *cfg_value(const json_t *cfg, const char *key)
{
    const json_t *v = json_object_get(cfg, key);
    return v ? v : json_null();
}

/* True when the patch gives a secret a new value ("(set)" keeps it). */
static bool secret_given(const json_t *patch, const char *key)
{
    const json_t *v = json_object_get(patch, key);
    return v && !(json_is_string(v) && strcmp(json_string_value(v), "(set)") == 0);
}

/* The config an update stores: the current config (borrowed) with the
 * patch (borrowed) applied. Secrets not mentioned, or given as "(set)"
 * (what replies show), keep their value, so clients need not resend what
 * they cannot read; but when the patch changes where secrets are sent
 * (pull_config_target) and does not give a secret again, that secret is
 * dropped, so a write-only secret never follows a new URL to another
 * server. A warning per dropped secret is appended to `warnings`. Caller
 * owns the result. */
static json_t *config_merge(const json_t *cur, const json_t *patch, json_t *warnings)
{
    json_t *merged = json_is_object(cur) ? json_deep_copy(cur) : json_object(), *v, *tmp;
    const char *key, *moved = NULL;

    json_object_foreach((json_t *)patch, key, v) {
        if (pull_config_target(key) && !json_equal(cfg_value(cur, key), v) && moved == NULL)
            moved = key;
        if (pull_config_secret(key) && !secret_given(patch, key))
            continue;
        json_object_set(merged, key, v);
    }
    if (moved == NULL)
        return merged;
    json_object_foreach_safe(merged, tmp, key, v) {
        char field[80], msg[160];
        if (!pull_config_secret(key) || json_is_null(v) || secret_given(patch, key))
            continue;
        snprintf(field, sizeof field, "config.%s", key);
        snprintf(msg, sizeof msg, "config.%s was cleared because config.%s changed; give it again",
                 key, moved);
        json_array_append_new(warnings, json_pack("{s:s, s:s}", "field", field, "message", msg));
        json_object_del(merged, key);
    }
    return merged;
}

void api_sources_list(struct req *r)
{
    json_t *items = NULL, *it;
    struct store_scope sc;
    size_t i;
    int st;

    who_scope(r, &sc);
    st = store_source_list(r->store, stale_before(r), &sc, &items);

    if (st != GI_OK) {
        reply_status(r, st, "sources");
        return;
    }
    json_array_foreach(items, i, it)
        redact(it);
    reply_list(r, items, (int64_t)json_array_size(items), 0);
}

void api_sources_get(struct req *r)
{
    json_t *out = NULL;
    int st;

    if (!who_may_see_or_reply(r, WHO_SOURCE, NULL, r->id))
        return;
    if ((st = store_source_get(r->store, r->id, stale_before(r), &out)) != GI_OK) {
        reply_status(r, st, "source");
        return;
    }
    redact(out);
    reply_json(r, 200, out);
}

/* Reads a source body; on create kind and name are required. Config is
 * validated for the kind (the stored kind on update). */
static bool source_body_or_reply(struct req *r, const json_t *body, const char *kind,
                                 struct store_source *in)
{
    static const char *const allowed[] = {"name",    "kind",       "config",  "team",       "env",
                                          "cluster", "interval_s", "enabled", "precedence", NULL};
    const json_t *cfg = json_object_get(body, "config"), *en = json_object_get(body, "enabled");
    const json_t *prec = json_object_get(body, "precedence");
    char field[64], msg[256];

    in->interval_s = -1;
    in->enabled = -1;
    if (!json_known_or_reply(r, body, allowed) ||
        !json_str_or_reply(r, body, "name", kind == NULL, 63, &in->name) ||
        !json_str_or_reply(r, body, "team", false, 128, &in->team) ||
        !json_str_or_reply(r, body, "env", false, 64, &in->env) ||
        !json_str_or_reply(r, body, "cluster", false, 128, &in->cluster) ||
        !json_int_or_reply(r, body, "interval_s", false, min_interval(), 86400, &in->interval_s))
        return false;
    /* Of the sources reporting one host or GPU, the highest precedence owns
     * it (ties: the first to report). */
    if (prec && !json_is_null(prec)) {
        if (!json_int_or_reply(r, body, "precedence", true, -1000, 1000, &in->precedence))
            return false;
        in->has_precedence = true;
    }
    if (kind == NULL) {
        if (!json_str_or_reply(r, body, "kind", true, 32, &in->kind))
            return false;
        if (!pull_kind_known(in->kind)) {
            reply_error(r, 400, "validation_failed", "kind",
                        "kind must be one of the kinds GET /api/v1/source-kinds lists");
            return false;
        }
        kind = in->kind;
    } else if (json_object_get(body, "kind") &&
               !json_equal(json_object_get(body, "kind"), json_string(kind))) {
        reply_error(r, 400, "validation_failed", "kind", "the kind of a source cannot change");
        return false;
    }
    if (en && !json_is_null(en)) {
        if (!json_is_boolean(en)) {
            reply_error(r, 400, "validation_failed", "enabled", "enabled must be true or false");
            return false;
        }
        in->enabled = json_is_true(en);
    }
    if (cfg || in->kind) {
        if (pull_config_check(kind, cfg, field, sizeof field, msg, sizeof msg) != 0) {
            reply_error(r, 400, "validation_failed", field, "%s", msg);
            return false;
        }
        in->config = cfg;
    }
    return true;
}

void api_sources_create(struct req *r)
{
    json_t *body = NULL, *out = NULL;
    struct store_source in = {0};
    int st;

    if (!req_json_body_or_reply(r, &body))
        return;
    if (!source_body_or_reply(r, body, NULL, &in))
        goto cleanup;
    st = store_source_create(r->store, r->who.name, &in, &out);
    if (st == GI_CONFLICT) {
        reply_error(r, 409, "conflict", "name", "a source named '%s' already exists", in.name);
    } else if (st != GI_OK) {
        reply_status(r, st, "source");
    } else {
        redact(out);
        reply_json(r, 201, out);
    }
cleanup:
    json_decref(body);
}

void api_sources_update(struct req *r)
{
    json_t *body = NULL, *cur = NULL, *out = NULL, *merged = NULL, *warnings = json_array();
    struct store_source in = {0};
    const char *kind;
    int st;

    if (!req_json_body_or_reply(r, &body))
        return;
    if ((st = store_source_get(r->store, r->id, 0, &cur)) != GI_OK) {
        reply_status(r, st, "source");
        goto cleanup;
    }
    kind = json_string_value(json_object_get(cur, "kind"));
    if (strcmp(kind, "push") == 0 && json_object_get(body, "config")) {
        reply_error(r, 400, "validation_failed", "config", "a push source has no config");
        goto cleanup;
    }
    if (json_is_object(json_object_get(body, "config"))) {
        merged =
            config_merge(json_object_get(cur, "config"), json_object_get(body, "config"), warnings);
        json_object_set(body, "config", merged);
    }
    if (!source_body_or_reply(r, body, kind, &in))
        goto cleanup;
    if (strcmp(kind, "push") == 0)
        in.config = NULL;
    st = store_source_update(r->store, r->who.name, r->id, &in, &out);
    if (st == GI_CONFLICT) {
        reply_error(r, 409, "conflict", "name", "a source with that name already exists");
    } else if (st != GI_OK) {
        reply_status(r, st, "source");
    } else {
        redact(out);
        if (json_array_size(warnings) > 0)
            json_object_set(out, "warnings", warnings);
        reply_json(r, 200, out);
    }
cleanup:
    json_decref(warnings);
    json_decref(merged);
    json_decref(cur);
    json_decref(body);
}

void api_sources_delete(struct req *r)
{
    int st = store_source_delete(r->store, r->who.name, r->id);

    if (st != GI_OK)
        reply_status(r, st, "source");
    else
        reply_no_content(r);
}

void api_sources_run(struct req *r)
{
    json_t *src = NULL, *out = NULL;
    struct pull_result res;
    int st;

    if (!who_may_see_or_reply(r, WHO_SOURCE, NULL, r->id))
        return;
    if ((st = store_source_get(r->store, r->id, 0, &src)) != GI_OK) {
        reply_status(r, st, "source");
        return;
    }
    if (!pull_kind_known(json_string_value(json_object_get(src, "kind")))) {
        reply_error(r, 409, "conflict", "kind",
                    "a %s source is not pulled; its reporters send data themselves",
                    json_string_value(json_object_get(src, "kind")));
        json_decref(src);
        return;
    }
    pull_run_source(r->store, src, &res);
    json_decref(src);
    if ((st = store_source_get(r->store, r->id, stale_before(r), &out)) != GI_OK) {
        reply_status(r, st, "source");
        return;
    }
    redact(out);
    json_object_set_new(out, "run",
                        json_pack("{s:b, s:s?, s:I, s:I}", "ok", res.ok, "error",
                                  res.ok ? NULL : res.error, "gpus", (json_int_t)res.gpus, "hosts",
                                  (json_int_t)res.hosts));
    if (res.assets)
        json_object_set_new(json_object_get(out, "run"), "assets",
                            json_pack("{s:I, s:I, s:I, s:I}", "created", (json_int_t)res.created,
                                      "updated", (json_int_t)res.updated, "unchanged",
                                      (json_int_t)res.unchanged, "warnings",
                                      (json_int_t)res.warnings));
    reply_json(r, 200, out);
}

/* The reply of a dry pull: {"ok", "found": {...}, "error", "warnings"}. */
static json_t *test_reply(const struct pull_result *res, json_t *warnings)
{
    json_t *found =
        json_pack("{s:I, s:I}", "hosts", (json_int_t)res->hosts, "gpus", (json_int_t)res->gpus);

    if (res->instances >= 0)
        json_object_set_new(found, "instances", json_integer(res->instances));
    if (res->jobs >= 0)
        json_object_set_new(found, "jobs", json_integer(res->jobs));
    if (res->pods >= 0)
        json_object_set_new(found, "pods", json_integer(res->pods));
    if (res->assets)
        json_object_set_new(found, "assets",
                            json_pack("{s:I, s:I, s:I}", "created", (json_int_t)res->created,
                                      "updated", (json_int_t)res->updated, "unchanged",
                                      (json_int_t)res->unchanged));
    if (res->ok && res->warnings > 0) {
        char msg[300];
        if (res->warnings > 1)
            snprintf(msg, sizeof msg, "%s (and %lld more)", res->warning,
                     (long long)res->warnings - 1);
        else
            snprintf(msg, sizeof msg, "%s", res->warning);
        json_array_append_new(
            warnings, json_pack("{s:s, s:I}", "message", msg, "count", (json_int_t)res->warnings));
    }
    return json_pack("{s:b, s:o, s:s?, s:O}", "ok", res->ok, "found", found, "error",
                     res->ok ? NULL : res->error, "warnings", warnings);
}

/* A test run's overall limit unless ?deadline_s= says otherwise, and the
 * most it may ask. */
#define TEST_DEADLINE_S 60
#define TEST_DEADLINE_MAX_S 600

/* Runs a dry pull of a source body (kind, name, cluster, config), the
 * whole of it bounded by ?deadline_s=, and replies with what it found. */
static void test_and_reply(struct req *r, const char *kind, const char *name, const char *cluster,
                           const json_t *cfg, json_t *warnings)
{
    struct pull_result res;
    int64_t deadline_s = TEST_DEADLINE_S;
    json_t *src;

    if (!req_param_int_or_reply(r, "deadline_s", 1, TEST_DEADLINE_MAX_S, &deadline_s))
        return;
    src = json_pack("{s:s, s:s, s:s?, s:O, s:I}", "kind", kind, "name", name, "cluster", cluster,
                    "config", cfg, "id", (json_int_t)0);
    pull_test_source(r->store, src, deadline_s, &res);
    json_decref(src);
    reply_json(r, 200, test_reply(&res, warnings));
}

void api_sources_test(struct req *r)
{
    json_t *body = NULL, *warnings = json_array();
    struct store_source in = {0};

    if (!req_json_body_or_reply(r, &body))
        goto cleanup;
    /* Testing needs no name yet: the form tests before it is complete. */
    if (json_is_object(body) && json_object_get(body, "name") == NULL)
        json_object_set_new(body, "name", json_string("test"));
    if (!source_body_or_reply(r, body, NULL, &in))
        goto cleanup;
    test_and_reply(r, in.kind, in.name, in.cluster, in.config, warnings);
cleanup:
    json_decref(warnings);
    json_decref(body);
}

void api_sources_test_saved(struct req *r)
{
    json_t *body = NULL, *cur = NULL, *merged = NULL, *warnings = json_array();
    const char *kind;
    int st;

    if (r->body_len > 0 && !req_json_body_or_reply(r, &body))
        goto cleanup;
    if ((st = store_source_get(r->store, r->id, 0, &cur)) != GI_OK) {
        reply_status(r, st, "source");
        goto cleanup;
    }
    kind = json_string_value(json_object_get(cur, "kind"));
    if (!pull_kind_known(kind)) {
        reply_error(r, 409, "conflict", "kind",
                    "a %s source is not pulled; its reporters send data themselves", kind);
        goto cleanup;
    }
    /* The body, if any, is a change to try as PATCH takes it; secrets not
     * given again are kept unless the change moves where they go. */
    if (body) {
        struct store_source in = {0};
        const json_t *patch = json_object_get(body, "config");
        merged =
            config_merge(json_object_get(cur, "config"),
                         json_is_object(patch) ? patch : json_object_get(cur, "config"), warnings);
        json_object_set(body, "config", merged);
        if (!source_body_or_reply(r, body, kind, &in))
            goto cleanup;
        test_and_reply(r, kind, in.name ? in.name : json_string_value(json_object_get(cur, "name")),
                       in.cluster ? in.cluster : json_string_value(json_object_get(cur, "cluster")),
                       merged, warnings);
    } else {
        test_and_reply(r, kind, json_string_value(json_object_get(cur, "name")),
                       json_string_value(json_object_get(cur, "cluster")),
                       json_object_get(cur, "config"), warnings);
    }
cleanup:
    json_decref(warnings);
    json_decref(merged);
    json_decref(cur);
    json_decref(body);
}
