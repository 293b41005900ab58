/* The push batch format; see ingest.h and docs/INTEGRATIONS.md. */
#include "parse/ingest.h"
#include "core/status.h"
#include "core/util.h"

#include <math.h>
#include <stdbool.h>
#include <stddef.h>
#include <stdarg.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

static int fail(struct ingest_error *e, int too_large, const char *field, const char *fmt, ...)
    __attribute__((format(printf, 4, 5)));

static int fail(struct ingest_error *e, int too_large, const char *field, const char *fmt, ...)
{
    va_list ap;

    gi_strlcpy(e->field, field, sizeof e->field);
    va_start(ap, fmt);
    vsnprintf(e->message, sizeof e->message, fmt, ap);
    va_end(ap);
    e->too_large = too_large;
    return -1;
}

/* Copies an optional string member into dst (capacity cap). */
static int get_str(const json_t *o, const char *key, char *dst, size_t cap, const char *path,
                   struct ingest_error *e)
{
    const json_t *v = json_object_get(o, key);
    char f[96];

    if (v == NULL || json_is_null(v))
        return 0;
    if (json_is_string(v) && json_string_length(v) < cap && gi_text_ok(json_string_value(v))) {
        memcpy(dst, json_string_value(v), json_string_length(v) + 1);
        return 0;
    }
    /* Only a failure pays for formatting the field's path. */
    snprintf(f, sizeof f, "%s%s", path, key);
    if (!json_is_string(v))
        return fail(e, 0, f, "%s must be a string", f);
    if (json_string_length(v) >= cap)
        return fail(e, 1, f, "%s is longer than %zu bytes", f, cap - 1);
    if (!gi_text_ok(json_string_value(v)))
        return fail(e, 0, f, "%s contains control characters or invalid UTF-8", f);
    gi_strlcpy(dst, json_string_value(v), cap);
    return 0;
}

/* Optional number member in [lo, hi]; absent or null leaves *out. */
static int get_num(const json_t *o, const char *key, double lo, double hi, double *out,
                   const char *path, struct ingest_error *e)
{
    const json_t *v = json_object_get(o, key);
    char f[96];

    if (v == NULL || json_is_null(v))
        return 0;
    if (json_is_number(v) && json_number_value(v) >= lo && json_number_value(v) <= hi) {
        *out = json_number_value(v);
        return 0;
    }
    snprintf(f, sizeof f, "%s%s", path, key);
    if (!json_is_number(v) || !isfinite(json_number_value(v)))
        return fail(e, 0, f, "%s must be a number", f);
    if (json_number_value(v) < lo || json_number_value(v) > hi)
        return fail(e, 0, f, "%s must be between %g and %g", f, lo, hi);
    *out = json_number_value(v);
    return 0;
}

static int get_int(const json_t *o, const char *key, int64_t lo, int64_t hi, int64_t *out,
                   const char *path, struct ingest_error *e)
{
    const json_t *v = json_object_get(o, key);
    char f[96];

    if (v == NULL || json_is_null(v))
        return 0;
    if (json_is_integer(v) && json_integer_value(v) >= lo && json_integer_value(v) <= hi) {
        *out = json_integer_value(v);
        return 0;
    }
    snprintf(f, sizeof f, "%s%s", path, key);
    if (!json_is_integer(v) || json_integer_value(v) < lo || json_integer_value(v) > hi)
        return fail(e, 0, f, "%s must be a whole number from %lld to %lld", f, (long long)lo,
                    (long long)hi);
    *out = json_integer_value(v);
    return 0;
}

/* A time value: RFC 3339 string or unix seconds. */
static bool time_value(const json_t *v, int64_t *out)
{
    if (json_is_integer(v) && json_integer_value(v) > 0 &&
        json_integer_value(v) < INT64_C(253402300799)) {
        *out = json_integer_value(v);
        return true;
    }
    if (json_is_real(v) && json_real_value(v) > 0 && json_real_value(v) < 253402300799.0) {
        *out = (int64_t)json_real_value(v);
        return true;
    }
    return json_is_string(v) && gi_time_parse(json_string_value(v), out) == GI_OK;
}

