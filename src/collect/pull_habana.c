/* Pulling the Intel Gaudi metric exporter (gaudi-metric-exporter, the
 * habanalabs_* metrics) straight from a node's /metrics. */
#include "collect/httpget.h"
#include "collect/pull.h"
#include "core/observation.h"
#include "core/status.h"
#include "core/util.h"
#include "parse/hlexport.h"
#include "parse/promtext.h"

#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#define HABANA_MAX_BODY (64u << 20)

/* The host part of an http(s) URL ("10.20.3.7" of
 * "http://10.20.3.7:41611/metrics"). */
static void url_host(const char *url, char *out, size_t cap)
{
    const char *a = strstr(url, "://"), *end;
    size_t n;

    out[0] = '\0';
    if (a == NULL)
        return;
    a += 3;
    if (*a == '[') { /* an IPv6 literal */
        end = strchr(a, ']');
        if (end == NULL)
            return;
        a++;
    } else {
        end = a + strcspn(a, ":/?#");
    }
    n = (size_t)(end - a);
    if (n == 0 || n >= cap)
        return;
    memcpy(out, a, n);
    out[n] = '\0';
}

int pull_fetch_habana(const json_t *cfg, struct gi_obs_set *set, char *err, size_t errlen)
{
    const char *url = json_string_value(json_object_get(cfg, "url"));
    const char *host = json_string_value(json_object_get(cfg, "hostname"));
    char from_url[GI_HOST_LEN];
    struct httpget_opts o;
    struct prom_error pe = {0};
    struct hlexp h;
    char *body = NULL;
    size_t len;
    long status;
    int rc;

    pull_http_opts(cfg, &o, HABANA_MAX_BODY);
    if (httpget(url, &o, &body, &len, &status, err, errlen) != 0)
        return -1;
    if (status < 200 || status > 299) {
        if (status == 429)
            snprintf(err, errlen,
                     "HTTP 429 from %s: the exporter answers one scrape per 5 s; another "
                     "scraper (Prometheus) may share it, or the interval is too short",
                     url);
        else
            snprintf(err, errlen, "HTTP %ld from %s", status, url);
        free(body);
        return -1;
    }
    hlexp_begin(&h, set);
    h.hostname = host;
    rc = prom_parse_text(body, len, hlexp_sample, &h, &pe);
    free(body);
    if (rc == GI_OK && (rc = hlexp_finish(&h)) == GI_NOT_FOUND) {
        snprintf(err, errlen,
                 "%s: no habanalabs_ device series (the exporter drops them all when HLML "
                 "fails on the node)",
                 url);
        hlexp_free(&h);
        return -1;
    }
    /* Without a configured host or habanalabs_kube_info, the node is known
     * by the address the exporter listens on (it runs with the node's
     * network). */
    url_host(url, from_url, sizeof from_url);
    for (size_t i = 0; rc == GI_OK && i < set->ngpus; i++)
        if (set->gpus[i].hostname[0] == '\0')
            gi_strlcpy(set->gpus[i].hostname, from_url, sizeof set->gpus[i].hostname);
    if (rc != GI_OK) {
        snprintf(err, errlen, "%s: %s", url, pe.msg[0] ? pe.msg : gi_status_name(rc));
        hlexp_free(&h);
        return -1;
    }
    if (h.skipped > 0)
        gi_obs_warn(set, "%zu habanalabs_ sample(s) named no device (UUID \"na\", no serial)",
                    h.skipped);
    hlexp_free(&h);
    return 0;
}
