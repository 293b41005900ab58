/* Room audits: the assets recorded in a room or rack when the audit
 * opens are what it expects; each scan marks one found (an asset recorded
 * elsewhere becomes unexpected); missing and unexpected are read off the
 * items at any time; closing may move the unexpected ones here. See
 * store.h. */
#include "store/assets_int.h"
#include "core/status.h"
#include "core/util.h"

#include <stdio.h>
#include <string.h>

#define AUDIT_COLS                                                                                 \
    "a.id, a.state, d.name AS datacenter, a.room, a.rack, a.note, a.opened_by, a.opened_at, "      \
    "a.closed_by, a.closed_at, a.datacenter_id"
#define AUDIT_FROM "FROM asset_audits a LEFT JOIN datacenters d ON d.id = a.datacenter_id "
#define AUDIT_COUNTS                                                                               \
    "(SELECT COUNT(*) FROM asset_audit_items i WHERE i.audit_id = a.id AND i.expected = 1) AS "    \
    "n_expected, (SELECT COUNT(*) FROM asset_audit_items i WHERE i.audit_id = a.id AND "           \
    "i.found_at IS NOT NULL) AS n_found, (SELECT COUNT(*) FROM asset_audit_items i WHERE "         \
    "i.audit_id = a.id AND i.expected = 1 AND i.found_at IS NULL) AS n_missing, (SELECT "          \
    "COUNT(*) FROM asset_audit_items i WHERE i.audit_id = a.id AND i.expected = 0) AS "            \
    "n_unexpected"

#define STATEMENTS(X)                                                                              \
    X(ADD, "INSERT INTO asset_audits (datacenter_id, room, rack, state, note, opened_by, "         \
           "opened_at) VALUES (:dc, :room, :rack, 'open', :note, :actor, :now) RETURNING id")      \
    X(EXPECT, "INSERT INTO asset_audit_items (audit_id, asset_id, expected) SELECT :audit, id, 1 " \
              "FROM assets WHERE (:dc = 0 OR datacenter_id = :dc) AND (:room IS NULL OR room = "   \
              ":room) AND (:rack IS NULL OR rack = :rack) AND stage <> 'decommissioned'")          \
    X(GET, "SELECT " AUDIT_COLS ", " AUDIT_COUNTS " " AUDIT_FROM "WHERE a.id = :id")               \
    X(ITEMS, "SELECT s.id, s.tag, s.kind, s.model, s.serial, s.datacenter_id, s.room, s.rack, "    \
             "s.rack_u, s.storage, i.expected, i.found_at, i.found_by, i.via FROM "                \
             "asset_audit_items i JOIN assets s ON s.id = i.asset_id WHERE i.audit_id = :id "      \
             "ORDER BY s.tag")                                                                     \
    X(FOUND, "INSERT INTO asset_audit_items (audit_id, asset_id, expected, found_at, found_by, "   \
             "via) VALUES (:audit, :asset, 0, :now, :actor, :via) ON CONFLICT (audit_id, "         \
             "asset_id) DO UPDATE SET found_at = COALESCE(asset_audit_items.found_at, "            \
             "excluded.found_at), found_by = COALESCE(asset_audit_items.found_by, "                \
             "excluded.found_by), via = COALESCE(asset_audit_items.via, excluded.via)")            \
    X(EXPECTED_OF, "SELECT expected FROM asset_audit_items WHERE audit_id = :audit AND asset_id "  \
                   "= :asset")                                                                     \
    X(TAG, "SELECT tag FROM assets WHERE id = :id")                                                \
    X(CLOSE, "UPDATE asset_audits SET state = 'closed', closed_by = :actor, closed_at = :now "     \
             "WHERE id = :id AND state = 'open'")                                                  \
    X(LIST, "SELECT " AUDIT_COLS ", " AUDIT_COUNTS " " AUDIT_FROM                                  \
            "WHERE (:state IS NULL OR a.state = :state) AND " STORE_SCOPE_IN(                      \
                "a.datacenter_id") " ORDER BY a.id DESC " PAGE)                                    \
    X(COUNT, "SELECT COUNT(*) FROM asset_audits a WHERE (:state IS NULL OR a.state = :state) "     \
             "AND " STORE_SCOPE_IN("a.datacenter_id"))

