/* The server's periodic jobs: pulls each enabled pull source when its
 * interval has passed. One background thread; a failing or slow source
 * delays only the sources queued behind it, never the HTTP server. */
#ifndef GI_SCHEDULER_H
#define GI_SCHEDULER_H

struct store;
struct scheduler;

/* Starts the thread; the store is borrowed. tick_s is how often it looks
 * for due work. Returns NULL on failure. */
struct scheduler *scheduler_start(struct store *st, int tick_s);
/* Stops after the job in progress and joins; accepts NULL. */
void scheduler_stop(struct scheduler *s);

#endif
