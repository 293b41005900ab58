/* NVML through dlopen: symbol resolution with versioned names first,
 * defensive struct layouts, and the mapping of NVML readings onto
 * struct gi_gpu_obs / gi_proc_obs. Every per-call NVML failure leaves that
 * one reading absent; only GPU_IS_LOST changes the state of a device. */
#define _GNU_SOURCE
#include "collect/nvml.h"
#include "core/status.h"
#include "core/util.h"

#include <dlfcn.h>
#include <math.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>

/* ---- The NVML ABI, declared here (no NVIDIA header is available) ---- */

typedef struct nvml_device_opaque *nvml_device;

/* Buffer sizes NVML documents as sufficient, with room to spare. */
#define UUID_BUF 96
#define NAME_BUF 96
#define SERIAL_BUF 30
#define DRIVER_BUF 80

#define RC_INSUFFICIENT_SIZE 7
#define RC_GPU_IS_LOST 15
#define TEMPERATURE_GPU 0
#define ECC_CORRECTED 0
#define ECC_UNCORRECTED 1
#define ECC_VOLATILE 0
#define MIG_ENABLED 1
#define NO_INSTANCE 0xFFFFFFFFu
#define VALUE_NOT_AVAILABLE 0xFFFFFFFFFFFFFFFFull

/* nvmlPciInfo_t as nvmlDeviceGetPciInfo_v2/_v3 fill it. */
struct pci_info_v3 {
    char bus_id_legacy[16];
    unsigned int domain, bus, device, pci_device_id, pci_subsystem_id;
    char bus_id[32];
};

/* The original layout filled by the unsuffixed nvmlDeviceGetPciInfo. */
struct pci_info_v1 {
    char bus_id[16];
    unsigned int domain, bus, device, pci_device_id, pci_subsystem_id;
    unsigned int reserved[4];
};

/* Every PCI variant is written into this, so a later header that grows
 * the struct cannot write past our buffer. */
union pci_info {
    struct pci_info_v3 v3;
    struct pci_info_v1 v1;
    unsigned char pad[512];
};

struct memory_v1 {
    unsigned long long total, free, used;
};

struct memory_v2 {
    unsigned int version;
    unsigned long long total, reserved, free, used;
};

union memory_info {
    struct memory_v1 v1;
    struct memory_v2 v2;
    unsigned char pad[256];
};

#define MEMORY_V2_VERSION ((unsigned int)(sizeof(struct memory_v2) | (2u << 24)))

struct utilization {
    unsigned int gpu, memory;
};

/* Process records: 16 bytes for the unsuffixed function, 24 for _v2 and
 * _v3. The buffer gives every record PROC_SLOT bytes, so a library using
 * a larger record than we expect still cannot overrun it. */
struct proc_info_v1 {
    unsigned int pid;
    unsigned long long used;
};

struct proc_info_v2 {
    unsigned int pid;
    unsigned long long used;
    unsigned int gpu_instance_id, compute_instance_id;
};

#define PROC_SLOT 64

typedef int (*fn_void)(void);
typedef const char *(*fn_error_string)(int);
typedef int (*fn_str)(char *, unsigned int);
typedef int (*fn_uint_out)(unsigned int *);
typedef int (*fn_handle)(unsigned int, nvml_device *);
typedef int (*fn_dev_str)(nvml_device, char *, unsigned int);
typedef int (*fn_dev_ptr)(nvml_device, void *);
typedef int (*fn_dev_uint)(nvml_device, unsigned int *);
typedef int (*fn_dev_temp)(nvml_device, int, unsigned int *);
typedef int (*fn_dev_ecc)(nvml_device, int, int, unsigned long long *);
typedef int (*fn_dev_mig_mode)(nvml_device, unsigned int *, unsigned int *);
typedef int (*fn_dev_mig_handle)(nvml_device, unsigned int, nvml_device *);
typedef int (*fn_dev_procs)(nvml_device, unsigned int *, void *);
typedef int (*fn_dev_remap)(nvml_device, unsigned int *, unsigned int *, unsigned int *,
                            unsigned int *);

