/* Unit tests for matching discovered hosts to inventory servers
 * (src/store/links.c through store.h), each on a fresh database: the order
 * of the rules, normalization, ambiguity, manual links that win, and
 * re-matching when servers change; plus the drift model comparison. */
#include "unit.h"
#include "testdb.h"

#include "core/log.h"
#include "core/observation.h"
#include "core/util.h"
#include "store/db.h"
#include "store/links.h"
#include "store/store.h"

#include <string.h>
#include <unistd.h>

struct fixture {
    struct testdb db;
    struct store *st;
    int64_t dc, source;
    int batches;
};

static int setup(void **state)
{
    struct fixture *f = calloc(1, sizeof *f);
    struct store_dc dc = {"dc-1", "here", 2};
    json_t *out = NULL;

    if (f == NULL)
        return -1;
    gi_log_set_level(GI_LOG_WARN);
    if (test_store_open(&f->db, 2, &f->st) != 0) {
        free(f);
        return -1;
    }
    if (store_dc_create(f->st, "t", &dc, &out) != GI_OK ||
        store_source_ensure(f->st, "agents", "push", NULL, NULL, NULL, &f->source) != GI_OK) {
        json_decref(out);
        store_close(f->st);
        testdb_remove(&f->db);
        free(f);
        return -1;
    }
    f->dc = json_integer_value(json_object_get(out, "id"));
    json_decref(out);
    *state = f;
    return 0;
}

static int teardown(void **state)
{
    struct fixture *f = *state;

    store_close(f->st);
    testdb_remove(&f->db);
    free(f);
    return 0;
}

/* Creates a server; serial/hostname/machine_id may be NULL. */
static int64_t server(struct fixture *f, const char *name, const char *serial, const char *hostname,
                      const char *mid)
{
    json_t *attrs = json_object(), *out = NULL;
    struct store_resource r = {.datacenter_id = f->dc,
                               .kind = "server",
                               .name = name,
                               .gpu_model = "H100",
                               .gpu_count = 1,
                               .attrs = attrs};
    int64_t id;

    if (serial)
        json_object_set_new(attrs, "serial", json_string(serial));
    if (hostname)
        json_object_set_new(attrs, "hostname", json_string(hostname));
    if (mid)
        json_object_set_new(attrs, "machine_id", json_string(mid));
    assert_status(store_res_create(f->st, "t", &r, &out), GI_OK);
    id = json_integer_value(json_object_get(out, "id"));
    json_decref(out);
    json_decref(attrs);
    return id;
}

/* Reports a host with one GPU; returns the host's id. */
static int64_t report(struct fixture *f, const char *hostname, const char *serial, const char *mid)
{
    struct gi_batch b;
    struct gi_gpu_obs *g;
    struct store_ingest_result res;
    struct store_host_filter hf = {.linked = -1, .q = hostname};
    struct store_page pg = {.limit = 10};
    json_t *items = NULL;
    int64_t total = 0, id = 0;
    size_t i;
    json_t *h;

    memset(&b, 0, sizeof b);
    snprintf(b.batch_id, sizeof b.batch_id, "b%d", ++f->batches);
    gi_strlcpy(b.host.hostname, hostname, sizeof b.host.hostname);
    gi_strlcpy(b.host.serial, serial ? serial : "", sizeof b.host.serial);
    gi_strlcpy(b.host.machine_id, mid ? mid : "", sizeof b.host.machine_id);
    g = gi_obs_add_gpu(&b.set);
    assert_non_null(g);
    snprintf(g->uuid, sizeof g->uuid, "GPU-%08x-0000-4000-8000-000000000001",
             (unsigned)strlen(hostname) * 7919u + (unsigned)hostname[0]);
    gi_strlcpy(g->name, "NVIDIA H100 80GB HBM3", sizeof g->name);
    assert_status(store_ingest(f->st, f->source, &b, &res), GI_OK);
    gi_batch_free(&b);
    assert_status(store_host_list(f->st, &hf, &pg, &items, &total), GI_OK);
    json_array_foreach(items, i, h) {
        if (strcmp(json_string_value(json_object_get(h, "hostname")), hostname) == 0)
            id = json_integer_value(json_object_get(h, "id"));
    }
    json_decref(items);
    assert_true(id > 0);
    return id;
}

/* The host's linked server (0: none) and rule ("" for none). */
static int64_t link_of(struct fixture *f, int64_t host, char *rule, size_t len)
{
    json_t *h = NULL;
    const char *r;
    int64_t rid;

    assert_status(store_host_get(f->st, host, &h), GI_OK);
    rid = json_integer_value(json_object_get(h, "resource_id"));
    r = json_string_value(json_object_get(h, "rule"));
    gi_strlcpy(rule, r ? r : "", len);
    json_decref(h);
    return rid;
}

