/* The push API's batch format (JSON) into a struct gi_batch. Pure: bytes
 * in, structs out. The schema is documented in docs/INTEGRATIONS.md.
 *
 * Only what is structurally wrong refuses the batch: not an object, no
 * batch_id, no host or host.hostname, a list that is not a list, a list
 * past its bound, a GPU without a uuid or listed twice, a samples.columns
 * header that cannot be read. Anything else the parser cannot accept is
 * dropped with a warning and the rest is kept: a field of the wrong type,
 * out of range, too long or unknown is left absent; a sample or process
 * that cannot be placed (no readable time or GPU, a GPU not in the batch,
 * a time more than INGEST_FUTURE_S ahead of now) is left out. */
#ifndef GI_PARSE_INGEST_H
#define GI_PARSE_INGEST_H

#include "core/observation.h"

#include <jansson.h>
#include <stddef.h>
#include <stdint.h>

/* How far ahead of the server's clock a reading may be: a clock far
 * ahead would make a GPU look fresh forever. */
#define INGEST_FUTURE_S 300
/* Warnings listed in full; the rest are only counted. */
#define INGEST_MAX_WARNINGS 100

struct ingest_error {
    char field[96]; /* e.g. "gpus[3].uuid" */
    char message[192];
    int too_large; /* the failure is a bound (reply 413) */
};

struct ingest_warning {
    char field[96]; /* e.g. "gpus[2].memory_total_mib" */
    char message[192];
};

struct ingest_warnings {
    size_t n;                                         /* every warning, listed or not */
    struct ingest_warning items[INGEST_MAX_WARNINGS]; /* the first min(n, max) */
};

/* Reads a decoded batch object into *out (zeroed by the caller; free with
 * gi_batch_free even on failure), judging times against now (unix
 * seconds). Returns 0, or -1 with *err filled. w (may be NULL) receives
 * what was dropped; it is reset on entry. */
int ingest_parse(const json_t *root, int64_t now, struct gi_batch *out, struct ingest_error *err,
                 struct ingest_warnings *w);

#endif
