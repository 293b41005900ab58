/* Pull sources; see pull.h. Each kind is a config spec and a fetch
 * function that turns what the remote system says into observations; the
 * rest (grouping by host, ingest, status) is shared. */
#include "collect/deadline.h"
#include "collect/pull.h"
#include "collect/hostbatch.h"
#include "collect/httpget.h"
#include "core/log.h"
#include "core/observation.h"
#include "core/status.h"
#include "core/util.h"
#include "store/store.h"

#include <math.h>
#include <stdarg.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

/* Fetches observations for one source; fills err and returns -1 on failure. */
typedef int (*pull_fetch_fn)(const json_t *cfg, struct gi_obs_set *set, char *err, size_t errlen);

/* CFG_OBJECT: a JSON object whose contents the kind's own check
 * validates. CFG_MAP: an object of at most 256 entries, each text or a
 * whole number (push-back mappings). CFG_LIST: a list of names (min to
 * max of them). */
enum cfg_type { CFG_URL, CFG_STR, CFG_SECRET, CFG_BOOL, CFG_INT, CFG_OBJECT, CFG_MAP, CFG_LIST };
struct cfg_key {
    const char *name;
    enum cfg_type type;
    bool required;
    int64_t min, max;
};

#define COMMON_KEYS                                                                                \
    {"bearer_token", CFG_SECRET, false, 0, 0}, {"ca_file", CFG_STR, false, 0, 0},                  \
        {"insecure_skip_verify", CFG_BOOL, false, 0, 0},                                           \
    {                                                                                              \
        "timeout_s", CFG_INT, false, 1, 300                                                        \
    }

static const struct cfg_key prom_keys[] = {
    {"url", CFG_URL, true, 0, 0}, {"query", CFG_STR, false, 0, 0}, COMMON_KEYS, {NULL, 0, 0, 0, 0}};
static const struct cfg_key dcgm_keys[] = {
    {"url", CFG_URL, true, 0, 0}, COMMON_KEYS, {NULL, 0, 0, 0, 0}};
/* habanalabs-exporter: hostname names the node when the exporter runs
 * outside Kubernetes (it has no host label). */
static const struct cfg_key habana_keys[] = {{"url", CFG_URL, true, 0, 0},
                                             {"hostname", CFG_STR, false, 0, 0},
                                             COMMON_KEYS,
                                             {NULL, 0, 0, 0, 0}};
static const struct cfg_key k8s_keys[] = {{"url", CFG_URL, true, 0, 0},
                                          {"page_size", CFG_INT, false, 1, 1000},
                                          COMMON_KEYS,
                                          {NULL, 0, 0, 0, 0}};
/* Asset managers: the API token is sent as that system expects it. */
#define ASSET_KEYS                                                                                 \
    {"url", CFG_URL, true, 0, 0}, {"token", CFG_SECRET, false, 0, 0},                              \
        {"page_size", CFG_INT, false, 1, 1000}, {"ca_file", CFG_STR, false, 0, 0},                 \
        {"insecure_skip_verify", CFG_BOOL, false, 0, 0},                                           \
    {                                                                                              \
        "timeout_s", CFG_INT, false, 1, 300                                                        \
    }
/* Push-back (collect/push_assets.c): push turns it on; the maps name the
 * remote's values for gpuinv's stages, data centers and racks. */
static const struct cfg_key netbox_keys[] = {{"site", CFG_STR, false, 0, 0},
                                             {"role", CFG_STR, false, 0, 0},
                                             {"device_role", CFG_STR, false, 0, 0},
                                             {"push", CFG_BOOL, false, 0, 0},
                                             {"push_statuses", CFG_MAP, false, 0, 0},
                                             {"push_sites", CFG_MAP, false, 0, 0},
                                             {"push_racks", CFG_MAP, false, 0, 0},
                                             ASSET_KEYS,
                                             {NULL, 0, 0, 0, 0}};
static const struct cfg_key snipeit_keys[] = {{"category", CFG_STR, false, 0, 0},
                                              {"status", CFG_STR, false, 0, 0},
                                              {"push", CFG_BOOL, false, 0, 0},
                                              {"push_status_ids", CFG_MAP, false, 0, 0},
                                              {"push_locations", CFG_MAP, false, 0, 0},
                                              ASSET_KEYS,
                                              {NULL, 0, 0, 0, 0}};