/* Candidate symbol names per function, preferred first. */
static const char *const fn_names[NVML_FN__COUNT][4] = {
    [NVML_FN_INIT] = {"nvmlInit_v2", "nvmlInit"},
    [NVML_FN_SHUTDOWN] = {"nvmlShutdown"},
    [NVML_FN_ERROR_STRING] = {"nvmlErrorString"},
    [NVML_FN_DRIVER_VERSION] = {"nvmlSystemGetDriverVersion"},
    [NVML_FN_COUNT] = {"nvmlDeviceGetCount_v2", "nvmlDeviceGetCount"},
    [NVML_FN_HANDLE] = {"nvmlDeviceGetHandleByIndex_v2", "nvmlDeviceGetHandleByIndex"},
    [NVML_FN_NAME] = {"nvmlDeviceGetName"},
    [NVML_FN_UUID] = {"nvmlDeviceGetUUID"},
    [NVML_FN_SERIAL] = {"nvmlDeviceGetSerial"},
    [NVML_FN_PCI] = {"nvmlDeviceGetPciInfo_v3", "nvmlDeviceGetPciInfo_v2", "nvmlDeviceGetPciInfo"},
    [NVML_FN_MEMORY] = {"nvmlDeviceGetMemoryInfo_v2", "nvmlDeviceGetMemoryInfo"},
    [NVML_FN_UTIL] = {"nvmlDeviceGetUtilizationRates"},
    [NVML_FN_TEMP] = {"nvmlDeviceGetTemperature"},
    [NVML_FN_POWER] = {"nvmlDeviceGetPowerUsage"},
    [NVML_FN_POWER_LIMIT] = {"nvmlDeviceGetEnforcedPowerLimit"},
    [NVML_FN_ECC] = {"nvmlDeviceGetTotalEccErrors"},
    [NVML_FN_MIG_MODE] = {"nvmlDeviceGetMigMode"},
    [NVML_FN_MIG_COUNT] = {"nvmlDeviceGetMaxMigDeviceCount"},
    [NVML_FN_MIG_HANDLE] = {"nvmlDeviceGetMigDeviceHandleByIndex"},
    [NVML_FN_GI_ID] = {"nvmlDeviceGetGpuInstanceId"},
    [NVML_FN_PROCS] = {"nvmlDeviceGetComputeRunningProcesses_v3",
                       "nvmlDeviceGetComputeRunningProcesses_v2",
                       "nvmlDeviceGetComputeRunningProcesses"},
    /* Ampere and later; older GPUs answer NOT_SUPPORTED. */
    [NVML_FN_REMAP] = {"nvmlDeviceGetRemappedRows"},
};

/* One device of the last discovery, with its NVML handle. */
struct dev {
    nvml_device handle;
    int parent; /* position of the physical GPU in devs, -1 for one */
    int gi_id;  /* MIG GPU instance id, -1 unknown or none */
    char bus_id[GI_BUS_LEN];
    struct nvml_dev_status st;
};

struct nvml {
    void *lib;
    void *fn[NVML_FN__COUNT];
    int variant[NVML_FN__COUNT]; /* which candidate of fn_names resolved */
    char driver[DRIVER_BUF];
    struct dev *devs;
    size_t ndevs, devs_cap;
};

/* ---- Helpers ---- */

/* Wall-clock time in milliseconds since the epoch. */
static int64_t now_ms(void)
{
    struct timespec ts;

    clock_gettime(CLOCK_REALTIME, &ts);
    return (int64_t)ts.tv_sec * 1000 + ts.tv_nsec / 1000000;
}

/* NVML's name for rc; ours when the library has no nvmlErrorString. */
static const char *rc_text(const struct nvml *h, int rc)
{
    if (h != NULL && h->fn[NVML_FN_ERROR_STRING] != NULL) {
        const char *s = ((fn_error_string)h->fn[NVML_FN_ERROR_STRING])(rc);
        if (s != NULL)
            return s;
    }
    switch (rc) {
    case 1:
        return "Uninitialized";
    case 2:
        return "Invalid Argument";
    case 3:
        return "Not Supported";
    case 4:
        return "Insufficient Permissions";
    case 6:
        return "Not Found";
    case 7:
        return "Insufficient Size";
    case 9:
        return "Driver Not Loaded";
    case 12:
        return "NVML Shared Library Not Found";
    case 13:
        return "Function Not Found";
    case 15:
        return "GPU is lost";
    default:
        return "Unknown Error";
    }
}

