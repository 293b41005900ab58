/* Declared Prometheus metric mapping; see prommap.h. */
#include "parse/prommap.h"
#include "core/status.h"
#include "core/util.h"

#include <math.h>
#include <stdarg.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

static const char *const field_names[PM_NFIELDS] = {"utilization", "memory_used", "memory_total",
                                                    "power", "temperature"};

const char *prommap_field_name(enum prommap_field f) { return field_names[f]; }

/* The units a field accepts and each one's factor to gpuinv's unit. */
struct unit {
    enum prommap_field field;
    const char *name;
    double scale;
};
static const struct unit units[] = {
    {PM_UTIL, "percent", 1},
    {PM_UTIL, "ratio", 100},
    {PM_MEM_USED, "bytes", 1.0 / (1024 * 1024)},
    {PM_MEM_USED, "kib", 1.0 / 1024},
    {PM_MEM_USED, "mib", 1},
    {PM_MEM_USED, "gib", 1024},
    {PM_MEM_USED, "kb", 1e3 / (1024 * 1024)},
    {PM_MEM_USED, "mb", 1e6 / (1024 * 1024)},
    {PM_MEM_USED, "gb", 1e9 / (1024 * 1024)},
    {PM_POWER, "watts", 1},
    {PM_POWER, "milliwatts", 1e-3},
    {PM_POWER, "microwatts", 1e-6},
    {PM_TEMP, "celsius", 1},
    {PM_TEMP, "millicelsius", 1e-3},
};

static int bad(char *field, size_t flen, char *msg, size_t mlen, const char *path, const char *fmt,
               ...) __attribute__((format(printf, 6, 7)));

static int bad(char *field, size_t flen, char *msg, size_t mlen, const char *path, const char *fmt,
               ...)
{
    va_list ap;

    snprintf(field, flen, "config.mapping%s%s", path ? "." : "", path ? path : "");
    va_start(ap, fmt);
    vsnprintf(msg, mlen, fmt, ap);
    va_end(ap);
    return -1;
}

/* True for a Prometheus metric name ([a-zA-Z_:][a-zA-Z0-9_:]*), or a
 * label name when metric is false (no ':'). */
static bool prom_name_ok(const char *s, bool metric)
{
    size_t n = strlen(s);

    if (n == 0 || n > PROM_MAX_NAME || (s[0] >= '0' && s[0] <= '9'))
        return false;
    for (size_t i = 0; i < n; i++) {
        char c = s[i];
        if (!((c >= 'a' && c <= 'z') || (c >= 'A' && c <= 'Z') || (c >= '0' && c <= '9') ||
              c == '_' || (metric && c == ':')))
            return false;
    }
    return true;
}

/* Reads a label name key of obj (at path) into *out; required or not. */
static int label_key(const json_t *obj, const char *key, const char *path, bool required,
                     const char **out, char *field, size_t flen, char *msg, size_t mlen)
{
    const json_t *v = json_object_get(obj, key);

    *out = NULL;
    if (v == NULL || json_is_null(v)) {
        if (required)
            return bad(field, flen, msg, mlen, path, "config.mapping.%s is required", path);
        return 0;
    }
    if (!json_is_string(v) || !prom_name_ok(json_string_value(v), false))
        return bad(field, flen, msg, mlen, path,
                   "config.mapping.%s must be a Prometheus label name ([a-zA-Z_][a-zA-Z0-9_]*)",
                   path);
    *out = json_string_value(v);
    return 0;
}

