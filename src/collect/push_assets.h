/* Push-back to NetBox and Snipe-IT: sends the pushes that scans, moves and
 * stage changes queued (store.h's store_sync_claim), run by the
 * webhooks:deliver job after its webhook deliveries, with the same retry
 * schedule and log. Each push reads the remote object first; a field the
 * remote changed since gpuinv last synced it is not written but kept as
 * a conflict (store_sync_done).
 *
 * NetBox: GET then PATCH /api/dcim/devices/{id}/ with site, rack,
 * position (and face "front" when the device has none) and status.
 * Snipe-IT: GET /api/v1/hardware/{id}, then POST .../checkin and/or
 * .../checkout (to a location) for the location, and PATCH
 * /api/v1/hardware/{id} with status_id (and location_id when the asset is
 * not checked out). Both with the source's token. */
#ifndef GI_PUSH_ASSETS_H
#define GI_PUSH_ASSETS_H

#include <jansson.h>
#include <stdint.h>

struct store;
struct deliver_stats;

/* The remote's value for gpuinv's stage: config.push_statuses[stage],
 * else active → active, spare → inventory, received → staged, ordered →
 * planned, diagnostic_repair → failed, refurbishment_candidate → offline,
 * decommissioned → decommissioning. NULL for an unknown stage. */
const char *push_netbox_status(const json_t *cfg, const char *stage);

/* What gpuinv holds for each pushed field of asset (its document), as
 * text: NetBox {site, rack, position, status}, Snipe-IT {location,
 * status (the status label id config.push_status_ids maps the stage
 * to)}. A field gpuinv has no value for is absent. Caller owns. */
json_t *push_ours(const char *kind, const json_t *cfg, const json_t *asset);
/* The same fields as the remote object obj holds them (NetBox site.name,
 * rack.name, position, status.value; Snipe-IT location.name,
 * status_label.id); absent when the remote has none. Caller owns. */
json_t *push_theirs(const char *kind, const json_t *obj);
/* Splits the fields: those where the remote already holds ours go to
 * seen (their remote value), a field held back by a "keep theirs" while
 * ours is unchanged is skipped, a field whose remote value differs from
 * the last-synced one (base {field: {value, held}}) becomes a conflict
 * {field, ours, theirs, base}, and so does a field with no last-synced
 * value (never pulled, or empty when pulled) that the remote now holds a
 * value for, other than ours (base absent); the rest go to write. */
void push_plan(const json_t *ours, const json_t *theirs, const json_t *base, json_t *write,
               json_t *seen, json_t *conflicts);

/* Claims and sends one batch of due pushes, adding to stats (may be
 * NULL). */
int push_assets_run(struct store *st, int64_t now, struct deliver_stats *stats);

#endif
