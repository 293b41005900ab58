/* Spare reservations (asset_reservations, migrations 026, 052 and 059):
 * the list, a person's release or change of the expiry, and every other
 * end of a reservation, each called from the one place its cause is
 * written: the spare going active (consumed) or to another stage than
 * spare (cancelled), from asset_stage_change(); the spare leaving the
 * failing asset's data center (cancelled), from every location write;
 * the failing asset returning to active or spare (not_needed), from
 * asset_stage_change(); the expiry passing (expired), from the lifecycle
 * rules' run. A `reserve_spare` rule action (lifecycle_rules.c) makes
 * them. Every end, and every change of the expiry, is an event on both
 * assets (the spare and the one it replaces): `reservation`
 * {reservation_id, state, spare, for, reason}, so the audit chain records
 * it; what a person asks for through the API (a release, an expiry) is
 * also an audit row, an end that follows from another write is not (that
 * write is recorded itself). */
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
    "r.rule_id, r.reserved_at, r.expires_at, r.released_at AS ended_at, r.ended_by, r.end_reason"
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
    X(OPEN_FOR, "SELECT id FROM asset_reservations WHERE for_id = :id AND released_at IS NULL")    \
    X(SPARE_AWAY, "SELECT r.id, d.name FROM asset_reservations r JOIN assets s ON s.id = "         \
                  "r.spare_id JOIN assets f ON f.id = r.for_id LEFT JOIN datacenters d ON d.id = " \
                  "s.datacenter_id WHERE r.spare_id = :id AND r.released_at IS NULL AND "          \
                  "(s.datacenter_id IS NULL OR f.datacenter_id IS NULL OR s.datacenter_id <> "     \
                  "f.datacenter_id)")                                                              \
    X(EXPIRED, "SELECT id FROM asset_reservations WHERE released_at IS NULL AND expires_at IS "    \
               "NOT NULL AND expires_at <= :now ORDER BY expires_at, id LIMIT :limit")             \
    X(SET_EXPIRY, "UPDATE asset_reservations SET expires_at = :at WHERE id = :id AND released_at " \
                  "IS NULL")                                                                       \
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

/* Appends the event `reservation` d on both assets of the reservation r
 * (its document with ids), under actor at `at`. */
static int resv_events(struct conn *c, const json_t *r, json_t *d, const char *actor, int64_t at)
{
    int64_t spare = json_integer_value(json_object_get(r, "spare_id"));
    int64_t for_id = json_integer_value(json_object_get(r, "for_id"));
    int rc = asset_event_append(c, spare, "reservation", actor, d, at);

    if (rc == GI_OK && for_id != spare)
        rc = asset_event_append(c, for_id, "reservation", actor, d, at);
    return rc;
}

/* The event detail of reservation r in state `state` with reason. */
static json_t *resv_detail(const json_t *r, int64_t id, const char *state, const char *reason)
{
    return json_pack("{s:I, s:s, s:s, s:s, s:s?}", "reservation_id", (json_int_t)id, "state", state,
                     "spare", json_string_value(json_object_get(r, "spare")), "for",
                     json_string_value(json_object_get(r, "for_asset")), "reason", reason);
}

/* Ends the open reservation id as `as` (released, consumed, cancelled,
 * not_needed or expired) under actor, with an event on both assets;
 * GI_CONFLICT when it is no longer open. Inside the caller's writing
 * transaction. */
