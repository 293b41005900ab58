/* GPU discovery and telemetry through NVML, loaded at run time with
 * dlopen so the agent starts (and reports "no NVIDIA driver") on hosts
 * without one. No NVIDIA header is needed: the few types used are
 * declared in nvml.c, sized for every header version seen in the field.
 *
 * Use: nvml_open once, nvml_discover for identity and first readings,
 * then nvml_sample every few seconds and nvml_processes as needed,
 * nvml_close at exit. A handle is not thread-safe. */
#ifndef GI_NVML_H
#define GI_NVML_H

#include "core/observation.h"

#include <stddef.h>

/* nvml_open results; anything but NVML_OPEN_OK leaves *out NULL. */
enum nvml_open_result {
    NVML_OPEN_OK = 0,
    NVML_OPEN_NOLIB, /* no loadable libnvidia-ml (no driver installed) */
    NVML_OPEN_NOSYM, /* the library lacks a required function */
    NVML_OPEN_INIT,  /* nvmlInit failed; the message carries NVML's reason */
    NVML_OPEN_NOMEM,
};

/* The NVML functions this module looks up. Required: INIT, SHUTDOWN,
 * COUNT, HANDLE. Every other one may be missing (old driver) and then
 * the readings it provides stay absent. */
enum nvml_fn {
    NVML_FN_INIT,
    NVML_FN_SHUTDOWN,
    NVML_FN_ERROR_STRING,
    NVML_FN_DRIVER_VERSION,
    NVML_FN_COUNT,
    NVML_FN_HANDLE,
    NVML_FN_NAME,
    NVML_FN_UUID,
    NVML_FN_SERIAL,
    NVML_FN_PCI,
    NVML_FN_MEMORY,
    NVML_FN_UTIL,
    NVML_FN_TEMP,
    NVML_FN_POWER,
    NVML_FN_POWER_LIMIT,
    NVML_FN_ECC,
    NVML_FN_MIG_MODE,
    NVML_FN_MIG_COUNT,
    NVML_FN_MIG_HANDLE,
    NVML_FN_GI_ID,
    NVML_FN_PROCS,
    NVML_FN_REMAP,
    NVML_FN__COUNT
};

/* NVML return codes the caller may see in struct nvml_dev_status. */
#define NVML_RC_SUCCESS 0
#define NVML_RC_NOT_SUPPORTED 3
#define NVML_RC_NO_PERMISSION 4
#define NVML_RC_NOT_FOUND 6
#define NVML_RC_INSUFFICIENT_SIZE 7
#define NVML_RC_DRIVER_NOT_LOADED 9
#define NVML_RC_GPU_IS_LOST 15

/* More devices than this are ignored (NVML itself stops at 64). */
#define NVML_MAX_GPUS 256
#define NVML_MAX_MIG_PER_GPU 16
/* Processes listed per device, at most. */
#define NVML_MAX_PROCS_PER_DEV 4096

/* What the module knows about one device (physical GPU or MIG instance)
 * beyond its observation: whether NVML lost it, and why it could not be
 * read. Refreshed by nvml_discover, nvml_sample and nvml_processes. */
struct nvml_dev_status {
    int index;              /* NVML index of the physical GPU */
    int mig;                /* 1 for a MIG instance, 0 for a physical GPU */
    char uuid[GI_UUID_LEN]; /* "" when NVML could not tell */
    int lost;               /* NVML answered GPU_IS_LOST: fallen off the bus */
    int handle_error;       /* NVML code when no handle could be had, else 0 */
    int procs_error;        /* NVML code of the last failed process listing, else 0 */
};

struct nvml;

/* Loads NVML and initializes it. path: the library to load, or NULL for
 * env GPUINV_NVML_LIB when set, else "libnvidia-ml.so.1" then
 * "libnvidia-ml.so". On failure writes a one-line reason into err
 * (capacity errlen, may be 0) and returns an enum nvml_open_result; on
 * success *out is a handle the caller frees with nvml_close. */
int nvml_open(const char *path, struct nvml **out, char *err, size_t errlen);

/* Shuts NVML down and unloads it; accepts NULL. */
void nvml_close(struct nvml *h);

/* Appends one observation per GPU NVML lists, each followed by its MIG
 * instances (parent_uuid set), with identity and current readings. A
 * reading NVML refuses (not supported, no permission, …) stays absent; a
 * GPU NVML reports lost is still appended, with what could be read, and
 * its status says lost; a GPU NVML cannot open at all (other error) is
 * left out and only its status says why. Forgets earlier discoveries.
 * Returns GI_OK, or GI_INTERNAL / GI_TOO_LARGE when the set cannot grow
 * (the set then holds the GPUs appended so far). */
int nvml_discover(struct nvml *h, struct gi_obs_set *set);

/* Refreshes the readings (utilization, memory used, temperature, power,
 * power limit, ECC counters, time) of the observations in set whose uuid
 * matches a device found by the last nvml_discover; other entries are
 * left alone. Cheap: no identity calls. Returns GI_OK. */
int nvml_sample(struct nvml *h, struct gi_obs_set *set);

/* Appends the compute processes running on the discovered GPUs: pid,
 * used memory, GPU uuid and bus id. A process in a MIG instance is
 * attributed to the instance's uuid when NVML tells which. When the
 * physical GPU refuses the listing (unprivileged callers on a MIG GPU)
 * each MIG instance is asked instead. Returns GI_OK, or GI_INTERNAL /
 * GI_TOO_LARGE when the set cannot grow. */
int nvml_processes(struct nvml *h, struct gi_obs_set *set);

/* How many devices the last nvml_discover listed (each GPU followed by
 * its MIG instances, including GPUs left out of the set). */
size_t nvml_device_count(const struct nvml *h);

/* Copies the status of device i (< nvml_device_count) into *out; returns
 * GI_OK or GI_NOT_FOUND past the end. */
int nvml_device_status(const struct nvml *h, size_t i, struct nvml_dev_status *out);

/* The symbol name fn was resolved to ("nvmlInit_v2", "nvmlInit"), or
 * NULL when the library lacks it. Borrowed, static. */
const char *nvml_symbol(const struct nvml *h, enum nvml_fn fn);

/* The driver version NVML reported at nvml_open, "" when unknown. */
const char *nvml_driver_version(const struct nvml *h);

#endif
