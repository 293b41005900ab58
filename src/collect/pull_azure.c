/* Pulling Azure virtual machines: Virtual Machines - List All of the
 * configured subscription with statusOnly=true (each VM with its power
 * state), following nextLink, with a bearer token obtained from Microsoft
 * Entra ID by client credentials. GPU counts come from the Resource SKUs
 * list, kept per source for a day; when it cannot be read the built-in
 * size table alone is used. List All does not return the members of
 * scale sets in Uniform orchestration (AKS GPU node pools): the scale
 * sets are listed too, and the members of each one that is not Flexible
 * (Flexible members are in the VM list already) are read with their
 * instance views and added to the listing. Only a complete listing is
 * stored: a failed page of VMs, scale sets or a scale set's members, or
 * refused credentials, fail the pull and mark nothing gone. */
#include "collect/cloudhttp.h"
#include "collect/httpget.h"
#include "collect/pull.h"
#include "collect/pull_cloud.h"
#include "core/log.h"
#include "core/status.h"
#include "core/util.h"
#include "parse/azure.h"
#include "store/store.h"

#include <pthread.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#define AZURE_DEFAULT_ENDPOINT "https://management.azure.com"
#define AZURE_DEFAULT_LOGIN "https://login.microsoftonline.com"
#define AZURE_SCOPE "https://management.azure.com/.default"
#define AZURE_VM_API "2024-07-01"
#define AZURE_SKU_API "2021-07-01"
#define AZURE_MAX_BODY (64u * 1024u * 1024u)
#define AZURE_MAX_PAGES 10000
#define AZURE_MAX_INSTANCES 1000000
#define AZURE_SKU_TTL_S 86400
#define AZURE_SKU_SOURCES 64

/* The Resource SKUs lists read, per source. */
static struct {
    int64_t source_id, fetched;
    char subscription[128];
    struct azure_skus skus;
} sku_cache[AZURE_SKU_SOURCES];
static pthread_mutex_t sku_lock = PTHREAD_MUTEX_INITIALIZER;

/* A bearer token for Azure Resource Manager by client credentials. */
static int get_token(const json_t *cfg, char *token, size_t tlen, char *err, size_t errlen)
{
    const char *secret = pull_cfg_str(cfg, "client_secret");
    char login[2100], url[2600], where[2200], tenant[400], form[8192] = "";
    struct cloudhttp_token_words w = {where, "Microsoft Entra ID", "the client credentials",
                                      "the secret may have expired or the app may not exist in "
                                      "the tenant"};

    if (secret == NULL) {
        gi_fmt(err, errlen, "config.client_secret is not set");
        return -1;
    }
    cloudhttp_base_url(pull_cfg_str(cfg, "login_endpoint"), AZURE_DEFAULT_LOGIN, login,
                       sizeof login);
    if (!cloudhttp_escape(pull_cfg_str(cfg, "tenant_id"), tenant, sizeof tenant) ||
        !cloudhttp_form_add(form, sizeof form, "grant_type", "client_credentials") ||
        !cloudhttp_form_add(form, sizeof form, "client_id", pull_cfg_str(cfg, "client_id")) ||
        !cloudhttp_form_add(form, sizeof form, "client_secret", secret) ||
        !cloudhttp_form_add(form, sizeof form, "scope", AZURE_SCOPE)) {
        gi_fmt(err, errlen, "the client credentials are too long");
        return -1;
    }
    snprintf(url, sizeof url, "%s/%s/oauth2/v2.0/token", login, tenant);
    snprintf(where, sizeof where, "the login endpoint %.200s", login);
    return cloudhttp_token(cfg, url, form, azure_error_message, &w, token, tlen, err, errlen);
}

/* An answer that is not 2xx as the pull's error; action is the read
 * permission the request needs. */
