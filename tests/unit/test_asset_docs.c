/* Unit tests for the stored asset documents (src/store/asset_docs.c,
 * migration 041), on both stores: the list page built from the stored
 * documents is, byte for byte, the page of documents built from the
 * columns (every order, paged, filtered), for assets of every shape
 * (text that needs escaping, no cost, a real depreciation, a parent, no
 * data center); every write leaves a stored document and none holds what
 * the read adds (book value, warranty, the data center's name, the
 * parent's tag); a renamed data center, a renamed parent, a deleted data
 * center and a last-seen time from discovery show in the list; rows
 * without a document are listed all the same and are rendered by
 * store_asset_docs_fill(); the data center names the page reads beside
 * its rows name every asset of many data centers (some deleted) right;
 * the page of no filter under a scope of data centers holds only theirs. */
#include "unit.h"
#include "testdb.h"

#include "core/util.h"
#include "store/store.h"

#include <stdlib.h>
#include <string.h>

static int raw_exec(const struct testdb *t, const char *sql)
{
    sqlite3 *db = NULL;
    int rc;

    if (t->name[0] != '\0')
        return testdb_psql(t->locator, sql, NULL, 0);
    if (sqlite3_open(t->locator, &db) != SQLITE_OK)
        return -1;
    sqlite3_busy_timeout(db, 5000);
    rc = sqlite3_exec(db, sql, NULL, NULL, NULL);
    sqlite3_close(db);
    return rc == SQLITE_OK ? 0 : -1;
}

static void mk(struct store *st, const char *record)
{
    struct store_asset_err err = {0};
    json_t *in = json_loads(record, 0, NULL), *doc = NULL;

    assert_non_null(in);
    if (store_asset_create(st, "t", in, &doc, &err) != GI_OK)
        fail_msg("create %s: %s %s", record, err.field, err.message);
    json_decref(doc);
    json_decref(in);
}

/* One page both ways: the text must be the built documents, encoded. */
static void check_page(struct store *st, const struct store_asset_filter *f,
                       const struct store_page *pg)
{
    json_t *items = NULL, *v;
    int64_t t1 = -1, t2 = -2;
    size_t len = 0, rows = 0, i, want_len = 0;
    char *text = NULL, *want = calloc(1, 1);

    assert_status(store_asset_list(st, f, pg, &items, &t1), GI_OK);
    json_array_foreach(items, i, v) {
        char *d = json_dumps(v, JSON_COMPACT | JSON_ENCODE_ANY);
        size_t n = strlen(d);
        want = realloc(want, want_len + n + 2);
        if (i)
            want[want_len++] = ',';
        memcpy(want + want_len, d, n + 1);
        want_len += n;
        free(d);
    }
    assert_status(store_asset_list_text(st, f, pg, &text, &len, &rows, &t2), GI_OK);
    assert_string_equal(text, want);
    assert_int_equal(len, want_len);
    assert_int_equal(rows, json_array_size(items));
    assert_int_equal(t1, t2);
    /* A whole set on its first page: its total is its items. */
    if (pg->offset == 0 && (int64_t)json_array_size(items) < pg->limit)
        assert_int_equal(t1, json_array_size(items));
    free(text);
    free(want);
    json_decref(items);
}

/* The filter of kind, stage and data center `dc` that bits t (1 kind, 2
 * stage, 4 data center) name: the sets the list's equality-only
 * statements serve. */
static struct store_asset_filter eq_filter(unsigned t, const char *kind, const char *stage,
                                           int64_t dc)
{
    struct store_asset_filter f = {0};

    f.kind = t & 1 ? kind : NULL;
    f.stage = t & 2 ? stage : NULL;
    f.datacenter_id = t & 4 ? dc : 0;
    return f;
}

/* Filters on one model, alone and with every other filter (full) or with
 * eight combinations that hold each filter (not full), and warranty
 * before a date alone, with and without a scope of data centers (the
 * list's model and warranty statements), both ways and in pages of one. */