enum stmt_id { STATEMENTS(STORE_AS_ENUM) ST__COUNT };
static const char *const stmt_sql[] = {STATEMENTS(STORE_AS_SQL)};

static struct db_stmt *prep(struct conn *c, enum stmt_id id) { return db_prep(c, stmt_sql[id]); }

static void err_set(struct store_scan_err *err, const char *field, const char *msg)
{
    if (!err)
        return;
    gi_strlcpy(err->field, field, sizeof err->field);
    gi_strlcpy(err->message, msg, sizeof err->message);
}

static json_t *text_or_null(struct db_stmt *s, int i)
{
    return db_col_is_null(s, i) ? json_null() : json_string(db_col_text(s, i));
}

static json_t *time_or_null(struct db_stmt *s, int i)
{
    char buf[32];

    if (db_col_is_null(s, i))
        return json_null();
    gi_time_format(db_col_int(s, i), buf, sizeof buf);
    return json_string(buf);
}

/* The current row (AUDIT_COLS, AUDIT_COUNTS) as an audit without lists. */
static json_t *audit_row(struct db_stmt *s)
{
    return json_pack(
        "{s:I, s:o, s:{s:o, s:o, s:o}, s:o, s:o, s:o, s:o, s:o, s:{s:I, s:I, s:I, "
        "s:I}}",
        "id", (json_int_t)db_col_int(s, 0), "state", text_or_null(s, 1), "location", "datacenter",
        text_or_null(s, 2), "room", text_or_null(s, 3), "rack", text_or_null(s, 4), "note",
        text_or_null(s, 5), "opened_by", text_or_null(s, 6), "opened_at", time_or_null(s, 7),
        "closed_by", text_or_null(s, 8), "closed_at", time_or_null(s, 9), "counts", "expected",
        (json_int_t)db_col_int(s, 11), "found", (json_int_t)db_col_int(s, 12), "missing",
        (json_int_t)db_col_int(s, 13), "unexpected", (json_int_t)db_col_int(s, 14));
}

/* The audit's row; *dc (may be NULL) its data center id (0: none). */
static int audit_head(struct conn *c, int64_t id, json_t **out, int64_t *dc)
{
    struct db_stmt *s = prep(c, ST_GET);
    int step;

    if (!s)
        return GI_INTERNAL;
    db_bind_int(s, ":id", id);
    step = db_step(c, s);
    if (step == DB_ROW) {
        *out = audit_row(s);
        if (dc)
            *dc = db_col_int(s, 10);
    }
    db_reset(s);
    return step == DB_ROW ? GI_OK : step == DB_DONE ? GI_NOT_FOUND : db_status(step);
}

/* The audit with its lists; *unexpected_ids (may be NULL) receives the
 * unexpected assets found as [{id, tag}]. */
