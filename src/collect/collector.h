/* One way of discovering and reading GPUs on a host (NVML, nvidia-smi,
 * amd-smi/rocm-smi, hl-smi for Intel Gaudi). The agent tries them in order and keeps the first that
 * opens. */
#ifndef GI_COLLECTOR_H
#define GI_COLLECTOR_H

#include "core/observation.h"

#include <stddef.h>

struct collector_opts {
    const char *nvml_path;  /* NULL: the system's libnvidia-ml.so.1 */
    const char *nvidia_smi; /* NULL: "nvidia-smi" on PATH */
    const char *amd_smi;    /* NULL: "amd-smi" on PATH */
    const char *rocm_smi;   /* NULL: "rocm-smi" on PATH */
    const char *hl_smi;     /* NULL: "hl-smi" on PATH */
    const char *root;       /* NULL or "/": the host's /proc and /sys; else under it */
    const char *only;       /* NULL, or "nvml", "nvidia-smi", "amd", "gaudi" */
};

struct collector {
    const char *name;
    void *state;
    /* Identity, current readings and processes of every GPU, appended to
     * set. Returns 0, or -1 with err filled. */
    int (*discover)(void *state, struct gi_obs_set *set, char *err, size_t errlen);
    /* Optional: refreshes only the readings of a set discover filled
     * (cheaper); NULL means the agent calls discover instead. */
    int (*sample)(void *state, struct gi_obs_set *set, char *err, size_t errlen);
    void (*close)(void *state);
};

/* Opens the first collector that works on this host; err says why each
 * candidate failed when none did. Returns 0 or -1. */
int collector_open(const struct collector_opts *o, struct collector *out, char *err, size_t errlen);
void collector_close(struct collector *c);

#endif