/* Copies an NVML string (possibly unterminated within cap) into dst when
 * it is printable text and not a placeholder; leaves dst alone otherwise. */
static void take_string(char *dst, size_t dstlen, char *src, size_t cap)
{
    src[cap - 1] = '\0';
    if (gi_text_ok(src) && !gi_is_placeholder(src))
        gi_strlcpy(dst, src, dstlen);
}

/* Notes GPU_IS_LOST on d; true when rc is success. */
static int ok(struct dev *d, int rc)
{
    if (rc == RC_GPU_IS_LOST)
        d->st.lost = 1;
    return rc == 0;
}

/* Appends a zeroed device; NULL when out of memory. */
static struct dev *add_dev(struct nvml *h)
{
    if (h->ndevs == h->devs_cap) {
        size_t nc = h->devs_cap ? h->devs_cap * 2 : 16;
        struct dev *p = realloc(h->devs, nc * sizeof *p);
        if (p == NULL)
            return NULL;
        h->devs = p;
        h->devs_cap = nc;
    }
    struct dev *d = &h->devs[h->ndevs++];
    memset(d, 0, sizeof *d);
    d->parent = -1;
    d->gi_id = -1;
    d->st.index = -1;
    return d;
}

/* ---- Opening ---- */

/* Loads the library: the given path only, or the default names. */
static void *load_library(const char *path, char *why, size_t whylen)
{
    static const char *const names[] = {"libnvidia-ml.so.1", "libnvidia-ml.so"};
    void *lib;

    if (path == NULL || path[0] == '\0') {
        const char *env = getenv("GPUINV_NVML_LIB");
        if (env != NULL && env[0] != '\0')
            path = env;
    }
    if (path != NULL && path[0] != '\0') {
        lib = dlopen(path, RTLD_NOW | RTLD_LOCAL);
        if (lib == NULL)
            snprintf(why, whylen, "%s", dlerror());
        return lib;
    }
    for (size_t i = 0; i < sizeof names / sizeof names[0]; i++) {
        lib = dlopen(names[i], RTLD_NOW | RTLD_LOCAL);
        if (lib != NULL)
            return lib;
        snprintf(why, whylen, "%s", dlerror());
    }
    return NULL;
}

/* Resolves every function; returns the first required one missing, or
 * NVML_FN__COUNT when all required ones are there. */
static enum nvml_fn resolve(struct nvml *h)
{
    enum nvml_fn missing = NVML_FN__COUNT;

    for (int f = 0; f < NVML_FN__COUNT; f++) {
        h->fn[f] = NULL;
        h->variant[f] = -1;
        for (int v = 0; v < 4 && fn_names[f][v] != NULL; v++) {
            void *p = dlsym(h->lib, fn_names[f][v]);
            if (p != NULL) {
                h->fn[f] = p;
                h->variant[f] = v;
                break;
            }
        }
        int required =
            f == NVML_FN_INIT || f == NVML_FN_SHUTDOWN || f == NVML_FN_COUNT || f == NVML_FN_HANDLE;
        if (required && h->fn[f] == NULL && missing == NVML_FN__COUNT)
            missing = (enum nvml_fn)f;
    }
    return missing;
}

