/* Prometheus HTTP API response parser; see promapi.h. */
#include "parse/promapi.h"
#include "core/status.h"

#include <jansson.h>
#include <math.h>
#include <stdarg.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

/* State of one parse. */
struct api {
    prom_sample_fn fn;
    void *ctx;
    struct prom_error *err;
    size_t nsamples;
    struct prom_label labels[PROM_MAX_LABELS];
};

/* Records an error (prefixed with the item path, if any) and returns st. */
__attribute__((format(printf, 4, 5))) static int fail(struct api *a, int st, const char *where,
                                                      const char *fmt, ...)
{
    char why[200];
    va_list ap;

    va_start(ap, fmt);
    vsnprintf(why, sizeof why, fmt, ap);
    va_end(ap);
    if (where && *where)
        snprintf(a->err->msg, sizeof a->err->msg, "%s: %s", where, why);
    else
        snprintf(a->err->msg, sizeof a->err->msg, "%s", why);
    return st;
}

/* Maps an errorType to a status: transient server conditions may succeed
 * on retry. */
static int error_status(const char *type)
{
    static const char *const transient[] = {"timeout", "canceled", "unavailable", "internal"};

    for (size_t i = 0; i < sizeof transient / sizeof *transient; i++)
        if (strcmp(type, transient[i]) == 0)
            return GI_UNAVAILABLE;
    if (strcmp(type, "not_found") == 0)
        return GI_NOT_FOUND;
    return GI_INVALID;
}

/* Fills a->labels from a metric object; *name gets __name__ ("" without
 * one). where names the item for errors. */
static int read_metric(struct api *a, json_t *metric, const char *where, const char **name,
                       size_t *nlabels)
{
    const char *key;
    json_t *v;
    size_t n = 0;

    *name = "";
    if (metric == NULL) {
        *nlabels = 0;
        return GI_OK;
    }
    if (!json_is_object(metric))
        return fail(a, GI_INVALID, where, "\"metric\" is not an object");
    json_object_foreach(metric, key, v) {
        if (!json_is_string(v))
            return fail(a, GI_INVALID, where, "label \"%.64s\" is not a string", key);
        if (strlen(key) > PROM_MAX_NAME)
            return fail(a, GI_TOO_LARGE, where, "label name longer than %d bytes", PROM_MAX_NAME);
        if (json_string_length(v) > PROM_MAX_VALUE)
            return fail(a, GI_TOO_LARGE, where, "label value longer than %d bytes", PROM_MAX_VALUE);
        if (strcmp(key, "__name__") == 0) {
            *name = json_string_value(v);
            continue;
        }
        if (n == PROM_MAX_LABELS)
            return fail(a, GI_TOO_LARGE, where, "more than %d labels", PROM_MAX_LABELS);
        a->labels[n].name = key;
        a->labels[n].value = json_string_value(v);
        n++;
    }
    *nlabels = n;
    return GI_OK;
}

/* Delivers one [time, "value"] pair as a sample. */
static int emit(struct api *a, json_t *pair, const char *name, size_t nlabels, const char *where)
{
    struct prom_sample s;
    json_t *t, *v;
    double secs;
    int rc;

    if (!json_is_array(pair) || json_array_size(pair) != 2)
        return fail(a, GI_INVALID, where, "expected [time, \"value\"]");
    t = json_array_get(pair, 0);
    v = json_array_get(pair, 1);
    if (!json_is_number(t))
        return fail(a, GI_INVALID, where, "time is not a number");
    secs = json_number_value(t);
    if (!isfinite(secs) || fabs(secs) > 9.2e15)
        return fail(a, GI_INVALID, where, "time out of range");
    if (!json_is_string(v))
        return fail(a, GI_INVALID, where, "value is not a string");
    memset(&s, 0, sizeof s);
    if (prom_parse_value(json_string_value(v), json_string_length(v), &s.value) != 0)
        return fail(a, GI_INVALID, where, "invalid value \"%.32s\"", json_string_value(v));
    if (++a->nsamples > PROM_MAX_SAMPLES)
        return fail(a, GI_TOO_LARGE, where, "more than %d samples", PROM_MAX_SAMPLES);
    s.name = name;
    s.labels = a->labels;
    s.nlabels = nlabels;
    s.has_ts = true;
    s.ts_ms = (int64_t)llround(secs * 1000.0);
    s.type = PROM_UNTYPED;
    a->err->line = 0;
    a->err->msg[0] = '\0';
    rc = a->fn(a->ctx, &s, a->err);
    if (rc != GI_OK) {
        char why[sizeof a->err->msg];
        memcpy(why, a->err->msg, sizeof why);
        return fail(a, rc, where, "%s", why[0] ? why : "sample rejected by the consumer");
    }
    return GI_OK;
}

