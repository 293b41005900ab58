/* The server's periodic jobs: pulls each enabled pull source when its
 * interval has passed, every minute brings the usage rollups up to date
 * (store_usage_rollup), sends due webhook deliveries (collect/deliver.h,
 * job webhooks:deliver) and hourly keeps raw samples for the retention
 * period (store_samples_maintain: partitions ahead and whole-partition
 * drops on PostgreSQL, small deletes on SQLite; processes and pods seen on
 * GPUs in small deletes on both), never dropping rows whose hours still
 * wait for their rollup; every minute recomputes the current owner of
 * GPUs whose assignment or rule came into force (store_owner_due); hourly
 * reconciles the hardware assets with discovery (store_asset_reconcile:
 * last-seen times, drift events). One background thread; a
 * failing or slow source delays only the sources queued behind it, never
 * the HTTP server.
 *
 * Several servers (replicas) may share one database: every replica polls,
 * and a job (pull:<source id>) runs only on the replica whose claim of its
 * lease row won (store_job_claim), so each source is pulled once per
 * interval whatever the number of replicas. A replica that dies between
 * runs is replaced at the next due time by whichever polls first; one that
 * dies mid-run keeps the job for at most its lease (SCHEDULER_MAX_RUN_S or
 * the interval, the longer). */
#ifndef GI_SCHEDULER_H
#define GI_SCHEDULER_H

#include <stdbool.h>
#include <stdint.h>

struct store;
struct scheduler;

/* How long a pull may hold its job before another replica may take it,
 * for sources whose interval is shorter. */
#define SCHEDULER_MAX_RUN_S 120
/* Seconds between sample-retention runs, and the default retention. */
#define SCHEDULER_MAINTAIN_S 3600
#define SCHEDULER_RETAIN_DAYS 14
/* Seconds between runs of the usage rollup job (usage:rollup). */
#define SCHEDULER_USAGE_S 60
/* Default seconds between runs of the owner:refresh job, which recomputes
 * the current owner of GPUs whose assignment or rule came into force
 * (store_owner_due). */
#define SCHEDULER_OWNER_S 60

/* What scheduler_start runs. */
struct scheduler_options {
    int tick_s;      /* longest wait between looks for due work (0: 5) */
    int retain_days; /* days of raw samples kept (0: SCHEDULER_RETAIN_DAYS) */
    bool no_rollup;  /* the usage:rollup job is not run by this replica */
    int owner_s;     /* seconds between owner:refresh runs (0: SCHEDULER_OWNER_S) */
};

/* Seconds between runs of the lifecycle:rules job (default 3600) and of
 * the health:rollup job (default SCHEDULER_USAGE_S, after the usage
 * rollup). Set before the start. */
#define SCHEDULER_RULES_S 3600
void scheduler_rules_configure(int64_t interval_s);
void scheduler_health_configure(int64_t interval_s);

/* Starts the thread; the store is borrowed. tick_s is the longest wait
 * between looks for due work: the wait shrinks to a quarter of the
 * shortest source interval (at least 1 s), so that a job freed by a dead
 * replica is taken soon after it falls due. Returns NULL on failure. */
struct scheduler *scheduler_start(struct store *st, const struct scheduler_options *o);
/* Stops after the job in progress and joins; accepts NULL. */
void scheduler_stop(struct scheduler *s);

#endif