/* Reads one value field: {metric, unit | scale, match}. */
static int read_value(const json_t *o, enum prommap_field f, struct prommap_value *v, char *field,
                      size_t flen, char *msg, size_t mlen)
{
    static const char *const allowed[] = {"metric", "unit", "scale", "match"};
    const char *name = field_names[f], *key;
    const json_t *metric, *unit, *scale, *match, *x;
    char path[64];

    if (!json_is_object(o))
        return bad(field, flen, msg, mlen, name,
                   "config.mapping.%s must be an object {\"metric\", \"unit\" or \"scale\"}", name);
    json_object_foreach((json_t *)o, key, x) {
        size_t i = 0;
        while (i < sizeof allowed / sizeof *allowed && strcmp(allowed[i], key) != 0)
            i++;
        if (i == sizeof allowed / sizeof *allowed) {
            snprintf(path, sizeof path, "%s.%.40s", name, key);
            return bad(field, flen, msg, mlen, path,
                       "config.mapping.%s is not a setting of a mapped field (metric, unit, "
                       "scale, match)",
                       path);
        }
    }
    metric = json_object_get(o, "metric");
    snprintf(path, sizeof path, "%s.metric", name);
    if (!json_is_string(metric))
        return bad(field, flen, msg, mlen, path, "config.mapping.%s is required", path);
    if (!prom_name_ok(json_string_value(metric), true))
        return bad(field, flen, msg, mlen, path,
                   "config.mapping.%s must be a Prometheus metric name ([a-zA-Z_:][a-zA-Z0-9_:]*)",
                   path);
    v->metric = json_string_value(metric);
    unit = json_object_get(o, "unit");
    scale = json_object_get(o, "scale");
    if ((unit == NULL) == (scale == NULL)) {
        snprintf(path, sizeof path, "%s.unit", name);
        return bad(field, flen, msg, mlen, path,
                   "config.mapping.%s.unit or config.mapping.%s.scale is required (one of them)",
                   name, name);
    }
    if (unit) {
        const struct unit *u = NULL;
        char list[160] = "";
        size_t used = 0;
        snprintf(path, sizeof path, "%s.unit", name);
        for (size_t i = 0; i < sizeof units / sizeof *units; i++) {
            enum prommap_field uf = units[i].field;
            if (uf != f && !(uf == PM_MEM_USED && f == PM_MEM_TOTAL))
                continue;
            if (json_is_string(unit) && strcmp(units[i].name, json_string_value(unit)) == 0)
                u = &units[i];
            used += (size_t)snprintf(list + used, used < sizeof list ? sizeof list - used : 0,
                                     "%s%s", used ? ", " : "", units[i].name);
            if (used >= sizeof list)
                used = sizeof list - 1;
        }
        if (u == NULL)
            return bad(field, flen, msg, mlen, path, "config.mapping.%s must be one of %s", path,
                       list);
        v->scale = u->scale;
    } else {
        snprintf(path, sizeof path, "%s.scale", name);
        if (!json_is_number(scale) || !isfinite(json_number_value(scale)) ||
            json_number_value(scale) == 0 || fabs(json_number_value(scale)) > 1e12)
            return bad(field, flen, msg, mlen, path,
                       "config.mapping.%s must be a number other than 0 (the factor to %s)", path,
                       f == PM_UTIL    ? "percent"
                       : f == PM_POWER ? "watts"
                       : f == PM_TEMP  ? "degrees Celsius"
                                       : "MiB");
        v->scale = json_number_value(scale);
    }
    match = json_object_get(o, "match");
    v->nmatch = 0;
    if (match && !json_is_null(match)) {
        snprintf(path, sizeof path, "%s.match", name);
        if (!json_is_object(match) || json_object_size(match) > PROMMAP_MAX_MATCH)
            return bad(field, flen, msg, mlen, path,
                       "config.mapping.%s must be an object of at most %d label values", path,
                       PROMMAP_MAX_MATCH);
        json_object_foreach((json_t *)match, key, x) {
            if (!prom_name_ok(key, false) || !json_is_string(x))
                return bad(field, flen, msg, mlen, path,
                           "config.mapping.%s.%.40s must be a label name with a text value", path,
                           key);
            v->match[v->nmatch].name = key;
            v->match[v->nmatch].value = json_string_value(x);
            v->nmatch++;
        }
    }
    return 0;
}

int prommap_read(const json_t *mapping, struct prommap *m, char *field, size_t flen, char *msg,
                 size_t mlen)
{
    static const char *const top[] = {"uuid_label", "host_label", "index_label", "model"};
    const json_t *model, *x;
    const char *key;
    bool any = false;

    memset(m, 0, sizeof *m);
    if (!json_is_object(mapping))
        return bad(field, flen, msg, mlen, NULL, "config.mapping must be an object");
    json_object_foreach((json_t *)mapping, key, x) {
        bool known = false;
        for (size_t i = 0; i < sizeof top / sizeof *top; i++)
            known = known || strcmp(top[i], key) == 0;
        for (size_t i = 0; i < PM_NFIELDS; i++)
            known = known || strcmp(field_names[i], key) == 0;
        if (!known)
            return bad(field, flen, msg, mlen, key,
                       "config.mapping.%.40s is not a mapping key (uuid_label, host_label, "
                       "index_label, model, utilization, memory_used, memory_total, power, "
                       "temperature)",
                       key);
    }
    if (label_key(mapping, "uuid_label", "uuid_label", true, &m->uuid_label, field, flen, msg,
                  mlen) != 0 ||
        label_key(mapping, "host_label", "host_label", true, &m->host_label, field, flen, msg,
                  mlen) != 0 ||
        label_key(mapping, "index_label", "index_label", false, &m->index_label, field, flen, msg,
                  mlen) != 0)
        return -1;
    model = json_object_get(mapping, "model");
    if (model && !json_is_null(model)) {
        const json_t *metric = json_object_get(model, "metric");
        if (!json_is_object(model))
            return bad(field, flen, msg, mlen, "model",
                       "config.mapping.model must be an object {\"label\", \"metric\"}");
        json_object_foreach((json_t *)model, key, x) {
            if (strcmp(key, "label") != 0 && strcmp(key, "metric") != 0)
                return bad(field, flen, msg, mlen, "model",
                           "config.mapping.model.%.40s is not a setting of model (label, metric)",
                           key);
        }
        if (label_key(model, "label", "model.label", true, &m->model_label, field, flen, msg,
                      mlen) != 0)
            return -1;
        if (metric && !json_is_null(metric)) {
            if (!json_is_string(metric) || !prom_name_ok(json_string_value(metric), true))
                return bad(field, flen, msg, mlen, "model.metric",
                           "config.mapping.model.metric must be a Prometheus metric name");
            m->model_metric = json_string_value(metric);
            any = true;
        }
    }
    for (size_t i = 0; i < PM_NFIELDS; i++) {
        const json_t *o = json_object_get(mapping, field_names[i]);
        if (o == NULL || json_is_null(o))
            continue;
        if (read_value(o, (enum prommap_field)i, &m->v[i], field, flen, msg, mlen) != 0)
            return -1;
        any = true;
    }
    if (!any)
        return bad(field, flen, msg, mlen, NULL,
                   "config.mapping maps no metric: give at least one of utilization, "
                   "memory_used, memory_total, power, temperature or model.metric");
    return 0;
}

