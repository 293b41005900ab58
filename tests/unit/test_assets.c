/* Unit tests for assets in the store (src/store/assets.c, asset_fields.c,
 * asset_ingest.c, asset_stages.c), on both stores: an import source's
 * upsert matches by tag, serial and source key, keeps to the fields it
 * owns, never moves the stage, drops a bad field alone and reports it;
 * a dry run writes nothing; stage moves follow the lifecycle table, an
 * override needs a reason; the document computes warranty and book
 * value; the reconciliation with discovery records each drift once. */
#include "unit.h"
#include "testdb.h"

#include "core/util.h"
#include "store/store.h"

#include <string.h>

static json_t *parse(const char *text)
{
    json_t *v = json_loads(text, 0, NULL);
    assert_non_null(v);
    return v;
}

/* Runs SQL on the test's database outside the store; 0 on success. */
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

static json_t *ingest(struct store *st, const char *source, const char *records, bool dry_run)
{
    json_t *recs = parse(records), *rep = NULL;

    assert_status(store_asset_ingest(st, source, recs, dry_run, &rep), GI_OK);
    json_decref(recs);
    return rep;
}

static int64_t count(const json_t *rep, const char *key)
{
    return json_integer_value(json_object_get(rep, key));
}

static json_t *get(struct store *st, const char *tag)
{
    json_t *doc = NULL;
    assert_status(store_asset_get(st, tag, 0, INT64_MAX, &doc), GI_OK);
    return doc;
}

static const char *str(const json_t *o, const char *k)
{
    return json_string_value(json_object_get(o, k));
}

static void test_ingest_creates_and_matches(void **state)
{
    struct testdb_fixture *f = *state;
    json_t *rep, *doc, *items = NULL;
    struct store_asset_filter filt = {0};
    int64_t total = 0;

    rep =
        ingest(f->st, "glpi:host1",
               "[{\"kind\":\"gpu\",\"serial\":\"1320\",\"model\":\"H100\","
               "\"parent_serial\":\"SRV-1\"},"
               "{\"kind\":\"server\",\"serial\":\"SRV-1\",\"model\":\"R760\",\"vendor\":\"Dell\"},"
               "{\"kind\":\"psu\",\"source_key\":\"psu-0\",\"model\":\"PWS-2K\"}]",
               false);
    assert_int_equal(count(rep, "created"), 3);
    assert_int_equal(json_array_size(json_object_get(rep, "errors")), 0);
    json_decref(rep);
    /* The same batch again changes nothing. */
    rep =
        ingest(f->st, "glpi:host1",
               "[{\"kind\":\"server\",\"serial\":\"SRV-1\",\"model\":\"R760\",\"vendor\":\"Dell\"},"
               "{\"kind\":\"gpu\",\"serial\":\"1320\",\"model\":\"H100\",\"parent_serial\":"
               "\"SRV-1\"},{\"kind\":\"psu\",\"source_key\":\"psu-0\",\"model\":\"PWS-2K\"}]",
               false);
    assert_int_equal(count(rep, "created"), 0);
    assert_int_equal(count(rep, "unchanged"), 3);
    json_decref(rep);
    filt.kind = "gpu";
    assert_status(store_asset_list(f->st, &filt, NULL, &items, &total), GI_OK);
    assert_int_equal(total, 1);
    doc = json_array_get(items, 0);
    assert_string_equal(str(doc, "stage"), "active");
    assert_string_equal(str(doc, "source"), "glpi:host1");
    assert_non_null(str(doc, "parent"));
    assert_string_equal(str(doc, "tag"), "GI-000003"); /* after its parent */
    json_decref(items);
    doc = get(f->st, "GI-000001");
    assert_string_equal(str(doc, "kind"), "server");
    assert_int_equal(json_array_size(json_object_get(doc, "children")), 1);
    json_decref(doc);
}