/* A time member; required. */
static int get_time(const json_t *o, const char *key, int64_t *out, const char *path,
                    struct ingest_error *e)
{
    char f[96];

    if (time_value(json_object_get(o, key), out))
        return 0;
    snprintf(f, sizeof f, "%s%s", path, key);
    return fail(e, 0, f, "%s must be an RFC 3339 time or unix seconds", f);
}

/* Refuses members other than `allowed` so misspelt fields are not lost. */
static int known(const json_t *o, const char *const *allowed, const char *path,
                 struct ingest_error *e)
{
    const char *key;
    json_t *v;
    char f[96];

    json_object_foreach((json_t *)o, key, v) {
        const char *const *a = allowed;
        while (*a && strcmp(*a, key) != 0)
            a++;
        if (*a == NULL) {
            snprintf(f, sizeof f, "%s%.40s", path, key);
            return fail(e, 0, f, "unknown field %s", f);
        }
    }
    return 0;
}

/* An array member bounded by max; absent is an empty array. */
static int get_array(const json_t *root, const char *key, size_t max, const json_t **out,
                     struct ingest_error *e)
{
    const json_t *v = json_object_get(root, key);

    *out = NULL;
    if (v == NULL || json_is_null(v))
        return 0;
    if (!json_is_array(v))
        return fail(e, 0, key, "%s must be an array", key);
    if (json_array_size(v) > max)
        return fail(e, 1, key, "%s has more than %zu entries", key, max);
    *out = v;
    return 0;
}

static int parse_gpu(const json_t *o, const char *p, struct gi_gpu_obs *g, struct ingest_error *e)
{
    static const char *const allowed[] = {
        "uuid",   "index", "name",     "serial",      "pci_bus_id",  "memory_total_mib",
        "driver", "vbios", "mig_mode", "parent_uuid", "mig_profile", "mig_instance",
        "vendor", NULL};
    const json_t *mig = json_object_get(o, "mig_mode");
    const char *vendor = json_string_value(json_object_get(o, "vendor"));
    char bus[GI_BUS_LEN] = "", f[96];
    int64_t idx = -1, inst = -1;

    if (!json_is_object(o))
        return fail(e, 0, p, "%s must be an object", p);
    if (known(o, allowed, p, e) || get_str(o, "uuid", g->uuid, sizeof g->uuid, p, e) ||
        get_int(o, "index", 0, 4096, &idx, p, e) ||
        get_str(o, "name", g->name, sizeof g->name, p, e) ||
        get_str(o, "serial", g->serial, sizeof g->serial, p, e) ||
        get_str(o, "pci_bus_id", bus, sizeof bus, p, e) ||
        get_num(o, "memory_total_mib", 0, 1e9, &g->memory_total_mib, p, e) ||
        get_str(o, "driver", g->driver, sizeof g->driver, p, e) ||
        get_str(o, "vbios", g->vbios, sizeof g->vbios, p, e) ||
        get_str(o, "parent_uuid", g->parent_uuid, sizeof g->parent_uuid, p, e) ||
        get_str(o, "mig_profile", g->mig_profile, sizeof g->mig_profile, p, e) ||
        get_int(o, "mig_instance", 0, 4096, &inst, p, e))
        return -1;
    snprintf(f, sizeof f, "%suuid", p);
    if (g->uuid[0] == '\0')
        return fail(e, 0, f, "%s is required", f);
    g->index = (int)idx;
    g->mig_instance = (int)inst;
    if (bus[0] && gi_pci_normalize(bus, g->pci_bus_id) != 0) {
        snprintf(f, sizeof f, "%spci_bus_id", p);
        return fail(e, 0, f, "%s is not a PCI bus id like 0000:83:00.0", f);
    }
    if (mig && !json_is_null(mig)) {
        if (!json_is_boolean(mig)) {
            snprintf(f, sizeof f, "%smig_mode", p);
            return fail(e, 0, f, "%s must be true or false", f);
        }
        g->mig_mode = json_is_true(mig);
    }
    g->vendor = vendor && strcmp(vendor, "amd") == 0      ? GI_VENDOR_AMD
                : vendor && strcmp(vendor, "nvidia") == 0 ? GI_VENDOR_NVIDIA
                : strncmp(g->uuid, "GPU-", 4) == 0 || strncmp(g->uuid, "MIG-", 4) == 0
                    ? GI_VENDOR_NVIDIA
                    : GI_VENDOR_UNKNOWN;
    return 0;
}

