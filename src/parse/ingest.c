/* The push batch format; see ingest.h and docs/INTEGRATIONS.md.
 *
 * Two kinds of trouble are told apart: fail() refuses the batch (its
 * structure cannot be read), warn() drops one field or one record and
 * goes on. Field paths are only formatted on those paths, never for a
 * value that is accepted. */
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
static void warn(struct ingest_warnings *w, const char *field, const char *fmt, ...)
    __attribute__((format(printf, 3, 4)));

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

/* Counts one dropped field or record; lists the first few in full. */
static void warn(struct ingest_warnings *w, const char *field, const char *fmt, ...)
{
    va_list ap;

    if (w == NULL)
        return;
    if (w->n < INGEST_MAX_WARNINGS) {
        struct ingest_warning *it = &w->items[w->n];
        gi_strlcpy(it->field, field, sizeof it->field);
        va_start(ap, fmt);
        vsnprintf(it->message, sizeof it->message, fmt, ap);
        va_end(ap);
    }
    w->n++;
}

/* Why a string value cannot be taken into a buffer of cap bytes; NULL
 * when it can. */
static const char *str_problem(const json_t *v, size_t cap)
{
    if (!json_is_string(v))
        return "must be a string";
    if (json_string_length(v) >= cap)
        return "is too long";
    if (!gi_text_ok(json_string_value(v)))
        return "contains control characters or invalid UTF-8";
    return NULL;
}

/* A required identity string (batch_id, source, host.hostname, a GPU's
 * uuid): a bad value refuses the batch. Absent or null leaves dst "". */
static int req_str(const json_t *o, const char *key, char *dst, size_t cap, const char *path,
                   struct ingest_error *e)
{
    const json_t *v = json_object_get(o, key);
    const char *why;
    char f[96];

    if (v == NULL || json_is_null(v))
        return 0;
    if ((why = str_problem(v, cap)) == NULL) {
        memcpy(dst, json_string_value(v), json_string_length(v) + 1);
        return 0;
    }
    snprintf(f, sizeof f, "%s%s", path, key);
    if (json_is_string(v) && json_string_length(v) >= cap)
        return fail(e, 1, f, "%s is longer than %zu bytes", f, cap - 1);
    return fail(e, 0, f, "%s %s", f, why);
}

/* An optional string member: a value that cannot be taken is dropped
 * with a warning and dst is left as it was. */
static void opt_str(const json_t *o, const char *key, char *dst, size_t cap, const char *path,
                    struct ingest_warnings *w)
{
    const json_t *v = json_object_get(o, key);
    const char *why;
    char f[96];

    if (v == NULL || json_is_null(v))
        return;
    if ((why = str_problem(v, cap)) == NULL) {
        memcpy(dst, json_string_value(v), json_string_length(v) + 1);
        return;
    }
    snprintf(f, sizeof f, "%s%s", path, key);
    if (json_is_string(v) && json_string_length(v) >= cap)
        warn(w, f, "%s is longer than %zu bytes; dropped", f, cap - 1);
    else
        warn(w, f, "%s %s; dropped", f, why);
}

/* An optional number member in [lo, hi]; anything else is dropped with
 * a warning and *out is left. */
static void opt_num(const json_t *o, const char *key, double lo, double hi, double *out,
                    const char *path, struct ingest_warnings *w)
{
    const json_t *v = json_object_get(o, key);
    char f[96];

    if (v == NULL || json_is_null(v))
        return;
    if (json_is_number(v) && json_number_value(v) >= lo && json_number_value(v) <= hi) {
        *out = json_number_value(v);
        return;
    }
    snprintf(f, sizeof f, "%s%s", path, key);
    if (!json_is_number(v))
        warn(w, f, "%s must be a number; dropped", f);
    else
        warn(w, f, "%s must be between %g and %g; dropped", f, lo, hi);
}

/* An optional whole-number member in [lo, hi]; true when it was given
 * and taken. Anything else is dropped with a warning. */
