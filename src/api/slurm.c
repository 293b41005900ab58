/* What Slurm accounting sources found: job allocations and the GPUs each
 * held. */
#include "api/api.h"
#include "api/scope.h"
#include "core/status.h"
#include "core/util.h"
#include "store/store.h"

#include <string.h>

/* An optional time parameter (RFC 3339 or unix seconds); -1 when absent.
 * False after replying 400. */
static bool time_or_reply(struct req *r, const char *name, int64_t *out)
{
    const char *v = req_param(r, name);

    *out = -1;
    if (v == NULL || *v == '\0')
        return true;
    if (gi_time_parse(v, out) != GI_OK) {
        reply_error(r, 400, "invalid_parameter", name,
                    "query parameter %s must be an RFC 3339 time or unix seconds", name);
        return false;
    }
    return true;
}

void api_slurm_jobs(struct req *r)
{
    static const char *const sortable[] = {NULL};
    struct store_slurm_filter f = {0};
    struct store_page pg;
    json_t *items = NULL;
    int64_t total = 0;
    int st;

    if (!req_page_or_reply(r, sortable, &pg) ||
        !req_param_str_or_reply(r, "cluster", 128, &f.cluster) ||
        !req_param_str_or_reply(r, "user", 128, &f.user) ||
        !req_param_str_or_reply(r, "account", 128, &f.account) ||
        !req_param_str_or_reply(r, "state", 32, &f.state) || !time_or_reply(r, "from", &f.from) ||
        !time_or_reply(r, "to", &f.to))
        return;
    who_scope(r, &f.scope);
    if (f.from >= 0 && f.to >= 0 && f.from >= f.to) {
        reply_error(r, 400, "invalid_parameter", "from", "from must be before to");
        return;
    }
    if ((st = store_slurm_jobs(r->store, &f, &pg, &items, &total)) != GI_OK) {
        reply_status(r, st, "jobs");
        return;
    }
    reply_list(r, items, total, pg.offset);
}
