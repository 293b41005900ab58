/* What the cloud pull sources (aws, gcp, azure) do with one complete
 * listing of a scope: store it, or, on a test of the source, only count
 * what storing it would record. */
#ifndef GI_PULL_CLOUD_H
#define GI_PULL_CLOUD_H

#include "parse/cloud.h"

#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>

struct store;
struct cloud_sync_result;

/* store_cloud_sync(st, sid, provider, scope, v, n, unreachable,
 * nunreachable, r) unless dry; a dry listing adds its instances and their
 * known GPUs to r and stores nothing. unreachable (NULL, 0 for none) names
 * the zones the listing could not see. Returns the store's status (GI_OK
 * when dry). */
int pull_cloud_listing(struct store *st, int64_t sid, const char *provider, const char *scope,
                       const struct cloud_instance *v, size_t n, const char *const *unreachable,
                       size_t nunreachable, bool dry, struct cloud_sync_result *r);

#endif
