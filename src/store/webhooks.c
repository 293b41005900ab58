/* Outbound webhooks and their delivery log: the webhooks' rows, the
 * enqueueing of deliveries inside the writer's transaction, and what the
 * sender (collect/deliver.c) needs: claiming due deliveries, recording
 * each attempt with its retry schedule, retention. See store.h.
 *
 * A delivery's body is built once, when it is enqueued, and stored: each
 * attempt sends and signs the same bytes, and the log shows what was
 * sent. Claiming is one conditional UPDATE per delivery (its next_at
 * still the value read): of several replicas one wins, as with job
 * leases, on both stores. */
#include "store/store_int.h"
#include "core/hookbody.h"
#include "core/status.h"
#include "core/util.h"

#include <sodium.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#define HOOK_COLS                                                                                  \
    "id, name, url, format, events, config, enabled, disabled_reason, CASE WHEN secret IS NULL "   \
    "THEN 0 ELSE 1 END AS secret_set, CASE WHEN auth IS NULL THEN 0 ELSE 1 END AS auth_set, "      \
    "created_at, updated_at"
#define DELIVERY_COLS                                                                              \
    "id, webhook_id, msg_id, event, state, attempts, next_at, last_status, last_error, "           \
    "response, ticket_id, created_at, delivered_at, body"

/* A delivery is where the ticket it is about is; one about no ticket is
 * in no data center. */
#define DLV_WHERE                                                                                  \
    "WHERE webhook_id = :webhook AND " STORE_SCOPE_IN("(SELECT " STORE_TICKET_DC(                  \
        "t") " FROM tickets t WHERE t.id = webhook_deliveries.ticket_id)") " "

