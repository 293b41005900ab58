/* Private interface between the two halves of usage over time:
 * usage.c (configuration, marking, the usage:rollup job and its queues)
 * and usage_hour.c/usage_consumers.c (the computation of one GPU-hour and
 * the daily sums built from it). Nothing outside these files includes it. */
#ifndef GI_USAGE_INT_H
#define GI_USAGE_INT_H

#include "store/store_int.h"

#include <math.h>
#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>

/* The longest run of missing hours filled at once (raw samples are kept
 * two weeks by default: a gap longer than that has nothing to compute). */
#define FILL_MAX_HOURS (24 * 45)

/* One raw sample of a rollup chunk; NaN where the reading was NULL. */
struct usage_sample {
    int64_t gpu, src, ts;
    double ua, um, mem, pw, temp;
};

/* The start of the hour holding unix second t (floored, negatives too). */
static inline int64_t usage_hour_of(int64_t t) { return t - ((t % 3600) + 3600) % 3600; }

/* usage.c: the configuration in force (store_usage_configure). Borrowed;
 * valid for the life of the process. */
const struct store_usage_config *usage_config(void);

/* usage.c: runs the nullable integer query s (bound by the caller) and
 * resets it: *out = the value, *null = whether it was NULL (or there was
 * no row). */
int usage_fetch_opt_int(struct conn *c, struct db_stmt *s, int64_t *out, bool *null);

/* usage.c: rewrites one day of a table kept per day: runs the n
 * statements sql[] in order (delete, add, prune), each with :day and :now
 * bound where it names them, stopping at the first failure. */
int usage_day_steps(struct conn *c, const char *const *sql, size_t n, int64_t day, int64_t now);

/* usage.c: marks GPU gpu_id's hour (an hour start) dirty, inside the
 * caller's transaction; an hour already marked is left as it is (then
 * db_changes(c) is 0). */
int usage_mark_hour(struct conn *c, int64_t gpu_id, int64_t hour, int64_t now);

/* usage.c: marks every hour from `first` to `last` (hour starts), at most
 * FILL_MAX_HOURS of them, the newest first. */
int usage_mark_hours(struct conn *c, int64_t gpu_id, int64_t first, int64_t last, int64_t now);

/* usage.c: sums GPU gid's consumer hours of `day` (a day start) into its
 * rows of usage_consumers_daily again, one per consumer and combination
 * of the hours' dimensions, inside the caller's transaction. */
int usage_write_consumer_day(struct conn *c, int64_t gid, int64_t day, int64_t now);

/* usage.c: replaces the hour's rows of usage_groups_hourly by the sums of
 * its usage_hourly rows, and its rows of usage_team_hours by the sums of
 * those, inside the caller's transaction. */
int usage_write_hour_groups(struct conn *c, int64_t hour, int64_t now);

/* usage_redo.c: works up to 500 rows of the oldest queued re-attribution
 * or re-pricing in one transaction; *rows is how many plus one for the
 * queue row (0: the queue is empty). */
int usage_redo_chunk(struct store *st, int64_t now, int64_t *rows);

/* usage_hour.c: recomputes GPU gid's hour (an hour start) from its samples
 * xs[0..n), inside the caller's transaction: its hourly row, consumers and
 * intervals; the caller then re-sums its day (usage_write_day). all[0..nall)
 * are every sample of the chunk, ordered by GPU (xs lies within it). Both
 * borrowed. A GPU that no longer exists is GI_OK with nothing written. */
int usage_compute_hour(struct conn *c, int64_t gid, int64_t hour, int64_t now,
                       const struct usage_sample *xs, size_t n, const struct usage_sample *all,
                       size_t nall);

/* usage_hour.c: sums GPU gid's hourly rows of `day` (a day start) into
 * its daily row again, inside the caller's transaction. */
int usage_write_day(struct conn *c, int64_t gid, int64_t day, int64_t now);

/* usage_hour.c: sums every GPU's daily row of `day` into the group rows of
 * that day again, inside the caller's transaction. */
int usage_write_groups(struct conn *c, int64_t day, int64_t now);

/* The team of a consumer of a GPU-hour (usage_consumers.c): a Kubernetes
 * namespace's or Slurm account's (project) by the ownership rules, else
 * the user's (not for pods), else the GPU's owner at the hour. */
int usage_consumer_team(struct conn *c, const char *kind, const char *ns, const char *project,
                        const char *user, int64_t hour, const char *owner_team, char *team,
                        size_t len);

/* usage_text.c, usage_timeline.c: x rounded to 6 decimals, as reports
 * show their figures. */
static inline double usage_round6(double x) { return round(x * 1e6) / 1e6; }

/* usage_text.c: micro-unit-seconds as the reports show money, two
 * decimals and never "-0.00". buf needs 48 bytes. */
void usage_money_text(double micro_seconds, char *buf, size_t len);

/* The sums of a group of usage_daily rows as the report shows them, in
 * the column order of usage_groups_daily and usage_host_days (gpus,
 * owned_s .. unpriced_s): seconds x fraction, costs x rate_micros
 * (micro-unit-seconds, NULL when nothing is priced). The rollup writes
 * both tables with these terms, so that a report summing them summed the
 * same rows the same way. */
#define USAGE_GROUP_TERMS                                                                          \
    "COUNT(*), SUM(owned_s * fraction), SUM(allocated_s * fraction), SUM(busy_s * fraction), "     \
    "SUM(alloc_idle_s * fraction), SUM(idle_s * fraction), SUM(unknown_s * fraction), "            \
    "SUM(util_sum * fraction), SUM(measured_s * fraction), SUM(energy_wh), SUM(owned_s * "         \
    "fraction * rate_micros), SUM(busy_s * fraction * rate_micros), SUM(alloc_idle_s * fraction "  \
    "* rate_micros), SUM(idle_s * fraction * rate_micros), SUM(unknown_s * fraction * "            \
    "rate_micros), SUM(CASE WHEN rate_micros IS NULL THEN owned_s * fraction ELSE 0 END)"

/* usage_host_days.c: replaces the day's rows of usage_host_days (every
 * sum of a host's report row, per currency) by the sums of its
 * usage_daily rows, and drops the days older than the oldest day group,
 * inside the caller's transaction. usage_write_groups() calls it. */
int usage_host_days_write(struct conn *c, int64_t day, int64_t now);

/* The days of a block of usage_gpu_blocks, and its length in seconds:
 * block starts are the multiples of USAGE_BLOCK_S. */
#define USAGE_BLOCK_DAYS 4
#define USAGE_BLOCK_S ((int64_t)USAGE_BLOCK_DAYS * 86400)

/* usage_gpu_blocks.c: replaces the rows of usage_gpu_blocks of the block
 * holding `day` (a day start) by the sums of that block's usage_daily
 * rows, and drops the blocks that start before the oldest day group,
 * inside the caller's transaction. usage_write_groups() calls it. */
int usage_gpu_blocks_write(struct conn *c, int64_t day, int64_t now);

/* usage_gpu_blocks.c: after GPU `from`'s daily rows were merged into
 * `to`'s (usage_merge_gpu), drops `from`'s blocks and sums `to`'s again
 * from its daily rows, inside the caller's transaction. */
int usage_gpu_blocks_merge(struct conn *c, int64_t from, int64_t to, int64_t now);

/* usage_host_days.c: whether usage_host_days answers for every day from
 * `from` on at time `now` (none of them within reach of retention). */
bool usage_host_days_cover(int64_t from, int64_t now);

#endif
