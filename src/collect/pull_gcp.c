/* Pulling GCP Compute Engine instances: instances.aggregatedList of the
 * configured project, page by page (nextPageToken), with an access token
 * given in the config or obtained for a service-account key (an RS256
 * JWT exchanged at the token endpoint). Instances of a GPU family's
 * machine type the built-in table lacks are resolved through
 * machineTypes.get, once per zone and type in a pull. The listing is
 * asked with returnPartialSuccess=true: zones that do not answer
 * ("unreachables", or a scope warning other than NO_RESULTS_ON_PAGE) are
 * named to the store, whose instances there keep their state, and in a
 * warning on the source; the pull succeeds. A failed page, more
 * unreachable zones than can be named, or refused credentials fail the
 * pull and mark nothing gone. */
#include "collect/cloudhttp.h"
#include "collect/httpget.h"
#include "collect/pull.h"
#include "collect/pull_cloud.h"
#include "core/jwt.h"
#include "core/log.h"
#include "core/status.h"
#include "core/util.h"
#include "parse/gcp.h"
#include "store/store.h"

#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#define GCP_DEFAULT_ENDPOINT "https://compute.googleapis.com"
#define GCP_DEFAULT_TOKEN_ENDPOINT "https://oauth2.googleapis.com/token"
#define GCP_SCOPE "https://www.googleapis.com/auth/compute.readonly"
#define GCP_MAX_BODY (64u * 1024u * 1024u)
#define GCP_MAX_PAGES 10000
#define GCP_MAX_INSTANCES 1000000
/* Distinct zone and machine type pairs resolved in one pull. */
#define GCP_MAX_TYPES 64

/* The access token for a service-account key (JSON with client_email and
 * private_key): a signed grant POSTed to the token endpoint. */
static int token_for_key(const json_t *cfg, char *token, size_t tlen, char *err, size_t errlen)
{
    json_t *key = json_loads(pull_cfg_str(cfg, "service_account_json"), 0, NULL), *hdr = NULL,
           *claims = NULL;
    const char *email = json_string_value(json_object_get(key, "client_email"));
    const char *pem = json_string_value(json_object_get(key, "private_key"));
    const char *kid = json_string_value(json_object_get(key, "private_key_id"));
    char endpoint[2100], where[2200], form[8192] = "", why[300], *jws = NULL;
    struct cloudhttp_token_words w = {where, "the token endpoint", "the service-account key",
                                      "the key may be revoked, expired or of another project"};
    int64_t now = gi_now();
    int rc = -1;

    cloudhttp_base_url(pull_cfg_str(cfg, "token_endpoint"), GCP_DEFAULT_TOKEN_ENDPOINT, endpoint,
                       sizeof endpoint);
    if (email == NULL || pem == NULL) {
        gi_fmt(err, errlen,
               "config.service_account_json is not a service-account key (JSON with "
               "client_email and private_key)");
        goto cleanup;
    }
    hdr = kid ? json_pack("{s:s, s:s, s:s}", "alg", "RS256", "typ", "JWT", "kid", kid)
              : json_pack("{s:s, s:s}", "alg", "RS256", "typ", "JWT");
    claims = json_pack("{s:s, s:s, s:s, s:I, s:I}", "iss", email, "scope", GCP_SCOPE, "aud",
                       endpoint, "iat", (json_int_t)now, "exp", (json_int_t)(now + 3600));
    if (hdr == NULL || claims == NULL) {
        gi_fmt(err, errlen, "out of memory");
        goto cleanup;
    }
    if (jwt_sign_rs256(pem, hdr, claims, &jws, why, sizeof why) != 0) {
        gi_fmt(err, errlen, "config.service_account_json: %s", why);
        goto cleanup;
    }
    if (!cloudhttp_form_add(form, sizeof form, "grant_type",
                            "urn:ietf:params:oauth:grant-type:jwt-bearer") ||
        !cloudhttp_form_add(form, sizeof form, "assertion", jws)) {
        gi_fmt(err, errlen, "the signed grant is too long");
        goto cleanup;
    }
    snprintf(where, sizeof where, "the token endpoint %.200s", endpoint);
    rc = cloudhttp_token(cfg, endpoint, form, gcp_error_message, &w, token, tlen, err, errlen);
cleanup:
    json_decref(key);
    json_decref(hdr);
    json_decref(claims);
    free(jws);
    return rc;
}

static int access_token(const json_t *cfg, char *token, size_t tlen, char *err, size_t errlen)
{
    if (pull_cfg_str(cfg, "access_token")) {
        /* It becomes a header line: one line, or it would add headers. */
        if (!gi_strlcpy(token, pull_cfg_str(cfg, "access_token"), tlen) || strpbrk(token, "\r\n")) {
            gi_fmt(err, errlen, "config.access_token must be one line of at most %zu bytes",
                   tlen - 1);
            return -1;
        }
        return 0;
    }
    if (pull_cfg_str(cfg, "service_account_json"))
        return token_for_key(cfg, token, tlen, err, errlen);
    gi_fmt(err, errlen, "neither config.service_account_json nor config.access_token is set");
    return -1;
}

