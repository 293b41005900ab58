/* Push-back to the asset managers an asset is linked to (NetBox, Snipe-IT):
 * the links and last-synced remote values a pull records, the queue of
 * outbound updates that scans, moves and stage changes fill, what the
 * sender (collect/push_assets.c) claims and records, and the conflicts it
 * finds. See store.h and store_int.h.
 *
 * A push is a row per asset and source; what it writes is read from the
 * asset when it is sent, so the newest location and stage go out. The
 * retry schedule is the webhooks' (store_delivery_backoff), a 429's
 * Retry-After replacing the step. Claiming is one conditional UPDATE per
 * push (its next_at still the value read), as for webhook deliveries. */
#include "store/assets_int.h"
#include "store/store_int.h"
#include "core/status.h"
#include "core/util.h"

#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#define CONFLICT_COLS                                                                              \
    "c.id, a.tag AS asset, c.source_id, s.name AS source, s.kind AS system, c.field, c.ours, "     \
    "c.theirs, c.base, c.detected_at, c.resolved_at, c.resolved_by, c.resolution"
#define CONFLICT_FROM                                                                              \
    " FROM sync_conflicts c JOIN assets a ON a.id = c.asset_id LEFT JOIN sources s ON s.id = "     \
    "c.source_id "
#define CONFLICT_WHERE                                                                             \
    "WHERE (:asset = 0 OR c.asset_id = :asset) AND (:open = 0 OR c.resolved_at IS NULL) "          \
    "AND " STORE_SCOPE_IN("a.datacenter_id") " "
#define PUSH_FROM                                                                                  \
    " FROM sync_pushes p JOIN assets a ON a.id = p.asset_id LEFT JOIN sources s ON s.id = "        \
    "p.source_id WHERE (:asset = 0 OR p.asset_id = :asset) AND " STORE_SCOPE_IN(                   \
        "a.datacenter_id") " "

