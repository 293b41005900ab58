/* Usage over time: allocation intervals, the classification of every
 * GPU-second, and the hourly and daily rollups. See store_int.h.
 *
 * No rollup is kept yet, so nothing needs re-attributing or re-pricing. */
#include "store/store_int.h"
#include "core/status.h"

int usage_reattribute(struct conn *c, int64_t gpu_id, int64_t from)
{
    (void)c, (void)gpu_id, (void)from;
    return GI_OK;
}

int usage_reprice(struct conn *c, int64_t from)
{
    (void)c, (void)from;
    return GI_OK;
}