/* An answer that is not 2xx as the source's error. */
static void refused(const char *what, long status, const char *body, size_t len, char *err,
                    size_t errlen)
{
    char why[300];

    gcp_error_message(body, len, why, sizeof why);
    gi_fmt(err, errlen, "%s: HTTP %ld%s%s%s", what, status, why[0] ? " " : "", why,
           status == 401   ? "; the access token is invalid or has expired"
           : status == 403 ? "; the credentials lack compute.instances.list on the project"
           : status == 429 ? "; still throttled after retries"
                           : "");
}

struct types {
    struct {
        char zone[64], type[128], model[128];
        int count;
        int64_t mem;
    } v[GCP_MAX_TYPES];
    size_t n;
};

/* The GPUs of a zone's machine type from machineTypes.get; -1 when the
 * API does not say (the count stays unknown, nothing fails). */
static int resolve_type(const char *base, const char *project, const struct httpget_opts *o,
                        struct types *t, struct cloud_instance *ci)
{
    char url[3200], zone[200], type[400], err[256];
    char *body = NULL;
    size_t len = 0, i;
    long status = 0;

    for (i = 0; i < t->n; i++)
        if (strcmp(t->v[i].zone, ci->zone) == 0 && strcmp(t->v[i].type, ci->machine_type) == 0)
            goto found;
    if (t->n == GCP_MAX_TYPES || !cloudhttp_escape(ci->zone, zone, sizeof zone) ||
        !cloudhttp_escape(ci->machine_type, type, sizeof type))
        return -1;
    gi_strlcpy(t->v[i].zone, ci->zone, sizeof t->v[i].zone);
    gi_strlcpy(t->v[i].type, ci->machine_type, sizeof t->v[i].type);
    t->v[i].count = -1;
    t->v[i].model[0] = '\0';
    t->v[i].mem = -1;
    t->n++;
    snprintf(url, sizeof url, "%s/compute/v1/projects/%s/zones/%s/machineTypes/%s", base, project,
             zone, type);
    if (cloudhttp_get(url, o, &body, &len, &status, err, sizeof err) == 0 && status == 200 &&
        gcp_parse_machine_type(body, len, &t->v[i].count, t->v[i].model, sizeof t->v[i].model,
                               &t->v[i].mem) != GI_OK)
        t->v[i].count = -1;
    free(body);
found:
    ci->gpu_count = t->v[i].count;
    gi_strlcpy(ci->gpu_model, t->v[i].model, sizeof ci->gpu_model);
    ci->gpu_memory_mib = t->v[i].mem;
    return ci->gpu_count;
}

/* Appends a page's instances to *all (taking them over). */
static int take(struct gcp_page *p, struct cloud_instance **all, size_t *n, size_t *cap)
{
    if (*n + p->n > GCP_MAX_INSTANCES)
        return GI_TOO_LARGE;
    if (*n + p->n > *cap) {
        size_t ncap = (*n + p->n) * 2;
        struct cloud_instance *nv = realloc(*all, ncap * sizeof *nv);
        if (nv == NULL)
            return GI_INTERNAL;
        *all = nv;
        *cap = ncap;
    }
    if (p->n > 0)
        memcpy(*all + *n, p->items, p->n * sizeof *p->items);
    *n += p->n;
    free(p->items);
    p->items = NULL;
    p->n = 0;
    return GI_OK;
}

/* The zones of gaps as a warning ("2 zones did not answer: zones/a,
 * zones/b; their instances keep their last state"), cut to fit. */
static void gaps_warning(const struct gcp_page *gaps, char *out, size_t len)
{
    char list[1024] = "";
    size_t used = 0;

    for (size_t i = 0; i < gaps->unreachable && used + 1 < sizeof list; i++) {
        int w = snprintf(list + used, sizeof list - used, "%s%s", i ? ", " : "",
                         gaps->unreachable_scopes[i]);
        if (w < 0)
            break;
        used += (size_t)w;
    }
    if (used >= sizeof list)
        used = sizeof list - 1;
    if (!gi_fmt(out, len, "%zu zone%s did not answer: %s; %s instances keep their last state",
                gaps->unreachable, gaps->unreachable == 1 ? "" : "s", list,
                gaps->unreachable == 1 ? "its" : "their") &&
        len > 4)
        memcpy(out + len - 4, "...", 4);
}

int pull_run_gcp(struct store *st, int64_t source_id, const json_t *cfg, const char *cluster,
                 struct pull_result *res)
{
    const char *project = pull_cfg_str(cfg, "project");
    char base[2100], token[8192], url[8800], esc[3 * GCP_TOKEN_MAX + 1] = "", proj[400];
    struct cloud_instance *all = NULL;
    struct cloud_sync_result sr = {0};
    struct types *types = NULL;
    struct gcp_page *gaps = calloc(1, sizeof *gaps);
    const char *unreachable[GCP_UNREACHABLE_MAX];
    struct httpget_opts o;
    size_t n = 0, cap = 0, warnings = 0;
    char first[GCP_ERR_LEN] = "";
    int rc = -1, pages = 0, src;

