/* The assets against what discovery sees (the assets:reconcile job): each
 * asset linked to a discovered GPU or host takes its last-seen time, and
 * three kinds of drift become events "drift" {what, ...}:
 *
 *   unknown_serial  a discovered GPU whose serial (or UUID) no asset has;
 *                   the event belongs to no asset (asset_id 0); looked for
 *                   only once the fleet has assets at all, so that an
 *                   installation that does not track assets gets none
 *   not_seen        an asset whose GPU or host discovery has not seen for
 *                   the configured number of days
 *   moved           a GPU asset whose discovered GPU sits in another host
 *                   than the server asset it is recorded inside
 *   serial_changed  a GPU asset whose slot now holds another serial: the
 *                   GPU of its UUID (a placeholder UUID kept by the slot)
 *                   reports another serial, or a newer GPU sits in the
 *                   same host at the same PCI bus id (at the same index
 *                   when either lacks a bus id); recorded on the asset of
 *                   the old serial (role "old") and on the asset of the
 *                   new serial when there is one (role "new")
 *
 * A drift is recorded once: again only when it changes (another host,
 * another last-seen time), so the job can run every hour. */
#include "store/assets_int.h"
#include "core/log.h"
#include "core/status.h"
#include "core/util.h"

#include <stdatomic.h>
#include <string.h>

static _Atomic int missing_days = 30;

void store_asset_configure(int asset_missing_days)
{
    if (asset_missing_days > 0)
        atomic_store(&missing_days, asset_missing_days);
}

#define STATEMENTS(X)                                                                              \
    X(SEEN_GPU, "UPDATE assets SET last_seen = (SELECT g.last_seen_at FROM gpus g WHERE g.uuid = " \
                "assets.gpu_uuid) WHERE gpu_uuid IS NOT NULL AND EXISTS (SELECT 1 FROM gpus g "    \
                "WHERE g.uuid = assets.gpu_uuid AND g.last_seen_at IS DISTINCT FROM "              \
                "assets.last_seen) RETURNING id")                                                  \
    X(SEEN_HOST, "UPDATE assets SET last_seen = (SELECT h.last_seen_at FROM hosts h WHERE h.id = " \
                 "assets.host_id) WHERE host_id IS NOT NULL AND gpu_uuid IS NULL AND EXISTS "      \
                 "(SELECT 1 FROM hosts h WHERE h.id = assets.host_id AND h.last_seen_at IS "       \
                 "DISTINCT FROM assets.last_seen) RETURNING id")                                   \
    X(UNKNOWN, "SELECT g.uuid, g.serial, h.hostname FROM gpus g LEFT JOIN hosts h ON h.id = "      \
               "g.host_id WHERE g.serial IS NOT NULL AND g.serial <> '' AND g.parent_uuid IS "     \
               "NULL AND NOT EXISTS (SELECT 1 FROM assets a WHERE a.gpu_uuid = g.uuid OR "         \
               "(a.kind = 'gpu' AND a.serial = g.serial)) ORDER BY g.id LIMIT 10000")              \
    X(NOT_SEEN, "SELECT a.id, a.last_seen FROM assets a WHERE a.last_seen IS NOT NULL AND "        \
                "a.last_seen < :before AND a.stage <> 'decommissioned' AND (a.gpu_uuid IS NOT "    \
                "NULL OR a.host_id IS NOT NULL) ORDER BY a.id LIMIT 10000")                        \
    X(MOVED, "SELECT a.id, a.gpu_uuid, p.tag, p.host_id, g.host_id, h.hostname FROM assets a "     \
             "JOIN assets p ON p.id = a.parent_id JOIN gpus g ON g.uuid = a.gpu_uuid LEFT JOIN "   \
             "hosts h ON h.id = g.host_id WHERE a.kind = 'gpu' AND p.host_id IS NOT NULL AND "     \
             "g.host_id IS NOT NULL AND g.host_id <> p.host_id ORDER BY a.id LIMIT 10000")         \
    X(SERIAL_SAME_UUID,                                                                            \
      "SELECT a.id, a.tag, a.serial, g.serial, g.uuid, h.hostname, g.idx, g.pci_bus_id, b.id, "    \
      "b.tag FROM assets a JOIN gpus g ON g.uuid = a.gpu_uuid LEFT JOIN hosts h ON h.id = "        \
      "g.host_id LEFT JOIN assets b ON b.id <> a.id AND b.kind = 'gpu' AND b.serial = g.serial "   \
      "WHERE a.kind = 'gpu' AND a.serial IS NOT NULL AND a.serial <> '' AND g.serial IS NOT NULL " \
      "AND g.serial <> '' AND g.serial <> a.serial AND g.parent_uuid IS NULL ORDER BY a.id, b.id " \
      "LIMIT 10000")                                                                               \
    X(SERIAL_SAME_SLOT,                                                                            \
      "SELECT a.id, a.tag, a.serial, n.serial, n.uuid, h.hostname, n.idx, n.pci_bus_id, b.id, "    \
      "b.tag FROM assets a JOIN gpus g ON g.uuid = a.gpu_uuid JOIN gpus n ON n.host_id = "         \
      "g.host_id AND n.id <> g.id AND n.parent_uuid IS NULL AND n.last_seen_at > g.last_seen_at "  \
      "AND ((g.pci_bus_id IS NOT NULL AND n.pci_bus_id IS NOT NULL AND n.pci_bus_id = "            \
      "g.pci_bus_id) OR ((g.pci_bus_id IS NULL OR n.pci_bus_id IS NULL) AND n.idx = g.idx)) LEFT " \
      "JOIN hosts h ON h.id = n.host_id LEFT JOIN assets b ON b.id <> a.id AND (b.gpu_uuid = "     \
      "n.uuid OR (b.kind = 'gpu' AND b.serial = n.serial)) WHERE a.kind = 'gpu' AND a.serial IS "  \
      "NOT NULL AND a.serial <> '' AND n.serial IS NOT NULL AND n.serial <> '' AND n.serial <> "   \
      "a.serial AND g.parent_uuid IS NULL ORDER BY a.id, n.last_seen_at DESC, b.id LIMIT 10000")   \
    X(LAST_DRIFT, "SELECT detail FROM asset_events WHERE asset_id = :id AND kind = 'drift' ORDER " \
                  "BY seq DESC LIMIT 1")                                                           \
    X(UNKNOWN_SEEN, "SELECT detail FROM asset_events WHERE asset_id = 0 AND kind = 'drift'")       \
    X(ANY_ASSET, "SELECT COUNT(*) FROM (SELECT 1 FROM assets LIMIT 1) x")

