/* Unit tests for the store (src/store/ through store.h), each on a fresh
 * database from testdb.h (a SQLite file, or a PostgreSQL database when run
 * as unit-pg/test_store): migrations, data centers, resources, allocation,
 * bulk allocation, import, audit, tokens and sessions. */
#include "unit.h"
#include "testdb.h"

#include "core/log.h"
#include "store/embedded.h"
#include "store/store.h"

#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

/* ---- helpers ---- */

static int64_t iget(const json_t *o, const char *key)
{
    const json_t *v = json_object_get(o, key);
    if (!json_is_integer(v))
        fail_msg("%s is not an integer", key);
    return json_integer_value(v);
}

static const char *sget(const json_t *o, const char *key)
{
    return json_string_value(json_object_get(o, key));
}

static int64_t make_dc(struct store *st, const char *name)
{
    struct store_dc in = {name, "Somewhere", 4};
    json_t *out = NULL;
    int64_t id;

    assert_status(store_dc_create(st, "tester", &in, &out), GI_OK);
    id = iget(out, "id");
    json_decref(out);
    return id;
}

/* A resource with no attributes; state NULL means available. */
static struct store_resource res(int64_t dc, const char *kind, const char *name, const char *state,
                                 const char *tenant, const char *model, int64_t gpus)
{
    struct store_resource r = {dc, kind, name, state, tenant, NULL, model, gpus, NULL, NULL};
    return r;
}

static int64_t make_res(struct store *st, const struct store_resource *r)
{
    json_t *out = NULL;
    int64_t id;

    assert_status(store_res_create(st, "tester", r, &out), GI_OK);
    id = iget(out, "id");
    json_decref(out);
    return id;
}

static int64_t audit_count(struct store *st, const char *entity, int64_t id)
{
    struct store_audit_filter af = {entity, id, NULL, {0}};
    struct store_page pg = {1000, 0, NULL, false};
    json_t *items = NULL;
    int64_t total = -1;

    assert_status(store_audit_list(st, &af, &pg, &items, &total), GI_OK);
    assert_int_equal((int64_t)json_array_size(items), total);
    json_decref(items);
    return total;
}

/* The newest audit row for an entity (caller decrefs). */
static json_t *audit_last(struct store *st, const char *entity, int64_t id)
{
    struct store_audit_filter af = {entity, id, NULL, {0}};
    struct store_page pg = {1, 0, NULL, false};
    json_t *items = NULL, *row;
    int64_t total;

    assert_status(store_audit_list(st, &af, &pg, &items, &total), GI_OK);
    assert_true(json_array_size(items) == 1);
    row = json_incref(json_array_get(items, 0));
    json_decref(items);
    return row;
}

static int64_t list_total(struct store *st, const struct store_res_filter *f)
{
    struct store_page pg = {1, 0, NULL, false};
    json_t *items = NULL;
    int64_t total = -1;

    assert_status(store_res_list(st, f, &pg, &items, &total), GI_OK);
    json_decref(items);
    return total;
}

/* ---- migrations ---- */

static void test_migrations_apply_once(void **state)
{
    struct testdb_fixture *f = *state;
    int64_t nmig = 0, maxv = 0, v = -1;

    for (const struct gi_embedded *m = gi_migrations; m->name; m++) {
        int64_t n = strtoll(m->name, NULL, 10);
        nmig++;
        if (n > maxv)
            maxv = n;
    }
    assert_true(nmig >= 1);
    assert_status(store_schema_version(f->st, &v), GI_OK);
    assert_int_equal(v, maxv);
    make_dc(f->st, "kept");

    /* Reopen twice: nothing is applied again and the data survives. */
    for (int round = 0; round < 2; round++) {
        json_t *items = NULL;
        int64_t total = 0;
        struct store_page pg = {10, 0, NULL, false};
        store_close(f->st);
        f->st = NULL;
        assert_status(store_open(f->db.locator, 1, &f->st), GI_OK);
        assert_status(store_schema_version(f->st, &v), GI_OK);
        assert_int_equal(v, maxv);
        assert_int_equal(testdb_scalar(&f->db, "SELECT COUNT(*) FROM schema_version"), nmig);
        assert_status(store_dc_list(f->st, NULL, &pg, &items, &total), GI_OK);
        assert_int_equal(total, 1);
        json_decref(items);
    }
}

static void test_open_bad_path(void **state)
{
    struct store *st = (struct store *)0x1;
    int rc = store_open("/nonexistent-dir/for/sure/x.db", 1, &st);

    assert_true(rc != GI_OK);
    assert_true(st == (struct store *)0x1); /* untouched */
    store_close(NULL);                      /* accepts NULL */
}

/* ---- data centers ---- */