static int audit_doc(struct conn *c, int64_t id, json_t **out, json_t **unexpected_ids)
{
    json_t *doc = NULL, *lists[4], *ids = json_array();
    struct db_stmt *s;
    int rc, step;

    *out = NULL;
    if ((rc = audit_head(c, id, &doc, NULL)) != GI_OK) {
        json_decref(ids);
        return rc;
    }
    for (int i = 0; i < 4; i++)
        lists[i] = json_array();
    rc = GI_INTERNAL;
    if (!(s = prep(c, ST_ITEMS)))
        goto cleanup;
    db_bind_int(s, ":id", id);
    while ((step = db_step(c, s)) == DB_ROW) {
        json_t *cols =
            json_pack("{s:o, s:o, s:o, s:o, s:o}", "datacenter_id",
                      db_col_is_null(s, 5) ? json_null() : json_integer(db_col_int(s, 5)), "room",
                      text_or_null(s, 6), "rack", text_or_null(s, 7), "rack_u",
                      db_col_is_null(s, 8) ? json_null() : json_integer(db_col_int(s, 8)),
                      "storage", text_or_null(s, 9));
        bool expected = db_col_int(s, 10) != 0, found = !db_col_is_null(s, 11);
        json_t *item =
            json_pack("{s:o, s:o, s:o, s:o, s:o, s:o}", "tag", text_or_null(s, 1), "kind",
                      text_or_null(s, 2), "model", text_or_null(s, 3), "serial", text_or_null(s, 4),
                      "found_at", time_or_null(s, 11), "found_by", text_or_null(s, 12));
        int64_t asset_id = db_col_int(s, 0);

        /* The data center's name is looked up after the row is read. */
        json_object_set_new(item, "_cols", cols);
        if (expected)
            json_array_append(lists[0], item);
        if (found)
            json_array_append(lists[1], item);
        if (expected && !found)
            json_array_append(lists[2], item);
        if (!expected) {
            json_array_append(lists[3], item);
            json_array_append_new(ids, json_pack("{s:I, s:O}", "id", (json_int_t)asset_id, "tag",
                                                 json_object_get(item, "tag")));
        }
        json_decref(item);
    }
    db_reset(s);
    if ((rc = step == DB_DONE ? GI_OK : db_status(step)) != GI_OK)
        goto cleanup;
    /* Every item is in some list; each is one object shared between them. */
    for (int i = 0; i < 4 && rc == GI_OK; i++) {
        size_t k;
        json_t *item;
        json_array_foreach(lists[i], k, item) {
            json_t *cols = json_object_get(item, "_cols"), *loc = NULL;
            if (!cols)
                continue;
            if ((rc = asset_location_doc(c, cols, &loc)) != GI_OK)
                break;
            json_object_set_new(item, "location", loc);
            json_object_del(item, "_cols");
        }
    }
    if (rc != GI_OK)
        goto cleanup;
    json_object_set(doc, "expected", lists[0]);
    json_object_set(doc, "found", lists[1]);
    json_object_set(doc, "missing", lists[2]);
    json_object_set(doc, "unexpected", lists[3]);
    *out = json_incref(doc);
    if (unexpected_ids)
        *unexpected_ids = json_incref(ids);
cleanup:
    for (int i = 0; i < 4; i++)
        json_decref(lists[i]);
    json_decref(doc);
    json_decref(ids);
    return rc;
}

int store_room_audit_open(struct store *st, const char *actor, const json_t *location,
                          const char *note, json_t **out, struct store_scan_err *err)
{
    struct conn *c = db_conn_get(st);
    json_t *rec = json_pack("{s:O}", "location", location), *errors = json_array(), *cols = NULL;
    const char *stage = NULL, *room, *rack;
    struct db_stmt *s;
    int64_t id = 0, dc, now = gi_now();
    int rc = db_tx_begin(c);

    *out = NULL;
    if (rc == GI_OK &&
        (rc = asset_fields_read(c, rec, true, 0, 0, &cols, &stage, errors)) == GI_INVALID) {
        json_t *e = json_array_get(errors, 0);
        err_set(err, json_string_value(json_object_get(e, "field")),
                json_string_value(json_object_get(e, "error")));
    }
    if (rc != GI_OK)
        goto cleanup;
    room = json_string_value(json_object_get(cols, "room"));
    rack = json_string_value(json_object_get(cols, "rack"));
    dc = json_integer_value(json_object_get(cols, "datacenter_id"));
    if (!room && !rack) {
        err_set(err, "location", "an audit needs a room or a rack");
        rc = GI_INVALID;
        goto cleanup;
    }
    rc = GI_INTERNAL;
    if (!(s = prep(c, ST_ADD)))
        goto cleanup;
    if (dc)
        db_bind_int(s, ":dc", dc);
    else
        db_bind_text(s, ":dc", NULL);
    db_bind_text(s, ":room", room);
    db_bind_text(s, ":rack", rack);
    db_bind_text(s, ":note", note);
    db_bind_text(s, ":actor", actor);
    db_bind_int(s, ":now", now);
    if ((rc = db_fetch_int(c, s, &id)) != GI_OK)
        goto cleanup;
    rc = GI_INTERNAL;
    if (!(s = prep(c, ST_EXPECT)))
        goto cleanup;
    db_bind_int(s, ":audit", id);
    db_bind_int(s, ":dc", dc);
    db_bind_text(s, ":room", room);
    db_bind_text(s, ":rack", rack);
    if ((rc = db_exec_done(c, s)) == GI_OK)
        rc = audit_doc(c, id, out, NULL);
cleanup:
    rc = db_tx_end_doc(c, rc, out);
    json_decref(rec);
    json_decref(errors);
    json_decref(cols);
    db_conn_put(st, c);
    return rc;
}