static void test_source_keeps_to_its_fields(void **state)
{
    struct testdb_fixture *f = *state;
    struct store_asset_err err = {0};
    json_t *rep, *doc, *patch;
    char from[32], why[160];

    rep = ingest(f->st, "netbox:1",
                 "[{\"tag\":\"N-1\",\"kind\":\"server\",\"serial\":\"AB\",\"model\":\"R760\","
                 "\"location\":{\"room\":\"r1\"},\"custom\":{\"owner\":\"infra\"}}]",
                 false);
    json_decref(rep);
    /* A person corrects the model and moves the stage. */
    patch = parse("{\"model\":\"R760xa\"}");
    assert_status(store_asset_update(f->st, "alice", "N-1", patch, &doc, &err), GI_OK);
    json_decref(doc);
    json_decref(patch);
    assert_status(store_asset_set_stage(f->st, "alice", "N-1", "spare", "spare pool", false, &doc,
                                        from, sizeof from, why, sizeof why),
                  GI_OK);
    json_decref(doc);
    /* The source's next report: its model is ignored (a person set it
     * last), its room and custom field are its own, another source's
     * record for the same tag does not touch them, and the stage stays. */
    rep = ingest(f->st, "netbox:1",
                 "[{\"tag\":\"N-1\",\"kind\":\"server\",\"model\":\"R760\",\"stage\":\"active\","
                 "\"location\":{\"room\":\"r2\"},\"custom\":{\"owner\":\"ml\"}}]",
                 false);
    assert_int_equal(count(rep, "updated"), 1);
    json_decref(rep);
    rep = ingest(f->st, "snipeit:9", "[{\"tag\":\"N-1\",\"location\":{\"room\":\"r9\"}}]", false);
    assert_int_equal(count(rep, "unchanged"), 1);
    json_decref(rep);
    doc = get(f->st, "N-1");
    assert_string_equal(str(doc, "model"), "R760xa");
    assert_string_equal(str(json_object_get(doc, "location"), "room"), "r2");
    assert_string_equal(str(json_object_get(doc, "custom"), "owner"), "ml");
    assert_string_equal(str(doc, "stage"), "spare");
    json_decref(doc);
}

static void test_bad_field_dropped_alone(void **state)
{
    struct testdb_fixture *f = *state;
    json_t *rep, *doc, *e;

    rep = ingest(f->st, "glpi:x",
                 "[{\"tag\":\"B-1\",\"kind\":\"ssd\",\"serial\":\"S9\",\"purchase_date\":"
                 "\"2024-02-30\",\"warranty_end\":\"2027-01-31\",\"location\":{\"datacenter\":"
                 "\"nowhere\"}}, 17, {\"tag\":\"B-2\",\"kind\":\"ssd\"}]",
                 false);
    assert_int_equal(count(rep, "created"), 2);
    assert_int_equal(json_array_size(json_object_get(rep, "errors")), 3);
    e = json_array_get(json_object_get(rep, "errors"), 0);
    assert_int_equal(json_integer_value(json_object_get(e, "index")), 0);
    assert_string_equal(str(e, "field"), "location.datacenter");
    e = json_array_get(json_object_get(rep, "errors"), 1);
    assert_string_equal(str(e, "field"), "purchase_date");
    e = json_array_get(json_object_get(rep, "errors"), 2);
    assert_int_equal(json_integer_value(json_object_get(e, "index")), 1);
    json_decref(rep);
    doc = get(f->st, "B-1");
    assert_true(json_is_null(json_object_get(doc, "purchase_date")));
    assert_string_equal(str(doc, "serial"), "S9");
    assert_string_equal(str(doc, "warranty_end"), "2027-01-31");
    json_decref(doc);
}

static void test_dry_run_writes_nothing(void **state)
{
    struct testdb_fixture *f = *state;
    json_t *rep, *doc = NULL;

    rep = ingest(f->st, "glpi:x", "[{\"tag\":\"D-1\",\"kind\":\"nic\"}]", true);
    assert_int_equal(count(rep, "created"), 1);
    assert_true(json_is_true(json_object_get(rep, "dry_run")));
    json_decref(rep);
    assert_status(store_asset_get(f->st, "D-1", 0, INT64_MAX, &doc), GI_NOT_FOUND);
    assert_int_equal(testdb_scalar(&f->db, "SELECT COUNT(*) FROM asset_events"), 0);
}

