/* Tickets: at most one open ticket per dedupe key (a rule and an asset,
 * or "manual:<id>"), each opening and closing raising its webhook event
 * in the same transaction; the ticket system's key and link are filled
 * from its reply by the delivery (webhooks.c). See store.h and
 * store_int.h. */
#include "store/store_int.h"
#include "core/hookbody.h"
#include "core/status.h"
#include "core/util.h"

#include <stdio.h>
#include <string.h>

#define TICKET_COLS                                                                                \
    "id, asset_tag, gpu_uuid, rule_id, dedupe_key, title, body, state, external_system, "          \
    "external_key, external_url, opened_by, opened_at, closed_at"
#define TICKET_WHERE                                                                               \
    "WHERE (:state IS NULL OR state = :state) AND (:asset IS NULL OR asset_tag = :asset) AND "     \
    "(:dc = 0 OR " STORE_TICKET_DC("tickets") " = :dc) AND " STORE_SCOPE_IN(                       \
        STORE_TICKET_DC("tickets")) " "

#define STATEMENTS(X)                                                                              \
    X(T_OPEN_BY_KEY, "SELECT id FROM tickets WHERE dedupe_key = :key AND state = 'open'")          \
    X(T_ADD, "INSERT INTO tickets (asset_tag, gpu_uuid, rule_id, dedupe_key, title, body, state, " \
             "opened_by, opened_at) VALUES (:asset, :gpu, :rule, :key, :title, :body, 'open', "    \
             ":actor, :now) RETURNING id")                                                         \
    X(T_SET_KEY, "UPDATE tickets SET dedupe_key = :key WHERE id = :id")                            \
    X(T_GET, "SELECT " TICKET_COLS " FROM tickets WHERE id = :id")                                 \
    X(T_LIST, "SELECT " TICKET_COLS " FROM tickets " TICKET_WHERE "ORDER BY id DESC " PAGE)        \
    X(T_COUNT, "SELECT COUNT(*) FROM tickets " TICKET_WHERE)                                       \
    X(T_CLOSE, "UPDATE tickets SET state = 'closed', closed_at = :now WHERE id = :id AND state = " \
               "'open'")                                                                           \
    X(T_ASSET, "SELECT id FROM assets WHERE tag = :tag")                                           \
    X(T_GPU, "SELECT g.uuid, g.serial, g.model, h.hostname AS host FROM gpus g LEFT JOIN hosts h " \
             "ON h.id = g.host_id WHERE g.uuid = :uuid")

enum stmt_id { STATEMENTS(STORE_AS_ENUM) ST__COUNT };
static const char *const stmt_sql[] = {STATEMENTS(STORE_AS_SQL)};

static struct db_stmt *prep(struct conn *c, enum stmt_id id) { return db_prep(c, stmt_sql[id]); }

static const char *sget(const json_t *o, const char *key)
{
    const char *v = json_string_value(json_object_get(o, key));
    return v && *v ? v : NULL;
}

static int ticket_get(struct conn *c, int64_t id, json_t **out)
{
    struct db_stmt *s = prep(c, ST_T_GET);
    if (!s)
        return GI_INTERNAL;
    db_bind_int(s, ":id", id);
    return db_fetch_one(c, s, out);
}

/* The event "ticket" {ticket_id, rule} on the timeline of the context's
 * asset; nothing when the context names no asset or one gpuinv does not
 * hold. */
static int asset_event(struct conn *c, const json_t *context, int64_t ticket_id, const char *actor,
                       int64_t at)
{
    const char *tag = sget(json_object_get(context, "asset"), "tag");
    const json_t *rule = json_object_get(json_object_get(context, "rule"), "id");
    struct db_stmt *s;
    json_t *detail;
    int64_t asset_id;
    int rc;

    if (!tag)
        return GI_OK;
    if (!(s = prep(c, ST_T_ASSET)))
        return GI_INTERNAL;
    db_bind_text(s, ":tag", tag);
    if ((rc = db_fetch_int(c, s, &asset_id)) != GI_OK)
        return rc == GI_NOT_FOUND ? GI_OK : rc;
    detail =
        json_pack("{s:I, s:o}", "ticket_id", (json_int_t)ticket_id, "rule",
                  json_is_integer(rule) ? json_integer(json_integer_value(rule)) : json_null());
    if (!detail)
        return GI_INTERNAL;
    rc = asset_event_append(c, asset_id, "ticket", actor, detail, at);
    json_decref(detail);
    return rc;
}