int prommap_selector(const struct prommap *m, char *buf, size_t len)
{
    const char *names[PM_NFIELDS + 1];
    size_t n = 0, used;
    int w;

    if (m->model_metric)
        names[n++] = m->model_metric;
    for (size_t i = 0; i < PM_NFIELDS; i++) {
        bool seen = false;
        if (m->v[i].metric == NULL)
            continue;
        for (size_t k = 0; k < n; k++)
            seen = seen || strcmp(names[k], m->v[i].metric) == 0;
        if (!seen)
            names[n++] = m->v[i].metric;
    }
    w = snprintf(buf, len, "{__name__=~\"");
    used = w > 0 ? (size_t)w : 0;
    for (size_t k = 0; k < n && used < len; k++) {
        w = snprintf(buf + used, len - used, "%s%s", k ? "|" : "", names[k]);
        used += w > 0 ? (size_t)w : 0;
    }
    if (used < len) {
        w = snprintf(buf + used, len - used, "\"}");
        used += w > 0 ? (size_t)w : 0;
    }
    return used < len ? 0 : -1;
}

void prommap_begin(struct prommap_pull *p, const struct prommap *m, struct gi_obs_set *out)
{
    memset(p, 0, sizeof *p);
    p->m = m;
    p->out = out;
    p->first = out->ngpus;
}

void prommap_free(struct prommap_pull *p)
{
    free(p->slots);
    p->slots = NULL;
    p->nslots = 0;
}

static size_t hash(const char *s)
{
    size_t h = 1469598103934665603u;

    while (*s)
        h = (h ^ (unsigned char)*s++) * 1099511628211u;
    return h;
}

/* Rebuilds the hash with room for twice the records. */
static int grow(struct prommap_pull *p)
{
    size_t n = p->nslots ? p->nslots * 2 : 256;
    size_t *slots = calloc(n, sizeof *slots);

    if (slots == NULL)
        return -1;
    for (size_t i = p->first; i < p->out->ngpus; i++) {
        size_t h = hash(p->out->gpus[i].uuid) & (n - 1);
        while (slots[h])
            h = (h + 1) & (n - 1);
        slots[h] = i + 1;
    }
    free(p->slots);
    p->slots = slots;
    p->nslots = n;
    return 0;
}

/* The record of uuid, added (with host) when new; NULL past the cap or
 * out of memory. */
static struct gi_gpu_obs *record(struct prommap_pull *p, const char *uuid, const char *host)
{
    struct gi_gpu_obs *g;
    size_t h;

    if ((p->out->ngpus - p->first + 1) * 2 > p->nslots && grow(p) != 0)
        return NULL;
    for (h = hash(uuid) & (p->nslots - 1); p->slots[h]; h = (h + 1) & (p->nslots - 1))
        if (strcmp(p->out->gpus[p->slots[h] - 1].uuid, uuid) == 0)
            return &p->out->gpus[p->slots[h] - 1];
    if ((g = gi_obs_add_gpu(p->out)) == NULL)
        return NULL;
    gi_strlcpy(g->uuid, uuid, sizeof g->uuid);
    gi_strlcpy(g->hostname, host, sizeof g->hostname);
    p->slots[h] = p->out->ngpus;
    return g;
}