static void test_rule_order(void **state)
{
    struct fixture *f = *state;
    char rule[32];
    int64_t by_serial = server(f, "srv-serial", "SN-1", NULL, NULL);
    int64_t by_mid = server(f, "srv-mid", NULL, NULL, "feedc0de");
    int64_t by_full = server(f, "srv-full", NULL, "gpu-7.lab.example", NULL);
    int64_t by_short = server(f, "gpu-8", NULL, NULL, NULL);
    int64_t h;

    (void)by_full;
    /* Serial beats machine id and name: this host carries all three. */
    h = report(f, "gpu-7.lab.example", " sn-1 ", "FEEDC0DE");
    assert_int_equal(link_of(f, h, rule, sizeof rule), by_serial);
    assert_string_equal(rule, "serial");
    /* Machine id beats the name. */
    h = report(f, "GPU-8", NULL, "feedc0de");
    assert_int_equal(link_of(f, h, rule, sizeof rule), by_mid);
    assert_string_equal(rule, "machine_id");
    /* Full name (case-insensitive, trailing dot) beats the short name. */
    h = report(f, "Gpu-7.Lab.Example.", NULL, NULL);
    assert_int_equal(link_of(f, h, rule, sizeof rule), by_full);
    assert_string_equal(rule, "hostname");
    /* The short name matches a server named without its domain. */
    h = report(f, "gpu-8.other.example", NULL, NULL);
    assert_int_equal(link_of(f, h, rule, sizeof rule), by_short);
    assert_string_equal(rule, "hostname");
    /* A placeholder serial is no key: nothing links on it. */
    server(f, "srv-oem", "To Be Filled By O.E.M.", NULL, NULL);
    h = report(f, "lonely", "To Be Filled By O.E.M.", NULL);
    assert_int_equal(link_of(f, h, rule, sizeof rule), 0);
    assert_string_equal(rule, "");
}

static void test_ambiguous(void **state)
{
    struct fixture *f = *state;
    char rule[32];
    int64_t a = server(f, "dup-a", "SN-DUP", NULL, NULL);
    int64_t b = server(f, "dup-b", "SN-DUP", NULL, NULL);
    int64_t h = report(f, "dup-a", "SN-DUP", NULL);
    json_t *items = NULL, *counts = NULL;
    struct store_drift_filter df = {.kind = "ambiguous_match"};
    int64_t total = 0;
    json_t *patch = json_pack("{s:s}", "serial", "SN-B");
    struct store_resource r = {.datacenter_id = f->dc,
                               .kind = "server",
                               .name = "dup-b",
                               .gpu_model = "H100",
                               .gpu_count = 1,
                               .attrs = patch};
    json_t *out = NULL;

    /* Two servers share the serial: no guess, even though the name fits. */
    assert_int_equal(link_of(f, h, rule, sizeof rule), 0);
    assert_string_equal(rule, "ambiguous");
    assert_status(store_drift_list(f->st, &df, NULL, &items, &total, &counts), GI_OK);
    assert_int_equal(total, 1);
    json_decref(items);
    json_decref(counts);
    /* Correcting one server's serial resolves it. */
    assert_status(store_res_update(f->st, "t", b, 1, &r, &out), GI_OK);
    json_decref(out);
    json_decref(patch);
    assert_int_equal(link_of(f, h, rule, sizeof rule), a);
    assert_string_equal(rule, "serial");
}

static void test_manual_wins(void **state)
{
    struct fixture *f = *state;
    char rule[32];
    int64_t auto_srv = server(f, "node-1", NULL, NULL, NULL);
    int64_t other = server(f, "node-2", NULL, NULL, NULL);
    int64_t h = report(f, "node-1", NULL, NULL);
    json_t *out = NULL;

    assert_int_equal(link_of(f, h, rule, sizeof rule), auto_srv);
    assert_status(store_host_link_set(f->st, "admin", h, STORE_LINK_MANUAL, other, &out), GI_OK);
    assert_true(json_is_true(json_object_get(out, "manual")));
    json_decref(out);
    /* A new identity and a matching server do not move a manual link. */
    report(f, "node-1", "SN-NEW", "mid-new");
    server(f, "node-1b", "SN-NEW", NULL, NULL);
    assert_int_equal(link_of(f, h, rule, sizeof rule), other);
    assert_string_equal(rule, "manual");
    /* Manual "not linked" holds too. */
    assert_status(store_host_link_set(f->st, "admin", h, STORE_LINK_NONE, 0, &out), GI_OK);
    json_decref(out);
    report(f, "node-1", "SN-NEWER", NULL);
    assert_int_equal(link_of(f, h, rule, sizeof rule), 0);
    assert_string_equal(rule, "manual");
    /* Back to automatic: the strongest rule decides again. */
    assert_status(store_host_link_set(f->st, "admin", h, STORE_LINK_AUTO, 0, &out), GI_OK);
    json_decref(out);
    assert_int_equal(link_of(f, h, rule, sizeof rule), auto_srv);
    assert_string_equal(rule, "hostname");
    /* Only a server can be linked; an unknown host is not found. */
    assert_status(store_host_link_set(f->st, "admin", h, STORE_LINK_MANUAL, 424242, &out),
                  GI_INVALID);
    assert_status(store_host_link_set(f->st, "admin", 424242, STORE_LINK_NONE, 0, &out),
                  GI_NOT_FOUND);
}