static void check_model_warranty(struct store *st, int64_t dc, bool full)
{
    static const char *const models[] = {"H100", "R760xa", "R760", "\xe6\x97\xa5\xe6\x9c\xac",
                                         "none"};
    static const char *const dates[] = {"2000-01-01", "2021-01-01", "2050-01-01", "2100-01-01"};

    for (int desc = 0; desc < 2; desc++) {
        for (size_t i = 0; i < sizeof models / sizeof *models; i++) {
            for (unsigned t = 0; t < 64; t += full ? 1 : 9) {
                struct store_asset_filter f = eq_filter(t & 7, "gpu", "spare", dc);
                struct store_page pg = {100, 0, NULL, desc != 0};
                f.model = models[i];
                f.q = t & 8 ? "G" : NULL;
                f.warranty_before = t & 16 ? "2050-01-01" : NULL;
                f.parent = t & 32 ? "SRV-1" : NULL;
                check_page(st, &f, &pg);
                for (pg.limit = 1; pg.offset < 3; pg.offset++)
                    check_page(st, &f, &pg);
                f.scope.n = 1;
                f.scope.dcs[0] = dc;
                pg.limit = 100;
                pg.offset = 0;
                check_page(st, &f, &pg);
            }
        }
        for (size_t i = 0; i < sizeof dates / sizeof *dates; i++) {
            struct store_asset_filter f = {0};
            struct store_page pg = {100, 0, NULL, desc != 0};
            f.warranty_before = dates[i];
            check_page(st, &f, &pg);
            for (pg.limit = 1; pg.offset < 4; pg.offset++)
                check_page(st, &f, &pg);
            f.scope.n = 1;
            f.scope.dcs[0] = dc;
            pg.limit = 100;
            pg.offset = 0;
            check_page(st, &f, &pg);
        }
    }
}

/* Every order, whole and in pages of two, with and without a filter;
 * every combination of kind, stage and data center dc, both ways and in
 * pages of one; and the model and warranty filters (every combination
 * when full). */
static void check_lists(struct store *st, int64_t dc, bool full)
{
    static const char *const sorts[] = {
        NULL, "tag", "datacenter", "kind", "warranty_end", "purchase_date", "id", "updated_at"};
    struct store_asset_filter none = {0}, gpus = {0};

    gpus.kind = "gpu";
    for (size_t i = 0; i < sizeof sorts / sizeof *sorts; i++) {
        for (int desc = 0; desc < 2; desc++) {
            struct store_page pg = {100, 0, sorts[i], desc != 0};
            check_page(st, &none, &pg);
            check_page(st, &gpus, &pg);
            for (pg.limit = 2; pg.offset < 12; pg.offset += 2)
                check_page(st, &none, &pg);
        }
    }
    /* No filter under a scope of one data center and of two (the second
     * one with no asset): not the statement of no filter, which binds no
     * scope. */
    for (int n = 1; n <= 2; n++) {
        for (int desc = 0; desc < 2; desc++) {
            struct store_asset_filter f = {0};
            struct store_page pg = {100, 0, NULL, desc != 0};
            f.scope.n = n;
            f.scope.dcs[0] = dc;
            f.scope.dcs[1] = dc + 1000;
            check_page(st, &f, &pg);
            for (pg.limit = 1; pg.offset < 3; pg.offset++)
                check_page(st, &f, &pg);
        }
    }
    for (unsigned t = 0; t < 8; t++) {
        for (int desc = 0; desc < 2; desc++) {
            struct store_asset_filter f = eq_filter(t, "gpu", "spare", dc);
            struct store_page pg = {100, 0, NULL, desc != 0};
            check_page(st, &f, &pg);
            f = eq_filter(t, "server", "active", dc);
            check_page(st, &f, &pg);
            for (pg.limit = 1; pg.offset < 4; pg.offset++)
                check_page(st, &f, &pg);
        }
    }
    check_model_warranty(st, dc, full);
}

