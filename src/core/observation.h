/* What a source says about GPUs at one moment, in one shape for every
 * source (agent, nvidia-smi, amd-smi, dcgm-exporter, Prometheus,
 * Kubernetes, CSV). Parsers fill these; correlation merges them into one
 * record per physical GPU. Absent values: NAN for doubles, -1 for
 * counters and indexes, "" for strings. Never zero for "unknown". */
#ifndef GI_OBSERVATION_H
#define GI_OBSERVATION_H

#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>

#define GI_UUID_LEN 96
#define GI_NAME_LEN 96
#define GI_SERIAL_LEN 64
#define GI_BUS_LEN 32
#define GI_HOST_LEN 256
#define GI_LABEL_LEN 256

enum gi_vendor { GI_VENDOR_UNKNOWN = 0, GI_VENDOR_NVIDIA, GI_VENDOR_AMD, GI_VENDOR_INTEL };

/* One GPU, or one MIG instance (parent_uuid set), as observed. */
struct gi_gpu_obs {
    char uuid[GI_UUID_LEN];        /* "GPU-…", "MIG-…" or AMD unique id */
    char parent_uuid[GI_UUID_LEN]; /* MIG instance: its physical GPU */
    int index;                     /* -1 unknown */
    enum gi_vendor vendor;
    char name[GI_NAME_LEN]; /* marketing name, e.g. "NVIDIA H100 80GB HBM3" */
    char serial[GI_SERIAL_LEN];
    char pci_bus_id[GI_BUS_LEN]; /* normalized "0000:83:00.0", lower-case hex */
    char driver[GI_NAME_LEN];
    char vbios[GI_NAME_LEN];
    char hostname[GI_HOST_LEN];
    int mig_mode;                  /* -1 unknown, 0 disabled, 1 enabled */
    char mig_profile[GI_NAME_LEN]; /* MIG instance: "1g.10gb" */
    int mig_instance;              /* MIG GPU instance id, -1 none */
    double memory_total_mib;
    double memory_used_mib;
    double util_gpu_pct;
    double util_mem_pct;
    double temp_c;
    double power_w;
    double power_limit_w;
    double energy_j;       /* cumulative counter */
    int64_t ecc_corrected; /* volatile or aggregate total, -1 unknown */
    int64_t ecc_uncorrected;
    int64_t xid_last; /* last XID error code, -1 unknown */
    /* Memory row remapping (NVIDIA) or row replacement (Gaudi): rows
     * remapped for correctable and for uncorrectable errors (-1 unknown),
     * a remap waiting for the next reset, a remap that failed (1 yes, 0
     * no, -1 unknown). */
    int64_t remap_corrected, remap_uncorrectable;
    int remap_pending, remap_failure;
    /* Workload labels carried by dcgm-exporter and Kubernetes. */
    char pod[GI_LABEL_LEN];
    char namespace_[GI_LABEL_LEN];
    char container[GI_LABEL_LEN];
    int64_t ts_ms; /* observation time, ms since epoch; 0 unknown */
    /* Ownership stated by the reporter (spreadsheets); "" leaves it. */
    char team[64];
    char env[32];
};

/* One process using a GPU. pid -1: the process is there but its id is
 * hidden from the reporter (nvidia-smi prints "[Insufficient
 * Permissions]" for other users' processes; NVML may give pid 0): an
 * anonymous process, still reported with its memory. */
struct gi_proc_obs {
    char gpu_uuid[GI_UUID_LEN];
    char pci_bus_id[GI_BUS_LEN];
    int64_t pid;
    char name[GI_LABEL_LEN];
    double used_mib;              /* NAN unknown */
    int64_t ts_ms;                /* when seen; 0 unknown */
    char user[64];                /* from /proc/PID status uid, when known */
    int64_t uid;                  /* -1 unknown */
    char container[GI_LABEL_LEN]; /* container id from /proc/PID/cgroup */
    char pod_uid[64];             /* Kubernetes pod UID from the cgroup path */
    char pod[GI_LABEL_LEN];
    char namespace_[GI_LABEL_LEN];
};

/* The reporting host of a batch. */
struct gi_host_obs {
    char hostname[GI_HOST_LEN];
    char machine_id[64];
    char serial[GI_SERIAL_LEN];
    char cluster[GI_LABEL_LEN];
    char datacenter[GI_LABEL_LEN]; /* data-center name, when the reporter knows it */
};

/* One summarized telemetry sample of one GPU (an agent sends 60 s
 * summaries of 10 s readings). Absent: NAN / -1. */