static void test_dc_crud(void **state)
{
    struct testdb_fixture *f = *state;
    struct store_dc in = {"dc-east", "Virginia", 12};
    struct store_page pg = {100, 0, NULL, false};
    json_t *out = NULL, *items = NULL;
    int64_t id, id2, total, found;

    assert_status(store_dc_create(f->st, "alice", &in, &out), GI_OK);
    id = iget(out, "id");
    assert_true(id > 0);
    assert_string_equal(sget(out, "name"), "dc-east");
    assert_string_equal(sget(out, "location"), "Virginia");
    assert_int_equal(iget(out, "rows"), 12);
    assert_int_equal(iget(out, "servers"), 0);
    assert_int_equal(iget(out, "infiniband"), 0);
    assert_non_null(sget(out, "created_at"));
    assert_true(strchr(sget(out, "created_at"), 'T') != NULL); /* RFC 3339 */
    json_decref(out);

    /* A second with the same name conflicts; location and rows default. */
    assert_status(store_dc_create(f->st, "alice", &in, &out), GI_CONFLICT);
    assert_null(out);
    in = (struct store_dc){"dc-west", NULL, -1};
    assert_status(store_dc_create(f->st, "alice", &in, &out), GI_OK);
    id2 = iget(out, "id");
    assert_string_equal(sget(out, "location"), "");
    assert_int_equal(iget(out, "rows"), 0);
    json_decref(out);

    assert_status(store_dc_get(f->st, id, &out), GI_OK);
    assert_string_equal(sget(out, "name"), "dc-east");
    json_decref(out);
    assert_status(store_dc_get(f->st, 999, &out), GI_NOT_FOUND);

    assert_status(store_dc_id_by_name(f->st, "dc-west", &found), GI_OK);
    assert_int_equal(found, id2);
    assert_status(store_dc_id_by_name(f->st, "dc-north", &found), GI_NOT_FOUND);

    /* List, search and sort. */
    assert_status(store_dc_list(f->st, NULL, &pg, &items, &total), GI_OK);
    assert_int_equal(total, 2);
    assert_int_equal(iget(json_array_get(items, 0), "id"), id);
    json_decref(items);
    assert_status(store_dc_list(f->st, "WEST", &pg, &items, &total), GI_OK);
    assert_int_equal(total, 1); /* LIKE is case-insensitive for ASCII */
    assert_string_equal(sget(json_array_get(items, 0), "name"), "dc-west");
    json_decref(items);
    assert_status(store_dc_list(f->st, "virg", &pg, &items, &total), GI_OK);
    assert_int_equal(total, 1); /* location matches too */
    json_decref(items);
    assert_status(store_dc_list(f->st, "%", &pg, &items, &total), GI_OK);
    assert_int_equal(total, 0); /* wildcards are literal */
    json_decref(items);
    pg.sort = "name";
    pg.desc = true;
    assert_status(store_dc_list(f->st, NULL, &pg, &items, &total), GI_OK);
    assert_string_equal(sget(json_array_get(items, 0), "name"), "dc-west");
    json_decref(items);

    /* Partial update: NULL and negative rows leave fields unchanged. */
    in = (struct store_dc){NULL, "Ohio", -1};
    assert_status(store_dc_update(f->st, "bob", id, &in, &out), GI_OK);
    assert_string_equal(sget(out, "name"), "dc-east");
    assert_string_equal(sget(out, "location"), "Ohio");
    assert_int_equal(iget(out, "rows"), 12);
    json_decref(out);
    in = (struct store_dc){"dc-east-2", NULL, 0};
    assert_status(store_dc_update(f->st, "bob", id, &in, &out), GI_OK);
    assert_string_equal(sget(out, "name"), "dc-east-2");
    assert_string_equal(sget(out, "location"), "Ohio");
    assert_int_equal(iget(out, "rows"), 0);
    json_decref(out);

    /* Renaming onto another's name conflicts and changes nothing. */
    in = (struct store_dc){"dc-west", NULL, -1};
    assert_status(store_dc_update(f->st, "bob", id, &in, &out), GI_CONFLICT);
    assert_null(out);
    assert_status(store_dc_get(f->st, id, &out), GI_OK);
    assert_string_equal(sget(out, "name"), "dc-east-2");
    json_decref(out);
    assert_status(store_dc_update(f->st, "bob", 999, &in, &out), GI_NOT_FOUND);

    /* Audit: create, two updates; the failed writes left nothing. */
    assert_int_equal(audit_count(f->st, "datacenter", id), 3);
    json_t *row = audit_last(f->st, "datacenter", id);
    assert_string_equal(sget(row, "action"), "update");
    assert_string_equal(sget(row, "actor"), "bob");
    assert_string_equal(sget(json_object_get(row, "before"), "name"), "dc-east");
    assert_string_equal(sget(json_object_get(row, "after"), "name"), "dc-east-2");
    json_decref(row);
}

static void test_dc_delete(void **state)
{
    struct testdb_fixture *f = *state;
    int64_t dc = make_dc(f->st, "full"), empty = make_dc(f->st, "empty"), rid, before;
    struct store_resource r1 = res(dc, "server", "s1", NULL, NULL, "H100", 8);
    struct store_resource r2 = res(dc, "vm", "v1", "in_use", "acme", NULL, 0);
    json_t *counts = NULL, *out = NULL;

    rid = make_res(f->st, &r1);
    make_res(f->st, &r2);

    before = audit_count(f->st, "datacenter", dc);
    assert_status(store_dc_delete(f->st, "carol", dc, false, &counts), GI_CONFLICT);
    assert_int_equal(iget(counts, "servers"), 1);
    assert_int_equal(iget(counts, "vms"), 1);
    assert_int_equal(iget(counts, "storages"), 0);
    json_decref(counts);
    assert_status(store_dc_get(f->st, dc, &out), GI_OK);
    json_decref(out);
    assert_int_equal(audit_count(f->st, "datacenter", dc), before);

    assert_status(store_dc_delete(f->st, "carol", dc, false, NULL), GI_CONFLICT);
    assert_status(store_dc_delete(f->st, "carol", dc, true, &counts), GI_OK);
    assert_int_equal(iget(counts, "servers"), 1);
    json_decref(counts);
    assert_status(store_dc_get(f->st, dc, &out), GI_NOT_FOUND);
    assert_status(store_res_get(f->st, rid, &out), GI_NOT_FOUND); /* cascaded */

    json_t *row = audit_last(f->st, "datacenter", dc);
    assert_string_equal(sget(row, "action"), "delete");
    assert_string_equal(sget(row, "actor"), "carol");
    assert_int_equal(
        iget(json_object_get(json_object_get(row, "before"), "deleted_resources"), "servers"), 1);
    assert_true(json_is_null(json_object_get(row, "after")));
    json_decref(row);

    assert_status(store_dc_delete(f->st, "carol", empty, false, NULL), GI_OK);
    assert_status(store_dc_delete(f->st, "carol", empty, false, NULL), GI_NOT_FOUND);
}

