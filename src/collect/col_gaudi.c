/* The Intel Gaudi collector: hl-smi's CSV query for identity and readings
 * in one run, its summary table for processes, and the processes holding
 * /dev/accel devices open for the pids the table cannot show. Firmware
 * versions come from hl-smi -q, run when an AIP is new to the collector
 * (at most every FW_RETRY_S) and kept. ECC counters come from a second,
 * separate CSV query: an hl-smi that does not know its fields (what it
 * does with an unknown field is not documented) then costs only the ECC
 * counters, not the GPUs; after a failure it is asked again only after
 * ECC_RETRY_S, and every discovery meanwhile carries the warning. */
#define _GNU_SOURCE
#include "collect/accelfd.h"
#include "collect/collector.h"
#include "collect/runcmd.h"
#include "core/util.h"
#include "parse/hlsmi.h"

#include <dirent.h>
#include <limits.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>
#include <unistd.h>

#define HL_MAX_OUT (8u << 20)
/* One HLML pass takes seconds; leave room for a busy host. */
#define HL_TIMEOUT 20
#define FW_MAX 64
#define FW_RETRY_S 600
#define ECC_RETRY_S 3600
#define ECC_FIELDS                                                                                 \
    "uuid,bus_id,ecc.errors.uncorrected.aggregate.total,ecc.errors.corrected.aggregate.total"

struct fw_entry {
    char bus[GI_BUS_LEN];
    char fw[GI_NAME_LEN]; /* "" when hl-smi -q named none */
};

struct gaudi_state {
    char tool[512];
    char root[512];
    char logdir[64]; /* our HABANA_LOGS directory, "" when the caller's is kept */
    struct fw_entry fw[FW_MAX];
    size_t nfw;
    int64_t fw_tried;   /* monotonic seconds of the last hl-smi -q; 0 never */
    int64_t ecc_failed; /* monotonic seconds of the last failed ECC query; 0 none */
    char ecc_why[200];  /* why it failed */
};

static int64_t mono_s(void)
{
    struct timespec ts;
    clock_gettime(CLOCK_MONOTONIC, &ts);
    return (int64_t)ts.tv_sec;
}

static const struct fw_entry *fw_find(const struct gaudi_state *s, const char *bus)
{
    for (size_t i = 0; i < s->nfw; i++)
        if (strcmp(s->fw[i].bus, bus) == 0)
            return &s->fw[i];
    return NULL;
}

/* Gives the GPUs set->gpus[first..] their firmware version: from what is
 * kept, or from a run of hl-smi -q when one of them is new. */
static void firmware(struct gaudi_state *s, struct gi_obs_set *set, size_t first)
{
    const char *argv[] = {s->tool, "-q", NULL};
    char *out = NULL, why[256];
    size_t len;
    int missing = 0;

    for (size_t i = first; i < set->ngpus; i++)
        missing |= set->gpus[i].pci_bus_id[0] && fw_find(s, set->gpus[i].pci_bus_id) == NULL;
    if (missing && (s->fw_tried == 0 || mono_s() - s->fw_tried >= FW_RETRY_S)) {
        s->fw_tried = mono_s();
        if (runcmd(argv, HL_MAX_OUT, HL_TIMEOUT, &out, &len, why, sizeof why) != 0 ||
            hlsmi_parse_log(out, len, set, first, why, sizeof why) != 0)
            gi_obs_warn(set, "hl-smi -q: %s; firmware versions not reported", why);
        free(out);
        for (size_t i = first; i < set->ngpus && s->nfw < FW_MAX; i++) {
            const struct gi_gpu_obs *g = &set->gpus[i];
            if (g->pci_bus_id[0] && fw_find(s, g->pci_bus_id) == NULL) {
                gi_strlcpy(s->fw[s->nfw].bus, g->pci_bus_id, sizeof s->fw[s->nfw].bus);
                gi_strlcpy(s->fw[s->nfw].fw, g->vbios, sizeof s->fw[s->nfw].fw);
                s->nfw++;
            }
        }
        return;
    }
    for (size_t i = first; i < set->ngpus; i++) {
        const struct fw_entry *e = fw_find(s, set->gpus[i].pci_bus_id);
        if (e && set->gpus[i].vbios[0] == '\0')
            gi_strlcpy(set->gpus[i].vbios, e->fw, sizeof set->gpus[i].vbios);
    }
}

/* Gives the GPUs set->gpus[first..] their aggregate ECC counters, matched
 * by bus id, from the separate ECC query; a counter hl-smi leaves N/A
 * stays unknown. A failed query is one warning and no counters. */
static void ecc(struct gaudi_state *s, struct gi_obs_set *set, size_t first)
{
    const char *argv[] = {s->tool, "-Q", ECC_FIELDS, "-f", "csv,nounits", NULL};
    struct gi_obs_set e = {0};
    char *out = NULL, why[256];
    size_t len = 0;
    int64_t now = mono_s();

    if (s->ecc_failed && now - s->ecc_failed < ECC_RETRY_S) {
        gi_obs_warn(set, "hl-smi ECC query: %s; ECC counters not reported", s->ecc_why);
        return;
    }
    if (runcmd(argv, HL_MAX_OUT, HL_TIMEOUT, &out, &len, why, sizeof why) != 0 ||
        hlsmi_parse_query(out, len, NULL, &e, why, sizeof why) != 0) {
        gi_obs_warn(set, "hl-smi ECC query: %s; ECC counters not reported", why);
        gi_strlcpy(s->ecc_why, why, sizeof s->ecc_why);
        s->ecc_failed = now;
        goto cleanup;
    }
    s->ecc_failed = 0;
    for (size_t j = 0; j < e.ngpus; j++) {
        const struct gi_gpu_obs *x = &e.gpus[j];
        for (size_t i = first; x->pci_bus_id[0] && i < set->ngpus; i++) {
            struct gi_gpu_obs *g = &set->gpus[i];
            if (strcmp(g->pci_bus_id, x->pci_bus_id) != 0)
                continue;
            if (x->ecc_corrected >= 0)
                g->ecc_corrected = x->ecc_corrected;
            if (x->ecc_uncorrected >= 0)
                g->ecc_uncorrected = x->ecc_uncorrected;
        }
    }
cleanup:
    free(out);
    gi_obs_free(&e);
}

