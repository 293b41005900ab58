/* Kubernetes API parsers: pure (bytes in, structs out, no I/O), bounded.
 *
 * Reads one page of a NodeList or PodList as the API server returns it for
 * GET /api/v1/nodes?limit=N&continue=T (or /api/v1/pods), and the Status
 * object it returns instead on failure (410 Expired when a continue token
 * has aged out). Extracts what gpuinv needs to know about GPUs: the GPU
 * resources nodes advertise and pods consume, NVIDIA GPU Feature Discovery
 * labels, sharing (time-slicing / MPS) and MIG, cloud placement, and pod
 * ownership.
 *
 * Absent values follow core/observation.h: -1 for counts and numbers, ""
 * for strings, never zero for "unknown". */
#ifndef GI_K8S_H
#define GI_K8S_H

#include "core/observation.h"

#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>

/* Hard bounds. Strings longer than their buffer are rejected, not cut. */
#define K8S_MAX_BODY (64u * 1024u * 1024u) /* bytes of one page */
#define K8S_MAX_ITEMS 2000                 /* items in one page */
#define K8S_MAX_NODE_RES 16                /* GPU resource names per node */
#define K8S_MAX_CONTAINER_RES 8            /* GPU resource names per container */
#define K8S_MAX_MIG_LABELS 16              /* mixed-strategy MIG profiles per node */
#define K8S_MAX_CONTAINERS 16              /* containers + init containers per pod */
#define K8S_MAX_POD_LABELS 32              /* labels copied per pod (more are dropped) */
#define K8S_MAX_QUANTITY 64                /* characters of one quantity string */

#define K8S_NAME_LEN 254 /* DNS subdomain: 253 + NUL */
#define K8S_UID_LEN 64
#define K8S_LABELS_LEN 4096  /* a node's labels as JSON text (labels past it are dropped) */
#define K8S_KEY_LEN 128      /* label key copied (longer keys are dropped) */
#define K8S_VALUE_LEN 64     /* label value: 63 + NUL */
#define K8S_RES_LEN 64       /* GPU resource name, e.g. "nvidia.com/mig-1g.10gb" */
#define K8S_PROVIDER_LEN 512 /* spec.providerID */
#define K8S_TOKEN_LEN 4096   /* metadata.continue */
#define K8S_MSG_LEN 256
#define K8S_ERR_LEN 256

/* ---- Quantities ------------------------------------------------------ */

/* A parsed quantity: |value| = whole + (a fraction when frac is set). */
struct k8s_quantity {
    bool negative;  /* set only for a nonzero value */
    uint64_t whole; /* integer part of the magnitude */
    bool frac;      /* the magnitude has a nonzero fractional part */
};

/* Parses a quantity per the Kubernetes grammar: optional sign, a decimal
 * number ("8", "1.5", ".5", "5."), then one suffix: none, a decimal SI
 * suffix (n u m k M G T P E), a binary one (Ki Mi Gi Ti Pi Ei) or a
 * decimal exponent ("1e3", "2E-1"). The value is first multiplied by
 * 10^shift (shift 3 gives milli units). Exact arithmetic: no floating
 * point, no locale. Returns GI_OK, GI_INVALID (syntax, or longer than
 * K8S_MAX_QUANTITY) or GI_TOO_LARGE (integer part >= 2^64). */
int k8s_quantity_parse(const char *s, int shift, struct k8s_quantity *q);

/* A whole, non-negative count (GPUs, MIG devices). Kubernetes admits only
 * whole numbers for extended resources, so a value with a fractional part
 * ("500m", "0.5", "1.5") is an error, never rounded; an exact integer in any
 * notation ("1000m", "1e1", "1k") is accepted. GI_OK, GI_INVALID (syntax,
 * negative, fractional) or GI_TOO_LARGE (> INT64_MAX). */
int k8s_quantity_count(const char *s, int64_t *out);

/* A non-negative size in bytes (memory), rounded up to the next whole
 * byte as Kubernetes does ("1.5" -> 2, "100m" -> 1). GI_OK, GI_INVALID,
 * GI_TOO_LARGE. */
int k8s_quantity_bytes(const char *s, int64_t *out);

/* A non-negative value in milli units (CPU: "2" -> 2000, "250m" -> 250),
 * rounded up. GI_OK, GI_INVALID, GI_TOO_LARGE. */