#define STATEMENTS(X)                                                                              \
    X(HOOK_ADD, "INSERT INTO webhooks (name, url, format, secret, auth, events, config, enabled, " \
                "created_at, updated_at) VALUES (:name, :url, :format, :secret, :auth, :events, "  \
                ":config, :enabled, :now, :now) RETURNING id")                                     \
    X(HOOK_GET, "SELECT " HOOK_COLS " FROM webhooks WHERE id = :id")                               \
    X(HOOK_LIST, "SELECT " HOOK_COLS " FROM webhooks ORDER BY id " PAGE)                           \
    X(HOOK_COUNT, "SELECT COUNT(*) FROM webhooks")                                                 \
    X(HOOK_UPDATE,                                                                                 \
      "UPDATE webhooks SET name = COALESCE(:name, name), url = COALESCE(:url, url), format = "     \
      "COALESCE(:format, format), secret = CASE WHEN :secret IS NULL THEN secret WHEN :secret = "  \
      "'' THEN NULL ELSE :secret END, auth = CASE WHEN :auth IS NULL THEN auth WHEN :auth = '' "   \
      "THEN NULL ELSE :auth END, events = COALESCE(:events, events), config = COALESCE(:config, "  \
      "config), enabled = CASE WHEN :enabled < 0 THEN enabled ELSE :enabled END, "                 \
      "disabled_reason = CASE WHEN :enabled = 1 THEN NULL ELSE disabled_reason END, updated_at = " \
      ":now WHERE id = :id")                                                                       \
    X(HOOK_DELETE, "DELETE FROM webhooks WHERE id = :id")                                          \
    X(HOOK_ORPHAN, "UPDATE webhook_deliveries SET state = 'failed', last_error = 'the webhook "    \
                   "was deleted' WHERE webhook_id = :id AND state = 'pending'")                    \
    X(HOOK_ENABLED, "SELECT id, format, events, config FROM webhooks WHERE enabled = 1 ORDER BY "  \
                    "id")                                                                          \
    X(HOOK_ONE, "SELECT id, format, events, config, enabled FROM webhooks WHERE id = :id")         \
    X(HOOK_DISABLE, "UPDATE webhooks SET enabled = 0, disabled_reason = :reason, updated_at = "    \
                    ":now WHERE id = :id")                                                         \
    X(DLV_ADD, "INSERT INTO webhook_deliveries (webhook_id, msg_id, event, body, state, "          \
               "attempts, next_at, ticket_id, created_at) VALUES (:webhook, :msg, :event, :body, " \
               "'pending', 0, :now, :ticket, :now) RETURNING id")                                  \
    X(DLV_GET, "SELECT " DELIVERY_COLS " FROM webhook_deliveries WHERE id = :id")                  \
    X(DLV_LIST,                                                                                    \
      "SELECT " DELIVERY_COLS " FROM webhook_deliveries " DLV_WHERE "ORDER BY id DESC " PAGE)      \
    X(DLV_COUNT, "SELECT COUNT(*) FROM webhook_deliveries " DLV_WHERE)                             \
    X(DLV_RETRY, "UPDATE webhook_deliveries SET state = 'pending', attempts = 0, next_at = :now "  \
                 "WHERE id = :id AND state IN ('failed', 'dead')")                                 \
    X(DLV_DUE,                                                                                     \
      "SELECT d.id, d.next_at AS due_s FROM webhook_deliveries d JOIN webhooks w ON w.id = "       \
      "d.webhook_id WHERE d.state = 'pending' AND d.next_at <= :now AND w.enabled = 1 "            \
      "ORDER BY d.next_at, d.id LIMIT :limit")                                                     \
    X(DLV_TAKE, "UPDATE webhook_deliveries SET next_at = :lease WHERE id = :id AND state = "       \
                "'pending' AND next_at = :old")                                                    \
    X(DLV_SEND, "SELECT d.id, d.webhook_id, d.msg_id, d.event, d.body, d.attempts, d.ticket_id, "  \
                "w.url, w.format, w.secret, w.auth FROM webhook_deliveries d JOIN webhooks w ON "  \
                "w.id = d.webhook_id WHERE d.id = :id")                                            \
    X(DLV_STATE, "SELECT webhook_id, attempts, ticket_id, state FROM webhook_deliveries WHERE "    \
                 "id = :id")                                                                       \
    X(DLV_MARK, "UPDATE webhook_deliveries SET state = :state, attempts = :attempts, next_at = "   \
                ":next, last_status = :status, last_error = :error, response = :response, "        \
                "delivered_at = :delivered WHERE id = :id")                                        \
    X(DLV_PRUNE, "DELETE FROM webhook_deliveries WHERE state <> 'pending' AND created_at < "       \
                 ":before")                                                                        \
    X(TICKET_EXT, "UPDATE tickets SET external_system = :system, external_key = :key, "            \
                  "external_url = :url WHERE id = :id AND external_key IS NULL")

enum stmt_id { STATEMENTS(STORE_AS_ENUM) ST__COUNT };
static const char *const stmt_sql[] = {STATEMENTS(STORE_AS_SQL)};

static struct db_stmt *prep(struct conn *c, enum stmt_id id) { return db_prep(c, stmt_sql[id]); }

const int64_t store_delivery_backoff[] = {30, 120, 600, 3600, 6 * 3600, 24 * 3600};
const int store_delivery_backoff_n = (int)(sizeof store_delivery_backoff / sizeof(int64_t));

/* The API form of a webhook row: flags as booleans, events as a list. */
static void hook_doc(json_t *h)
{
    static const char *const flags[] = {"enabled", "secret_set", "auth_set"};
    const char *ev = json_string_value(json_object_get(h, "events"));
    json_t *list = json_array();

    for (size_t i = 0; i < 3; i++)
        json_object_set_new(h, flags[i],
                            json_boolean(json_integer_value(json_object_get(h, flags[i])) != 0));
    while (ev && *ev) {
        size_t n = strcspn(ev, ",");
        if (n > 0)
            json_array_append_new(list, json_stringn(ev, n));
        ev += n;
        if (*ev == ',')
            ev++;
    }
    json_object_set_new(h, "events", list);
}