static void test_stage_moves(void **state)
{
    struct testdb_fixture *f = *state;
    struct store_asset_err err = {0};
    json_t *in = parse("{\"tag\":\"S-1\",\"kind\":\"gpu\",\"stage\":\"ordered\"}"), *doc;
    char from[32], why[160];
    const char *const *next;

    assert_status(store_asset_create(f->st, "a", in, &doc, &err), GI_OK);
    json_decref(doc);
    json_decref(in);
    assert_status(store_asset_set_stage(f->st, "a", "S-1", "active", "", false, &doc, from,
                                        sizeof from, why, sizeof why),
                  GI_CONFLICT);
    assert_string_equal(from, "ordered");
    next = store_asset_stage_next(from);
    assert_string_equal(next[0], "received");
    assert_string_equal(next[1], "decommissioned");
    assert_null(next[2]);
    assert_status(store_asset_set_stage(f->st, "a", "S-1", "decommissioned", "cancelled", false,
                                        &doc, from, sizeof from, why, sizeof why),
                  GI_OK);
    json_decref(doc);
    assert_null(store_asset_stage_next("decommissioned")[0]);
    assert_status(store_asset_set_stage(f->st, "a", "S-1", "spare", "found", false, &doc, from,
                                        sizeof from, why, sizeof why),
                  GI_CONFLICT);
    assert_status(store_asset_set_stage(f->st, "a", "S-1", "spare", "", true, &doc, from,
                                        sizeof from, why, sizeof why),
                  GI_INVALID);
    assert_status(store_asset_set_stage(f->st, "a", "S-1", "spare", "found again", true, &doc, from,
                                        sizeof from, why, sizeof why),
                  GI_OK);
    assert_string_equal(str(doc, "stage"), "spare");
    json_decref(doc);
    assert_status(store_asset_set_stage(f->st, "a", "S-1", "broken", "x", false, &doc, from,
                                        sizeof from, why, sizeof why),
                  GI_INVALID);
}

static void test_document_figures(void **state)
{
    struct testdb_fixture *f = *state;
    struct store_asset_err err = {0};
    char soon[32];
    json_t *in, *doc, *w;

    /* A date 10 days ahead: the YYYY-MM-DD of an RFC 3339 time. */
    gi_time_format(gi_now() + 10 * 86400, soon, sizeof soon);
    soon[10] = '\0';
    in = json_pack("{s:s, s:s, s:s, s:{s:s, s:s}, s:s, s:f, s:s}", "tag", "F-1", "kind", "server",
                   "purchase_date", "2000-01-01", "purchase_cost", "amount", "1000.00", "currency",
                   "EUR", "warranty_end", soon, "depreciation_years", 4.0, "salvage", "100");
    assert_status(store_asset_create(f->st, "a", in, &doc, &err), GI_OK);
    w = json_object_get(doc, "warranty");
    assert_string_equal(str(w, "status"), "expiring");
    assert_int_equal(json_integer_value(json_object_get(w, "days_left")), 10);
    /* Long past its 4 years: down to the salvage value. */
    assert_string_equal(str(json_object_get(doc, "book_value"), "amount"), "100.00");
    assert_string_equal(str(json_object_get(doc, "purchase_cost"), "currency"), "EUR");
    json_decref(doc);
    json_decref(in);
}

