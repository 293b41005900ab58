/* Pulling Slurm job accounting: `sacct` run as a bounded subprocess
 * (--parsable2 with a delimiter free text cannot hold, or --json), or
 * slurmrestd's /slurm/v0.0.NN/jobs with a JWT. Incremental: each pull
 * asks for the jobs active since the previous pull's start, less a safety
 * overlap, which includes every job still running; the first pull reaches
 * back lookback_h hours. */
#include "collect/deadline.h"
#include "collect/httpget.h"
#include "collect/pull.h"
#include "collect/runcmd.h"
#include "core/log.h"
#include "core/status.h"
#include "core/util.h"
#include "parse/slurm.h"
#include "store/store.h"

#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>

#define SLURM_DEFAULT_OVERLAP_S 600
#define SLURM_DEFAULT_LOOKBACK_H 24
#define SLURM_DEFAULT_TIMEOUT_S 120
#define SLURM_DEFAULT_API "v0.0.41"
/* The field delimiter asked of sacct: ASCII unit separator, which job
 * names and comments do not contain. */
#define SLURM_DELIM '\x1f'
/* --parsable2 output is parsed and stored in parts of about this size. */
#define SLURM_PART_BYTES (2u * 1024u * 1024u)

static int64_t cfg_int(const json_t *cfg, const char *key, int64_t def)
{
    json_t *v = json_object_get(cfg, key);
    return json_is_integer(v) ? json_integer_value(v) : def;
}

/* "%Y-%m-%dT%H:%M:%S" in UTC, the form sacct -S accepts (with TZ=UTC). */
static void sacct_time(int64_t t, char *buf, size_t len)
{
    time_t tt = (time_t)t;
    struct tm tm;

    gmtime_r(&tt, &tm);
    strftime(buf, len, "%Y-%m-%dT%H:%M:%S", &tm);
}

static int run_sacct(const json_t *cfg, int64_t since, bool json, char **out, size_t *len,
                     char *err, size_t errlen)
{
    const char *sacct = pull_cfg_str(cfg, "sacct") ? pull_cfg_str(cfg, "sacct") : "sacct";
    const char *cluster = pull_cfg_str(cfg, "cluster");
    char start[32], delim[32], clusters[160];
    const char *argv[24];
    long limit_ms;
    int n = 0;

    sacct_time(since, start, sizeof start);
    snprintf(delim, sizeof delim, "--delimiter=%c", SLURM_DELIM);
    /* env(1) sets the time zone and format for sacct alone. */
    argv[n++] = "env";
    argv[n++] = "TZ=UTC";
    argv[n++] = "SLURM_TIME_FORMAT=%s";
    argv[n++] = sacct;
    argv[n++] = "-a";
    argv[n++] = "-X";
    if (json) {
        argv[n++] = "--json";
    } else {
        argv[n++] = "-P";
        argv[n++] = "-n";
        argv[n++] = delim;
        argv[n++] = "--noconvert";
        argv[n++] = "--format=" SLURM_SACCT_FORMAT;
    }
    argv[n++] = "-S";
    argv[n++] = start;
    argv[n++] = "-E";
    argv[n++] = "now";
    if (cluster) {
        snprintf(clusters, sizeof clusters, "--clusters=%s", cluster);
        argv[n++] = clusters;
    }
    argv[n] = NULL;
    /* A test run's overall limit bounds the command too. */
    limit_ms =
        pull_deadline_clip_ms((long)cfg_int(cfg, "timeout_s", SLURM_DEFAULT_TIMEOUT_S) * 1000L);
    if (limit_ms <= 0) {
        snprintf(err, errlen, "no time was left to run %s", argv[0]);
        return -1;
    }
    return runcmd(argv, SLURM_MAX_BODY, (int)((limit_ms + 999) / 1000), out, len, err, errlen);
}

