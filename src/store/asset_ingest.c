/* Asset records in bulk: the upsert from a discovery-like source (an
 * inventory agent, NetBox, Snipe-IT), which degrades per field and speaks
 * only for the fields it owns, and the CSV import of a person, which is
 * all or nothing. */
#include "store/assets_int.h"
#include "core/status.h"
#include "core/util.h"

#include <string.h>

/* Upper bound of one batch. */
#define INGEST_MAX 100000

/* Records without a parent first, so a parent named in the same batch
 * exists when its children are read. */
static bool has_parent(const json_t *rec)
{
    return json_object_get(rec, "parent") || json_object_get(rec, "parent_tag") ||
           json_object_get(rec, "parent_serial") || json_object_get(rec, "parent_source_key");
}

/* A record naming its parent by the same source's source_key (a machine
 * with neither a usable serial nor a tag, as inventory agents report
 * many): a copy of it naming the parent by tag, in *out; NULL when it
 * names its parent otherwise. An unknown key drops the field (the
 * record stays, without a parent). */
static int parent_by_key(struct conn *c, const char *source, const json_t *rec, json_t **out)
{
    const char *key = json_string_value(json_object_get(rec, "parent_source_key"));
    json_t *doc = NULL;
    int64_t id = 0;
    int rc;

    *out = NULL;
    if (!key || json_object_get(rec, "parent") || json_object_get(rec, "parent_tag") ||
        json_object_get(rec, "parent_serial"))
        return GI_OK;
    *out = json_copy((json_t *)rec);
    if (!*out)
        return GI_INTERNAL;
    json_object_del(*out, "parent_source_key");
    rc = asset_id_by_source_key(c, source, key, &id);
    if (rc == GI_NOT_FOUND)
        return GI_OK;
    if (rc == GI_OK && (rc = asset_doc_get(c, id, &doc)) == GI_OK) {
        json_object_set(*out, "parent_tag", json_object_get(doc, "tag"));
        json_decref(doc);
    }
    return rc;
}

/* The asset a source's record names: by tag, else (kind, serial) with a
 * usable serial, else (source, source_key). *id 0 when none. */
static int ingest_match(struct conn *c, const char *source, const json_t *cols, int64_t *id)
{
    const char *tag = json_string_value(json_object_get(cols, "tag"));
    const char *kind = json_string_value(json_object_get(cols, "kind"));
    const char *serial = json_string_value(json_object_get(cols, "serial"));
    const char *key = json_string_value(json_object_get(cols, "source_key"));
    int rc = GI_NOT_FOUND;

    *id = 0;
    if (tag)
        rc = asset_id_by_tag(c, tag, id);
    else if (serial && asset_serial_usable(serial))
        rc = asset_id_by_serial(c, kind ? kind : "other", serial, id);
    else if (key)
        rc = asset_id_by_source_key(c, source, key, id);
    if (rc == GI_NOT_FOUND) {
        *id = 0;
        rc = GI_OK;
    }
    return rc;
}

/* One record of a source's batch, under a savepoint: a database failure
 * undoes this record alone and is reported for it. */
static int ingest_one(struct conn *c, const struct asset_write *w, const json_t *rec, int index,
                      json_t *report, json_t *errors)
{
    json_t *cols = NULL;
    const char *stage = NULL;
    int64_t id = 0, out_id;
    char outcome = 'n';
    bool epc_ok = true;
    int rc = asset_fields_read(c, rec, false, 0, index, &cols, &stage, errors), one;

    if (rc == GI_INVALID) /* not an object */
        return GI_OK;
    if (rc != GI_OK)
        return rc;
    if ((rc = ingest_match(c, w->source, cols, &id)) != GI_OK)
        goto cleanup;
    if ((rc = asset_epc_free(c, cols, id, &epc_ok)) != GI_OK)
        goto cleanup;
    if (!epc_ok) {
        json_object_del(cols, "epc");
        json_array_append_new(errors, json_pack("{s:i, s:s, s:s}", "index", index, "field", "epc",
                                                "error", "another asset carries this EPC"));
    }
    /* A source never moves an asset between stages: the record's stage
     * is only the first stage of an asset it creates. */
    if ((one = db_savepoint(c)) == GI_OK) {
        one = asset_apply(c, w, id, cols, id ? NULL : stage, &out_id, &outcome);
        db_savepoint_end(c, one);
    }
    if (one != GI_OK) {
        if (one == GI_UNAVAILABLE || one == GI_RETRY || one == GI_NO_SPACE)
            rc = one;
        else
            json_array_append_new(errors, json_pack("{s:i, s:n, s:s}", "index", index, "field",
                                                    "error", "the record could not be stored"));
        goto cleanup;
    }
    if ((rc = asset_sync_pulled(c, w->source, out_id, rec, w->at)) != GI_OK)
        goto cleanup;
    {
        const char *key = outcome == 'c' ? "created" : outcome == 'u' ? "updated" : "unchanged";
        json_object_set_new(report, key,
                            json_integer(json_integer_value(json_object_get(report, key)) + 1));
    }
cleanup:
    json_decref(cols);
    return rc;
}

