/* The pull source kinds and their config keys, for forms that build
 * themselves from what the server validates (GET /api/v1/source-kinds). */
#include "api/api.h"
#include "collect/pull.h"

void api_source_kinds(struct req *r)
{
    json_t *items = pull_kinds_schema();

    reply_list(r, items, (int64_t)json_array_size(items), 0);
}
