/* prometheus-generic: GPUs from any metrics a team already exports, read
 * through the mapping in the source's config (parse/prommap.h). Either a
 * Prometheus server (url: one instant query through the HTTP API for the
 * mapped metrics) or an exporter scraped directly (exporter_url: the text
 * format). In scraped text a line that does not parse (an unreadable
 * value) leaves out only that line: its field is absent, counted as a
 * warning, and the rest of the page is read. */
#include "collect/curlso.h"
#include "collect/pull.h"
#include "core/observation.h"
#include "core/status.h"
#include "core/util.h"
#include "parse/promapi.h"
#include "parse/prommap.h"
#include "parse/promtext.h"

#include <stdio.h>
#include <stdlib.h>
#include <string.h>

/* Past this many unreadable lines the page is not a metrics page. */
#define MAX_BAD_LINES 1000

int pull_generic_config_check(const json_t *cfg, char *field, size_t flen, char *msg, size_t mlen)
{
    bool api = json_is_string(json_object_get(cfg, "url"));
    bool text = json_is_string(json_object_get(cfg, "exporter_url"));
    struct prommap m;

    if (api && text) {
        snprintf(field, flen, "config.exporter_url");
        snprintf(msg, mlen, "config.url and config.exporter_url exclude each other: give one");
        return -1;
    }
    if (!api && !text) {
        snprintf(field, flen, "config.url");
        snprintf(msg, mlen,
                 "config.url (a Prometheus server) or config.exporter_url (an exporter's "
                 "metrics page) is required");
        return -1;
    }
    return prommap_read(json_object_get(cfg, "mapping"), &m, field, flen, msg, mlen);
}

/* Reads scraped text, going on after each line that does not parse. */
static int read_text(const char *url, const char *body, size_t len, struct prommap_pull *p,
                     struct gi_obs_set *set, char *err, size_t errlen)
{
    size_t pos = 0, line0 = 0, nbad = 0;
    struct prom_error pe;
    int rc;

    for (;;) {
        memset(&pe, 0, sizeof pe);
        rc = prom_parse_text(body + pos, len - pos, prommap_sample, p, &pe);
        if (rc != GI_INVALID || pe.line == 0)
            break;
        if (++nbad > MAX_BAD_LINES) {
            snprintf(err, errlen, "%s: more than %d lines do not parse; the first: line %zu: %s",
                     url, MAX_BAD_LINES, line0 + pe.line, pe.msg);
            return -1;
        }
        gi_obs_warn(set, "%.100s line %zu: %.120s; left out", url, line0 + pe.line, pe.msg);
        /* Skip to the end of the line that failed. */
        for (size_t l = 1; pos < len; pos++) {
            if (body[pos] == '\n' && l++ == pe.line) {
                pos++;
                break;
            }
        }
        line0 += pe.line;
        if (pos >= len) {
            rc = GI_OK;
            break;
        }
    }
    if (rc != GI_OK) {
        snprintf(err, errlen, "%s: %s", url, pe.msg[0] ? pe.msg : gi_status_name(rc));
        return -1;
    }
    return 0;
}

/* One instant query for the mapped metrics. */
static int read_api(const json_t *cfg, const struct prommap *m, struct prommap_pull *p, char *err,
                    size_t errlen)
{
    const char *base = json_string_value(json_object_get(cfg, "url"));
    struct prom_error pe = {0};
    char sel[4096], url[8192], *q, *body = NULL;
    size_t len = 0;
    int rc;

    if (prommap_selector(m, sel, sizeof sel) != 0) {
        snprintf(err, errlen, "the mapped metric names are too long for one query");
        return -1;
    }
    if ((q = curlso->easy_escape(NULL, sel, 0)) == NULL) {
        snprintf(err, errlen, "out of memory");
        return -1;
    }
    snprintf(url, sizeof url, "%s%sapi/v1/query?query=%s", base,
             base[strlen(base) - 1] == '/' ? "" : "/", q);
    curlso->free(q);
    if (pull_prom_get(url, cfg, &body, &len, err, errlen) != 0)
        return -1;
    rc = promapi_parse(body, len, prommap_sample, p, &pe);
    free(body);
    if (rc != GI_OK) {
        snprintf(err, errlen, "Prometheus at %s: %s%s%s", base, pe.api_type,
                 pe.api_type[0] ? ": " : "", pe.msg[0] ? pe.msg : gi_status_name(rc));
        return -1;
    }
    return 0;
}

int pull_fetch_generic(const json_t *cfg, struct gi_obs_set *set, char *err, size_t errlen)
{
    const char *exporter = json_string_value(json_object_get(cfg, "exporter_url"));
    struct prommap m;
    struct prommap_pull p;
    char field[80], msg[256];
    int rc;

    /* The config was checked when stored; a mapping that no longer reads
     * is reported, not guessed at. */
    if (prommap_read(json_object_get(cfg, "mapping"), &m, field, sizeof field, msg, sizeof msg) !=
        0) {
        snprintf(err, errlen, "%s: %s", field, msg);
        return -1;
    }
    prommap_begin(&p, &m, set);
    if (exporter) {
        char *body = NULL;
        size_t len = 0;
        rc = pull_prom_get(exporter, cfg, &body, &len, err, errlen);
        if (rc == 0)
            rc = read_text(exporter, body, len, &p, set, err, errlen);
        free(body);
    } else {
        rc = read_api(cfg, &m, &p, err, errlen);
    }
    if (rc == 0)
        prommap_finish(&p);
    prommap_free(&p);
    return rc;
}