int nvml_open(const char *path, struct nvml **out, char *err, size_t errlen)
{
    struct nvml *h = NULL;
    char why[256] = "";
    char scratch[1];
    int rc = NVML_OPEN_OK;

    *out = NULL;
    if (err == NULL || errlen == 0) {
        err = scratch;
        errlen = sizeof scratch;
    }
    err[0] = '\0';
    h = calloc(1, sizeof *h);
    if (h == NULL) {
        snprintf(err, errlen, "out of memory");
        return NVML_OPEN_NOMEM;
    }
    h->lib = load_library(path, why, sizeof why);
    if (h->lib == NULL) {
        snprintf(err, errlen, "NVML library not found: %s", why);
        rc = NVML_OPEN_NOLIB;
        goto cleanup;
    }
    enum nvml_fn missing = resolve(h);
    if (missing != NVML_FN__COUNT) {
        snprintf(err, errlen, "NVML library lacks %s", fn_names[missing][0]);
        rc = NVML_OPEN_NOSYM;
        goto cleanup;
    }
    int nrc = ((fn_void)h->fn[NVML_FN_INIT])();
    if (nrc != 0) {
        snprintf(err, errlen, "NVML init failed: %s (%d)", rc_text(h, nrc), nrc);
        rc = NVML_OPEN_INIT;
        goto cleanup;
    }
    if (h->fn[NVML_FN_DRIVER_VERSION] != NULL) {
        char buf[DRIVER_BUF] = "";
        if (((fn_str)h->fn[NVML_FN_DRIVER_VERSION])(buf, sizeof buf) == 0)
            take_string(h->driver, sizeof h->driver, buf, sizeof buf);
    }
    *out = h;
    h = NULL;

cleanup:
    if (h != NULL) {
        if (h->lib != NULL)
            dlclose(h->lib);
        free(h);
    }
    return rc;
}

void nvml_close(struct nvml *h)
{
    if (h == NULL)
        return;
    ((fn_void)h->fn[NVML_FN_SHUTDOWN])();
    dlclose(h->lib);
    free(h->devs);
    free(h);
}

/* ---- Readings ---- */

/* Fills the PCI bus id of d (and obs) from NVML's PCI info. */
static void read_pci(struct nvml *h, struct dev *d, struct gi_gpu_obs *g)
{
    union pci_info pci;
    char legacy[sizeof pci.v3.bus_id_legacy + 1], full[sizeof pci.v3.bus_id + 1], num[40];

    if (h->fn[NVML_FN_PCI] == NULL)
        return;
    memset(&pci, 0, sizeof pci);
    if (!ok(d, ((fn_dev_ptr)h->fn[NVML_FN_PCI])(d->handle, &pci)))
        return;
    /* v2/v3 fill busId and busIdLegacy; the unsuffixed function fills the
     * old 16-byte busId, at busIdLegacy's offset. The numeric fields share
     * an offset in every layout; they carry no function number, which is 0
     * for every GPU seen so far. */
    memcpy(legacy, pci.v3.bus_id_legacy, sizeof pci.v3.bus_id_legacy);
    legacy[sizeof legacy - 1] = '\0';
    memcpy(full, pci.v3.bus_id, sizeof pci.v3.bus_id);
    full[sizeof full - 1] = '\0';
    snprintf(num, sizeof num, "%04x:%02x:%02x.0", pci.v1.domain & 0xffffu, pci.v1.bus & 0xffu,
             pci.v1.device & 0x1fu);
    if ((h->variant[NVML_FN_PCI] == 2 || gi_pci_normalize(full, d->bus_id) != 0) &&
        gi_pci_normalize(legacy, d->bus_id) != 0 &&
        ((pci.v1.bus | pci.v1.device) == 0 || gi_pci_normalize(num, d->bus_id) != 0))
        d->bus_id[0] = '\0';
    gi_strlcpy(g->pci_bus_id, d->bus_id, sizeof g->pci_bus_id);
}

/* Reads memory total and used (MiB) of d; false when NVML refused. */
static int read_memory(struct nvml *h, struct dev *d, double *total, double *used)
{
    union memory_info m;
    unsigned long long t, u;

    if (h->fn[NVML_FN_MEMORY] == NULL)
        return 0;
    memset(&m, 0, sizeof m);
    if (h->variant[NVML_FN_MEMORY] == 0)
        m.v2.version = MEMORY_V2_VERSION;
    if (!ok(d, ((fn_dev_ptr)h->fn[NVML_FN_MEMORY])(d->handle, &m)))
        return 0;
    if (h->variant[NVML_FN_MEMORY] == 0) {
        t = m.v2.total;
        u = m.v2.used;
    } else {
        t = m.v1.total;
        u = m.v1.used;
    }
    *total = (double)t / 1048576.0;
    *used = (double)u / 1048576.0;
    return 1;
}