/* slurm: either sacct (path, default on PATH) or slurmrestd_url with
 * token and user; see pull_slurm.c. */
static const struct cfg_key slurm_keys[] = {{"cluster", CFG_STR, false, 0, 0},
                                            {"sacct", CFG_STR, false, 0, 0},
                                            {"format", CFG_STR, false, 0, 0},
                                            {"slurmrestd_url", CFG_URL, false, 0, 0},
                                            {"token", CFG_SECRET, false, 0, 0},
                                            {"user", CFG_STR, false, 0, 0},
                                            {"api_version", CFG_STR, false, 0, 0},
                                            {"overlap_s", CFG_INT, false, 0, 86400},
                                            {"lookback_h", CFG_INT, false, 1, 24 * 366},
                                            {"ca_file", CFG_STR, false, 0, 0},
                                            {"insecure_skip_verify", CFG_BOOL, false, 0, 0},
                                            {"timeout_s", CFG_INT, false, 1, 600},
                                            {NULL, 0, 0, 0, 0}};

/* aws: the regions listed (one DescribeInstances loop each), the
 * credentials (the access key, or the instance's; a role to assume with
 * them), and endpoint replacing https://ec2.<region>.amazonaws.com; see
 * pull_aws.c and aws_creds.h. */
static const struct cfg_key aws_keys[] = {
    {"regions", CFG_LIST, true, 1, 64},         {"credentials", CFG_STR, false, 0, 0},
    {"access_key_id", CFG_STR, false, 0, 0},    {"secret_access_key", CFG_SECRET, false, 0, 0},
    {"session_token", CFG_SECRET, false, 0, 0}, {"role_arn", CFG_STR, false, 0, 0},
    {"external_id", CFG_SECRET, false, 0, 0},   {"role_session_name", CFG_STR, false, 0, 0},
    {"sts_endpoint", CFG_URL, false, 0, 0},     {"imds_endpoint", CFG_URL, false, 0, 0},
    {"endpoint", CFG_URL, false, 0, 0},         {"page_size", CFG_INT, false, 5, 1000},
    {"ca_file", CFG_STR, false, 0, 0},          {"insecure_skip_verify", CFG_BOOL, false, 0, 0},
    {"timeout_s", CFG_INT, false, 1, 300},      {NULL, 0, 0, 0, 0}};

/* prometheus-generic: a Prometheus server (url) or an exporter
 * (exporter_url), read through a declared mapping; see pull_generic.c. */
static const struct cfg_key generic_keys[] = {{"url", CFG_URL, false, 0, 0},
                                              {"exporter_url", CFG_URL, false, 0, 0},
                                              {"mapping", CFG_OBJECT, true, 0, 0},
                                              COMMON_KEYS,
                                              {NULL, 0, 0, 0, 0}};

int pull_fetch_generic(const json_t *cfg, struct gi_obs_set *set, char *err, size_t errlen);
int pull_generic_config_check(const json_t *cfg, char *field, size_t flen, char *msg, size_t mlen);
/* Cloud sources: the credentials, and base URLs that replace the public
 * APIs' (for a proxy or a stand-in); see pull_gcp.c, pull_azure.c. */
#define CLOUD_KEYS                                                                                 \
    {"ca_file", CFG_STR, false, 0, 0}, {"insecure_skip_verify", CFG_BOOL, false, 0, 0},            \
    {                                                                                              \
        "timeout_s", CFG_INT, false, 1, 300                                                        \
    }
static const struct cfg_key gcp_keys[] = {{"project", CFG_STR, true, 0, 0},
                                          {"service_account_json", CFG_SECRET, false, 0, 0},
                                          {"access_token", CFG_SECRET, false, 0, 0},
                                          {"endpoint", CFG_URL, false, 0, 0},
                                          {"token_endpoint", CFG_URL, false, 0, 0},
                                          CLOUD_KEYS,
                                          {NULL, 0, 0, 0, 0}};
