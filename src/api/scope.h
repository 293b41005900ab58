/* The data-center scope of the request's identity (r->who.dcs): the one
 * place asset, resource, scan and allocation handlers ask whether a write
 * or a list is within the token's data centers. An identity with no data
 * centers listed reaches every data center. */
#ifndef GI_API_SCOPE_H
#define GI_API_SCOPE_H

#include "http/request.h"

#include <jansson.h>
#include <stdbool.h>
#include <stdint.h>

/* True when r->who may change what lies in data center dc_id (0: no data
 * center, which a confined identity may not touch); otherwise replies
 * 403 forbidden naming the data center and returns false. */
bool who_may_dc_or_reply(struct req *r, int64_t dc_id);
/* The same for the asset of this tag or EPC (one NULL), where it is now;
 * true without a reply when no asset matches (the handler answers 404). */
bool who_may_asset_or_reply(struct req *r, const char *tag, const char *epc);
/* The same for the data center an asset record (POST/PATCH body, import
 * row, scan location: top-level or location.datacenter by name,
 * datacenter_id) puts the asset in. A record that names none leaves the
 * asset where it is (`creating` false) or puts it in no data center
 * (`creating` true). A name that matches no data center is left for the
 * handler to refuse. */
bool who_may_asset_record_or_reply(struct req *r, const json_t *rec, bool creating);
/* The same for the inventory resource `id`, where it is now; true
 * without a reply when there is no such resource. */
bool who_may_resource_or_reply(struct req *r, int64_t id);
/* A list's data-center filter (*dc_id 0: none given) restricted to
 * r->who's data centers: for a confined identity, a filter outside them
 * is 403; none given becomes its one data center, or 400 naming
 * `datacenter` when it has several. */
bool who_dc_filter_or_reply(struct req *r, int64_t *dc_id);

#endif