struct gi_sample {
    int64_t ts; /* unix seconds, end of the interval */
    char gpu_uuid[GI_UUID_LEN];
    double util_avg, util_max; /* % */
    double mem_used_mib;       /* max over the interval */
    double power_avg_w;
    double energy_j; /* over the interval */
    double temp_c;   /* max over the interval */
    int64_t ecc_corrected, ecc_uncorrected, xid;
};

/* A Kubernetes pod seen on a GPU (dcgm-exporter's pod labels). */
struct gi_pod_obs {
    char gpu_uuid[GI_UUID_LEN];
    char namespace_[GI_LABEL_LEN];
    char pod[GI_LABEL_LEN];
    char container[GI_LABEL_LEN];
};

/* A growable array of observations with a hard cap (GI_OBS_MAX items).
 * Values a parser or collector could not read, and so left absent, are
 * counted in nwarnings; warning describes the first of them. */
#define GI_OBS_MAX 65536
#define GI_WARNING_LEN 200
struct gi_obs_set {
    struct gi_gpu_obs *gpus;
    size_t ngpus, gpus_cap;
    struct gi_proc_obs *procs;
    size_t nprocs, procs_cap;
    struct gi_pod_obs *pods;
    size_t npods, pods_cap;
    size_t nwarnings;
    char warning[GI_WARNING_LEN];
};

/* A pushed batch: one host, its GPUs, samples and processes. */
#define GI_BATCH_MAX_GPUS 1024
#define GI_BATCH_MAX_SAMPLES 20000
#define GI_BATCH_MAX_PROCS 20000
/* set.nwarnings / set.warning count what was dropped on the way in (the
 * push API's warnings, a pull's unreadable values); the store adds them
 * to the source's warning count. */
struct gi_batch {
    char batch_id[128]; /* idempotency key, unique per source */
    bool partial;       /* lists only some of the host's GPUs: none is "missing" */
    char source[64];    /* source name (only for callers not bound to one) */
    struct gi_host_obs host;
    struct gi_obs_set set;
    struct gi_sample *samples;
    size_t nsamples;
};
void gi_batch_free(struct gi_batch *b);
void gi_sample_init(struct gi_sample *s);

/* Resets an observation to "everything absent". */
void gi_gpu_obs_init(struct gi_gpu_obs *g);
/* Appends a fresh (absent-initialized) GPU / process; NULL past the cap
 * or out of memory. The pointer is valid until the next append. */
struct gi_gpu_obs *gi_obs_add_gpu(struct gi_obs_set *s);
struct gi_proc_obs *gi_obs_add_proc(struct gi_obs_set *s);
struct gi_pod_obs *gi_obs_add_pod(struct gi_obs_set *s);
/* Frees the arrays; accepts a zeroed set. */
void gi_obs_free(struct gi_obs_set *s);

/* Normalizes a PCI bus id ("00000000:83:00.0", "0000:83:00.0", "83:00.0")
 * to "0000:83:00.0" lower-case; returns 0, or -1 if it is not one. */
int gi_pci_normalize(const char *in, char out[GI_BUS_LEN]);
/* True for the placeholders meaning "absent": "", "N/A", "[N/A]",
 * "[Not Supported]", "[Unknown Error]", "[Insufficient Permissions]",
 * "[GPU is lost]", "[Requested functionality has been deprecated]",
 * "ERR!", "<<<NULL>>>", "<<<NOT_SUPPORTED>>>", DCGM's numeric blanks … */
int gi_is_placeholder(const char *s);

/* Counts one value left absent in s and keeps the first description. */
void gi_obs_warn(struct gi_obs_set *s, const char *fmt, ...) __attribute__((format(printf, 2, 3)));
/* Forgets the warnings counted since s held n (a parse that failed and
 * took back what it appended). */
void gi_obs_warn_rewind(struct gi_obs_set *s, size_t n);

/* The range a reading may take; outside it the reading is not believed.
 * Shared by the collectors and the push API so both judge alike. */
#define GI_MEM_MIB_MAX 1e9    /* memory sizes, MiB */
#define GI_POWER_W_MAX 1e5    /* power draw and limits, W */
#define GI_TEMP_C_MIN (-50.0) /* temperatures, degrees C */
#define GI_TEMP_C_MAX 200.0   /* a sensor reading above this is broken */
#define GI_ENERGY_J_MAX 1e15  /* cumulative energy counter, J */

/* Sets absent every reading of g outside its range (negative memory,
 * utilization over 100 %, a temperature of thousands of degrees, power
 * beyond any GPU, used memory above the total). Returns how many were
 * dropped; when set is given each is counted there as a warning naming
 * `who` (e.g. "GPU 3"). */
int gi_gpu_obs_sanitize(struct gi_gpu_obs *g, struct gi_obs_set *set, const char *who);

#endif