static void test_dc_overview(void **state)
{
    struct testdb_fixture *f = *state;
    int64_t dc = make_dc(f->st, "ov"), other = make_dc(f->st, "other");
    struct store_resource rows[] = {
        res(dc, "server", "a", NULL, NULL, "H100", 8),
        res(dc, "server", "b", "in_use", "acme", "H100", 4),
        res(dc, "server", "c", "reserved", "acme", "A100", 2),
        res(dc, "server", "d", "maintenance", NULL, "A100", 1),
        res(dc, "server", "e", "retired", NULL, "V100", 16),
        res(dc, "server", "f", NULL, NULL, NULL, 0),
        res(dc, "vm", "v", "in_use", "acme", "H100", 2), /* a VM's GPUs are its host's */
        res(dc, "storage", "st", NULL, NULL, NULL, 0),
        res(dc, "infiniband", "ib", NULL, NULL, NULL, 0),
        res(other, "server", "x", NULL, NULL, "H100", 64),
    };
    json_t *out = NULL, *disc = NULL, *gpus, *counts;

    for (size_t i = 0; i < sizeof rows / sizeof *rows; i++)
        make_res(f->st, &rows[i]);
    assert_status(store_dc_overview(f->st, dc, 0, &out, &disc), GI_OK);
    /* No host is discovered in it. */
    assert_int_equal(iget(disc, "total"), 0);
    assert_int_equal(iget(disc, "servers_seen"), 0);
    json_decref(disc);
    assert_int_equal(iget(out, "datacenter_id"), dc);
    assert_string_equal(sget(out, "name"), "ov");
    assert_string_equal(sget(out, "location"), "Somewhere");
    counts = json_object_get(out, "counts");
    assert_int_equal(iget(counts, "servers"), 6);
    assert_int_equal(iget(counts, "vms"), 1);
    assert_int_equal(iget(counts, "storages"), 1);
    assert_int_equal(iget(counts, "switches"), 0);
    assert_int_equal(iget(counts, "infiniband"), 1);
    gpus = json_object_get(out, "gpus");
    assert_int_equal(iget(gpus, "total"), 15); /* retired ones do not count */
    assert_int_equal(iget(gpus, "allocated"), 6);
    assert_int_equal(iget(gpus, "available"), 8);
    assert_int_equal(iget(gpus, "unavailable"), 1);
    json_decref(out);

    /* The list shows the same per-kind counts. */
    assert_status(store_dc_get(f->st, dc, &out), GI_OK);
    assert_int_equal(iget(out, "servers"), 6);
    assert_int_equal(iget(out, "vms"), 1);
    json_decref(out);

    assert_status(store_dc_overview(f->st, 999, 0, &out, &disc), GI_NOT_FOUND);
    assert_null(out);
    assert_null(disc);
}

/* ---- resources ---- */

static void test_res_create_get(void **state)
{
    struct testdb_fixture *f = *state;
    int64_t dc = make_dc(f->st, "r");
    json_t *attrs = json_pack("{s:s, s:i}", "hostname", "n1", "position", 7);
    json_t *md = json_pack("{s:s}", "owner", "infra");
    struct store_resource r = {dc,    "server", "node-1", "in_use", "acme",
                               "llm", "H100",   8,        attrs,    md};
    json_t *out = NULL;
    int64_t id;

    assert_status(store_res_create(f->st, "dave", &r, &out), GI_OK);
    id = iget(out, "id");
    assert_int_equal(iget(out, "datacenter_id"), dc);
    assert_string_equal(sget(out, "datacenter"), "r");
    assert_string_equal(sget(out, "kind"), "server");
    assert_string_equal(sget(out, "name"), "node-1");
    assert_string_equal(sget(out, "state"), "in_use");
    assert_string_equal(sget(out, "tenant"), "acme");
    assert_string_equal(sget(out, "project"), "llm");
    assert_string_equal(sget(out, "gpu_model"), "H100");
    assert_int_equal(iget(out, "gpu_count"), 8);
    assert_int_equal(iget(out, "version"), 1);
    /* Attributes are merged into the record; metadata stays an object. */
    assert_string_equal(sget(out, "hostname"), "n1");
    assert_int_equal(iget(out, "position"), 7);
    assert_null(json_object_get(out, "attrs"));
    assert_string_equal(sget(json_object_get(out, "metadata"), "owner"), "infra");
    json_decref(out);

    assert_status(store_res_get(f->st, id, &out), GI_OK);
    assert_string_equal(sget(out, "hostname"), "n1");
    json_decref(out);
    assert_status(store_res_get(f->st, id + 100, &out), GI_NOT_FOUND);

    /* Created in use: its allocation interval starts now. */
    assert_status(store_res_allocations(f->st, id, &out), GI_OK);
    assert_int_equal(json_array_size(out), 1);
    assert_string_equal(sget(json_array_get(out, 0), "tenant"), "acme");
    assert_true(json_is_null(json_object_get(json_array_get(out, 0), "ended_at")));
    json_decref(out);

    char kind[16];
    int64_t kdc = 0;
    assert_status(store_res_kind(f->st, id, kind, sizeof kind, &kdc), GI_OK);
    assert_string_equal(kind, "server");
    assert_int_equal(kdc, dc);
    assert_status(store_res_kind(f->st, id + 100, kind, sizeof kind, &kdc), GI_NOT_FOUND);

    /* Unique per data center and kind; another kind may share the name. */
    assert_status(store_res_create(f->st, "dave", &r, &out), GI_CONFLICT);
    assert_null(out);
    r.kind = "vm";
    assert_status(store_res_create(f->st, "dave", &r, &out), GI_OK);
    json_decref(out);
    /* A data center that does not exist. */
    r.datacenter_id = 999;
    r.name = "orphan";
    int rc = store_res_create(f->st, "dave", &r, &out);
    assert_status(rc, GI_NOT_FOUND);
    assert_null(out);

    assert_int_equal(audit_count(f->st, "resource", id), 1);
    json_t *row = audit_last(f->st, "resource", id);
    assert_string_equal(sget(row, "action"), "create");
    assert_string_equal(sget(row, "actor"), "dave");
    assert_true(json_is_null(json_object_get(row, "before")));
    assert_string_equal(sget(json_object_get(row, "after"), "name"), "node-1");
    json_decref(row);
    json_decref(attrs);
    json_decref(md);
}

static void names_are(json_t *items, const char *const *want, size_t n)
{
    if (json_array_size(items) != n)
        fail_msg("%zu items, want %zu", json_array_size(items), n);
    for (size_t i = 0; i < n; i++)
        if (strcmp(sget(json_array_get(items, i), "name"), want[i]) != 0)
            fail_msg("item %zu is %s, want %s", i, sget(json_array_get(items, i), "name"), want[i]);
}

