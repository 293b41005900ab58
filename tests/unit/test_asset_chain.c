/* Unit tests for the assets' audit trail (src/store/asset_events.c), on
 * both stores: appends chain each event to the one before with seqs
 * without gaps, the triggers refuse UPDATE and DELETE, and the
 * verification walk finds an altered detail, a deleted event (in the
 * middle and at the end) and two events swapped, naming the first broken
 * seq. Tampering goes around the store, as an attacker with the database
 * file would: the test drops the append-only trigger first. An event's
 * hash is the SHA-256 of its canonical string as documented (the expected
 * values were computed apart, with Python's hashlib). */
#include "unit.h"
#include "testdb.h"

#include "core/util.h"
#include "store/assets_int.h"
#include "store/store.h"

#include <string.h>

/* Runs one statement on the test's database outside the store; returns 0
 * when it succeeded. */
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

static void drop_trigger(const struct testdb *t, const char *name)
{
    char sql[160];

    if (t->name[0] != '\0')
        snprintf(sql, sizeof sql, "DROP TRIGGER %s ON asset_events", name);
    else
        snprintf(sql, sizeof sql, "DROP TRIGGER %s", name);
    assert_int_equal(raw_exec(t, sql), 0);
}

/* Three assets and a stage move: events 1..4. */
static void make_events(struct store *st)
{
    static const char *const docs[] = {
        "{\"tag\":\"A-1\",\"kind\":\"server\",\"serial\":\"S1\",\"model\":\"R760\"}",
        "{\"tag\":\"A-2\",\"kind\":\"gpu\",\"serial\":\"G1\",\"parent\":\"A-1\"}",
        "{\"kind\":\"psu\",\"custom\":{\"watts\":2000}}",
    };
    struct store_asset_err err = {0};
    char from[32], why[160];
    json_t *in, *out;

    for (size_t i = 0; i < sizeof docs / sizeof docs[0]; i++) {
        in = json_loads(docs[i], 0, NULL);
        assert_non_null(in);
        assert_status(store_asset_create(st, "alice", in, &out, &err), GI_OK);
        json_decref(out);
        json_decref(in);
    }
    assert_status(store_asset_set_stage(st, "bob", "A-2", "spare", "pulled for a swap", false, &out,
                                        from, sizeof from, why, sizeof why),
                  GI_OK);
    assert_string_equal(from, "active");
    json_decref(out);
}

static void verify(struct store *st, int64_t want_broken, int64_t want_events)
{
    struct store_chain_report rep;

    assert_status(store_asset_chain_verify(st, &rep), GI_OK);
    assert_int_equal(rep.broken_seq, want_broken);
    assert_int_equal(rep.events, want_events);
}

static void test_chain_appends(void **state)
{
    struct testdb_fixture *f = *state;
    json_t *items = NULL, *e;
    int64_t total = 0;
    const char *prev = "";
    size_t i;

    verify(f->st, 0, 0); /* an empty trail is intact */
    make_events(f->st);
    verify(f->st, 0, 4);
    assert_status(store_asset_events_range(f->st, 0, gi_now() + 10, NULL, &items, &total), GI_OK);
    assert_int_equal(total, 4);
    json_array_foreach(items, i, e) {
        assert_int_equal(json_integer_value(json_object_get(e, "seq")), (json_int_t)i + 1);
        assert_string_equal(json_string_value(json_object_get(e, "prev_hash")), prev);
        assert_int_equal(strlen(json_string_value(json_object_get(e, "hash"))), 64);
        prev = json_string_value(json_object_get(e, "hash"));
    }
    e = json_array_get(items, 3);
    assert_string_equal(json_string_value(json_object_get(e, "kind")), "stage");
    assert_string_equal(json_string_value(json_object_get(e, "actor")), "bob");
    assert_string_equal(json_string_value(json_object_get(json_object_get(e, "detail"), "reason")),
                        "pulled for a swap");
    assert_string_equal(json_string_value(json_object_get(e, "tag")), "A-2");
    assert_int_equal(testdb_scalar(&f->db, "SELECT seq FROM asset_chain WHERE id = 1"), 4);
    json_decref(items);
}

static void test_triggers_refuse_changes(void **state)
{
    struct testdb_fixture *f = *state;

    make_events(f->st);
    assert_int_not_equal(raw_exec(&f->db, "UPDATE asset_events SET actor = 'mallory'"), 0);
    assert_int_not_equal(raw_exec(&f->db, "DELETE FROM asset_events WHERE seq = 2"), 0);
    assert_int_equal(testdb_scalar(&f->db, "SELECT COUNT(*) FROM asset_events"), 4);
    verify(f->st, 0, 4);
}

static void test_tampered_detail(void **state)
{
    struct testdb_fixture *f = *state;

    make_events(f->st);
    drop_trigger(&f->db, "asset_events_no_update");
    assert_int_equal(raw_exec(&f->db, "UPDATE asset_events SET detail = '{\"model\":\"X\"}' "
                                      "WHERE seq = 2"),
                     0);
    verify(f->st, 2, 4);
}

