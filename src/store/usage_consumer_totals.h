/* Private to src/store/: the consumer totals (usage_consumer_totals,
 * migration 065), the consumer days summed over their GPUs, written by
 * usage_consumer_totals.c inside the transactions that write
 * usage_consumers_daily and read by the usage report by consumer
 * (usage_query.c).
 *
 * A writer that rewrites some GPUs' consumer days notes the consumers
 * those days hold before it rewrites them (usage_ctot_note) and, once
 * they are rewritten, has the totals of those consumers and of the ones
 * the days hold now summed again (usage_ctot_refresh): a consumer that
 * left a day and one that came into it both change. */
#ifndef GI_USAGE_CONSUMER_TOTALS_H
#define GI_USAGE_CONSUMER_TOTALS_H

#include "store/store_int.h"

#include <stddef.h>
#include <stdint.h>

/* A consumer's day and block of GPU ids (day start, gpu_id / 64,
 * consumer's name: owned). */
struct usage_ctot_key {
    int64_t day, block;
    char *consumer;
};

/* The (day, block, consumer) keys noted for a refresh; zero-initialised
 * empty. */
struct usage_ctot_keys {
    struct usage_ctot_key *a;
    size_t n, cap;
};

/* Adds to k the (day, block, consumer) keys of the consumer days of the GPUs
 * gids[0..n) (borrowed) on `day` (a day start; -1: every day). */
int usage_ctot_note(struct conn *c, const int64_t *gids, size_t n, int64_t day,
                    struct usage_ctot_keys *k);

/* Notes the keys of the same GPUs and days again (what they hold now),
 * then replaces the totals of every key noted by the sums of its
 * consumer days (those of its block's GPUs), inside the caller's
 * transaction; empties k. */
int usage_ctot_refresh(struct conn *c, const int64_t *gids, size_t n, int64_t day,
                       struct usage_ctot_keys *k);

/* Frees what k holds (k itself is the caller's); k may be empty. */
void usage_ctot_keys_free(struct usage_ctot_keys *k);

/* Deletes the totals of `day`, inside the caller's transaction, which has
 * just deleted that day's consumer days (retention). */
int usage_ctot_prune_day(struct conn *c, int64_t day);

#endif
