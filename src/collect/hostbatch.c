/* Per-host batches; see hostbatch.h. */
#include "collect/hostbatch.h"
#include "core/util.h"

#include <math.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

/* One sample from a GPU's current readings; false when it has none. */
static bool reading_sample(const struct gi_gpu_obs *g, int64_t now, struct gi_sample *x)
{
    gi_sample_init(x);
    x->ts = g->ts_ms > 0 ? g->ts_ms / 1000 : now;
    gi_strlcpy(x->gpu_uuid, g->uuid, sizeof x->gpu_uuid);
    x->util_avg = x->util_max = g->util_gpu_pct;
    x->mem_used_mib = g->memory_used_mib;
    x->power_avg_w = g->power_w;
    x->temp_c = g->temp_c;
    x->ecc_corrected = g->ecc_corrected;
    x->ecc_uncorrected = g->ecc_uncorrected;
    x->xid = g->xid_last;
    return !isnan(x->util_avg) || !isnan(x->mem_used_mib) || !isnan(x->power_avg_w) ||
           !isnan(x->temp_c) || x->ecc_corrected >= 0 || x->ecc_uncorrected >= 0 || x->xid >= 0;
}

static const char *host_of(const struct gi_gpu_obs *g)
{
    return g->hostname[0] ? g->hostname : "unknown-host";
}

/* Index of the batch GPU with this uuid, or -1. */
static long find_gpu(const struct gi_batch *b, const char *uuid)
{
    for (size_t k = 0; k < b->set.ngpus; k++)
        if (strcmp(b->set.gpus[k].uuid, uuid) == 0)
            return (long)k;
    return -1;
}

int hostbatch_split(const struct gi_obs_set *set, const char *prefix, int64_t now,
                    const char *cluster, bool with_samples, struct gi_batch **out, size_t *n)
{
    bool *done = calloc(set->ngpus + 1, sizeof *done);
    struct gi_batch *bs = calloc(set->ngpus + 1, sizeof *bs);
    size_t nb = 0;

    *out = NULL;
    *n = 0;
    if (done == NULL || bs == NULL)
        goto fail;
    for (size_t i = 0; i < set->ngpus; i++) {
        struct gi_batch *b;
        const char *host = host_of(&set->gpus[i]);
        if (done[i] || set->gpus[i].uuid[0] == '\0')
            continue;
        b = &bs[nb++];
        snprintf(b->batch_id, sizeof b->batch_id, "%.40s-%lld-%.60s", prefix, (long long)now, host);
        gi_strlcpy(b->host.hostname, host, sizeof b->host.hostname);
        if (cluster)
            gi_strlcpy(b->host.cluster, cluster, sizeof b->host.cluster);
        if ((b->samples = calloc(set->ngpus, sizeof *b->samples)) == NULL)
            goto fail;
        for (size_t j = i; j < set->ngpus; j++) {
            struct gi_gpu_obs *g;
            if (done[j] || set->gpus[j].uuid[0] == '\0' || strcmp(host_of(&set->gpus[j]), host))
                continue;
            done[j] = true;
            if (find_gpu(b, set->gpus[j].uuid) >= 0)
                continue; /* the same GPU twice: keep the first */
            if ((g = gi_obs_add_gpu(&b->set)) == NULL)
                goto fail;
            *g = set->gpus[j];
            if (with_samples && reading_sample(g, now, &b->samples[b->nsamples]))
                b->nsamples++;
        }
        for (size_t p = 0; p < set->npods; p++) {
            struct gi_pod_obs *po;
            if (find_gpu(b, set->pods[p].gpu_uuid) < 0)
                continue;
            if ((po = gi_obs_add_pod(&b->set)) == NULL)
                goto fail;
            *po = set->pods[p];
        }
        for (size_t p = 0; p < set->nprocs; p++) {
            struct gi_proc_obs *pr;
            if (find_gpu(b, set->procs[p].gpu_uuid) < 0)
                continue;
            if ((pr = gi_obs_add_proc(&b->set)) == NULL)
                goto fail;
            *pr = set->procs[p];
        }
    }
    free(done);
    *out = bs;
    *n = nb;
    return 0;
fail:
    free(done);
    hostbatch_free(bs, nb);
    return -1;
}

void hostbatch_free(struct gi_batch *b, size_t n)
{
    for (size_t i = 0; b && i < n; i++)
        gi_batch_free(&b[i]);
    free(b);
}