static void test_res_list(void **state)
{
    struct testdb_fixture *f = *state;
    int64_t d1 = make_dc(f->st, "d1"), d2 = make_dc(f->st, "d2");
    json_t *attrs = json_pack("{s:s}", "hostname", "special-host");
    struct store_resource rows[] = {
        res(d1, "server", "charlie", NULL, NULL, "H100", 8),
        res(d1, "server", "alpha", "in_use", "acme", "H100", 4),
        res(d1, "vm", "bravo", "in_use", "beta", NULL, 0),
        res(d2, "server", "delta", "reserved", "acme", "A100", 2),
        res(d2, "storage", "echo_1%", NULL, NULL, NULL, 0),
        res(d2, "server", "foxtrot", "maintenance", NULL, "A100", 16),
    };
    struct store_res_filter fl;
    struct store_page pg = {100, 0, NULL, false};
    json_t *items = NULL;
    int64_t total;

    rows[0].attrs = attrs;
    for (size_t i = 0; i < sizeof rows / sizeof *rows; i++)
        make_res(f->st, &rows[i]);

    memset(&fl, 0, sizeof fl);
    assert_status(store_res_list(f->st, &fl, &pg, &items, &total), GI_OK);
    assert_int_equal(total, 6);
    names_are(items,
              (const char *const[]){"charlie", "alpha", "bravo", "delta", "echo_1%", "foxtrot"},
              6); /* insertion order */
    json_decref(items);

    /* Each filter alone, and in combination (every statement variant). */
    fl = (struct store_res_filter){d1, NULL, NULL, NULL, NULL, NULL, {0}};
    assert_int_equal(list_total(f->st, &fl), 3);
    fl = (struct store_res_filter){0, "server", NULL, NULL, NULL, NULL, {0}};
    assert_int_equal(list_total(f->st, &fl), 4);
    fl = (struct store_res_filter){d2, "server", NULL, NULL, NULL, NULL, {0}};
    assert_int_equal(list_total(f->st, &fl), 2);
    fl = (struct store_res_filter){0, NULL, "in_use", NULL, NULL, NULL, {0}};
    assert_int_equal(list_total(f->st, &fl), 2);
    fl = (struct store_res_filter){0, NULL, NULL, "acme", NULL, NULL, {0}};
    assert_int_equal(list_total(f->st, &fl), 2);
    fl = (struct store_res_filter){d1, "server", "in_use", "acme", NULL, NULL, {0}};
    assert_int_equal(list_total(f->st, &fl), 1);
    fl = (struct store_res_filter){0, NULL, NULL, NULL, "none", NULL, {0}};
    assert_int_equal(list_total(f->st, &fl), 0);
    fl = (struct store_res_filter){999, NULL, NULL, NULL, NULL, NULL, {0}};
    assert_int_equal(list_total(f->st, &fl), 0);
    fl = (struct store_res_filter){0, "switch", NULL, NULL, NULL, NULL, {0}};
    assert_int_equal(list_total(f->st, &fl), 0);

    /* Text search: name, attributes, tenant; wildcards match literally. */
    fl = (struct store_res_filter){0, NULL, NULL, NULL, NULL, "LPH", {0}};
    assert_int_equal(list_total(f->st, &fl), 1);
    fl = (struct store_res_filter){0, NULL, NULL, NULL, NULL, "special-host", {0}};
    assert_int_equal(list_total(f->st, &fl), 1);
    fl = (struct store_res_filter){0, NULL, NULL, NULL, NULL, "beta", {0}};
    assert_int_equal(list_total(f->st, &fl), 1);
    fl = (struct store_res_filter){0, NULL, NULL, NULL, NULL, "1%", {0}};
    assert_int_equal(list_total(f->st, &fl), 1);
    fl = (struct store_res_filter){0, NULL, NULL, NULL, NULL, "_", {0}};
    assert_int_equal(list_total(f->st, &fl), 1);
    fl = (struct store_res_filter){0, NULL, NULL, NULL, NULL, "%", {0}};
    assert_int_equal(list_total(f->st, &fl), 1);
    fl = (struct store_res_filter){0, NULL, NULL, NULL, NULL, "", {0}};
    assert_int_equal(list_total(f->st, &fl), 6); /* empty: no filter */

    /* Sorting. */
    memset(&fl, 0, sizeof fl);
    pg = (struct store_page){100, 0, "name", false};
    assert_status(store_res_list(f->st, &fl, &pg, &items, &total), GI_OK);
    names_are(items,
              (const char *const[]){"alpha", "bravo", "charlie", "delta", "echo_1%", "foxtrot"}, 6);
    json_decref(items);
    pg.desc = true;
    assert_status(store_res_list(f->st, &fl, &pg, &items, &total), GI_OK);
    names_are(items,
              (const char *const[]){"foxtrot", "echo_1%", "delta", "charlie", "bravo", "alpha"}, 6);
    json_decref(items);
    pg = (struct store_page){100, 0, "gpu_count", true};
    fl.kind = "server";
    assert_status(store_res_list(f->st, &fl, &pg, &items, &total), GI_OK);
    names_are(items, (const char *const[]){"foxtrot", "charlie", "alpha", "delta"}, 4);
    json_decref(items);
    pg = (struct store_page){100, 0, "datacenter", false};
    fl.kind = NULL;
    fl.datacenter_id = d2;
    assert_status(store_res_list(f->st, &fl, &pg, &items, &total), GI_OK);
    names_are(items, (const char *const[]){"delta", "echo_1%", "foxtrot"}, 3); /* ties by id */
    json_decref(items);

    /* Paging: total counts every match whatever the page. */
    memset(&fl, 0, sizeof fl);
    pg = (struct store_page){2, 0, "name", false};
    assert_status(store_res_list(f->st, &fl, &pg, &items, &total), GI_OK);
    assert_int_equal(total, 6);
    names_are(items, (const char *const[]){"alpha", "bravo"}, 2);
    json_decref(items);
    pg.offset = 4;
    assert_status(store_res_list(f->st, &fl, &pg, &items, &total), GI_OK);
    assert_int_equal(total, 6);
    names_are(items, (const char *const[]){"echo_1%", "foxtrot"}, 2);
    json_decref(items);
    pg.offset = 6;
    assert_status(store_res_list(f->st, &fl, &pg, &items, &total), GI_OK);
    assert_int_equal(total, 6);
    names_are(items, NULL, 0);
    json_decref(items);
    json_decref(attrs);
}

