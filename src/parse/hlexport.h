/* Intel Gaudi metric exporter (`habanalabs_*`, gaudi-metric-exporter) to
 * GPU observations: a consumer of Prometheus samples (promtext.h,
 * promapi.h) that builds one struct gi_gpu_obs per Gaudi device and the
 * (device, pod) pairs the exporter reports. Pure: no I/O, no globals.
 *
 * Use:
 *     struct hlexp h;
 *     hlexp_begin(&h, &set);
 *     rc = prom_parse_text(buf, len, hlexp_sample, &h, &err);
 *     if (rc == GI_OK) rc = hlexp_finish(&h);   // GI_NOT_FOUND: no device series
 *     hlexp_free(&h);
 *
 * A device is identified by its UUID label; the exporter writes "na" when
 * HLML could not read it, and then the Serial label (or device, the same
 * serial) names it as "HL-SN-<serial>", as the hl-smi collector does. A
 * series with neither is counted in `skipped`. The exporter has no host
 * label: the host is `hostname` when the caller sets it, else the node of
 * habanalabs_kube_info (its hostname label without one), else "".
 *
 * Metrics read: habanalabs_utilization (%), habanalabs_memory_used_bytes /
 * _total_bytes / _free_bytes (used = total − free when used is missing),
 * habanalabs_power_mW, habanalabs_power_default_limit_mW,
 * habanalabs_temperature_onchip (else _onboard),
 * habanalabs_pending_rows_with_single_bit_ecc_errors / _double_bit_ /
 * habanalabs_pending_rows_state (row replacement). Labels: id (index),
 * driver, fit (firmware, kept as vbios), pod_name / pod_namespace (the
 * workload, via the kubelet's pod resources). Other habanalabs_ metrics
 * only make the device known; the accelerator_* aliases are ignored
 * (their units are wrong). The exporter writes 0 for a read that failed:
 * a 0 memory total, memory used (idle memory is never 0 on Gaudi), power
 * or temperature is absent; a 0 utilization is kept (an idle device reads
 * 0). NaN and ±Inf are absent. The name is the generation from the UUID
 * ("Intel Gaudi2"; hlsmi_model_name). Readings out of range are absent
 * and counted in the set's warnings. */
#ifndef GI_HLEXPORT_H
#define GI_HLEXPORT_H

#include "core/observation.h"
#include "parse/promtext.h"

#include <stddef.h>

/* Most devices one exporter may report (a node has 8). */
#define HLEXP_MAX_DEVICES 1024

struct hlexp_rec;

struct hlexp {
    struct gi_obs_set *out; /* borrowed */
    const char *hostname;   /* optional override, borrowed */
    size_t skipped;         /* habanalabs_ samples naming no device */
    size_t series;          /* habanalabs_ device samples read */
    char kube_host[GI_HOST_LEN];
    /* Private. */
    struct hlexp_rec *recs;
    size_t nrecs, cap;
};

void hlexp_begin(struct hlexp *h, struct gi_obs_set *out);
/* prom_sample_fn: ctx is the struct hlexp. GI_OK, or GI_TOO_LARGE past
 * HLEXP_MAX_DEVICES, GI_INTERNAL out of memory (err->msg says which). */
int hlexp_sample(void *ctx, const struct prom_sample *s, struct prom_error *err);
/* Appends the devices (and their pods) to out. Returns GI_OK, or
 * GI_NOT_FOUND when the scrape held no device series at all (the exporter
 * drops every habanalabs_ series when HLML fails on the node): nothing is
 * appended then. Call once. */
int hlexp_finish(struct hlexp *h);
void hlexp_free(struct hlexp *h);

#endif