enum stmt_id { STATEMENTS(STORE_AS_ENUM) ST__COUNT };
static const char *const stmt_sql[] = {STATEMENTS(STORE_AS_SQL)};

static struct db_stmt *prep(struct conn *c, enum stmt_id id) { return db_prep(c, stmt_sql[id]); }

/* The detail of the asset's newest drift event (NULL when none). */
static int last_drift(struct conn *c, int64_t id, json_t **out)
{
    struct db_stmt *s = prep(c, ST_LAST_DRIFT);
    json_error_t jerr;
    int step;

    *out = NULL;
    if (!s)
        return GI_INTERNAL;
    db_bind_int(s, ":id", id);
    step = db_step(c, s);
    if (step == DB_ROW && db_col_text(s, 0))
        *out = json_loads(db_col_text(s, 0), 0, &jerr);
    db_reset(s);
    return step == DB_ROW || step == DB_DONE ? GI_OK : db_status(step);
}

/* Appends the drift unless the asset's newest drift is the same. Takes
 * ownership of detail. */
static int drift_once(struct conn *c, int64_t id, json_t *detail, int64_t now, int64_t *n)
{
    json_t *last = NULL;
    int rc = last_drift(c, id, &last);

    if (rc == GI_OK && !json_equal(last, detail)) {
        rc = asset_event_append(c, id, "drift", "discovery", detail, now);
        if (rc == GI_OK)
            (*n)++;
    }
    json_decref(last);
    json_decref(detail);
    return rc;
}

