/* Slurm job accounting parsers: pure (bytes in, structs out, no I/O),
 * bounded.
 *
 * Reads what `sacct` prints for allocations (-X) in --parsable2 form (the
 * field list SLURM_SACCT_FORMAT, free text last) or as --json (the dbv0.0.37
 * and data_parser v0.0.39+ families), and what slurmrestd answers for
 * GET /slurm/v0.0.NN/jobs (the same JSON family with the controller's key
 * names). From each job: ids, cluster, user, account, partition, QOS, the
 * expanded node list, GPUs from the allocated TRES, GPU indexes per node
 * where recorded, submit/start/end, state and the GPU usage TRES.
 *
 * Degrades per field: an unreadable value leaves that field absent (-1 for
 * numbers and times, "" for text, NAN for measurements) and never loses the
 * job; only a job without a usable id (or a pending array not yet split
 * into tasks) is skipped, counted in `skipped`. */
#ifndef GI_SLURM_H
#define GI_SLURM_H

#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>

#define SLURM_MAX_BODY (512u * 1024u * 1024u) /* bytes of one listing */
#define SLURM_MAX_JOBS 2000000                /* jobs in one listing */
#define SLURM_MAX_NODES 1024                  /* nodes of one job (more are dropped) */
#define SLURM_MAX_IDX 32                      /* GPU indexes recorded per node */
#define SLURM_NAME_LEN 128
#define SLURM_ID_LEN 72 /* "456_[1-10%2]" may take 64 bytes */
#define SLURM_NODES_LEN 1024
#define SLURM_ERR_LEN 256

/* The --format list the parsable2 parser reads when no header line names
 * the columns (sacct -n); the free-text JobName comes last so that a
 * delimiter inside it cannot shift the others. */
#define SLURM_SACCT_FORMAT                                                                         \
    "JobIDRaw,JobID,Cluster,User,Account,Partition,QOS,NodeList,Submit,Start,End,ElapsedRaw,"      \
    "State,AllocTRES,TRESUsageInTot,TRESUsageInMax,JobName"

/* One node of a job: its host name, and the global GPU indexes Slurm says
 * it holds there (nidx -1: not recorded). */
struct slurm_node {
    char name[SLURM_NAME_LEN];
    int nidx;
    int idx[SLURM_MAX_IDX];
};

struct slurm_job {
    int64_t id_raw;        /* JobIDRaw: the numeric id of this job or task */
    char id[SLURM_ID_LEN]; /* as shown: "123", "456_7", "789+0" */
    char cluster[SLURM_NAME_LEN], user[SLURM_NAME_LEN], account[SLURM_NAME_LEN];
    char partition[SLURM_NAME_LEN], qos[SLURM_NAME_LEN], name[256];
    char state[32];                 /* first word: COMPLETED, RUNNING, CANCELLED, ... */
    char nodelist[SLURM_NODES_LEN]; /* compressed, as Slurm printed it */
    struct slurm_node *nodes;       /* expanded; caller frees through slurm_jobs_free */
    size_t nnodes;
    int64_t gpus;               /* gres/gpu of the allocation; -1 unknown */
    char gpu_type[64];          /* from gres/gpu:<type>, "" when not recorded */
    int64_t submit, start, end; /* unix seconds; -1 absent (end of a running job) */
    int64_t elapsed;            /* seconds; -1 absent */
    double gpu_util_sum;        /* gres/gpuutil: percent summed over the job's GPUs; NAN */
    double gpu_mem_mib;         /* gres/gpumem high-water mark, MiB; NAN */
};

struct slurm_jobs {
    struct slurm_job *items;
    size_t n;
    size_t skipped; /* rows or jobs left out (no id, pending arrays, unreadable rows) */
    char warning[SLURM_ERR_LEN]; /* the first reason something was left out */
};

void slurm_jobs_free(struct slurm_jobs *l);

/* Expands a Slurm hostlist ("gpu[01-04,07]", "a[1-2],b3",
 * "rack[0-1]_blade[0-2]"), keeping zero padding, into at most max names
 * of SLURM_NAME_LEN each (*out, caller frees). "None assigned" and ""
 * give none. GI_OK, or GI_INVALID for a malformed list. */
int slurm_hostlist_expand(const char *s, size_t max, struct slurm_node **out, size_t *n);

/* From a TRES string ("billing=16,cpu=16,gres/gpu:a100=2,gres/gpu=2"):
 * the gres/gpu count (-1 absent; typed entries are not summed, but give
 * the count when no untyped one is present) and the first GPU type. */
void slurm_tres_gpus(const char *tres, int64_t *gpus, char *type, size_t tlen);
/* From a TRESUsageIn* string: gres/gpuutil (percent, NAN absent) and
 * gres/gpumem in MiB (K/M/G/T suffixes, bytes without; NAN absent). */
void slurm_tres_usage(const char *tres, double *util, double *mem_mib);

/* A sacct time: epoch seconds (SLURM_TIME_FORMAT=%s), "%FT%T" read as UTC
 * (sacct runs with TZ=UTC), "Unknown"/"None"/"" → -1. */
int64_t slurm_time(const char *s);

/* Applies a GPU index list ("0-3", "0,2", "1-2,5") to node n. */
void slurm_node_idx(struct slurm_node *n, const char *list);

/* `sacct --parsable2` output: fields split at delim ('|' by default,
 * '\x1f' when asked with --delimiter); an optional header line naming
 * the columns, else SLURM_SACCT_FORMAT's order. Fields past the expected
 * count belong to the last column (JobName) when it is last. Returns
 * GI_OK (rows it could not read are skipped and counted), GI_TOO_LARGE
 * past the bounds. */
int slurm_parse_parsable(const char *buf, size_t len, char delim, struct slurm_jobs *out, char *err,
                         size_t errlen);

/* `sacct --json` (dbv0.0.37/38, data_parser v0.0.39+) or slurmrestd
 * /slurm/v0.0.NN/jobs. GI_INVALID for a document that is not such a
 * listing (err says why; its "errors" array is quoted when present). */
int slurm_parse_json(const char *buf, size_t len, struct slurm_jobs *out, char *err, size_t errlen);

#endif