static void test_res_update_version(void **state)
{
    struct testdb_fixture *f = *state;
    int64_t dc = make_dc(f->st, "u");
    struct store_resource r = res(dc, "server", "s", NULL, NULL, "H100", 8);
    struct store_resource other = res(dc, "server", "taken", NULL, NULL, NULL, 0);
    json_t *out = NULL, *hist = NULL;
    int64_t id = make_res(f->st, &r);

    make_res(f->st, &other);
    r.gpu_count = 4;
    assert_status(store_res_update(f->st, "erin", id, 1, &r, &out), GI_OK);
    assert_int_equal(iget(out, "version"), 2);
    assert_int_equal(iget(out, "gpu_count"), 4);
    json_decref(out);

    /* A writer still holding version 1 loses, and changes nothing. */
    r.gpu_count = 2;
    assert_status(store_res_update(f->st, "erin", id, 1, &r, &out), GI_CONFLICT);
    assert_null(out);
    assert_status(store_res_get(f->st, id, &out), GI_OK);
    assert_int_equal(iget(out, "gpu_count"), 4);
    assert_int_equal(iget(out, "version"), 2);
    json_decref(out);
    assert_status(store_res_update(f->st, "erin", id, 3, &r, &out), GI_CONFLICT);
    assert_status(store_res_update(f->st, "erin", id + 100, 1, &r, &out), GI_NOT_FOUND);

    /* Renaming onto a sibling's name conflicts too. */
    r.name = "taken";
    assert_status(store_res_update(f->st, "erin", id, 2, &r, &out), GI_CONFLICT);
    assert_null(out);

    /* Moving into and out of a held state tracks allocation intervals. */
    r = res(dc, "server", "s", "reserved", "acme", "H100", 4);
    assert_status(store_res_update(f->st, "erin", id, 2, &r, &out), GI_OK);
    json_decref(out);
    r = res(dc, "server", "s", "in_use", "acme", "H100", 4);
    assert_status(store_res_update(f->st, "erin", id, 3, &r, &out), GI_OK);
    json_decref(out);
    assert_status(store_res_allocations(f->st, id, &hist), GI_OK);
    assert_int_equal(json_array_size(hist), 1); /* reserved -> in_use: still held */
    json_decref(hist);
    r = res(dc, "server", "s", "maintenance", NULL, "H100", 4);
    assert_status(store_res_update(f->st, "erin", id, 4, &r, &out), GI_OK);
    assert_int_equal(iget(out, "version"), 5);
    assert_true(json_is_null(json_object_get(out, "tenant")));
    json_decref(out);
    assert_status(store_res_allocations(f->st, id, &hist), GI_OK);
    assert_int_equal(json_array_size(hist), 1);
    assert_false(json_is_null(json_object_get(json_array_get(hist, 0), "ended_at")));
    json_decref(hist);

    /* A state left unset means available, as on create. */
    r = res(dc, "server", "s", NULL, NULL, "H100", 4);
    assert_status(store_res_update(f->st, "erin", id, 5, &r, &out), GI_OK);
    assert_string_equal(sget(out, "state"), "available");
    json_decref(out);

    assert_int_equal(audit_count(f->st, "resource", id), 6); /* create + 5 updates */
    json_t *row = audit_last(f->st, "resource", id);
    assert_string_equal(sget(row, "action"), "update");
    assert_int_equal(iget(json_object_get(row, "before"), "version"), 5);
    assert_int_equal(iget(json_object_get(row, "after"), "version"), 6);
    json_decref(row);

    /* A held resource is deleted only when forced; the refusal hands back
     * the record (its tenant) and changes nothing. */
    r = res(dc, "server", "s", "in_use", "acme", "H100", 4);
    assert_status(store_res_update(f->st, "erin", id, 6, &r, &out), GI_OK);
    json_decref(out);
    json_t *held = NULL;
    assert_status(store_res_delete(f->st, "erin", id, false, &held), GI_CONFLICT);
    assert_non_null(held);
    assert_string_equal(sget(held, "tenant"), "acme");
    json_decref(held);
    assert_status(store_res_get(f->st, id, &out), GI_OK);
    json_decref(out);
    assert_status(store_res_delete(f->st, "erin", id, true, &held), GI_OK);
    assert_null(held);
    assert_status(store_res_get(f->st, id, &out), GI_NOT_FOUND);
    assert_status(store_res_delete(f->st, "erin", id, false, NULL), GI_NOT_FOUND);
    row = audit_last(f->st, "resource", id);
    assert_string_equal(sget(row, "action"), "delete");
    assert_string_equal(sget(json_object_get(row, "before"), "name"), "s");
    json_decref(row);
}

