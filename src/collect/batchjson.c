/* Batch JSON for the push API; absent values are left out, never zero.
 * Nothing is sent that the server would have to refuse the batch for: a
 * GPU without a uuid (nothing identifies it) is left out with its
 * samples, a process is sent under its GPU's uuid (found by bus id when
 * the reporter gave only that) or not at all, and a hidden pid is left
 * out (an anonymous process, sent with its memory). */
#include "collect/batchjson.h"

#include <math.h>
#include <stdlib.h>
#include <string.h>

static void put_str(json_t *o, const char *k, const char *v)
{
    if (v && *v)
        json_object_set_new(o, k, json_string(v));
}

static void put_num(json_t *o, const char *k, double v)
{
    if (!isnan(v))
        json_object_set_new(o, k, json_real(v));
}

static void put_int(json_t *o, const char *k, int64_t v)
{
    if (v >= 0)
        json_object_set_new(o, k, json_integer(v));
}

/* Position of the GPU named uuid in the sent list, or -1. sent[i] is
 * GPU i's position there (-1: not sent). */
static long sent_index(const struct gi_batch *b, const long *sent, const char *uuid)
{
    if (uuid[0] == '\0')
        return -1;
    for (size_t g = 0; g < b->set.ngpus; g++)
        if (sent[g] >= 0 && strcmp(b->set.gpus[g].uuid, uuid) == 0)
            return sent[g];
    return -1;
}

/* The uuid a process is charged to: its own, else that of the sent GPU
 * on its bus. NULL when neither is known. */
static const char *proc_gpu(const struct gi_batch *b, const long *sent, const struct gi_proc_obs *p)
{
    if (sent_index(b, sent, p->gpu_uuid) >= 0)
        return p->gpu_uuid;
    if (p->gpu_uuid[0] == '\0' && p->pci_bus_id[0] != '\0')
        for (size_t g = 0; g < b->set.ngpus; g++)
            if (sent[g] >= 0 && b->set.gpus[g].parent_uuid[0] == '\0' &&
                strcmp(b->set.gpus[g].pci_bus_id, p->pci_bus_id) == 0)
                return b->set.gpus[g].uuid;
    return NULL;
}

json_t *batchjson_build(const struct gi_batch *b)
{
    static const char *const vendors[] = {NULL, "nvidia", "amd", "intel"};
    json_t *root = json_object(), *host = json_object();
    json_t *gpus = json_array(), *samples = json_array(), *procs = json_array();
    long *sent = calloc(b->set.ngpus + 1, sizeof *sent), nsent = 0;

    if (sent == NULL || root == NULL || host == NULL || gpus == NULL || samples == NULL ||
        procs == NULL) {
        free(sent);
        json_decref(root);
        json_decref(host);
        json_decref(gpus);
        json_decref(samples);
        json_decref(procs);
        return NULL;
    }

    put_str(root, "batch_id", b->batch_id);
    put_str(root, "source", b->source);
    put_str(host, "hostname", b->host.hostname);
    put_str(host, "machine_id", b->host.machine_id);
    put_str(host, "serial", b->host.serial);
    put_str(host, "cluster", b->host.cluster);
    put_str(host, "datacenter", b->host.datacenter);
    json_object_set_new(root, "host", host);
    for (size_t i = 0; i < b->set.ngpus; i++) {
        const struct gi_gpu_obs *g = &b->set.gpus[i];
        json_t *o;
        sent[i] = -1;
        if (g->uuid[0] == '\0' || sent_index(b, sent, g->uuid) >= 0)
            continue; /* no identity, or listed already */
        sent[i] = nsent++;
        o = json_object();
        put_str(o, "uuid", g->uuid);
        put_int(o, "index", g->index);
        put_str(o, "vendor", vendors[g->vendor]);
        put_str(o, "name", g->name);
        put_str(o, "serial", g->serial);
        put_str(o, "pci_bus_id", g->pci_bus_id);
        put_num(o, "memory_total_mib", g->memory_total_mib);
        put_str(o, "driver", g->driver);
        put_str(o, "vbios", g->vbios);
        if (g->mig_mode >= 0)
            json_object_set_new(o, "mig_mode", json_boolean(g->mig_mode));
        put_str(o, "parent_uuid", g->parent_uuid);
        put_str(o, "mig_profile", g->mig_profile);
        put_int(o, "mig_instance", g->mig_instance);
        put_int(o, "remap_corrected", g->remap_corrected);
        put_int(o, "remap_uncorrectable", g->remap_uncorrectable);
        if (g->remap_pending >= 0)
            json_object_set_new(o, "remap_pending", json_boolean(g->remap_pending));
        if (g->remap_failure >= 0)
            json_object_set_new(o, "remap_failure", json_boolean(g->remap_failure));
        json_array_append_new(gpus, o);
    }
    /* Samples go in columns, the GPU as its index in "gpus": a third of
     * the bytes of one object per sample, and far cheaper to decode. */
    for (size_t i = 0; i < b->nsamples; i++) {
        const struct gi_sample *x = &b->samples[i];
        const double d[6] = {x->util_avg,    x->util_max, x->mem_used_mib,
                             x->power_avg_w, x->energy_j, x->temp_c};
        const int64_t n[3] = {x->ecc_corrected, x->ecc_uncorrected, x->xid};
        long g = sent_index(b, sent, x->gpu_uuid);
        json_t *row;
        if (g < 0)
            continue; /* its GPU is not sent */
        row = json_array();
        json_array_append_new(row, json_integer((json_int_t)x->ts));
        json_array_append_new(row, json_integer((json_int_t)g));
        for (int k = 0; k < 6; k++)
            json_array_append_new(row, isnan(d[k]) ? json_null() : json_real(d[k]));
        for (int k = 0; k < 3; k++)
            json_array_append_new(row, n[k] < 0 ? json_null() : json_integer(n[k]));
        json_array_append_new(samples, row);
    }
    for (size_t i = 0; i < b->set.nprocs; i++) {
        const struct gi_proc_obs *p = &b->set.procs[i];
        const char *gpu = proc_gpu(b, sent, p);
        json_t *o;
        if (gpu == NULL)
            continue; /* on no GPU this batch names */
        o = json_pack("{s:s}", "gpu", gpu);
        put_int(o, "pid", p->pid);
        put_str(o, "name", p->name);
        put_str(o, "user", p->user);
        put_int(o, "uid", p->uid);
        put_str(o, "container", p->container);
        put_str(o, "pod_uid", p->pod_uid);
        put_str(o, "pod", p->pod);
        put_str(o, "namespace", p->namespace_);
        put_num(o, "used_mib", p->used_mib);
        if (p->ts_ms > 0)
            json_object_set_new(o, "time", json_integer(p->ts_ms / 1000));
        json_array_append_new(procs, o);
    }
    json_object_set_new(root, "gpus", gpus);
    json_object_set_new(root, "samples",
                        json_pack("{s:[sssssssssss], s:o}", "columns", "time", "gpu", "util_avg",
                                  "util_max", "mem_used_mib", "power_avg_w", "energy_j", "temp_c",
                                  "ecc_corrected", "ecc_uncorrected", "xid", "rows", samples));
    json_object_set_new(root, "processes", procs);
    free(sent);
    return root;
}
