/* The overall time limit of a test run of a pull source: set on the
 * thread that runs the pull (pull_test_source), it bounds every request
 * and command of that pull, so a paged listing or a retried answer ends
 * when the limit does, not only each request by the source's timeout. A
 * thread without a limit is unbounded here (scheduled pulls). */
#ifndef GI_DEADLINE_H
#define GI_DEADLINE_H

#include <stdbool.h>
#include <stdint.h>

/* Starts a limit of `seconds` from now on this thread (<= 0: none). */
void pull_deadline_set(int64_t seconds);
/* Ends this thread's limit. */
void pull_deadline_clear(void);
/* The milliseconds a step that would take up to want_ms may take under
 * this thread's limit: want_ms without a limit, else the smaller of
 * want_ms and what is left (0 once the limit has passed). */
long pull_deadline_clip_ms(long want_ms);
/* Whether this thread has a limit and it has passed. */
bool pull_deadline_passed(void);
/* This thread's limit in seconds, 0 when none. */
int64_t pull_deadline_seconds(void);

#endif