static int resv_end(struct conn *c, int64_t id, const char *as, const char *actor,
                    const char *reason, int64_t now)
{
    struct db_stmt *s;
    json_t *r = NULL, *d = NULL;
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
    d = resv_detail(r, id, as, reason);
    rc = d ? resv_events(c, r, d, actor, now) : GI_INTERNAL;
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

int store_reservation_set_expiry(struct store *st, const char *actor, int64_t id,
                                 int64_t expires_at, json_t **out)
{
    struct conn *c = db_conn_get(st);
    struct db_stmt *s;
    json_t *before = NULL, *d = NULL;
    char reason[96], ts[32];
    int rc = db_tx_begin(c);

    *out = NULL;
    if (rc == GI_OK)
        rc = resv_get(c, id, true, &before);
    if (rc == GI_OK && strcmp(json_string_value(json_object_get(before, "state")), "reserved") != 0)
        rc = GI_CONFLICT;
    if (rc == GI_OK) {
        rc = GI_INTERNAL;
        if ((s = prep(c, ST_SET_EXPIRY))) {
            db_bind_int(s, ":id", id);
            if (expires_at > 0)
                db_bind_int(s, ":at", expires_at);
            else
                db_bind_text(s, ":at", NULL);
            rc = db_exec_done(c, s);
        }
    }
    if (rc == GI_OK && db_changes(c) != 1)
        rc = GI_CONFLICT;
    if (rc == GI_OK) {
        gi_time_format(expires_at, ts, sizeof ts);
        if (expires_at > 0)
            gi_fmt(reason, sizeof reason, "it now expires at %s", ts);
        else
            gi_fmt(reason, sizeof reason, "it no longer expires");
        d = resv_detail(before, id, "reserved", reason);
        rc = d ? resv_events(c, before, d, actor, gi_now()) : GI_INTERNAL;
    }
    if (rc == GI_OK)
        rc = resv_get(c, id, false, out);
    if (rc == GI_OK) {
        json_object_del(before, "spare_id");
        json_object_del(before, "for_id");
        rc = db_audit(c, actor, "update", "reservation", id, before, *out);
    }
    rc = db_tx_end_doc(c, rc, out);
    json_decref(before);
    json_decref(d);
    db_conn_put(st, c);
    return rc;
}

/* The open reservation that statement `which` finds for asset_id (0 when
 * there is none) and, when name is given, its second column (a data
 * center's name; "" when NULL). */
static int open_of(struct conn *c, enum stmt_id which, int64_t asset_id, int64_t *id, char *name,
                   size_t namelen)
{
    struct db_stmt *s = prep(c, which);
    int step;

    *id = 0;
    if (!s)
        return GI_INTERNAL;
    db_bind_int(s, ":id", asset_id);
    step = db_step(c, s);
    if (step == DB_ROW) {
        *id = db_col_int(s, 0);
        if (name)
            gi_strlcpy(name, db_col_text(s, 1) ? db_col_text(s, 1) : "", namelen);
    }
    db_reset(s);
    return step == DB_ROW || step == DB_DONE ? GI_OK : db_status(step);
}

int asset_reservations_on_stage(struct conn *c, int64_t asset_id, const char *to, const char *actor,
                                int64_t at)
{
    bool active = strcmp(to, "active") == 0, spare = strcmp(to, "spare") == 0;
    char reason[96];
    int64_t id = 0;
    int rc = GI_OK;

    if (!spare && (rc = open_of(c, ST_OPEN_OF_SPARE, asset_id, &id, NULL, 0)) == GI_OK && id) {
        gi_fmt(reason, sizeof reason, "the spare moved to %s", to);
        rc = resv_end(c, id, active ? "consumed" : "cancelled", actor,
                      active ? "the spare went active" : reason, at);
    }
    if (rc == GI_OK && (active || spare) &&
        (rc = open_of(c, ST_OPEN_FOR, asset_id, &id, NULL, 0)) == GI_OK && id) {
        gi_fmt(reason, sizeof reason, "the asset returned to %s", to);
        rc = resv_end(c, id, "not_needed", actor, reason, at);
    }
    return rc;
}

int asset_reservations_on_move(struct conn *c, int64_t asset_id, const char *actor, int64_t at)
{
    char dc[128] = "", reason[192];
    int64_t id = 0;
    int rc = open_of(c, ST_SPARE_AWAY, asset_id, &id, dc, sizeof dc);

    if (rc != GI_OK || !id)
        return rc;
    if (dc[0])
        gi_fmt(reason, sizeof reason, "the spare moved to data center %s", dc);
    else
        gi_fmt(reason, sizeof reason, "the spare no longer has a data center");
    return resv_end(c, id, "cancelled", actor, reason, at);
}

int asset_reservations_due(struct conn *c, int64_t now, bool *due)
{
    struct db_stmt *s = prep(c, ST_EXPIRED);
    int64_t id = 0;
    int rc;

    *due = false;
    if (!s)
        return GI_INTERNAL;
    db_bind_int(s, ":now", now);
    db_bind_int(s, ":limit", 1);
    rc = db_fetch_int(c, s, &id);
    *due = rc == GI_OK;
    return rc == GI_NOT_FOUND ? GI_OK : rc;
}

int asset_reservations_expire(struct conn *c, const char *actor, int64_t now, int64_t limit,
                              int64_t *ended)
{
    struct db_stmt *s = prep(c, ST_EXPIRED);
    json_t *rows = NULL, *row;
    size_t i;
    int rc;

    *ended = 0;
    if (!s)
        return GI_INTERNAL;
    db_bind_int(s, ":now", now);
    db_bind_int(s, ":limit", limit);
    if ((rc = db_collect(c, s, &rows)) != GI_OK)
        return rc;
    json_array_foreach(rows, i, row) {
        rc = resv_end(c, json_integer_value(json_object_get(row, "id")), "expired", actor,
                      "the reservation expired", now);
        if (rc != GI_OK)
            break;
        (*ended)++;
    }
    json_decref(rows);
    return rc;
}
