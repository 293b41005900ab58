/* Pull sources; see pull.h. Each kind is a config spec and a fetch
 * function that turns what the remote system says into observations; the
 * rest (grouping by host, ingest, status) is shared. */
#include "collect/pull.h"
#include "collect/httpget.h"
#include "core/log.h"
#include "core/observation.h"
#include "core/status.h"
#include "core/util.h"
#include "store/store.h"

#include <math.h>
#include <stdarg.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

/* Fetches observations for one source; fills err and returns -1 on failure. */
typedef int (*pull_fetch_fn)(const json_t *cfg, struct gi_obs_set *set, char *err, size_t errlen);

enum cfg_type { CFG_URL, CFG_STR, CFG_SECRET, CFG_BOOL, CFG_INT };
struct cfg_key {
    const char *name;
    enum cfg_type type;
    bool required;
    int64_t min, max;
};

#define COMMON_KEYS                                                                                \
    {"bearer_token", CFG_SECRET, false, 0, 0}, {"ca_file", CFG_STR, false, 0, 0},                  \
        {"insecure_skip_verify", CFG_BOOL, false, 0, 0},                                           \
    {                                                                                              \
        "timeout_s", CFG_INT, false, 1, 300                                                        \
    }

static const struct cfg_key prom_keys[] = {
    {"url", CFG_URL, true, 0, 0}, {"query", CFG_STR, false, 0, 0}, COMMON_KEYS, {NULL, 0, 0, 0, 0}};
static const struct cfg_key dcgm_keys[] = {
    {"url", CFG_URL, true, 0, 0}, COMMON_KEYS, {NULL, 0, 0, 0, 0}};
static const struct cfg_key k8s_keys[] = {{"url", CFG_URL, true, 0, 0},
                                          {"page_size", CFG_INT, false, 1, 1000},
                                          COMMON_KEYS,
                                          {NULL, 0, 0, 0, 0}};

int pull_fetch_prometheus(const json_t *cfg, struct gi_obs_set *set, char *err, size_t errlen);
int pull_fetch_dcgm(const json_t *cfg, struct gi_obs_set *set, char *err, size_t errlen);
/* A source that stores what it finds itself, rather than as GPU
 * observations (Kubernetes knows nodes and pods, not GPU identities). */
typedef int (*pull_run_fn)(struct store *st, int64_t source_id, const json_t *cfg,
                           const char *cluster, struct pull_result *res);
int pull_run_kubernetes(struct store *st, int64_t source_id, const json_t *cfg, const char *cluster,
                        struct pull_result *res);

static const struct {
    const char *kind;
    const struct cfg_key *keys;
    pull_fetch_fn fetch;
    pull_run_fn run;
} kinds[] = {
    {"prometheus", prom_keys, pull_fetch_prometheus, NULL},
    {"dcgm-exporter", dcgm_keys, pull_fetch_dcgm, NULL},
    {"kubernetes", k8s_keys, NULL, pull_run_kubernetes},
};

static int kind_index(const char *kind)
{
    for (size_t i = 0; kind && i < sizeof kinds / sizeof *kinds; i++)
        if (strcmp(kinds[i].kind, kind) == 0)
            return (int)i;
    return -1;
}

bool pull_kind_known(const char *kind) { return kind_index(kind) >= 0; }

bool pull_config_secret(const char *key)
{
    return strcmp(key, "bearer_token") == 0 || strcmp(key, "password") == 0;
}

static int bad(char *field, size_t flen, char *msg, size_t mlen, const char *key, const char *fmt,
               ...) __attribute__((format(printf, 6, 7)));

static int bad(char *field, size_t flen, char *msg, size_t mlen, const char *key, const char *fmt,
               ...)
{
    va_list ap;

    snprintf(field, flen, "config%s%s", key ? "." : "", key ? key : "");
    va_start(ap, fmt);
    vsnprintf(msg, mlen, fmt, ap);
    va_end(ap);
    return -1;
}

