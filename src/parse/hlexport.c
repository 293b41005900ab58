/* gaudi-metric-exporter samples to observations; see hlexport.h. */
#include "parse/hlexport.h"
#include "core/status.h"
#include "core/util.h"
#include "parse/hlsmi.h"

#include <math.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

struct hlexp_rec {
    struct gi_gpu_obs g;
    double free_mib, temp_board;
    int64_t rows_sbe, rows_dbe;
    int rows_pending;
};

void hlexp_begin(struct hlexp *h, struct gi_obs_set *out)
{
    memset(h, 0, sizeof *h);
    h->out = out;
}

void hlexp_free(struct hlexp *h)
{
    free(h->recs);
    h->recs = NULL;
    h->nrecs = h->cap = 0;
}

static int usable(const char *v) { return v && *v && !gi_is_placeholder(v) && strcmp(v, "na"); }

/* The record for a sample's device, created on first sight; NULL with
 * *rc set when none can be named (GI_OK: skipped) or past the bound. */
static struct hlexp_rec *rec_for(struct hlexp *h, const struct prom_sample *s, int *rc,
                                 struct prom_error *err)
{
    const char *uuid = prom_label_get(s, "UUID");
    const char *serial = prom_label_get(s, "Serial");
    char id[GI_UUID_LEN];
    struct hlexp_rec *r;

    *rc = GI_OK;
    if (!usable(serial))
        serial = prom_label_get(s, "device");
    if (!usable(serial))
        serial = NULL;
    if (usable(uuid) && gi_text_ok(uuid) && strlen(uuid) < sizeof id)
        gi_strlcpy(id, uuid, sizeof id);
    else if (serial && gi_text_ok(serial) && strlen(serial) < sizeof id - 8)
        snprintf(id, sizeof id, "HL-SN-%s", serial);
    else
        return NULL;
    for (size_t i = 0; i < h->nrecs; i++)
        if (strcmp(h->recs[i].g.uuid, id) == 0)
            return &h->recs[i];
    if (h->nrecs == HLEXP_MAX_DEVICES) {
        snprintf(err->msg, sizeof err->msg, "more than %d devices", HLEXP_MAX_DEVICES);
        *rc = GI_TOO_LARGE;
        return NULL;
    }
    if (h->nrecs == h->cap) {
        size_t cap = h->cap ? h->cap * 2 : 8;
        struct hlexp_rec *n = realloc(h->recs, cap * sizeof *n);
        if (n == NULL) {
            snprintf(err->msg, sizeof err->msg, "out of memory");
            *rc = GI_INTERNAL;
            return NULL;
        }
        h->recs = n;
        h->cap = cap;
    }
    r = &h->recs[h->nrecs++];
    memset(r, 0, sizeof *r);
    gi_gpu_obs_init(&r->g);
    r->g.vendor = GI_VENDOR_INTEL;
    r->free_mib = r->temp_board = NAN;
    r->rows_sbe = r->rows_dbe = -1;
    r->rows_pending = -1;
    gi_strlcpy(r->g.uuid, id, sizeof r->g.uuid);
    return r;
}

/* Copies a label into dst when it is present, clean and fits. */
static void label(const struct prom_sample *s, const char *name, char *dst, size_t cap)
{
    const char *v = prom_label_get(s, name);

    if (usable(v) && gi_text_ok(v) && strpbrk(v, "\r\n\t") == NULL && strlen(v) < cap)
        gi_strlcpy(dst, v, cap);
}