/* The API form of a delivery row: its stored body as JSON. */
static void delivery_doc(json_t *d)
{
    const char *b = json_string_value(json_object_get(d, "body"));
    json_t *v = b ? json_loads(b, 0, NULL) : NULL;

    if (v)
        json_object_set_new(d, "body", v);
}

static int hook_get(struct conn *c, int64_t id, json_t **out)
{
    struct db_stmt *s = prep(c, ST_HOOK_GET);
    int rc;

    if (!s)
        return GI_INTERNAL;
    db_bind_int(s, ":id", id);
    if ((rc = db_fetch_one(c, s, out)) == GI_OK)
        hook_doc(*out);
    return rc;
}

static int delivery_get(struct conn *c, int64_t id, json_t **out)
{
    struct db_stmt *s = prep(c, ST_DLV_GET);
    int rc;

    if (!s)
        return GI_INTERNAL;
    db_bind_int(s, ":id", id);
    if ((rc = db_fetch_one(c, s, out)) == GI_OK)
        delivery_doc(*out);
    return rc;
}

int store_webhook_create(struct store *st, const char *actor, const struct store_webhook *in,
                         json_t **out)
{
    struct conn *c = db_conn_get(st);
    struct db_stmt *s;
    int64_t id;
    int rc = db_tx_begin(c);

    *out = NULL;
    if (rc != GI_OK)
        goto cleanup;
    rc = GI_INTERNAL;
    if (!(s = prep(c, ST_HOOK_ADD)))
        goto cleanup;
    db_bind_text(s, ":name", in->name);
    db_bind_text(s, ":url", in->url);
    db_bind_text(s, ":format", in->format);
    db_bind_opt_text(s, ":secret", in->secret);
    db_bind_opt_text(s, ":auth", in->auth);
    db_bind_text(s, ":events", in->events ? in->events : "*");
    if (in->config)
        db_bind_json(s, ":config", in->config);
    else
        db_bind_text(s, ":config", "{}");
    db_bind_int(s, ":enabled", in->enabled == 0 ? 0 : 1);
    db_bind_int(s, ":now", gi_now());
    if ((rc = db_fetch_int(c, s, &id)) != GI_OK)
        goto cleanup;
    if ((rc = hook_get(c, id, out)) != GI_OK)
        goto cleanup;
    rc = db_audit(c, actor, "create", "webhook", id, NULL, *out);
cleanup:
    rc = db_tx_end_doc(c, rc, out);
    db_conn_put(st, c);
    return rc;
}

static void bind_none(struct db_stmt *s, const void *f)
{
    (void)s;
    (void)f;
}

int store_webhook_list(struct store *st, const struct store_page *pg, json_t **items,
                       int64_t *total)
{
    json_t *h;
    size_t i;
    int rc = db_list_page(st, stmt_sql[ST_HOOK_COUNT], stmt_sql[ST_HOOK_LIST], bind_none, NULL, pg,
                          items, total);

    if (rc == GI_OK)
        json_array_foreach(*items, i, h)
            hook_doc(h);
    return rc;
}

int store_webhook_get(struct store *st, int64_t id, json_t **out)
{
    struct conn *c = db_conn_get(st);
    int rc = hook_get(c, id, out);

    db_conn_put(st, c);
    return rc;
}

int store_webhook_update(struct store *st, const char *actor, int64_t id,
                         const struct store_webhook *in, json_t **out)
{
    struct conn *c = db_conn_get(st);
    struct db_stmt *s;
    json_t *before = NULL;
    int rc = db_tx_begin(c);

    *out = NULL;
    if (rc != GI_OK)
        goto cleanup;
    if ((rc = hook_get(c, id, &before)) != GI_OK)
        goto cleanup;
    rc = GI_INTERNAL;
    if (!(s = prep(c, ST_HOOK_UPDATE)))
        goto cleanup;
    db_bind_int(s, ":id", id);
    db_bind_text(s, ":name", in->name);
    db_bind_text(s, ":url", in->url);
    db_bind_text(s, ":format", in->format);
    db_bind_text(s, ":secret", in->secret);
    db_bind_text(s, ":auth", in->auth);
    db_bind_text(s, ":events", in->events);
    db_bind_json(s, ":config", in->config);
    db_bind_int(s, ":enabled", in->enabled < 0 ? -1 : in->enabled ? 1 : 0);
    db_bind_int(s, ":now", gi_now());
    if ((rc = db_exec_done(c, s)) != GI_OK)
        goto cleanup;
    if ((rc = hook_get(c, id, out)) != GI_OK)
        goto cleanup;
    rc = db_audit(c, actor, "update", "webhook", id, before, *out);
cleanup:
    rc = db_tx_end_doc(c, rc, out);
    json_decref(before);
    db_conn_put(st, c);
    return rc;
}