static const struct cfg_key azure_keys[] = {{"subscription_id", CFG_STR, true, 0, 0},
                                            {"tenant_id", CFG_STR, true, 0, 0},
                                            {"client_id", CFG_STR, true, 0, 0},
                                            {"client_secret", CFG_SECRET, false, 0, 0},
                                            {"endpoint", CFG_URL, false, 0, 0},
                                            {"login_endpoint", CFG_URL, false, 0, 0},
                                            CLOUD_KEYS,
                                            {NULL, 0, 0, 0, 0}};

int pull_fetch_prometheus(const json_t *cfg, struct gi_obs_set *set, char *err, size_t errlen);
int pull_fetch_dcgm(const json_t *cfg, struct gi_obs_set *set, char *err, size_t errlen);
int pull_fetch_habana(const json_t *cfg, struct gi_obs_set *set, char *err, size_t errlen);
/* A source that stores what it finds itself, rather than as GPU
 * observations (Kubernetes knows nodes and pods, not GPU identities). */
typedef int (*pull_run_fn)(struct store *st, int64_t source_id, const json_t *cfg,
                           const char *cluster, struct pull_result *res);
int pull_run_kubernetes(struct store *st, int64_t source_id, const json_t *cfg, const char *cluster,
                        struct pull_result *res);
int pull_run_slurm(struct store *st, int64_t source_id, const json_t *cfg, const char *cluster,
                   struct pull_result *res);
int pull_run_aws(struct store *st, int64_t source_id, const json_t *cfg, const char *cluster,
                 struct pull_result *res);
int pull_run_netbox(struct store *st, int64_t source_id, const json_t *cfg, const char *cluster,
                    struct pull_result *res);
int pull_run_snipeit(struct store *st, int64_t source_id, const json_t *cfg, const char *cluster,
                     struct pull_result *res);
int pull_run_gcp(struct store *st, int64_t source_id, const json_t *cfg, const char *cluster,
                 struct pull_result *res);
int pull_run_azure(struct store *st, int64_t source_id, const json_t *cfg, const char *cluster,
                   struct pull_result *res);

static const struct {
    const char *kind;
    const struct cfg_key *keys;
    pull_fetch_fn fetch;
    pull_run_fn run;
} kinds[] = {
    {"prometheus", prom_keys, pull_fetch_prometheus, NULL},
    {"dcgm-exporter", dcgm_keys, pull_fetch_dcgm, NULL},
    {"kubernetes", k8s_keys, NULL, pull_run_kubernetes},
    {"slurm", slurm_keys, NULL, pull_run_slurm},
    {"netbox", netbox_keys, NULL, pull_run_netbox},
    {"snipeit", snipeit_keys, NULL, pull_run_snipeit},
    {"prometheus-generic", generic_keys, pull_fetch_generic, NULL},
    {"habanalabs-exporter", habana_keys, pull_fetch_habana, NULL},
    {"aws", aws_keys, NULL, pull_run_aws},
    {"gcp", gcp_keys, NULL, pull_run_gcp},
    {"azure", azure_keys, NULL, pull_run_azure},
};

static int kind_index(const char *kind)
{
    for (size_t i = 0; kind && i < sizeof kinds / sizeof *kinds; i++)
        if (strcmp(kinds[i].kind, kind) == 0)
            return (int)i;
    return -1;
}

bool pull_kind_known(const char *kind) { return kind_index(kind) >= 0; }

const char *pull_cfg_str(const json_t *cfg, const char *key)
{
    const char *v = json_string_value(json_object_get(cfg, key));
    return v && *v ? v : NULL;
}

/* A key is secret by its name, or as a secret key of any kind. */
bool pull_config_secret(const char *key)
{
    if (strcmp(key, "bearer_token") == 0 || strcmp(key, "password") == 0 ||
        strcmp(key, "token") == 0)
        return true;
    for (size_t i = 0; i < sizeof kinds / sizeof *kinds; i++)
        for (const struct cfg_key *ck = kinds[i].keys; ck->name; ck++)
            if (ck->type == CFG_SECRET && strcmp(ck->name, key) == 0)
                return true;
    return false;
}