/* The sample fields, as data: the object form and the columnar form of
 * "samples" are both read through this table. */
enum sample_kind { SF_TIME, SF_GPU, SF_NUM, SF_INT };
static const struct {
    const char *name;
    enum sample_kind kind;
    double lo, hi;
    size_t off; /* of the double or int64_t in struct gi_sample */
} sample_fields[] = {
    {"time", SF_TIME, 0, 0, offsetof(struct gi_sample, ts)},
    {"gpu", SF_GPU, 0, 0, 0},
    {"util_avg", SF_NUM, 0, 100, offsetof(struct gi_sample, util_avg)},
    {"util_max", SF_NUM, 0, 100, offsetof(struct gi_sample, util_max)},
    {"mem_used_mib", SF_NUM, 0, 1e9, offsetof(struct gi_sample, mem_used_mib)},
    {"power_avg_w", SF_NUM, 0, 1e5, offsetof(struct gi_sample, power_avg_w)},
    {"energy_j", SF_NUM, 0, 1e12, offsetof(struct gi_sample, energy_j)},
    {"temp_c", SF_NUM, -50, 200, offsetof(struct gi_sample, temp_c)},
    {"ecc_corrected", SF_INT, 0, 9e18, offsetof(struct gi_sample, ecc_corrected)},
    {"ecc_uncorrected", SF_INT, 0, 9e18, offsetof(struct gi_sample, ecc_uncorrected)},
    {"xid", SF_INT, 0, 1e6, offsetof(struct gi_sample, xid)},
};
#define NSAMPLE_FIELDS (sizeof sample_fields / sizeof *sample_fields)

/* Sets sample field k from v (null leaves it absent). gpus: the batch's
 * GPUs, so that "gpu" may also be an index into them. p: the sample's
 * path for messages, only formatted on failure. */
static int sample_set(struct gi_sample *s, size_t k, const json_t *v, const struct gi_obs_set *gpus,
                      const char *p, struct ingest_error *e)
{
    char *base = (char *)s + sample_fields[k].off;
    double d;

    if (v == NULL || json_is_null(v))
        return 0;
    switch (sample_fields[k].kind) {
    case SF_TIME:
        if (time_value(v, &s->ts))
            return 0;
        break;
    case SF_GPU:
        if (json_is_integer(v) && json_integer_value(v) >= 0 &&
            (size_t)json_integer_value(v) < gpus->ngpus) {
            gi_strlcpy(s->gpu_uuid, gpus->gpus[json_integer_value(v)].uuid, sizeof s->gpu_uuid);
            return 0;
        }
        if (json_is_string(v) && json_string_length(v) < sizeof s->gpu_uuid &&
            gi_text_ok(json_string_value(v))) {
            memcpy(s->gpu_uuid, json_string_value(v), json_string_length(v) + 1);
            return 0;
        }
        break;
    case SF_NUM:
        d = json_number_value(v);
        if (json_is_number(v) && d >= sample_fields[k].lo && d <= sample_fields[k].hi) {
            memcpy(base, &d, sizeof d);
            return 0;
        }
        break;
    case SF_INT:
        if (json_is_integer(v) && json_integer_value(v) >= 0 &&
            (double)json_integer_value(v) <= sample_fields[k].hi) {
            int64_t n = json_integer_value(v);
            memcpy(base, &n, sizeof n);
            return 0;
        }
        break;
    }
    {
        char f[96];
        snprintf(f, sizeof f, "%s%s", p, sample_fields[k].name);
        if (sample_fields[k].kind == SF_TIME)
            return fail(e, 0, f, "%s must be an RFC 3339 time or unix seconds", f);
        if (sample_fields[k].kind == SF_GPU)
            return fail(e, 0, f, "%s must be a GPU uuid or an index into gpus", f);
        if (sample_fields[k].kind == SF_INT)
            return fail(e, 0, f, "%s must be a whole number from 0 to %.0f", f,
                        sample_fields[k].hi);
        return fail(e, 0, f, "%s must be a number from %g to %g", f, sample_fields[k].lo,
                    sample_fields[k].hi);
    }
}

