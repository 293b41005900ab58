/* Pulling dcgm-exporter metrics: straight from an exporter's /metrics
 * (text format), or from a Prometheus server that scrapes exporters (HTTP
 * API instant query). Both feed the same dcgm consumer. */
#include "collect/curlso.h"
#include "collect/httpget.h"
#include "collect/pull.h"
#include "core/observation.h"
#include "core/status.h"
#include "core/util.h"
#include "parse/dcgm.h"
#include "parse/promapi.h"
#include "parse/promtext.h"

#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#define PULL_MAX_BODY (256u << 20)
#define DEFAULT_QUERY "{__name__=~\"DCGM_FI_.*\"}"

/* Gives MIG records (which dcgm-exporter reports without a UUID) a stable
 * id from their parent and instance, and copies the pods seen per GPU. */
static int finish(struct dcgm *d, struct gi_obs_set *set, char *err, size_t errlen)
{
    dcgm_finish(d);
    for (size_t i = 0; i < set->ngpus; i++) {
        struct gi_gpu_obs *g = &set->gpus[i];
        if (g->uuid[0] == '\0' && g->parent_uuid[0] && g->mig_instance >= 0)
            snprintf(g->uuid, sizeof g->uuid, "MIG-%.80s/%d", g->parent_uuid, g->mig_instance);
    }
    for (size_t i = 0; i < d->npods; i++) {
        const struct dcgm_pod *p = &d->pods[i];
        struct gi_pod_obs *o;
        if (p->pod[0] == '\0' || p->gpu_uuid[0] == '\0')
            continue;
        if ((o = gi_obs_add_pod(set)) == NULL) {
            snprintf(err, errlen, "too many pods");
            return -1;
        }
        if (p->mig_instance >= 0)
            snprintf(o->gpu_uuid, sizeof o->gpu_uuid, "MIG-%.80s/%d", p->gpu_uuid, p->mig_instance);
        else
            gi_strlcpy(o->gpu_uuid, p->gpu_uuid, sizeof o->gpu_uuid);
        gi_strlcpy(o->namespace_, p->namespace_, sizeof o->namespace_);
        gi_strlcpy(o->pod, p->pod, sizeof o->pod);
        gi_strlcpy(o->container, p->container, sizeof o->container);
    }
    return 0;
}

int pull_prom_get(const char *url, const json_t *cfg, char **body, size_t *len, char *err,
                  size_t errlen)
{
    struct httpget_opts o;
    long status;

    pull_http_opts(cfg, &o, PULL_MAX_BODY);
    if (httpget(url, &o, body, len, &status, err, errlen) != 0)
        return -1;
    if (status < 200 || status > 299) {
        /* Prometheus explains its errors in the body: keep that. */
        if (status != 400 && status != 422 && status != 503) {
            snprintf(err, errlen, "HTTP %ld from %s", status, url);
            free(*body);
            *body = NULL;
            return -1;
        }
    }
    return 0;
}

int pull_fetch_dcgm(const json_t *cfg, struct gi_obs_set *set, char *err, size_t errlen)
{
    const char *url = json_string_value(json_object_get(cfg, "url"));
    struct dcgm d;
    struct prom_error pe = {0};
    char *body = NULL;
    size_t len;
    int rc;

    if (pull_prom_get(url, cfg, &body, &len, err, errlen) != 0)
        return -1;
    dcgm_begin(&d, set);
    rc = prom_parse_text(body, len, dcgm_sample, &d, &pe);
    free(body);
    if (rc != GI_OK) {
        snprintf(err, errlen, "%s: %s", url, pe.msg[0] ? pe.msg : gi_status_name(rc));
        dcgm_free(&d);
        return -1;
    }
    rc = finish(&d, set, err, errlen);
    dcgm_free(&d);
    return rc;
}

int pull_fetch_prometheus(const json_t *cfg, struct gi_obs_set *set, char *err, size_t errlen)
{
    const char *base = json_string_value(json_object_get(cfg, "url"));
    const char *query = json_string_value(json_object_get(cfg, "query"));
    struct dcgm d;
    struct prom_error pe = {0};
    char *body = NULL, *q, url[4096];
    size_t len;
    int rc;

    q = curlso->easy_escape(NULL, query && *query ? query : DEFAULT_QUERY, 0);
    if (q == NULL) {
        snprintf(err, errlen, "out of memory");
        return -1;
    }
    snprintf(url, sizeof url, "%s%sapi/v1/query?query=%s", base,
             base[strlen(base) - 1] == '/' ? "" : "/", q);
    curlso->free(q);
    if (pull_prom_get(url, cfg, &body, &len, err, errlen) != 0)
        return -1;
    dcgm_begin(&d, set);
    rc = promapi_parse(body, len, dcgm_sample, &d, &pe);
    free(body);
    if (rc != GI_OK) {
        snprintf(err, errlen, "Prometheus at %s: %s%s%s", base, pe.api_type,
                 pe.api_type[0] ? ": " : "", pe.msg[0] ? pe.msg : gi_status_name(rc));
        dcgm_free(&d);
        return -1;
    }
    rc = finish(&d, set, err, errlen);
    dcgm_free(&d);
    return rc;
}