bool pull_config_target(const char *key)
{
    return strcmp(key, "url") == 0 || strcmp(key, "ca_file") == 0 ||
           strcmp(key, "insecure_skip_verify") == 0 || strcmp(key, "slurmrestd_url") == 0 ||
           strcmp(key, "exporter_url") == 0 || strcmp(key, "endpoint") == 0 ||
           strcmp(key, "token_endpoint") == 0 || strcmp(key, "login_endpoint") == 0 ||
           strcmp(key, "sts_endpoint") == 0 || strcmp(key, "imds_endpoint") == 0;
}

/* True when an http(s) URL carries user information ("user:pw@") in its
 * authority, the part between "://" and the first '/', '?' or '#'. */
static bool url_has_userinfo(const char *url)
{
    const char *a = strstr(url, "://");
    size_t n;

    if (a == NULL)
        return false;
    a += 3;
    n = strcspn(a, "/?#");
    return memchr(a, '@', n) != NULL;
}

static int bad(char *field, size_t flen, char *msg, size_t mlen, const char *key, const char *fmt,
               ...) __attribute__((format(printf, 6, 7)));

static int bad(char *field, size_t flen, char *msg, size_t mlen, const char *key, const char *fmt,
               ...)
{
    va_list ap;

    snprintf(field, flen, "config%s%s", key ? "." : "", key ? key : "");
    va_start(ap, fmt);
    vsnprintf(msg, mlen, fmt, ap);
    va_end(ap);
    return -1;
}

/* The slurm kind's settings that depend on each other: sacct or
 * slurmrestd_url (with token and user), and the output format. */
static int slurm_config_check(const json_t *cfg, char *field, size_t flen, char *msg, size_t mlen)
{
    const char *fmt = json_string_value(json_object_get(cfg, "format"));
    bool restd = json_is_string(json_object_get(cfg, "slurmrestd_url"));

    if (restd && json_is_string(json_object_get(cfg, "sacct")))
        return bad(field, flen, msg, mlen, "sacct",
                   "config.sacct and config.slurmrestd_url exclude each other: give one");
    if (restd && !json_is_string(json_object_get(cfg, "user")))
        return bad(field, flen, msg, mlen, "user",
                   "config.user is required with config.slurmrestd_url");
    if (fmt && strcmp(fmt, "parsable2") != 0 && strcmp(fmt, "json") != 0)
        return bad(field, flen, msg, mlen, "format", "config.format must be parsable2 or json");
    if (fmt && restd)
        return bad(field, flen, msg, mlen, "format",
                   "config.format applies to sacct only; slurmrestd answers JSON");
    return 0;
}

/* True when s is a cloud name or id fit for a URL path: letters, digits
 * and - _ . : only. */
static bool cloud_id_ok(const json_t *v)
{
    const char *s = json_string_value(v);

    if (s == NULL || *s == '\0' || strlen(s) > 128)
        return false;
    for (; *s; s++)
        if (!((*s >= 'a' && *s <= 'z') || (*s >= 'A' && *s <= 'Z') || (*s >= '0' && *s <= '9') ||
              *s == '-' || *s == '_' || *s == '.' || *s == ':'))
            return false;
    return true;
}

/* The gcp and azure kinds' settings that need more than a type. */
static int cloud_config_check(const char *kind, const json_t *cfg, char *field, size_t flen,
                              char *msg, size_t mlen)
{
    static const char *const ids[] = {"project", "subscription_id", "tenant_id", "client_id", NULL};
    const json_t *sa = json_object_get(cfg, "service_account_json");

    for (size_t i = 0; ids[i]; i++) {
        const json_t *v = json_object_get(cfg, ids[i]);
        if (json_is_string(v) && !cloud_id_ok(v))
            return bad(field, flen, msg, mlen, ids[i],
                       "config.%s must be an id of letters, digits and - _ . : (at most 128)",
                       ids[i]);
    }
    if (strcmp(kind, "gcp") != 0)
        return 0;
    if (json_is_string(sa) && json_is_string(json_object_get(cfg, "access_token")))
        return bad(field, flen, msg, mlen, "access_token",
                   "config.service_account_json and config.access_token exclude each other: "
                   "give one");
    if (json_is_string(sa)) {
        json_t *k = json_loads(json_string_value(sa), 0, NULL);
        bool ok = json_is_string(json_object_get(k, "client_email")) &&
                  json_is_string(json_object_get(k, "private_key"));
        json_decref(k);
        if (!ok)
            return bad(field, flen, msg, mlen, "service_account_json",
                       "config.service_account_json must be a service-account key: the JSON "
                       "file with client_email and private_key");
    }
    return 0;
}