/* Delivers the samples of one vector or matrix item. */
static int read_item(struct api *a, json_t *item, size_t idx, int matrix)
{
    char where[64];
    const char *name = "";
    size_t nlabels = 0, i;
    json_t *pts, *pt;
    int rc;

    snprintf(where, sizeof where, "data.result[%zu]", idx);
    if (!json_is_object(item))
        return fail(a, GI_INVALID, where, "not an object");
    if ((rc = read_metric(a, json_object_get(item, "metric"), where, &name, &nlabels)) != GI_OK)
        return rc;
    if (!matrix) {
        json_t *v = json_object_get(item, "value");
        if (v == NULL && json_object_get(item, "histogram"))
            return GI_OK;
        snprintf(where, sizeof where, "data.result[%zu].value", idx);
        return emit(a, v, name, nlabels, where);
    }
    pts = json_object_get(item, "values");
    if (pts == NULL && json_object_get(item, "histograms"))
        return GI_OK;
    snprintf(where, sizeof where, "data.result[%zu].values", idx);
    if (!json_is_array(pts))
        return fail(a, GI_INVALID, where, "not an array");
    json_array_foreach(pts, i, pt) {
        snprintf(where, sizeof where, "data.result[%zu].values[%zu]", idx, i);
        if ((rc = emit(a, pt, name, nlabels, where)) != GI_OK)
            return rc;
    }
    return GI_OK;
}

/* Reads the envelope and walks data.result. */
static int read_root(struct api *a, json_t *root)
{
    json_t *status, *data, *rtype, *result, *item;
    const char *type;
    size_t i;
    int rc;

    if (!json_is_object(root))
        return fail(a, GI_INVALID, NULL, "response is not a JSON object");
    status = json_object_get(root, "status");
    if (!json_is_string(status))
        return fail(a, GI_INVALID, NULL, "missing \"status\"");
    if (strcmp(json_string_value(status), "success") != 0) {
        json_t *et = json_object_get(root, "errorType");
        json_t *em = json_object_get(root, "error");
        const char *ets = json_is_string(et) ? json_string_value(et) : "";
        snprintf(a->err->api_type, sizeof a->err->api_type, "%s", ets);
        return fail(a, error_status(ets), NULL, "prometheus %s (%s): %s", json_string_value(status),
                    *ets ? ets : "no errorType",
                    json_is_string(em) ? json_string_value(em) : "no message");
    }
    data = json_object_get(root, "data");
    if (!json_is_object(data))
        return fail(a, GI_INVALID, NULL, "missing \"data\" object");
    rtype = json_object_get(data, "resultType");
    result = json_object_get(data, "result");
    if (!json_is_string(rtype))
        return fail(a, GI_INVALID, "data", "missing \"resultType\"");
    type = json_string_value(rtype);
    if (strcmp(type, "scalar") == 0)
        return emit(a, result, "", 0, "data.result");
    if (strcmp(type, "vector") != 0 && strcmp(type, "matrix") != 0)
        return fail(a, GI_INVALID, "data", "resultType \"%.32s\" carries no samples", type);
    if (!json_is_array(result))
        return fail(a, GI_INVALID, "data.result", "not an array");
    json_array_foreach(result, i, item) {
        if ((rc = read_item(a, item, i, type[0] == 'm')) != GI_OK)
            return rc;
    }
    return GI_OK;
}

int promapi_parse(const char *data, size_t len, prom_sample_fn fn, void *ctx,
                  struct prom_error *err)
{
    struct prom_error spare;
    struct api *a = NULL;
    json_t *root = NULL;
    json_error_t jerr;
    int rc;

    if (err == NULL)
        err = &spare;
    memset(err, 0, sizeof *err);
    if (len > PROMAPI_MAX_BYTES) {
        snprintf(err->msg, sizeof err->msg, "response larger than %u bytes", PROMAPI_MAX_BYTES);
        rc = GI_TOO_LARGE;
        goto cleanup;
    }
    root = json_loadb(data, len, 0, &jerr);
    if (root == NULL) {
        err->line = jerr.line > 0 ? (size_t)jerr.line : 0;
        snprintf(err->msg, sizeof err->msg, "invalid JSON at line %d column %d: %s", jerr.line,
                 jerr.column, jerr.text);
        rc = GI_INVALID;
        goto cleanup;
    }
    if ((a = calloc(1, sizeof *a)) == NULL) {
        snprintf(err->msg, sizeof err->msg, "out of memory");
        rc = GI_INTERNAL;
        goto cleanup;
    }
    a->fn = fn;
    a->ctx = ctx;
    a->err = err;
    rc = read_root(a, root);
    if (rc == GI_OK)
        err->msg[0] = '\0';
    err->line = 0;
cleanup:
    free(a);
    json_decref(root);
    return rc;
}