int store_webhook_delete(struct store *st, const char *actor, int64_t id)
{
    struct conn *c = db_conn_get(st);
    struct db_stmt *s;
    json_t *before = NULL;
    int rc = db_tx_begin(c);

    if (rc != GI_OK)
        goto cleanup;
    if ((rc = hook_get(c, id, &before)) != GI_OK)
        goto cleanup;
    rc = GI_INTERNAL;
    if (!(s = prep(c, ST_HOOK_ORPHAN)))
        goto cleanup;
    db_bind_int(s, ":id", id);
    if ((rc = db_exec_done(c, s)) != GI_OK)
        goto cleanup;
    rc = GI_INTERNAL;
    if (!(s = prep(c, ST_HOOK_DELETE)))
        goto cleanup;
    db_bind_int(s, ":id", id);
    if ((rc = db_exec_done(c, s)) != GI_OK)
        goto cleanup;
    rc = db_audit(c, actor, "delete", "webhook", id, before, NULL);
cleanup:
    rc = db_tx_end(c, rc);
    json_decref(before);
    db_conn_put(st, c);
    return rc;
}

/* The events a ticket system's webhook (Jira, ServiceNow) gets from "*":
 * those that stand for a ticket, never the asset events of every scan. */
static const char *const ticket_events[] = {"ticket.opened", NULL};

/* True when `event` is one a "*" list of a webhook of this format gets:
 * every event for a generic webhook, the ticket events for a ticket
 * system's. */
static bool star_wants(const char *format, const char *event)
{
    if (format == NULL || strcmp(format, "generic") == 0)
        return true;
    for (const char *const *t = ticket_events; *t; t++)
        if (strcmp(*t, event) == 0)
            return true;
    return false;
}

/* True when the comma list `events` names `event`, or is "*" and the
 * webhook's format takes the event from "*" (star_wants). */
static bool wants(const char *events, const char *format, const char *event)
{
    size_t el = strlen(event);

    while (events && *events) {
        size_t n = strcspn(events, ",");
        if ((n == 1 && events[0] == '*' && star_wants(format, event)) ||
            (n == el && strncmp(events, event, n) == 0))
            return true;
        events += n;
        if (*events == ',')
            events++;
    }
    return false;
}

/* One delivery of `event` to the webhook row `hook` ({id, format,
 * config}), its body built now; *id (may be NULL) the new delivery. */
static int enqueue_one(struct conn *c, const json_t *hook, const char *event, json_t *context,
                       int64_t ticket_id, int64_t at, int64_t *id)
{
    unsigned char rnd[16];
    char msg[4 + 2 * sizeof rnd + 1] = "msg_";
    const char *format = json_string_value(json_object_get(hook, "format"));
    json_t *body;
    char *text = NULL;
    struct db_stmt *s;
    int64_t new_id = 0;
    int rc = GI_INTERNAL;

    randombytes_buf(rnd, sizeof rnd);
    gi_hex(rnd, sizeof rnd, msg + 4);
    body = hookbody_build(format ? format : "generic", event, context,
                          json_object_get(hook, "config"), msg, at);
    if (!body || !(text = json_dumps(body, JSON_COMPACT)))
        goto cleanup;
    if (!(s = prep(c, ST_DLV_ADD)))
        goto cleanup;
    db_bind_int(s, ":webhook", json_integer_value(json_object_get(hook, "id")));
    db_bind_text(s, ":msg", msg);
    db_bind_text(s, ":event", event);
    db_bind_text(s, ":body", text);
    db_bind_int(s, ":now", at);
    db_bind_opt_int(s, ":ticket", ticket_id > 0 ? ticket_id : -1);
    rc = db_fetch_int(c, s, &new_id);
    if (id)
        *id = new_id;
cleanup:
    free(text);
    json_decref(body);
    return rc;
}

