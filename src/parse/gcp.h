/* GCP Compute Engine answers (jansson) into cloud instance records:
 *
 *   instances.aggregatedList  {"items": {"zones/<zone>": {"instances": [...]}
 *                             or {"warning": {...}} for a zone without any},
 *                             "nextPageToken", "unreachables"}
 *   machineTypes.get          {"accelerators": [{"guestAcceleratorType",
 *                             "guestAcceleratorCount"}]}
 *
 * Per instance: id (a uint64 written as a JSON string; a number is taken
 * too; the name stands in when there is none), name, zone (the tail of the
 * zone URL, else the items key) and its region (the zone less its last
 * "-x"), machine type (the tail of its URL), status (the word is kept in
 * state_raw; TERMINATED is a stopped VM that still exists), launch time
 * (lastStartTimestamp, else creationTimestamp: RFC 3339 with a local
 * offset), labels as tags, the first network interface's networkIP, and
 * the GPUs: the sum of guestAccelerators counts (type URL tail → model);
 * without guestAccelerators, from the built-in table of
 * accelerator-optimized machine types (a2, a3, g2, ...); an unknown type
 * of a GPU family is gpu_count -1, for the caller to resolve through
 * machineTypes.get. TPU accelerators are not GPUs. URLs are compared by
 * their path tail, never by host. A value of the wrong type is left
 * absent and counted in `warnings`; only the structure (not JSON, no
 * object) fails a page.
 *
 * Scopes that did not answer (asked with returnPartialSuccess=true):
 * those named in "unreachables", and every scope whose warning has a code
 * other than NO_RESULTS_ON_PAGE (an empty zone). The page is complete for
 * every other scope. */
#ifndef GI_PARSE_GCP_H
#define GI_PARSE_GCP_H

#include "parse/cloud.h"

#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>

#define GCP_ERR_LEN 256
#define GCP_TOKEN_MAX 2048
#define GCP_UNREACHABLE_MAX 64
#define GCP_SCOPE_LEN 96

struct gcp_page {
    struct cloud_instance *items;
    size_t n;
    char next[GCP_TOKEN_MAX]; /* nextPageToken; "" on the last page */
    /* The scopes that did not answer ("zones/asia-east2-c"), each once,
     * in the order met; unreachable_more when there were more than fit
     * or one too long to name (the listing then cannot say which zones
     * it lacks). */
    size_t unreachable;
    char unreachable_scopes[GCP_UNREACHABLE_MAX][GCP_SCOPE_LEN];
    bool unreachable_more;
    size_t warnings; /* values left absent */
    char warning[GCP_ERR_LEN];
};

/* Parses one aggregatedList page (body borrowed, len bytes); project is
 * the account of every instance. GI_OK with *p filled (free with
 * gcp_page_free); GI_INVALID with err filled; GI_INTERNAL out of memory.
 * A page whose nextPageToken does not fit is GI_INVALID. */
int gcp_parse_instances(const char *body, size_t len, const char *project, struct gcp_page *p,
                        char *err, size_t errlen);
void gcp_page_free(struct gcp_page *p);

/* Adds scope to the page's unreachable scopes unless it is there already
 * (sets unreachable_more when it cannot be kept). */
void gcp_page_unreachable(struct gcp_page *p, const char *scope);

/* The GPUs of a machineTypes.get answer: *count (0 when it lists none
 * that are GPUs) and the model into model. GI_OK, or GI_INVALID. */
int gcp_parse_machine_type(const char *body, size_t len, int *count, char *model, size_t mlen,
                           int64_t *mem_mib);

/* The GPUs the built-in table knows for a machine type name:
 * returns the count (0 for a type of a family without GPUs) and fills
 * model/mem_mib, or -1 for a type of a GPU family the table lacks. */
int gcp_machine_gpus(const char *machine_type, char *model, size_t mlen, int64_t *mem_mib);

/* An accelerator type name ("nvidia-tesla-a100", "-vws" variants) as a
 * GPU model ("NVIDIA A100-SXM4-40GB") and its memory (-1 when unknown);
 * unknown NVIDIA/AMD names are kept as given. False for accelerators that
 * are not GPUs (TPU slices). */
bool gcp_accelerator_model(const char *type, char *model, size_t mlen, int64_t *mem_mib);

/* The message of an error answer ({"error": {"code", "message",
 * "status"}} or the OAuth form {"error", "error_description"}) into
 * out; "" when there is none. */
void gcp_error_message(const char *body, size_t len, char *out, size_t outlen);

#endif
