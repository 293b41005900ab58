/* Spare reservations (asset_reservations, migrations 026 and 052): the
 * list, a person's release, and the consumption of a reservation when its
 * spare goes active as the replacement. A `reserve_spare` rule action
 * (lifecycle_rules.c) makes them. Every end of a reservation is an event
 * on both assets (the spare and the one it replaces): `reservation`
 * {reservation_id, state, spare, for, reason}, so the audit chain records
 * it. */
#include "store/assets_int.h"
#include "store/store_int.h"
#include "core/status.h"
#include "core/util.h"

#include <string.h>

#define RESV_STATE                                                                                 \
    "CASE WHEN r.released_at IS NULL THEN 'reserved' ELSE COALESCE(r.ended_as, 'released') END"
#define RESV_COLS                                                                                  \
    "r.id, " RESV_STATE " AS state, s.tag AS spare, f.tag AS for_asset, s.model, "                 \
    "s.datacenter_id, d.name AS datacenter, s.stage AS spare_stage, f.stage AS for_stage, "        \
    "r.rule_id, r.reserved_at, r.released_at AS ended_at, r.ended_by, r.end_reason"
#define RESV_FROM                                                                                  \
    " FROM asset_reservations r JOIN assets s ON s.id = r.spare_id JOIN assets f ON f.id = "       \
    "r.for_id LEFT JOIN datacenters d ON d.id = s.datacenter_id "
#define RESV_WHERE                                                                                 \
    "WHERE (:dc = 0 OR s.datacenter_id = :dc) AND " STORE_SCOPE_IN(                                \
        "s.datacenter_id") " AND "                                                                 \
                           "(:model IS NULL OR s.model = :model) AND "                             \
                           "(:state IS NULL OR (:state = 'reserved' AND r.released_at IS NULL) "   \
                           "OR (r.released_at IS NOT "                                             \
                           "NULL AND COALESCE(r.ended_as, 'released') = :state)) AND (:asset = 0 " \
                           "OR r.spare_id = :asset "                                               \
                           "OR r.for_id = :asset) "

#define STATEMENTS(X)                                                                              \
    X(LIST, "SELECT " RESV_COLS RESV_FROM RESV_WHERE "ORDER BY r.id DESC " PAGE)                   \
    X(COUNT, "SELECT COUNT(*)" RESV_FROM RESV_WHERE)                                               \
    X(GET, "SELECT " RESV_COLS ", r.spare_id, r.for_id" RESV_FROM "WHERE r.id = :id")              \
    X(OPEN_OF_SPARE, "SELECT id FROM asset_reservations WHERE spare_id = :id AND released_at IS "  \
                     "NULL")                                                                       \
    X(END, "UPDATE asset_reservations SET released_at = :now, ended_as = :as, ended_by = :who, "   \
           "end_reason = :reason WHERE id = :id AND released_at IS NULL")

enum stmt_id { STATEMENTS(STORE_AS_ENUM) ST__COUNT };
static const char *const stmt_sql[] = {STATEMENTS(STORE_AS_SQL)};

static struct db_stmt *prep(struct conn *c, enum stmt_id id) { return db_prep(c, stmt_sql[id]); }

/* The filter with its asset resolved to an id (0: none given). */
struct resv_bound {
    const struct store_resv_filter *f;
    int64_t asset_id;
};

static void bind_filter(struct db_stmt *s, const void *filter)
{
    const struct resv_bound *b = filter;

    db_bind_int(s, ":dc", b->f->datacenter_id);
    db_bind_scope(s, &b->f->scope);
    db_bind_text(s, ":model", b->f->model);
    db_bind_text(s, ":state", b->f->state);
    db_bind_int(s, ":asset", b->asset_id);
}

int store_reservations_list(struct store *st, const struct store_resv_filter *f,
                            const struct store_page *pg, json_t **items, int64_t *total)
{
    struct resv_bound b = {f, 0};

    if (f->asset) {
        struct conn *c = db_conn_get(st);
        int rc = asset_id_by_tag(c, f->asset, &b.asset_id);
        db_conn_put(st, c);
        if (rc != GI_OK)
            return rc;
    }
    return db_list_page(st, stmt_sql[ST_COUNT], stmt_sql[ST_LIST], bind_filter, &b, pg, items,
                        total);
}