static int get_restd(const json_t *cfg, int64_t since, char **out, size_t *len, char *err,
                     size_t errlen)
{
    const char *base = pull_cfg_str(cfg, "slurmrestd_url"), *ver = pull_cfg_str(cfg, "api_version");
    char url[2400], user[300], token[4200];
    const char *headers[3] = {user, token, NULL};
    struct httpget_opts o;
    long status = 0;

    pull_http_opts(cfg, &o, SLURM_MAX_BODY);
    o.bearer = NULL;
    o.timeout_s = cfg_int(cfg, "timeout_s", SLURM_DEFAULT_TIMEOUT_S);
    snprintf(user, sizeof user, "X-SLURM-USER-NAME: %s",
             pull_cfg_str(cfg, "user") ? pull_cfg_str(cfg, "user") : "");
    snprintf(token, sizeof token, "X-SLURM-USER-TOKEN: %s",
             pull_cfg_str(cfg, "token") ? pull_cfg_str(cfg, "token") : "");
    o.headers = headers;
    snprintf(url, sizeof url, "%s%sslurm/%s/jobs?update_time=%lld", base,
             base[strlen(base) - 1] == '/' ? "" : "/", ver ? ver : SLURM_DEFAULT_API,
             (long long)since);
    if (httpget(url, &o, out, len, &status, err, errlen) != 0)
        return -1;
    if (status < 200 || status > 299) {
        struct slurm_jobs l;
        char why[SLURM_ERR_LEN] = "";
        /* slurmrestd explains itself in an "errors" list. */
        if (slurm_parse_json(*out, *len, &l, why, sizeof why) == GI_OK)
            slurm_jobs_free(&l);
        snprintf(err, errlen, "slurmrestd answered HTTP %ld%s%s", status, why[0] ? ": " : "", why);
        free(*out);
        *out = NULL;
        return -1;
    }
    return 0;
}

static const char *opt(const char *s) { return s && *s ? s : NULL; }

/* Stores the jobs of one parsed part of a listing in the open
 * transaction. */
static int store_part(struct store_slurm_tx *tx, int64_t source_id, const char *cluster,
                      const struct slurm_jobs *l, struct store_slurm_result *sr)
{
    struct store_slurm_job *jobs = calloc(l->n + 1, sizeof *jobs);
    struct store_slurm_node *nodes;
    size_t nn = 0, k = 0;
    int rc;

    for (size_t i = 0; i < l->n; i++)
        nn += l->items[i].nnodes;
    nodes = calloc(nn + 1, sizeof *nodes);
    if (!jobs || !nodes) {
        free(jobs);
        free(nodes);
        return GI_INTERNAL;
    }
    for (size_t i = 0; i < l->n; i++) {
        const struct slurm_job *j = &l->items[i];
        struct store_slurm_node *first = &nodes[k];
        for (size_t d = 0; d < j->nnodes; d++)
            nodes[k++] = (struct store_slurm_node){
                .name = j->nodes[d].name, .nidx = j->nodes[d].nidx, .idx = j->nodes[d].idx};
        jobs[i] = (struct store_slurm_job){.cluster = opt(j->cluster),
                                           .job_id = j->id,
                                           .user = opt(j->user),
                                           .account = opt(j->account),
                                           .partition = opt(j->partition),
                                           .qos = opt(j->qos),
                                           .name = opt(j->name),
                                           .state = opt(j->state),
                                           .nodelist = opt(j->nodelist),
                                           .gpu_type = opt(j->gpu_type),
                                           .job_id_raw = j->id_raw,
                                           .submit = j->submit,
                                           .start = j->start,
                                           .end = j->end,
                                           .elapsed = j->elapsed,
                                           .gpus = j->gpus,
                                           .gpu_util_sum = j->gpu_util_sum,
                                           .gpu_mem_mib = j->gpu_mem_mib,
                                           .nodes = first,
                                           .nnodes = j->nnodes};
    }
    rc = store_slurm_add(tx, source_id, cluster, jobs, l->n, sr);
    free(jobs);
    free(nodes);
    return rc;
}

/* Parses and stores the listing: JSON at once, --parsable2 in parts of
 * whole lines, so that the parsed jobs held at a time stay bounded. */