int k8s_quantity_milli(const char *s, int64_t *out);

/* ---- List envelope --------------------------------------------------- */

/* The Status object the API server answers with on failure. */
struct k8s_status {
    bool present;              /* the body was a Status, not a list */
    int64_t code;              /* HTTP code, e.g. 410; -1 absent */
    char status[32];           /* "Failure" */
    char reason[64];           /* "Expired", "Gone", "Forbidden", … */
    char message[K8S_MSG_LEN]; /* cut to fit (for display only) */
};

/* metadata of a list page. */
struct k8s_list_meta {
    char resource_version[K8S_VALUE_LEN];
    char continue_token[K8S_TOKEN_LEN]; /* "" on the last page */
    int64_t remaining;                  /* remainingItemCount, -1 absent */
};

/* True when a Status says the listing must restart from the first page
 * without a continue token: 410, or reason "Expired" / "Gone". */
bool k8s_status_expired(const struct k8s_status *st);

/* ---- Nodes ----------------------------------------------------------- */

/* One GPU resource a node advertises. */
struct k8s_node_res {
    char name[K8S_RES_LEN]; /* "nvidia.com/gpu", "nvidia.com/mig-1g.10gb", … */
    int64_t capacity;       /* -1 absent */
    int64_t allocatable;    /* -1 absent */
};

/* One mixed-strategy MIG profile from nvidia.com/mig-<profile>.count|memory. */
struct k8s_mig_label {
    char profile[GI_NAME_LEN]; /* "1g.10gb" */
    int64_t count;             /* -1 absent */
    int64_t memory_mb;         /* -1 absent */
};

struct k8s_node {
    char name[K8S_NAME_LEN];
    char uid[K8S_UID_LEN];
    char hostname[K8S_VALUE_LEN];       /* label kubernetes.io/hostname */
    char provider_id[K8S_PROVIDER_LEN]; /* spec.providerID, e.g. "aws:///us-east-1a/i-0…" */
    char cloud[32];                     /* scheme of providerID: "aws", "gce", "azure", … */
    char region[K8S_VALUE_LEN];         /* topology.kubernetes.io/region (or the beta label) */
    char zone[K8S_VALUE_LEN];           /* topology.kubernetes.io/zone (or the beta label) */
    char instance_type[K8S_VALUE_LEN];  /* node.kubernetes.io/instance-type (or beta) */
    int ready;                          /* Ready condition: 1 True, 0 False, -1 Unknown/absent */
    bool unschedulable;                 /* spec.unschedulable (cordoned) */

    enum gi_vendor vendor; /* from GPU resources and labels */
    /* NVIDIA GPU Feature Discovery labels (nvidia.com/…). */
    char product[K8S_VALUE_LEN];          /* gpu.product as labelled */
    char product_base[K8S_VALUE_LEN];     /* without "-SHARED" / "-MIG-<profile>" */
    char mig_profile[GI_NAME_LEN];        /* from a "-MIG-<profile>" suffix (single strategy) */
    bool shared;                          /* "-SHARED" suffix, replicas > 1 or a sharing strategy */
    int64_t gpu_count;                    /* gpu.count: physical GPUs, or MIG devices (single) */
    int64_t gpu_memory_mb;                /* gpu.memory: per GPU (per MIG device under single) */
    int64_t replicas;                     /* gpu.replicas */
    char family[K8S_VALUE_LEN];           /* gpu.family: "hopper" */
    char machine[K8S_VALUE_LEN];          /* gpu.machine: "DGX-H100" */
    char sharing_strategy[K8S_VALUE_LEN]; /* gpu.sharing-strategy: "time-slicing", "mps", "none" */
    char mig_strategy[K8S_VALUE_LEN];     /* mig.strategy: "none", "single", "mixed" */
    int64_t compute_major, compute_minor;
    int64_t driver_major, driver_minor, driver_rev;
    char driver[GI_NAME_LEN]; /* "535.104.05" from the three cuda.driver labels */
    struct k8s_mig_label migs[K8S_MAX_MIG_LABELS];
    size_t nmigs;

    struct k8s_node_res res[K8S_MAX_NODE_RES];
    size_t nres;
    int64_t cpu_milli;    /* capacity cpu in millicores, -1 absent */
    int64_t memory_bytes; /* capacity memory, -1 absent */

