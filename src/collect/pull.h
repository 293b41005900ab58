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
    bool ok;
    char error[512];
    int64_t gpus, hosts;
    /* Asset manager pulls: what store_asset_ingest did, and how many
     * fields were left absent (unreadable or not storable). */
    bool assets;
    int64_t created, updated, unchanged, warnings;
};
/* Pulls one source now (src as store_source_get returns it), ingests what
 * it found and records the outcome on the source. */
void pull_run_source(struct store *st, const json_t *src, struct pull_result *res);

struct httpget_opts;
/* The HTTP settings (token, CA, timeout) of a source config. */
void pull_http_opts(const json_t *cfg, struct httpget_opts *o, size_t max_bytes);

#endif