int store_asset_ingest(struct store *st, const char *source, json_t *records, bool dry_run,
                       json_t **report)
{
    struct conn *c;
    struct asset_write w = {source, source, false, false, gi_now()};
    json_t *rep, *errors = json_array(), *rec;
    size_t i;
    int rc;

    *report = NULL;
    if (!source || !*source || !json_is_array(records)) {
        json_decref(errors);
        return GI_INVALID;
    }
    if (json_array_size(records) > INGEST_MAX) {
        json_decref(errors);
        return GI_TOO_LARGE;
    }
    rep = json_pack("{s:i, s:i, s:i}", "created", 0, "updated", 0, "unchanged", 0);
    c = db_conn_get(st);
    rc = db_tx_begin(c);
    for (int pass = 0; pass < 2 && rc == GI_OK; pass++)
        json_array_foreach(records, i, rec) {
            json_t *named = NULL;
            if (has_parent(rec) != (pass == 1))
                continue;
            if ((rc = parent_by_key(c, source, rec, &named)) == GI_OK)
                rc = ingest_one(c, &w, named ? named : rec, (int)i, rep, errors);
            json_decref(named);
            if (rc != GI_OK)
                break;
        }
    if (rc == GI_OK && dry_run)
        db_tx_end(c, GI_CONFLICT);
    else
        rc = db_tx_end(c, rc);
    db_conn_put(st, c);
    if (rc == GI_OK) {
        json_object_set_new(rep, "errors", errors);
        json_object_set_new(rep, "dry_run", json_boolean(dry_run));
        *report = rep;
    } else {
        json_decref(errors);
        json_decref(rep);
    }
    return rc;
}

int store_asset_import(struct store *st, const char *actor, const json_t *records, bool dry_run,
                       json_t **report, struct store_asset_err *err)
{
    struct asset_write w = {actor, "csv", true, true, gi_now()};
    struct conn *c;
    json_t *rep, *errors = json_array(), *rec;
    size_t i;
    int rc;

    *report = NULL;
    if (!json_is_array(records) || json_array_size(records) > INGEST_MAX) {
        json_decref(errors);
        return GI_TOO_LARGE;
    }
    rep = json_pack("{s:i, s:i, s:i}", "created", 0, "updated", 0, "unchanged", 0);
    c = db_conn_get(st);
    rc = db_tx_begin(c);
    for (int pass = 0; pass < 2 && rc == GI_OK; pass++)
        json_array_foreach(records, i, rec) {
            json_t *cols = NULL;
            const char *stage = NULL, *key;
            int64_t id = 0, out_id;
            char outcome = 'n';
            bool epc_ok = true;
            if (has_parent(rec) != (pass == 1))
                continue;
            rc = asset_fields_read(c, rec, true, 0, (int)i, &cols, &stage, errors);
            if (rc == GI_INVALID && err) {
                json_t *e = json_array_get(errors, 0);
                err->index = (int64_t)i;
                gi_strlcpy(err->field, json_string_value(json_object_get(e, "field")),
                           sizeof err->field);
                gi_strlcpy(err->message, json_string_value(json_object_get(e, "error")),
                           sizeof err->message);
            }
            if (rc == GI_OK && json_is_string(json_object_get(cols, "tag")))
                rc = asset_id_by_tag(c, json_string_value(json_object_get(cols, "tag")), &id);
            if (rc == GI_NOT_FOUND) {
                id = 0;
                rc = GI_OK;
            }
            if (rc == GI_OK && !id && !json_object_get(cols, "kind")) {
                rc = GI_INVALID;
                if (err) {
                    err->index = (int64_t)i;
                    gi_strlcpy(err->field, "kind", sizeof err->field);
                    gi_strlcpy(err->message, "is required for a new asset", sizeof err->message);
                }
            }
            if (rc == GI_OK && (rc = asset_epc_free(c, cols, id, &epc_ok)) == GI_OK && !epc_ok) {
                rc = GI_CONFLICT;
                if (err) {
                    err->index = (int64_t)i;
                    gi_strlcpy(err->field, "epc", sizeof err->field);
                    gi_strlcpy(err->message, "another asset carries this EPC", sizeof err->message);
                }
            }
            if (rc == GI_OK)
                rc = asset_apply(c, &w, id, cols, id ? NULL : stage, &out_id, &outcome);
            /* An existing asset's status moves it as a stage change would. */
            if (rc == GI_OK && id && stage) {
                char now_stage[32], msg[160];
                rc = asset_stage_of(c, id, now_stage, sizeof now_stage);
                if (rc == GI_OK && strcmp(now_stage, stage) != 0) {
                    rc = asset_stage_change(c, id, stage, "csv import", actor, false, w.at, msg,
                                            sizeof msg);
                    if (rc != GI_OK && err) {
                        err->index = (int64_t)i;
                        gi_strlcpy(err->field, "stage", sizeof err->field);
                        gi_strlcpy(err->message, msg, sizeof err->message);
                    }
                    if (rc == GI_OK && outcome == 'n')
                        outcome = 'u';
                }
            }
            json_decref(cols);
            if (rc != GI_OK)
                break;
            key = outcome == 'c' ? "created" : outcome == 'u' ? "updated" : "unchanged";
            json_object_set_new(rep, key,
                                json_integer(json_integer_value(json_object_get(rep, key)) + 1));
        }
    if (rc == GI_OK && dry_run)
        db_tx_end(c, GI_CONFLICT);
    else
        rc = db_tx_end(c, rc);
    db_conn_put(st, c);
    json_decref(errors);
    if (rc == GI_OK) {
        json_object_set_new(rep, "dry_run", json_boolean(dry_run));
        *report = rep;
    } else {
        json_decref(rep);
    }
    return rc;
}