/* A sample given as an object. */
static int parse_sample(const json_t *o, const char *p, const struct gi_obs_set *gpus,
                        struct gi_sample *s, struct ingest_error *e)
{
    const char *key;
    json_t *v;
    char f[96];

    if (!json_is_object(o))
        return fail(e, 0, p, "%s must be an object", p);
    json_object_foreach((json_t *)o, key, v) {
        size_t k = 0;
        while (k < NSAMPLE_FIELDS && strcmp(sample_fields[k].name, key) != 0)
            k++;
        if (k == NSAMPLE_FIELDS) {
            snprintf(f, sizeof f, "%s%.40s", p, key);
            return fail(e, 0, f, "unknown field %s", f);
        }
        if (sample_set(s, k, v, gpus, p, e))
            return -1;
    }
    if (s->ts == 0) {
        snprintf(f, sizeof f, "%stime", p);
        return fail(e, 0, f, "%s must be an RFC 3339 time or unix seconds", f);
    }
    if (s->gpu_uuid[0] == '\0') {
        snprintf(f, sizeof f, "%sgpu", p);
        return fail(e, 0, f, "%s is required", f);
    }
    return 0;
}

/* Samples given in columns: {"columns":["time","gpu",…],"rows":[[…],…]},
 * the compact form the agent sends (no per-sample key names). */
static int parse_columns(const json_t *cols, const json_t *rows, const struct gi_obs_set *gpus,
                         struct gi_batch *out, struct ingest_error *e)
{
    size_t map[NSAMPLE_FIELDS], ncol = json_array_size(cols), i, c;
    bool seen[NSAMPLE_FIELDS] = {false};
    const json_t *row, *v;
    char p[64];

    if (!json_is_array(cols) || ncol == 0 || ncol > NSAMPLE_FIELDS)
        return fail(e, 0, "samples.columns", "samples.columns must list sample field names");
    if (!json_is_array(rows))
        return fail(e, 0, "samples.rows", "samples.rows must be an array of arrays");
    if (json_array_size(rows) > GI_BATCH_MAX_SAMPLES)
        return fail(e, 1, "samples.rows", "samples.rows has more than %d entries",
                    GI_BATCH_MAX_SAMPLES);
    json_array_foreach(cols, c, v) {
        size_t k = 0;
        while (k < NSAMPLE_FIELDS &&
               !(json_is_string(v) && strcmp(sample_fields[k].name, json_string_value(v)) == 0))
            k++;
        snprintf(p, sizeof p, "samples.columns[%zu]", c);
        if (k == NSAMPLE_FIELDS)
            return fail(e, 0, p, "%s is not a sample field", p);
        if (seen[k])
            return fail(e, 0, p, "%s names a column twice", p);
        seen[k] = true;
        map[c] = k;
    }
    if (!seen[0] || !seen[1])
        return fail(e, 0, "samples.columns", "samples.columns must include time and gpu");
    if (json_array_size(rows) > 0 &&
        (out->samples = calloc(json_array_size(rows), sizeof *out->samples)) == NULL)
        return fail(e, 1, "samples", "out of memory");
    json_array_foreach(rows, i, row) {
        struct gi_sample *s = &out->samples[out->nsamples++];
        gi_sample_init(s);
        if (!json_is_array(row) || json_array_size(row) != ncol) {
            snprintf(p, sizeof p, "samples.rows[%zu]", i);
            return fail(e, 0, p, "%s must be an array of %zu values", p, ncol);
        }
        for (c = 0; c < ncol; c++) {
            if (sample_set(s, map[c], json_array_get(row, c), gpus, "samples.rows[].", e)) {
                /* Name the real row in the message. */
                snprintf(p, sizeof p, "samples.rows[%zu].", i);
                gi_sample_init(s);
                sample_set(s, map[c], json_array_get(row, c), gpus, p, e);
                return -1;
            }
        }
        if (s->ts == 0 || s->gpu_uuid[0] == '\0') {
            snprintf(p, sizeof p, "samples.rows[%zu]", i);
            return fail(e, 0, p, "%s needs a time and a gpu", p);
        }
    }
    return 0;
}

