/* Inside the push ingest: what ingest.c (a batch's host and GPUs, the
 * transaction) and ingest_rows.c (the batch's samples, processes, pods
 * and remapping state) share. Every function runs inside the batch's
 * writing transaction on c and returns a status. */
#ifndef GI_INGEST_INT_H
#define GI_INGEST_INT_H

#include "store/store_int.h"
#include "core/observation.h"

#include <jansson.h>
#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>

/* A batch GPU's uuid with its row id, sorted for lookup by uuid. */
struct gpu_ref {
    const char *uuid;        /* as the batch names it */
    char canon[GI_UUID_LEN]; /* as it is stored (see mig_canonical) */
    int64_t id;
    const struct gi_sample *newest;
    int64_t oldest_ts; /* of the batch's samples of this GPU */
    int64_t anon;      /* anonymous processes stored for this GPU in this batch */
    bool owned;        /* the batch's source owns it */
    bool stamped;      /* the observation carries its own time */
};

/* qsort/bsearch order of gpu_ref by uuid. */
int ingest_ref_cmp(const void *a, const void *b);
/* Records a GPU event of source sid (detail is taken). */
int ingest_gpu_event(struct conn *c, int64_t sid, const char *uuid, const char *kind,
                     json_t *detail);
/* The time a batch's processes and pods were seen: its newest sample's,
 * or now when it has none. */
int64_t ingest_batch_time(const struct gi_batch *b);
/* Stores the batch's samples and each GPU's newest values; *stored is how
 * many rows were new. */
int ingest_samples(struct conn *c, int64_t sid, const struct gi_batch *b, struct gpu_ref *refs,
                   size_t nrefs, int64_t *stored);
/* The observed time of the owned GPUs the batch carries no sample or
 * observation time for: when (see ingest_rows.c). */
int ingest_observed(struct conn *c, const struct gpu_ref *refs, size_t nrefs, int64_t when);
/* Stores the batch's processes; *stored is how many. */
int ingest_procs(struct conn *c, int64_t sid, const struct gi_batch *b, struct gpu_ref *refs,
                 size_t nrefs, int64_t *stored);
/* Records the pods seen on the batch's GPUs. */
int ingest_pods(struct conn *c, int64_t sid, const struct gi_batch *b, struct gpu_ref *refs,
                size_t nrefs);
/* Stores a GPU's row-remapping state; *events counts a remap_failure event. */
int ingest_remap(struct conn *c, int64_t sid, int64_t gpu_id, const struct gi_gpu_obs *g,
                 int64_t *events);

/* What the store holds about a GPU before a report is applied. */
struct gpu_ident {
    bool known, missing;
    bool conflicts; /* the reporter has recorded disagreements about it */
    int64_t id, host_id, owner, owner_precedence;
    char serial[GI_SERIAL_LEN], hostname[GI_HOST_LEN], model[GI_NAME_LEN], owner_name[64];
    /* Another GPU stored under the serial the batch reports for this one
     * (serial_other, "" for none), when serial_read: read for the whole
     * batch at once (ingest_idents_load()). */
    bool serial_read;
    char serial_other[GI_UUID_LEN];
};

/* Copies column i of s into out (len bytes), "" when NULL. */
void ingest_col_copy(struct db_stmt *s, int i, char *out, size_t len);
/* Reads what is stored about GPU uuid for source sid into *id. */
int ingest_ident_load(struct conn *c, int64_t sid, const char *uuid, struct gpu_ident *id);
/* Reads the identities of all of the batch's GPUs at once into ids (one per
 * b->set.gpus entry) and, on PostgreSQL, for each GPU another GPU stored
 * under the serial it reports (ids[i].serial_other), in one round trip. */
int ingest_idents_load(struct conn *c, int64_t sid, const struct gi_batch *b,
                       struct gpu_ident *ids);
/* True when the batch's GPUs can be read for the whole batch at once
 * (distinct uuids and serials). */
bool ingest_idents_apart(const struct gi_batch *b);

#endif
