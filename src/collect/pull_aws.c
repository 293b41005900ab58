/* Pulling AWS EC2: DescribeInstances in each configured region (paged by
 * NextToken), GPU model and count per instance type from
 * DescribeInstanceTypes gpuInfo (cached for the pull), every request
 * signed with Signature Version 4 by libcurl (CURLOPT_AWS_SIGV4). Each
 * region read completely is stored as one listing (store_cloud_sync); a
 * region that fails stores nothing, so it marks nothing gone, and the
 * other regions still are stored. A dry pull (a test of the source) reads
 * everything and stores nothing. Throttling (RequestLimitExceeded, HTTP
 * 503) is retried a bounded number of times after Retry-After. */
#include "collect/httpget.h"
#include "collect/pull.h"
#include "collect/pull_cloud.h"
#include "collect/curlso.h"
#include "core/log.h"
#include "core/status.h"
#include "core/util.h"
#include "parse/aws.h"
#include "store/store.h"

#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>

#define AWS_API_VERSION "2016-11-15"
#define AWS_MAX_RETRIES 4
#define AWS_MAX_WAIT_S 30
#define AWS_MAX_PAGES 10000
/* Instance types asked of DescribeInstanceTypes in one request. */
#define AWS_TYPES_PER_CALL 50

/* One region's signed-request settings. */
struct aws_ctx {
    const json_t *cfg;
    const char *region;
    char url[2200];
    char sigv4[128];
    char userpwd[8400];
    char token_hdr[4200];
    struct aws_types types; /* the GPUs of every type read in this pull */
    bool dry;               /* a test of the source: store nothing */
};

/* Appends "&<name>=<value>" (the value percent-encoded) to the form. */
static int form_add(char *form, size_t cap, const char *name, const char *value)
{
    size_t n = strlen(form);
    char *enc = curlso ? curlso->easy_escape(NULL, value, 0) : NULL;
    int w;

    if (!enc)
        return -1;
    w = snprintf(form + n, cap - n, "&%s=%s", name, enc);
    curlso->free(enc);
    return w < 0 || (size_t)w >= cap - n ? -1 : 0;
}

/* Why an answer failed, for the source's error: the EC2 error code and
 * message when the body is an error document. */
static void explain(const char *body, size_t len, long status, char *code, size_t clen, char *why,
                    size_t wlen)
{
    char msg[200];

    if (aws_parse_error(body, len, code, clen, msg, sizeof msg))
        snprintf(why, wlen, "HTTP %ld, %s: %s", status, code[0] ? code : "(no code)", msg);
    else
        snprintf(why, wlen, "HTTP %ld", status);
}

/* One signed POST of the form; retries throttling. 0 with *body (2xx),
 * or -1 with err naming the region and the EC2 error. */
static int aws_call(struct aws_ctx *x, const char *form, char **body, size_t *len, char *err,
                    size_t errlen)
{
    const char *headers[3] = {"Content-Type: application/x-www-form-urlencoded; charset=utf-8",
                              NULL, NULL};
    struct httpget_opts o;
    long status = 0, retry_after = 0;
    char code[64], why[400];

    if (x->token_hdr[0])
        headers[1] = x->token_hdr;
    for (int attempt = 0;; attempt++) {
        pull_http_opts(x->cfg, &o, AWS_MAX_BODY);
        o.bearer = NULL;
        o.headers = headers;
        o.post_form = form;
        o.aws_sigv4 = x->sigv4;
        o.userpwd = x->userpwd;
        o.retry_after = &retry_after;
        if (httpget(x->url, &o, body, len, &status, why, sizeof why) != 0) {
            snprintf(err, errlen, "%s: %s", x->region, why);
            return -1;
        }
        if (status >= 200 && status <= 299)
            return 0;
        explain(*body, *len, status, code, sizeof code, why, sizeof why);
        free(*body);
        *body = NULL;
        if ((strcmp(code, "RequestLimitExceeded") == 0 || status == 503 || status == 429) &&
            attempt < AWS_MAX_RETRIES && retry_after <= AWS_MAX_WAIT_S) {
            struct timespec ts = {.tv_sec = retry_after > 0 ? retry_after : 1L << attempt};
            gi_warn("aws %s: throttled (%s); trying again in %ld s", x->region, why,
                    (long)ts.tv_sec);
            nanosleep(&ts, NULL);
            continue;
        }
        if (strcmp(code, "AuthFailure") == 0 || strcmp(code, "RequestExpired") == 0 ||
            strcmp(code, "ExpiredToken") == 0 || strcmp(code, "UnauthorizedOperation") == 0 ||
            strcmp(code, "InvalidClientTokenId") == 0 || strcmp(code, "SignatureDoesNotMatch") == 0)
            snprintf(err, errlen, "%s: the credentials were refused (%s)", x->region, why);
        else if (attempt > 0 && (strcmp(code, "RequestLimitExceeded") == 0 || status == 503))
            snprintf(err, errlen, "%s: still throttled after %d tries (%s)", x->region, attempt + 1,
                     why);
        else
            snprintf(err, errlen, "%s: %s", x->region, why);
        return -1;
    }
}

