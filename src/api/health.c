/* Liveness, readiness and the resource-kind catalogue the dashboard builds
 * forms from. */
#include "api/api.h"
#include "core/kinds.h"
#include "core/status.h"
#include "store/store.h"

/* Seconds a balancer is told to wait before asking /readyz again. */
#define READYZ_RETRY_AFTER "5"

void api_healthz(struct req *r) { reply_json(r, 200, json_pack("{s:s}", "status", "ok")); }

/* Ready while the database answers: a balancer takes a replica whose
 * database is gone out of rotation, while /healthz (liveness) keeps the
 * process itself alive. */
void api_readyz(struct req *r)
{
    if (store_ping(r->store) != GI_OK) {
        reply_json(r, 503, json_pack("{s:s}", "status", "unavailable"));
        reply_header(r, "Retry-After", READYZ_RETRY_AFTER);
        return;
    }
    reply_json(r, 200, json_pack("{s:s}", "status", "ready"));
}

void api_kinds(struct req *r)
{
    reply_json(r, 200,
               json_pack("{s:o, s:[sssss]}", "kinds", gi_kinds_json(), "states", "available",
                         "in_use", "reserved", "maintenance", "retired"));
}
