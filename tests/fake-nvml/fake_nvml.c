/* A stand-in for libnvidia-ml.so.1: the NVML functions gpuinv calls,
 * answering from a JSON description named by env FAKE_NVML_CONFIG (see
 * README.md). Built twice: the full library, and with FAKE_NVML_LEGACY
 * defined a library of an old driver, without the _v2/_v3 names and
 * without MIG functions. Not thread-safe: gpuinv calls it from one thread. */
#define _GNU_SOURCE
#include <jansson.h>
#include <math.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>

#define EXPORT __attribute__((visibility("default")))

enum {
    RC_SUCCESS = 0,
    RC_UNINITIALIZED = 1,
    RC_INVALID_ARGUMENT = 2,
    RC_NOT_SUPPORTED = 3,
    RC_NOT_FOUND = 6,
    RC_INSUFFICIENT_SIZE = 7,
    RC_DRIVER_NOT_LOADED = 9,
    RC_GPU_IS_LOST = 15,
    RC_ARGUMENT_VERSION_MISMATCH = 25,
    RC_UNKNOWN = 999,
};

#define MAX_GPUS 64
#define MAX_MIG 16
#define MIB 1048576.0
#define NO_INSTANCE 0xFFFFFFFFu

/* Readings that can change from call to call; each keeps its own cursor. */
enum field {
    F_MEM_TOTAL,
    F_MEM_USED,
    F_MEM_RESERVED,
    F_UTIL_GPU,
    F_UTIL_MEM,
    F_TEMP,
    F_POWER,
    F_POWER_LIMIT,
    F_ECC_CORR,
    F_ECC_UNCORR,
    F_REMAP_CORR,
    F_REMAP_UNC,
    F_REMAP_PENDING,
    F_REMAP_FAILURE,
    F__COUNT
};

static const char *const field_keys[F__COUNT] = {
    [F_MEM_TOTAL] = "memory_total_mib",
    [F_MEM_USED] = "memory_used_mib",
    [F_MEM_RESERVED] = "memory_reserved_mib",
    [F_UTIL_GPU] = "util_gpu",
    [F_UTIL_MEM] = "util_mem",
    [F_TEMP] = "temp_c",
    [F_POWER] = "power_w",
    [F_POWER_LIMIT] = "power_limit_w",
    [F_ECC_CORR] = "ecc_corrected",
    [F_ECC_UNCORR] = "ecc_uncorrected",
    [F_REMAP_CORR] = "remap_corrected",
    [F_REMAP_UNC] = "remap_uncorrectable",
    [F_REMAP_PENDING] = "remap_pending",
    [F_REMAP_FAILURE] = "remap_failure",
};

struct fdev {
    json_t *obj; /* borrowed from the loaded config */
    struct fdev *parent;
    struct fdev *mig[MAX_MIG]; /* by slot */
    size_t cursor[F__COUNT];
    long long calls; /* device calls answered, for "lost_after_calls" */
};

static struct {
    int refs;
    json_t *root;
    struct fdev gpus[MAX_GPUS];
    struct fdev migs[MAX_GPUS][MAX_MIG];
    unsigned int ngpus;
} S;

/* ---- Configuration ---- */

/* Maps "NOT_SUPPORTED" and friends (or a number) to a return code. */
static int code_of(const json_t *v)
{
    static const struct {
        const char *name;
        int rc;
    } names[] = {
        {"SUCCESS", 0},
        {"UNINITIALIZED", 1},
        {"INVALID_ARGUMENT", 2},
        {"NOT_SUPPORTED", 3},
        {"NO_PERMISSION", 4},
        {"ALREADY_INITIALIZED", 5},
        {"NOT_FOUND", 6},
        {"INSUFFICIENT_SIZE", 7},
        {"INSUFFICIENT_POWER", 8},
        {"DRIVER_NOT_LOADED", 9},
        {"TIMEOUT", 10},
        {"IRQ_ISSUE", 11},
        {"LIBRARY_NOT_FOUND", 12},
        {"FUNCTION_NOT_FOUND", 13},
        {"CORRUPTED_INFOROM", 14},
        {"GPU_IS_LOST", 15},
        {"UNKNOWN", 999},
    };

    if (json_is_integer(v))
        return (int)json_integer_value(v);
    if (json_is_string(v))
        for (size_t i = 0; i < sizeof names / sizeof names[0]; i++)
            if (strcmp(json_string_value(v), names[i].name) == 0)
                return names[i].rc;
    return RC_UNKNOWN;
}