#define STATEMENTS(X)                                                                              \
    X(LINKS, "SELECT l.source_id, s.kind, s.config FROM asset_links l JOIN sources s ON s.id = "   \
             "l.source_id WHERE l.asset_id = :asset AND s.kind IN ('netbox', 'snipeit') ORDER "    \
             "BY l.source_id")                                                                     \
    X(UNLINKED,                                                                                    \
      "SELECT s.id AS source_id, s.kind, s.config, d.name AS datacenter, a.kind AS asset_kind, "   \
      "a.serial, a.parent_id, CASE WHEN EXISTS (SELECT 1 FROM asset_links l JOIN assets b ON "     \
      "b.id = l.asset_id WHERE l.source_id = s.id AND b.datacenter_id = a.datacenter_id) THEN 1 "  \
      "ELSE 0 END AS dc_linked FROM assets a JOIN datacenters d ON d.id = a.datacenter_id JOIN "   \
      "sources s ON s.kind IN ('netbox', 'snipeit') WHERE a.id = :asset AND NOT EXISTS (SELECT 1 " \
      "FROM asset_sync y WHERE y.asset_id = a.id AND y.source_id = s.id AND y.field = 'link' AND " \
      "y.held = a.serial) AND NOT EXISTS (SELECT 1 FROM asset_links k WHERE k.asset_id = a.id "    \
      "AND k.source_id = s.id) ORDER BY s.id")                                                     \
    X(QUEUE, "INSERT INTO sync_pushes (asset_id, source_id, reason, state, attempts, next_at, "    \
             "created_at) SELECT :asset, :source, :reason, 'pending', 0, :now, :now WHERE NOT "    \
             "EXISTS (SELECT 1 FROM sync_pushes WHERE asset_id = :asset AND source_id = :source "  \
             "AND state = 'pending' AND attempts = 0 AND next_at <= :now)")                        \
    X(LINK_SET, "INSERT INTO asset_links (asset_id, source_id, remote_id, linked_at) VALUES "      \
                "(:asset, :source, :remote, :now) ON CONFLICT (asset_id, source_id) DO UPDATE "    \
                "SET remote_id = excluded.remote_id, linked_at = excluded.linked_at")              \
    X(BASE_SET, "INSERT INTO asset_sync (asset_id, source_id, field, remote_value, synced_at) "    \
                "VALUES (:asset, :source, :field, :value, :now) ON CONFLICT (asset_id, "           \
                "source_id, field) DO UPDATE SET remote_value = excluded.remote_value, "           \
                "synced_at = excluded.synced_at")                                                  \
    X(HOLD_SET, "UPDATE asset_sync SET held = :held WHERE asset_id = :asset AND source_id = "      \
                ":source AND field = :field")                                                      \
    X(BASES, "SELECT field, remote_value, held FROM asset_sync WHERE asset_id = :asset AND "       \
             "source_id = :source")                                                                \
    X(DUE, "SELECT id, next_at AS due_s FROM sync_pushes WHERE state = 'pending' AND next_at <= "  \
           ":now ORDER BY next_at, id LIMIT :limit")                                               \
    X(TAKE, "UPDATE sync_pushes SET next_at = :lease WHERE id = :id AND state = 'pending' AND "    \
            "next_at = :old")                                                                      \
    X(SEND, "SELECT p.asset_id, p.source_id, p.attempts, p.reason, s.kind, s.config, l.remote_id " \
            "FROM sync_pushes p JOIN sources s ON s.id = p.source_id LEFT JOIN asset_links l ON "  \
            "l.asset_id = p.asset_id AND l.source_id = p.source_id WHERE p.id = :id")              \
    X(ELSEWHERE, "SELECT 1 FROM sync_pushes p JOIN asset_links o ON o.asset_id = p.asset_id AND "  \
                 "o.source_id <> p.source_id WHERE p.id = :id LIMIT 1")                            \
    X(STATE, "SELECT state, attempts, asset_id, source_id FROM sync_pushes WHERE id = :id")        \
    X(MARK, "UPDATE sync_pushes SET state = :state, attempts = :attempts, next_at = :next, "       \
            "last_status = :status, last_error = :error, sent = :sent, response = :response, "     \
            "delivered_at = :delivered WHERE id = :id")                                            \
    X(CONFLICT_ADD,                                                                                \
      "INSERT INTO sync_conflicts (asset_id, source_id, field, ours, theirs, base, detected_at) "  \
      "VALUES (:asset, :source, :field, :ours, :theirs, :base, :now) ON CONFLICT (asset_id, "      \
      "source_id, field) WHERE resolved_at IS NULL DO UPDATE SET ours = excluded.ours, theirs = "  \
      "excluded.theirs")                                                                           \
    X(LINKED, "UPDATE sync_conflicts SET resolved_at = :now, resolved_by = 'sync:push', "          \
              "resolution = 'linked' WHERE asset_id = :asset AND source_id = :source AND field = " \
              "'link' AND resolved_at IS NULL")                                                    \
    X(CONFLICT_LIST,                                                                               \
      "SELECT " CONFLICT_COLS CONFLICT_FROM CONFLICT_WHERE "ORDER BY c.id DESC " PAGE)             \
    X(CONFLICT_COUNT, "SELECT COUNT(*)" CONFLICT_FROM CONFLICT_WHERE)                              \
    X(CONFLICT_GET, "SELECT " CONFLICT_COLS ", c.asset_id" CONFLICT_FROM "WHERE c.id = :id")       \
    X(CONFLICT_RESOLVE, "UPDATE sync_conflicts SET resolved_at = :now, resolved_by = :actor, "     \
                        "resolution = :keep WHERE id = :id AND resolved_at IS NULL")               \
    X(PUSH_LIST, "SELECT p.id, a.tag AS asset, p.source_id, s.name AS source, s.kind AS system, "  \
                 "p.reason, p.state, p.attempts, p.next_at, p.last_status, p.last_error, p.sent, " \
                 "p.response, p.created_at, p.delivered_at" PUSH_FROM "ORDER BY p.id DESC " PAGE)  \
    X(PUSH_COUNT, "SELECT COUNT(*)" PUSH_FROM)

enum stmt_id { STATEMENTS(STORE_AS_ENUM) ST__COUNT };
static const char *const stmt_sql[] = {STATEMENTS(STORE_AS_SQL)};

