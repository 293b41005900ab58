/* Unit tests for tickets and the webhook delivery log (src/store/
 * tickets.c, webhooks.c), on each store: one open ticket per dedupe key,
 * deliveries only to webhooks that want the event, claiming that never
 * hands one delivery out twice, the retry schedule up to dead, 410
 * disabling the webhook, the ticket event on the asset's timeline, a
 * ticket system's reply filling the ticket, and
 * retention. */
#include "unit.h"
#include "testdb.h"

#include "core/status.h"
#include "core/util.h"
#include "store/store.h"
#include "store/store_int.h"

#include <string.h>

static int64_t mk_hook(struct store *st, const char *name, const char *events)
{
    struct store_webhook w = {.name = name,
                              .url = "http://127.0.0.1:9/x",
                              .format = "generic",
                              .events = events,
                              .enabled = 1};
    json_t *out = NULL;
    int64_t id;
    assert_int_equal(store_webhook_create(st, "t", &w, &out), GI_OK);
    id = json_integer_value(json_object_get(out, "id"));
    json_decref(out);
    return id;
}

/* Opens the ticket of `key` in its own transaction. */
static int64_t open_key(struct store *st, const char *key, bool *existing)
{
    struct conn *c = db_conn_get(st);
    json_t *ctx = json_pack("{s:s, s:{s:s}, s:{s:i}}", "reason", "xid errors", "asset", "tag",
                            "GI-000001", "rule", "id", 3);
    int64_t id = 0;
    int rc = db_tx_begin(c);
    if (rc == GI_OK)
        rc = ticket_open(c, key, ctx, "rules", gi_now(), &id, existing);
    assert_int_equal(db_tx_end(c, rc), GI_OK);
    db_conn_put(st, c);
    json_decref(ctx);
    return id;
}

static int64_t count_deliveries(struct store *st, int64_t hook)
{
    struct store_page pg = {.limit = 100};
    json_t *items = NULL;
    int64_t total = -1;
    assert_int_equal(store_delivery_list(st, hook, NULL, &pg, &items, &total), GI_OK);
    json_decref(items);
    return total;
}

static void test_one_open_ticket_per_key(void **state)
{
    struct testdb_fixture *f = *state;
    int64_t want = mk_hook(f->st, "tickets", "ticket.opened");
    int64_t other = mk_hook(f->st, "tests", "webhook.test");
    bool existing = true;
    int64_t a = open_key(f->st, "rule:3:GI-000001", &existing), b;
    json_t *t = NULL;

    assert_false(existing);
    b = open_key(f->st, "rule:3:GI-000001", &existing);
    assert_true(existing);
    assert_int_equal(a, b);
    /* One delivery, to the webhook that wants ticket.opened only. */
    assert_int_equal(count_deliveries(f->st, want), 1);
    assert_int_equal(count_deliveries(f->st, other), 0);
    assert_int_equal(store_ticket_get(f->st, a, &t), GI_OK);
    assert_string_equal(json_string_value(json_object_get(t, "asset_tag")), "GI-000001");
    assert_int_equal(json_integer_value(json_object_get(t, "rule_id")), 3);
    assert_string_equal(json_string_value(json_object_get(t, "title")), "xid errors: GI-000001");
    json_decref(t);
    /* Once closed, the key opens a new ticket. */
    assert_int_equal(store_ticket_close(f->st, "t", a, &t), GI_OK);
    json_decref(t);
    assert_int_equal(store_ticket_close(f->st, "t", a, &t), GI_CONFLICT);
    b = open_key(f->st, "rule:3:GI-000001", &existing);
    assert_false(existing);
    assert_true(b != a);
}

/* A ticket on an asset gpuinv holds is an event on the asset's
 * timeline; one on an unknown tag is still opened. */
static void test_ticket_event_on_asset(void **state)
{
    struct testdb_fixture *f = *state;
    struct store_asset_err err;
    struct store_page pg = {.limit = 100};
    json_t *in = json_pack("{s:s, s:s, s:s}", "tag", "GI-000001", "kind", "gpu", "serial", "S-1");
    json_t *a = NULL, *items = NULL, *ev;
    int64_t asset_id = 0, total = 0, t;
    bool existing;
    size_t i, seen = 0;

    assert_int_equal(store_asset_create(f->st, "t", in, &a, &err), GI_OK);
    json_decref(a);
    json_decref(in);
    assert_int_equal(store_asset_id(f->st, "GI-000001", &asset_id), GI_OK);
    t = open_key(f->st, "rule:3:GI-000001", &existing);
    assert_int_equal(store_asset_events(f->st, asset_id, &pg, &items, &total), GI_OK);
    json_array_foreach(items, i, ev) {
        const json_t *d = json_object_get(ev, "detail");
        if (strcmp(json_string_value(json_object_get(ev, "kind")), "ticket") != 0)
            continue;
        seen++;
        assert_int_equal(json_integer_value(json_object_get(d, "ticket_id")), t);
        assert_int_equal(json_integer_value(json_object_get(d, "rule")), 3);
        assert_string_equal(json_string_value(json_object_get(ev, "actor")), "rules");
    }
    assert_int_equal(seen, 1);
    json_decref(items);
    /* The same key again adds nothing. */
    open_key(f->st, "rule:3:GI-000001", &existing);
    assert_true(existing);
    assert_int_equal(store_asset_events(f->st, asset_id, &pg, &items, &total), GI_OK);
    assert_int_equal(json_array_size(items), seen + 1); /* created + ticket */
    json_decref(items);
}