/* Inserts the ticket of context (dedupe key `key`, or "manual:<id>"
 * when key is NULL), audits it and enqueues ticket.opened; *id the new
 * ticket. */
static int ticket_insert(struct conn *c, const char *key, json_t *context, const char *actor,
                         int64_t at, int64_t *id)
{
    char title[HOOKBODY_SUMMARY_MAX + 1], manual[48];
    const char *body = sget(context, "body");
    const json_t *rule = json_object_get(json_object_get(context, "rule"), "id");
    json_t *doc = NULL, *ctx = NULL;
    struct db_stmt *s;
    int rc = GI_INTERNAL;

    hookbody_title(context, "ticket", title, HOOKBODY_SUMMARY_MAX);
    if (!body)
        body = sget(context, "reason");
    if (!(s = prep(c, ST_T_ADD)))
        goto cleanup;
    db_bind_text(s, ":asset", sget(json_object_get(context, "asset"), "tag"));
    db_bind_text(s, ":gpu", sget(json_object_get(context, "gpu"), "uuid"));
    db_bind_opt_int(s, ":rule", json_is_integer(rule) ? json_integer_value(rule) : -1);
    db_bind_text(s, ":key", key ? key : "manual:new");
    db_bind_text(s, ":title", title);
    db_bind_text(s, ":body", body ? body : "");
    db_bind_text(s, ":actor", actor);
    db_bind_int(s, ":now", at);
    if ((rc = db_fetch_int(c, s, id)) != GI_OK)
        goto cleanup;
    if (!key) {
        snprintf(manual, sizeof manual, "manual:%lld", (long long)*id);
        rc = GI_INTERNAL;
        if (!(s = prep(c, ST_T_SET_KEY)))
            goto cleanup;
        db_bind_int(s, ":id", *id);
        db_bind_text(s, ":key", manual);
        if ((rc = db_exec_done(c, s)) != GI_OK)
            goto cleanup;
    }
    if ((rc = ticket_get(c, *id, &doc)) != GI_OK)
        goto cleanup;
    if ((rc = db_audit(c, actor, "open", "ticket", *id, NULL, doc)) != GI_OK)
        goto cleanup;
    if ((rc = asset_event(c, context, *id, actor, at)) != GI_OK)
        goto cleanup;
    rc = GI_INTERNAL;
    if (!(ctx = json_is_object(context) ? json_deep_copy(context) : json_object()))
        goto cleanup;
    json_object_set(ctx, "ticket", doc);
    json_object_set_new(ctx, "title", json_string(title));
    rc = webhook_enqueue(c, "ticket.opened", ctx, *id, at);
cleanup:
    json_decref(doc);
    json_decref(ctx);
    return rc;
}

int ticket_open(struct conn *c, const char *dedupe_key, json_t *context, const char *actor,
                int64_t at, int64_t *ticket_id, bool *existing)
{
    struct db_stmt *s = prep(c, ST_T_OPEN_BY_KEY);
    int rc;

    *existing = false;
    *ticket_id = 0;
    if (!s)
        return GI_INTERNAL;
    db_bind_text(s, ":key", dedupe_key);
    rc = db_fetch_int(c, s, ticket_id);
    if (rc == GI_OK) {
        *existing = true;
        return GI_OK;
    }
    if (rc != GI_NOT_FOUND)
        return rc;
    return ticket_insert(c, dedupe_key, context, actor, at, ticket_id);
}

static void bind_ticket_filter(struct db_stmt *s, const void *p)
{
    const struct store_ticket_filter *f = p;
    db_bind_opt_text(s, ":state", f->state);
    db_bind_opt_text(s, ":asset", f->asset_tag);
    db_bind_int(s, ":dc", f->datacenter_id);
    db_bind_scope(s, &f->scope);
}

