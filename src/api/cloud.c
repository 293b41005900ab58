/* What cloud sources found: the instances of the listed regions,
 * projects and subscriptions, with their placeholder GPU records. */
#include "api/api.h"
#include "api/scope.h"
#include "core/status.h"
#include "store/store.h"

#include <string.h>

void api_cloud_instances(struct req *r)
{
    static const char *const sortable[] = {NULL};
    static const char *const providers[] = {"aws", "gcp", "azure"};
    static const char *const states[] = {"unknown",  "pending", "running",
                                         "stopping", "stopped", "terminated"};
    struct store_cloud_filter f = {0};
    struct store_page pg;
    json_t *items = NULL;
    int64_t total = 0;
    bool known = false;
    int st;

    if (!req_page_or_reply(r, sortable, &pg) ||
        !req_param_str_or_reply(r, "provider", 16, &f.provider) ||
        !req_param_str_or_reply(r, "state", 16, &f.state) ||
        !req_param_str_or_reply(r, "account", 128, &f.account) ||
        !req_param_str_or_reply(r, "region", 64, &f.region) ||
        !req_param_str_or_reply(r, "q", 200, &f.q))
        return;
    for (size_t i = 0; f.provider && i < sizeof providers / sizeof *providers; i++)
        known |= strcmp(f.provider, providers[i]) == 0;
    if (f.provider && !known) {
        reply_error(r, 400, "invalid_parameter", "provider", "provider must be aws, gcp or azure");
        return;
    }
    known = false;
    for (size_t i = 0; f.state && i < sizeof states / sizeof *states; i++)
        known |= strcmp(f.state, states[i]) == 0;
    if (f.state && !known) {
        reply_error(r, 400, "invalid_parameter", "state",
                    "state must be pending, running, stopping, stopped, terminated or unknown");
        return;
    }
    who_scope(r, &f.scope);
    if ((st = store_cloud_instances(r->store, &f, &pg, &items, &total)) != GI_OK) {
        reply_status(r, st, "instances");
        return;
    }
    reply_list(r, items, total, pg.offset);
}
