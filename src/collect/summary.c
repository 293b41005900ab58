/* Edge aggregation; see summary.h. */
#include "collect/summary.h"
#include "core/util.h"

#include <math.h>
#include <stdlib.h>
#include <string.h>

static struct summary_gpu *find(struct summary *s, const char *uuid)
{
    for (size_t i = 0; i < s->n; i++)
        if (strcmp(s->gpus[i].uuid, uuid) == 0)
            return &s->gpus[i];
    if (s->n == s->cap) {
        size_t cap = s->cap ? s->cap * 2 : 8;
        struct summary_gpu *g = realloc(s->gpus, cap * sizeof *g);
        if (g == NULL)
            return NULL;
        s->gpus = g;
        s->cap = cap;
    }
    struct summary_gpu *g = &s->gpus[s->n++];
    memset(g, 0, sizeof *g);
    gi_strlcpy(g->uuid, uuid, sizeof g->uuid);
    g->util_max = g->mem_max = g->temp_max = NAN;
    g->ecc_c = g->ecc_u = g->xid = -1;
    g->last_power = NAN;
    return g;
}

int summary_add(struct summary *s, const struct gi_obs_set *set, int64_t ts)
{
    for (size_t i = 0; i < set->ngpus; i++) {
        const struct gi_gpu_obs *o = &set->gpus[i];
        struct summary_gpu *g = find(s, o->uuid);
        if (g == NULL)
            return -1;
        if (!isnan(o->util_gpu_pct)) {
            g->util_sum += o->util_gpu_pct;
            g->n_util++;
            g->util_max = isnan(g->util_max) ? o->util_gpu_pct : fmax(g->util_max, o->util_gpu_pct);
        }
        if (!isnan(o->memory_used_mib))
            g->mem_max =
                isnan(g->mem_max) ? o->memory_used_mib : fmax(g->mem_max, o->memory_used_mib);
        if (!isnan(o->temp_c))
            g->temp_max = isnan(g->temp_max) ? o->temp_c : fmax(g->temp_max, o->temp_c);
        if (!isnan(o->power_w)) {
            /* Trapezoid between readings; the first reading only opens it. */
            if (!isnan(g->last_power) && ts > g->last_ts)
                g->energy_j += (g->last_power + o->power_w) / 2.0 * (double)(ts - g->last_ts);
            g->last_power = o->power_w;
            g->last_ts = ts;
            g->power_sum += o->power_w;
            g->n_power++;
        }
        if (o->ecc_corrected >= 0)
            g->ecc_c = o->ecc_corrected;
        if (o->ecc_uncorrected >= 0)
            g->ecc_u = o->ecc_uncorrected;
        if (o->xid_last >= 0)
            g->xid = o->xid_last;
    }
    return 0;
}

int summary_flush(struct summary *s, int64_t ts, struct gi_sample **out, size_t *n)
{
    struct gi_sample *arr = calloc(s->n + 1, sizeof *arr);
    size_t k = 0;

    if (arr == NULL)
        return -1;
    for (size_t i = 0; i < s->n; i++) {
        struct summary_gpu *g = &s->gpus[i];
        struct gi_sample *x;
        if (g->n_util == 0 && g->n_power == 0 && isnan(g->mem_max) && isnan(g->temp_max))
            continue;
        x = &arr[k++];
        gi_sample_init(x);
        x->ts = ts;
        gi_strlcpy(x->gpu_uuid, g->uuid, sizeof x->gpu_uuid);
        if (g->n_util) {
            x->util_avg = g->util_sum / g->n_util;
            x->util_max = g->util_max;
        }
        x->mem_used_mib = g->mem_max;
        x->temp_c = g->temp_max;
        if (g->n_power) {
            x->power_avg_w = g->power_sum / g->n_power;
            x->energy_j = g->energy_j;
        }
        x->ecc_corrected = g->ecc_c;
        x->ecc_uncorrected = g->ecc_u;
        x->xid = g->xid;
        /* Start the next interval; keep the last power reading so energy
         * is continuous across intervals. */
        g->n_util = g->n_power = 0;
        g->util_sum = g->power_sum = g->energy_j = 0;
        g->util_max = g->mem_max = g->temp_max = NAN;
    }
    *out = arr;
    *n = k;
    return 0;
}

void summary_free(struct summary *s)
{
    free(s->gpus);
    memset(s, 0, sizeof *s);
}
