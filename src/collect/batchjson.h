/* Builds the push API's batch JSON (the format parse/ingest.c reads) from a
 * host, an observation set and summary samples. */
#ifndef GI_BATCHJSON_H
#define GI_BATCHJSON_H

#include "core/observation.h"

#include <jansson.h>

/* Returns a new batch object (caller decrefs), or NULL out of memory. */
json_t *batchjson_build(const struct gi_batch *b);

#endif