/* The host of a label value: "node1:9100" and "[::1]:9100" lose their
 * port (a Prometheus instance label names the scraped endpoint). */
static void host_of(const char *v, char *out, size_t len)
{
    const char *colon = strrchr(v, ':');
    size_t n = strlen(v);
    bool port = colon && colon[1] != '\0' && strspn(colon + 1, "0123456789") == strlen(colon + 1);

    if (port && v[0] == '[' && colon > v && colon[-1] == ']')
        n = (size_t)(colon - v) - 2, v++;
    else if (port && strchr(v, ':') == colon)
        n = (size_t)(colon - v);
    snprintf(out, len, "%.*s", (int)n, v);
}

/* Counts a skipped sample, keeping the first reason. */
static void skip(struct prommap_pull *p, const char *name, const char *label)
{
    if (p->skipped++ == 0)
        snprintf(p->skipped_why, sizeof p->skipped_why, "%.60s has no usable label %.60s", name,
                 label);
}

static bool matches(const struct prommap_value *v, const struct prom_sample *s)
{
    if (v->metric == NULL || strcmp(v->metric, s->name) != 0)
        return false;
    for (size_t i = 0; i < v->nmatch; i++) {
        const char *have = prom_label_get(s, v->match[i].name);
        if (have == NULL || strcmp(have, v->match[i].value) != 0)
            return false;
    }
    return true;
}

int prommap_sample(void *ctx, const struct prom_sample *s, struct prom_error *err)
{
    struct prommap_pull *p = ctx;
    const struct prommap *m = p->m;
    const char *uuid, *host, *model;
    char hostname[GI_HOST_LEN];
    struct gi_gpu_obs *g;
    bool relevant = m->model_metric && strcmp(m->model_metric, s->name) == 0;
    bool hit[PM_NFIELDS];

    for (size_t i = 0; i < PM_NFIELDS; i++)
        relevant = (hit[i] = matches(&m->v[i], s)) || relevant;
    if (!relevant)
        return GI_OK;
    uuid = prom_label_get(s, m->uuid_label);
    host = prom_label_get(s, m->host_label);
    if (uuid == NULL || gi_is_placeholder(uuid) || strlen(uuid) >= GI_UUID_LEN) {
        skip(p, s->name, m->uuid_label);
        return GI_OK;
    }
    if (host == NULL || gi_is_placeholder(host)) {
        skip(p, s->name, m->host_label);
        return GI_OK;
    }
    host_of(host, hostname, sizeof hostname);
    if ((g = record(p, uuid, hostname)) == NULL) {
        snprintf(err->msg, sizeof err->msg, "more than %d GPUs, or out of memory", GI_OBS_MAX);
        return p->out->ngpus >= GI_OBS_MAX ? GI_TOO_LARGE : GI_INTERNAL;
    }
    if (s->has_ts && s->ts_ms > g->ts_ms)
        g->ts_ms = s->ts_ms;
    if (m->index_label && g->index < 0) {
        const char *ix = prom_label_get(s, m->index_label);
        int64_t n;
        if (ix && gi_parse_int64(ix, 0, 1 << 20, &n) == GI_OK)
            g->index = (int)n;
    }
    if (m->model_label && (m->model_metric == NULL || strcmp(m->model_metric, s->name) == 0) &&
        (model = prom_label_get(s, m->model_label)) != NULL && !gi_is_placeholder(model) &&
        gi_text_ok(model))
        gi_strlcpy(g->name, model, sizeof g->name);
    for (size_t i = 0; i < PM_NFIELDS; i++) {
        double *dst[PM_NFIELDS] = {&g->util_gpu_pct, &g->memory_used_mib, &g->memory_total_mib,
                                   &g->power_w, &g->temp_c};
        if (!hit[i])
            continue;
        if (!isfinite(s->value)) {
            gi_obs_warn(p->out, "GPU %.96s: %.60s is %s; %s left absent", uuid, s->name,
                        isnan(s->value) ? "NaN" : "infinite", field_names[i]);
            *dst[i] = NAN;
            continue;
        }
        *dst[i] = s->value * m->v[i].scale;
    }
    return GI_OK;
}

void prommap_finish(struct prommap_pull *p)
{
    for (size_t i = p->first; i < p->out->ngpus; i++) {
        char who[GI_UUID_LEN + 8];
        snprintf(who, sizeof who, "GPU %s", p->out->gpus[i].uuid);
        gi_gpu_obs_sanitize(&p->out->gpus[i], p->out, who);
    }
    if (p->skipped > 0)
        gi_obs_warn(p->out, "%zu sample%s left out: %s", p->skipped, p->skipped == 1 ? "" : "s",
                    p->skipped_why);
}
