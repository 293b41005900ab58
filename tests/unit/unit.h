/* Shared preamble for the cmocka unit tests: cmocka needs these headers
 * included before its own, in this order. */
#ifndef GI_UNIT_H
#define GI_UNIT_H

#include <setjmp.h>
#include <stdarg.h>
#include <stddef.h>
#include <stdint.h>

#include <cmocka.h>

#include "core/status.h"

/* Asserts a gi_status and prints both names when they differ. */
#define assert_status(got, want)                                                                   \
    do {                                                                                           \
        int got_ = (got), want_ = (want);                                                          \
        if (got_ != want_)                                                                         \
            fail_msg("%s: got %s, want %s", #got, gi_status_name(got_), gi_status_name(want_));    \
    } while (0)

#endif
