/* Runs a vendor tool (nvidia-smi, amd-smi, rocm-smi) without a shell and
 * captures its standard output, bounded in size and time. */
#ifndef GI_RUNCMD_H
#define GI_RUNCMD_H

#include <stddef.h>

/* argv[0] is looked up on PATH. On success *out (NUL-terminated, caller
 * frees) holds stdout; returns 0. Returns -1 with err filled when the
 * program cannot start, runs past timeout_s (it is killed), writes more
 * than max bytes, or exits non-zero (err then holds its first stderr
 * line). */
int runcmd(const char *const argv[], size_t max, int timeout_s, char **out, size_t *len, char *err,
           size_t errlen);

#endif