static int parse_proc(const json_t *o, const char *p, struct gi_proc_obs *pr,
                      struct ingest_error *e)
{
    static const char *const allowed[] = {"gpu",       "pid",       "name",    "user",
                                          "uid",       "container", "pod_uid", "pod",
                                          "namespace", "used_mib",  "time",    NULL};
    int64_t ts = 0;
    char f[96];

    if (!json_is_object(o))
        return fail(e, 0, p, "%s must be an object", p);
    if (known(o, allowed, p, e) || get_str(o, "gpu", pr->gpu_uuid, sizeof pr->gpu_uuid, p, e) ||
        get_int(o, "pid", 0, INT32_MAX, &pr->pid, p, e) ||
        get_str(o, "name", pr->name, sizeof pr->name, p, e) ||
        get_str(o, "user", pr->user, sizeof pr->user, p, e) ||
        get_int(o, "uid", 0, UINT32_MAX, &pr->uid, p, e) ||
        get_str(o, "container", pr->container, sizeof pr->container, p, e) ||
        get_str(o, "pod_uid", pr->pod_uid, sizeof pr->pod_uid, p, e) ||
        get_str(o, "pod", pr->pod, sizeof pr->pod, p, e) ||
        get_str(o, "namespace", pr->namespace_, sizeof pr->namespace_, p, e) ||
        get_num(o, "used_mib", 0, 1e9, &pr->used_mib, p, e))
        return -1;
    if (json_object_get(o, "time") && get_time(o, "time", &ts, p, e))
        return -1;
    pr->ts_ms = ts * 1000;
    snprintf(f, sizeof f, "%sgpu", p);
    if (pr->gpu_uuid[0] == '\0')
        return fail(e, 0, f, "%s is required", f);
    snprintf(f, sizeof f, "%spid", p);
    if (pr->pid < 0)
        return fail(e, 0, f, "%s is required", f);
    return 0;
}

static int cmp_uuid(const void *a, const void *b)
{
    return strcmp(*(const char *const *)a, *(const char *const *)b);
}

/* Every sample and process must name a GPU described in the same batch,
 * so that nothing is stored against a GPU nobody identified. */
static int check_refs(const struct gi_batch *b, struct ingest_error *e)
{
    const char **ids = calloc(b->set.ngpus + 1, sizeof *ids);
    char f[96];
    int rc = 0;

    if (ids == NULL)
        return fail(e, 1, "gpus", "out of memory");
    for (size_t i = 0; i < b->set.ngpus; i++)
        ids[i] = b->set.gpus[i].uuid;
    qsort(ids, b->set.ngpus, sizeof *ids, cmp_uuid);
    for (size_t i = 1; i < b->set.ngpus && rc == 0; i++)
        if (strcmp(ids[i - 1], ids[i]) == 0)
            rc = fail(e, 0, "gpus", "GPU %.96s appears twice in gpus", ids[i]);
    for (size_t i = 0; i < b->nsamples && rc == 0; i++) {
        const char *key = b->samples[i].gpu_uuid;
        if (!bsearch(&key, ids, b->set.ngpus, sizeof *ids, cmp_uuid)) {
            snprintf(f, sizeof f, "samples[%zu].gpu", i);
            rc = fail(e, 0, f, "%s names a GPU that is not in this batch's gpus", f);
        }
    }
    for (size_t i = 0; i < b->set.nprocs && rc == 0; i++) {
        const char *key = b->set.procs[i].gpu_uuid;
        if (!bsearch(&key, ids, b->set.ngpus, sizeof *ids, cmp_uuid)) {
            snprintf(f, sizeof f, "processes[%zu].gpu", i);
            rc = fail(e, 0, f, "%s names a GPU that is not in this batch's gpus", f);
        }
    }
    free(ids);
    return rc;
}

