/* Private interface between the two files of one GPU-hour's usage:
 * usage_hour.c (the classification of its seconds and the writing of
 * its rows) and usage_consumers.c (the gathering of its consumers).
 * Nothing else includes it. */
#ifndef GI_USAGE_HOUR_INT_H
#define GI_USAGE_HOUR_INT_H

#include "store/store_int.h"
#include "store/usage_int.h"

#include <stdbool.h>
#include <stdint.h>

/* Consumers tracked per GPU-hour; more are left out (logged). */
#define MAX_CONSUMERS 32
/* A stored GPU UUID (MIG instances' made-up ones included). */
#define UUID_CAP 128

/* A covered stretch (start, end] of the chosen source, clipped to the
 * owned window, and where its sample's own coverage began (obs_lo), so
 * that an observation at t in (obs_lo, end] belongs to it. */
struct seg {
    int64_t start, end, obs_lo;
    const struct usage_sample *x;
};

enum kind_rank { K_INVENTORY = 1, K_CLOUD = 2, K_PROCESS = 3, K_SLURM = 4, K_K8S = 5 };

struct consumer {
    int rank;
    char kind[12];
    char key[3 * 128];
    char ns[128], pod[128], container[128], user[64], process[128], tenant[128], project[128];
    char team[OWNER_LEN];
    int64_t iv_lo, iv_hi; /* interval consumers: [iv_lo, iv_hi); 0,0 for observed ones */
    uint8_t *on;          /* observed consumers: per segment, seen in it */
    double alloc, busy, aidle, usum, meas, umax;
    int64_t first, last; /* the stretch of the hour it held */
};

struct hour_calc {
    int64_t gid, hour, lo, hi, now;
    int64_t owned_lo; /* start of the owned span: earliest reading or inventory registration */
    char uuid[UUID_CAP];
    char model[128], host[256], parent[UUID_CAP], profile[64];
    int64_t host_id, dc_id, missing, children;
    /* The earliest start of the cloud placeholders merged into this GPU
     * (their instance's first sighting or first run), 0 when none: it is
     * owned from then on, like a GPU registered in the inventory. */
    int64_t merged_from;
    bool has_host, has_dc;
    struct seg *segs;
    size_t nsegs;
    struct consumer cons[MAX_CONSUMERS + 1]; /* the last: "unknown" */
    size_t ncons;
    struct owner_fields owner;
    const struct usage_sample *chunk; /* every sample of the chunk (all its GPUs), by GPU */
    size_t nchunk;
};

/* usage_consumers.c: consumer k's team (usage_consumer_team) at the hour,
 * into k->team. */
int usage_hour_consumer_team(struct conn *c, struct hour_calc *h, struct consumer *k);

/* usage_consumers.c: pods and processes seen on the GPU around the hour. */
int usage_observed_consumers(struct conn *c, struct hour_calc *h);

/* usage_consumers.c: Kubernetes pods requesting GPUs on the GPU's node
 * without a per-GPU mapping, handed out over the node's GPUs. */
int usage_pod_heuristic(struct conn *c, struct hour_calc *h);

/* usage_consumers.c: Slurm jobs that held the GPU. */
int usage_slurm_consumers(struct conn *c, struct hour_calc *h);

/* usage_consumers.c: the runs of the cloud instance whose placeholder GPU
 * this is, or whose placeholder was merged into this GPU (consumer kind
 * "cloud", key "<provider>/<instance id>"); none for a merged
 * placeholder. */
int usage_cloud_consumers(struct conn *c, struct hour_calc *h);

/* usage_consumers.c: for a cloud placeholder GPU (which has no samples):
 * the start of its owned span, the instance's first sighting or its
 * first run's start, whichever is earlier; INT64_MAX for any other GPU
 * and for a placeholder merged into a real GPU (its history is that
 * GPU's, which is owned from the merged placeholders' start: see
 * hour_calc.merged_from). */
int usage_cloud_owned(struct conn *c, int64_t gid, int64_t *owned_from);

/* usage_consumers.c: inventory allocations of the server linked to the
 * GPU's host. */
int usage_inventory_consumers(struct conn *c, struct hour_calc *h);

#endif