/* True when s is n to max characters, each a letter, a digit or one of
 * more. */
static bool chars_ok(const char *s, size_t min, size_t max, const char *more)
{
    size_t n = strlen(s);

    if (n < min || n > max)
        return false;
    for (; *s; s++)
        if (!((*s >= 'a' && *s <= 'z') || (*s >= 'A' && *s <= 'Z') || (*s >= '0' && *s <= '9') ||
              strchr(more, *s)))
            return false;
    return true;
}

/* An IAM role ARN: arn:<partition>:iam::<12-digit account>:role/<path and
 * name>. */
static bool role_arn_ok(const char *s)
{
    size_t p;

    if (strncmp(s, "arn:", 4) != 0)
        return false;
    s += 4;
    p = strspn(s, "abcdefghijklmnopqrstuvwxyz-");
    if (p == 0 || strncmp(s + p, ":iam::", 6) != 0)
        return false;
    s += p + 6;
    if (strspn(s, "0123456789") != 12 || strncmp(s + 12, ":role/", 6) != 0)
        return false;
    s += 18;
    return chars_ok(s, 1, 512, "+=,.@_-/") && s[0] != '/' && s[strlen(s) - 1] != '/';
}

/* The aws kind's credentials: the access key (credentials "keys", the
 * default) or the instance's, and a role to assume with them. */
static int aws_config_check(const json_t *cfg, char *field, size_t flen, char *msg, size_t mlen)
{
    static const char *const keyed[] = {"access_key_id", "secret_access_key", "session_token",
                                        NULL};
    static const char *const role_only[] = {"external_id", "role_session_name", "sts_endpoint",
                                            NULL};
    const char *mode = pull_cfg_str(cfg, "credentials"), *arn = pull_cfg_str(cfg, "role_arn");
    const char *ext = pull_cfg_str(cfg, "external_id"),
               *rsn = pull_cfg_str(cfg, "role_session_name");
    bool instance = mode && strcmp(mode, "instance") == 0;

    if (mode && !instance && strcmp(mode, "keys") != 0)
        return bad(field, flen, msg, mlen, "credentials",
                   "config.credentials must be \"keys\" (the access key given) or \"instance\" "
                   "(the EC2 instance's role, from its metadata service)");
    for (size_t i = 0; instance && keyed[i]; i++)
        if (pull_cfg_str(cfg, keyed[i]))
            return bad(field, flen, msg, mlen, keyed[i],
                       "config.%s must not be given with config.credentials \"instance\": the "
                       "instance's role gives the keys",
                       keyed[i]);
    if (!instance && !pull_cfg_str(cfg, "access_key_id"))
        return bad(field, flen, msg, mlen, "access_key_id",
                   "config.access_key_id is required (or config.credentials \"instance\")");
    if (!instance && !pull_cfg_str(cfg, "secret_access_key"))
        return bad(field, flen, msg, mlen, "secret_access_key",
                   "config.secret_access_key is required with config.access_key_id");
    if (!instance && pull_cfg_str(cfg, "imds_endpoint"))
        return bad(field, flen, msg, mlen, "imds_endpoint",
                   "config.imds_endpoint applies to config.credentials \"instance\" only");
    if (!instance && (strchr(pull_cfg_str(cfg, "access_key_id"), ':') ||
                      !chars_ok(pull_cfg_str(cfg, "access_key_id"), 1, 127, "")))
        return bad(field, flen, msg, mlen, "access_key_id",
                   "config.access_key_id must be an access key id (letters and digits, like "
                   "AKIAIOSFODNN7EXAMPLE)");
    for (size_t i = 0; !arn && role_only[i]; i++)
        if (pull_cfg_str(cfg, role_only[i]))
            return bad(field, flen, msg, mlen, role_only[i],
                       "config.%s applies with config.role_arn only", role_only[i]);
    if (arn && !role_arn_ok(arn))
        return bad(field, flen, msg, mlen, "role_arn",
                   "config.role_arn must be an IAM role ARN, like "
                   "arn:aws:iam::123456789012:role/gpuinv-reader");
    if (rsn && !chars_ok(rsn, 2, 64, "+=,.@_-"))
        return bad(field, flen, msg, mlen, "role_session_name",
                   "config.role_session_name must be 2 to 64 letters, digits or + = , . @ _ -");
    if (ext && !chars_ok(ext, 2, 1224, "+=,.@:/_-"))
        return bad(field, flen, msg, mlen, "external_id",
                   "config.external_id must be 2 to 1224 letters, digits or + = , . @ : / _ -");
    return 0;
}

