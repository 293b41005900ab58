/* The pull source kinds and their config keys, for forms that build
 * themselves from what the server validates (GET /api/v1/source-kinds). */
#include "api/api.h"
#include "collect/pull.h"

void api_source_kinds(struct req *r)
{
    json_t *items = pull_kinds_schema();

    reply_json(
        r, 200,
        json_pack("{s:I, s:o}", "total", (json_int_t)json_array_size(items), "items", items));
}