int store_ticket_list(struct store *st, const struct store_ticket_filter *f,
                      const struct store_page *pg, json_t **items, int64_t *total)
{
    return db_list_page(st, stmt_sql[ST_T_COUNT], stmt_sql[ST_T_LIST], bind_ticket_filter, f, pg,
                        items, total);
}

int store_ticket_get(struct store *st, int64_t id, json_t **out)
{
    struct conn *c = db_conn_get(st);
    int rc = ticket_get(c, id, out);
    db_conn_put(st, c);
    return rc;
}

int store_ticket_create(struct store *st, const char *actor, const char *asset_tag,
                        const char *gpu_uuid, const char *title, const char *body, json_t **out)
{
    struct conn *c = db_conn_get(st);
    struct db_stmt *s;
    json_t *ctx = json_pack("{s:s, s:s}", "title", title, "body", body ? body : "");
    json_t *gpu = NULL;
    int64_t id = 0;
    int rc = db_tx_begin(c);

    *out = NULL;
    if (rc != GI_OK)
        goto cleanup;
    rc = GI_INTERNAL;
    if (!ctx)
        goto cleanup;
    if (asset_tag && *asset_tag)
        json_object_set_new(ctx, "asset", json_pack("{s:s}", "tag", asset_tag));
    if (gpu_uuid && *gpu_uuid) {
        /* What discovery knows of the GPU goes with the ticket; an
         * unknown UUID is kept as given. */
        if (!(s = prep(c, ST_T_GPU)))
            goto cleanup;
        db_bind_text(s, ":uuid", gpu_uuid);
        rc = db_fetch_one(c, s, &gpu);
        if (rc == GI_NOT_FOUND)
            gpu = json_pack("{s:s}", "uuid", gpu_uuid);
        else if (rc != GI_OK)
            goto cleanup;
        json_object_set_new(ctx, "gpu", gpu);
    }
    if ((rc = ticket_insert(c, NULL, ctx, actor, gi_now(), &id)) != GI_OK)
        goto cleanup;
    rc = ticket_get(c, id, out);
cleanup:
    rc = db_tx_end_doc(c, rc, out);
    json_decref(ctx);
    db_conn_put(st, c);
    return rc;
}

int store_ticket_close(struct store *st, const char *actor, int64_t id, json_t **out)
{
    struct conn *c = db_conn_get(st);
    struct db_stmt *s;
    json_t *before = NULL, *ctx = NULL;
    int64_t now = gi_now();
    int rc = db_tx_begin(c);

    *out = NULL;
    if (rc != GI_OK)
        goto cleanup;
    if ((rc = ticket_get(c, id, &before)) != GI_OK)
        goto cleanup;
    rc = GI_INTERNAL;
    if (!(s = prep(c, ST_T_CLOSE)))
        goto cleanup;
    db_bind_int(s, ":id", id);
    db_bind_int(s, ":now", now);
    if ((rc = db_exec_done(c, s)) != GI_OK)
        goto cleanup;
    if (db_changes(c) != 1) {
        rc = GI_CONFLICT;
        goto cleanup;
    }
    if ((rc = ticket_get(c, id, out)) != GI_OK)
        goto cleanup;
    if ((rc = db_audit(c, actor, "close", "ticket", id, before, *out)) != GI_OK)
        goto cleanup;
    rc = GI_INTERNAL;
    ctx = json_pack("{s:O, s:s}", "ticket", *out, "title",
                    json_string_value(json_object_get(*out, "title")));
    if (!ctx)
        goto cleanup;
    if (sget(*out, "asset_tag"))
        json_object_set_new(ctx, "asset", json_pack("{s:s}", "tag", sget(*out, "asset_tag")));
    if (sget(*out, "gpu_uuid"))
        json_object_set_new(ctx, "gpu", json_pack("{s:s}", "uuid", sget(*out, "gpu_uuid")));
    rc = webhook_enqueue(c, "ticket.closed", ctx, 0, now);
cleanup:
    rc = db_tx_end_doc(c, rc, out);
    json_decref(before);
    json_decref(ctx);
    db_conn_put(st, c);
    return rc;
}