static bool opt_int(const json_t *o, const char *key, int64_t lo, int64_t hi, int64_t *out,
                    const char *path, struct ingest_warnings *w)
{
    const json_t *v = json_object_get(o, key);
    char f[96];

    if (v == NULL || json_is_null(v))
        return false;
    if (json_is_integer(v) && json_integer_value(v) >= lo && json_integer_value(v) <= hi) {
        *out = json_integer_value(v);
        return true;
    }
    snprintf(f, sizeof f, "%s%s", path, key);
    warn(w, f, "%s must be a whole number from %lld to %lld; dropped", f, (long long)lo,
         (long long)hi);
    return false;
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

/* Warns about members other than `allowed`; they are ignored. */
static void known(const json_t *o, const char *const *allowed, const char *path,
                  struct ingest_warnings *w)
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
            warn(w, f, "%s is not a known field; ignored", f);
        }
    }
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

/* A GPU: its uuid is its identity and required; every other field is
 * optional and dropped with a warning when it cannot be taken. */
static int parse_gpu(const json_t *o, const char *p, struct gi_gpu_obs *g, struct ingest_error *e,
                     struct ingest_warnings *w)
{
    static const char *const allowed[] = {"uuid",          "index",           "name",
                                          "serial",        "pci_bus_id",      "memory_total_mib",
                                          "driver",        "vbios",           "mig_mode",
                                          "parent_uuid",   "mig_profile",     "mig_instance",
                                          "vendor",        "remap_corrected", "remap_uncorrectable",
                                          "remap_pending", "remap_failure",   NULL};
    static const char *const flags[] = {"remap_pending", "remap_failure"};
    const json_t *mig = json_object_get(o, "mig_mode"), *vend = json_object_get(o, "vendor");
    const char *vendor = json_string_value(vend);
    char bus[GI_BUS_LEN] = "", f[96];
    int64_t idx = -1, inst = -1;

    if (!json_is_object(o)) {
        snprintf(f, sizeof f, "%.*s", (int)strlen(p) - 1, p); /* without the dot */
        return fail(e, 0, f, "%s must be an object with a uuid", f);
    }
    if (req_str(o, "uuid", g->uuid, sizeof g->uuid, p, e))
        return -1;
    snprintf(f, sizeof f, "%suuid", p);
    if (g->uuid[0] == '\0')
        return fail(e, 0, f, "%s is required", f);
    known(o, allowed, p, w);
    opt_int(o, "index", 0, 4096, &idx, p, w);
    opt_str(o, "name", g->name, sizeof g->name, p, w);
    opt_str(o, "serial", g->serial, sizeof g->serial, p, w);
    opt_str(o, "pci_bus_id", bus, sizeof bus, p, w);
    opt_num(o, "memory_total_mib", 0, GI_MEM_MIB_MAX, &g->memory_total_mib, p, w);
    opt_str(o, "driver", g->driver, sizeof g->driver, p, w);
    opt_str(o, "vbios", g->vbios, sizeof g->vbios, p, w);
    opt_str(o, "parent_uuid", g->parent_uuid, sizeof g->parent_uuid, p, w);
    opt_str(o, "mig_profile", g->mig_profile, sizeof g->mig_profile, p, w);
    opt_int(o, "mig_instance", 0, 4096, &inst, p, w);
    opt_int(o, "remap_corrected", 0, INT64_C(1) << 40, &g->remap_corrected, p, w);
    opt_int(o, "remap_uncorrectable", 0, INT64_C(1) << 40, &g->remap_uncorrectable, p, w);
    for (size_t i = 0; i < sizeof flags / sizeof flags[0]; i++) {
        const json_t *v = json_object_get(o, flags[i]);
        int *dst = i == 0 ? &g->remap_pending : &g->remap_failure;
        if (json_is_boolean(v)) {
            *dst = json_is_true(v);
        } else if (v && !json_is_null(v)) {
            snprintf(f, sizeof f, "%s%s", p, flags[i]);
            warn(w, f, "%s must be true or false; dropped", f);
        }
    }
    g->index = (int)idx;
    g->mig_instance = (int)inst;
    if (bus[0] && gi_pci_normalize(bus, g->pci_bus_id) != 0) {
        snprintf(f, sizeof f, "%spci_bus_id", p);
        warn(w, f, "%s is not a PCI bus id like 0000:83:00.0; dropped", f);
    }
    if (mig && !json_is_null(mig)) {
        if (json_is_boolean(mig)) {
            g->mig_mode = json_is_true(mig);
        } else {
            snprintf(f, sizeof f, "%smig_mode", p);
            warn(w, f, "%s must be true or false; dropped", f);
        }
    }
    if (vend && !json_is_null(vend) && !json_is_string(vend)) {
        snprintf(f, sizeof f, "%svendor", p);
        warn(w, f, "%s must be a string; dropped", f);
    }
    g->vendor = vendor && strcmp(vendor, "amd") == 0      ? GI_VENDOR_AMD
                : vendor && strcmp(vendor, "intel") == 0  ? GI_VENDOR_INTEL
                : vendor && strcmp(vendor, "nvidia") == 0 ? GI_VENDOR_NVIDIA
                : strncmp(g->uuid, "GPU-", 4) == 0 || strncmp(g->uuid, "MIG-", 4) == 0
                    ? GI_VENDOR_NVIDIA
                    : GI_VENDOR_UNKNOWN;
    return 0;
}