static struct db_stmt *prep(struct conn *c, enum stmt_id id) { return db_prep(c, stmt_sql[id]); }

/* A JSON string or whole number as text into buf; NULL for anything else. */
static const char *value_text(const json_t *v, char *buf, size_t len)
{
    if (json_is_string(v))
        return json_string_value(v);
    if (json_is_integer(v)) {
        snprintf(buf, len, "%lld", (long long)json_integer_value(v));
        return buf;
    }
    return NULL;
}

/* Whether the push source of row l (UNLINKED) would look the asset up by
 * its serial: it pushes, it serves the asset's data center (it has linked
 * an asset there, or its push map names the data center), the serial is
 * one to match by, and NetBox is asked only for what a device can be (a
 * server, switch or other asset with no parent). */
static bool lookup_wanted(const json_t *l)
{
    const json_t *cfg = json_object_get(l, "config");
    const char *kind = json_string_value(json_object_get(l, "kind"));
    const char *akind = json_string_value(json_object_get(l, "asset_kind"));
    const char *dc = json_string_value(json_object_get(l, "datacenter"));
    bool netbox = kind && strcmp(kind, "netbox") == 0;

    if (!json_is_true(json_object_get(cfg, "push")) || !dc ||
        !asset_serial_usable(json_string_value(json_object_get(l, "serial"))))
        return false;
    if (netbox && (!akind || json_integer_value(json_object_get(l, "parent_id")) > 0 ||
                   (strcmp(akind, "server") != 0 && strcmp(akind, "switch") != 0 &&
                    strcmp(akind, "other") != 0)))
        return false;
    return json_integer_value(json_object_get(l, "dc_linked")) == 1 ||
           json_object_get(json_object_get(cfg, netbox ? "push_sites" : "push_locations"), dc);
}

/* One push of asset_id to source_id, unless one not yet tried is due. */
static int queue_one(struct conn *c, int64_t asset_id, int64_t source_id, const char *reason,
                     int64_t at)
{
    struct db_stmt *s = prep(c, ST_QUEUE);

    if (!s)
        return GI_INTERNAL;
    db_bind_int(s, ":asset", asset_id);
    db_bind_int(s, ":source", source_id);
    db_bind_text(s, ":reason", reason ? reason : "change");
    db_bind_int(s, ":now", at);
    return db_exec_done(c, s);
}

/* Queues a push of asset_id to each source of the rows of statement id
 * (LINKS or UNLINKED) that wants one. */
static int queue_each(struct conn *c, enum stmt_id id, int64_t asset_id, const char *reason,
                      int64_t at)
{
    struct db_stmt *s = prep(c, id);
    json_t *rows = NULL, *l;
    size_t i;
    int rc = s ? GI_OK : GI_INTERNAL;

    if (rc == GI_OK) {
        db_bind_int(s, ":asset", asset_id);
        rc = db_collect(c, s, &rows);
    }
    json_array_foreach(rows, i, l) {
        if (rc != GI_OK)
            break;
        /* config arrives parsed (db_row_json) */
        if (id == ST_UNLINKED
                ? !lookup_wanted(l)
                : !json_is_true(json_object_get(json_object_get(l, "config"), "push")))
            continue;
        rc =
            queue_one(c, asset_id, json_integer_value(json_object_get(l, "source_id")), reason, at);
    }
    json_decref(rows);
    return rc;
}

/* Each source that linked the asset gets its change; each other push
 * source that serves its data center looks it up by its serial (the
 * sender links it when exactly one object matches), so that an asset
 * linked in one system is found in another too. */
int asset_sync_queue(struct conn *c, int64_t asset_id, const char *reason, int64_t at)
{
    int rc = queue_each(c, ST_LINKS, asset_id, reason, at);

    return rc == GI_OK ? queue_each(c, ST_UNLINKED, asset_id, reason, at) : rc;
}