/* Claims the due deliveries at `now` and returns how many. */
static size_t claim(struct store *st, int64_t now, int64_t *id)
{
    json_t *items = NULL;
    size_t n;
    assert_int_equal(store_delivery_claim(st, now, 100, 10, &items), GI_OK);
    n = json_array_size(items);
    if (n && id)
        *id = json_integer_value(json_object_get(json_array_get(items, 0), "id"));
    json_decref(items);
    return n;
}

static void test_schedule_until_dead(void **state)
{
    struct testdb_fixture *f = *state;
    int64_t hook = mk_hook(f->st, "down", "*"), id = 0, now = gi_now();
    json_t *d = NULL;
    char st[16];
    int i;

    assert_int_equal(store_webhook_test(f->st, "t", hook, &d), GI_OK);
    json_decref(d);
    for (i = 0; i <= store_delivery_backoff_n; i++) {
        struct store_delivery_outcome o = {
            .status = 500, .error = "the receiver answered 500", .response = "", .now = now};
        assert_int_equal(claim(f->st, now, &id), 1);
        /* Claimed: nobody else gets it until its lease ends. */
        assert_int_equal(claim(f->st, now, NULL), 0);
        o.id = id;
        assert_int_equal(store_delivery_done(f->st, &o, st), GI_OK);
        if (i < store_delivery_backoff_n) {
            assert_string_equal(st, "pending");
            assert_int_equal(claim(f->st, now + store_delivery_backoff[i] - 1, NULL), 0);
            now += store_delivery_backoff[i];
        } else {
            assert_string_equal(st, "dead");
        }
    }
    assert_int_equal(claim(f->st, now + 10 * 86400, NULL), 0);
    assert_int_equal(store_delivery_retry(f->st, "t", id, &d), GI_OK);
    assert_int_equal(json_integer_value(json_object_get(d, "attempts")), 0);
    json_decref(d);
    assert_int_equal(store_delivery_retry(f->st, "t", id, &d), GI_CONFLICT);
}

static void test_gone_disables(void **state)
{
    struct testdb_fixture *f = *state;
    int64_t hook = mk_hook(f->st, "gone", "*"), id = 0;
    struct store_delivery_outcome o = {.status = 410, .response = "", .now = gi_now()};
    json_t *d = NULL;
    char st[16];

    assert_int_equal(store_webhook_test(f->st, "t", hook, &d), GI_OK);
    json_decref(d);
    assert_int_equal(claim(f->st, gi_now(), &id), 1);
    o.id = id;
    assert_int_equal(store_delivery_done(f->st, &o, st), GI_OK);
    assert_string_equal(st, "failed");
    assert_int_equal(store_webhook_get(f->st, hook, &d), GI_OK);
    assert_true(json_is_false(json_object_get(d, "enabled")));
    assert_non_null(strstr(json_string_value(json_object_get(d, "disabled_reason")), "410"));
    json_decref(d);
    assert_int_equal(store_webhook_test(f->st, "t", hook, &d), GI_CONFLICT);
}

static void test_reply_fills_ticket_and_prune(void **state)
{
    struct testdb_fixture *f = *state;
    int64_t hook = mk_hook(f->st, "jira", "ticket.opened"), id = 0, deleted = -1;
    bool existing;
    int64_t t = open_key(f->st, "rule:9:GI-000002", &existing);
    struct store_delivery_outcome o = {.status = 201,
                                       .response = "{}",
                                       .now = gi_now(),
                                       .ext_system = "jira",
                                       .ext_key = "OPS-17",
                                       .ext_url = "https://x/browse/OPS-17"};
    json_t *d = NULL;
    char st[16];

    assert_int_equal(claim(f->st, gi_now(), &id), 1);
    o.id = id;
    assert_int_equal(store_delivery_done(f->st, &o, st), GI_OK);
    assert_string_equal(st, "delivered");
    assert_int_equal(store_ticket_get(f->st, t, &d), GI_OK);
    assert_string_equal(json_string_value(json_object_get(d, "external_key")), "OPS-17");
    assert_string_equal(json_string_value(json_object_get(d, "external_url")),
                        "https://x/browse/OPS-17");
    json_decref(d);
    assert_int_equal(store_delivery_prune(f->st, gi_now() - 86400, &deleted), GI_OK);
    assert_int_equal(deleted, 0);
    assert_int_equal(store_delivery_prune(f->st, gi_now() + 1, &deleted), GI_OK);
    assert_int_equal(deleted, 1);
    assert_int_equal(count_deliveries(f->st, hook), 0);
}

int main(void)
{
    const struct CMUnitTest tests[] = {
        cmocka_unit_test_setup_teardown(test_one_open_ticket_per_key, testdb_setup,
                                        testdb_teardown),
        cmocka_unit_test_setup_teardown(test_ticket_event_on_asset, testdb_setup, testdb_teardown),
        cmocka_unit_test_setup_teardown(test_schedule_until_dead, testdb_setup, testdb_teardown),
        cmocka_unit_test_setup_teardown(test_gone_disables, testdb_setup, testdb_teardown),
        cmocka_unit_test_setup_teardown(test_reply_fills_ticket_and_prune, testdb_setup,
                                        testdb_teardown),
    };
    return cmocka_run_group_tests(tests, NULL, NULL);
}
