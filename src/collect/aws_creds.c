/* The credentials of an aws pull source; see aws_creds.h. */
#include "collect/aws_creds.h"
#include "collect/cloudhttp.h"
#include "collect/httpget.h"
#include "collect/pull.h"
#include "core/status.h"
#include "core/util.h"

#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#define STS_VERSION "2011-06-15"
#define IMDS_TOKEN_TTL_S "21600"
#define IMDS_MAX_BODY (64u * 1024u)
#define IMDS_TOKEN_LEN 256
#define ROLE_NAME_LEN 128

bool aws_auth_due(const struct aws_auth *a, int64_t now)
{
    return a->temporary && a->cur.expires > 0 && now >= a->cur.expires - AWS_CREDS_REFRESH_S;
}

void aws_auth_clear(struct aws_auth *a) { explicit_bzero(&a->cur, sizeof a->cur); }

void aws_sts_region(const char *url, char *region, size_t len)
{
    const char *h = strstr(url, "://"), *dot, *end;
    size_t n;

    gi_strlcpy(region, "us-east-1", len);
    if (!h)
        return;
    h += 3;
    end = h + strcspn(h, "/:?#");
    if (strncmp(h, "sts.", 4) != 0)
        return;
    h += 4;
    dot = memchr(h, '.', (size_t)(end - h));
    if (!dot || (strncmp(dot, ".amazonaws.com", 14) != 0))
        return;
    n = (size_t)(dot - h);
    if (n == 0 || n >= len || n > 32 || strspn(h, "abcdefghijklmnopqrstuvwxyz0123456789-") < n)
        return;
    memcpy(region, h, n);
    region[n] = '\0';
}

/* Trims trailing white space (and line breaks) off s. */
static void rtrim(char *s)
{
    size_t n = strlen(s);
    while (n > 0 && (s[n - 1] == '\n' || s[n - 1] == '\r' || s[n - 1] == ' ' || s[n - 1] == '\t'))
        s[--n] = '\0';
}

/* True when s is made of letters, digits and the characters of `more`. */
static bool word_ok(const char *s, const char *more)
{
    if (!*s)
        return false;
    for (; *s; s++)
        if (!((*s >= 'a' && *s <= 'z') || (*s >= 'A' && *s <= 'Z') || (*s >= '0' && *s <= '9') ||
              strchr(more, *s)))
            return false;
    return true;
}

/* One GET of the metadata service with its session token. 0 with *body
 * (HTTP 200), else -1 with err. */
static int imds_get(const json_t *cfg, const char *url, const char *token, char **body, size_t *len,
                    char *err, size_t errlen)
{
    char hdr[IMDS_TOKEN_LEN + 40];
    const char *headers[2] = {hdr, NULL};
    struct httpget_opts o;
    long status = 0;
    char why[300];

    snprintf(hdr, sizeof hdr, "X-aws-ec2-metadata-token: %s", token);
    pull_http_opts(cfg, &o, IMDS_MAX_BODY);
    o.bearer = NULL;
    o.headers = headers;
    if (httpget(url, &o, body, len, &status, why, sizeof why) != 0) {
        gi_fmt(err, errlen, "the instance metadata service did not answer %s (%s)", url, why);
        return -1;
    }
    if (status != 200) {
        snprintf(
            err, errlen, "the instance metadata service answered %s with HTTP %ld%s", url, status,
            status == 404 ? ": the instance has no IAM role (attach an instance profile)" : "");
        free(*body);
        *body = NULL;
        return -1;
    }
    return 0;
}

