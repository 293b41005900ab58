/* Collectors that run the vendor command-line tools: nvidia-smi (CSV
 * queries) and amd-smi / rocm-smi (JSON), for hosts where NVML cannot be
 * loaded. */
#include "collect/collector.h"
#include "collect/runcmd.h"
#include "parse/amdsmi.h"
#include "parse/nvsmi.h"

#include <stdbool.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#define SMI_MAX_OUT (8u << 20)
#define SMI_TIMEOUT 20

#define NVSMI_GPU_FIELDS                                                                           \
    "index,uuid,name,serial,pci.bus_id,driver_version,vbios_version,memory.total,memory.used,"     \
    "utilization.gpu,utilization.memory,temperature.gpu,power.draw,enforced.power.limit,"          \
    "mig.mode.current,ecc.errors.corrected.volatile.total,ecc.errors.uncorrected.volatile.total"
#define NVSMI_APP_FIELDS "gpu_uuid,gpu_bus_id,pid,process_name,used_gpu_memory"

struct smi_state {
    char tool[512]; /* nvidia-smi, or amd-smi / rocm-smi */
    int amd_kind;   /* 0 nvidia-smi, 1 amd-smi, 2 rocm-smi */
    bool xml;       /* nvidia-smi refused the CSV query: use -q -x */
};

/* Runs the tool with args and hands stdout to the caller. */
static int run(const struct smi_state *s, const char *a1, const char *a2, const char *a3,
               char **out, size_t *len, char *err, size_t errlen)
{
    const char *argv[5] = {s->tool, a1, a2, a3, NULL};
    return runcmd(argv, SMI_MAX_OUT, SMI_TIMEOUT, out, len, err, errlen);
}

static int nvsmi_discover(void *state, struct gi_obs_set *set, char *err, size_t errlen)
{
    struct smi_state *s = state;
    char *out = NULL, why[256];
    size_t len;
    int rc;

    if (s->xml || run(s, "--query-gpu=" NVSMI_GPU_FIELDS, "--format=csv,nounits", NULL, &out, &len,
                      why, sizeof why) != 0) {
        /* Drivers that do not know a queried field refuse the whole CSV
         * query; the XML report has GPUs and processes in one run. */
        if (run(s, "-q", "-x", NULL, &out, &len, err, errlen) != 0) {
            if (!s->xml)
                snprintf(err, errlen, "CSV query: %s; XML report failed too", why);
            return -1;
        }
        rc = nvsmi_parse_xml(out, len, set, err, errlen);
        free(out);
        if (rc == 0)
            s->xml = true;
        return rc == 0 ? 0 : -1;
    }
    rc = nvsmi_parse_query_gpu(out, len, NULL, set, err, errlen);
    free(out);
    if (rc != 0)
        return -1;
    /* Processes are best effort: a container may not be allowed to list
     * them. The GPUs are kept either way; the failure is a warning. */
    if (run(s, "--query-compute-apps=" NVSMI_APP_FIELDS, "--format=csv,nounits", NULL, &out, &len,
            why, sizeof why) == 0) {
        if (nvsmi_parse_compute_apps(out, len, NULL, set, why, sizeof why) != 0)
            gi_obs_warn(set, "nvidia-smi --query-compute-apps: %s; processes not reported", why);
        free(out);
    } else {
        gi_obs_warn(set, "nvidia-smi --query-compute-apps: %s; processes not reported", why);
    }
    err[0] = '\0';
    return 0;
}

static int amd_discover(void *state, struct gi_obs_set *set, char *err, size_t errlen)
{
    struct smi_state *s = state;
    char *st = NULL, *mt = NULL;
    size_t sl = 0, ml = 0;
    int rc = -1;

    if (s->amd_kind == 2) {
        if (run(s, "--showallinfo", "--json", NULL, &st, &sl, err, errlen) == 0)
            rc = amdsmi_parse_rocm(st, sl, set, err, errlen);
    } else if (run(s, "static", "--json", NULL, &st, &sl, err, errlen) == 0) {
        char why[256];
        /* Without metrics the GPUs are still reported, without readings. */
        if (run(s, "metric", "--json", NULL, &mt, &ml, why, sizeof why) != 0) {
            free(mt);
            mt = NULL;
            ml = 0;
            gi_obs_warn(set, "amd-smi metric: %s; readings not reported", why);
        }
        rc = amdsmi_parse(st, sl, mt, ml, set, err, errlen);
    }
    free(st);
    free(mt);
    return rc;
}

static void smi_close(void *state) { free(state); }

/* Opens a tool-based collector after checking the tool runs at all. */
static int smi_open(const char *tool, int amd_kind, struct collector *out, char *err, size_t errlen)
{
    struct smi_state *s = calloc(1, sizeof *s);
    struct gi_obs_set probe = {0};
    int rc;

    if (s == NULL) {
        snprintf(err, errlen, "out of memory");
        return -1;
    }
    snprintf(s->tool, sizeof s->tool, "%s", tool);
    s->amd_kind = amd_kind;
    rc = amd_kind ? amd_discover(s, &probe, err, errlen) : nvsmi_discover(s, &probe, err, errlen);
    gi_obs_free(&probe);
    if (rc != 0) {
        free(s);
        return -1;
    }
    out->name = amd_kind == 0 ? "nvidia-smi" : amd_kind == 1 ? "amd-smi" : "rocm-smi";
    out->state = s;
    out->discover = amd_kind ? amd_discover : nvsmi_discover;
    out->close = smi_close;
    return 0;
}

int collector_open_nvsmi(const struct collector_opts *o, struct collector *out, char *err,
                         size_t errlen)
{
    return smi_open(o->nvidia_smi ? o->nvidia_smi : "nvidia-smi", 0, out, err, errlen);
}

int collector_open_amd(const struct collector_opts *o, struct collector *out, char *err,
                       size_t errlen)
{
    char why[256];

    if (smi_open(o->amd_smi ? o->amd_smi : "amd-smi", 1, out, why, sizeof why) == 0)
        return 0;
    if (smi_open(o->rocm_smi ? o->rocm_smi : "rocm-smi", 2, out, err, errlen) == 0)
        return 0;
    snprintf(err + strlen(err), errlen - strlen(err), "; amd-smi: %s", why);
    return -1;
}
