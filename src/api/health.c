/* Liveness and the resource-kind catalogue the dashboard builds forms from. */
#include "api/api.h"
#include "core/kinds.h"

void api_healthz(struct req *r) { reply_json(r, 200, json_pack("{s:s}", "status", "ok")); }

void api_kinds(struct req *r)
{
    reply_json(r, 200,
               json_pack("{s:o, s:[sssss]}", "kinds", gi_kinds_json(), "states", "available",
                         "in_use", "reserved", "maintenance", "retired"));
}
