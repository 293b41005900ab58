/* The request workers: a fixed set of threads that run handlers taken,
 * in arrival order, from one queue that every libmicrohttpd thread feeds.
 * A handler that blocks (a database round trip, a password hash) then
 * holds one worker, never the other connections of the thread that read
 * its request. */
#ifndef GI_WORKQ_H
#define GI_WORKQ_H

#include <stdbool.h>

struct workq;

/* One queued item; embedded in the caller's struct (the queue links it,
 * never frees it). */
struct workq_item {
    struct workq_item *next;
};

/* Runs one item on a worker thread. */
typedef void (*workq_fn)(struct workq_item *item, void *cls);

/* Starts n workers running fn(item, cls) for each item pushed; NULL when
 * a thread or memory cannot be had. */
struct workq *workq_start(unsigned n, workq_fn fn, void *cls);
/* Queues item (borrowed until fn has run on it); false, leaving it to the
 * caller, once workq_stop() has begun. */
bool workq_push(struct workq *q, struct workq_item *item);
/* Runs what is queued, then stops and joins the workers; later pushes are
 * refused. Accepts NULL. */
void workq_stop(struct workq *q);
/* Frees a stopped queue; accepts NULL. */
void workq_free(struct workq *q);

#endif