int pull_config_check(const char *kind, const json_t *cfg, char *field, size_t flen, char *msg,
                      size_t mlen)
{
    int k = kind_index(kind);
    const char *key;
    json_t *v;

    if (k < 0)
        return bad(field, flen, msg, mlen, NULL, "unknown source kind");
    if (!json_is_object(cfg))
        return bad(field, flen, msg, mlen, NULL, "config must be an object");
    json_object_foreach((json_t *)cfg, key, v) {
        const struct cfg_key *ck = kinds[k].keys;
        while (ck->name && strcmp(ck->name, key) != 0)
            ck++;
        if (ck->name == NULL)
            return bad(field, flen, msg, mlen, key, "config.%.40s is not a setting of a %s source",
                       key, kind);
        if (json_is_null(v))
            continue;
        switch (ck->type) {
        case CFG_URL:
            if (!json_is_string(v) ||
                (strncmp(json_string_value(v), "http://", 7) != 0 &&
                 strncmp(json_string_value(v), "https://", 8) != 0) ||
                json_string_length(v) > 2000 || !gi_text_ok(json_string_value(v)))
                return bad(field, flen, msg, mlen, key, "config.%s must be an http(s) URL", key);
            break;
        case CFG_STR:
        case CFG_SECRET:
            if (!json_is_string(v) || json_string_length(v) > 4096 ||
                !gi_text_ok(json_string_value(v)))
                return bad(field, flen, msg, mlen, key, "config.%s must be text", key);
            break;
        case CFG_BOOL:
            if (!json_is_boolean(v))
                return bad(field, flen, msg, mlen, key, "config.%s must be true or false", key);
            break;
        case CFG_INT:
            if (!json_is_integer(v) || json_integer_value(v) < ck->min ||
                json_integer_value(v) > ck->max)
                return bad(field, flen, msg, mlen, key,
                           "config.%s must be a whole number from "
                           "%lld to %lld",
                           key, (long long)ck->min, (long long)ck->max);
            break;
        }
    }
    for (const struct cfg_key *ck = kinds[k].keys; ck->name; ck++)
        if (ck->required && !json_is_string(json_object_get(cfg, ck->name)))
            return bad(field, flen, msg, mlen, ck->name, "config.%s is required", ck->name);
    return 0;
}

/* Turns each GPU's current readings into one sample at time ts. */
static void reading_sample(const struct gi_gpu_obs *g, int64_t ts, struct gi_sample *x)
{
    gi_sample_init(x);
    x->ts = g->ts_ms > 0 ? g->ts_ms / 1000 : ts;
    gi_strlcpy(x->gpu_uuid, g->uuid, sizeof x->gpu_uuid);
    x->util_avg = x->util_max = g->util_gpu_pct;
    x->mem_used_mib = g->memory_used_mib;
    x->power_avg_w = g->power_w;
    x->temp_c = g->temp_c;
    x->ecc_corrected = g->ecc_corrected;
    x->ecc_uncorrected = g->ecc_uncorrected;
    x->xid = g->xid_last;
}

/* Ingests a pulled observation set as one batch per reporting host. */
static int ingest_by_host(struct store *st, int64_t source_id, const char *source_name,
                          const char *cluster, const struct gi_obs_set *set,
                          struct pull_result *res)
{
    bool *done = calloc(set->ngpus + 1, sizeof *done);
    int64_t now = gi_now();
    int rc = GI_OK;