/* The error configured for function fn (named without its version
 * suffix) on device d (NULL for system functions), 0 when none. */
static int configured(const struct fdev *d, const char *fn)
{
    const json_t *e = NULL;

    if (d != NULL)
        e = json_object_get(json_object_get(d->obj, "errors"), fn);
    if (e == NULL)
        e = json_object_get(json_object_get(S.root, "errors"), fn);
    return e != NULL ? code_of(e) : 0;
}

/* The error function fn answers on d: GPU_IS_LOST for a device marked
 * "lost", or past its "lost_after_calls" (or in such a GPU), else the
 * configured one, else 0. Counts the call. */
static int forced(struct fdev *d, const char *fn)
{
    for (struct fdev *p = d; p != NULL; p = p->parent) {
        const json_t *after = json_object_get(p->obj, "lost_after_calls");
        if (json_is_true(json_object_get(p->obj, "lost")))
            return RC_GPU_IS_LOST;
        if (json_is_integer(after) && p->calls >= json_integer_value(after))
            return RC_GPU_IS_LOST;
    }
    if (d != NULL)
        d->calls++;
    return configured(d, fn);
}

/* The current value of reading f of d: a number, the next item of a list
 * (cycled per call) or a sine wave {"min","max","period_s"} over wall
 * time. False when the reading is not configured. */
static int value(struct fdev *d, enum field f, double *out)
{
    const json_t *v = json_object_get(d->obj, field_keys[f]);

    if (json_is_number(v)) {
        *out = json_number_value(v);
        return 1;
    }
    if (json_is_array(v) && json_array_size(v) > 0) {
        size_t n = json_array_size(v);
        *out = json_number_value(json_array_get(v, d->cursor[f]++ % n));
        return 1;
    }
    if (json_is_object(v)) {
        double lo = json_number_value(json_object_get(v, "min"));
        double hi = json_number_value(json_object_get(v, "max"));
        double period = json_number_value(json_object_get(v, "period_s"));
        struct timespec ts;
        clock_gettime(CLOCK_REALTIME, &ts);
        double t = (double)ts.tv_sec + ts.tv_nsec / 1e9;
        if (period <= 0)
            period = 60;
        *out = lo + (hi - lo) * (0.5 + 0.5 * sin(2 * M_PI * fmod(t, period) / period));
        return 1;
    }
    return 0;
}

/* Copies the string member key of d into buf (capacity len). */
static int string(const struct fdev *d, const char *key, char *buf, unsigned int len)
{
    const char *s = json_string_value(json_object_get(d->obj, key));

    if (s == NULL)
        return RC_NOT_SUPPORTED;
    if (buf == NULL)
        return RC_INVALID_ARGUMENT;
    if (strlen(s) + 1 > len)
        return RC_INSUFFICIENT_SIZE;
    memcpy(buf, s, strlen(s) + 1);
    return RC_SUCCESS;
}

static void unload(void)
{
    json_decref(S.root);
    memset(&S, 0, sizeof S);
}

/* Reads FAKE_NVML_CONFIG into S; returns an NVML code. */
static int load(void)
{
    const char *path = getenv("FAKE_NVML_CONFIG");
    json_error_t jerr;
    const json_t *gpus;

    if (path == NULL || path[0] == '\0')
        return RC_DRIVER_NOT_LOADED;
    S.root = json_load_file(path, 0, &jerr);
    if (S.root == NULL || !json_is_object(S.root)) {
        fprintf(stderr, "fake-nvml: %s:%d: %s\n", path, jerr.line, jerr.text);
        unload();
        return RC_UNKNOWN;
    }
    gpus = json_object_get(S.root, "gpus");
    for (size_t i = 0; i < json_array_size(gpus) && i < MAX_GPUS; i++) {
        struct fdev *g = &S.gpus[i];
        const json_t *migs = json_object_get(json_array_get(gpus, i), "mig");
        g->obj = json_array_get(gpus, i);
        for (size_t k = 0; k < json_array_size(migs) && k < MAX_MIG; k++) {
            json_t *m = json_array_get(migs, k);
            json_int_t slot = json_integer_value(json_object_get(m, "slot"));
            if (json_object_get(m, "slot") == NULL)
                slot = (json_int_t)k;
            if (slot < 0 || slot >= MAX_MIG)
                continue;
            S.migs[i][k].obj = m;
            S.migs[i][k].parent = g;
            g->mig[slot] = &S.migs[i][k];
        }
        S.ngpus++;
    }
    return RC_SUCCESS;
}