int webhook_enqueue(struct conn *c, const char *event, json_t *context, int64_t ticket_id,
                    int64_t at)
{
    struct db_stmt *s = prep(c, ST_HOOK_ENABLED);
    json_t *hooks = NULL, *h;
    size_t i;
    int rc = s ? db_collect(c, s, &hooks) : GI_INTERNAL;

    json_array_foreach(hooks, i, h) {
        if (rc != GI_OK)
            break;
        if (wants(json_string_value(json_object_get(h, "events")),
                  json_string_value(json_object_get(h, "format")), event))
            rc = enqueue_one(c, h, event, context, ticket_id, at, NULL);
    }
    json_decref(hooks);
    return rc;
}

int store_webhook_test(struct store *st, const char *actor, int64_t id, json_t **out)
{
    struct conn *c = db_conn_get(st);
    struct db_stmt *s;
    json_t *hook = NULL, *ctx = NULL;
    int64_t did = 0, now = gi_now();
    int rc = db_tx_begin(c);

    *out = NULL;
    if (rc != GI_OK)
        goto cleanup;
    rc = GI_INTERNAL;
    if (!(s = prep(c, ST_HOOK_ONE)))
        goto cleanup;
    db_bind_int(s, ":id", id);
    if ((rc = db_fetch_one(c, s, &hook)) != GI_OK)
        goto cleanup;
    if (json_integer_value(json_object_get(hook, "enabled")) == 0) {
        rc = GI_CONFLICT;
        goto cleanup;
    }
    ctx = json_pack("{s:s, s:s, s:s}", "title", "gpuinv test delivery", "body",
                    "A test delivery sent from gpuinv to check this webhook.", "reason",
                    "test requested");
    if ((rc = enqueue_one(c, hook, "webhook.test", ctx, 0, now, &did)) != GI_OK)
        goto cleanup;
    if ((rc = delivery_get(c, did, out)) != GI_OK)
        goto cleanup;
    rc = db_audit(c, actor, "test", "webhook", id, NULL, *out);
cleanup:
    rc = db_tx_end_doc(c, rc, out);
    json_decref(hook);
    json_decref(ctx);
    db_conn_put(st, c);
    return rc;
}

struct dlv_filter {
    int64_t webhook_id;
    const struct store_scope *scope;
};

static void bind_webhook(struct db_stmt *s, const void *filter)
{
    const struct dlv_filter *f = filter;

    db_bind_int(s, ":webhook", f->webhook_id);
    db_bind_scope(s, f->scope);
}

int store_delivery_list(struct store *st, int64_t webhook_id, const struct store_scope *sc,
                        const struct store_page *pg, json_t **items, int64_t *total)
{
    struct dlv_filter f = {webhook_id, sc};
    json_t *d = NULL;
    size_t i;
    int rc = store_webhook_get(st, webhook_id, &d);

    json_decref(d);
    if (rc != GI_OK)
        return rc;
    rc = db_list_page(st, stmt_sql[ST_DLV_COUNT], stmt_sql[ST_DLV_LIST], bind_webhook, &f, pg,
                      items, total);
    if (rc == GI_OK)
        json_array_foreach(*items, i, d)
            delivery_doc(d);
    return rc;
}