static const struct aws_gpu_type *type_find(const struct aws_types *t, const char *type)
{
    for (size_t i = 0; i < t->n; i++)
        if (strcmp(t->items[i].type, type) == 0)
            return &t->items[i];
    return NULL;
}

/* Reads the GPUs of the instance types in v[0..n) not yet known, by a
 * filter on instance-type (an unknown name matches nothing, where
 * InstanceType.N would fail the whole request). */
static int fetch_types(struct aws_ctx *x, const struct cloud_instance *v, size_t n, char *err,
                       size_t errlen)
{
    const char **want = calloc(n + 1, sizeof *want);
    size_t nwant = 0;
    int rc = 0;

    if (!want) {
        snprintf(err, errlen, "out of memory");
        return -1;
    }
    for (size_t i = 0; i < n; i++) {
        bool dup = !v[i].machine_type[0] || type_find(&x->types, v[i].machine_type);
        for (size_t k = 0; !dup && k < nwant; k++)
            dup = strcmp(want[k], v[i].machine_type) == 0;
        if (!dup)
            want[nwant++] = v[i].machine_type;
    }
    for (size_t at = 0; rc == 0 && at < nwant; at += AWS_TYPES_PER_CALL) {
        char token[AWS_TOKEN_LEN] = "";
        int pages = 0;
        do {
            char form[16384] = "Action=DescribeInstanceTypes&Version=" AWS_API_VERSION;
            char name[48], *body = NULL;
            size_t len = 0;
            bool bad = form_add(form, sizeof form, "Filter.1.Name", "instance-type") != 0;
            for (size_t k = at; !bad && k < nwant && k < at + AWS_TYPES_PER_CALL; k++) {
                snprintf(name, sizeof name, "Filter.1.Value.%zu", k - at + 1);
                bad = form_add(form, sizeof form, name, want[k]) != 0;
            }
            if (!bad && token[0])
                bad = form_add(form, sizeof form, "NextToken", token) != 0;
            if (bad) {
                snprintf(err, errlen, "%s: the instance type request is too long", x->region);
                rc = -1;
                break;
            }
            if ((rc = aws_call(x, form, &body, &len, err, errlen)) != 0)
                break;
            if (aws_parse_types(body, len, &x->types, err, errlen) != GI_OK) {
                char why[AWS_ERR_LEN];
                gi_strlcpy(why, err, sizeof why);
                snprintf(err, errlen, "%s: DescribeInstanceTypes: %s", x->region, why);
                rc = -1;
            }
            gi_strlcpy(token, x->types.next_token, sizeof token);
            free(body);
        } while (rc == 0 && token[0] && ++pages < AWS_MAX_PAGES);
    }
    free(want);
    return rc;
}

/* One region: every page of DescribeInstances, the types' GPUs, then one
 * store_cloud_sync. */
static int pull_region(struct store *st, int64_t sid, struct aws_ctx *x,
                       struct cloud_sync_result *r, char *err, size_t errlen)
{
    struct aws_instances all = {0};
    char token[AWS_TOKEN_LEN] = "";
    int pages = 0, rc = 0, st_rc;
    char max_results[24] = "";

