/* Unit tests for the drift "a serial changed under the same slot"
 * (src/store/asset_reconcile.c), on both stores: a newer GPU at the same
 * host and PCI bus id as an asset's GPU, or the GPU of the asset's UUID
 * reporting another serial, is a serial_changed drift on the asset of the
 * old serial and on the asset of the new one; the same bus id in another
 * host is no slot change; each drift is recorded once. */
#include "unit.h"
#include "testdb.h"

#include "core/util.h"
#include "store/store.h"

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

static void mk_asset(struct store *st, const char *tag, const char *serial, const char *uuid)
{
    struct store_asset_err err = {0};
    json_t *in = json_pack("{s:s, s:s, s:s}", "tag", tag, "kind", "gpu", "serial", serial);
    json_t *doc = NULL;

    assert_status(store_asset_create(st, "t", in, &doc, &err), GI_OK);
    assert_string_equal(json_string_value(json_object_get(doc, "gpu_uuid")), uuid);
    json_decref(doc);
    json_decref(in);
}

/* The serial_changed drifts of the asset tagged tag with this role. */
static int64_t drifts_of(const struct testdb *t, const char *tag, const char *role)
{
    char sql[512];
    snprintf(sql, sizeof sql,
             "SELECT COUNT(*) FROM asset_events WHERE kind = 'drift' AND asset_id = (SELECT id "
             "FROM assets WHERE tag = '%s') AND detail LIKE '%%\"what\":\"serial_changed\"%%' AND "
             "detail LIKE '%%\"role\":\"%s\"%%'",
             tag, role);
    return testdb_scalar(t, sql);
}

static void test_serial_changed_under_slot(void **state)
{
    struct testdb_fixture *f = *state;
    int64_t now = gi_now(), before = now - 3600, drifts = -1;
    json_t *items = NULL, *e;
    int64_t total = 0;
    char sql[2048];
    size_t i;
    bool seen = false;

    snprintf(sql, sizeof sql,
             "INSERT INTO hosts (id, hostname, first_seen_at, last_seen_at) VALUES "
             "(1, 'node-a', %lld, %lld), (2, 'node-b', %lld, %lld);"
             "INSERT INTO gpus (uuid, serial, host_id, idx, pci_bus_id, first_seen_at, "
             "last_seen_at) VALUES "
             "('GPU-1', 'GS1', 1, 0, '00000000:17:00.0', %lld, %lld),"
             "('GPU-2', 'GS2', 1, 0, '00000000:17:00.0', %lld, %lld),"
             "('GPU-3', 'GS3', 1, 1, '00000000:2A:00.0', %lld, %lld),"
             "('GPU-4', 'GS4', 2, 1, '00000000:2A:00.0', %lld, %lld)",
             (long long)before, (long long)now, (long long)before, (long long)now,
             (long long)before, (long long)before, (long long)now, (long long)now,
             (long long)before, (long long)before, (long long)now, (long long)now);
    assert_int_equal(raw_exec(&f->db, sql), 0);
    mk_asset(f->st, "G1", "GS1", "GPU-1");
    mk_asset(f->st, "G2", "GS2", "GPU-2");
    mk_asset(f->st, "G3", "GS3", "GPU-3");
    mk_asset(f->st, "G4", "GS4", "GPU-4");

    /* GS2 now answers where GS1 was (node-a, bus 17): on G1 (old) and G2
     * (new). GPU-4 at bus 2A of node-b is another slot than G3's. */
    assert_status(store_asset_reconcile(f->st, now, &drifts), GI_OK);
    assert_int_equal(drifts, 2);
    assert_int_equal(drifts_of(&f->db, "G1", "old"), 1);
    assert_int_equal(drifts_of(&f->db, "G2", "new"), 1);
    assert_int_equal(drifts_of(&f->db, "G3", "old"), 0);
    assert_int_equal(drifts_of(&f->db, "G4", "new"), 0);
    assert_status(store_asset_events_range(f->st, 0, now + 3600, NULL, &items, &total), GI_OK);
    json_array_foreach(items, i, e) {
        json_t *d = json_object_get(e, "detail");
        const char *role = json_string_value(json_object_get(d, "role"));
        if (!role || strcmp(role, "old") != 0)
            continue;
        seen = true;
        assert_string_equal(json_string_value(json_object_get(d, "recorded_serial")), "GS1");
        assert_string_equal(json_string_value(json_object_get(d, "seen_serial")), "GS2");
        assert_string_equal(json_string_value(json_object_get(d, "gpu_uuid")), "GPU-2");
        assert_string_equal(json_string_value(json_object_get(d, "other_asset")), "G2");
        assert_string_equal(json_string_value(json_object_get(json_object_get(d, "slot"), "host")),
                            "node-a");
        assert_string_equal(
            json_string_value(json_object_get(json_object_get(d, "slot"), "pci_bus_id")),
            "00000000:17:00.0");
    }
    assert_true(seen);
    json_decref(items);
    /* Recorded once. */
    assert_status(store_asset_reconcile(f->st, now + 60, &drifts), GI_OK);
    assert_int_equal(drifts, 0);

    /* A placeholder UUID kept by the slot: GPU-3 now reports serial GS9,
     * which no asset has: G3 alone. */
    assert_int_equal(raw_exec(&f->db, "UPDATE gpus SET serial = 'GS9' WHERE uuid = 'GPU-3'"), 0);
    assert_status(store_asset_reconcile(f->st, now + 120, &drifts), GI_OK);
    assert_int_equal(drifts_of(&f->db, "G3", "old"), 1);
    assert_int_equal(testdb_scalar(&f->db, "SELECT COUNT(*) FROM asset_events WHERE kind = "
                                           "'drift' AND detail LIKE '%\"role\":\"new\"%'"),
                     1);
    assert_status(store_asset_reconcile(f->st, now + 180, &drifts), GI_OK);
    assert_int_equal(drifts, 0);
}

int main(void)
{
    const struct CMUnitTest tests[] = {
        cmocka_unit_test_setup_teardown(test_serial_changed_under_slot, testdb_setup,
                                        testdb_teardown),
    };
    return cmocka_run_group_tests(tests, NULL, NULL);
}