static int base_set(struct conn *c, int64_t asset_id, int64_t source_id, const char *field,
                    const char *value, int64_t at)
{
    struct db_stmt *s = prep(c, ST_BASE_SET);

    if (!s)
        return GI_INTERNAL;
    db_bind_int(s, ":asset", asset_id);
    db_bind_int(s, ":source", source_id);
    db_bind_text(s, ":field", field);
    db_bind_text(s, ":value", value);
    db_bind_int(s, ":now", at);
    return db_exec_done(c, s);
}

int asset_sync_pulled(struct conn *c, const char *source, int64_t asset_id, const json_t *rec,
                      int64_t at)
{
    const char *key = json_string_value(json_object_get(rec, "source_key"));
    const json_t *loc = json_object_get(rec, "location"), *custom = json_object_get(rec, "custom");
    const char *prefix, *colon;
    int64_t source_id, remote;
    char buf[32], sid[24];
    struct db_stmt *s;
    bool netbox;
    int rc;

    if (!source || !key || asset_id <= 0)
        return GI_OK;
    if (strncmp(source, "netbox:", 7) == 0) {
        netbox = true;
        prefix = "netbox:device:";
    } else if (strncmp(source, "snipeit:", 8) == 0) {
        netbox = false;
        prefix = "snipeit:hardware:";
    } else {
        return GI_OK;
    }
    colon = strchr(source, ':');
    if (gi_parse_int64(colon + 1, 1, INT64_MAX, &source_id) != GI_OK ||
        strncmp(key, prefix, strlen(prefix)) != 0 ||
        gi_parse_int64(key + strlen(prefix), 0, INT64_MAX, &remote) != GI_OK)
        return GI_OK; /* a module or an inventory item: not pushed */
    if (!(s = prep(c, ST_LINK_SET)))
        return GI_INTERNAL;
    snprintf(sid, sizeof sid, "%lld", (long long)remote);
    db_bind_int(s, ":asset", asset_id);
    db_bind_int(s, ":source", source_id);
    db_bind_text(s, ":remote", sid);
    db_bind_int(s, ":now", at);
    if ((rc = db_exec_done(c, s)) != GI_OK)
        return rc;
    {
        const char *fields[4], *values[4];
        int n = 0;
        if (netbox) {
            fields[n] = "site";
            values[n++] = value_text(json_object_get(loc, "datacenter"), buf, sizeof buf);
            fields[n] = "rack";
            values[n++] = value_text(json_object_get(loc, "rack"), buf, sizeof buf);
            fields[n] = "status";
            values[n++] = value_text(json_object_get(custom, "external_status"), buf, sizeof buf);
            fields[n] = "position";
            values[n++] = value_text(json_object_get(loc, "u"), buf, sizeof buf);
        } else {
            fields[n] = "location";
            values[n++] = value_text(json_object_get(loc, "datacenter"), buf, sizeof buf);
            fields[n] = "status";
            values[n++] =
                value_text(json_object_get(custom, "external_status_id"), buf, sizeof buf);
        }
        /* buf holds at most one number, and numbers come last. */
        for (int i = 0; i < n && rc == GI_OK; i++)
            if (values[i])
                rc = base_set(c, asset_id, source_id, fields[i], values[i], at);
    }
    return rc;
}

/* The push's last-synced values as {field: {"value", "held"}}. */
static int bases_read(struct conn *c, int64_t asset_id, int64_t source_id, json_t **out)
{
    struct db_stmt *s = prep(c, ST_BASES);
    int step;

    *out = json_object();
    if (!s)
        return GI_INTERNAL;
    db_bind_int(s, ":asset", asset_id);
    db_bind_int(s, ":source", source_id);
    while ((step = db_step(c, s)) == DB_ROW)
        json_object_set_new(
            *out, db_col_text(s, 0),
            json_pack("{s:o, s:o}", "value",
                      db_col_is_null(s, 1) ? json_null() : json_string(db_col_text(s, 1)), "held",
                      db_col_is_null(s, 2) ? json_null() : json_string(db_col_text(s, 2))));
    db_reset(s);
    return step == DB_DONE ? GI_OK : db_status(step);
}