/* The instance profile's temporary keys from the metadata service. */
static int from_instance(const json_t *cfg, struct aws_creds *out, char *err, size_t errlen)
{
    const char *ttl[2] = {"X-aws-ec2-metadata-token-ttl-seconds: " IMDS_TOKEN_TTL_S, NULL};
    char base[2100], url[2400], token[IMDS_TOKEN_LEN] = "", role[ROLE_NAME_LEN] = "", why[300];
    char pe[AWS_ERR_LEN];
    struct httppost_opts po = {.headers = ttl, .max_bytes = IMDS_MAX_BODY, .method = "PUT"};
    char *body = NULL;
    size_t len = 0;
    long status = 0;
    int truncated = 0, rc = -1;

    cloudhttp_base_url(pull_cfg_str(cfg, "imds_endpoint"), AWS_IMDS_DEFAULT, base, sizeof base);
    po.timeout_s = json_is_integer(json_object_get(cfg, "timeout_s"))
                       ? (long)json_integer_value(json_object_get(cfg, "timeout_s"))
                       : 10;
    snprintf(url, sizeof url, "%s/latest/api/token", base);
    if (httppost(url, &po, "", 0, &body, &len, &truncated, &status, why, sizeof why) != 0) {
        gi_fmt(err, errlen,
               "the instance metadata service did not answer %s (%s); credentials \"instance\" "
               "needs gpuinv on an EC2 instance with IMDSv2 (a hop limit of 2 from a container)",
               url, why);
        goto cleanup;
    }
    if (status != 200 || truncated || !gi_strlcpy(token, body, sizeof token)) {
        gi_fmt(err, errlen,
               "the instance metadata service refused a session token at %s (HTTP %ld)", url,
               status);
        goto cleanup;
    }
    rtrim(token);
    if (!word_ok(token, "-_=+/.")) {
        gi_fmt(err, errlen, "the instance metadata service gave an unusable session token");
        goto cleanup;
    }
    free(body);
    body = NULL;
    snprintf(url, sizeof url, "%s/latest/meta-data/iam/security-credentials/", base);
    if (imds_get(cfg, url, token, &body, &len, err, errlen) != 0)
        goto cleanup;
    /* One role per instance profile: the first line names it. */
    body[strcspn(body, "\r\n")] = '\0';
    if (!gi_strlcpy(role, body, sizeof role) || !word_ok(role, "+=,.@_-")) {
        gi_fmt(err, errlen, "the instance metadata service names no usable IAM role at %s", url);
        goto cleanup;
    }
    free(body);
    body = NULL;
    snprintf(url, sizeof url, "%s/latest/meta-data/iam/security-credentials/%s", base, role);
    if (imds_get(cfg, url, token, &body, &len, err, errlen) != 0)
        goto cleanup;
    if (aws_parse_imds_creds(body, len, out, pe, sizeof pe) != GI_OK) {
        gi_fmt(err, errlen, "the instance metadata service's keys for role %s: %s", role, pe);
        goto cleanup;
    }
    rc = 0;
cleanup:
    if (body)
        explicit_bzero(body, len);
    free(body);
    explicit_bzero(token, sizeof token);
    return rc;
}

/* The config's keys. */
static int from_keys(const json_t *cfg, struct aws_creds *out, char *err, size_t errlen)
{
    const char *id = pull_cfg_str(cfg, "access_key_id"),
               *sec = pull_cfg_str(cfg, "secret_access_key"),
               *tok = pull_cfg_str(cfg, "session_token");

    memset(out, 0, sizeof *out);
    if (!id || !sec || !gi_strlcpy(out->key_id, id, sizeof out->key_id) ||
        !gi_strlcpy(out->secret, sec, sizeof out->secret) ||
        (tok && !gi_strlcpy(out->token, tok, sizeof out->token))) {
        gi_fmt(err, errlen,
               "the access key, its secret or the session token is missing or too "
               "long");
        explicit_bzero(out, sizeof *out);
        return -1;
    }
    return 0;
}