/* Reads one unsigned-int reading through fn; NAN when refused. */
static double read_uint(struct nvml *h, struct dev *d, enum nvml_fn fn)
{
    unsigned int v = 0;

    if (h->fn[fn] == NULL || d->st.lost)
        return NAN;
    if (!ok(d, ((fn_dev_uint)h->fn[fn])(d->handle, &v)))
        return NAN;
    return (double)v;
}

/* Reads one volatile ECC total; -1 when refused. */
static int64_t read_ecc(struct nvml *h, struct dev *d, int type)
{
    unsigned long long v = 0;

    if (h->fn[NVML_FN_ECC] == NULL || d->st.lost)
        return -1;
    if (!ok(d, ((fn_dev_ecc)h->fn[NVML_FN_ECC])(d->handle, type, ECC_VOLATILE, &v)))
        return -1;
    return v > (unsigned long long)INT64_MAX ? -1 : (int64_t)v;
}

/* Reads the row-remapping state of a physical GPU into g; every field
 * stays absent when the symbol is missing or NVML refuses (MIG devices,
 * GPUs before Ampere: NOT_SUPPORTED). */
static void read_remap(struct nvml *h, struct dev *d, struct gi_gpu_obs *g)
{
    unsigned int corr = 0, unc = 0, pending = 0, failed = 0;

    g->remap_corrected = g->remap_uncorrectable = -1;
    g->remap_pending = g->remap_failure = -1;
    if (h->fn[NVML_FN_REMAP] == NULL || d->st.lost || d->st.mig)
        return;
    if (!ok(d, ((fn_dev_remap)h->fn[NVML_FN_REMAP])(d->handle, &corr, &unc, &pending, &failed)))
        return;
    g->remap_corrected = corr;
    g->remap_uncorrectable = unc;
    g->remap_pending = pending != 0;
    g->remap_failure = failed != 0;
}

/* Refreshes the readings of g from d. Every reading starts absent; total
 * memory is only overwritten when NVML answers (it is identity). A
 * reading NVML answers out of range (0xFFFFFFFF for a broken sensor,
 * used memory above the total) is left absent, and counted as a warning
 * in set when set is given. */
static void read_telemetry(struct nvml *h, struct dev *d, struct gi_gpu_obs *g,
                           struct gi_obs_set *set)
{
    char who[48];

    double total, used, v;

    g->util_gpu_pct = g->util_mem_pct = NAN;
    g->memory_used_mib = g->temp_c = g->power_w = g->power_limit_w = NAN;
    g->ecc_corrected = g->ecc_uncorrected = -1;
    g->ts_ms = now_ms();
    if (d->st.lost)
        return;
    if (read_memory(h, d, &total, &used)) {
        g->memory_total_mib = total;
        g->memory_used_mib = used;
    }
    if (h->fn[NVML_FN_UTIL] != NULL && !d->st.lost) {
        struct utilization u = {0, 0};
        if (ok(d, ((fn_dev_ptr)h->fn[NVML_FN_UTIL])(d->handle, &u))) {
            g->util_gpu_pct = u.gpu;
            g->util_mem_pct = u.memory;
        }
    }
    if (h->fn[NVML_FN_TEMP] != NULL && !d->st.lost) {
        unsigned int t = 0;
        if (ok(d, ((fn_dev_temp)h->fn[NVML_FN_TEMP])(d->handle, TEMPERATURE_GPU, &t)))
            g->temp_c = t;
    }
    v = read_uint(h, d, NVML_FN_POWER);
    g->power_w = v / 1000.0;
    v = read_uint(h, d, NVML_FN_POWER_LIMIT);
    g->power_limit_w = v / 1000.0;
    g->ecc_corrected = read_ecc(h, d, ECC_CORRECTED);
    g->ecc_uncorrected = read_ecc(h, d, ECC_UNCORRECTED);
    read_remap(h, d, g);
    if (d->st.lost) {
        /* Lost half-way: what was read before may be stale already. */
        g->util_gpu_pct = g->util_mem_pct = NAN;
        g->memory_used_mib = g->temp_c = g->power_w = g->power_limit_w = NAN;
        g->ecc_corrected = g->ecc_uncorrected = -1;
        g->remap_corrected = g->remap_uncorrectable = -1;
        g->remap_pending = g->remap_failure = -1;
    }
    snprintf(who, sizeof who, "NVML %s %d", d->st.mig ? "MIG device of GPU" : "GPU", d->st.index);
    gi_gpu_obs_sanitize(g, set, who);
}

