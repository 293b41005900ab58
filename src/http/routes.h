/* The one route table: method, path pattern, handler, least role needed,
 * and the query parameters the handler reads.
 * Patterns are literal segments, "{id}" (a positive integer written as a
 * canonical decimal, into req.id), "{key}" (any one segment,
 * percent-decoded, into req.key) or, last, "{key*}" (the rest of the path,
 * '/' included, percent-decoded, into req.key). */
#ifndef GI_ROUTES_H
#define GI_ROUTES_H

#include "core/model.h"
#include "http/request.h"

#include <stdbool.h>

struct route {
    const char *method;
    const char *pattern;
    api_handler handler;
    enum gi_role need; /* GI_ROLE_NONE: no authentication */
    /* Query parameters the handler reads, comma-separated ("" for none);
     * an entry ending in '*' admits every name with that prefix. The
     * dispatcher refuses any other parameter with 400 before the handler
     * runs. */
    const char *params;
};

/* Ends with a zeroed entry. */
extern const struct route gi_routes[];

/* True when the callers of route rt may also authenticate with HTTP Basic
 * (any user name, a token as the password): the inventory agents' route,
 * whose clients speak nothing else. Its 401 challenges Basic. */
bool route_basic_auth(const struct route *rt);

/* True when query parameter `name` is one that route rt reads. */
bool route_param_known(const struct route *rt, const char *name);

#endif
