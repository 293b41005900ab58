/* GET /api/v1/openapi.json: the OpenAPI 3.1 description of every route,
 * kept in the repository as src/api/openapi.json and embedded into the
 * binary at build time. It holds no secrets, so it needs no credentials:
 * client generators fetch it before they have a token. */
#include "api/api.h"
#include "store/embedded.h"

#include <string.h>

void api_openapi(struct req *r)
{
    for (const struct gi_embedded *e = gi_api_docs; e->name; e++) {
        if (strcmp(e->name, "openapi.json") == 0) {
            /* The embedded bytes live as long as the program. */
            reply_bytes(r, 200, "application/json", e->data, e->len, false);
            return;
        }
    }
    reply_error(r, 500, "internal", NULL, "the API description was not built in");
}
