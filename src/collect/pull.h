/* Pull sources: the server fetches GPU observations from systems teams
 * already run, and stores them through the same ingest path as pushes
 * (one batch per reporting host). A failure is recorded on the source and
 * never disturbs other sources. */
#ifndef GI_PULL_H
#define GI_PULL_H

#include <jansson.h>
#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>

struct store;

bool pull_kind_known(const char *kind);
/* True for config keys holding secrets (never shown back). */
bool pull_config_secret(const char *key);
/* True for config keys that decide which server receives the secrets
 * (url, ca_file, insecure_skip_verify): changing one without giving the
 * secrets again clears them. */
bool pull_config_target(const char *key);
/* Validates a kind's config object; on failure fills field ("config.url")
 * and msg and returns -1. */
int pull_config_check(const char *kind, const json_t *cfg, char *field, size_t flen, char *msg,
                      size_t mlen);

struct pull_result {
    /* Set by the caller before the pull: fetch and parse, count what was
     * found, store nothing (pull_test_source). A kind that stores by
     * itself (a run function) must honour it: skip every store write,
     * still fill gpus/hosts (and instances, jobs, pods where it has
     * them). */
    bool dry;
    bool ok;
    char error[512];
    int64_t gpus, hosts;
    /* Asset manager pulls: what store_asset_ingest did, and how many
     * fields were left absent (unreadable or not storable). */
    bool assets;
    int64_t created, updated, unchanged, warnings;
    /* What else a pull found, -1 where the kind has no such thing: cloud
     * instances, Slurm jobs, Kubernetes pods. */
    int64_t instances, jobs, pods;
    /* A dry pull: the first reading it had to leave absent, if any. */
    char warning[200];
};
/* Pulls one source now (src as store_source_get returns it), ingests what
 * it found and records the outcome on the source. */
void pull_run_source(struct store *st, const json_t *src, struct pull_result *res);

/* Pulls one source (a body as POST /sources takes it: kind, config,
 * cluster) once with res->dry set: nothing is stored and nothing is
 * recorded on the source; res tells what was found or the first error.
 * The whole pull (every page, retry and command) ends after deadline_s
 * seconds (collect/deadline.h); its error then says so. */
void pull_test_source(struct store *st, const json_t *src, int64_t deadline_s,
                      struct pull_result *res);

/* Every kind's config keys, from the table that validates configs: an
 * array of {"kind", "keys":[{"name","type","required","secret","help",
 * "group","min","max"}]}. Caller owns the result. */
json_t *pull_kinds_schema(void);

/* The one-line help text (NULL without one) and the group (NULL for
 * none: keys of one group are alternatives or belong together) of a
 * kind's config key. */
const char *pull_key_help(const char *kind, const char *key, const char **group);

/* GETs url with the source's HTTP settings and checks for a 2xx (a
 * Prometheus 400, 422 or 503 is kept: its body explains the error);
 * *body (len bytes) is the caller's to free. 0, or -1 with err filled. */
int pull_prom_get(const char *url, const json_t *cfg, char **body, size_t *len, char *err,
                  size_t errlen);

/* A config key's text, NULL when absent or "". */
const char *pull_cfg_str(const json_t *cfg, const char *key);

struct httpget_opts;
/* The HTTP settings (token, CA, timeout) of a source config. */
void pull_http_opts(const json_t *cfg, struct httpget_opts *o, size_t max_bytes);

#endif
