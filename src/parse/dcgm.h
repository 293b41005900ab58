/* dcgm-exporter metrics to GPU observations: a consumer of Prometheus
 * samples (promtext.h, promapi.h) that builds one struct gi_gpu_obs per
 * physical GPU and one per MIG GPU instance, plus the (GPU, pod) pairs
 * the exporter reports. Pure: no I/O, no globals.
 *
 * Use:
 *     struct dcgm d;
 *     dcgm_begin(&d, &set);
 *     rc = prom_parse_text(buf, len, dcgm_sample, &d, &err);  // or promapi_parse
 *     if (rc == GI_OK) rc = dcgm_finish(&d);
 *     … read set.gpus and d.pods …
 *     dcgm_free(&d);
 *
 * A GPU is identified by its UUID label (older exporters: uuid); without
 * one by host and PCI bus id, then by host and gpu index; a sample with
 * none of these is counted in `skipped`. A series with GPU_I_ID belongs to
 * that MIG instance: its record has parent_uuid, mig_profile and
 * mig_instance set and an empty uuid (the exporter does not give MIG
 * UUIDs), and its physical GPU gets a record too (mig_mode 1). The same GPU
 * reported once per pod yields one record.
 *
 * Metrics read (DCGM_FI_ prefix): DEV_GPU_UTIL, DEV_MEM_COPY_UTIL,
 * DEV_FB_USED / DEV_FB_FREE / DEV_FB_RESERVED (total = used + free +
 * reserved), DEV_GPU_TEMP, DEV_POWER_USAGE, DEV_ENFORCED_POWER_LIMIT (else
 * DEV_POWER_MGMT_LIMIT), DEV_TOTAL_ENERGY_CONSUMPTION (mJ, stored in J),
 * DEV_XID_ERRORS, DEV_ECC_{SBE,DBE}_{AGG,VOL}_TOTAL (aggregate preferred),
 * DEV_{CORRECTABLE,UNCORRECTABLE}_REMAPPED_ROWS and DEV_ROW_REMAP_FAILURE
 * (0 or 1; physical GPUs only),
 * PROF_GR_ENGINE_ACTIVE (a 0..1 ratio, used as util_gpu_pct × 100 where
 * DEV_GPU_UTIL is absent, as for MIG instances). Other metrics only make
 * the GPU known. NaN, ±Inf and DCGM's blank sentinels (int32, int64 and
 * fp64 BLANK / NOT_FOUND / NOT_SUPPORTED / NOT_PERMISSIONED) read as
 * absent, as do placeholder label values (<<<NULL>>>, N/A, …). When a
 * metric repeats for a record the last sample wins. A record's ts_ms is
 * its latest sample timestamp (a MIG instance's also counts for its
 * physical GPU); 0 when the samples carry none, as scraped text does. */
#ifndef GI_DCGM_H
#define GI_DCGM_H

#include "core/observation.h"
#include "parse/promtext.h"

#include <stddef.h>

/* One workload seen on a GPU: the exporter's pod attribution. */
struct dcgm_pod {
    char gpu_uuid[GI_UUID_LEN]; /* the physical GPU ("" if the exporter gave none) */
    int mig_instance;           /* GPU instance id, -1 for a whole GPU */
    char namespace_[GI_LABEL_LEN];
    char pod[GI_LABEL_LEN];
    char container[GI_LABEL_LEN];
};

struct dcgm_rec;

struct dcgm {
    /* Set by dcgm_begin; the caller may set hostname before the first
     * sample to override the exporter's Hostname label (which names the
     * exporter's pod unless NODE_NAME is set). Borrowed. */
    struct gi_obs_set *out;
    const char *hostname;
    /* Results, valid until dcgm_free: distinct (GPU, pod) pairs in first
     * seen order, and the count of DCGM_FI_ samples without a GPU. */
    struct dcgm_pod *pods;
    size_t npods;
    size_t skipped;
    /* Private. */
    struct dcgm_rec *recs;
    size_t nrecs, recs_cap;
    size_t *slots; /* hash of recs: index + 1, 0 when empty */
    size_t nslots;
    size_t *pod_next; /* per pod: next pod of the same record + 1 */
    size_t pods_cap;
};

/* Starts a consumer that appends records to out (borrowed; records
 * already there are left alone). */
void dcgm_begin(struct dcgm *d, struct gi_obs_set *out);
/* prom_sample_fn: ctx is the struct dcgm. Returns GI_OK, or GI_TOO_LARGE
 * past GI_OBS_MAX records or pods, GI_INTERNAL out of memory (err->msg
 * says which). */
int dcgm_sample(void *ctx, const struct prom_sample *s, struct prom_error *err);
/* Completes the records (memory totals, utilization fallbacks, ECC, pod
 * fields: set on a record only when exactly one pod was seen on it, the
 * full set being in pods). A reading out of range (utilization over
 * 100 %, negative memory, a temperature of thousands of degrees) is set
 * absent and counted in the set's warnings. Returns GI_OK. Call once. */
int dcgm_finish(struct dcgm *d);
/* Frees the consumer's memory, pods included; accepts a zeroed struct.
 * The records in out stay. */
void dcgm_free(struct dcgm *d);

/* True when v is one of DCGM's blank sentinels (or not finite). */
int dcgm_is_blank(double v);

#endif
