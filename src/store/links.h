/* Hooks of the discovery-to-inventory matching (links.c) that other store
 * files call inside their own write transactions. Only src/store/
 * includes this. */
#ifndef GI_STORE_LINKS_H
#define GI_STORE_LINKS_H

#include "store/db.h"

#include <jansson.h>
#include <stdint.h>

/* After a host upsert: re-matches the host when its stored identity
 * (hostname, machine id, serial; borrowed, may be NULL) differs from the
 * one it was last matched with, or it has never been matched; otherwise
 * only keeps its data center equal to its linked server's. One indexed
 * lookup on the common path. */
int links_host_seen(struct conn *c, int64_t host_id, const char *hostname, const char *machine_id,
                    const char *serial);

/* After a resource is created or updated: refreshes its match keys and
 * re-matches the hosts whose identity meets its old or new keys, and the
 * hosts linked to it. */
int links_server_changed(struct conn *c, const char *actor, int64_t resource_id);

/* Before a resource is deleted: its keys go, hosts linked to it (manual
 * links included) return to automatic matching and are re-matched
 * without it. */
int links_server_removing(struct conn *c, const char *actor, int64_t resource_id);

/* The inventory server a GPU sits in, as the GPU document's `resource`
 * member ({id, name, datacenter_id, datacenter, rule, manual}), or JSON
 * null; caller owns *out. */
int links_gpu_resource(struct conn *c, const char *uuid, json_t **out);

/* Normalizes an identity value into buf: trimmed, ASCII lower case, a
 * trailing dot dropped; serial placeholders ("To Be Filled By O.E.M.",
 * "Not Specified", ...) when is_serial. Returns false when nothing usable
 * remains. */
bool links_norm(const char *in, bool is_serial, char *buf, size_t len);

#endif