static void test_allocate_release(void **state)
{
    struct testdb_fixture *f = *state;
    int64_t dc = make_dc(f->st, "a");
    struct store_resource r = res(dc, "server", "s", NULL, NULL, "H100", 8);
    struct store_resource m = res(dc, "server", "m", "maintenance", NULL, "H100", 8);
    json_t *out = NULL, *hist = NULL;
    int64_t id = make_res(f->st, &r), mid = make_res(f->st, &m);

    assert_status(store_res_release(f->st, "fay", id, &out), GI_CONFLICT); /* not held */
    assert_null(out);
    assert_status(store_res_allocate(f->st, "fay", id, "acme", "llm", &out), GI_OK);
    assert_string_equal(sget(out, "state"), "in_use");
    assert_string_equal(sget(out, "tenant"), "acme");
    assert_string_equal(sget(out, "project"), "llm");
    assert_int_equal(iget(out, "version"), 2);
    json_decref(out);

    assert_status(store_res_allocate(f->st, "gus", id, "other", NULL, &out), GI_CONFLICT);
    assert_null(out);
    assert_status(store_res_allocate(f->st, "gus", mid, "other", NULL, &out), GI_CONFLICT);
    assert_status(store_res_allocate(f->st, "gus", id + 100, "x", NULL, &out), GI_NOT_FOUND);
    assert_status(store_res_get(f->st, id, &out), GI_OK);
    assert_string_equal(sget(out, "tenant"), "acme"); /* the loser changed nothing */
    json_decref(out);

    assert_status(store_res_release(f->st, "fay", id, &out), GI_OK);
    assert_string_equal(sget(out, "state"), "available");
    assert_true(json_is_null(json_object_get(out, "tenant")));
    assert_true(json_is_null(json_object_get(out, "project")));
    json_decref(out);
    assert_status(store_res_release(f->st, "fay", id, &out), GI_CONFLICT);
    assert_status(store_res_release(f->st, "fay", id + 100, &out), GI_NOT_FOUND);

    assert_status(store_res_allocate(f->st, "fay", id, "beta", NULL, &out), GI_OK);
    json_decref(out);
    assert_status(store_res_allocations(f->st, id, &hist), GI_OK);
    assert_int_equal(json_array_size(hist), 2);
    /* Newest first: the open interval, then the closed one. */
    assert_string_equal(sget(json_array_get(hist, 0), "tenant"), "beta");
    assert_true(json_is_null(json_object_get(json_array_get(hist, 0), "ended_at")));
    assert_string_equal(sget(json_array_get(hist, 1), "tenant"), "acme");
    assert_string_equal(sget(json_array_get(hist, 1), "project"), "llm");
    assert_string_equal(sget(json_array_get(hist, 1), "actor"), "fay");
    assert_non_null(sget(json_array_get(hist, 1), "started_at"));
    assert_non_null(sget(json_array_get(hist, 1), "ended_at"));
    json_decref(hist);
    assert_status(store_res_allocations(f->st, mid, &hist), GI_OK);
    assert_int_equal(json_array_size(hist), 0);
    json_decref(hist);

    /* create, allocate, release, allocate. */
    assert_int_equal(audit_count(f->st, "resource", id), 4);
    json_t *row = audit_last(f->st, "resource", id);
    assert_string_equal(sget(row, "action"), "allocate");
    assert_string_equal(sget(json_object_get(row, "before"), "state"), "available");
    assert_string_equal(sget(json_object_get(row, "after"), "state"), "in_use");
    json_decref(row);
}

static void test_alloc_bulk(void **state)
{
    struct testdb_fixture *f = *state;
    int64_t dc = make_dc(f->st, "b"), other = make_dc(f->st, "b2");
    struct store_resource rows[] = {
        res(dc, "server", "h8a", NULL, NULL, "H100", 8),
        res(dc, "server", "h8b", NULL, NULL, "H100", 8),
        res(dc, "server", "h4", NULL, NULL, "H100", 4),
        res(dc, "server", "a8", NULL, NULL, "A100", 8),
        res(dc, "server", "busy", "in_use", "x", "H100", 8),
        res(dc, "vm", "vm8", NULL, NULL, "H100", 8),
        res(other, "server", "far", NULL, NULL, "H100", 8),
    };
    struct store_alloc_req req = {dc, "server", 3, 8, "H100", "acme", "train"};
    struct store_res_filter inuse = {0, NULL, "in_use", NULL, NULL, NULL, {0}};
    json_t *items = (json_t *)0x1;
    int64_t avail = -1, before;

    for (size_t i = 0; i < sizeof rows / sizeof *rows; i++)
        make_res(f->st, &rows[i]);
    before = audit_count(f->st, "resource", 0);

    /* Three wanted, two match: none are taken. */
    assert_status(store_alloc_bulk(f->st, "hal", &req, &items, &avail), GI_CONFLICT);
    assert_null(items);
    assert_int_equal(avail, 2);
    assert_int_equal(list_total(f->st, &inuse), 1);
    assert_int_equal(audit_count(f->st, "resource", 0), before);

    /* Any model with at least 8 GPUs: three match. */
    req.gpu_model = NULL;
    assert_status(store_alloc_bulk(f->st, "hal", &req, &items, &avail), GI_OK);
    assert_int_equal(avail, 3);
    assert_int_equal(json_array_size(items), 3);
    for (size_t i = 0; i < 3; i++) {
        json_t *it = json_array_get(items, i);
        assert_string_equal(sget(it, "state"), "in_use");
        assert_string_equal(sget(it, "tenant"), "acme");
        assert_string_equal(sget(it, "project"), "train");
        assert_int_equal(iget(it, "datacenter_id"), dc);
        assert_int_equal(iget(it, "gpu_count"), 8);
    }
    json_decref(items);
    assert_int_equal(list_total(f->st, &inuse), 4);
    assert_int_equal(audit_count(f->st, "resource", 0), before + 3);

    /* Smallest fit first: h4 goes before anything larger. */
    req = (struct store_alloc_req){dc, "server", 1, 1, NULL, "beta", NULL};
    assert_status(store_alloc_bulk(f->st, "hal", &req, &items, &avail), GI_OK);
    assert_string_equal(sget(json_array_get(items, 0), "name"), "h4");
    json_decref(items);

    /* Nothing left in this data center; the VM is another kind. */
    assert_status(store_alloc_bulk(f->st, "hal", &req, &items, &avail), GI_CONFLICT);
    assert_int_equal(avail, 0);
    req.kind = "vm";
    assert_status(store_alloc_bulk(f->st, "hal", &req, &items, &avail), GI_OK);
    assert_string_equal(sget(json_array_get(items, 0), "name"), "vm8");
    json_decref(items);
}