/* The tags of the text page of f in tag order (desc: descending) and its
 * total equal want ("A,B") and n. */
static void expect_tags(struct store *st, const struct store_asset_filter *f, bool desc,
                        const char *want, int64_t n)
{
    struct store_page pg = {100, 0, NULL, desc};
    char *text = NULL, *page, got[256] = "";
    size_t len = 0, rows = 0, at = 0, i;
    int64_t total = -1;
    json_t *arr, *v;

    assert_status(store_asset_list_text(st, f, &pg, &text, &len, &rows, &total), GI_OK);
    page = malloc(len + 3);
    assert_non_null(page);
    snprintf(page, len + 3, "[%s]", text);
    arr = json_loads(page, 0, NULL);
    free(page);
    assert_non_null(arr);
    json_array_foreach(arr, i, v) {
        at += (size_t)snprintf(got + at, sizeof got - at, "%s%s", i ? "," : "",
                               json_string_value(json_object_get(v, "tag")));
    }
    assert_string_equal(got, want);
    assert_int_equal(total, n);
    assert_int_equal(rows, json_array_size(arr));
    json_decref(arr);
    free(text);
}

/* Every asset has its stored document, and none holds a read-time member. */
static void check_stored(const struct testdb *t)
{
    assert_int_equal(testdb_scalar(t, "SELECT COUNT(*) FROM assets WHERE doc IS NULL OR "
                                      "doc_cut IS NULL"),
                     0);
    assert_int_equal(testdb_scalar(t, "SELECT COUNT(*) FROM assets WHERE doc LIKE "
                                      "'%\"book_value\"%' OR doc LIKE '%\"warranty\"%' OR doc "
                                      "LIKE '%\"days_left\"%' OR doc LIKE '%\"parent\"%' OR doc "
                                      "LIKE '%\"datacenter\"%'"),
                     0);
}

