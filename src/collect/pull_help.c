/* The help texts of pull source config keys, shown by the source form
 * (GET /api/v1/source-kinds). Kept apart from the table that validates
 * configs (pull.c) so that a kind's rows there need no help text: a key
 * without an entry here is still listed, with no help. An entry whose
 * kind is NULL serves every kind that has the key and no entry of its
 * own. */
#include "collect/pull.h"

#include <string.h>

static const struct {
    const char *kind, *key, *help, *group;
} helps[] = {
    {NULL, "url", "Where to pull from: an http(s) URL", NULL},
    {NULL, "bearer_token", "Optional; sent as Authorization: Bearer. Write-only", NULL},
    {NULL, "token", "The API token. Write-only", NULL},
    {NULL, "ca_file", "A PEM bundle on the server to verify the peer's certificate", NULL},
    {NULL, "insecure_skip_verify", "Accept any certificate (insecure; for tests only)", NULL},
    {NULL, "timeout_s", "Seconds one request may take", NULL},
    {NULL, "page_size", "Objects per list request", NULL},
    {"prometheus", "url", "The Prometheus server, e.g. https://prometheus.example:9090", NULL},
    {"prometheus", "query", "PromQL selecting dcgm-exporter series; default: every DCGM_FI_ metric",
     NULL},
    {"dcgm-exporter", "url", "The exporter's metrics page, e.g. http://gpu-node:9400/metrics",
     NULL},
    {"habanalabs-exporter", "url",
     "The Gaudi metric exporter's page, e.g. http://gaudi-node:41611/metrics", NULL},
    {"habanalabs-exporter", "hostname",
     "The node's host name, when the exporter does not report habanalabs_kube_info", NULL},
    {"kubernetes", "url", "The API server, e.g. https://kubernetes.default.svc", NULL},
    {"netbox", "url", "NetBox, e.g. https://netbox.example.com", NULL},
    {"netbox", "token",
     "API token (sent as Authorization: Token) with view rights on devices, modules and "
     "inventory items. Write-only",
     NULL},
    {"netbox", "site", "Only devices of this site (slug)", NULL},
    {"netbox", "role", "Only devices of this role (slug)", NULL},
    {"netbox", "device_role", "Only devices of this role (slug; older NetBox)", NULL},
    {"snipeit", "url", "Snipe-IT, e.g. https://snipe.example.com", NULL},
    {"snipeit", "token",
     "Personal access token (sent as Authorization: Bearer) with view rights on assets. "
     "Write-only",
     NULL},
    {"snipeit", "category", "Only assets of this category (id)", NULL},
    {"snipeit", "status", "Only assets of this status label (e.g. Deployed)", NULL},
    {"slurm", "cluster", "The Slurm cluster name (sacct --clusters)", NULL},
    {"slurm", "sacct", "Path of the sacct command; default sacct on PATH",
     "either sacct or slurmrestd_url"},
    {"slurm", "format", "sacct output: json or parsable2 (default: json where supported)", NULL},
    {"slurm", "slurmrestd_url", "slurmrestd base URL, e.g. http://slurm-ctl:6820",
     "either sacct or slurmrestd_url"},
    {"slurm", "token", "slurmrestd JWT (X-SLURM-USER-TOKEN). Write-only",
     "either sacct or slurmrestd_url"},
    {"slurm", "user", "slurmrestd user name (X-SLURM-USER-NAME)", "either sacct or slurmrestd_url"},
    {"slurm", "api_version", "slurmrestd API version, e.g. v0.0.40", NULL},
    {"slurm", "overlap_s", "Seconds re-read before the last pull's end, for late records", NULL},
    {"slurm", "lookback_h", "Hours of history the first pull reads", NULL},
    {"prometheus-generic", "url", "A Prometheus server that scrapes the exporter (HTTP API)",
     "either url or exporter_url"},
    {"prometheus-generic", "exporter_url",
     "An exporter's metrics page, scraped directly (text format)", "either url or exporter_url"},
    {"prometheus-generic", "mapping",
     "Which metrics and labels give each GPU field: uuid_label, host_label, and per field "
     "{metric, unit or scale}",
     NULL},
};

const char *pull_key_help(const char *kind, const char *key, const char **group)
{
    const char *help = NULL;

    *group = NULL;
    for (size_t i = 0; i < sizeof helps / sizeof *helps; i++) {
        if (strcmp(helps[i].key, key) != 0)
            continue;
        if (helps[i].kind && kind && strcmp(helps[i].kind, kind) == 0) {
            *group = helps[i].group;
            return helps[i].help;
        }
        if (helps[i].kind == NULL && help == NULL) {
            help = helps[i].help;
            *group = helps[i].group;
        }
    }
    return help;
}