int ingest_parse(const json_t *root, struct gi_batch *out, struct ingest_error *e)
{
    static const char *const allowed[] = {"batch_id", "source",  "sent_at",   "host",
                                          "gpus",     "samples", "processes", NULL};
    static const char *const host_allowed[] = {"hostname", "machine_id", "serial",
                                               "cluster",  "datacenter", NULL};
    const json_t *host, *gpus, *samples, *procs, *v;
    char p[64];
    size_t i;

    memset(e, 0, sizeof *e);
    if (!json_is_object(root))
        return fail(e, 0, "", "a batch must be a JSON object");
    if (known(root, allowed, "", e) ||
        get_str(root, "batch_id", out->batch_id, sizeof out->batch_id, "", e) ||
        get_str(root, "source", out->source, sizeof out->source, "", e))
        return -1;
    if (out->batch_id[0] == '\0')
        return fail(e, 0, "batch_id",
                    "batch_id is required (a key unique per source, so that "
                    "a retried batch is stored once)");
    host = json_object_get(root, "host");
    if (!json_is_object(host))
        return fail(e, 0, "host", "host is required and must be an object");
    if (known(host, host_allowed, "host.", e) ||
        get_str(host, "hostname", out->host.hostname, sizeof out->host.hostname, "host.", e) ||
        get_str(host, "machine_id", out->host.machine_id, sizeof out->host.machine_id, "host.",
                e) ||
        get_str(host, "serial", out->host.serial, sizeof out->host.serial, "host.", e) ||
        get_str(host, "cluster", out->host.cluster, sizeof out->host.cluster, "host.", e) ||
        get_str(host, "datacenter", out->host.datacenter, sizeof out->host.datacenter, "host.", e))
        return -1;
    if (out->host.hostname[0] == '\0')
        return fail(e, 0, "host.hostname", "host.hostname is required");
    if (get_array(root, "gpus", GI_BATCH_MAX_GPUS, &gpus, e) ||
        get_array(root, "processes", GI_BATCH_MAX_PROCS, &procs, e))
        return -1;
    json_array_foreach(gpus, i, v) {
        struct gi_gpu_obs *g = gi_obs_add_gpu(&out->set);
        snprintf(p, sizeof p, "gpus[%zu].", i);
        if (g == NULL)
            return fail(e, 1, "gpus", "out of memory");
        if (parse_gpu(v, p, g, e))
            return -1;
    }
    samples = json_object_get(root, "samples");
    if (json_is_object(samples)) {
        static const char *const allowed_cols[] = {"columns", "rows", NULL};
        if (known(samples, allowed_cols, "samples.", e) ||
            parse_columns(json_object_get(samples, "columns"), json_object_get(samples, "rows"),
                          &out->set, out, e))
            return -1;
        samples = NULL;
    } else if (get_array(root, "samples", GI_BATCH_MAX_SAMPLES, &samples, e)) {
        return -1;
    }
    if (samples && json_array_size(samples) > 0) {
        out->samples = calloc(json_array_size(samples), sizeof *out->samples);
        if (out->samples == NULL)
            return fail(e, 1, "samples", "out of memory");
    }
    json_array_foreach(samples, i, v) {
        struct gi_sample *s = &out->samples[out->nsamples++];
        gi_sample_init(s);
        if (parse_sample(v, "samples[].", &out->set, s, e)) {
            /* Re-run with the element's real path for the error message. */
            snprintf(p, sizeof p, "samples[%zu].", i);
            gi_sample_init(s);
            parse_sample(v, p, &out->set, s, e);
            return -1;
        }
    }
    json_array_foreach(procs, i, v) {
        struct gi_proc_obs *pr = gi_obs_add_proc(&out->set);
        snprintf(p, sizeof p, "processes[%zu].", i);
        if (pr == NULL)
            return fail(e, 1, "processes", "out of memory");
        if (parse_proc(v, p, pr, e))
            return -1;
    }
    return check_refs(out, e);
}