int pull_config_check(const char *kind, const json_t *cfg, char *field, size_t flen, char *msg,
                      size_t mlen)
{
    int k = kind_index(kind);
    const char *key;
    json_t *v;

    if (k < 0)
        return bad(field, flen, msg, mlen, NULL, "unknown source kind");
    if (!json_is_object(cfg))
        return bad(field, flen, msg, mlen, NULL, "config must be an object");
    json_object_foreach((json_t *)cfg, key, v) {
        const struct cfg_key *ck = kinds[k].keys;
        while (ck->name && strcmp(ck->name, key) != 0)
            ck++;
        if (ck->name == NULL)
            return bad(field, flen, msg, mlen, key, "config.%.40s is not a setting of a %s source",
                       key, kind);
        if (json_is_null(v))
            continue;
        switch (ck->type) {
        case CFG_URL:
            if (!json_is_string(v) ||
                (strncmp(json_string_value(v), "http://", 7) != 0 &&
                 strncmp(json_string_value(v), "https://", 8) != 0) ||
                json_string_length(v) > 2000 || !gi_text_ok(json_string_value(v)))
                return bad(field, flen, msg, mlen, key, "config.%s must be an http(s) URL", key);
            /* A password in the URL would be shown to every viewer. */
            if (url_has_userinfo(json_string_value(v)))
                return bad(field, flen, msg, mlen, key,
                           "config.%s must not carry credentials (user:password@); give them in "
                           "config.bearer_token, which is write-only",
                           key);
            break;
        case CFG_STR:
        case CFG_SECRET:
            if (!json_is_string(v) || json_string_length(v) > 4096 ||
                !gi_text_ok(json_string_value(v)))
                return bad(field, flen, msg, mlen, key, "config.%s must be text", key);
            break;
        case CFG_BOOL:
            if (!json_is_boolean(v))
                return bad(field, flen, msg, mlen, key, "config.%s must be true or false", key);
            break;
        case CFG_LIST:
            /* A list of names (AWS regions): letters, digits and '-'. */
            if (!json_is_array(v) || json_array_size(v) < (size_t)ck->min ||
                json_array_size(v) > (size_t)ck->max)
                return bad(field, flen, msg, mlen, key,
                           "config.%s must be a list of %lld to %lld names", key,
                           (long long)ck->min, (long long)ck->max);
            for (size_t i = 0; i < json_array_size(v); i++) {
                const char *s = json_string_value(json_array_get(v, i));
                size_t n = s ? strlen(s) : 0;
                if (n == 0 || n > 32 || strspn(s, "abcdefghijklmnopqrstuvwxyz0123456789-") != n)
                    return bad(field, flen, msg, mlen, key,
                               "config.%s[%zu] must be a name of lower-case letters, digits and "
                               "'-' (like us-east-1)",
                               key, i);
            }
            break;
        case CFG_INT:
            if (!json_is_integer(v) || json_integer_value(v) < ck->min ||
                json_integer_value(v) > ck->max)
                return bad(field, flen, msg, mlen, key,
                           "config.%s must be a whole number from "
                           "%lld to %lld",
                           key, (long long)ck->min, (long long)ck->max);
            break;
        case CFG_OBJECT:
            if (!json_is_object(v))
                return bad(field, flen, msg, mlen, key, "config.%s must be an object", key);
            break;
        case CFG_MAP: {
            const char *mk;
            json_t *mv;
            if (!json_is_object(v) || json_object_size(v) > 256)
                return bad(field, flen, msg, mlen, key,
                           "config.%s must be an object of at most 256 entries", key);
            json_object_foreach(v, mk, mv) {
                if (!gi_text_ok(mk) || strlen(mk) > 200 ||
                    !((json_is_string(mv) && json_string_length(mv) <= 200 &&
                       gi_text_ok(json_string_value(mv))) ||
                      json_is_integer(mv)))
                    return bad(field, flen, msg, mlen, key,
                               "config.%s: each entry must be text or a whole number", key);
            }
            break;
        }
        }
    }
    for (const struct cfg_key *ck = kinds[k].keys; ck->name; ck++) {
        const json_t *given = json_object_get(cfg, ck->name);
        if (ck->required && (given == NULL || json_is_null(given) ||
                             (json_is_string(given) && json_string_length(given) == 0)))
            return bad(field, flen, msg, mlen, ck->name, "config.%s is required", ck->name);
    }
    if (strcmp(kind, "slurm") == 0)
        return slurm_config_check(cfg, field, flen, msg, mlen);
    if (strcmp(kind, "prometheus-generic") == 0)
        return pull_generic_config_check(cfg, field, flen, msg, mlen);
    if (strcmp(kind, "aws") == 0)
        return aws_config_check(cfg, field, flen, msg, mlen);
    if (strcmp(kind, "gcp") == 0 || strcmp(kind, "azure") == 0)
        return cloud_config_check(kind, cfg, field, flen, msg, mlen);
    return 0;
}