/* Marks a claimed push failed for good without sending it. */
static int push_fail(struct conn *c, int64_t id, int64_t attempts, const char *why, int64_t now)
{
    struct db_stmt *s = prep(c, ST_MARK);

    if (!s)
        return GI_INTERNAL;
    db_bind_int(s, ":id", id);
    db_bind_text(s, ":state", "failed");
    db_bind_int(s, ":attempts", attempts);
    db_bind_int(s, ":next", now);
    db_bind_text(s, ":status", NULL);
    db_bind_text(s, ":error", why);
    db_bind_text(s, ":sent", NULL);
    db_bind_text(s, ":response", NULL);
    db_bind_text(s, ":delivered", NULL);
    return db_exec_done(c, s);
}

/* The claimed push id as the sender needs it, appended to items. */
static int claim_one(struct conn *c, int64_t id, int64_t now, json_t *items)
{
    struct db_stmt *s = prep(c, ST_SEND);
    json_t *row = NULL, *asset = NULL, *bases = NULL;
    int64_t asset_id, source_id;
    int rc;

    if (!s)
        return GI_INTERNAL;
    db_bind_int(s, ":id", id);
    rc = db_fetch_one(c, s, &row);
    if (rc == GI_NOT_FOUND)
        return push_fail(c, id, 0, "the source no longer exists", now);
    if (rc != GI_OK)
        return rc;
    asset_id = json_integer_value(json_object_get(row, "asset_id"));
    source_id = json_integer_value(json_object_get(row, "source_id"));
    if ((rc = asset_doc_get(c, asset_id, &asset)) != GI_OK)
        goto cleanup;
    if ((rc = bases_read(c, asset_id, source_id, &bases)) != GI_OK)
        goto cleanup;
    json_object_set_new(row, "id", json_integer(id));
    json_object_set(row, "asset", asset);
    json_object_set(row, "base", bases);
    json_array_append(items, row);
cleanup:
    json_decref(row);
    json_decref(asset);
    json_decref(bases);
    return rc;
}

int store_sync_claim(struct store *st, int64_t now, int64_t lease_s, int64_t limit, json_t **items)
{
    return delivery_claim_due(st, stmt_sql[ST_DUE], stmt_sql[ST_TAKE], now, lease_s, limit,
                              claim_one, items);
}

/* The push's state after attempt number `attempts` got o; *next its due
 * time when it stays pending. */
static const char *next_state(const struct store_sync_outcome *o, int64_t attempts, int64_t *next)
{
    *next = o->now;
    if (!o->error)
        return json_array_size(o->conflicts) > 0 ? "conflict" : "delivered";
    if (o->permanent)
        return "failed";
    if (attempts > store_delivery_backoff_n)
        return "dead";
    *next = o->now + (o->retry_after_s > 0 ? o->retry_after_s
                      : o->backoff_s > 0   ? o->backoff_s
                                           : store_delivery_backoff[attempts - 1]);
    return "pending";
}

/* The conflicts found, each kept (or refreshed while open). */
static int conflicts_add(struct conn *c, int64_t asset_id, int64_t source_id,
                         const json_t *conflicts, int64_t now)
{
    const json_t *k;
    size_t i;
    int rc = GI_OK;

    json_array_foreach(conflicts, i, k) {
        struct db_stmt *s = prep(c, ST_CONFLICT_ADD);
        if (!s)
            return GI_INTERNAL;
        db_bind_int(s, ":asset", asset_id);
        db_bind_int(s, ":source", source_id);
        db_bind_text(s, ":field", json_string_value(json_object_get(k, "field")));
        db_bind_text(s, ":ours", json_string_value(json_object_get(k, "ours")));
        db_bind_text(s, ":theirs", json_string_value(json_object_get(k, "theirs")));
        db_bind_text(s, ":base", json_string_value(json_object_get(k, "base")));
        db_bind_int(s, ":now", now);
        if ((rc = db_exec_done(c, s)) != GI_OK)
            break;
    }
    return rc;
}

/* Every {field: value} of fields recorded as synced. */
static int bases_set(struct conn *c, int64_t asset_id, int64_t source_id, const json_t *fields,
                     int64_t now)
{
    const char *f;
    const json_t *v;
    int rc = GI_OK;

    json_object_foreach((json_t *)fields, f, v) {
        if (rc != GI_OK)
            break;
        rc = base_set(c, asset_id, source_id, f, json_string_value(v), now);
    }
    return rc;
}