/* The reservation document of id (with spare_id and for_id when ids);
 * caller owns *out. */
static int resv_get(struct conn *c, int64_t id, bool ids, json_t **out)
{
    struct db_stmt *s = prep(c, ST_GET);
    int rc;

    if (!s)
        return GI_INTERNAL;
    db_bind_int(s, ":id", id);
    rc = db_fetch_one(c, s, out);
    if (rc == GI_OK && !ids) {
        json_object_del(*out, "spare_id");
        json_object_del(*out, "for_id");
    }
    return rc;
}

int store_reservation_get(struct store *st, int64_t id, json_t **out)
{
    struct conn *c = db_conn_get(st);
    int rc = resv_get(c, id, false, out);

    db_conn_put(st, c);
    return rc;
}

/* Ends the open reservation id as `as` ("released" or "consumed") under
 * actor, with an event on both assets; GI_CONFLICT when it is no longer
 * open. Inside the caller's writing transaction. */
static int resv_end(struct conn *c, int64_t id, const char *as, const char *actor,
                    const char *reason, int64_t now)
{
    struct db_stmt *s;
    json_t *r = NULL, *d = NULL;
    int64_t spare, for_id;
    int rc;

    if ((rc = resv_get(c, id, true, &r)) != GI_OK)
        return rc;
    rc = GI_CONFLICT;
    if (strcmp(json_string_value(json_object_get(r, "state")), "reserved") != 0)
        goto cleanup;
    rc = GI_INTERNAL;
    if (!(s = prep(c, ST_END)))
        goto cleanup;
    db_bind_int(s, ":id", id);
    db_bind_int(s, ":now", now);
    db_bind_text(s, ":as", as);
    db_bind_text(s, ":who", actor);
    db_bind_text(s, ":reason", reason);
    if ((rc = db_exec_done(c, s)) != GI_OK)
        goto cleanup;
    if (db_changes(c) != 1) {
        rc = GI_CONFLICT;
        goto cleanup;
    }
    spare = json_integer_value(json_object_get(r, "spare_id"));
    for_id = json_integer_value(json_object_get(r, "for_id"));
    d = json_pack("{s:I, s:s, s:s, s:s, s:s?}", "reservation_id", (json_int_t)id, "state", as,
                  "spare", json_string_value(json_object_get(r, "spare")), "for",
                  json_string_value(json_object_get(r, "for_asset")), "reason", reason);
    rc = d ? asset_event_append(c, spare, "reservation", actor, d, now) : GI_INTERNAL;
    if (rc == GI_OK && for_id != spare)
        rc = asset_event_append(c, for_id, "reservation", actor, d, now);
cleanup:
    json_decref(r);
    json_decref(d);
    return rc;
}

int store_reservation_release(struct store *st, const char *actor, int64_t id, const char *reason,
                              json_t **out)
{
    struct conn *c = db_conn_get(st);
    int rc = db_tx_begin(c);

    *out = NULL;
    if (rc == GI_OK)
        rc = resv_end(c, id, "released", actor, reason, gi_now());
    if (rc == GI_OK)
        rc = resv_get(c, id, false, out);
    if (rc == GI_OK)
        rc = db_audit(c, actor, "release", "reservation", id, NULL, *out);
    rc = db_tx_end_doc(c, rc, out);
    db_conn_put(st, c);
    return rc;
}

int asset_reservation_consume(struct conn *c, int64_t asset_id, const char *actor, int64_t at)
{
    struct db_stmt *s = prep(c, ST_OPEN_OF_SPARE);
    int64_t id = 0;
    int rc;

    if (!s)
        return GI_INTERNAL;
    db_bind_int(s, ":id", asset_id);
    rc = db_fetch_int(c, s, &id);
    if (rc == GI_NOT_FOUND)
        return GI_OK;
    if (rc != GI_OK)
        return rc;
    return resv_end(c, id, "consumed", actor, "the spare went active", at);
}