static int parse_and_store(struct store_slurm_tx *tx, int64_t source_id, const char *cluster,
                           const char *body, size_t len, bool json, struct store_slurm_result *sr,
                           char *err, size_t errlen)
{
    size_t skipped = 0;
    char first[SLURM_ERR_LEN] = "";
    int rc = GI_OK;

    for (size_t pos = 0; rc == GI_OK && (pos < len || (json && pos == 0));) {
        size_t end = json ? len : pos + SLURM_PART_BYTES;
        struct slurm_jobs l;
        const char *nl;
        if (end >= len)
            end = len;
        else if ((nl = memchr(body + end, '\n', len - end)) != NULL)
            end = (size_t)(nl - body) + 1;
        else
            end = len;
        rc = json ? slurm_parse_json(body, len, &l, err, errlen)
                  : slurm_parse_parsable(body + pos, end - pos, SLURM_DELIM, &l, err, errlen);
        if (rc != GI_OK)
            return rc;
        skipped += l.skipped;
        if (!first[0])
            gi_strlcpy(first, l.warning, sizeof first);
        rc = store_part(tx, source_id, cluster, &l, sr);
        slurm_jobs_free(&l);
        if (rc != GI_OK)
            snprintf(err, errlen, "storing the jobs failed");
        pos = end;
        if (json)
            break;
    }
    if (rc == GI_OK && skipped)
        gi_warn("slurm: %zu jobs or rows left out; the first: %s", skipped, first);
    return rc;
}

/* A dry pull: parses the listing and counts its jobs and the GPUs they
 * were allocated, storing nothing. */
static int count_jobs(const char *body, size_t len, bool json, struct pull_result *res)
{
    struct slurm_jobs l;
    int rc = json ? slurm_parse_json(body, len, &l, res->error, sizeof res->error)
                  : slurm_parse_parsable(body, len, SLURM_DELIM, &l, res->error, sizeof res->error);

    if (rc != GI_OK)
        return -1;
    res->jobs = (int64_t)l.n;
    res->hosts = 0;
    for (size_t i = 0; i < l.n; i++)
        if (l.items[i].gpus > 0)
            res->gpus += l.items[i].gpus;
    if (l.skipped > 0)
        gi_strlcpy(res->warning, l.warning, sizeof res->warning);
    res->warnings = (int64_t)l.skipped;
    slurm_jobs_free(&l);
    return 0;
}

int pull_run_slurm(struct store *st, int64_t source_id, const json_t *cfg, const char *cluster,
                   struct pull_result *res)
{
    struct store_slurm_result sr = {0};
    struct store_slurm_tx *tx = NULL;
    const char *format = pull_cfg_str(cfg, "format");
    bool restd = pull_cfg_str(cfg, "slurmrestd_url") != NULL;
    bool json = restd || (format && strcmp(format, "json") == 0);
    int64_t now = gi_now(), cursor = -1, since;
    size_t len = 0;
    char *body = NULL;
    int rc = -1, prc;

    if (store_slurm_cursor(st, source_id, &cursor) != GI_OK) {
        snprintf(res->error, sizeof res->error, "reading where the last pull ended failed");
        return -1;
    }
    since = cursor > 0 ? cursor - cfg_int(cfg, "overlap_s", SLURM_DEFAULT_OVERLAP_S)
                       : now - cfg_int(cfg, "lookback_h", SLURM_DEFAULT_LOOKBACK_H) * 3600;
    if ((restd ? get_restd(cfg, since, &body, &len, res->error, sizeof res->error)
               : run_sacct(cfg, since, json, &body, &len, res->error, sizeof res->error)) != 0)
        goto cleanup;
    if (res->dry) {
        rc = count_jobs(body, len, json, res);
        goto cleanup;
    }
    if (store_slurm_begin(st, &tx) != GI_OK) {
        snprintf(res->error, sizeof res->error, "storing the jobs failed");
        goto cleanup;
    }
    prc = parse_and_store(
        tx, source_id, pull_cfg_str(cfg, "cluster") ? pull_cfg_str(cfg, "cluster") : opt(cluster),
        body, len, json, &sr, res->error, sizeof res->error);
    if (store_slurm_end(tx, source_id, now, prc) != GI_OK) {
        if (prc == GI_OK)
            snprintf(res->error, sizeof res->error, "storing the jobs failed");
        goto cleanup;
    }
    res->gpus = sr.gpus_matched;
    res->hosts = 0;
    rc = 0;
cleanup:
    free(body);
    return rc;
}
