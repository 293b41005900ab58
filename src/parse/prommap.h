/* A declared mapping from any Prometheus metrics to GPU observations: the
 * prometheus-generic source reads what a team's own exporter says through
 * it. Pure: no I/O, no globals; a consumer of Prometheus samples
 * (promtext.h, promapi.h) like dcgm.h.
 *
 * The mapping (a JSON object; its strings are borrowed by struct prommap):
 *     {"uuid_label": "gpu_uuid",          required: the GPU's identity
 *      "host_label": "instance",          required: its host (":port" dropped)
 *      "index_label": "gpu",              optional: its index on the host
 *      "model": {"label": "model", "metric": "vendor_gpu_info"},
 *                                         optional: the model from a label
 *                                         (of that metric, else of any
 *                                         mapped sample)
 *      "utilization":  {"metric": "...", "unit": "percent" | "ratio"},
 *      "memory_used":  {"metric": "...", "unit": "bytes" | "kib" | "mib" | "gib"
 *                                               | "kb" | "mb" | "gb"},
 *      "memory_total": {... as memory_used},
 *      "power":        {"metric": "...", "unit": "watts" | "milliwatts" | "microwatts"},
 *      "temperature":  {"metric": "...", "unit": "celsius" | "millicelsius"}}
 * Instead of "unit" a field may give "scale", the factor that turns the
 * metric's value into gpuinv's unit (percent, MiB, W, degrees C); one of
 * the two is required, so no unit is ever guessed. A field may also give
 * "match", an object of label values a sample must carry (several fields
 * may then read one metric, e.g. {"type": "used"}). At least one field or
 * model.metric is required.
 *
 * A sample of a mapped metric without the uuid or host label (or with a
 * placeholder such as "N/A") is skipped and counted. A value that is NaN
 * or infinite, or out of the field's range after scaling, leaves that
 * field absent and is counted as a warning in the set; the GPU and its
 * other fields stay. When a metric repeats for a GPU the last sample wins.
 * A record's ts_ms is its latest sample timestamp (0 for scraped text). */
#ifndef GI_PROMMAP_H
#define GI_PROMMAP_H

#include "core/observation.h"
#include "parse/promtext.h"

#include <jansson.h>
#include <stddef.h>

enum prommap_field { PM_UTIL, PM_MEM_USED, PM_MEM_TOTAL, PM_POWER, PM_TEMP, PM_NFIELDS };

#define PROMMAP_MAX_MATCH 8

struct prommap_value {
    const char *metric; /* NULL: the field is not mapped */
    double scale;       /* value × scale is in gpuinv's unit */
    size_t nmatch;
    struct prom_label match[PROMMAP_MAX_MATCH];
};

struct prommap {
    const char *uuid_label, *host_label, *index_label; /* index_label may be NULL */
    const char *model_label, *model_metric;            /* either may be NULL */
    struct prommap_value v[PM_NFIELDS];
};

/* The mapping's key of a field ("utilization", ...). */
const char *prommap_field_name(enum prommap_field f);

/* Reads and validates a mapping object (borrowed; m borrows its strings).
 * On failure fills field ("config.mapping.utilization.unit") and msg and
 * returns -1. */
int prommap_read(const json_t *mapping, struct prommap *m, char *field, size_t flen, char *msg,
                 size_t mlen);

/* The PromQL selector of every metric the mapping reads:
 * {__name__=~"a|b"}. Returns 0, or -1 when buf is too small. Metric names
 * are checked by prommap_read, so nothing needs escaping. */
int prommap_selector(const struct prommap *m, char *buf, size_t len);

/* One pull's state. */
struct prommap_pull {
    const struct prommap *m; /* borrowed */
    struct gi_obs_set *out;  /* borrowed; records are appended */
    size_t skipped;          /* mapped samples without a uuid or host */
    char skipped_why[160];   /* the first of them */
    /* Private: a hash of uuids to out->gpus index + 1. */
    size_t *slots, nslots, first;
};

void prommap_begin(struct prommap_pull *p, const struct prommap *m, struct gi_obs_set *out);
/* prom_sample_fn: ctx is the struct prommap_pull. GI_OK, or GI_TOO_LARGE
 * past GI_OBS_MAX GPUs, GI_INTERNAL out of memory. */
int prommap_sample(void *ctx, const struct prom_sample *s, struct prom_error *err);
/* Checks every record's ranges (gi_gpu_obs_sanitize) and counts the
 * skipped samples as one warning. Call once. */
void prommap_finish(struct prommap_pull *p);
void prommap_free(struct prommap_pull *p);

#endif
