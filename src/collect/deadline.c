/* The overall time limit of a test pull; see deadline.h. */
#include "collect/deadline.h"

#include <time.h>

static _Thread_local int64_t limit_s;
static _Thread_local long long until_ms; /* 0: no limit */

static long long now_ms(void)
{
    struct timespec t;
    clock_gettime(CLOCK_MONOTONIC, &t);
    return (long long)t.tv_sec * 1000 + t.tv_nsec / 1000000;
}

void pull_deadline_set(int64_t seconds)
{
    limit_s = seconds > 0 ? seconds : 0;
    until_ms = seconds > 0 ? now_ms() + (long long)seconds * 1000 : 0;
}

void pull_deadline_clear(void)
{
    limit_s = 0;
    until_ms = 0;
}

long pull_deadline_clip_ms(long want_ms)
{
    long long left;

    if (!until_ms)
        return want_ms;
    left = until_ms - now_ms();
    if (left <= 0)
        return 0;
    return left < want_ms ? (long)left : want_ms;
}

bool pull_deadline_passed(void) { return until_ms && now_ms() >= until_ms; }

int64_t pull_deadline_seconds(void) { return limit_s; }