int store_room_audit_scan(struct store *st, const char *actor, int64_t audit_id, const char *tag,
                          const char *epc, json_t **out, struct store_scan_err *err)
{
    struct conn *c = db_conn_get(st);
    const char *via = tag ? "tag" : "epc";
    json_t *head = NULL, *detail = NULL;
    struct db_stmt *s;
    int64_t asset_id = 0, expected = 0, now = gi_now();
    char found_tag[80] = "";
    int rc = db_tx_begin(c);

    *out = NULL;
    if (rc == GI_OK && (rc = audit_head(c, audit_id, &head, NULL)) == GI_NOT_FOUND)
        err_set(err, "audit", "no such audit");
    if (rc == GI_OK && strcmp(json_string_value(json_object_get(head, "state")), "open") != 0) {
        err_set(err, "audit", "the audit is closed");
        rc = GI_CONFLICT;
    }
    if (rc == GI_OK && (rc = asset_find(c, tag, epc, &asset_id)) == GI_NOT_FOUND)
        err_set(err, via, tag ? "no asset has this tag" : "no asset carries this EPC");
    if (rc != GI_OK)
        goto cleanup;
    rc = GI_INTERNAL;
    if (!(s = prep(c, ST_FOUND)))
        goto cleanup;
    db_bind_int(s, ":audit", audit_id);
    db_bind_int(s, ":asset", asset_id);
    db_bind_int(s, ":now", now);
    db_bind_text(s, ":actor", actor);
    db_bind_text(s, ":via", via);
    if ((rc = db_exec_done(c, s)) != GI_OK)
        goto cleanup;
    rc = GI_INTERNAL;
    if (!(s = prep(c, ST_EXPECTED_OF)))
        goto cleanup;
    db_bind_int(s, ":audit", audit_id);
    db_bind_int(s, ":asset", asset_id);
    if ((rc = db_fetch_int(c, s, &expected)) != GI_OK)
        goto cleanup;
    detail = json_pack("{s:O, s:s, s:I}", "location", json_object_get(head, "location"), "via", via,
                       "audit", (json_int_t)audit_id);
    if ((rc = asset_event_append(c, asset_id, "scan", actor, detail, now)) != GI_OK)
        goto cleanup;
    rc = GI_INTERNAL;
    if (!(s = prep(c, ST_TAG)))
        goto cleanup;
    db_bind_int(s, ":id", asset_id);
    if (db_step(c, s) == DB_ROW)
        gi_strlcpy(found_tag, db_col_text(s, 0), sizeof found_tag);
    db_reset(s);
    if ((rc = audit_doc(c, audit_id, out, NULL)) != GI_OK)
        goto cleanup;
    json_object_set_new(*out, "scanned",
                        json_pack("{s:s, s:b}", "tag", found_tag, "expected", expected != 0));
cleanup:
    rc = db_tx_end_doc(c, rc, out);
    json_decref(head);
    json_decref(detail);
    db_conn_put(st, c);
    return rc;
}

