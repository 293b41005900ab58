/* Edge aggregation for the agent: 10 s readings of each GPU folded into one
 * summary sample per push interval (avg/max utilization, max memory, avg
 * power, energy, max temperature, newest counters). */
#ifndef GI_SUMMARY_H
#define GI_SUMMARY_H

#include "core/observation.h"

#include <stddef.h>
#include <stdint.h>

struct summary_gpu {
    char uuid[GI_UUID_LEN];
    int n_util, n_power;
    double util_sum, util_max, mem_max, power_sum, energy_j, temp_max;
    int64_t ecc_c, ecc_u, xid;
    int64_t last_ts; /* time of the previous reading, for energy */
    double last_power;
};

struct summary {
    struct summary_gpu *gpus;
    size_t n, cap;
};

/* Folds one reading of every GPU in `set`, taken at time ts. Returns 0, or
 * -1 when out of memory. */
int summary_add(struct summary *s, const struct gi_obs_set *set, int64_t ts);
/* Emits one sample per GPU with readings, stamped ts, into *out (a new
 * array the caller frees; *n its length), then starts a new interval. */
int summary_flush(struct summary *s, int64_t ts, struct gi_sample **out, size_t *n);
void summary_free(struct summary *s);

#endif
