/* The server's periodic jobs: pulls each enabled pull source when its
 * interval has passed. One background thread; a failing or slow source
 * delays only the sources queued behind it, never the HTTP server.
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

struct store;
struct scheduler;

/* How long a pull may hold its job before another replica may take it,
 * for sources whose interval is shorter. */
#define SCHEDULER_MAX_RUN_S 120

/* Starts the thread; the store is borrowed. tick_s is the longest wait
 * between looks for due work: the wait shrinks to a quarter of the
 * shortest source interval (at least 1 s), so that a job freed by a dead
 * replica is taken soon after it falls due. Returns NULL on failure. */
struct scheduler *scheduler_start(struct store *st, int tick_s);
/* Stops after the job in progress and joins; accepts NULL. */
void scheduler_stop(struct scheduler *s);

#endif
