/* Scans: an asset found by its tag or EPC (ignoring case) at a location.
 * The location it was found at becomes its location (a "located" event
 * {from, to} when that changed), an optional stage change goes through
 * the lifecycle, and the scan itself is a "scan" event {location, note,
 * via}. The location's fields are marked as set by 'scan', so an import
 * source does not move the asset back (a person through the API still
 * may). See store.h. */
#include "store/assets_int.h"
#include "core/status.h"
#include "core/util.h"

#include <stdio.h>
#include <string.h>

#define STATEMENTS(X)                                                                              \
    X(BY_TAG, "SELECT id FROM assets WHERE LOWER(tag) = LOWER(:v) ORDER BY CASE WHEN tag = :v "    \
              "THEN 0 ELSE 1 END, id LIMIT 1")                                                     \
    X(BY_EPC, "SELECT id FROM assets WHERE LOWER(epc) = LOWER(:v) ORDER BY CASE WHEN epc = :v "    \
              "THEN 0 ELSE 1 END, id LIMIT 1")                                                     \
    X(LOC, "SELECT a.datacenter_id, d.name, a.room, a.rack, a.rack_u, a.storage, a.tag FROM "      \
           "assets a LEFT JOIN datacenters d ON d.id = a.datacenter_id WHERE a.id = :id")          \
    X(DC_NAME, "SELECT name FROM datacenters WHERE id = :id")                                      \
    X(SET_LOC, "UPDATE assets SET datacenter_id = :dc, room = :room, rack = :rack, rack_u = :u, "  \
               "storage = :storage, updated_at = :now WHERE id = :id")                             \
    X(PROV_SET, "INSERT INTO asset_fields (asset_id, field, source, at) VALUES (:id, :field, "     \
                "'scan', :at) ON CONFLICT (asset_id, field) DO UPDATE SET source = "               \
                "excluded.source, at = excluded.at")

enum stmt_id { STATEMENTS(STORE_AS_ENUM) ST__COUNT };
static const char *const stmt_sql[] = {STATEMENTS(STORE_AS_SQL)};

static struct db_stmt *prep(struct conn *c, enum stmt_id id) { return db_prep(c, stmt_sql[id]); }

/* The location columns, in the order of the statements above. */
static const char *const loc_cols[] = {"datacenter_id", "room", "rack", "rack_u", "storage", NULL};

int asset_find(struct conn *c, const char *tag, const char *epc, int64_t *id)
{
    struct db_stmt *s = prep(c, tag ? ST_BY_TAG : ST_BY_EPC);

    if (!s)
        return GI_INTERNAL;
    db_bind_text(s, ":v", tag ? tag : epc);
    return db_fetch_int(c, s, id);
}

static json_t *text_or_null(struct db_stmt *s, int i)
{
    return db_col_is_null(s, i) ? json_null() : json_string(db_col_text(s, i));
}

/* The asset's location: *cols by column name, *loc as the API shows it
 * {datacenter (name), room, rack, u, storage}. Either may be NULL. */
static int loc_read(struct conn *c, int64_t id, json_t **cols, json_t **loc, char *tag,
                    size_t taglen)
{
    struct db_stmt *s = prep(c, ST_LOC);
    int step;

    if (!s)
        return GI_INTERNAL;
    db_bind_int(s, ":id", id);
    step = db_step(c, s);
    if (step == DB_ROW) {
        json_t *u = db_col_is_null(s, 4) ? json_null() : json_integer(db_col_int(s, 4));
        if (cols)
            *cols = json_pack("{s:o, s:o, s:o, s:O, s:o}", "datacenter_id",
                              db_col_is_null(s, 0) ? json_null() : json_integer(db_col_int(s, 0)),
                              "room", text_or_null(s, 2), "rack", text_or_null(s, 3), "rack_u", u,
                              "storage", text_or_null(s, 5));
        if (loc)
            *loc = json_pack("{s:o, s:o, s:o, s:O, s:o}", "datacenter", text_or_null(s, 1), "room",
                             text_or_null(s, 2), "rack", text_or_null(s, 3), "u", u, "storage",
                             text_or_null(s, 5));
        if (tag)
            gi_strlcpy(tag, db_col_text(s, 6), taglen);
        json_decref(u);
    }
    db_reset(s);
    return step == DB_ROW ? GI_OK : step == DB_DONE ? GI_NOT_FOUND : db_status(step);
}

