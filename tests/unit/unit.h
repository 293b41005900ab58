/* Shared preamble for the cmocka unit tests: cmocka needs these headers
 * included before its own, in this order. */
#ifndef GI_UNIT_H
#define GI_UNIT_H

#include <setjmp.h>
#include <stdarg.h>
#include <stddef.h>
#include <stdint.h>

#include <cmocka.h>

#include <stdio.h>
#include <stdlib.h>
#include <unistd.h>

#include "core/status.h"

/* Asserts a gi_status and prints both names when they differ. */
#define assert_status(got, want)                                                                   \
    do {                                                                                           \
        int got_ = (got), want_ = (want);                                                          \
        if (got_ != want_)                                                                         \
            fail_msg("%s: got %s, want %s", #got, gi_status_name(got_), gi_status_name(want_));    \
    } while (0)

/* Reads tests/fixtures/<dir>/<name> (GI_FIXTURES is set by the build).
 * Fails the test when it cannot; caller frees; *len excludes the NUL. */
static inline char *unit_fixture(const char *dir, const char *name, size_t *len)
{
    char path[1024];
    FILE *f;
    char *buf;
    long n;

    snprintf(path, sizeof path, "%s/%s/%s", GI_FIXTURES, dir, name);
    f = fopen(path, "rb");
    if (f == NULL)
        fail_msg("cannot open fixture %s", path);
    fseek(f, 0, SEEK_END);
    n = ftell(f);
    fseek(f, 0, SEEK_SET);
    buf = malloc((size_t)n + 1);
    assert_non_null(buf);
    assert_int_equal(fread(buf, 1, (size_t)n, f), (size_t)n);
    buf[n] = '\0';
    fclose(f);
    *len = (size_t)n;
    return buf;
}

/* Removes a test database at path (with its WAL and shared-memory files)
 * and the temporary directory dir that held it. */
static inline void unit_db_remove(const char *path, const char *dir)
{
    static const char *const suffix[] = {"", "-wal", "-shm"};

    for (int i = 0; i < 3; i++) {
        char p[1024];
        snprintf(p, sizeof p, "%s%s", path, suffix[i]);
        unlink(p);
    }
    rmdir(dir);
}

#endif