int store_delivery_retry(struct store *st, const char *actor, int64_t id, json_t **out)
{
    struct conn *c = db_conn_get(st);
    struct db_stmt *s;
    json_t *before = NULL;
    int rc = db_tx_begin(c);

    *out = NULL;
    if (rc != GI_OK)
        goto cleanup;
    if ((rc = delivery_get(c, id, &before)) != GI_OK)
        goto cleanup;
    rc = GI_INTERNAL;
    if (!(s = prep(c, ST_DLV_RETRY)))
        goto cleanup;
    db_bind_int(s, ":id", id);
    db_bind_int(s, ":now", gi_now());
    if ((rc = db_exec_done(c, s)) != GI_OK)
        goto cleanup;
    if (db_changes(c) != 1) {
        rc = GI_CONFLICT;
        goto cleanup;
    }
    if ((rc = delivery_get(c, id, out)) != GI_OK)
        goto cleanup;
    rc = db_audit(c, actor, "retry", "webhook_delivery", id, NULL, NULL);
cleanup:
    rc = db_tx_end_doc(c, rc, out);
    json_decref(before);
    db_conn_put(st, c);
    return rc;
}

int delivery_claim_due(struct store *st, const char *due_sql, const char *take_sql, int64_t now,
                       int64_t lease_s, int64_t limit, delivery_take_fn take, json_t **items)
{
    struct conn *c = db_conn_get(st);
    struct db_stmt *s;
    json_t *due = NULL, *row;
    size_t i;
    int rc = db_tx_begin(c);

    *items = json_array();
    if (rc != GI_OK)
        goto cleanup;
    rc = GI_INTERNAL;
    if (!*items || !(s = db_prep(c, due_sql)))
        goto cleanup;
    db_bind_int(s, ":now", now);
    db_bind_int(s, ":limit", limit);
    if ((rc = db_collect(c, s, &due)) != GI_OK)
        goto cleanup;
    json_array_foreach(due, i, row) {
        int64_t id = json_integer_value(json_object_get(row, "id"));
        rc = GI_INTERNAL;
        if (!(s = db_prep(c, take_sql)))
            goto cleanup;
        db_bind_int(s, ":id", id);
        db_bind_int(s, ":old", json_integer_value(json_object_get(row, "due_s")));
        db_bind_int(s, ":lease", now + lease_s);
        if ((rc = db_exec_done(c, s)) != GI_OK)
            goto cleanup;
        if (db_changes(c) != 1)
            continue; /* another sender took it */
        if ((rc = take(c, id, now, *items)) != GI_OK)
            goto cleanup;
    }
cleanup:
    rc = db_tx_end(c, rc);
    if (rc != GI_OK) {
        json_decref(*items);
        *items = NULL;
    }
    json_decref(due);
    db_conn_put(st, c);
    return rc;
}

/* A taken delivery with what its sender needs. */
static int delivery_take(struct conn *c, int64_t id, int64_t now, json_t *items)
{
    struct db_stmt *s = prep(c, ST_DLV_SEND);
    json_t *one = NULL;
    int rc;

    (void)now;
    if (!s)
        return GI_INTERNAL;
    db_bind_int(s, ":id", id);
    if ((rc = db_fetch_one(c, s, &one)) == GI_OK)
        json_array_append_new(items, one);
    return rc;
}

int store_delivery_claim(struct store *st, int64_t now, int64_t lease_s, int64_t limit,
                         json_t **items)
{
    return delivery_claim_due(st, stmt_sql[ST_DLV_DUE], stmt_sql[ST_DLV_TAKE], now, lease_s, limit,
                              delivery_take, items);
}

/* The delivery's state after attempt number `attempts` got o. */
static const char *next_state(const struct store_delivery_outcome *o, int64_t attempts,
                              int64_t *next)
{
    *next = o->now;
    if (o->status >= 200 && o->status <= 299)
        return "delivered";
    if (o->status == 410)
        return "failed";
    if (attempts > store_delivery_backoff_n)
        return "dead";
    *next = o->now + (o->backoff_s > 0 ? o->backoff_s : store_delivery_backoff[attempts - 1]);
    return "pending";
}