static void test_import_all_or_none(void **state)
{
    struct testdb_fixture *f = *state;
    int64_t dc = make_dc(f->st, "imp");
    struct store_resource existing = res(dc, "server", "exists", NULL, NULL, NULL, 0);
    struct store_resource rows[4];
    struct store_res_filter all = {0, NULL, NULL, NULL, NULL, NULL, {0}};
    int bad[4];
    int64_t audits;

    make_res(f->st, &existing);
    audits = audit_count(f->st, NULL, 0);

    /* A duplicate inside the batch. */
    rows[0] = res(dc, "server", "n1", "in_use", "acme", "H100", 8);
    rows[1] = res(dc, "server", "n2", NULL, NULL, "H100", 8);
    rows[2] = res(dc, "server", "n1", NULL, NULL, NULL, 0);
    rows[3] = res(dc, "server", "n4", NULL, NULL, NULL, 0);
    assert_status(store_res_import(f->st, "ivy", rows, 4, false, bad), GI_CONFLICT);
    assert_int_equal(bad[2], GI_CONFLICT);
    assert_int_equal(bad[3], GI_OK);
    assert_int_equal(list_total(f->st, &all), 1);
    assert_int_equal(audit_count(f->st, NULL, 0), audits);

    /* Clashes with a stored row: every one is found, as a dry run finds them. */
    rows[2] = res(dc, "server", "exists", NULL, NULL, NULL, 0);
    rows[3] = res(dc, "server", "exists", NULL, NULL, NULL, 0);
    for (int dry = 0; dry < 2; dry++) {
        assert_status(store_res_import(f->st, "ivy", rows, 4, dry, bad), GI_CONFLICT);
        assert_int_equal(bad[0], GI_OK);
        assert_int_equal(bad[2], GI_CONFLICT);
        assert_int_equal(bad[3], GI_CONFLICT);
        assert_int_equal(list_total(f->st, &all), 1);
    }

    /* A data center that does not exist. */
    rows[2] = res(dc, "server", "n3", NULL, NULL, NULL, 0);
    rows[3] = res(dc + 100, "server", "n4", NULL, NULL, NULL, 0);
    assert_status(store_res_import(f->st, "ivy", rows, 4, false, bad), GI_NOT_FOUND);
    assert_int_equal(bad[3], GI_NOT_FOUND);
    assert_int_equal(list_total(f->st, &all), 1);
    assert_int_equal(audit_count(f->st, NULL, 0), audits);

    /* Fixed: all four land, each audited, the held one with an interval. */
    rows[3] = res(dc, "server", "n4", NULL, NULL, NULL, 0);
    /* A clean dry run writes nothing, not even audit rows. */
    assert_status(store_res_import(f->st, "ivy", rows, 4, true, bad), GI_OK);
    assert_int_equal(list_total(f->st, &all), 1);
    assert_int_equal(audit_count(f->st, NULL, 0), audits);
    assert_status(store_res_import(f->st, "ivy", rows, 4, false, bad), GI_OK);
    assert_int_equal(list_total(f->st, &all), 5);
    assert_int_equal(audit_count(f->st, NULL, 0), audits + 4);
    struct store_audit_filter af = {"resource", 0, "ivy", {0}};
    struct store_page pg = {100, 0, NULL, false};
    json_t *items = NULL;
    int64_t total = 0;
    assert_status(store_audit_list(f->st, &af, &pg, &items, &total), GI_OK);
    assert_int_equal(total, 4);
    json_decref(items);
    struct store_res_filter held = {0, NULL, "in_use", "acme", NULL, NULL, {0}};
    pg.limit = 1;
    assert_status(store_res_list(f->st, &held, &pg, &items, &total), GI_OK);
    assert_int_equal(total, 1);
    json_t *hist = NULL;
    assert_status(store_res_allocations(f->st, iget(json_array_get(items, 0), "id"), &hist), GI_OK);
    assert_int_equal(json_array_size(hist), 1);
    json_decref(hist);
    json_decref(items);

    /* An empty import is a no-op. */
    assert_status(store_res_import(f->st, "ivy", rows, 0, false, bad), GI_OK);
}

static void test_audit_list(void **state)
{
    struct testdb_fixture *f = *state;
    int64_t dc = make_dc(f->st, "aud"), total = 0;
    struct store_resource r = res(dc, "switch", "sw", NULL, NULL, NULL, 0);
    struct store_audit_filter af = {NULL, 0, NULL, {0}};
    struct store_page pg = {2, 0, NULL, false};
    json_t *items = NULL, *out = NULL;
    int64_t rid = make_res(f->st, &r), tid = 0;

    assert_status(store_res_allocate(f->st, "kim", rid, "t", NULL, &out), GI_OK);
    json_decref(out);
    assert_status(store_token_create(f->st, "kim", "ci", GI_ROLE_EDITOR, "h-audit", &tid), GI_OK);

    /* Newest first, paged, total over every row. */
    assert_status(store_audit_list(f->st, &af, &pg, &items, &total), GI_OK);
    assert_int_equal(total, 4);
    assert_int_equal(json_array_size(items), 2);
    assert_string_equal(sget(json_array_get(items, 0), "entity"), "token");
    assert_int_equal(iget(json_array_get(items, 0), "entity_id"), tid);
    assert_string_equal(sget(json_array_get(items, 1), "action"), "allocate");
    assert_true(iget(json_array_get(items, 0), "id") > iget(json_array_get(items, 1), "id"));
    assert_non_null(sget(json_array_get(items, 0), "occurred_at"));
    json_decref(items);

    af.actor = "kim";
    pg.limit = 100;
    assert_status(store_audit_list(f->st, &af, &pg, &items, &total), GI_OK);
    assert_int_equal(total, 2);
    json_decref(items);
    af = (struct store_audit_filter){"resource", rid, NULL, {0}};
    assert_status(store_audit_list(f->st, &af, &pg, &items, &total), GI_OK);
    assert_int_equal(total, 2);
    json_decref(items);
    af = (struct store_audit_filter){"datacenter", 0, "nobody", {0}};
    assert_status(store_audit_list(f->st, &af, &pg, &items, &total), GI_OK);
    assert_int_equal(total, 0);
    assert_int_equal(json_array_size(items), 0);
    json_decref(items);
}

/* ---- credentials ---- */