/* Reads one NVML string function into dst when it answers. */
static void read_string(struct nvml *h, struct dev *d, enum nvml_fn fn, char *dst, size_t dstlen,
                        unsigned int cap)
{
    char buf[NAME_BUF + UUID_BUF]; /* larger than any cap asked for */

    if (h->fn[fn] == NULL || d->st.lost || cap > sizeof buf)
        return;
    memset(buf, 0, sizeof buf);
    if (ok(d, ((fn_dev_str)h->fn[fn])(d->handle, buf, cap)))
        take_string(dst, dstlen, buf, cap);
}

/* Fills identity and readings of g from d, shared by GPUs and MIG
 * instances. */
static void read_identity(struct nvml *h, struct dev *d, struct gi_gpu_obs *g)
{
    read_string(h, d, NVML_FN_UUID, g->uuid, sizeof g->uuid, UUID_BUF);
    gi_strlcpy(d->st.uuid, g->uuid, sizeof d->st.uuid);
    read_string(h, d, NVML_FN_NAME, g->name, sizeof g->name, NAME_BUF);
    g->vendor = GI_VENDOR_NVIDIA;
    gi_strlcpy(g->driver, h->driver, sizeof g->driver);
}

/* Appends the MIG instances of physical GPU at position pi as children of
 * its observation (copied identity in pg). Returns a gi_status. */
static int discover_mig(struct nvml *h, size_t pi, const struct gi_gpu_obs *pg,
                        struct gi_obs_set *set)
{
    unsigned int max = 0;

    if (h->fn[NVML_FN_MIG_COUNT] == NULL || h->fn[NVML_FN_MIG_HANDLE] == NULL)
        return GI_OK;
    if (!ok(&h->devs[pi], ((fn_dev_uint)h->fn[NVML_FN_MIG_COUNT])(h->devs[pi].handle, &max)))
        return GI_OK;
    if (max > NVML_MAX_MIG_PER_GPU)
        max = NVML_MAX_MIG_PER_GPU;
    for (unsigned int i = 0; i < max && !h->devs[pi].st.lost; i++) {
        nvml_device mh = NULL;
        int rc = ((fn_dev_mig_handle)h->fn[NVML_FN_MIG_HANDLE])(h->devs[pi].handle, i, &mh);
        if (!ok(&h->devs[pi], rc) || mh == NULL)
            continue;               /* NOT_FOUND: an empty slot */
        struct dev *d = add_dev(h); /* may move h->devs */
        if (d == NULL)
            return GI_INTERNAL;
        d->handle = mh;
        d->parent = (int)pi;
        d->st.index = h->devs[pi].st.index;
        d->st.mig = 1;
        struct gi_gpu_obs *g = gi_obs_add_gpu(set);
        if (g == NULL)
            return set->ngpus >= GI_OBS_MAX ? GI_TOO_LARGE : GI_INTERNAL;
        read_identity(h, d, g);
        g->index = d->st.index;
        gi_strlcpy(g->parent_uuid, pg->uuid, sizeof g->parent_uuid);
        if (h->fn[NVML_FN_GI_ID] != NULL) {
            unsigned int id = 0;
            if (ok(d, ((fn_dev_uint)h->fn[NVML_FN_GI_ID])(mh, &id)) && id <= INT32_MAX) {
                d->gi_id = (int)id;
                g->mig_instance = (int)id;
            }
        }
        /* The profile ends a MIG device's name: "NVIDIA A100-SXM4-40GB
         * MIG 1g.5gb". */
        const char *m = strstr(g->name, " MIG ");
        if (m != NULL)
            gi_strlcpy(g->mig_profile, m + 5, sizeof g->mig_profile);
        gi_strlcpy(d->bus_id, h->devs[pi].bus_id, sizeof d->bus_id);
        read_telemetry(h, d, g, set);
    }
    return GI_OK;
}