/* Ingests a pulled observation set as one batch per reporting host, all
 * in one transaction; a dry pull only counts the hosts and GPUs. */
static int ingest_by_host(struct store *st, int64_t source_id, const char *source_name,
                          const char *cluster, const struct gi_obs_set *set,
                          struct pull_result *res)
{
    struct gi_batch *b = NULL;
    struct store_ingest_result *ir = NULL;
    char prefix[64];
    size_t n = 0;
    int rc;

    snprintf(prefix, sizeof prefix, "pull-%.40s", source_name);
    if (hostbatch_split(set, prefix, gi_now(), cluster, true, &b, &n) != 0)
        return GI_INTERNAL;
    if (res->dry) {
        res->hosts = (int64_t)n;
        for (size_t i = 0; i < n; i++)
            res->gpus += (int64_t)b[i].set.ngpus;
        if (set->nwarnings > 0)
            gi_strlcpy(res->warning, set->warning, sizeof res->warning);
        res->warnings = (int64_t)set->nwarnings;
        hostbatch_free(b, n);
        return GI_OK;
    }
    if (n > 0) {
        /* Readings the pull could not use are counted on the source. */
        b[0].set.nwarnings = set->nwarnings;
        memcpy(b[0].set.warning, set->warning, sizeof b[0].set.warning);
    }
    ir = calloc(n + 1, sizeof *ir);
    rc = ir ? store_ingest_many(st, source_id, b, n, ir) : GI_INTERNAL;
    /* A batch id names the source, host and second: a pull that lands in
     * the same second as another pull of this source (the scheduler's and
     * a manual run) finds its batches applied already, and counts the GPUs
     * they carry. */
    for (size_t i = 0; rc == GI_OK && i < n; i++) {
        res->hosts++;
        res->gpus += ir[i].duplicate ? (int64_t)b[i].set.ngpus : ir[i].gpus;
    }
    free(ir);
    hostbatch_free(b, n);
    return rc;
}

/* One pull of src into res (res->dry decides whether it stores). */
static void pull_once(struct store *st, const json_t *src, struct pull_result *res)
{
    const char *kind = json_string_value(json_object_get(src, "kind"));
    const char *name = json_string_value(json_object_get(src, "name"));
    const char *cluster = json_string_value(json_object_get(src, "cluster"));
    int64_t id = json_integer_value(json_object_get(src, "id"));
    struct gi_obs_set set = {0};
    int k = kind_index(kind), rc;

    res->instances = res->jobs = res->pods = -1;
    if (k < 0) {
        snprintf(res->error, sizeof res->error, "unknown source kind '%s'", kind ? kind : "");
    } else if (kinds[k].run) {
        res->ok = kinds[k].run(st, id, json_object_get(src, "config"), cluster, res) == 0;
    } else if (kinds[k].fetch(json_object_get(src, "config"), &set, res->error,
                              sizeof res->error) == 0) {
        rc = ingest_by_host(st, id, name ? name : "source", cluster, &set, res);
        if (rc == GI_OK)
            res->ok = true;
        else
            snprintf(res->error, sizeof res->error, "storing the pulled data failed: %s",
                     gi_status_name(rc));
    }
    gi_obs_free(&set);
}