/* The batch's GPU uuids, sorted, so that samples and processes are
 * checked against them. */
struct gpu_index {
    const char **ids;
    size_t n;
};

static int cmp_uuid(const void *a, const void *b)
{
    return strcmp(*(const char *const *)a, *(const char *const *)b);
}

/* Builds the index; a uuid listed twice refuses the batch (which of the
 * two records to believe cannot be told). */
static int index_gpus(const struct gi_obs_set *set, struct gpu_index *ix, struct ingest_error *e)
{
    ix->n = set->ngpus;
    ix->ids = calloc(set->ngpus + 1, sizeof *ix->ids);
    if (ix->ids == NULL)
        return fail(e, 1, "gpus", "out of memory");
    for (size_t i = 0; i < set->ngpus; i++)
        ix->ids[i] = set->gpus[i].uuid;
    qsort(ix->ids, ix->n, sizeof *ix->ids, cmp_uuid);
    for (size_t i = 1; i < ix->n; i++)
        if (strcmp(ix->ids[i - 1], ix->ids[i]) == 0)
            return fail(e, 0, "gpus", "GPU %.96s appears twice in gpus", ix->ids[i]);
    return 0;
}

static bool in_batch(const struct gpu_index *ix, const char *uuid)
{
    return bsearch(&uuid, ix->ids, ix->n, sizeof *ix->ids, cmp_uuid) != NULL;
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
    {"mem_used_mib", SF_NUM, 0, GI_MEM_MIB_MAX, offsetof(struct gi_sample, mem_used_mib)},
    {"power_avg_w", SF_NUM, 0, GI_POWER_W_MAX, offsetof(struct gi_sample, power_avg_w)},
    {"energy_j", SF_NUM, 0, 1e12, offsetof(struct gi_sample, energy_j)},
    {"temp_c", SF_NUM, GI_TEMP_C_MIN, GI_TEMP_C_MAX, offsetof(struct gi_sample, temp_c)},
    {"ecc_corrected", SF_INT, 0, 9e18, offsetof(struct gi_sample, ecc_corrected)},
    {"ecc_uncorrected", SF_INT, 0, 9e18, offsetof(struct gi_sample, ecc_uncorrected)},
    {"xid", SF_INT, 0, 1e6, offsetof(struct gi_sample, xid)},
};
#define NSAMPLE_FIELDS (sizeof sample_fields / sizeof *sample_fields)

/* Where samples are read from, for messages: "samples" or
 * "samples.rows". */
struct sample_src {
    const char *list;
    const struct gi_obs_set *gpus;
    const struct gpu_index *ix;
    int64_t now;
    struct ingest_warnings *w;
};

/* Sets sample field k from v (null leaves it absent). "gpu" may be a
 * uuid or an index into the batch's GPUs. Returns 0, or -1 when v cannot
 * be taken (nothing is written then). */
