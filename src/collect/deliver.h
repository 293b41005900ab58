/* The webhooks:deliver job: sends due webhook deliveries (store.h's
 * store_delivery_claim), signed (core/hooksig.h), over libcurl, and
 * records each attempt (store_delivery_done), including the ticket a
 * Jira or ServiceNow receiver created. Run by the scheduler thread on
 * whichever replica claims the job; each delivery is claimed on its own,
 * so replicas never send one twice at once. */
#ifndef GI_DELIVER_H
#define GI_DELIVER_H

#include <stdint.h>

struct store;

/* Seconds a receiver has to answer, and the most of its answer kept. */
#define DELIVER_TIMEOUT_S 15
#define DELIVER_MAX_REPLY (64 * 1024)
/* The most of the answer stored in the delivery log. */
#define DELIVER_LOG_REPLY 4096
/* Deliveries claimed per run, and days the log is kept. */
#define DELIVER_BATCH 10
#define DELIVER_KEEP_DAYS 30
/* Seconds between runs of the job (unless backoff_s is shorter). */
#define DELIVER_INTERVAL_S 5

/* backoff_s > 0 makes every retry wait backoff_s seconds instead of the
 * schedule (tests) and the job run at least that often. Call before the
 * scheduler starts. */
void deliver_configure(int64_t backoff_s);
/* The job's interval in seconds. */
int64_t deliver_interval(void);
/* The retry wait deliver_configure set (0: the schedule). */
int64_t deliver_backoff(void);

struct deliver_stats {
    int64_t sent, delivered, failed;
};
/* Claims and sends one batch of due deliveries; stats may be NULL. */
int deliver_run(struct store *st, int64_t now, struct deliver_stats *stats);

#endif
