/* Splits a flat set of observations (what a pull or a spreadsheet yields
 * for many hosts) into one ingest batch per host, so that every path into
 * the store goes through the same per-host ingest. */
#ifndef GI_HOSTBATCH_H
#define GI_HOSTBATCH_H

#include "core/observation.h"

#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>

/* Builds *out (n batches, caller frees with hostbatch_free). GPUs without
 * a uuid are skipped (nothing identifies them). Each GPU's current
 * readings become one sample at its own time or `now` when with_samples;
 * processes and pods follow their GPU. Batch ids are
 * "<prefix>-<now>-<host>". Returns 0, or -1 out of memory. */
int hostbatch_split(const struct gi_obs_set *set, const char *prefix, int64_t now,
                    const char *cluster, bool with_samples, struct gi_batch **out, size_t *n);
void hostbatch_free(struct gi_batch *b, size_t n);

#endif
