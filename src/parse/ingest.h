/* The push API's batch format (JSON) into a struct gi_batch. Pure: bytes
 * in, structs out. The schema is documented in docs/INTEGRATIONS.md. */
#ifndef GI_PARSE_INGEST_H
#define GI_PARSE_INGEST_H

#include "core/observation.h"

#include <jansson.h>
#include <stddef.h>

struct ingest_error {
    char field[96]; /* e.g. "samples[3].util_avg" */
    char message[192];
    int too_large; /* the failure is a bound (reply 413) */
};

/* Reads a decoded batch object into *out (zeroed by the caller; free with
 * gi_batch_free even on failure). Returns 0, or -1 with *err filled. */
int ingest_parse(const json_t *root, struct gi_batch *out, struct ingest_error *err);

#endif