static int sample_set(struct gi_sample *s, size_t k, const json_t *v, const struct gi_obs_set *gpus)
{
    char *base = (char *)s + sample_fields[k].off;
    double d;

    if (v == NULL || json_is_null(v))
        return 0;
    switch (sample_fields[k].kind) {
    case SF_TIME:
        return time_value(v, &s->ts) ? 0 : -1;
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
        return -1;
    case SF_NUM:
        d = json_number_value(v);
        if (json_is_number(v) && d >= sample_fields[k].lo && d <= sample_fields[k].hi) {
            memcpy(base, &d, sizeof d);
            return 0;
        }
        return -1;
    case SF_INT:
        if (json_is_integer(v) && json_integer_value(v) >= 0 &&
            (double)json_integer_value(v) <= sample_fields[k].hi) {
            int64_t n = json_integer_value(v);
            memcpy(base, &n, sizeof n);
            return 0;
        }
        return -1;
    }
    return -1;
}

/* Sets field k of sample i from v; a bad value is dropped with a
 * warning. Returns -1 when the sample cannot be kept (its time or GPU
 * cannot be read). */
static int sample_take(const struct sample_src *src, struct gi_sample *s, size_t i, size_t k,
                       const json_t *v)
{
    char f[96];
    const char *what;

    if (sample_set(s, k, v, src->gpus) == 0)
        return 0;
    snprintf(f, sizeof f, "%s[%zu].%s", src->list, i, sample_fields[k].name);
    switch (sample_fields[k].kind) {
    case SF_TIME:
        warn(src->w, f, "%s must be an RFC 3339 time or unix seconds; the sample is dropped", f);
        return -1;
    case SF_GPU:
        warn(src->w, f, "%s must be a GPU uuid or an index into gpus; the sample is dropped", f);
        return -1;
    case SF_INT:
        warn(src->w, f, "%s must be a whole number from 0 to %.0f; dropped", f,
             sample_fields[k].hi);
        return 0;
    case SF_NUM:
        what = json_is_number(v) ? "out of range" : "not a number";
        warn(src->w, f, "%s must be a number from %g to %g (%s); dropped", f, sample_fields[k].lo,
             sample_fields[k].hi, what);
        return 0;
    }
    return 0;
}

/* After its fields: whether sample i can be kept (a time inside the
 * accepted window, a GPU of this batch). Warns when not. */
static bool sample_placed(const struct sample_src *src, const struct gi_sample *s, size_t i)
{
    char f[96];

    if (s->ts == 0) {
        snprintf(f, sizeof f, "%s[%zu].time", src->list, i);
        warn(src->w, f, "%s is required; the sample is dropped", f);
        return false;
    }
    if (s->ts > src->now + INGEST_FUTURE_S) {
        snprintf(f, sizeof f, "%s[%zu].time", src->list, i);
        warn(src->w, f,
             "%s is more than %d seconds in the future; check the reporter's clock; the sample "
             "is dropped",
             f, INGEST_FUTURE_S);
        return false;
    }
    if (s->gpu_uuid[0] == '\0') {
        snprintf(f, sizeof f, "%s[%zu].gpu", src->list, i);
        warn(src->w, f, "%s is required; the sample is dropped", f);
        return false;
    }
    if (!in_batch(src->ix, s->gpu_uuid)) {
        snprintf(f, sizeof f, "%s[%zu].gpu", src->list, i);
        warn(src->w, f, "%s names a GPU that is not in this batch's gpus; the sample is dropped",
             f);
        return false;
    }
    return true;
}

/* A sample given as an object; true when it is kept. */
static bool parse_sample(const struct sample_src *src, const json_t *o, size_t i,
                         struct gi_sample *s)
{
    const char *key;
    json_t *v;
    char f[96];
    bool keep = true;

    if (!json_is_object(o)) {
        snprintf(f, sizeof f, "samples[%zu]", i);
        warn(src->w, f, "%s must be an object; the sample is dropped", f);
        return false;
    }
    json_object_foreach((json_t *)o, key, v) {
        size_t k = 0;
        while (k < NSAMPLE_FIELDS && strcmp(sample_fields[k].name, key) != 0)
            k++;
        if (k == NSAMPLE_FIELDS) {
            snprintf(f, sizeof f, "samples[%zu].%.40s", i, key);
            warn(src->w, f, "%s is not a known field; ignored", f);
            continue;
        }
        if (sample_take(src, s, i, k, v) < 0)
            keep = false;
    }
    return keep && sample_placed(src, s, i);
}