int asset_location_doc(struct conn *c, const json_t *cols, json_t **loc)
{
    int64_t dc = json_integer_value(json_object_get(cols, "datacenter_id"));
    json_t *name = json_null();
    struct db_stmt *s;
    int step;

    if (dc) {
        if (!(s = prep(c, ST_DC_NAME)))
            return GI_INTERNAL;
        db_bind_int(s, ":id", dc);
        step = db_step(c, s);
        if (step == DB_ROW)
            name = json_string(db_col_text(s, 0));
        db_reset(s);
        if (step != DB_ROW && step != DB_DONE)
            return db_status(step);
    }
    *loc = json_pack("{s:o, s:O, s:O, s:O, s:O}", "datacenter", name, "room",
                     json_object_get(cols, "room"), "rack", json_object_get(cols, "rack"), "u",
                     json_object_get(cols, "rack_u"), "storage", json_object_get(cols, "storage"));
    return *loc ? GI_OK : GI_INTERNAL;
}

int asset_locate(struct conn *c, int64_t id, const json_t *to_cols, const char *actor, int64_t at,
                 bool *moved)
{
    json_t *cur = NULL, *from = NULL, *to = NULL, *next = json_object(), *detail = NULL;
    struct db_stmt *s;
    int rc;

    *moved = false;
    for (int i = 0; loc_cols[i]; i++) {
        json_t *v = json_object_get(to_cols, loc_cols[i]);
        json_object_set_new(next, loc_cols[i], v ? json_incref(v) : json_null());
    }
    if ((rc = loc_read(c, id, &cur, &from, NULL, 0)) != GI_OK)
        goto cleanup;
    if (json_equal(cur, next))
        goto cleanup;
    rc = GI_INTERNAL;
    if (!(s = prep(c, ST_SET_LOC)))
        goto cleanup;
    db_bind_int(s, ":id", id);
    db_bind_int(s, ":now", at);
    if (json_is_integer(json_object_get(next, "datacenter_id")))
        db_bind_int(s, ":dc", json_integer_value(json_object_get(next, "datacenter_id")));
    else
        db_bind_text(s, ":dc", NULL);
    db_bind_text(s, ":room", json_string_value(json_object_get(next, "room")));
    db_bind_text(s, ":rack", json_string_value(json_object_get(next, "rack")));
    if (json_is_integer(json_object_get(next, "rack_u")))
        db_bind_int(s, ":u", json_integer_value(json_object_get(next, "rack_u")));
    else
        db_bind_text(s, ":u", NULL);
    db_bind_text(s, ":storage", json_string_value(json_object_get(next, "storage")));
    if ((rc = db_exec_done(c, s)) != GI_OK || (rc = asset_doc_save(c, id)) != GI_OK)
        goto cleanup;
    for (int i = 0; loc_cols[i]; i++) {
        if (json_equal(json_object_get(cur, loc_cols[i]), json_object_get(next, loc_cols[i])))
            continue;
        rc = GI_INTERNAL;
        if (!(s = prep(c, ST_PROV_SET)))
            goto cleanup;
        db_bind_int(s, ":id", id);
        db_bind_text(s, ":field", loc_cols[i]);
        db_bind_int(s, ":at", at);
        if ((rc = db_exec_done(c, s)) != GI_OK)
            goto cleanup;
    }
    if ((rc = asset_location_doc(c, next, &to)) != GI_OK)
        goto cleanup;
    detail = json_pack("{s:O, s:O}", "from", from, "to", to);
    if ((rc = asset_event_append(c, id, "located", actor, detail, at)) == GI_OK)
        rc = asset_hook_emit(c, id, "asset.location_changed", actor, detail, NULL, at);
    if (rc == GI_OK)
        rc = asset_sync_queue(c, id, "located", at);
    if (rc == GI_OK &&
        !json_equal(json_object_get(cur, "datacenter_id"), json_object_get(next, "datacenter_id")))
        rc = asset_reservations_on_move(c, id, actor, at);
    *moved = rc == GI_OK;
cleanup:
    json_decref(cur);
    json_decref(from);
    json_decref(to);
    json_decref(next);
    json_decref(detail);
    return rc;
}

