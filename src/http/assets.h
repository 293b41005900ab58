/* The dashboard's static files, embedded into the binary at build time. */
#ifndef GI_ASSETS_H
#define GI_ASSETS_H

#include <stdbool.h>

struct req;

/* Replies with the embedded file for r->path ("/" is index.html) and
 * returns true, or returns false when there is no such file. */
bool assets_serve(struct req *r);

#endif