/* ---- Library state ---- */

static int init(void)
{
    int rc;

    if (S.refs > 0) {
        S.refs++;
        return RC_SUCCESS;
    }
    rc = load();
    if (rc == RC_SUCCESS)
        rc = forced(NULL, "nvmlInit");
    if (rc != RC_SUCCESS) {
        unload();
        return rc;
    }
    S.refs = 1;
    return RC_SUCCESS;
}

EXPORT int nvmlInit(void) { return init(); }

EXPORT int nvmlShutdown(void)
{
    if (S.refs == 0)
        return RC_UNINITIALIZED;
    if (--S.refs == 0)
        unload();
    return RC_SUCCESS;
}

EXPORT const char *nvmlErrorString(int rc)
{
    switch (rc) {
    case 0:
        return "Success";
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
    case 15:
        return "GPU is lost";
    case 25:
        return "Argument version mismatch";
    default:
        return "Unknown Error";
    }
}

EXPORT int nvmlSystemGetDriverVersion(char *buf, unsigned int len)
{
    const char *v;
    int rc;

    if (S.refs == 0)
        return RC_UNINITIALIZED;
    if ((rc = forced(NULL, "nvmlSystemGetDriverVersion")) != 0)
        return rc;
    v = json_string_value(json_object_get(S.root, "driver"));
    if (v == NULL)
        return RC_NOT_SUPPORTED;
    if (buf == NULL || strlen(v) + 1 > len)
        return RC_INSUFFICIENT_SIZE;
    memcpy(buf, v, strlen(v) + 1);
    return RC_SUCCESS;
}

static int count(unsigned int *n)
{
    int rc;

    if (S.refs == 0)
        return RC_UNINITIALIZED;
    if ((rc = forced(NULL, "nvmlDeviceGetCount")) != 0)
        return rc;
    if (n == NULL)
        return RC_INVALID_ARGUMENT;
    *n = S.ngpus;
    return RC_SUCCESS;
}

EXPORT int nvmlDeviceGetCount(unsigned int *n) { return count(n); }

static int handle(unsigned int i, struct fdev **out)
{
    int rc;

    if (S.refs == 0)
        return RC_UNINITIALIZED;
    if (i >= S.ngpus || out == NULL)
        return RC_INVALID_ARGUMENT;
    /* A lost GPU still has a handle; every other call then fails. */
    if ((rc = configured(&S.gpus[i], "nvmlDeviceGetHandleByIndex")) != 0)
        return rc;
    *out = &S.gpus[i];
    return RC_SUCCESS;
}

EXPORT int nvmlDeviceGetHandleByIndex(unsigned int i, struct fdev **out) { return handle(i, out); }

/* Common entry checks of a device function; 0 to go on. */
static int enter(struct fdev *d, const char *fn)
{
    if (S.refs == 0)
        return RC_UNINITIALIZED;
    if (d == NULL)
        return RC_INVALID_ARGUMENT;
    return forced(d, fn);
}

/* ---- Identity ---- */

EXPORT int nvmlDeviceGetName(struct fdev *d, char *buf, unsigned int len)
{
    int rc = enter(d, "nvmlDeviceGetName");
    return rc ? rc : string(d, "name", buf, len);
}

EXPORT int nvmlDeviceGetUUID(struct fdev *d, char *buf, unsigned int len)
{
    int rc = enter(d, "nvmlDeviceGetUUID");
    return rc ? rc : string(d, "uuid", buf, len);
}

EXPORT int nvmlDeviceGetSerial(struct fdev *d, char *buf, unsigned int len)
{
    int rc = enter(d, "nvmlDeviceGetSerial");
    return rc ? rc : string(d, "serial", buf, len);
}

struct pci_v1 {
    char bus_id[16];
    unsigned int domain, bus, device, pci_device_id, pci_subsystem_id;
    unsigned int reserved[4];
};

struct pci_v3 {
    char bus_id_legacy[16];
    unsigned int domain, bus, device, pci_device_id, pci_subsystem_id;
    char bus_id[32];
};