int hlexp_sample(void *ctx, const struct prom_sample *s, struct prom_error *err)
{
    static const char pre[] = "habanalabs_";
    struct hlexp *h = ctx;
    struct hlexp_rec *r;
    const char *m, *id;
    double v = s->value, pos;
    int rc;

    if (strncmp(s->name, pre, sizeof pre - 1) != 0)
        return GI_OK; /* accelerator_* aliases and anything else */
    m = s->name + sizeof pre - 1;
    if (strcmp(m, "kube_info") == 0) {
        label(s, "hostname", h->kube_host, sizeof h->kube_host);
        label(s, "node", h->kube_host, sizeof h->kube_host);
        return GI_OK;
    }
    if ((r = rec_for(h, s, &rc, err)) == NULL) {
        if (rc == GI_OK)
            h->skipped++;
        return rc;
    }
    h->series++;
    if (s->has_ts && s->ts_ms > r->g.ts_ms)
        r->g.ts_ms = s->ts_ms;
    if (r->g.serial[0] == '\0')
        label(s, "Serial", r->g.serial, sizeof r->g.serial);
    if (r->g.driver[0] == '\0')
        label(s, "driver", r->g.driver, sizeof r->g.driver);
    if (r->g.vbios[0] == '\0')
        label(s, "fit", r->g.vbios, sizeof r->g.vbios);
    if (r->g.pod[0] == '\0') {
        label(s, "pod_name", r->g.pod, sizeof r->g.pod);
        label(s, "pod_namespace", r->g.namespace_, sizeof r->g.namespace_);
    }
    if ((id = prom_label_get(s, "id")) != NULL && r->g.index < 0) {
        int64_t idx;
        if (gi_parse_int64(id, 0, 65535, &idx) == GI_OK)
            r->g.index = (int)idx;
    }
    if (!isfinite(v))
        return GI_OK;
    /* The exporter writes 0 for a failed read. */
    pos = v > 0 ? v : NAN;
    if (strcmp(m, "utilization") == 0)
        r->g.util_gpu_pct = v;
    else if (strcmp(m, "memory_used_bytes") == 0)
        r->g.memory_used_mib = pos / 1048576.0;
    else if (strcmp(m, "memory_total_bytes") == 0)
        r->g.memory_total_mib = pos / 1048576.0;
    else if (strcmp(m, "memory_free_bytes") == 0)
        r->free_mib = v / 1048576.0;
    else if (strcmp(m, "power_mW") == 0)
        r->g.power_w = pos / 1000.0;
    else if (strcmp(m, "power_default_limit_mW") == 0)
        r->g.power_limit_w = pos / 1000.0;
    else if (strcmp(m, "temperature_onchip") == 0)
        r->g.temp_c = pos;
    else if (strcmp(m, "temperature_onboard") == 0)
        r->temp_board = pos;
    else if (strcmp(m, "pending_rows_with_single_bit_ecc_errors") == 0 && v >= 0 && v < 1e12)
        r->rows_sbe = (int64_t)v;
    else if (strcmp(m, "pending_rows_with_double_bit_ecc_errors") == 0 && v >= 0 && v < 1e12)
        r->rows_dbe = (int64_t)v;
    else if (strcmp(m, "pending_rows_state") == 0 && (v == 0 || v == 1))
        r->rows_pending = (int)v;
    return GI_OK;
}

int hlexp_finish(struct hlexp *h)
{
    const char *host = h->hostname && *h->hostname ? h->hostname : h->kube_host;

    if (h->nrecs == 0)
        return GI_NOT_FOUND;
    for (size_t i = 0; i < h->nrecs; i++) {
        struct hlexp_rec *r = &h->recs[i];
        struct gi_gpu_obs *g;
        struct gi_pod_obs *p;
        char who[GI_UUID_LEN + 8];

        if (isnan(r->g.memory_used_mib) && !isnan(r->g.memory_total_mib) && !isnan(r->free_mib) &&
            r->free_mib <= r->g.memory_total_mib)
            r->g.memory_used_mib = r->g.memory_total_mib - r->free_mib;
        if (isnan(r->g.temp_c))
            r->g.temp_c = r->temp_board;
        r->g.remap_corrected = r->rows_sbe;
        r->g.remap_uncorrectable = r->rows_dbe;
        r->g.remap_pending = r->rows_pending;
        hlsmi_model_name("", r->g.uuid, r->g.name, sizeof r->g.name);
        gi_strlcpy(r->g.hostname, host, sizeof r->g.hostname);
        if ((g = gi_obs_add_gpu(h->out)) == NULL)
            return GI_TOO_LARGE;
        *g = r->g;
        snprintf(who, sizeof who, "device %s", g->uuid);
        gi_gpu_obs_sanitize(g, h->out, who);
        if (g->pod[0] && (p = gi_obs_add_pod(h->out)) != NULL) {
            gi_strlcpy(p->gpu_uuid, g->uuid, sizeof p->gpu_uuid);
            gi_strlcpy(p->pod, g->pod, sizeof p->pod);
            gi_strlcpy(p->namespace_, g->namespace_, sizeof p->namespace_);
        }
    }
    return GI_OK;
}