static void refused_for(const char *what, const char *action, long status, const char *body,
                        size_t len, char *err, size_t errlen)
{
    char why[300], lacks[200];

    azure_error_message(body, len, why, sizeof why);
    gi_fmt(lacks, sizeof lacks, "; the app lacks %s on the subscription", action);
    gi_fmt(err, errlen, "%s: HTTP %ld%s%s%s", what, status, why[0] ? " " : "", why,
           status == 401   ? "; the access token is invalid or has expired"
           : status == 403 ? lacks
           : status == 429 ? "; still throttled after retries"
                           : "");
}

static void refused(const char *what, long status, const char *body, size_t len, char *err,
                    size_t errlen)
{
    refused_for(what, "Microsoft.Compute/virtualMachines/read", status, body, len, err, errlen);
}

/* Reads every page of the Resource SKUs list into s. */
static int fetch_skus(const char *base, const char *sub, const struct httpget_opts *o,
                      struct azure_skus *s, char *err, size_t errlen)
{
    char url[AZURE_URL_MAX + 64], next[AZURE_URL_MAX], why[AZURE_ERR_LEN];

    snprintf(url, sizeof url, "%s/subscriptions/%s/providers/Microsoft.Compute/skus?api-version=%s",
             base, sub, AZURE_SKU_API);
    for (int page = 0; page < AZURE_MAX_PAGES; page++) {
        char *body = NULL;
        size_t len = 0;
        long status = 0;
        int rc;
        if (cloudhttp_get(url, o, &body, &len, &status, why, sizeof why) != 0) {
            gi_fmt(err, errlen, "%s", why);
            return -1;
        }
        if (status != 200) {
            refused("the Resource SKUs list", status, body, len, err, errlen);
            free(body);
            return -1;
        }
        rc = azure_parse_skus(body, len, s, next, sizeof next, why, sizeof why);
        free(body);
        if (rc != GI_OK) {
            gi_fmt(err, errlen, "the Resource SKUs list: %s", why);
            return -1;
        }
        if (next[0] == '\0')
            return 0;
        if (!cloudhttp_same_origin(next, base)) {
            gi_fmt(err, errlen, "the Resource SKUs list's nextLink leaves %s", base);
            return -1;
        }
        gi_strlcpy(url, next, sizeof url);
    }
    gi_fmt(err, errlen, "the Resource SKUs list did not end");
    return -1;
}

/* The SKU list of this source: the kept one while it is younger than a
 * day and of the same subscription, else read now (kept on success).
 * Returns a copy for the caller (free with azure_skus_free); an empty
 * list when it cannot be read. */
static void skus_for(int64_t source_id, const char *base, const char *sub,
                     const struct httpget_opts *o, struct azure_skus *out)
{
    int64_t now = gi_now();
    int slot = -1, oldest = 0;
    char err[AZURE_ERR_LEN];

    memset(out, 0, sizeof *out);
    pthread_mutex_lock(&sku_lock);
    for (int i = 0; i < AZURE_SKU_SOURCES; i++) {
        if (sku_cache[i].source_id == source_id) {
            slot = i;
            break;
        }
        if (sku_cache[i].fetched < sku_cache[oldest].fetched)
            oldest = i;
    }
    if (slot >= 0 && now - sku_cache[slot].fetched < AZURE_SKU_TTL_S &&
        strcmp(sku_cache[slot].subscription, sub) == 0 && sku_cache[slot].skus.n > 0) {
        out->v = malloc(sku_cache[slot].skus.n * sizeof *out->v);
        if (out->v) {
            memcpy(out->v, sku_cache[slot].skus.v, sku_cache[slot].skus.n * sizeof *out->v);
            out->n = out->cap = sku_cache[slot].skus.n;
        }
        pthread_mutex_unlock(&sku_lock);
        return;
    }
    pthread_mutex_unlock(&sku_lock);
    if (fetch_skus(base, sub, o, out, err, sizeof err) != 0) {
        gi_warn("azure %s: GPU counts from the size table only: %s", sub, err);
        azure_skus_free(out);
        return;
    }
    pthread_mutex_lock(&sku_lock);
    if (slot < 0)
        slot = oldest;
    azure_skus_free(&sku_cache[slot].skus);
    sku_cache[slot].source_id = source_id;
    sku_cache[slot].fetched = now;
    gi_strlcpy(sku_cache[slot].subscription, sub, sizeof sku_cache[slot].subscription);
    sku_cache[slot].skus.v = malloc((out->n + 1) * sizeof *out->v);
    if (sku_cache[slot].skus.v) {
        memcpy(sku_cache[slot].skus.v, out->v, out->n * sizeof *out->v);
        sku_cache[slot].skus.n = sku_cache[slot].skus.cap = out->n;
    }
    pthread_mutex_unlock(&sku_lock);
}