    if (done == NULL)
        return GI_INTERNAL;
    for (size_t i = 0; i < set->ngpus && rc == GI_OK; i++) {
        struct gi_batch b = {0};
        struct store_ingest_result ir;
        const char *host = set->gpus[i].hostname[0] ? set->gpus[i].hostname : "unknown-host";
        if (done[i])
            continue;
        if (set->gpus[i].uuid[0] == '\0') {
            done[i] = true; /* nothing identifies it: it cannot be stored */
            continue;
        }
        snprintf(b.batch_id, sizeof b.batch_id, "pull-%.40s-%lld-%.60s", source_name,
                 (long long)now, host);
        gi_strlcpy(b.host.hostname, host, sizeof b.host.hostname);
        if (cluster)
            gi_strlcpy(b.host.cluster, cluster, sizeof b.host.cluster);
        b.samples = calloc(set->ngpus, sizeof *b.samples);
        if (b.samples == NULL) {
            rc = GI_INTERNAL;
            break;
        }
        for (size_t j = i; j < set->ngpus; j++) {
            const char *h = set->gpus[j].hostname[0] ? set->gpus[j].hostname : "unknown-host";
            struct gi_gpu_obs *g;
            if (done[j] || strcmp(h, host) != 0 || set->gpus[j].uuid[0] == '\0')
                continue;
            done[j] = true;
            if ((g = gi_obs_add_gpu(&b.set)) == NULL) {
                rc = GI_INTERNAL;
                break;
            }
            *g = set->gpus[j];
            reading_sample(&set->gpus[j], now, &b.samples[b.nsamples++]);
        }
        for (size_t p = 0; p < set->npods && rc == GI_OK; p++) {
            for (size_t k = 0; k < b.set.ngpus; k++) {
                if (strcmp(set->pods[p].gpu_uuid, b.set.gpus[k].uuid) == 0) {
                    struct gi_pod_obs *po = gi_obs_add_pod(&b.set);
                    if (po)
                        *po = set->pods[p];
                    break;
                }
            }
        }
        for (size_t p = 0; p < set->nprocs && rc == GI_OK; p++) {
            for (size_t k = 0; k < b.set.ngpus; k++) {
                if (strcmp(set->procs[p].gpu_uuid, b.set.gpus[k].uuid) == 0) {
                    struct gi_proc_obs *pr = gi_obs_add_proc(&b.set);
                    if (pr)
                        *pr = set->procs[p];
                    break;
                }
            }
        }
        if (rc == GI_OK)
            rc = store_ingest(st, source_id, &b, &ir);
        if (rc == GI_OK) {
            res->hosts++;
            res->gpus += ir.gpus;
        }
        gi_batch_free(&b);
    }
    free(done);
    return rc;
}

void pull_run_source(struct store *st, const json_t *src, struct pull_result *res)
{
    const char *kind = json_string_value(json_object_get(src, "kind"));
    const char *name = json_string_value(json_object_get(src, "name"));
    const char *cluster = json_string_value(json_object_get(src, "cluster"));
    int64_t id = json_integer_value(json_object_get(src, "id"));
    struct gi_obs_set set = {0};
    int k = kind_index(kind), rc;

    memset(res, 0, sizeof *res);
    if (k < 0) {
        snprintf(res->error, sizeof res->error, "unknown source kind '%s'", kind ? kind : "");
    } else if (kinds[k].run) {
        res->ok = kinds[k].run(st, id, json_object_get(src, "config"), cluster, res) == 0;
    } else if (kinds[k].fetch(json_object_get(src, "config"), &set, res->error,
                              sizeof res->error) == 0) {
        rc = ingest_by_host(st, id, name ? name : "source", cluster, &set, res);
        if (rc == GI_OK)
            res->ok = true;
        else
            snprintf(res->error, sizeof res->error, "storing the pulled data failed: %s",
                     gi_status_name(rc));
    }
    gi_obs_free(&set);
    if (!res->ok)
        gi_warn("source %s (%s) failed: %s", name ? name : "?", kind ? kind : "?", res->error);
    if (store_source_record(st, id, res->ok ? NULL : res->error, res->gpus) != GI_OK)
        gi_warn("could not record the outcome of source %s", name ? name : "?");
}

/* Reads the shared HTTP settings of a source config. */
void pull_http_opts(const json_t *cfg, struct httpget_opts *o, size_t max_bytes)
{
    memset(o, 0, sizeof *o);
    o->bearer = json_string_value(json_object_get(cfg, "bearer_token"));
    o->ca_file = json_string_value(json_object_get(cfg, "ca_file"));
    o->insecure = json_is_true(json_object_get(cfg, "insecure_skip_verify"));
    o->timeout_s = json_is_integer(json_object_get(cfg, "timeout_s"))
                       ? (long)json_integer_value(json_object_get(cfg, "timeout_s"))
                       : 30;
    o->max_bytes = max_bytes;
}