/* STS AssumeRole of the config's role_arn with the base credentials. */
static int assume(const json_t *cfg, const struct aws_creds *base, struct aws_creds *out, char *err,
                  size_t errlen)
{
    const char *arn = pull_cfg_str(cfg, "role_arn"), *ext = pull_cfg_str(cfg, "external_id"),
               *name = pull_cfg_str(cfg, "role_session_name");
    char url[2100], region[40], sigv4[80], userpwd[AWS_KEY_ID_LEN + AWS_SECRET_LEN + 2];
    char token_hdr[AWS_SESSION_TOKEN_LEN + 32], form[8192] = "", why[400], code[64], msg[300];
    const char *headers[3] = {"Content-Type: application/x-www-form-urlencoded; charset=utf-8",
                              NULL, NULL};
    struct httpget_opts o;
    char *body = NULL;
    size_t len = 0;
    long status = 0;
    int rc = -1;

    gi_strlcpy(url,
               pull_cfg_str(cfg, "sts_endpoint") ? pull_cfg_str(cfg, "sts_endpoint")
                                                 : AWS_STS_DEFAULT,
               sizeof url);
    aws_sts_region(url, region, sizeof region);
    snprintf(sigv4, sizeof sigv4, "aws:amz:%s:sts", region);
    snprintf(userpwd, sizeof userpwd, "%s:%s", base->key_id, base->secret);
    if (base->token[0]) {
        snprintf(token_hdr, sizeof token_hdr, "X-Amz-Security-Token: %s", base->token);
        headers[1] = token_hdr;
    }
    if (!cloudhttp_form_add(form, sizeof form, "Action", "AssumeRole") ||
        !cloudhttp_form_add(form, sizeof form, "Version", STS_VERSION) ||
        !cloudhttp_form_add(form, sizeof form, "RoleArn", arn) ||
        !cloudhttp_form_add(form, sizeof form, "RoleSessionName", name ? name : "gpuinv") ||
        !cloudhttp_form_add(form, sizeof form, "DurationSeconds", "3600") ||
        (ext && !cloudhttp_form_add(form, sizeof form, "ExternalId", ext))) {
        gi_fmt(err, errlen, "assuming role %.200s: the request is too long", arn);
        goto cleanup;
    }
    pull_http_opts(cfg, &o, 1u << 20);
    o.bearer = NULL;
    o.headers = headers;
    o.post_form = form;
    o.aws_sigv4 = sigv4;
    o.userpwd = userpwd;
    if (cloudhttp_get(url, &o, &body, &len, &status, why, sizeof why) != 0) {
        gi_fmt(err, errlen, "assuming role %.200s: STS at %.200s did not answer (%s)", arn, url,
               why);
        goto cleanup;
    }
    if (status < 200 || status > 299) {
        bool doc = aws_parse_error(body, len, code, sizeof code, msg, sizeof msg);
        gi_fmt(err, errlen, "assuming role %.200s: STS refused (HTTP %ld%s%s%s%s)%s", arn, status,
               doc ? ", " : "", doc && code[0] ? code : "", doc && msg[0] ? ": " : "",
               doc ? msg : "",
               strcmp(code, "AccessDenied") == 0
                   ? "; the role's trust policy must let this principal sts:AssumeRole (with "
                     "the external id given), and the principal needs sts:AssumeRole on the role"
                   : "");
        goto cleanup;
    }
    if (aws_parse_assume_role(body, len, out, why, sizeof why) != GI_OK) {
        gi_fmt(err, errlen, "assuming role %.200s: %s", arn, why);
        goto cleanup;
    }
    rc = 0;
cleanup:
    if (body)
        explicit_bzero(body, len);
    free(body);
    explicit_bzero(userpwd, sizeof userpwd);
    explicit_bzero(token_hdr, sizeof token_hdr);
    return rc;
}

int aws_auth_get(struct aws_auth *a, char *err, size_t errlen)
{
    const char *mode = pull_cfg_str(a->cfg, "credentials");
    bool instance = mode && strcmp(mode, "instance") == 0;
    struct aws_creds base;
    int rc;

    aws_auth_clear(a);
    rc = instance ? from_instance(a->cfg, &base, err, errlen)
                  : from_keys(a->cfg, &base, err, errlen);
    if (rc == 0 && pull_cfg_str(a->cfg, "role_arn"))
        rc = assume(a->cfg, &base, &a->cur, err, errlen);
    else if (rc == 0)
        a->cur = base;
    a->temporary = instance || pull_cfg_str(a->cfg, "role_arn") != NULL;
    explicit_bzero(&base, sizeof base);
    if (rc != 0)
        aws_auth_clear(a);
    return rc;
}