/* The "sync" event of a push that wrote or held back something. */
static int sync_event(struct conn *c, int64_t asset_id, const struct store_sync_outcome *o)
{
    json_t *fields = json_array(), *held = json_array(), *detail;
    const char *f;
    const json_t *v;
    size_t i;
    int rc;

    json_object_foreach((json_t *)o->written, f, v)
        json_array_append_new(fields, json_string(f));
    json_array_foreach(o->conflicts, i, v)
        json_array_append(held, json_object_get(v, "field"));
    detail = json_pack("{s:s, s:s, s:o, s:o}", "system", o->system ? o->system : "", "direction",
                       "push", "fields", fields, "conflicts", held);
    rc =
        detail ? asset_event_append(c, asset_id, "sync", "sync:push", detail, o->now) : GI_INTERNAL;
    json_decref(detail);
    return rc;
}

int store_sync_done(struct store *st, const struct store_sync_outcome *o, char *state)
{
    struct conn *c = db_conn_get(st);
    struct db_stmt *s;
    int64_t attempts, asset_id, source_id, next;
    const char *to;
    char *sent = NULL;
    int rc = db_tx_begin(c);

    if (state)
        state[0] = '\0';
    if (rc != GI_OK)
        goto cleanup;
    rc = GI_INTERNAL;
    if (!(s = prep(c, ST_STATE)))
        goto cleanup;
    db_bind_int(s, ":id", o->id);
    if ((rc = db_step(c, s)) != DB_ROW) {
        db_reset(s);
        rc = rc == DB_DONE ? GI_NOT_FOUND : db_status(rc);
        goto cleanup;
    }
    if (strcmp(db_col_text(s, 0), "pending") != 0) {
        db_reset(s);
        rc = GI_CONFLICT; /* finished meanwhile: this attempt is stale */
        goto cleanup;
    }
    attempts = db_col_int(s, 1) + 1;
    asset_id = db_col_int(s, 2);
    source_id = db_col_int(s, 3);
    db_reset(s);
    to = next_state(o, attempts, &next);
    if (json_object_size(o->written) > 0 && !(sent = json_dumps(o->written, JSON_COMPACT))) {
        rc = GI_INTERNAL;
        goto cleanup;
    }
    rc = GI_INTERNAL;
    if (!(s = prep(c, ST_MARK)))
        goto cleanup;
    db_bind_int(s, ":id", o->id);
    db_bind_text(s, ":state", to);
    db_bind_int(s, ":attempts", attempts);
    db_bind_int(s, ":next", next);
    db_bind_opt_int(s, ":status", o->status > 0 ? o->status : -1);
    db_bind_opt_text(s, ":error", o->error);
    db_bind_text(s, ":sent", sent);
    db_bind_opt_text(s, ":response", o->response);
    db_bind_opt_int(s, ":delivered", o->error ? -1 : o->now);
    if ((rc = db_exec_done(c, s)) != GI_OK)
        goto cleanup;
    if ((rc = bases_set(c, asset_id, source_id, o->seen, o->now)) != GI_OK ||
        (rc = bases_set(c, asset_id, source_id, o->written, o->now)) != GI_OK ||
        (rc = conflicts_add(c, asset_id, source_id, o->conflicts, o->now)) != GI_OK)
        goto cleanup;
    if (json_object_size(o->written) > 0 || json_array_size(o->conflicts) > 0)
        rc = sync_event(c, asset_id, o);
    if (rc == GI_OK && state)
        gi_strlcpy(state, to, 16);
cleanup:
    rc = db_tx_end(c, rc);
    free(sent);
    db_conn_put(st, c);
    return rc;
}

int store_sync_linked_elsewhere(struct store *st, int64_t push_id, bool *elsewhere)
{
    struct conn *c = db_conn_get(st);
    struct db_stmt *s = prep(c, ST_ELSEWHERE);
    int64_t one = 0;
    int rc = GI_INTERNAL;

    if (s) {
        db_bind_int(s, ":id", push_id);
        rc = db_fetch_int(c, s, &one);
    }
    *elsewhere = rc == GI_OK;
    db_conn_put(st, c);
    return rc == GI_NOT_FOUND ? GI_OK : rc;
}