/* Parses "dddddddd:bb:dd.f" (config "bus_id") into its numbers. */
static int bus_numbers(const char *s, unsigned int *dom, unsigned int *bus, unsigned int *dev)
{
    char *end;

    *dom = (unsigned int)strtoul(s, &end, 16);
    if (*end != ':')
        return 0;
    *bus = (unsigned int)strtoul(end + 1, &end, 16);
    if (*end != ':')
        return 0;
    *dev = (unsigned int)strtoul(end + 1, &end, 16);
    return *end == '.';
}

/* Fills a PCI info of either layout from the config. */
static int pci(struct fdev *d, void *out, int v3)
{
    const char *id = json_string_value(json_object_get(d->obj, "bus_id"));
    unsigned int dom = 0, bus = 0, dev = 0;
    int rc = enter(d, "nvmlDeviceGetPciInfo");

    if (rc)
        return rc;
    if (out == NULL)
        return RC_INVALID_ARGUMENT;
    if (id == NULL || !bus_numbers(id, &dom, &bus, &dev))
        return RC_NOT_SUPPORTED;
    if (v3) {
        struct pci_v3 p;
        memset(&p, 0, sizeof p);
        snprintf(p.bus_id, sizeof p.bus_id, "%s", id);
        snprintf(p.bus_id_legacy, sizeof p.bus_id_legacy, "%04x:%02x:%02x.0", dom & 0xffff, bus,
                 dev);
        p.domain = dom;
        p.bus = bus;
        p.device = dev;
        p.pci_device_id = 0x233010de;
        memcpy(out, &p, sizeof p);
    } else {
        struct pci_v1 p;
        memset(&p, 0, sizeof p);
        snprintf(p.bus_id, sizeof p.bus_id, "%04x:%02x:%02x.0", dom & 0xffff, bus, dev);
        p.domain = dom;
        p.bus = bus;
        p.device = dev;
        p.pci_device_id = 0x233010de;
        memcpy(out, &p, sizeof p);
    }
    return RC_SUCCESS;
}

EXPORT int nvmlDeviceGetPciInfo(struct fdev *d, void *out) { return pci(d, out, 0); }

/* ---- Readings ---- */

struct memory_v1 {
    unsigned long long total, free, used;
};

struct memory_v2 {
    unsigned int version;
    unsigned long long total, reserved, free, used;
};

/* Reads the three memory figures in bytes. */
static int memory(struct fdev *d, unsigned long long *total, unsigned long long *used,
                  unsigned long long *reserved)
{
    double t, u, r = 0;
    int rc = enter(d, "nvmlDeviceGetMemoryInfo");

    if (rc)
        return rc;
    if (!value(d, F_MEM_TOTAL, &t))
        return RC_NOT_SUPPORTED;
    if (!value(d, F_MEM_USED, &u))
        u = 0;
    value(d, F_MEM_RESERVED, &r);
    *total = (unsigned long long)llround(t * MIB);
    *used = (unsigned long long)llround(u * MIB);
    *reserved = (unsigned long long)llround(r * MIB);
    return RC_SUCCESS;
}

EXPORT int nvmlDeviceGetMemoryInfo(struct fdev *d, struct memory_v1 *m)
{
    unsigned long long t, u, r;
    int rc = memory(d, &t, &u, &r);

    if (rc)
        return rc;
    if (m == NULL)
        return RC_INVALID_ARGUMENT;
    m->total = t;
    m->used = u;
    m->free = t - u - r;
    return RC_SUCCESS;
}

struct utilization {
    unsigned int gpu, memory;
};

EXPORT int nvmlDeviceGetUtilizationRates(struct fdev *d, struct utilization *u)
{
    double g, m;
    int rc = enter(d, "nvmlDeviceGetUtilizationRates");

    if (rc)
        return rc;
    if (u == NULL)
        return RC_INVALID_ARGUMENT;
    if (!value(d, F_UTIL_GPU, &g))
        return RC_NOT_SUPPORTED;
    if (!value(d, F_UTIL_MEM, &m))
        m = 0;
    u->gpu = (unsigned int)lround(g);
    u->memory = (unsigned int)lround(m);
    return RC_SUCCESS;
}

/* Answers an unsigned-int reading of field f, scaled by mul. */
static int reading(struct fdev *d, const char *fn, enum field f, double mul, unsigned int *out)
{
    double v;
    int rc = enter(d, fn);

    if (rc)
        return rc;
    if (out == NULL)
        return RC_INVALID_ARGUMENT;
    if (!value(d, f, &v))
        return RC_NOT_SUPPORTED;
    *out = (unsigned int)lround(v * mul);
    return RC_SUCCESS;
}

