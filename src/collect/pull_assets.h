/* What the asset manager pulls (NetBox, Snipe-IT) share: an authorized
 * GET that waits out a short rate limit, the same-origin test for the
 * URLs a server hands back, and storing the records through
 * store_asset_ingest. */
#ifndef GI_PULL_ASSETS_H
#define GI_PULL_ASSETS_H

#include <jansson.h>
#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>

struct store;
struct pull_result;

/* The most a pull waits for a 429's Retry-After before giving up (the
 * scheduler tries again at the next interval), and how often. */
#define ASSETPULL_MAX_WAIT_S 5
#define ASSETPULL_MAX_RETRIES 3
/* The largest page accepted. */
#define ASSETPULL_MAX_BODY (64u << 20)
/* The most pages one pull reads per list. */
#define ASSETPULL_MAX_PAGES 1000

struct assetpull {
    const json_t *cfg;  /* the source's config (ca_file, timeout_s, ...) */
    const char *system; /* "NetBox", for messages */
    const char *auth;   /* Authorization header value, or NULL */
};

/* GETs url. 0 with *body (caller frees) on a 2xx answer. On 429 waits the
 * Retry-After (when at most ASSETPULL_MAX_WAIT_S) and tries again, up to
 * ASSETPULL_MAX_RETRIES times. Otherwise -1 with err naming the system,
 * the status and the server's explanation ("NetBox answered HTTP 403:
 * Invalid token"; "... HTTP 429 (rate limited; retry after 120 s)"). */
int assetpull_get(const struct assetpull *p, const char *url, char **body, size_t *len, char *err,
                  size_t errlen);

/* True when url has the scheme, host and port of base: a paging URL
 * elsewhere would receive the token. */
bool assetpull_same_origin(const char *base, const char *url);

/* Appends "&name=value" (value URL-escaped) to the query q; nothing when
 * value is NULL or empty. False when it does not fit or out of memory. */
bool assetpull_param(char *q, size_t qlen, const char *name, const char *value);

/* Stores records under source: a record's location.datacenter that
 * names no data center is tried as its site_slug, else dropped (warned);
 * a parent_source_key is resolved to the parent's tag or serial among
 * the records. Fills res (ok, assets, counts, gpus: records of kind gpu,
 * hosts: records). The parser's warnings and the fields the store refused
 * are counted on the source (source_id), the first one kept as its
 * last_warning. 0 or -1 with res->error filled. */
int assetpull_store(struct store *st, int64_t source_id, const char *source, json_t *records,
                    json_t *warnings, struct pull_result *res);

#endif
