/* Scans and room audits: a scanner or RFID reader reports an asset found
 * at a location (POST /api/v1/scans), and an audit checks a room or rack
 * against what is recorded there (POST /api/v1/audits, its scans, its
 * close). See store.h for what each writes. */
#include "api/api.h"
#include "api/scope.h"
#include "core/status.h"
#include "store/store.h"

#include <string.h>

static const char *const loc_members[] = {"datacenter", "room", "rack", "u", "storage", NULL};
static const char *const audit_loc_members[] = {"datacenter", "room", "rack", NULL};

/* Exactly one of "tag" and "epc", each a string of 1..128 bytes. */
static bool ident_or_reply(struct req *r, const json_t *body, const char **tag, const char **epc)
{
    if (!json_str_or_reply(r, body, "tag", false, 128, tag) ||
        !json_str_or_reply(r, body, "epc", false, 128, epc))
        return false;
    if ((*tag && *tag[0] == '\0') || (*epc && *epc[0] == '\0') || (!*tag && !*epc) ||
        (*tag && *epc)) {
        reply_error(r, 400, "validation_failed", *tag ? "epc" : "tag",
                    "give one of tag and epc, not empty");
        return false;
    }
    return true;
}

/* A location object with only the members allowed. */
static bool location_or_reply(struct req *r, const json_t *loc, const char *const *members)
{
    if (!json_is_object(loc)) {
        reply_error(r, 400, "validation_failed", "location", "location must be an object");
        return false;
    }
    return json_known_or_reply(r, loc, members);
}

/* Replies for a failed scan or audit call: 404/400/409 naming the field,
 * a refused stage change with the allowed next stages. */
static void reply_scan_err(struct req *r, int st, const struct store_scan_err *err,
                           const char *what)
{
    if (st == GI_CONFLICT && strcmp(err->field, "stage") == 0) {
        json_t *allowed = json_array();
        for (const char *const *s = store_asset_stage_next(err->stage); *s; s++)
            json_array_append_new(allowed, json_string(*s));
        reply_json(r, 409,
                   json_pack("{s:{s:s, s:s, s:s}, s:s, s:o}", "error", "code", "conflict",
                             "message", err->message, "field", "stage", "stage", err->stage,
                             "allowed", allowed));
    } else if (st == GI_NOT_FOUND && err->field[0]) {
        reply_error(r, 404, "not_found", err->field, "%s: %s", err->field, err->message);
    } else if (st == GI_INVALID && err->field[0]) {
        reply_error(r, 400, "validation_failed", err->field, "%s %s", err->field, err->message);
    } else if (st == GI_CONFLICT && err->field[0]) {
        reply_error(r, 409, "conflict", err->field, "%s", err->message);
    } else {
        reply_status(r, st, what);
    }
}

/* May r->who write to audit `id` (in its data center) and, with
 * `relocate`, move each unexpected asset from where it is? True without a
 * reply when there is no such audit (the handler answers 404). */
static bool audit_scope_or_reply(struct req *r, int64_t id, bool relocate)
{
    json_t *doc = NULL, *it;
    const char *name;
    int64_t dc = 0;
    size_t i;
    int st;
    bool ok = false;

    if (r->who.n_dcs == 0)
        return true;
    if ((st = store_room_audit_get(r->store, id, &doc)) == GI_NOT_FOUND)
        return true;
    if (st != GI_OK) {
        reply_status(r, st, "audit");
        return false;
    }
    name = json_string_value(json_object_get(json_object_get(doc, "location"), "datacenter"));
    if (name && (st = store_dc_id_by_name(r->store, name, &dc)) != GI_OK && st != GI_NOT_FOUND) {
        reply_status(r, st, "data center");
        goto cleanup;
    }
    if (!who_may_dc_or_reply(r, dc))
        goto cleanup;
    if (relocate)
        json_array_foreach(json_object_get(doc, "unexpected"), i, it) {
            const char *tag = json_string_value(json_object_get(it, "tag"));
            if (tag && !who_may_asset_or_reply(r, tag, NULL))
                goto cleanup;
        }
    ok = true;
cleanup:
    json_decref(doc);
    return ok;
}

