/* The one route table: method, path pattern, handler, least role needed.
 * Patterns are literal segments, "{id}" (a positive integer, into req.id)
 * "{key}" (any one segment, into req.key) or, last, "{key*}" (the rest of
 * the path, '/' included, into req.key). */
#ifndef GI_ROUTES_H
#define GI_ROUTES_H

#include "core/model.h"
#include "http/request.h"

struct route {
    const char *method;
    const char *pattern;
    api_handler handler;
    enum gi_role need; /* GI_ROLE_NONE: no authentication */
};

/* Ends with a zeroed entry. */
extern const struct route gi_routes[];

#endif