static int gaudi_discover(void *state, struct gi_obs_set *set, char *err, size_t errlen)
{
    struct gaudi_state *s = state;
    const char *query[] = {s->tool, "-Q", HLSMI_QUERY_FIELDS, "-f", "csv,nounits", NULL};
    const char *table[] = {s->tool, NULL};
    size_t first = set->ngpus, len;
    char *out = NULL, why[256];
    int rc;

    if (runcmd(query, HL_MAX_OUT, HL_TIMEOUT, &out, &len, err, errlen) != 0)
        return -1;
    rc = hlsmi_parse_query(out, len, NULL, set, err, errlen);
    free(out);
    if (rc != 0)
        return -1;
    if (set->ngpus == first) {
        snprintf(err, errlen, "hl-smi listed no AIPs");
        return -1;
    }
    firmware(s, set, first);
    ecc(s, set, first);
    /* Processes are best effort: the GPUs are kept either way. */
    if (runcmd(table, HL_MAX_OUT, HL_TIMEOUT, &out, &len, why, sizeof why) == 0) {
        if (hlsmi_parse_table(out, len, set, why, sizeof why) != 0)
            gi_obs_warn(set, "hl-smi table: %s; processes from it not reported", why);
        free(out);
    } else {
        gi_obs_warn(set, "hl-smi table: %s; processes from it not reported", why);
    }
    accelfd_scan(s->root, set, first);
    err[0] = '\0';
    return 0;
}

/* Removes the files hl-smi left in our log directory, then the directory. */
static void remove_logdir(const char *dir)
{
    DIR *d = opendir(dir);
    struct dirent *e;

    if (d == NULL)
        return;
    while ((e = readdir(d)) != NULL) {
        char path[PATH_MAX];
        if (strcmp(e->d_name, ".") == 0 || strcmp(e->d_name, "..") == 0)
            continue;
        snprintf(path, sizeof path, "%s/%s", dir, e->d_name);
        unlink(path);
    }
    closedir(d);
    rmdir(dir);
}

static void gaudi_close(void *state)
{
    struct gaudi_state *s = state;

    if (s && s->logdir[0]) {
        remove_logdir(s->logdir);
        unsetenv("HABANA_LOGS"); /* it named our directory */
    }
    free(s);
}

/* hl-smi writes a log under $HABANA_LOGS (default /var/log/habana_logs) and
 * needs no root when that is writable: give it a private directory when
 * the caller's is not. Console logging would mix log lines into stdout. */
static void prepare_env(struct gaudi_state *s)
{
    const char *logs = getenv("HABANA_LOGS");
    const char *tmp = getenv("TMPDIR");

    unsetenv("ENABLE_CONSOLE");
    if (logs && *logs && access(logs, W_OK) == 0)
        return;
    snprintf(s->logdir, sizeof s->logdir, "%.40s/gpuinv-hl-XXXXXX", tmp && *tmp ? tmp : "/tmp");
    if (mkdtemp(s->logdir) == NULL) {
        s->logdir[0] = '\0';
        return;
    }
    setenv("HABANA_LOGS", s->logdir, 1);
}

/* hl-smi when --hl-smi does not name it: on PATH, else where Habana's
 * packages install it. */
static const char *find_tool(void)
{
    static const char *const places[] = {"/usr/local/bin/hl-smi", "/opt/habanalabs/bin/hl-smi"};
    const char *path = getenv("PATH");

    if (path) {
        char dir[PATH_MAX];
        for (const char *p = path; *p;) {
            size_t n = strcspn(p, ":");
            if (n > 0 && n < sizeof dir - 8) {
                memcpy(dir, p, n);
                memcpy(dir + n, "/hl-smi", 8);
                if (access(dir, X_OK) == 0)
                    return "hl-smi";
            }
            p += n + (p[n] == ':');
        }
    }
    for (size_t i = 0; i < sizeof places / sizeof places[0]; i++)
        if (access(places[i], X_OK) == 0)
            return places[i];
    return "hl-smi";
}

int collector_open_gaudi(const struct collector_opts *o, struct collector *out, char *err,
                         size_t errlen)
{
    struct gaudi_state *s = calloc(1, sizeof *s);
    struct gi_obs_set probe = {0};
    int rc;

    if (s == NULL) {
        snprintf(err, errlen, "out of memory");
        return -1;
    }
    snprintf(s->tool, sizeof s->tool, "%s", o->hl_smi ? o->hl_smi : find_tool());
    snprintf(s->root, sizeof s->root, "%s", o->root ? o->root : "");
    prepare_env(s);
    rc = gaudi_discover(s, &probe, err, errlen);
    gi_obs_free(&probe);
    if (rc != 0) {
        gaudi_close(s);
        return -1;
    }
    out->name = "hl-smi";
    out->state = s;
    out->discover = gaudi_discover;
    out->close = gaudi_close;
    return 0;
}
