/* Sign-in throttling, in memory: failures counted per key (a user name or
 * a client address) in a fixed window, and a bound on how many password
 * verifications run at once, so a flood of sign-ins can neither guess
 * passwords quickly nor take the worker threads from other requests. */
#ifndef GI_THROTTLE_H
#define GI_THROTTLE_H

#include <stdbool.h>
#include <stdint.h>

/* Seconds over which failures are counted. */
#define THROTTLE_WINDOW 900
/* Password verifications that may run at once, and how many more may
 * wait (each for at most THROTTLE_WAIT_MS) for one to finish. */
#define THROTTLE_WORKERS 2
#define THROTTLE_QUEUE 2
#define THROTTLE_WAIT_MS 2000

struct throttle;

/* A new, empty throttle; NULL when out of memory. Caller frees. */
struct throttle *throttle_new(void);
/* Accepts NULL. */
void throttle_free(struct throttle *t);
/* Seconds until `key` may try again: 0 while it has had fewer than
 * `limit` failures in the current window. */
int64_t throttle_wait(struct throttle *t, const char *key, int limit, int64_t now);
/* Counts one failure for key. */
void throttle_failed(struct throttle *t, const char *key, int64_t now);
/* Forgets key's failures (after a success). */
void throttle_reset(struct throttle *t, const char *key);
/* Takes a slot for one password verification; false when every slot is
 * busy and the queue is full, or the wait ran out. A true return must be
 * paired with throttle_work_end(). */
bool throttle_work_begin(struct throttle *t);
void throttle_work_end(struct throttle *t);

#endif