int store_room_audit_get(struct store *st, int64_t id, json_t **out)
{
    struct conn *c = db_conn_get(st);
    int rc;

    db_read_begin(c);
    rc = audit_doc(c, id, out, NULL);
    db_read_end(c);
    db_conn_put(st, c);
    return rc;
}

int store_room_audit_close(struct store *st, const char *actor, int64_t id, bool relocate,
                           json_t **out)
{
    struct conn *c = db_conn_get(st);
    json_t *before = NULL, *ids = NULL, *moved = json_array(), *v;
    struct db_stmt *s;
    int64_t dc = 0, now = gi_now();
    size_t k;
    int rc = db_tx_begin(c);

    *out = NULL;
    if (rc == GI_OK)
        rc = audit_head(c, id, &before, &dc);
    if (rc == GI_OK && strcmp(json_string_value(json_object_get(before, "state")), "open") != 0)
        rc = GI_CONFLICT;
    if (rc == GI_OK && relocate && (rc = audit_doc(c, id, &v, &ids)) == GI_OK)
        json_decref(v);
    if (rc != GI_OK)
        goto cleanup;
    json_array_foreach(ids, k, v) {
        const json_t *loc = json_object_get(before, "location");
        json_t *cols =
            json_pack("{s:o, s:O, s:O}", "datacenter_id", dc ? json_integer(dc) : json_null(),
                      "room", json_object_get(loc, "room"), "rack", json_object_get(loc, "rack"));
        bool did = false;
        rc = asset_locate(c, json_integer_value(json_object_get(v, "id")), cols, actor, now, &did);
        json_decref(cols);
        if (rc != GI_OK)
            goto cleanup;
        if (did)
            json_array_append(moved, json_object_get(v, "tag"));
    }
    rc = GI_INTERNAL;
    if (!(s = prep(c, ST_CLOSE)))
        goto cleanup;
    db_bind_int(s, ":id", id);
    db_bind_text(s, ":actor", actor);
    db_bind_int(s, ":now", now);
    if ((rc = db_exec_done(c, s)) != GI_OK)
        goto cleanup;
    if ((rc = audit_doc(c, id, out, NULL)) == GI_OK)
        json_object_set(*out, "relocated", moved);
cleanup:
    rc = db_tx_end_doc(c, rc, out);
    json_decref(before);
    json_decref(ids);
    json_decref(moved);
    db_conn_put(st, c);
    return rc;
}

int store_room_audit_list(struct store *st, const char *state, const struct store_scope *sc,
                          const struct store_page *pg, json_t **items, int64_t *total)
{
    struct conn *c = db_conn_get(st);
    struct db_stmt *s[2] = {prep(c, ST_COUNT), prep(c, ST_LIST)};
    json_t *arr = json_array();
    int rc, step;

    *items = NULL;
    for (int i = 0; i < 2; i++)
        if (s[i]) {
            db_bind_text(s[i], ":state", state);
            db_bind_scope(s[i], sc);
            db_bind_page(s[i], pg);
        }
    rc = db_read_batch(c, s, 2);
    if (rc == GI_OK)
        rc = db_fetch_int(c, s[0], total);
    if (rc == GI_OK) {
        while ((step = db_step(c, s[1])) == DB_ROW)
            json_array_append_new(arr, audit_row(s[1]));
        db_reset(s[1]);
        rc = step == DB_DONE ? GI_OK : db_status(step);
    }
    db_read_end(c);
    if (rc == GI_OK)
        *items = json_incref(arr);
    json_decref(arr);
    db_conn_put(st, c);
    return rc;
}
