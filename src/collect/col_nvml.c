/* The NVML collector: the preferred way to read NVIDIA GPUs (no
 * subprocess, cheap readings). */
#include "collect/collector.h"
#include "collect/nvml.h"
#include "core/status.h"

#include <stdio.h>

static int nvml_col_discover(void *state, struct gi_obs_set *set, char *err, size_t errlen)
{
    struct nvml *h = state;

    if (nvml_discover(h, set) != GI_OK) {
        snprintf(err, errlen, "NVML listed more GPUs than can be held");
        return -1;
    }
    if (nvml_processes(h, set) != GI_OK) {
        snprintf(err, errlen, "NVML listed more processes than can be held");
        return -1;
    }
    return 0;
}

static int nvml_col_sample(void *state, struct gi_obs_set *set, char *err, size_t errlen)
{
    (void)err;
    (void)errlen;
    return nvml_sample(state, set) == GI_OK ? 0 : -1;
}

static void nvml_col_close(void *state) { nvml_close(state); }

int collector_open_nvml(const struct collector_opts *o, struct collector *out, char *err,
                        size_t errlen)
{
    struct nvml *h = NULL;

    if (nvml_open(o->nvml_path, &h, err, errlen) != NVML_OPEN_OK)
        return -1;
    out->name = "nvml";
    out->state = h;
    out->discover = nvml_col_discover;
    out->sample = nvml_col_sample;
    out->close = nvml_col_close;
    return 0;
}