    if (json_is_integer(json_object_get(x->cfg, "page_size")))
        snprintf(max_results, sizeof max_results, "%lld",
                 (long long)json_integer_value(json_object_get(x->cfg, "page_size")));
    do {
        char form[8192] = "Action=DescribeInstances&Version=" AWS_API_VERSION;
        char *body = NULL, perr[AWS_ERR_LEN];
        size_t len = 0;
        if (max_results[0])
            form_add(form, sizeof form, "MaxResults", max_results);
        if (token[0] && form_add(form, sizeof form, "NextToken", token) != 0) {
            snprintf(err, errlen, "%s: nextToken too long", x->region);
            rc = -1;
            break;
        }
        if ((rc = aws_call(x, form, &body, &len, err, errlen)) != 0)
            break;
        if (aws_parse_instances(body, len, x->region, &all, perr, sizeof perr) != GI_OK) {
            snprintf(err, errlen, "%s: DescribeInstances: %s", x->region, perr);
            rc = -1;
        }
        gi_strlcpy(token, all.next_token, sizeof token);
        free(body);
    } while (rc == 0 && token[0] && ++pages < AWS_MAX_PAGES);
    if (rc == 0 && token[0]) {
        snprintf(err, errlen, "%s: more than %d pages", x->region, AWS_MAX_PAGES);
        rc = -1;
    }
    if (rc == 0)
        rc = fetch_types(x, all.items, all.n, err, errlen);
    for (size_t i = 0; rc == 0 && i < all.n; i++) {
        struct cloud_instance *v = &all.items[i];
        const struct aws_gpu_type *t = type_find(&x->types, v->machine_type);
        if (!t) {
            /* Counted by the store in unknown_types. */
            gi_warn("aws %s: instance %s has type '%s', which DescribeInstanceTypes does not "
                    "know: its GPUs are unknown",
                    x->region, v->instance_id, v->machine_type);
            continue;
        }
        v->gpu_count = t->count;
        v->gpu_memory_mib = t->memory_mib;
        gi_strlcpy(v->gpu_model, t->model, sizeof v->gpu_model);
    }
    if (rc == 0) {
        if (!x->dry)
            r->warnings += (int64_t)(all.warnings + all.skipped);
        st_rc = pull_cloud_listing(st, sid, "aws", x->region, all.items, all.n, NULL, 0, x->dry, r);
        if (st_rc != GI_OK) {
            snprintf(err, errlen, "%s: storing the listing failed: %s", x->region,
                     gi_status_name(st_rc));
            rc = -1;
        }
    }
    aws_instances_free(&all);
    return rc;
}

int pull_run_aws(struct store *st, int64_t source_id, const json_t *cfg, const char *cluster,
                 struct pull_result *res)
{
    const json_t *regions = json_object_get(cfg, "regions");
    const char *endpoint = pull_cfg_str(cfg, "endpoint"),
               *token = pull_cfg_str(cfg, "session_token");
    struct cloud_sync_result r = {0};
    struct aws_ctx x = {.cfg = cfg, .dry = res->dry};
    size_t failed = 0, i;
    json_t *reg;

    (void)cluster;
    snprintf(x.userpwd, sizeof x.userpwd, "%s:%s", pull_cfg_str(cfg, "access_key_id"),
             pull_cfg_str(cfg, "secret_access_key") ? pull_cfg_str(cfg, "secret_access_key") : "");
    if (token)
        snprintf(x.token_hdr, sizeof x.token_hdr, "X-Amz-Security-Token: %s", token);
    json_array_foreach(regions, i, reg) {
        char err[512];
        x.region = json_string_value(reg);
        snprintf(x.sigv4, sizeof x.sigv4, "aws:amz:%s:ec2", x.region);
        if (endpoint)
            snprintf(x.url, sizeof x.url, "%s", endpoint);
        else
            snprintf(x.url, sizeof x.url, "https://ec2.%s.amazonaws.com/", x.region);
        if (pull_region(st, source_id, &x, &r, err, sizeof err) != 0) {
            size_t n = strlen(res->error);
            failed++;
            snprintf(res->error + n, sizeof res->error - n, "%s%s", n ? "; " : "", err);
        }
    }
    aws_types_free(&x.types);
    explicit_bzero(x.userpwd, sizeof x.userpwd);
    explicit_bzero(x.token_hdr, sizeof x.token_hdr);
    res->gpus = r.gpus;
    res->hosts = r.instances;
    res->instances = r.instances;
    res->warnings = r.warnings + r.unknown_types;
    if (failed > 0)
        return -1;
    return 0;
}