static void test_list_is_the_documents(void **state)
{
    struct testdb_fixture *f = *state;
    struct store_dc dc = {"Z\xc3\xbcrich \"A\"\\1", "somewhere", 2}, other = {"dc-2", "x", 1};
    struct store_asset_err err = {0};
    json_t *out = NULL, *patch;
    int64_t dc_id, dc2_id, filled = -1;
    char rec[1024];

    assert_status(store_dc_create(f->st, "t", &dc, &out), GI_OK);
    dc_id = json_integer_value(json_object_get(out, "id"));
    json_decref(out);
    assert_status(store_dc_create(f->st, "t", &other, &out), GI_OK);
    dc2_id = json_integer_value(json_object_get(out, "id"));
    json_decref(out);

    snprintf(rec, sizeof rec,
             "{\"tag\":\"SRV-1\",\"kind\":\"server\",\"serial\":\"S\\\"1\\\\\","
             "\"vendor\":\"D\\u00e9ll\",\"model\":\"R760\",\"location\":{\"datacenter\":\"%s\","
             "\"room\":\"hall/1\",\"rack\":\"R7\",\"u\":12},\"purchase_date\":\"2024-03-01\","
             "\"purchase_cost\":{\"amount\":\"25000.00\",\"currency\":\"USD\"},"
             "\"warranty_end\":\"2099-03-01\",\"depreciation_years\":2.5,\"salvage\":\"1000\","
             "\"custom\":{\"owner\":\"infra\",\"cores\":96,\"ctl\":\"a\\tb\\u0001\",\"ratio\":0.1,"
             "\"on\":true,\"none\":null}}",
             "Z\\u00fcrich \\\"A\\\"\\\\1");
    mk(f->st, rec);
    mk(f->st, "{\"tag\":\"GPU-1\",\"kind\":\"gpu\",\"serial\":\"G1\",\"parent\":\"SRV-1\","
              "\"model\":\"H100\","
              "\"location\":{\"datacenter\":\"dc-2\",\"storage\":\"shelf 3\"},"
              "\"purchase_date\":\"2020-01-01\",\"purchase_cost\":{\"amount\":\"999.99\"},"
              "\"depreciation_years\":3,\"warranty_end\":\"2021-01-01\"}");
    mk(f->st, "{\"tag\":\"GPU-2\",\"kind\":\"gpu\",\"parent\":\"SRV-1\",\"model\":\"H100\","
              "\"warranty_end\":\"2000-02-"
              "29\",\"lease_end\":\"2030-01-01\",\"epc\":\"E200\"}");
    mk(f->st, "{\"tag\":\"PSU-1\",\"kind\":\"psu\",\"model\":\"\\u65e5\\u672c\"}");
    mk(f->st, "{\"kind\":\"nic\"}");
    check_stored(&f->db);
    check_lists(f->st, dc2_id, false);

    /* Changes: a patch, a stage move, a renamed parent, a renamed and a
     * deleted data center. */
    patch = json_pack("{s:s, s:{s:s}}", "model", "R760xa", "custom", "owner", "ml");
    assert_status(store_asset_update(f->st, "t", "SRV-1", patch, &out, &err), GI_OK);
    json_decref(out);
    json_decref(patch);
    assert_status(
        store_asset_set_stage(f->st, "t", "GPU-1", "spare", "r", false, &out, NULL, 0, NULL, 0),
        GI_OK);
    json_decref(out);
    /* Hand-counted: GPU-1 (dc-2) is the one spare GPU; SRV-1 the one
     * server, active, in the first data center. */
    {
        struct store_asset_filter k = eq_filter(1, "gpu", "spare", dc2_id);
        struct store_asset_filter ks = eq_filter(3, "gpu", "spare", dc2_id);
        struct store_asset_filter ksd = eq_filter(7, "gpu", "spare", dc2_id);
        struct store_asset_filter sd = eq_filter(6, "gpu", "active", dc_id);
        struct store_asset_filter kd = eq_filter(5, "gpu", NULL, dc_id);
        struct store_asset_filter s2 = eq_filter(2, NULL, "active", 0);
        expect_tags(f->st, &k, false, "GPU-1,GPU-2", 2);
        expect_tags(f->st, &k, true, "GPU-2,GPU-1", 2);
        expect_tags(f->st, &ks, false, "GPU-1", 1);
        expect_tags(f->st, &ksd, false, "GPU-1", 1);
        expect_tags(f->st, &sd, true, "SRV-1", 1);
        expect_tags(f->st, &kd, false, "", 0);
        expect_tags(f->st, &s2, false, "GI-000005,GPU-2,PSU-1,SRV-1", 4);
    }
    patch = json_pack("{s:s}", "tag", "SRV-1b");
    assert_status(store_asset_update(f->st, "t", "SRV-1", patch, &out, &err), GI_OK);
    json_decref(out);
    json_decref(patch);
    check_stored(&f->db);
    check_lists(f->st, dc2_id, true);

    dc.name = "renamed";
    assert_status(store_dc_update(f->st, "t", dc_id, &dc, &out), GI_OK);
    json_decref(out);
    check_lists(f->st, dc2_id, false);
    assert_status(store_dc_delete(f->st, "t", dc2_id, true, NULL), GI_OK);
    assert_int_equal(testdb_scalar(&f->db, "SELECT COUNT(*) FROM assets WHERE tag = 'GPU-1' AND "
                                           "datacenter_id IS NULL"),
                     1);
    check_stored(&f->db);
    check_lists(f->st, dc2_id, false);

    /* Rows written around the store: listed all the same, then rendered. */
    assert_int_equal(raw_exec(&f->db, "UPDATE assets SET doc = NULL, doc_cut = NULL WHERE tag IN "
                                      "('GPU-2', 'PSU-1')"),
                     0);
    check_lists(f->st, dc2_id, true);
    assert_status(store_asset_docs_fill(f->st, &filled), GI_OK);
    assert_int_equal(filled, 2);
    check_stored(&f->db);
    check_lists(f->st, dc2_id, false);
    assert_status(store_asset_docs_fill(f->st, &filled), GI_OK);
    assert_int_equal(filled, 0);
}