int store_delivery_done(struct store *st, const struct store_delivery_outcome *o, char *state)
{
    struct conn *c = db_conn_get(st);
    struct db_stmt *s;
    int64_t webhook_id, attempts, ticket_id, next;
    const char *to;
    char reason[128], when[40];
    json_t *after = NULL;
    int rc = db_tx_begin(c);

    if (state)
        state[0] = '\0';
    if (rc != GI_OK)
        goto cleanup;
    rc = GI_INTERNAL;
    if (!(s = prep(c, ST_DLV_STATE)))
        goto cleanup;
    db_bind_int(s, ":id", o->id);
    if ((rc = db_step(c, s)) != DB_ROW) {
        db_reset(s);
        rc = rc == DB_DONE ? GI_NOT_FOUND : rc;
        goto cleanup;
    }
    webhook_id = db_col_int(s, 0);
    attempts = db_col_int(s, 1) + 1;
    ticket_id = db_col_int(s, 2);
    if (strcmp(db_col_text(s, 3), "pending") != 0) {
        db_reset(s);
        rc = GI_CONFLICT; /* retried or finished meanwhile: this attempt is stale */
        goto cleanup;
    }
    db_reset(s);
    to = next_state(o, attempts, &next);
    rc = GI_INTERNAL;
    if (!(s = prep(c, ST_DLV_MARK)))
        goto cleanup;
    db_bind_int(s, ":id", o->id);
    db_bind_text(s, ":state", to);
    db_bind_int(s, ":attempts", attempts);
    db_bind_int(s, ":next", next);
    db_bind_opt_int(s, ":status", o->status > 0 ? o->status : -1);
    db_bind_opt_text(s, ":error", o->error);
    db_bind_text(s, ":response", o->response);
    db_bind_opt_int(s, ":delivered", strcmp(to, "delivered") == 0 ? o->now : -1);
    if ((rc = db_exec_done(c, s)) != GI_OK)
        goto cleanup;
    if (strcmp(to, "delivered") == 0 && ticket_id > 0 && o->ext_key && *o->ext_key) {
        rc = GI_INTERNAL;
        if (!(s = prep(c, ST_TICKET_EXT)))
            goto cleanup;
        db_bind_int(s, ":id", ticket_id);
        db_bind_text(s, ":system", o->ext_system);
        db_bind_text(s, ":key", o->ext_key);
        db_bind_opt_text(s, ":url", o->ext_url);
        if ((rc = db_exec_done(c, s)) != GI_OK)
            goto cleanup;
    }
    if (o->status == 410) {
        gi_time_format(o->now, when, sizeof when);
        snprintf(reason, sizeof reason, "the receiver answered 410 Gone at %s", when);
        rc = GI_INTERNAL;
        if (!(s = prep(c, ST_HOOK_DISABLE)))
            goto cleanup;
        db_bind_int(s, ":id", webhook_id);
        db_bind_text(s, ":reason", reason);
        db_bind_int(s, ":now", o->now);
        if ((rc = db_exec_done(c, s)) != GI_OK)
            goto cleanup;
        after = json_pack("{s:s}", "disabled_reason", reason);
        rc = db_audit(c, "webhooks:deliver", "disable", "webhook", webhook_id, NULL, after);
    }
    if (rc == GI_OK && state)
        gi_strlcpy(state, to, 16);
cleanup:
    rc = db_tx_end(c, rc);
    json_decref(after);
    db_conn_put(st, c);
    return rc;
}

int store_delivery_prune(struct store *st, int64_t before, int64_t *deleted)
{
    struct conn *c = db_conn_get(st);
    struct db_stmt *s;
    int rc = db_tx_begin(c);

    *deleted = 0;
    if (rc == GI_OK) {
        rc = GI_INTERNAL;
        if ((s = prep(c, ST_DLV_PRUNE))) {
            db_bind_int(s, ":before", before);
            if ((rc = db_exec_done(c, s)) == GI_OK)
                *deleted = db_changes(c);
        }
    }
    rc = db_tx_end(c, rc);
    db_conn_put(st, c);
    return rc;
}