int store_sync_link_found(struct store *st, int64_t push_id, const char *system,
                          const char *remote_id, const json_t *theirs)
{
    struct conn *c = db_conn_get(st);
    struct db_stmt *s;
    json_t *detail = NULL;
    int64_t asset_id, source_id, now = gi_now();
    int rc = db_tx_begin(c);

    if (rc != GI_OK)
        goto cleanup;
    rc = GI_INTERNAL;
    if (!(s = prep(c, ST_STATE)))
        goto cleanup;
    db_bind_int(s, ":id", push_id);
    if ((rc = db_step(c, s)) != DB_ROW) {
        db_reset(s);
        rc = rc == DB_DONE ? GI_NOT_FOUND : db_status(rc);
        goto cleanup;
    }
    asset_id = db_col_int(s, 2);
    source_id = db_col_int(s, 3);
    db_reset(s);
    rc = GI_INTERNAL;
    if (!(s = prep(c, ST_LINK_SET)))
        goto cleanup;
    db_bind_int(s, ":asset", asset_id);
    db_bind_int(s, ":source", source_id);
    db_bind_text(s, ":remote", remote_id);
    db_bind_int(s, ":now", now);
    if ((rc = db_exec_done(c, s)) != GI_OK ||
        (rc = bases_set(c, asset_id, source_id, theirs, now)) != GI_OK)
        goto cleanup;
    /* an earlier lookup's finding is settled */
    rc = GI_INTERNAL;
    if (!(s = prep(c, ST_LINKED)))
        goto cleanup;
    db_bind_int(s, ":asset", asset_id);
    db_bind_int(s, ":source", source_id);
    db_bind_int(s, ":now", now);
    if ((rc = db_exec_done(c, s)) != GI_OK)
        goto cleanup;
    detail = json_pack("{s:s, s:s, s:s, s:s}", "system", system, "direction", "link", "by",
                       "serial", "remote_id", remote_id);
    rc = detail ? asset_event_append(c, asset_id, "sync", "sync:push", detail, now) : GI_INTERNAL;
cleanup:
    rc = db_tx_end(c, rc);
    json_decref(detail);
    db_conn_put(st, c);
    return rc;
}

/* The list filters: an asset id (0: every asset) and open-only. */
struct sync_filter {
    int64_t asset;
    bool open;
    const struct store_scope *scope;
};

static void bind_filter(struct db_stmt *s, const void *f)
{
    const struct sync_filter *sf = f;

    db_bind_int(s, ":asset", sf->asset);
    db_bind_int(s, ":open", sf->open ? 1 : 0);
    db_bind_scope(s, sf->scope);
}

static void bind_asset(struct db_stmt *s, const void *f)
{
    db_bind_int(s, ":asset", ((const struct sync_filter *)f)->asset);
    db_bind_scope(s, ((const struct sync_filter *)f)->scope);
}

/* The asset id of tag (0 for NULL). */
static int filter_asset(struct store *st, const char *tag, int64_t *id)
{
    struct conn *c;
    int rc;

    *id = 0;
    if (!tag)
        return GI_OK;
    c = db_conn_get(st);
    rc = asset_id_by_tag(c, tag, id);
    db_conn_put(st, c);
    return rc;
}

int store_sync_conflicts(struct store *st, const char *tag, bool open_only,
                         const struct store_scope *sc, const struct store_page *pg, json_t **items,
                         int64_t *total)
{
    struct sync_filter f = {0, open_only, sc};
    int rc = filter_asset(st, tag, &f.asset);

    if (rc != GI_OK)
        return rc;
    return db_list_page(st, stmt_sql[ST_CONFLICT_COUNT], stmt_sql[ST_CONFLICT_LIST], bind_filter,
                        &f, pg, items, total);
}

static int conflict_get(struct conn *c, int64_t id, json_t **out)
{
    struct db_stmt *s = prep(c, ST_CONFLICT_GET);

    if (!s)
        return GI_INTERNAL;
    db_bind_int(s, ":id", id);
    return db_fetch_one(c, s, out);
}