int nvml_discover(struct nvml *h, struct gi_obs_set *set)
{
    unsigned int count = 0;
    int rc;

    h->ndevs = 0;
    rc = ((fn_uint_out)h->fn[NVML_FN_COUNT])(&count);
    if (rc != 0)
        return GI_OK; /* no GPU can be listed: an empty inventory */
    if (count > NVML_MAX_GPUS)
        count = NVML_MAX_GPUS;
    for (unsigned int i = 0; i < count; i++) {
        struct dev *d = add_dev(h);
        if (d == NULL)
            return GI_INTERNAL;
        size_t pi = h->ndevs - 1;
        d->st.index = (int)i;
        rc = ((fn_handle)h->fn[NVML_FN_HANDLE])(i, &d->handle);
        if (rc != 0 && rc != RC_GPU_IS_LOST) {
            d->st.handle_error = rc;
            d->handle = NULL;
            continue;
        }
        if (rc == RC_GPU_IS_LOST) {
            d->st.lost = 1;
            d->st.handle_error = rc;
            d->handle = NULL;
        }
        struct gi_gpu_obs *g = gi_obs_add_gpu(set);
        if (g == NULL)
            return set->ngpus >= GI_OBS_MAX ? GI_TOO_LARGE : GI_INTERNAL;
        g->index = (int)i;
        g->vendor = GI_VENDOR_NVIDIA;
        gi_strlcpy(g->driver, h->driver, sizeof g->driver);
        if (d->handle == NULL) {
            g->ts_ms = now_ms();
            continue;
        }
        read_identity(h, d, g);
        read_string(h, d, NVML_FN_SERIAL, g->serial, sizeof g->serial, SERIAL_BUF);
        read_pci(h, d, g);
        if (h->fn[NVML_FN_MIG_MODE] != NULL && !d->st.lost) {
            unsigned int cur = 0, pending = 0;
            if (ok(d, ((fn_dev_mig_mode)h->fn[NVML_FN_MIG_MODE])(d->handle, &cur, &pending)))
                g->mig_mode = cur == MIG_ENABLED ? 1 : 0;
        }
        read_telemetry(h, d, g, set);
        if (g->mig_mode == 1 && !d->st.lost) {
            struct gi_gpu_obs parent = *g; /* g may move as the set grows */
            rc = discover_mig(h, pi, &parent, set);
            if (rc != GI_OK)
                return rc;
        }
    }
    return GI_OK;
}

int nvml_sample(struct nvml *h, struct gi_obs_set *set)
{
    for (size_t i = 0; i < h->ndevs; i++) {
        struct dev *d = &h->devs[i];
        if (d->handle == NULL || d->st.uuid[0] == '\0')
            continue;
        for (size_t k = 0; k < set->ngpus; k++) {
            if (strcmp(set->gpus[k].uuid, d->st.uuid) == 0) {
                /* Reported at discovery already: not counted again. */
                read_telemetry(h, d, &set->gpus[k], NULL);
                break;
            }
        }
    }
    return GI_OK;
}

/* ---- Processes ---- */

/* The uuid to charge a process to: the MIG instance of d (a physical GPU
 * at position pi) with GPU instance gi, else d itself. */
static const char *proc_uuid(const struct nvml *h, size_t pi, unsigned int gi)
{
    if (gi != NO_INSTANCE && h->devs[pi].parent < 0)
        for (size_t k = pi + 1; k < h->ndevs && h->devs[k].parent == (int)pi; k++)
            if (h->devs[k].gi_id >= 0 && (unsigned int)h->devs[k].gi_id == gi)
                return h->devs[k].st.uuid;
    return h->devs[pi].st.uuid;
}

/* Lists the processes of device at position di into set. Returns a
 * gi_status; NVML refusals are recorded in the device's status. */