static int take(struct azure_page *p, struct cloud_instance **all, size_t *n, size_t *cap)
{
    if (*n + p->n > AZURE_MAX_INSTANCES)
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

/* Appends "; nothing was marked gone" to err (cut when it does not fit). */
static void nothing_gone(char *err, size_t errlen)
{
    size_t used = strlen(err);

    if (used + 1 < errlen)
        gi_fmt(err + used, errlen - used, "; nothing was marked gone");
}

/* Every page of the subscription's scale sets into sets. 0, or -1 with
 * err filled. */
static int list_scale_sets(const char *base, const char *esub, const char *sub,
                           const struct httpget_opts *o, struct azure_scale_sets *sets, char *err,
                           size_t errlen)
{
    char url[AZURE_URL_MAX + 64], next[AZURE_URL_MAX], why[AZURE_ERR_LEN], what[300];

    snprintf(url, sizeof url,
             "%s/subscriptions/%s/providers/Microsoft.Compute/virtualMachineScaleSets"
             "?api-version=%s",
             base, esub, AZURE_VM_API);
    for (int page = 1; page <= AZURE_MAX_PAGES; page++) {
        char *body = NULL;
        size_t len = 0;
        long status = 0;
        int rc;
        snprintf(what, sizeof what, "listing the scale sets of subscription %.100s (page %d)", sub,
                 page);
        if (cloudhttp_get(url, o, &body, &len, &status, why, sizeof why) != 0) {
            gi_fmt(err, errlen, "%s: %s; nothing was marked gone", what, why);
            return -1;
        }
        if (status < 200 || status > 299) {
            refused_for(what, "Microsoft.Compute/virtualMachineScaleSets/read", status, body, len,
                        err, errlen);
            nothing_gone(err, errlen);
            free(body);
            return -1;
        }
        rc = azure_parse_scale_sets(body, len, sets, next, sizeof next, why, sizeof why);
        free(body);
        if (rc != GI_OK) {
            gi_fmt(err, errlen, "%s: %s; nothing was marked gone", what, why);
            return -1;
        }
        if (next[0] == '\0')
            return 0;
        if (!cloudhttp_same_origin(next, base)) {
            gi_fmt(err, errlen,
                   "%s: a nextLink leaves the configured endpoint; nothing was "
                   "marked gone",
                   what);
            return -1;
        }
        gi_strlcpy(url, next, sizeof url);
    }
    gi_fmt(err, errlen, "the list of scale sets did not end; nothing was marked gone");
    return -1;
}

/* A resource id as a URL path: every byte but unreserved ones and '/'
 * percent-encoded. False when it does not fit. */
static bool id_path(const char *id, char *out, size_t len)
{
    static const char hex[] = "0123456789ABCDEF";
    size_t k = 0;

    for (const unsigned char *c = (const unsigned char *)id; *c; c++) {
        bool plain = (*c >= 'a' && *c <= 'z') || (*c >= 'A' && *c <= 'Z') ||
                     (*c >= '0' && *c <= '9') || strchr("-._~/()", *c);
        if (k + (plain ? 1 : 3) >= len)
            return false;
        if (plain) {
            out[k++] = (char)*c;
        } else {
            out[k++] = '%';
            out[k++] = hex[*c >> 4];
            out[k++] = hex[*c & 15];
        }
    }
    out[k] = '\0';
    return true;
}

/* True when the listing has an instance of this id already. */
static bool listed(const struct cloud_instance *all, size_t n, const char *id)
{
    for (size_t i = 0; i < n; i++)
        if (strcmp(all[i].instance_id, id) == 0)
            return true;
    return false;
}

/* Every page of one Uniform scale set's members (with their instance
 * views), appended to *all; a member already listed is not added again.
 * 0, or -1 with err filled (naming the scale set). */
static int list_members(const char *base, const char *sub, const struct httpget_opts *o,
                        const struct azure_skus *skus, const struct azure_scale_set *set,
                        struct cloud_instance **all, size_t *n, size_t *cap, size_t *warnings,
                        char *first, size_t firstlen, char *err, size_t errlen)
{
    char url[AZURE_URL_MAX + 64], path[3 * sizeof set->id + 1], why[AZURE_ERR_LEN], what[400];

    if (!id_path(set->id, path, sizeof path)) {
        gi_fmt(err, errlen, "scale set %s: its id does not fit in a URL", set->name);
        return -1;
    }
    if (!gi_fmt(url, sizeof url, "%s%s/virtualMachines?api-version=%s&$expand=instanceView", base,
                path, AZURE_VM_API)) {
        gi_fmt(err, errlen, "scale set %s: its id does not fit in a URL", set->name);
        return -1;
    }
    for (int page = 1; page <= AZURE_MAX_PAGES; page++) {
        struct azure_page p;
        char *body = NULL;
        size_t len = 0, keep = 0;
        long status = 0;
        int rc;
        snprintf(what, sizeof what, "listing the members of scale set %.200s (page %d)", set->name,
                 page);
        if (cloudhttp_get(url, o, &body, &len, &status, why, sizeof why) != 0) {
            gi_fmt(err, errlen, "%s: %s; nothing was marked gone", what, why);
            return -1;
        }
        if (status < 200 || status > 299) {
            refused_for(what, "Microsoft.Compute/virtualMachineScaleSets/virtualMachines/read",
                        status, body, len, err, errlen);
            nothing_gone(err, errlen);
            free(body);
            return -1;
        }
        rc = azure_parse_vmss_vms(body, len, sub, skus, set, &p, why, sizeof why);
        free(body);
        if (rc != GI_OK) {
            gi_fmt(err, errlen, "%s: %s; nothing was marked gone", what, why);
            return -1;
        }
        *warnings += p.warnings;
        if (!first[0])
            gi_strlcpy(first, p.warning, firstlen);
        /* Keep the members not listed already (a Flexible member in a set
         * that says Uniform would otherwise count twice). */
        for (size_t i = 0; i < p.n; i++) {
            if (listed(*all, *n, p.items[i].instance_id) ||
                listed(p.items, keep, p.items[i].instance_id)) {
                cloud_instances_clear(&p.items[i], 1);
                continue;
            }
            if (keep != i)
                p.items[keep] = p.items[i];
            keep++;
        }
        p.n = keep;
        if (take(&p, all, n, cap) != GI_OK) {
            azure_page_free(&p);
            gi_fmt(err, errlen, "the listing has more than %d VMs", AZURE_MAX_INSTANCES);
            return -1;
        }
        if (p.next[0] == '\0')
            return 0;
        if (!cloudhttp_same_origin(p.next, base)) {
            gi_fmt(err, errlen,
                   "%s: a nextLink leaves the configured endpoint; nothing was "
                   "marked gone",
                   what);
            return -1;
        }
        gi_strlcpy(url, p.next, sizeof url);
    }
    gi_fmt(err, errlen, "the members of scale set %s did not end; nothing was marked gone",
           set->name);
    return -1;
}

int pull_run_azure(struct store *st, int64_t source_id, const json_t *cfg, const char *cluster,
                   struct pull_result *res)
{
    const char *sub = pull_cfg_str(cfg, "subscription_id");
    char base[2100], token[8192], url[AZURE_URL_MAX + 64], esub[400];
    struct cloud_instance *all = NULL;
    struct cloud_sync_result sr = {0};
    struct azure_skus skus = {0};
    struct azure_scale_sets sets = {0};
    struct httpget_opts o;
    size_t n = 0, cap = 0, warnings = 0;
    char first[AZURE_ERR_LEN] = "";
    int rc = -1, src, page;

    (void)cluster;
    cloudhttp_base_url(pull_cfg_str(cfg, "endpoint"), AZURE_DEFAULT_ENDPOINT, base, sizeof base);
    if (sub == NULL || !cloudhttp_escape(sub, esub, sizeof esub)) {
        snprintf(res->error, sizeof res->error, "config.subscription_id is required");
        return -1;
    }
    if (get_token(cfg, token, sizeof token, res->error, sizeof res->error) != 0)
        return -1;
    pull_http_opts(cfg, &o, AZURE_MAX_BODY);
    o.bearer = token;
    skus_for(source_id, base, esub, &o, &skus);
    snprintf(url, sizeof url,
             "%s/subscriptions/%s/providers/Microsoft.Compute/virtualMachines?api-version=%s"
             "&statusOnly=true",
             base, esub, AZURE_VM_API);
    for (page = 1;; page++) {
        struct azure_page p;
        char *body = NULL, why[AZURE_ERR_LEN];
        size_t len = 0;
        long status = 0;
        if (cloudhttp_get(url, &o, &body, &len, &status, why, sizeof why) != 0) {
            snprintf(res->error, sizeof res->error,
                     "listing the VMs of subscription %s (page %d): %s", sub, page, why);
            goto cleanup;
        }
        if (status < 200 || status > 299) {
            char what[300];
            snprintf(what, sizeof what, "listing the VMs of subscription %.100s (page %d)", sub,
                     page);
            refused(what, status, body, len, res->error, sizeof res->error);
            free(body);
            goto cleanup;
        }
        src = azure_parse_vms(body, len, sub, &skus, &p, why, sizeof why);
        free(body);
        if (src != GI_OK) {
            snprintf(res->error, sizeof res->error, "page %d of the VMs: %s", page, why);
            goto cleanup;
        }
        warnings += p.warnings;
        if (!first[0])
            gi_strlcpy(first, p.warning, sizeof first);
        if (take(&p, &all, &n, &cap) != GI_OK) {
            azure_page_free(&p);
            snprintf(res->error, sizeof res->error, "the listing has more than %d VMs",
                     AZURE_MAX_INSTANCES);
            goto cleanup;
        }
        if (p.next[0] == '\0')
            break;
        /* nextLink is followed verbatim, but only to the same server: it
         * carries the bearer token. */
        if (!cloudhttp_same_origin(p.next, base) || page >= AZURE_MAX_PAGES) {
            snprintf(res->error, sizeof res->error,
                     page >= AZURE_MAX_PAGES
                         ? "the listing did not end; nothing was marked gone"
                         : "a nextLink leaves the configured endpoint; nothing was marked gone");
            goto cleanup;
        }
        gi_strlcpy(url, p.next, sizeof url);
    }
    if (list_scale_sets(base, esub, sub, &o, &sets, res->error, sizeof res->error) != 0)
        goto cleanup;
    for (size_t i = 0; i < sets.n; i++)
        if (!sets.v[i].flexible &&
            list_members(base, sub, &o, &skus, &sets.v[i], &all, &n, &cap, &warnings, first,
                         sizeof first, res->error, sizeof res->error) != 0)
            goto cleanup;
    if (warnings)
        gi_warn("azure %s: %zu values left absent; the first: %s", sub, warnings, first);
    src = pull_cloud_listing(st, source_id, "azure", sub, all, n, NULL, 0, res->dry, &sr);
    if (src != GI_OK) {
        snprintf(res->error, sizeof res->error, "storing the VMs failed: %s", gi_status_name(src));
        goto cleanup;
    }
    res->gpus = sr.gpus;
    res->hosts = sr.instances;
    res->instances = sr.instances;
    res->warnings = sr.warnings + (int64_t)warnings;
    rc = 0;
cleanup:
    cloud_instances_clear(all, n);
    free(all);
    azure_skus_free(&skus);
    azure_scale_sets_free(&sets);
    return rc;
}