    /* Derived. physical_gpus: GPUs in the machine, corrected for sharing
     * (capacity / replicas) and MIG (devices are not GPUs); -1 when the
     * node's data cannot tell (e.g. single-strategy MIG without the
     * physical count). mig_devices: MIG devices advertised, -1 none. */
    int64_t physical_gpus;
    int64_t mig_devices;
    char warning[K8S_ERR_LEN]; /* inconsistency noticed, not fatal; "" none */
    /* metadata.labels as a compact JSON object of strings, bounded by
     * K8S_LABELS_LEN: labels that do not fit are left out. */
    char labels_json[K8S_LABELS_LEN];
};

struct k8s_node_list {
    struct k8s_list_meta meta;
    struct k8s_status status;
    struct k8s_node *items; /* nitems entries, owned */
    size_t nitems;
};

/* Parses one page of a NodeList (kind "NodeList", "List" or absent).
 * Returns GI_OK with out filled; GI_CONFLICT when the body is a Status
 * that k8s_status_expired() accepts (restart the listing); GI_UNAVAILABLE
 * for any other Status (out->status says which); GI_INVALID for malformed
 * input and GI_TOO_LARGE past a bound, with err naming the item index,
 * field and reason. out must be zeroed or freed before; the caller frees
 * it with k8s_node_list_free() whatever the result. */
int k8s_parse_node_list(const char *data, size_t len, struct k8s_node_list *out, char *err,
                        size_t errlen);
/* Frees the items; accepts a zeroed list. */
void k8s_node_list_free(struct k8s_node_list *l);

/* ---- Pods ------------------------------------------------------------ */

/* One GPU resource one container asks for. */
struct k8s_pod_res {
    char name[K8S_RES_LEN];
    int64_t limit;   /* -1 absent */
    int64_t request; /* -1 absent */
};

struct k8s_container {
    char name[K8S_VALUE_LEN];
    bool init;    /* from spec.initContainers */
    bool sidecar; /* init container with restartPolicy Always */
    struct k8s_pod_res res[K8S_MAX_CONTAINER_RES];
    size_t nres;
    int64_t gpus;        /* whole GPUs (nvidia.com/gpu, gpu.shared, amd.com/gpu, legacy) */
    int64_t mig_devices; /* nvidia.com/mig-* devices */
};

struct k8s_label {
    char key[K8S_KEY_LEN];
    char value[K8S_VALUE_LEN];
};

struct k8s_pod {
    char namespace_[K8S_NAME_LEN];
    char name[K8S_NAME_LEN];
    char uid[K8S_UID_LEN];
    char node_name[K8S_NAME_LEN]; /* "" while unscheduled */
    char phase[32];               /* Pending, Running, Succeeded, Failed, Unknown */
    int64_t start_time;           /* status.startTime, unix seconds; -1 absent */
    char owner_kind[64];          /* controller owner (else the first owner) */
    char owner_name[K8S_NAME_LEN];
    struct k8s_label labels[K8S_MAX_POD_LABELS]; /* in the order given */
    size_t nlabels;
    bool labels_truncated; /* some dropped: too many, or too long to copy */
    struct k8s_container containers[K8S_MAX_CONTAINERS]; /* init first, then app */
    size_t ncontainers;
    /* What the scheduler reserves for the pod: max(sum over app containers
     * and sidecars, largest init container plus the sidecars started
     * before it). */
    int64_t gpus;
    int64_t mig_devices;
    /* Non-fatal: a request that differs from its limit, or a request
     * without a limit. Names the container and resource; "" none. */
    char warning[K8S_ERR_LEN];
};

struct k8s_pod_list {
    struct k8s_list_meta meta;
    struct k8s_status status;
    struct k8s_pod *items;
    size_t nitems;
};

/* Parses one page of a PodList; results and ownership as for
 * k8s_parse_node_list(). */
int k8s_parse_pod_list(const char *data, size_t len, struct k8s_pod_list *out, char *err,
                       size_t errlen);
/* Frees the items; accepts a zeroed list. */
void k8s_pod_list_free(struct k8s_pod_list *l);

/* Looks up a copied pod label; NULL when absent (or dropped). Borrowed. */
const char *k8s_pod_label(const struct k8s_pod *p, const char *key);

#endif
