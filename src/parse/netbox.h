/* NetBox REST API pages (jansson): /api/dcim/devices/, /api/dcim/modules/
 * and /api/dcim/inventory-items/ lists ({"count","next","previous",
 * "results"}) into the asset records store_asset_ingest takes:
 *
 *   a device       kind "server" ("switch" when its role says so, "other"
 *                  for a PDU or patch panel), serial, tag asset_tag, model
 *                  device_type.model, vendor device_type.manufacturer.name,
 *                  location {datacenter site.name, room location.name, rack
 *                  rack.name, u position}, site_slug (the runner's
 *                  fallback when no data center has the site's name),
 *                  custom {name, role, external_status, external_stage},
 *                  source_key "netbox:device:<id>"
 *   a module       kind "gpu" when its type or manufacturer says GPU
 *                  (NVIDIA, AMD Instinct, "GPU", "accelerator"), else
 *                  "other"; serial, tag, model module_type.model, vendor,
 *                  parent_source_key "netbox:device:<device.id>",
 *                  source_key "netbox:module:<id>"
 *   an item        kind by role or name (gpu, psu, ssd, nic, else other),
 *                  serial, tag, model part_id, vendor, parent_source_key,
 *                  source_key "netbox:item:<id>"
 *
 * Status is a choice {value, label} (v2 used integers: 0 offline ... 6
 * decommissioning); the value is kept as custom.external_status and the
 * stage it would map to as custom.external_stage, never applied. v4's
 * `role` and older `device_role` are both read. Per field: a value of the
 * wrong type is absent and listed in `warnings`; only the structure (not
 * JSON, no results array) fails a page. */
#ifndef GI_PARSE_NETBOX_H
#define GI_PARSE_NETBOX_H

#include <jansson.h>
#include <stddef.h>
#include <stdint.h>

enum netbox_list { NETBOX_DEVICES, NETBOX_MODULES, NETBOX_ITEMS };

#define NETBOX_ERR_LEN 256
#define NETBOX_URL_MAX 2048

/* Parses one list page (body borrowed, len bytes): appends a record per
 * result to records and {"index","field","error"} to warnings (both
 * arrays the caller owns), copies the `next` URL into next ("" on the last
 * page or when it does not fit) and the count into *count (-1 when
 * absent). GI_OK; GI_INVALID with err filled; GI_INTERNAL out of memory. */
int netbox_parse_page(const char *body, size_t len, enum netbox_list list, json_t *records,
                      json_t *warnings, char *next, size_t nextlen, int64_t *count, char *err,
                      size_t errlen);

/* A device lookup by serial (GET /api/dcim/devices/?serial=, which NetBox
 * matches ignoring case): *matches receives a new array (caller owns) of
 * the answer's devices, each with an integer id > 0, and *total the
 * number of devices NetBox says match (count; at least the matches).
 * GI_INVALID with err filled when the answer is no list page, a device
 * has no id, or a device's serial is another one (a NetBox that ignored
 * the filter: nothing may be guessed from such an answer); GI_INTERNAL
 * out of memory. */
int netbox_lookup_parse(const char *body, size_t len, const char *serial, json_t **matches,
                        int64_t *total, char *err, size_t errlen);
/* The explanation in an error answer ({"detail": "..."}) into out; ""
 * when there is none. */
void netbox_error_detail(const char *body, size_t len, char *out, size_t outlen);

/* The stage a NetBox status value maps to (NULL when none): active →
 * active, offline/inventory/staged → spare, planned → ordered, failed →
 * diagnostic_repair, decommissioning → decommissioned. */
const char *netbox_stage_for(const char *status);

#endif