static void test_tokens(void **state)
{
    struct testdb_fixture *f = *state;
    struct gi_principal p;
    json_t *items = NULL;
    int64_t id = 0, id2 = 0;

    assert_status(store_token_create(f->st, "root", "ci-bot", GI_ROLE_EDITOR, "hash-1", &id),
                  GI_OK);
    assert_true(id > 0);
    memset(&p, 0, sizeof p);
    assert_status(store_token_auth(f->st, "hash-1", &p), GI_OK);
    assert_int_equal(p.role, GI_ROLE_EDITOR);
    assert_int_equal(p.token_id, id);
    assert_string_equal(p.name, "ci-bot");
    assert_status(store_token_auth(f->st, "hash-2", &p), GI_NOT_FOUND);
    assert_status(store_token_auth(f->st, "", &p), GI_NOT_FOUND);

    /* Hashes are unique. */
    assert_status(store_token_create(f->st, "root", "dup", GI_ROLE_ADMIN, "hash-1", &id2),
                  GI_CONFLICT);
    assert_status(store_token_create(f->st, "root", "pusher", GI_ROLE_PUSHER, "hash-p", &id2),
                  GI_OK);
    assert_status(store_token_auth(f->st, "hash-p", &p), GI_OK);
    assert_int_equal(p.role, GI_ROLE_PUSHER);

    assert_status(store_token_list(f->st, &items), GI_OK);
    assert_int_equal(json_array_size(items), 2);
    assert_string_equal(sget(json_array_get(items, 0), "name"), "ci-bot");
    assert_string_equal(sget(json_array_get(items, 0), "role"), "editor");
    assert_true(json_is_null(json_object_get(json_array_get(items, 0), "revoked_at")));
    assert_null(json_object_get(json_array_get(items, 0), "hash")); /* never listed */
    json_decref(items);

    assert_status(store_token_revoke(f->st, "root", id), GI_OK);
    assert_status(store_token_auth(f->st, "hash-1", &p), GI_NOT_FOUND);
    assert_status(store_token_auth(f->st, "hash-p", &p), GI_OK); /* others unaffected */
    assert_status(store_token_revoke(f->st, "root", id), GI_CONFLICT);
    assert_status(store_token_revoke(f->st, "root", id + 100), GI_NOT_FOUND);
    assert_status(store_token_list(f->st, &items), GI_OK);
    assert_non_null(sget(json_array_get(items, 0), "revoked_at"));
    json_decref(items);

    json_t *row = audit_last(f->st, "token", id);
    assert_string_equal(sget(row, "action"), "revoke");
    assert_string_equal(sget(row, "actor"), "root");
    assert_true(json_is_null(json_object_get(json_object_get(row, "before"), "revoked_at")));
    assert_non_null(sget(json_object_get(row, "after"), "revoked_at"));
    json_decref(row);
    assert_int_equal(audit_count(f->st, "token", id), 2);

    /* ensure: creates once, then finds it. */
    assert_status(store_token_ensure(f->st, "admin", GI_ROLE_ADMIN, "hash-admin"), GI_OK);
    assert_status(store_token_ensure(f->st, "admin", GI_ROLE_ADMIN, "hash-admin"), GI_OK);
    assert_status(store_token_list(f->st, &items), GI_OK);
    assert_int_equal(json_array_size(items), 3);
    json_decref(items);
    assert_status(store_token_auth(f->st, "hash-admin", &p), GI_OK);
    assert_int_equal(p.role, GI_ROLE_ADMIN);
}

static void test_users_sessions(void **state)
{
    struct testdb_fixture *f = *state;
    struct gi_principal p;
    enum gi_role role = GI_ROLE_NONE;
    char pw[64];
    int64_t uid = 0, uid2 = 0;

    assert_status(store_user_get(f->st, "ann", &uid, &role, pw, sizeof pw), GI_NOT_FOUND);
    assert_status(store_user_set(f->st, "ann", GI_ROLE_VIEWER, "pw-hash-1"), GI_OK);
    assert_status(store_user_get(f->st, "ann", &uid, &role, pw, sizeof pw), GI_OK);
    assert_int_equal(role, GI_ROLE_VIEWER);
    assert_string_equal(pw, "pw-hash-1");

    /* Setting again replaces role and password, keeping the id. */
    assert_status(store_user_set(f->st, "ann", GI_ROLE_ADMIN, "pw-hash-2"), GI_OK);
    assert_status(store_user_get(f->st, "ann", &uid2, &role, pw, sizeof pw), GI_OK);
    assert_int_equal(uid2, uid);
    assert_int_equal(role, GI_ROLE_ADMIN);
    assert_string_equal(pw, "pw-hash-2");

    assert_status(store_session_create(f->st, "sess-1", uid, INT64_C(4102444800)), GI_OK);
    assert_status(store_session_create(f->st, "sess-old", uid, 1000), GI_OK);
    memset(&p, 0, sizeof p);
    assert_status(store_session_auth(f->st, "sess-1", &p), GI_OK);
    assert_string_equal(p.name, "ann");
    assert_int_equal(p.role, GI_ROLE_ADMIN);
    assert_int_equal(p.token_id, 0);
    assert_status(store_session_auth(f->st, "sess-old", &p), GI_NOT_FOUND); /* expired */
    assert_status(store_session_auth(f->st, "sess-none", &p), GI_NOT_FOUND);
    assert_status(store_session_create(f->st, "sess-x", uid + 100, INT64_C(4102444800)),
                  GI_NOT_FOUND); /* no such user */
    assert_status(store_session_delete(f->st, "sess-1"), GI_OK);
    assert_status(store_session_auth(f->st, "sess-1", &p), GI_NOT_FOUND);
}

int main(void)
{
    const struct CMUnitTest tests[] = {
        cmocka_unit_test_setup_teardown(test_migrations_apply_once, testdb_setup, testdb_teardown),
        cmocka_unit_test(test_open_bad_path),
        cmocka_unit_test_setup_teardown(test_dc_crud, testdb_setup, testdb_teardown),
        cmocka_unit_test_setup_teardown(test_dc_delete, testdb_setup, testdb_teardown),
        cmocka_unit_test_setup_teardown(test_dc_overview, testdb_setup, testdb_teardown),
        cmocka_unit_test_setup_teardown(test_res_create_get, testdb_setup, testdb_teardown),
        cmocka_unit_test_setup_teardown(test_res_list, testdb_setup, testdb_teardown),
        cmocka_unit_test_setup_teardown(test_res_update_version, testdb_setup, testdb_teardown),
        cmocka_unit_test_setup_teardown(test_allocate_release, testdb_setup, testdb_teardown),
        cmocka_unit_test_setup_teardown(test_alloc_bulk, testdb_setup, testdb_teardown),
        cmocka_unit_test_setup_teardown(test_import_all_or_none, testdb_setup, testdb_teardown),
        cmocka_unit_test_setup_teardown(test_audit_list, testdb_setup, testdb_teardown),
        cmocka_unit_test_setup_teardown(test_tokens, testdb_setup, testdb_teardown),
        cmocka_unit_test_setup_teardown(test_users_sessions, testdb_setup, testdb_teardown),
    };
    return cmocka_run_group_tests(tests, NULL, NULL);
}