int store_sync_conflict_resolve(struct store *st, const char *actor, int64_t id, const char *keep,
                                json_t **out)
{
    struct conn *c = db_conn_get(st);
    struct db_stmt *s;
    json_t *k = NULL, *detail = NULL;
    int64_t asset_id, source_id, now = gi_now();
    const char *field, *theirs;
    bool ours = keep && strcmp(keep, "ours") == 0;
    int rc = db_tx_begin(c);

    *out = NULL;
    if (rc != GI_OK)
        goto cleanup;
    if ((rc = conflict_get(c, id, &k)) != GI_OK)
        goto cleanup;
    if (json_is_string(json_object_get(k, "resolved_at"))) {
        rc = GI_CONFLICT;
        goto cleanup;
    }
    asset_id = json_integer_value(json_object_get(k, "asset_id"));
    source_id = json_integer_value(json_object_get(k, "source_id"));
    field = json_string_value(json_object_get(k, "field"));
    theirs = json_string_value(json_object_get(k, "theirs"));
    rc = GI_INTERNAL;
    if (!(s = prep(c, ST_CONFLICT_RESOLVE)))
        goto cleanup;
    db_bind_int(s, ":id", id);
    db_bind_int(s, ":now", now);
    db_bind_text(s, ":actor", actor);
    db_bind_text(s, ":keep", ours ? "ours" : "theirs");
    if ((rc = db_exec_done(c, s)) != GI_OK)
        goto cleanup;
    /* Either way the remote's value is now the one last seen; keeping
     * theirs also holds gpuinv's value back until it changes. */
    if ((rc = base_set(c, asset_id, source_id, field, theirs, now)) != GI_OK)
        goto cleanup;
    rc = GI_INTERNAL;
    if (!(s = prep(c, ST_HOLD_SET)))
        goto cleanup;
    db_bind_int(s, ":asset", asset_id);
    db_bind_int(s, ":source", source_id);
    db_bind_text(s, ":field", field);
    db_bind_text(s, ":held", ours ? NULL : json_string_value(json_object_get(k, "ours")));
    if ((rc = db_exec_done(c, s)) != GI_OK)
        goto cleanup;
    if (ours && (rc = asset_sync_queue(c, asset_id, "conflict resolved", now)) != GI_OK)
        goto cleanup;
    detail = json_pack("{s:s, s:s, s:s, s:s?, s:s?}", "conflict", "resolved", "field", field,
                       "keep", ours ? "ours" : "theirs", "ours",
                       json_string_value(json_object_get(k, "ours")), "theirs", theirs);
    if ((rc = asset_event_append(c, asset_id, "sync", actor, detail, now)) != GI_OK)
        goto cleanup;
    json_decref(k);
    k = NULL;
    if ((rc = conflict_get(c, id, out)) != GI_OK)
        goto cleanup;
    json_object_del(*out, "asset_id");
    rc = db_audit(c, actor, "resolve", "sync_conflict", id, NULL, *out);
cleanup:
    rc = db_tx_end_doc(c, rc, out);
    json_decref(k);
    json_decref(detail);
    db_conn_put(st, c);
    return rc;
}

int store_sync_pushes(struct store *st, const char *tag, const struct store_scope *sc,
                      const struct store_page *pg, json_t **items, int64_t *total)
{
    struct sync_filter f = {0, false, sc};
    json_t *p;
    size_t i;
    int rc = filter_asset(st, tag, &f.asset);

    if (rc != GI_OK)
        return rc;
    rc = db_list_page(st, stmt_sql[ST_PUSH_COUNT], stmt_sql[ST_PUSH_LIST], bind_asset, &f, pg,
                      items, total);
    if (rc == GI_OK)
        json_array_foreach(*items, i, p) {
            const char *sent = json_string_value(json_object_get(p, "sent"));
            json_t *v = sent ? json_loads(sent, 0, NULL) : NULL;
            if (v)
                json_object_set_new(p, "sent", v);
        }
    return rc;
}