static int list_procs(struct nvml *h, size_t di, struct gi_obs_set *set)
{
    struct dev *d = &h->devs[di];
    unsigned char *buf = NULL;
    unsigned int cap = 64, n = 0;
    int rc = 0, st = GI_OK;
    size_t stride =
        h->variant[NVML_FN_PROCS] == 2 ? sizeof(struct proc_info_v1) : sizeof(struct proc_info_v2);

    d->st.procs_error = 0;
    for (int attempt = 0; attempt < 4; attempt++) {
        unsigned char *nb = realloc(buf, (size_t)cap * PROC_SLOT);
        if (nb == NULL) {
            st = GI_INTERNAL;
            goto cleanup;
        }
        buf = nb;
        memset(buf, 0, (size_t)cap * PROC_SLOT);
        n = cap;
        rc = ((fn_dev_procs)h->fn[NVML_FN_PROCS])(d->handle, &n, buf);
        if (rc != RC_INSUFFICIENT_SIZE || n <= cap || n > NVML_MAX_PROCS_PER_DEV)
            break;
        cap = n + 16; /* processes may start between the two calls */
    }
    if (!ok(d, rc)) {
        d->st.procs_error = rc;
        goto cleanup;
    }
    if (n > cap)
        n = cap;
    for (unsigned int i = 0; i < n; i++) {
        struct proc_info_v2 r = {0, 0, NO_INSTANCE, NO_INSTANCE};
        if (stride == sizeof(struct proc_info_v1)) {
            struct proc_info_v1 r1;
            memcpy(&r1, buf + (size_t)i * stride, sizeof r1);
            r.pid = r1.pid;
            r.used = r1.used;
        } else {
            memcpy(&r, buf + (size_t)i * stride, sizeof r);
        }
        struct gi_proc_obs *p = gi_obs_add_proc(set);
        if (p == NULL) {
            st = set->nprocs >= GI_OBS_MAX ? GI_TOO_LARGE : GI_INTERNAL;
            goto cleanup;
        }
        /* pid 0: NVML could not tell (another PID namespace): anonymous. */
        p->pid = r.pid == 0 ? -1 : (int64_t)r.pid;
        if (r.used != VALUE_NOT_AVAILABLE && (double)r.used / 1048576.0 <= GI_MEM_MIB_MAX)
            p->used_mib = (double)r.used / 1048576.0;
        gi_strlcpy(p->gpu_uuid, d->parent < 0 ? proc_uuid(h, di, r.gpu_instance_id) : d->st.uuid,
                   sizeof p->gpu_uuid);
        gi_strlcpy(p->pci_bus_id, d->bus_id, sizeof p->pci_bus_id);
        p->ts_ms = now_ms();
    }

cleanup:
    free(buf);
    return st;
}

int nvml_processes(struct nvml *h, struct gi_obs_set *set)
{
    if (h->fn[NVML_FN_PROCS] == NULL)
        return GI_OK;
    for (size_t i = 0; i < h->ndevs; i++) {
        struct dev *d = &h->devs[i];
        if (d->parent >= 0 || d->handle == NULL || d->st.lost)
            continue;
        int rc = list_procs(h, i, set), listed = 0;
        if (rc != GI_OK)
            return rc;
        if (d->st.procs_error == 0 || d->st.lost)
            continue;
        /* Refused on the whole GPU: ask each MIG instance. */
        for (size_t k = i + 1; k < h->ndevs && h->devs[k].parent == (int)i; k++) {
            if (h->devs[k].st.lost)
                continue;
            rc = list_procs(h, k, set);
            if (rc != GI_OK)
                return rc;
            listed += h->devs[k].st.procs_error == 0;
        }
        if (listed == 0)
            gi_obs_warn(set, "NVML GPU %d: processes cannot be listed: %s", d->st.index,
                        rc_text(h, d->st.procs_error));
    }
    return GI_OK;
}

/* ---- Introspection ---- */

size_t nvml_device_count(const struct nvml *h) { return h->ndevs; }

int nvml_device_status(const struct nvml *h, size_t i, struct nvml_dev_status *out)
{
    if (i >= h->ndevs)
        return GI_NOT_FOUND;
    *out = h->devs[i].st;
    return GI_OK;
}

const char *nvml_symbol(const struct nvml *h, enum nvml_fn fn)
{
    if ((int)fn < 0 || fn >= NVML_FN__COUNT || h->variant[fn] < 0)
        return NULL;
    return fn_names[fn][h->variant[fn]];
}

const char *nvml_driver_version(const struct nvml *h) { return h->driver; }
