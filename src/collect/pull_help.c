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
    {"gcp", "project", "The project whose instances are listed, e.g. ml-training-prod", NULL},
    {"gcp", "service_account_json",
     "The service account's JSON key (roles/compute.viewer); or give access_token. Write-only",
     NULL},
    {"gcp", "access_token", "An OAuth access token instead of a key. Write-only", NULL},
    {"gcp", "endpoint", "Replaces https://compute.googleapis.com (a proxy or a stand-in)", NULL},
    {"gcp", "token_endpoint", "Replaces https://oauth2.googleapis.com/token", NULL},
    {"azure", "subscription_id", "The subscription whose VMs are listed", NULL},
    {"azure", "tenant_id", "The Microsoft Entra ID tenant of the app registration", NULL},
    {"azure", "client_id", "The app registration's client id (Reader on the subscription)", NULL},
    {"azure", "client_secret", "The app registration's client secret. Write-only", NULL},
    {"azure", "endpoint", "Replaces https://management.azure.com (a proxy or a stand-in)", NULL},
    {"azure", "login_endpoint", "Replaces https://login.microsoftonline.com", NULL},
    {"aws", "regions", "The regions to list, e.g. [\"us-east-1\", \"us-west-2\"]", NULL},
    {"aws", "credentials",
     "\"keys\" (default: the access key below) or \"instance\" (the EC2 instance's role, read "
     "from its metadata service, IMDSv2)",
     NULL},
    {"aws", "access_key_id",
     "Access key id of a principal allowed ec2:DescribeInstances and "
     "ec2:DescribeInstanceTypes (or sts:AssumeRole on role_arn)",
     "with credentials \"keys\""},
    {"aws", "secret_access_key", "The access key's secret. Write-only", NULL},
    {"aws", "session_token",
     "Optional, for temporary credentials (X-Amz-Security-Token). "
     "Write-only",
     NULL},
    {"aws", "role_arn",
     "Optional IAM role to assume (STS AssumeRole) with the credentials above; its temporary "
     "keys sign every EC2 request, e.g. arn:aws:iam::123456789012:role/gpuinv-reader",
     NULL},
    {"aws", "external_id", "The external id the role's trust policy asks for. Write-only",
     "with role_arn"},
    {"aws", "role_session_name", "The session name STS records (default gpuinv)", "with role_arn"},
    {"aws", "sts_endpoint",
     "Replaces https://sts.amazonaws.com (a regional STS endpoint, a proxy or a stand-in)",
     "with role_arn"},
    {"aws", "imds_endpoint", "Replaces http://169.254.169.254 (the instance metadata service)",
     "with credentials \"instance\""},
    {"aws", "endpoint",
     "Optional base URL replacing https://ec2.<region>.amazonaws.com/ (a proxy or stand-in)", NULL},
    {"aws", "page_size", "Instances per DescribeInstances page (MaxResults, 5 to 1000)", NULL},
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