static void test_server_changes(void **state)
{
    struct fixture *f = *state;
    char rule[32];
    int64_t h = report(f, "late-host", "SN-LATE", NULL);
    int64_t s;
    json_t *out = NULL;

    assert_int_equal(link_of(f, h, rule, sizeof rule), 0);
    /* A server created later picks the host up... */
    s = server(f, "whatever", "SN-LATE", NULL, NULL);
    assert_int_equal(link_of(f, h, rule, sizeof rule), s);
    assert_string_equal(rule, "serial");
    /* ...and deleting it lets the host go (a manual link included). */
    assert_status(store_host_link_set(f->st, "admin", h, STORE_LINK_MANUAL, s, &out), GI_OK);
    json_decref(out);
    assert_status(store_res_delete(f->st, "t", s, false, NULL), GI_OK);
    assert_int_equal(link_of(f, h, rule, sizeof rule), 0);
    assert_string_equal(rule, "");
    /* Re-matching after a refresh is idempotent. */
    assert_status(store_links_refresh(f->st), GI_OK);
    assert_int_equal(link_of(f, h, rule, sizeof rule), 0);
}

/* On PostgreSQL, two pushes whose hosts both need matching run side by
 * side: the second matches while the first's transaction is still open
 * (it used to wait for a key every matching took), and both links are
 * right once both commit. The second waits at most a second for any
 * lock, so a shared key makes the match fail instead of hanging. */
static void test_match_side_by_side(void **state)
{
    struct fixture *f = *state;
    int64_t a = report(f, "side-a", "SN-A1", NULL), b = report(f, "side-b", "SN-B1", NULL);
    int64_t srv_a = server(f, "srv-side-a", "SN-A2", NULL, NULL);
    int64_t srv_b = server(f, "srv-side-b", "SN-B2", NULL, NULL);
    int kinds[1] = {DB_LOCK_HOST};
    const char *na[1] = {"side-a"}, *nb[1] = {"side-b"};
    struct conn *c1, *c2;
    char rule[32];

    if (!testdb_on_pg())
        skip();
    c1 = db_conn_get(f->st);
    c2 = db_conn_get(f->st);
    assert_true(c1 != c2);
    /* Both hosts report a serial they did not have: each re-matches. */
    assert_status(db_tx_begin_keyed(c1, kinds, na, 1), GI_OK);
    assert_status(links_host_seen(c1, a, "side-a", NULL, "SN-A2"), GI_OK);
    assert_status(db_tx_begin_keyed(c2, kinds, nb, 1), GI_OK);
    assert_status(db_simple(c2, "SET LOCAL lock_timeout = '1s'"), GI_OK);
    assert_status(links_host_seen(c2, b, "side-b", NULL, "SN-B2"), GI_OK);
    assert_status(db_tx_end(c2, GI_OK), GI_OK);
    assert_status(db_tx_end(c1, GI_OK), GI_OK);
    db_conn_put(f->st, c2);
    db_conn_put(f->st, c1);
    assert_int_equal(link_of(f, a, rule, sizeof rule), srv_a);
    assert_string_equal(rule, "serial");
    assert_int_equal(link_of(f, b, rule, sizeof rule), srv_b);
    assert_string_equal(rule, "serial");
}

static void test_model_rule(void **state)
{
    (void)state;
    assert_true(store_model_matches("H100", "NVIDIA H100 80GB HBM3"));
    assert_true(store_model_matches("nvidia h100 80gb", "NVIDIA H100 80GB HBM3"));
    assert_true(store_model_matches("A100-SXM4-80GB", "NVIDIA A100-SXM4-80GB"));
    assert_true(store_model_matches("L40S", "NVIDIA L40S"));
    assert_false(store_model_matches("A100", "NVIDIA H100 80GB HBM3"));
    assert_false(store_model_matches("H100 NVL", "NVIDIA H100 80GB HBM3"));
    assert_false(store_model_matches("L40", "NVIDIA L40S"));
}

int main(void)
{
    const struct CMUnitTest tests[] = {
        cmocka_unit_test_setup_teardown(test_rule_order, setup, teardown),
        cmocka_unit_test_setup_teardown(test_ambiguous, setup, teardown),
        cmocka_unit_test_setup_teardown(test_manual_wins, setup, teardown),
        cmocka_unit_test_setup_teardown(test_server_changes, setup, teardown),
        cmocka_unit_test_setup_teardown(test_match_side_by_side, setup, teardown),
        cmocka_unit_test(test_model_rule),
    };
    return cmocka_run_group_tests(tests, NULL, NULL);
}