/* Samples given in columns: {"columns":["time","gpu",…],"rows":[[…],…]},
 * the compact form the agent sends (no per-sample key names). An unknown
 * column is ignored with a warning; the header must otherwise be sound. */
static int parse_columns(const struct sample_src *src, const json_t *cols, const json_t *rows,
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
        if (k == NSAMPLE_FIELDS) {
            warn(src->w, p, "%s is not a sample field; the column is ignored", p);
            map[c] = NSAMPLE_FIELDS;
            continue;
        }
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
        struct gi_sample *s = &out->samples[out->nsamples];
        bool keep = true;
        gi_sample_init(s);
        if (!json_is_array(row) || json_array_size(row) != ncol) {
            snprintf(p, sizeof p, "samples.rows[%zu]", i);
            warn(src->w, p, "%s must be an array of %zu values; the sample is dropped", p, ncol);
            continue;
        }
        for (c = 0; c < ncol; c++)
            if (map[c] < NSAMPLE_FIELDS && sample_take(src, s, i, map[c], json_array_get(row, c)))
                keep = false;
        if (keep && sample_placed(src, s, i))
            out->nsamples++;
    }
    return 0;
}

/* A process; true when it is kept. It needs a GPU of this batch; a pid
 * that is absent or cannot be read makes it anonymous (pid -1). */
static bool parse_proc(const json_t *o, const char *p, const struct gpu_index *ix, int64_t now,
                       struct gi_proc_obs *pr, struct ingest_warnings *w)
{
    static const char *const allowed[] = {"gpu",       "pid",       "name",    "user",
                                          "uid",       "container", "pod_uid", "pod",
                                          "namespace", "used_mib",  "time",    NULL};
    const json_t *t = json_object_get(o, "time");
    int64_t ts = 0;
    char f[96];

    if (!json_is_object(o)) {
        snprintf(f, sizeof f, "%.*s", (int)strlen(p) - 1, p);
        warn(w, f, "%s must be an object; the process is dropped", f);
        return false;
    }
    known(o, allowed, p, w);
    opt_str(o, "gpu", pr->gpu_uuid, sizeof pr->gpu_uuid, p, w);
    opt_int(o, "pid", 0, INT32_MAX, &pr->pid, p, w);
    opt_str(o, "name", pr->name, sizeof pr->name, p, w);
    opt_str(o, "user", pr->user, sizeof pr->user, p, w);
    opt_int(o, "uid", 0, UINT32_MAX, &pr->uid, p, w);
    opt_str(o, "container", pr->container, sizeof pr->container, p, w);
    opt_str(o, "pod_uid", pr->pod_uid, sizeof pr->pod_uid, p, w);
    opt_str(o, "pod", pr->pod, sizeof pr->pod, p, w);
    opt_str(o, "namespace", pr->namespace_, sizeof pr->namespace_, p, w);
    opt_num(o, "used_mib", 0, GI_MEM_MIB_MAX, &pr->used_mib, p, w);
    snprintf(f, sizeof f, "%sgpu", p);
    if (pr->gpu_uuid[0] == '\0') {
        warn(w, f, "%s is required; the process is dropped", f);
        return false;
    }
    if (!in_batch(ix, pr->gpu_uuid)) {
        warn(w, f, "%s names a GPU that is not in this batch's gpus; the process is dropped", f);
        return false;
    }
    if (t && !json_is_null(t)) {
        snprintf(f, sizeof f, "%stime", p);
        if (!time_value(t, &ts)) {
            warn(w, f, "%s must be an RFC 3339 time or unix seconds; dropped", f);
            ts = 0;
        } else if (ts > now + INGEST_FUTURE_S) {
            warn(w, f,
                 "%s is more than %d seconds in the future; check the reporter's clock; the "
                 "process is dropped",
                 f, INGEST_FUTURE_S);
            return false;
        }
    }
    pr->ts_ms = ts * 1000;
    return true;
}