    cloudhttp_base_url(pull_cfg_str(cfg, "endpoint"), GCP_DEFAULT_ENDPOINT, base, sizeof base);
    if (gaps == NULL) {
        snprintf(res->error, sizeof res->error, "out of memory");
        return -1;
    }
    if (project == NULL || !cloudhttp_escape(project, proj, sizeof proj)) {
        snprintf(res->error, sizeof res->error, "config.project is required");
        goto cleanup;
    }
    if (access_token(cfg, token, sizeof token, res->error, sizeof res->error) != 0)
        goto cleanup;
    pull_http_opts(cfg, &o, GCP_MAX_BODY);
    o.bearer = token;
    for (;;) {
        struct gcp_page p;
        char *body = NULL, why[GCP_ERR_LEN];
        size_t len = 0;
        long status = 0;
        snprintf(url, sizeof url,
                 "%s/compute/v1/projects/%s/aggregated/instances?maxResults=500"
                 "&returnPartialSuccess=true%s%s",
                 base, proj, esc[0] ? "&pageToken=" : "", esc);
        if (cloudhttp_get(url, &o, &body, &len, &status, why, sizeof why) != 0) {
            snprintf(res->error, sizeof res->error, "listing the instances of %s (page %d): %s",
                     project, pages + 1, why);
            goto cleanup;
        }
        if (status < 200 || status > 299) {
            char what[300];
            snprintf(what, sizeof what, "listing the instances of %.100s (page %d)", project,
                     pages + 1);
            refused(what, status, body, len, res->error, sizeof res->error);
            free(body);
            goto cleanup;
        }
        src = gcp_parse_instances(body, len, project, &p, why, sizeof why);
        free(body);
        if (src != GI_OK) {
            snprintf(res->error, sizeof res->error, "page %d of the instances: %s", pages + 1, why);
            goto cleanup;
        }
        warnings += p.warnings;
        if (!first[0])
            gi_strlcpy(first, p.warning, sizeof first);
        for (size_t i = 0; i < p.unreachable; i++)
            gcp_page_unreachable(gaps, p.unreachable_scopes[i]);
        if (p.unreachable_more || gaps->unreachable_more) {
            snprintf(res->error, sizeof res->error,
                     "more zones did not answer than can be named (the first: %s); the listing "
                     "is incomplete, nothing was marked gone",
                     gaps->unreachable ? gaps->unreachable_scopes[0] : "?");
            gcp_page_free(&p);
            goto cleanup;
        }
        src = take(&p, &all, &n, &cap);
        if (src != GI_OK) {
            gcp_page_free(&p);
            snprintf(res->error, sizeof res->error, "the listing has more than %d instances",
                     GCP_MAX_INSTANCES);
            goto cleanup;
        }
        if (p.next[0] == '\0')
            break;
        if (++pages >= GCP_MAX_PAGES || !cloudhttp_escape(p.next, esc, sizeof esc)) {
            snprintf(res->error, sizeof res->error,
                     "the listing did not end after %d pages; nothing was marked gone", pages);
            goto cleanup;
        }
    }
    types = calloc(1, sizeof *types);
    if (types == NULL) {
        snprintf(res->error, sizeof res->error, "out of memory");
        goto cleanup;
    }
    for (size_t i = 0; i < n; i++)
        if (all[i].gpu_count < 0 && all[i].gpu_model[0] == '\0' && all[i].machine_type[0] &&
            all[i].zone[0])
            resolve_type(base, proj, &o, types, &all[i]);
    if (warnings)
        gi_warn("gcp %s: %zu values left absent; the first: %s", project, warnings, first);
    for (size_t i = 0; i < gaps->unreachable; i++)
        unreachable[i] = gaps->unreachable_scopes[i];
    src = pull_cloud_listing(st, source_id, "gcp", project, all, n, unreachable, gaps->unreachable,
                             res->dry, &sr);
    if (src != GI_OK) {
        snprintf(res->error, sizeof res->error, "storing the instances failed: %s",
                 gi_status_name(src));
        goto cleanup;
    }
    if (gaps->unreachable) {
        char msg[600];
        gaps_warning(gaps, msg, sizeof msg);
        gi_warn("gcp %s: %s", project, msg);
        if (!res->warning[0])
            gaps_warning(gaps, res->warning, sizeof res->warning);
        /* A warning on the source, not an error: the rest is stored. */
        if (!res->dry && store_source_warn(st, source_id, (int64_t)gaps->unreachable, msg) != GI_OK)
            gi_warn("could not record the unreachable zones of source %lld", (long long)source_id);
    }
    res->gpus = sr.gpus;
    res->hosts = sr.instances;
    res->instances = sr.instances;
    res->warnings = sr.warnings + (int64_t)warnings + (int64_t)gaps->unreachable;
    rc = 0;
cleanup:
    (void)cluster;
    cloud_instances_clear(all, n);
    free(all);
    free(types);
    free(gaps);
    return rc;
}