/* Assets in the first, a middle and the last of 40 data centers (more
 * than the names' first allocation holds), listed with their names; then
 * with some data centers deleted around them, ids no longer contiguous. */
static void test_many_datacenters(void **state)
{
    struct testdb_fixture *f = *state;
    int64_t ids[40];
    char name[32], rec[256];
    json_t *out = NULL;

    for (int i = 0; i < 40; i++) {
        struct store_dc dc = {name, "x", 1};
        snprintf(name, sizeof name, "dc-%02d", i);
        assert_status(store_dc_create(f->st, "t", &dc, &out), GI_OK);
        ids[i] = json_integer_value(json_object_get(out, "id"));
        json_decref(out);
    }
    for (int i = 0; i < 40; i += 13) {
        snprintf(rec, sizeof rec,
                 "{\"tag\":\"A-%02d\",\"kind\":\"gpu\",\"location\":{\"datacenter\":\"dc-%02d\"}}",
                 i, i);
        mk(f->st, rec);
    }
    mk(f->st, "{\"tag\":\"A-last\",\"kind\":\"psu\",\"location\":{\"datacenter\":\"dc-39\"}}");
    mk(f->st, "{\"tag\":\"A-none\",\"kind\":\"nic\"}");
    check_stored(&f->db);
    check_lists(f->st, ids[13], false);
    {
        struct store_asset_filter none = {0};
        expect_tags(f->st, &none, false, "A-00,A-13,A-26,A-39,A-last,A-none", 6);
    }
    for (int i = 1; i < 39; i += 2)
        assert_status(store_dc_delete(f->st, "t", ids[i], true, NULL), GI_OK);
    assert_status(store_dc_delete(f->st, "t", ids[26], true, NULL), GI_OK);
    check_lists(f->st, ids[39], false);
}

static void test_last_seen_from_discovery(void **state)
{
    struct testdb_fixture *f = *state;
    int64_t now = gi_now(), drifts = 0;
    char sql[512];

    snprintf(sql, sizeof sql,
             "INSERT INTO hosts (id, hostname, first_seen_at, last_seen_at) VALUES (1, 'node-a', "
             "%lld, %lld); INSERT INTO gpus (uuid, serial, host_id, idx, first_seen_at, "
             "last_seen_at) VALUES ('GPU-aa', 'GS1', 1, 0, %lld, %lld)",
             (long long)now - 100, (long long)now - 100, (long long)now - 100,
             (long long)now - 100);
    assert_int_equal(raw_exec(&f->db, sql), 0);
    mk(f->st, "{\"tag\":\"G1\",\"kind\":\"gpu\",\"serial\":\"GS1\"}");
    check_stored(&f->db);
    check_lists(f->st, 1, false);
    snprintf(sql, sizeof sql, "UPDATE gpus SET last_seen_at = %lld", (long long)now);
    assert_int_equal(raw_exec(&f->db, sql), 0);
    assert_status(store_asset_reconcile(f->st, now, &drifts), GI_OK);
    snprintf(sql, sizeof sql, "SELECT COUNT(*) FROM assets WHERE last_seen = %lld", (long long)now);
    assert_int_equal(testdb_scalar(&f->db, sql), 1);
    check_stored(&f->db);
    check_lists(f->st, 1, false);
}

int main(void)
{
    const struct CMUnitTest tests[] = {
        cmocka_unit_test_setup_teardown(test_list_is_the_documents, testdb_setup, testdb_teardown),
        cmocka_unit_test_setup_teardown(test_many_datacenters, testdb_setup, testdb_teardown),
        cmocka_unit_test_setup_teardown(test_last_seen_from_discovery, testdb_setup,
                                        testdb_teardown),
    };
    return cmocka_run_group_tests(tests, NULL, NULL);
}