int ingest_parse(const json_t *root, int64_t now, struct gi_batch *out, struct ingest_error *e,
                 struct ingest_warnings *w)
{
    static const char *const allowed[] = {"batch_id", "source",  "sent_at",   "host",
                                          "gpus",     "samples", "processes", NULL};
    static const char *const host_allowed[] = {"hostname", "machine_id", "serial",
                                               "cluster",  "datacenter", NULL};
    const json_t *host, *gpus, *samples, *procs, *v;
    struct gpu_index ix = {NULL, 0};
    struct sample_src src;
    char p[64];
    size_t i;
    int rc = -1;

    memset(e, 0, sizeof *e);
    if (w)
        w->n = 0;
    if (!json_is_object(root))
        return fail(e, 0, "", "a batch must be a JSON object");
    if (req_str(root, "batch_id", out->batch_id, sizeof out->batch_id, "", e) ||
        req_str(root, "source", out->source, sizeof out->source, "", e))
        return -1;
    if (out->batch_id[0] == '\0')
        return fail(e, 0, "batch_id",
                    "batch_id is required (a key unique per source, so that "
                    "a retried batch is stored once)");
    host = json_object_get(root, "host");
    if (!json_is_object(host))
        return fail(e, 0, "host", "host is required and must be an object");
    if (req_str(host, "hostname", out->host.hostname, sizeof out->host.hostname, "host.", e))
        return -1;
    if (out->host.hostname[0] == '\0')
        return fail(e, 0, "host.hostname", "host.hostname is required");
    if (get_array(root, "gpus", GI_BATCH_MAX_GPUS, &gpus, e) ||
        get_array(root, "processes", GI_BATCH_MAX_PROCS, &procs, e))
        return -1;
    samples = json_object_get(root, "samples");
    if (json_is_object(samples)) {
        static const char *const allowed_cols[] = {"columns", "rows", NULL};
        known(samples, allowed_cols, "samples.", w);
    } else if (get_array(root, "samples", GI_BATCH_MAX_SAMPLES, &samples, e)) {
        return -1;
    }
    /* The structure holds: from here on only fields and records drop. */
    known(root, allowed, "", w);
    known(host, host_allowed, "host.", w);
    opt_str(host, "machine_id", out->host.machine_id, sizeof out->host.machine_id, "host.", w);
    opt_str(host, "serial", out->host.serial, sizeof out->host.serial, "host.", w);
    opt_str(host, "cluster", out->host.cluster, sizeof out->host.cluster, "host.", w);
    opt_str(host, "datacenter", out->host.datacenter, sizeof out->host.datacenter, "host.", w);
    json_array_foreach(gpus, i, v) {
        struct gi_gpu_obs *g = gi_obs_add_gpu(&out->set);
        snprintf(p, sizeof p, "gpus[%zu].", i);
        if (g == NULL)
            return fail(e, 1, "gpus", "out of memory");
        if (parse_gpu(v, p, g, e, w))
            return -1;
    }
    if (index_gpus(&out->set, &ix, e))
        goto cleanup;
    src = (struct sample_src){"samples", &out->set, &ix, now, w};
    if (json_is_object(samples)) {
        src.list = "samples.rows";
        if (parse_columns(&src, json_object_get(samples, "columns"),
                          json_object_get(samples, "rows"), out, e))
            goto cleanup;
    } else if (samples && json_array_size(samples) > 0) {
        out->samples = calloc(json_array_size(samples), sizeof *out->samples);
        if (out->samples == NULL) {
            fail(e, 1, "samples", "out of memory");
            goto cleanup;
        }
        json_array_foreach(samples, i, v) {
            struct gi_sample *s = &out->samples[out->nsamples];
            gi_sample_init(s);
            if (parse_sample(&src, v, i, s))
                out->nsamples++;
        }
    }
    json_array_foreach(procs, i, v) {
        struct gi_proc_obs *pr = gi_obs_add_proc(&out->set);
        snprintf(p, sizeof p, "processes[%zu].", i);
        if (pr == NULL) {
            fail(e, 1, "processes", "out of memory");
            goto cleanup;
        }
        if (!parse_proc(v, p, &ix, now, pr, w))
            out->set.nprocs--; /* the slot is reused by the next one */
    }
    rc = 0;
cleanup:
    free(ix.ids);
    return rc;
}
