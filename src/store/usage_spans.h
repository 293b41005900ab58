/* Private to src/store/: the consumer-day spans (usage_consumer_spans,
 * migration 062), written by usage_spans.c inside the transactions that
 * write usage_consumers_daily, and the cover of a range of whole days by
 * aligned spans that the consumer lists read (insights_waste.c). */
#ifndef GI_USAGE_SPANS_H
#define GI_USAGE_SPANS_H

#include "store/store_int.h"

#include <stdint.h>

/* The lengths of the spans below the longest (1: a consumer day itself,
 * read from usage_consumers_daily), and the longest, in days. */
#define USAGE_SPAN_LEVELS 5
#define USAGE_SPAN_TOP 32

/* The whole days [dfrom, dto) as aligned spans: at[i] the starts (day
 * starts, -1: none) of at most two spans of 2^i days, and the spans of
 * USAGE_SPAN_TOP days that start in [top_lo, top_hi). Every day of the
 * range is in exactly one of them. */
struct usage_span_cover {
    int64_t at[USAGE_SPAN_LEVELS][2];
    int64_t top_lo, top_hi;
};

/* Covers [dfrom, dto) (day starts; empty when dto <= dfrom). */
void usage_span_cover(int64_t dfrom, int64_t dto, struct usage_span_cover *cv);

/* Binds cv to :s1a, :s1b, :s2a, :s2b, :s4a, ... :s16b (the starts of the
 * spans of 1 to 16 days) and :m1, :m2 (those of 32 days start in [:m1,
 * :m2)). s borrowed. */
void usage_span_bind(struct db_stmt *s, const struct usage_span_cover *cv);

/* Sums GPU gid's spans that hold `day` (a day start) again from its
 * consumer days, each from the two halves below it, inside the caller's
 * transaction, which has just rewritten that consumer day; the spans
 * keep their consumer days' updated_at. */
int usage_spans_write_day(struct conn *c, int64_t gid, int64_t day);

/* usage_spans_write_day() for the GPUs gids[0..n) (borrowed, each once)
 * and one day, two statements per span length for all of them (their ids
 * a JSON array on SQLite, an array on PostgreSQL): the rollup job's
 * chunk, which has rewritten those GPUs' consumer days of `day`. */
int usage_spans_write_days(struct conn *c, const int64_t *gids, size_t n, int64_t day);

/* Replaces every span of GPU gid by the sums of its consumer days as they
 * are now (none left: its spans are gone), inside the caller's
 * transaction (a GPU merge, which moves and drops whole consumer days). */
int usage_spans_rebuild_gpu(struct conn *c, int64_t gid);

/* Sums every GPU's spans that hold `day` again, inside the caller's
 * transaction, which has just deleted that day's consumer days
 * (retention): a span whose days are all gone goes with them. */
int usage_spans_prune_day(struct conn *c, int64_t day);

#endif