static void err_set(struct store_scan_err *err, const char *field, const char *msg)
{
    if (!err)
        return;
    gi_strlcpy(err->field, field, sizeof err->field);
    gi_strlcpy(err->message, msg, sizeof err->message);
}

/* The scanned location as column values: every location column, those
 * the scan does not name null (the asset is where it was found, not
 * partly where it was before). */
static int scan_cols(struct conn *c, const json_t *location, int64_t id, json_t **cols,
                     struct store_scan_err *err)
{
    json_t *rec = json_pack("{s:O}", "location", location), *errors = json_array(), *read = NULL;
    const char *stage = NULL;
    int rc = asset_fields_read(c, rec, true, id, 0, &read, &stage, errors);

    *cols = NULL;
    if (rc == GI_INVALID) {
        json_t *e = json_array_get(errors, 0);
        err_set(err, json_string_value(json_object_get(e, "field")),
                json_string_value(json_object_get(e, "error")));
    }
    if (rc == GI_OK) {
        *cols = json_object();
        for (int i = 0; loc_cols[i]; i++) {
            json_t *v = json_object_get(read, loc_cols[i]);
            json_object_set_new(*cols, loc_cols[i], v ? json_incref(v) : json_null());
        }
    }
    json_decref(read);
    json_decref(rec);
    json_decref(errors);
    return rc;
}

int store_scan(struct store *st, const char *actor, const struct store_scan *sc, json_t **out,
               struct store_scan_err *err)
{
    struct conn *c = db_conn_get(st);
    json_t *cols = NULL, *where = NULL, *detail = NULL;
    const char *via = sc->tag ? "tag" : "epc";
    int64_t id = 0, now = gi_now();
    char tag[80] = "", why[192] = "";
    bool moved = false;
    int rc = db_tx_begin(c);

    *out = NULL;
    if (rc == GI_OK && (rc = asset_find(c, sc->tag, sc->epc, &id)) == GI_NOT_FOUND)
        err_set(err, via, sc->tag ? "no asset has this tag" : "no asset carries this EPC");
    if (rc == GI_OK && sc->location && (rc = scan_cols(c, sc->location, id, &cols, err)) == GI_OK)
        rc = asset_locate(c, id, cols, actor, now, &moved);
    if (rc == GI_OK && sc->stage) {
        if (err)
            asset_stage_of(c, id, err->stage, sizeof err->stage);
        rc = asset_stage_change(c, id, sc->stage, sc->reason ? sc->reason : sc->note, actor, false,
                                now, why, sizeof why);
        if (rc != GI_OK)
            err_set(err, "stage", why);
    }
    if (rc == GI_OK)
        rc = loc_read(c, id, NULL, &where, tag, sizeof tag);
    if (rc == GI_OK) {
        detail = json_pack("{s:O, s:s?, s:s}", "location", where, "note", sc->note, "via", via);
        rc = asset_event_append(c, id, "scan", actor, detail, now);
        if (rc == GI_OK)
            rc = asset_hook_emit(c, id, "asset.scanned", actor, detail, sc->note, now);
    }
    if (rc == GI_OK)
        rc = asset_sync_queue(c, id, "scan", now);
    rc = db_tx_end(c, rc);
    db_conn_put(st, c);
    if (rc == GI_OK && (rc = store_asset_get(st, tag, 0, INT64_MAX / 2, out)) == GI_OK)
        *out = json_pack("{s:o, s:s, s:b}", "asset", *out, "via", via, "located", moved);
    json_decref(cols);
    json_decref(where);
    json_decref(detail);
    return rc;
}