static int unknown_serials(struct conn *c, int64_t now, int64_t *n)
{
    json_t *seen = json_object(), *todo = json_array(), *d;
    struct db_stmt *s = prep(c, ST_ANY_ASSET);
    json_error_t jerr;
    int64_t any = 0;
    size_t i;
    int rc = GI_INTERNAL, step;

    if (!s || (rc = db_fetch_int(c, s, &any)) != GI_OK || any == 0)
        goto cleanup;
    rc = GI_INTERNAL;
    if (!(s = prep(c, ST_UNKNOWN_SEEN)))
        goto cleanup;
    while ((step = db_step(c, s)) == DB_ROW) {
        json_t *x = json_loads(db_col_text(s, 0) ? db_col_text(s, 0) : "{}", 0, &jerr);
        const char *uuid = json_string_value(json_object_get(x, "gpu_uuid"));
        if (uuid)
            json_object_set_new(seen, uuid, json_true());
        json_decref(x);
    }
    db_reset(s);
    if (step != DB_DONE) {
        rc = db_status(step);
        goto cleanup;
    }
    if (!(s = prep(c, ST_UNKNOWN)))
        goto cleanup;
    while ((step = db_step(c, s)) == DB_ROW)
        if (!json_object_get(seen, db_col_text(s, 0)))
            json_array_append_new(todo, json_pack("{s:s, s:s, s:s, s:s?}", "what", "unknown_serial",
                                                  "gpu_uuid", db_col_text(s, 0), "serial",
                                                  db_col_text(s, 1), "host", db_col_text(s, 2)));
    db_reset(s);
    if (step != DB_DONE) {
        rc = db_status(step);
        goto cleanup;
    }
    rc = GI_OK;
    json_array_foreach(todo, i, d) {
        if ((rc = asset_event_append(c, 0, "drift", "discovery", d, now)) != GI_OK)
            break;
        (*n)++;
    }
cleanup:
    json_decref(seen);
    json_decref(todo);
    return rc;
}

/* Collects the rows of a drift query into details first, as appending
 * while a statement is open would interleave writes with its rows. */
static int not_seen(struct conn *c, int64_t now, int64_t *n)
{
    struct db_stmt *s = prep(c, ST_NOT_SEEN);
    json_t *todo = json_array(), *d;
    int64_t days = atomic_load(&missing_days);
    size_t i;
    int rc = GI_OK, step;

    if (!s) {
        json_decref(todo);
        return GI_INTERNAL;
    }
    db_bind_int(s, ":before", now - days * 86400);
    while ((step = db_step(c, s)) == DB_ROW) {
        char t[32];
        gi_time_format(db_col_int(s, 1), t, sizeof t);
        json_array_append_new(todo, json_pack("[I, {s:s, s:s, s:I}]", (json_int_t)db_col_int(s, 0),
                                              "what", "not_seen", "last_seen", t, "days",
                                              (json_int_t)days));
    }
    db_reset(s);
    if (step != DB_DONE)
        rc = db_status(step);
    json_array_foreach(todo, i, d) {
        if (rc != GI_OK)
            break;
        rc = drift_once(c, json_integer_value(json_array_get(d, 0)),
                        json_incref(json_array_get(d, 1)), now, n);
    }
    json_decref(todo);
    return rc;
}

static int moved(struct conn *c, int64_t now, int64_t *n)
{
    struct db_stmt *s = prep(c, ST_MOVED);
    json_t *todo = json_array(), *d;
    size_t i;
    int rc = GI_OK, step;

    if (!s) {
        json_decref(todo);
        return GI_INTERNAL;
    }
    while ((step = db_step(c, s)) == DB_ROW)
        json_array_append_new(
            todo, json_pack("[I, {s:s, s:s, s:s, s:I, s:I, s:s?}]", (json_int_t)db_col_int(s, 0),
                            "what", "moved", "gpu_uuid", db_col_text(s, 1), "parent",
                            db_col_text(s, 2), "expected_host_id", (json_int_t)db_col_int(s, 3),
                            "host_id", (json_int_t)db_col_int(s, 4), "host", db_col_text(s, 5)));
    db_reset(s);
    if (step != DB_DONE)
        rc = db_status(step);
    json_array_foreach(todo, i, d) {
        if (rc != GI_OK)
            break;
        rc = drift_once(c, json_integer_value(json_array_get(d, 0)),
                        json_incref(json_array_get(d, 1)), now, n);
    }
    json_decref(todo);
    return rc;
}

