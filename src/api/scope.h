/* The data-center scope of the request's identity (r->who.dcs): the one
 * place asset, resource, scan and allocation handlers ask whether a write,
 * a single read or a list is within the token's data centers. An identity with no data
 * centers listed reaches every data center. */
#ifndef GI_API_SCOPE_H
#define GI_API_SCOPE_H

#include "http/request.h"
#include "store/store.h"

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
 * is 403 (whether the token has one data center or several); none given
 * becomes its one data center, or, when it has several, leaves *dc_id 0
 * and sets *sc to them all (with sc NULL, for a report that reads one
 * data center, that is 400 naming `datacenter`). */
bool who_dc_filter_or_reply(struct req *r, int64_t *dc_id, struct store_scope *sc);
/* The scope every list of things in data centers is narrowed by: r->who's
 * data centers (n 0, every data center, for an unconfined identity). */
void who_scope(const struct req *r, struct store_scope *out);
/* The same for a report's filter that names its data center (usage and
 * insights: a name, or an id): for a confined identity *name becomes the
 * name (copied into buf) of the data center the filter is restricted to,
 * or, with no name given, a token of several data centers leaves *name
 * NULL and sets *sc to its data centers (sc->n 0 otherwise; with sc NULL
 * that is 400 naming `datacenter`). A name that matches no data center is
 * left as it is (it matches nothing). */
bool who_dc_name_scope_or_reply(struct req *r, const char **name, char *buf, size_t len,
                                struct store_scope *sc);
/* For a report or a rule that cannot be narrowed to data centers
 * (unmatched billing lines, lifecycle rules): true for an unconfined identity; otherwise
 * 403 forbidden naming `what`. */
bool who_unconfined_or_reply(struct req *r, const char *what);

/* What a single read names (who_may_see_or_reply). */
enum who_thing {
    WHO_ASSET,         /* key: tag */
    WHO_GPU,           /* key: UUID; where its host is */
    WHO_HOST,          /* id; where its linked inventory server is */
    WHO_HOST_NAME,     /* key: host name */
    WHO_TICKET,        /* id; where its asset is, else its GPU */
    WHO_RESOURCE,      /* id */
    WHO_ROOM_AUDIT,    /* id */
    WHO_DATACENTER,    /* id: the data center itself */
    WHO_SOURCE,        /* id; where every GPU it reported is */
    WHO_SYNC_CONFLICT, /* id; where its asset is */
};
/* The one check of every single-item read: true when r->who may read the
 * thing, or when there is no such thing (the handler answers 404).
 * Otherwise, for a confined identity and a thing outside its data centers
 * or in none, replies 404 exactly as for a thing that does not exist (so
 * that a confined token cannot probe other data centers) and returns
 * false. */
bool who_may_see_or_reply(struct req *r, enum who_thing t, const char *key, int64_t id);
/* For a write that names an asset (tag) and/or a GPU (UUID), either NULL
 * or "" (opening a ticket): true for an unconfined identity; for a
 * confined one each named thing must exist and be within its data
 * centers, else 404 naming it, exactly as a read of a missing asset or
 * GPU answers. */
bool who_may_name_or_reply(struct req *r, const char *tag, const char *uuid);
/* The same check without a reply: GI_OK when r->who may read the thing
 * or there is no such thing, GI_NOT_FOUND when it is outside the scope
 * (the caller answers exactly as for a missing thing), another status
 * when the store fails. */
int who_sees(struct req *r, enum who_thing t, const char *key, int64_t id);

#endif
