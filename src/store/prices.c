/* The price catalog: hourly rates per GPU model. See store_int.h.
 *
 * The catalog is still empty, so no model has a rate. */
#include "store/store_int.h"
#include "core/status.h"

int price_rate(struct conn *c, const char *model, const char *env, const char *cloud,
               const char *pool, int64_t at, int64_t *micros_per_hour, char currency[4],
               int64_t *price_id)
{
    (void)c, (void)model, (void)env, (void)cloud, (void)pool, (void)at;
    *micros_per_hour = 0;
    currency[0] = '\0';
    *price_id = 0;
    return GI_NOT_FOUND;
}