static void test_reconcile_drift(void **state)
{
    struct testdb_fixture *f = *state;
    struct store_asset_err err = {0};
    int64_t now = gi_now(), old = now - 40 * 86400, drifts = -1;
    char sql[1024];
    json_t *in, *doc, *items = NULL;
    int64_t total = 0;

    snprintf(sql, sizeof sql,
             "INSERT INTO hosts (id, hostname, serial, first_seen_at, last_seen_at) VALUES "
             "(1, 'old-node', 'HS1', %lld, %lld), (2, 'new-node', 'HS2', %lld, %lld);"
             "INSERT INTO gpus (uuid, serial, host_id, first_seen_at, last_seen_at) VALUES "
             "('GPU-1', 'GS1', 2, %lld, %lld), ('GPU-2', 'GS2', 2, %lld, %lld)",
             (long long)old, (long long)old, (long long)now, (long long)now, (long long)now,
             (long long)now, (long long)now, (long long)now);
    assert_int_equal(raw_exec(&f->db, sql), 0);
    /* No assets at all: a fleet that does not track them has no drift. */
    assert_status(store_asset_reconcile(f->st, now, &drifts), GI_OK);
    assert_int_equal(drifts, 0);
    in = parse("{\"tag\":\"SRV\",\"kind\":\"server\",\"serial\":\"HS1\"}");
    assert_status(store_asset_create(f->st, "a", in, &doc, &err), GI_OK);
    assert_int_equal(json_integer_value(json_object_get(doc, "host_id")), 1);
    json_decref(doc);
    json_decref(in);
    in = parse("{\"tag\":\"G\",\"kind\":\"gpu\",\"serial\":\"GS1\",\"parent\":\"SRV\"}");
    assert_status(store_asset_create(f->st, "a", in, &doc, &err), GI_OK);
    assert_string_equal(str(doc, "gpu_uuid"), "GPU-1");
    json_decref(doc);
    json_decref(in);

    assert_status(store_asset_reconcile(f->st, now, &drifts), GI_OK);
    assert_int_equal(drifts, 3);
    assert_status(store_asset_reconcile(f->st, now + 60, &drifts), GI_OK);
    assert_int_equal(drifts, 0);
    assert_status(store_asset_events_range(f->st, 0, now + 3600, NULL, &items, &total), GI_OK);
    {
        const char *whats[3] = {NULL, NULL, NULL};
        size_t i, n = 0;
        json_t *e;
        json_array_foreach(items, i, e) {
            if (strcmp(str(e, "kind"), "drift") == 0 && n < 3)
                whats[n++] = str(json_object_get(e, "detail"), "what");
        }
        assert_int_equal(n, 3);
        assert_string_equal(whats[0], "unknown_serial");
        assert_string_equal(whats[1], "not_seen");
        assert_string_equal(whats[2], "moved");
    }
    json_decref(items);
    /* The server came back: its last-seen time moves, nothing new is
     * drift; the GPU is still in the other host. */
    snprintf(sql, sizeof sql, "UPDATE hosts SET last_seen_at = %lld WHERE id = 1", (long long)now);
    assert_int_equal(raw_exec(&f->db, sql), 0);
    assert_status(store_asset_reconcile(f->st, now + 120, &drifts), GI_OK);
    assert_int_equal(drifts, 0);
    doc = get(f->st, "SRV");
    assert_non_null(str(doc, "last_seen"));
    json_decref(doc);
}

int main(void)
{
    const struct CMUnitTest tests[] = {
        cmocka_unit_test_setup_teardown(test_ingest_creates_and_matches, testdb_setup,
                                        testdb_teardown),
        cmocka_unit_test_setup_teardown(test_source_keeps_to_its_fields, testdb_setup,
                                        testdb_teardown),
        cmocka_unit_test_setup_teardown(test_bad_field_dropped_alone, testdb_setup,
                                        testdb_teardown),
        cmocka_unit_test_setup_teardown(test_dry_run_writes_nothing, testdb_setup, testdb_teardown),
        cmocka_unit_test_setup_teardown(test_stage_moves, testdb_setup, testdb_teardown),
        cmocka_unit_test_setup_teardown(test_document_figures, testdb_setup, testdb_teardown),
        cmocka_unit_test_setup_teardown(test_reconcile_drift, testdb_setup, testdb_teardown),
    };
    return cmocka_run_group_tests(tests, NULL, NULL);
}