EXPORT int nvmlDeviceGetTemperature(struct fdev *d, int sensor, unsigned int *t)
{
    if (sensor != 0)
        return RC_INVALID_ARGUMENT;
    return reading(d, "nvmlDeviceGetTemperature", F_TEMP, 1, t);
}

EXPORT int nvmlDeviceGetPowerUsage(struct fdev *d, unsigned int *mw)
{
    return reading(d, "nvmlDeviceGetPowerUsage", F_POWER, 1000, mw);
}

EXPORT int nvmlDeviceGetEnforcedPowerLimit(struct fdev *d, unsigned int *mw)
{
    return reading(d, "nvmlDeviceGetEnforcedPowerLimit", F_POWER_LIMIT, 1000, mw);
}

EXPORT int nvmlDeviceGetTotalEccErrors(struct fdev *d, int type, int counter, unsigned long long *n)
{
    double v;
    int rc = enter(d, "nvmlDeviceGetTotalEccErrors");

    if (rc)
        return rc;
    if (n == NULL || type < 0 || type > 1 || counter < 0 || counter > 1)
        return RC_INVALID_ARGUMENT;
    if (!value(d, type == 0 ? F_ECC_CORR : F_ECC_UNCORR, &v))
        return RC_NOT_SUPPORTED;
    *n = (unsigned long long)llround(v);
    return RC_SUCCESS;
}

/* ---- Processes ---- */

struct proc_v1 {
    unsigned int pid;
    unsigned long long used;
};

struct proc_v2 {
    unsigned int pid;
    unsigned long long used;
    unsigned int gpu_instance_id, compute_instance_id;
};

/* Lists the configured processes of d in records of the old (v1) or the
 * current layout, with NVML's size negotiation. */
static int procs(struct fdev *d, unsigned int *n, void *out, int v1)
{
    const json_t *list;
    size_t have;
    int rc = enter(d, "nvmlDeviceGetComputeRunningProcesses");

    if (rc)
        return rc;
    if (n == NULL)
        return RC_INVALID_ARGUMENT;
    list = json_object_get(d->obj, "processes");
    have = json_array_size(list);
    if (*n < have || (out == NULL && have > 0)) {
        *n = (unsigned int)have;
        return RC_INSUFFICIENT_SIZE;
    }
    for (size_t i = 0; i < have; i++) {
        const json_t *p = json_array_get(list, i);
        const json_t *used = json_object_get(p, "used_mib");
        const json_t *gi = json_object_get(p, "gi");
        const json_t *ci = json_object_get(p, "ci");
        struct proc_v2 r;
        memset(&r, 0, sizeof r);
        r.pid = (unsigned int)json_integer_value(json_object_get(p, "pid"));
        r.used = json_is_number(used) ? (unsigned long long)llround(json_number_value(used) * MIB)
                                      : 0xFFFFFFFFFFFFFFFFull;
        r.gpu_instance_id = gi ? (unsigned int)json_integer_value(gi) : NO_INSTANCE;
        r.compute_instance_id = ci ? (unsigned int)json_integer_value(ci) : NO_INSTANCE;
        if (v1) {
            struct proc_v1 r1 = {r.pid, r.used};
            memcpy((char *)out + i * sizeof r1, &r1, sizeof r1);
        } else {
            memcpy((char *)out + i * sizeof r, &r, sizeof r);
        }
    }
    *n = (unsigned int)have;
    return RC_SUCCESS;
}

EXPORT int nvmlDeviceGetComputeRunningProcesses(struct fdev *d, unsigned int *n, void *out)
{
    return procs(d, n, out, 1);
}

/* ---- Functions of newer drivers ---- */
#ifndef FAKE_NVML_LEGACY

/* Row remapping (Ampere and later): NOT_SUPPORTED unless the device
 * configures all four readings. */
EXPORT int nvmlDeviceGetRemappedRows(struct fdev *d, unsigned int *corr, unsigned int *unc,
                                     unsigned int *pending, unsigned int *failure)
{
    double c, u, p, f;
    int rc = enter(d, "nvmlDeviceGetRemappedRows");

    if (rc)
        return rc;
    if (corr == NULL || unc == NULL || pending == NULL || failure == NULL)
        return RC_INVALID_ARGUMENT;
    if (d->parent != NULL || !value(d, F_REMAP_CORR, &c) || !value(d, F_REMAP_UNC, &u) ||
        !value(d, F_REMAP_PENDING, &p) || !value(d, F_REMAP_FAILURE, &f))
        return RC_NOT_SUPPORTED;
    *corr = (unsigned int)lround(c);
    *unc = (unsigned int)lround(u);
    *pending = p != 0;
    *failure = f != 0;
    return RC_SUCCESS;
}

