/* Cloud listings: stored, or counted on a test; see pull_cloud.h. */
#include "collect/pull_cloud.h"
#include "core/status.h"
#include "store/store.h"

int pull_cloud_listing(struct store *st, int64_t sid, const char *provider, const char *scope,
                       const struct cloud_instance *v, size_t n, const char *const *unreachable,
                       size_t nunreachable, bool dry, struct cloud_sync_result *r)
{
    if (!dry)
        return store_cloud_sync(st, sid, provider, scope, v, n, unreachable, nunreachable, r);
    r->instances += (int64_t)n;
    for (size_t i = 0; i < n; i++)
        r->gpus += v[i].gpu_count > 0 ? v[i].gpu_count : 0;
    return GI_OK;
}