/* serial_changed from one of the two slot queries (same row shape): the
 * first row of each old asset, drift on it and on the new serial's asset. */
static int serial_changed(struct conn *c, enum stmt_id id, int64_t now, int64_t *n)
{
    struct db_stmt *s = prep(c, id);
    json_t *todo = json_array(), *d;
    int64_t last = 0;
    size_t i;
    int rc = GI_OK, step;

    if (!s) {
        json_decref(todo);
        return GI_INTERNAL;
    }
    while ((step = db_step(c, s)) == DB_ROW) {
        json_t *slot, *old, *new;
        if (db_col_int(s, 0) == last)
            continue;
        last = db_col_int(s, 0);
        slot = json_pack("{s:s?, s:o, s:s?}", "host", db_col_text(s, 5), "index",
                         db_col_is_null(s, 6) ? json_null() : json_integer(db_col_int(s, 6)),
                         "pci_bus_id", db_col_text(s, 7));
        old = json_pack("{s:s, s:s, s:s, s:s, s:s, s:O, s:s?}", "what", "serial_changed", "role",
                        "old", "recorded_serial", db_col_text(s, 2), "seen_serial",
                        db_col_text(s, 3), "gpu_uuid", db_col_text(s, 4), "slot", slot,
                        "other_asset", db_col_text(s, 9));
        json_array_append_new(todo, json_pack("[I, o]", (json_int_t)last, old));
        if (!db_col_is_null(s, 8)) {
            new = json_pack("{s:s, s:s, s:s, s:s, s:s, s:O, s:s}", "what", "serial_changed", "role",
                            "new", "recorded_serial", db_col_text(s, 2), "seen_serial",
                            db_col_text(s, 3), "gpu_uuid", db_col_text(s, 4), "slot", slot,
                            "other_asset", db_col_text(s, 1));
            json_array_append_new(todo, json_pack("[I, o]", (json_int_t)db_col_int(s, 8), new));
        }
        json_decref(slot);
    }
    db_reset(s);
    if (step != DB_DONE)
        rc = db_status(step);
    json_array_foreach(todo, i, d) {
        if (rc != GI_OK)
            break;
        rc = drift_once(c, json_integer_value(json_array_get(d, 0)),
                        json_incref(json_array_get(d, 1)), now, n);
    }
    json_decref(todo);
    return rc;
}

/* Runs one of the last_seen updates and renders the stored document of
 * each asset it changed. */
static int seen(struct conn *c, enum stmt_id id)
{
    struct db_stmt *s = prep(c, id);
    json_t *ids = json_array();
    int rc, step;

    if (!s) {
        json_decref(ids);
        return GI_INTERNAL;
    }
    while ((step = db_step(c, s)) == DB_ROW)
        json_array_append_new(ids, json_integer(db_col_int(s, 0)));
    db_reset(s);
    rc = step == DB_DONE ? asset_docs_save_all(c, ids) : db_status(step);
    json_decref(ids);
    return rc;
}

int store_asset_reconcile(struct store *st, int64_t now, int64_t *drifts)
{
    struct conn *c = db_conn_get(st);
    int rc = db_tx_begin(c);

    *drifts = 0;
    if (rc == GI_OK)
        rc = seen(c, ST_SEEN_GPU);
    if (rc == GI_OK)
        rc = seen(c, ST_SEEN_HOST);
    if (rc == GI_OK)
        rc = unknown_serials(c, now, drifts);
    if (rc == GI_OK)
        rc = not_seen(c, now, drifts);
    if (rc == GI_OK)
        rc = moved(c, now, drifts);
    if (rc == GI_OK)
        rc = serial_changed(c, ST_SERIAL_SAME_UUID, now, drifts);
    if (rc == GI_OK)
        rc = serial_changed(c, ST_SERIAL_SAME_SLOT, now, drifts);
    rc = db_tx_end(c, rc);
    if (rc != GI_OK)
        *drifts = 0;
    db_conn_put(st, c);
    return rc;
}