void api_scans_create(struct req *r)
{
    static const char *const members[] = {"tag",   "epc",    "location", "note",
                                          "stage", "reason", NULL};
    struct store_scan_err err = {0};
    struct store_scan sc = {0};
    json_t *body = NULL, *out = NULL;
    int st;

    if (!req_json_body_or_reply(r, &body))
        return;
    if (!json_known_or_reply(r, body, members) || !ident_or_reply(r, body, &sc.tag, &sc.epc) ||
        !json_str_or_reply(r, body, "note", false, 1024, &sc.note) ||
        !json_str_or_reply(r, body, "stage", false, 32, &sc.stage) ||
        !json_str_or_reply(r, body, "reason", false, 1024, &sc.reason))
        goto cleanup;
    sc.location = json_object_get(body, "location");
    if (json_is_null(sc.location))
        sc.location = NULL;
    if (sc.location && !location_or_reply(r, sc.location, loc_members))
        goto cleanup;
    if (sc.stage && !store_asset_stage_valid(sc.stage)) {
        reply_error(r, 400, "validation_failed", "stage",
                    "stage must be one of ordered, received, active, spare, diagnostic_repair, "
                    "refurbishment_candidate, decommissioned");
        goto cleanup;
    }
    /* where the asset is and, when the scan moves it, where it goes (a
     * location without a data center puts it in none) */
    if (!who_may_asset_or_reply(r, sc.tag, sc.epc) ||
        (sc.location && !who_may_asset_record_or_reply(r, sc.location, true)))
        goto cleanup;
    st = store_scan(r->store, r->who.name, &sc, &out, &err);
    if (st != GI_OK)
        reply_scan_err(r, st, &err, "asset");
    else
        reply_json(r, 201, out);
cleanup:
    json_decref(body);
}

void api_audits_create(struct req *r)
{
    static const char *const members[] = {"location", "note", NULL};
    struct store_scan_err err = {0};
    json_t *body = NULL, *out = NULL;
    const char *note = NULL;
    int st;

    if (!req_json_body_or_reply(r, &body))
        return;
    if (!json_known_or_reply(r, body, members) ||
        !json_str_or_reply(r, body, "note", false, 1024, &note) ||
        !location_or_reply(r, json_object_get(body, "location"), audit_loc_members) ||
        !who_may_asset_record_or_reply(r, json_object_get(body, "location"), true))
        goto cleanup;
    st = store_room_audit_open(r->store, r->who.name, json_object_get(body, "location"), note, &out,
                               &err);
    if (st != GI_OK)
        reply_scan_err(r, st, &err, "audit");
    else
        reply_json(r, 201, out);
cleanup:
    json_decref(body);
}

void api_audits_list(struct req *r)
{
    static const char *const sortable[] = {"id", NULL};
    struct store_page pg;
    json_t *items = NULL;
    const char *state = NULL;
    int64_t total = 0;
    struct store_scope sc;
    int st;

    if (!req_page_or_reply(r, sortable, &pg) || !req_param_str_or_reply(r, "state", 8, &state))
        return;
    who_scope(r, &sc);
    if (state && strcmp(state, "open") != 0 && strcmp(state, "closed") != 0) {
        reply_error(r, 400, "invalid_parameter", "state", "state must be open or closed");
        return;
    }
    if ((st = store_room_audit_list(r->store, state, &sc, &pg, &items, &total)) != GI_OK) {
        reply_status(r, st, "audits");
        return;
    }
    reply_list(r, items, total, pg.offset);
}

void api_audits_get(struct req *r)
{
    json_t *out = NULL;
    int st;

    if (!who_may_see_or_reply(r, WHO_ROOM_AUDIT, NULL, r->id))
        return;
    st = store_room_audit_get(r->store, r->id, &out);
    if (st != GI_OK)
        reply_status(r, st, "audit");
    else
        reply_json(r, 200, out);
}

void api_audits_scan(struct req *r)
{
    static const char *const members[] = {"tag", "epc", NULL};
    struct store_scan_err err = {0};
    json_t *body = NULL, *out = NULL;
    const char *tag = NULL, *epc = NULL;
    int st;

    if (!req_json_body_or_reply(r, &body))
        return;
    if (!json_known_or_reply(r, body, members) || !ident_or_reply(r, body, &tag, &epc) ||
        !audit_scope_or_reply(r, r->id, false))
        goto cleanup;
    st = store_room_audit_scan(r->store, r->who.name, r->id, tag, epc, &out, &err);
    if (st != GI_OK)
        reply_scan_err(r, st, &err, "audit");
    else
        reply_json(r, 200, out);
cleanup:
    json_decref(body);
}

void api_audits_close(struct req *r)
{
    static const char *const members[] = {"relocate_unexpected", NULL};
    json_t *body = NULL, *out = NULL, *rel;
    int st;

    /* The body is optional: an empty one closes without relocating. */
    if (r->body_len > 0) {
        if (!req_json_body_or_reply(r, &body))
            return;
        if (!json_known_or_reply(r, body, members))
            goto cleanup;
    }
    rel = json_object_get(body, "relocate_unexpected");
    if (rel && !json_is_boolean(rel)) {
        reply_error(r, 400, "validation_failed", "relocate_unexpected",
                    "relocate_unexpected must be true or false");
        goto cleanup;
    }
    if (!audit_scope_or_reply(r, r->id, json_is_true(rel)))
        goto cleanup;
    st = store_room_audit_close(r->store, r->who.name, r->id, json_is_true(rel), &out);
    if (st == GI_CONFLICT)
        reply_error(r, 409, "conflict", "state", "the audit is closed already");
    else if (st != GI_OK)
        reply_status(r, st, "audit");
    else
        reply_json(r, 200, out);
cleanup:
    json_decref(body);
}