void pull_run_source(struct store *st, const json_t *src, struct pull_result *res)
{
    const char *kind = json_string_value(json_object_get(src, "kind"));
    const char *name = json_string_value(json_object_get(src, "name"));
    int64_t id = json_integer_value(json_object_get(src, "id"));

    memset(res, 0, sizeof *res);
    pull_once(st, src, res);
    if (!res->ok)
        gi_warn("source %s (%s) failed: %s", name ? name : "?", kind ? kind : "?", res->error);
    if (store_source_record(st, id, res->ok ? NULL : res->error, res->gpus) != GI_OK)
        gi_warn("could not record the outcome of source %s", name ? name : "?");
}

void pull_test_source(struct store *st, const json_t *src, int64_t deadline_s,
                      struct pull_result *res)
{
    char why[sizeof res->error];

    memset(res, 0, sizeof *res);
    res->dry = true;
    pull_deadline_set(deadline_s);
    pull_once(st, src, res);
    if (!res->ok && pull_deadline_passed()) {
        gi_strlcpy(why, res->error, sizeof why);
        gi_fmt(res->error, sizeof res->error, "the test stopped at its overall limit of %lld s: %s",
               (long long)pull_deadline_seconds(), why);
    }
    pull_deadline_clear();
}

/* The API name of a config key type. */
static const char *type_name(enum cfg_type t)
{
    switch (t) {
    case CFG_URL:
        return "url";
    case CFG_STR:
        return "string";
    case CFG_SECRET:
        return "secret";
    case CFG_BOOL:
        return "bool";
    case CFG_INT:
        return "int";
    case CFG_OBJECT:
    case CFG_MAP:
        return "object";
    case CFG_LIST:
        return "list";
    }
    return "string";
}

json_t *pull_kinds_schema(void)
{
    json_t *out = json_array();

    for (size_t i = 0; i < sizeof kinds / sizeof *kinds; i++) {
        json_t *keys = json_array();
        for (const struct cfg_key *ck = kinds[i].keys; ck->name; ck++) {
            const char *group = NULL;
            const char *help = pull_key_help(kinds[i].kind, ck->name, &group);
            json_t *k = json_pack("{s:s, s:s, s:b, s:b}", "name", ck->name, "type",
                                  type_name(ck->type), "required", ck->required, "secret",
                                  ck->type == CFG_SECRET || pull_config_secret(ck->name));
            if (help)
                json_object_set_new(k, "help", json_string(help));
            if (group)
                json_object_set_new(k, "group", json_string(group));
            if (ck->type == CFG_INT) {
                json_object_set_new(k, "min", json_integer(ck->min));
                json_object_set_new(k, "max", json_integer(ck->max));
            }
            json_array_append_new(keys, k);
        }
        json_array_append_new(out, json_pack("{s:s, s:o}", "kind", kinds[i].kind, "keys", keys));
    }
    return out;
}

/* Reads the shared HTTP settings of a source config. */
void pull_http_opts(const json_t *cfg, struct httpget_opts *o, size_t max_bytes)
{
    memset(o, 0, sizeof *o);
    o->bearer = json_string_value(json_object_get(cfg, "bearer_token"));
    o->ca_file = json_string_value(json_object_get(cfg, "ca_file"));
    o->insecure = json_is_true(json_object_get(cfg, "insecure_skip_verify"));
    o->timeout_s = json_is_integer(json_object_get(cfg, "timeout_s"))
                       ? (long)json_integer_value(json_object_get(cfg, "timeout_s"))
                       : 30;
    o->max_bytes = max_bytes;
}
