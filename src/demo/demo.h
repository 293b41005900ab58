/* A believable demo fleet for `gpuinv serve --demo`. */
#ifndef GI_DEMO_H
#define GI_DEMO_H

struct store;

/* Fills an empty inventory (no data centers yet) with three data centers
 * and their servers, VMs, storage, switches and InfiniBand, some of it
 * allocated to tenants. Leaves a non-empty inventory alone. */
int demo_fill(struct store *st);

#endif
