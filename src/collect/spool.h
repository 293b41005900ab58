/* The agent's on-disk queue of batches not yet acknowledged by the server.
 * Each batch is one file named by a 16-digit sequence number, written to a
 * temporary name, fsynced and renamed, so a crash leaves whole files only.
 * The queue is bounded in bytes; past the bound the oldest batches are
 * dropped and counted (in the file "dropped"). */
#ifndef GI_SPOOL_H
#define GI_SPOOL_H

#include <stddef.h>
#include <stdint.h>

struct spool {
    char dir[512];
    uint64_t max_bytes;
    uint64_t next_seq;
    uint64_t dropped;
};

/* Opens (creating) the directory; scans it for the next sequence number
 * and the dropped count. Returns 0 or -1 (errno set). */
int spool_open(struct spool *sp, const char *dir, uint64_t max_bytes);
/* Appends one batch; may drop the oldest to stay within the bound. */
int spool_put(struct spool *sp, const char *data, size_t len);
/* Reads the oldest batch into *data (caller frees) with its sequence
 * number; returns 1 when one was read, 0 when empty, -1 on error. */
int spool_peek(struct spool *sp, uint64_t *seq, char **data, size_t *len);
/* Removes batch seq after the server acknowledged it. */
int spool_remove(struct spool *sp, uint64_t seq);
/* Sets batch seq aside as "<seq>.rejected" (the server refused it as
 * malformed; it is kept for inspection, not retried). */
int spool_reject(struct spool *sp, uint64_t seq);
/* Number of batches and bytes waiting. */
int spool_stat(struct spool *sp, size_t *count, uint64_t *bytes);

#endif