static void test_altered_hash(void **state)
{
    struct testdb_fixture *f = *state;

    /* A stored hash altered: it no longer matches its event. */
    make_events(f->st);
    drop_trigger(&f->db, "asset_events_no_update");
    assert_int_equal(
        raw_exec(&f->db, "UPDATE asset_events SET hash = 'ab' || substr(hash, 3) WHERE seq = 3"),
        0);
    verify(f->st, 3, 4);
}

static void test_deleted_event(void **state)
{
    struct testdb_fixture *f = *state;

    make_events(f->st);
    drop_trigger(&f->db, "asset_events_no_delete");
    assert_int_equal(raw_exec(&f->db, "DELETE FROM asset_events WHERE seq = 2"), 0);
    verify(f->st, 2, 3);
}

static void test_deleted_last_event(void **state)
{
    struct testdb_fixture *f = *state;

    make_events(f->st);
    drop_trigger(&f->db, "asset_events_no_delete");
    assert_int_equal(raw_exec(&f->db, "DELETE FROM asset_events WHERE seq = 4"), 0);
    verify(f->st, 4, 3);
}

static void test_reordered_events(void **state)
{
    struct testdb_fixture *f = *state;

    make_events(f->st);
    drop_trigger(&f->db, "asset_events_no_update");
    assert_int_equal(raw_exec(&f->db, "UPDATE asset_events SET seq = 100 WHERE seq = 2"), 0);
    assert_int_equal(raw_exec(&f->db, "UPDATE asset_events SET seq = 2 WHERE seq = 3"), 0);
    assert_int_equal(raw_exec(&f->db, "UPDATE asset_events SET seq = 3 WHERE seq = 100"), 0);
    verify(f->st, 2, 4);
}

static void test_appends_after_verify_continue_chain(void **state)
{
    struct testdb_fixture *f = *state;
    struct store_asset_err err = {0};
    json_t *patch = json_pack("{s:s}", "model", "R770"), *out = NULL, *items = NULL;
    int64_t total = 0, id = 0;

    make_events(f->st);
    assert_status(store_asset_update(f->st, "carol", "A-1", patch, &out, &err), GI_OK);
    verify(f->st, 0, 5);
    assert_status(store_asset_id(f->st, "A-1", &id), GI_OK);
    assert_status(store_asset_events(f->st, id, NULL, &items, &total), GI_OK);
    assert_int_equal(total, 2);
    /* Newest first: the update with the field's old and new value. */
    assert_string_equal(json_string_value(json_object_get(json_array_get(items, 0), "kind")),
                        "updated");
    assert_string_equal(
        json_string_value(json_array_get(
            json_object_get(json_object_get(json_array_get(items, 0), "detail"), "model"), 1)),
        "R770");
    json_decref(items);
    json_decref(out);
    json_decref(patch);
}

static void test_canonical_hash(void **state)
{
    char hex[ASSET_HASH_HEX], prev[65], big[3001];
    static const char detail[] = "{\"from\":\"active\",\"to\":\"spare\"}";

    (void)state;
    for (int i = 0; i < 32; i++)
        memcpy(prev + 2 * i, "ab", 2);
    prev[64] = '\0';
    assert_int_equal(asset_event_hash(7, -42, 1796305408, "stage", "ops \xc3\xa9", detail,
                                      strlen(detail), prev, hex),
                     GI_OK);
    assert_string_equal(hex, "aac65fcc82a4c24eababb60b22efe6f27ce9d4535b2cef5499379699382b710b");
    /* A detail longer than the hash's gathering buffer, empty fields. */
    memset(big, 'D', 3000);
    big[3000] = '\0';
    assert_int_equal(asset_event_hash(1, 0, 0, "x", "", big, 3000, "", hex), GI_OK);
    assert_string_equal(hex, "1304e24d42a6c06fab5720151832552e8832e607334455baec1b6032d7a5a92f");
}

int main(void)
{
    const struct CMUnitTest tests[] = {
        cmocka_unit_test(test_canonical_hash),
        cmocka_unit_test_setup_teardown(test_chain_appends, testdb_setup, testdb_teardown),
        cmocka_unit_test_setup_teardown(test_triggers_refuse_changes, testdb_setup,
                                        testdb_teardown),
        cmocka_unit_test_setup_teardown(test_tampered_detail, testdb_setup, testdb_teardown),
        cmocka_unit_test_setup_teardown(test_altered_hash, testdb_setup, testdb_teardown),
        cmocka_unit_test_setup_teardown(test_deleted_event, testdb_setup, testdb_teardown),
        cmocka_unit_test_setup_teardown(test_deleted_last_event, testdb_setup, testdb_teardown),
        cmocka_unit_test_setup_teardown(test_reordered_events, testdb_setup, testdb_teardown),
        cmocka_unit_test_setup_teardown(test_appends_after_verify_continue_chain, testdb_setup,
                                        testdb_teardown),
    };
    return cmocka_run_group_tests(tests, NULL, NULL);
}