EXPORT int nvmlInit_v2(void) { return init(); }

EXPORT int nvmlDeviceGetCount_v2(unsigned int *n) { return count(n); }

EXPORT int nvmlDeviceGetHandleByIndex_v2(unsigned int i, struct fdev **out)
{
    return handle(i, out);
}

EXPORT int nvmlDeviceGetPciInfo_v2(struct fdev *d, void *out) { return pci(d, out, 1); }

EXPORT int nvmlDeviceGetPciInfo_v3(struct fdev *d, void *out) { return pci(d, out, 1); }

EXPORT int nvmlDeviceGetMemoryInfo_v2(struct fdev *d, struct memory_v2 *m)
{
    unsigned long long t, u, r;
    int rc;

    if (m != NULL && m->version != (unsigned int)(sizeof *m | (2u << 24)))
        return RC_ARGUMENT_VERSION_MISMATCH;
    rc = memory(d, &t, &u, &r);
    if (rc)
        return rc;
    if (m == NULL)
        return RC_INVALID_ARGUMENT;
    m->total = t;
    m->used = u;
    m->reserved = r;
    m->free = t - u - r;
    return RC_SUCCESS;
}

EXPORT int nvmlDeviceGetComputeRunningProcesses_v2(struct fdev *d, unsigned int *n, void *out)
{
    return procs(d, n, out, 0);
}

EXPORT int nvmlDeviceGetComputeRunningProcesses_v3(struct fdev *d, unsigned int *n, void *out)
{
    return procs(d, n, out, 0);
}

EXPORT int nvmlDeviceGetMigMode(struct fdev *d, unsigned int *cur, unsigned int *pending)
{
    const json_t *m;
    int rc = enter(d, "nvmlDeviceGetMigMode");

    if (rc)
        return rc;
    if (cur == NULL || pending == NULL)
        return RC_INVALID_ARGUMENT;
    m = json_object_get(d->obj, "mig_mode");
    if (!json_is_integer(m))
        return RC_NOT_SUPPORTED;
    *cur = *pending = (unsigned int)json_integer_value(m);
    return RC_SUCCESS;
}

EXPORT int nvmlDeviceGetMaxMigDeviceCount(struct fdev *d, unsigned int *n)
{
    const json_t *m;
    int rc = enter(d, "nvmlDeviceGetMaxMigDeviceCount");

    if (rc)
        return rc;
    if (n == NULL)
        return RC_INVALID_ARGUMENT;
    if (!json_is_integer(json_object_get(d->obj, "mig_mode")))
        return RC_NOT_SUPPORTED;
    m = json_object_get(d->obj, "mig_max");
    *n = json_is_integer(m) ? (unsigned int)json_integer_value(m) : 7;
    return RC_SUCCESS;
}

EXPORT int nvmlDeviceGetMigDeviceHandleByIndex(struct fdev *d, unsigned int i, struct fdev **out)
{
    int rc = enter(d, "nvmlDeviceGetMigDeviceHandleByIndex");

    if (rc)
        return rc;
    if (out == NULL || d->parent != NULL)
        return RC_INVALID_ARGUMENT;
    if (json_integer_value(json_object_get(d->obj, "mig_mode")) != 1 || i >= MAX_MIG ||
        d->mig[i] == NULL)
        return RC_NOT_FOUND;
    *out = d->mig[i];
    return RC_SUCCESS;
}

EXPORT int nvmlDeviceGetGpuInstanceId(struct fdev *d, unsigned int *id)
{
    const json_t *gi;
    int rc = enter(d, "nvmlDeviceGetGpuInstanceId");

    if (rc)
        return rc;
    if (id == NULL || d->parent == NULL)
        return RC_INVALID_ARGUMENT;
    gi = json_object_get(d->obj, "gi");
    if (!json_is_integer(gi))
        return RC_NOT_SUPPORTED;
    *id = (unsigned int)json_integer_value(gi);
    return RC_SUCCESS;
}

#endif
