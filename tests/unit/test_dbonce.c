/* The store's statements built at run time (db_prep_once), rows read
 * with their stored types (db_row_values), and the copy's refusal of
 * anything but SQLite into PostgreSQL; on SQLite. */
#include "unit.h"

#include "core/log.h"
#include "store/db.h"
#include "store/store.h"

#include <jansson.h>
#include <string.h>

struct fixture {
    char dir[256];
    char path[300];
    struct store *st;
};

static int setup(void **state)
{
    struct fixture *f = calloc(1, sizeof *f);
    const char *tmp = getenv("TMPDIR");

    if (f == NULL)
        return -1;
    snprintf(f->dir, sizeof f->dir, "%s/gi-dbonce-XXXXXX", tmp && *tmp ? tmp : "/tmp");
    if (mkdtemp(f->dir) == NULL) {
        free(f);
        return -1;
    }
    snprintf(f->path, sizeof f->path, "%s/test.db", f->dir);
    gi_log_set_level(GI_LOG_WARN);
    if (store_open(f->path, 1, &f->st) != GI_OK) {
        free(f);
        return -1;
    }
    *state = f;
    return 0;
}

static int teardown(void **state)
{
    struct fixture *f = *state;

    store_close(f->st);
    unit_db_remove(f->path, f->dir);
    free(f);
    return 0;
}

/* Two texts built in the same buffer, one after the other, are two
 * statements: nothing is cached by the buffer's address. */
static void test_prep_once_builds_each_text(void **state)
{
    struct fixture *f = *state;
    struct conn *c = db_conn_get(f->st);
    char sql[128];
    int64_t v = 0;

    for (int i = 1; i <= 3; i++) {
        struct db_stmt *s;
        snprintf(sql, sizeof sql, "SELECT %d * :k", i * 10);
        s = db_prep_once(c, sql);
        assert_non_null(s);
        db_bind_int(s, ":k", 2);
        assert_status(db_fetch_int(c, s, &v), GI_OK);
        assert_int_equal(v, i * 20);
        db_stmt_free(s);
    }
    assert_null(db_prep_once(c, "SELECT FROM WHERE"));
    db_stmt_free(NULL);
    db_conn_put(f->st, c);
}

/* Each value keeps the type it is stored with: no *_at conversion, no
 * JSON parsing of JSON-looking text. */
static void test_row_values_keep_types(void **state)
{
    struct fixture *f = *state;
    struct conn *c = db_conn_get(f->st);
    struct db_stmt *s =
        db_prep_once(c, "SELECT 1700000000 AS created_at, 2.5 AS r, "
                        "'{\"a\":1}' AS metadata, NULL AS n, 'x' || char(233) AS t");
    json_t *row;

    assert_non_null(s);
    assert_int_equal(db_step(c, s), DB_ROW);
    row = db_row_values(s);
    assert_non_null(row);
    assert_int_equal(json_array_size(row), 5);
    assert_true(json_is_integer(json_array_get(row, 0)));
    assert_int_equal(json_integer_value(json_array_get(row, 0)), 1700000000);
    assert_true(json_is_real(json_array_get(row, 1)));
    assert_true(json_real_value(json_array_get(row, 1)) == 2.5);
    assert_string_equal(json_string_value(json_array_get(row, 2)), "{\"a\":1}");
    assert_true(json_is_null(json_array_get(row, 3)));
    assert_string_equal(json_string_value(json_array_get(row, 4)), "x\xc3\xa9");
    json_decref(row);
    db_reset(s);
    db_stmt_free(s);

    /* Text that is not UTF-8 has no JSON form. */
    s = db_prep_once(c, "SELECT CAST(x'ff00' AS TEXT)");
    assert_non_null(s);
    assert_int_equal(db_step(c, s), DB_ROW);
    assert_null(db_row_values(s));
    db_reset(s);
    db_stmt_free(s);
    db_conn_put(f->st, c);
}

/* The copy goes from SQLite to PostgreSQL only, and says so. */
static void test_copy_refuses_sqlite_target(void **state)
{
    struct fixture *f = *state;
    struct store_copy_report rep;
    struct store *other = NULL;
    char path[400];

    assert_status(store_copy(f->st, f->st, true, NULL, &rep), GI_INVALID);
    assert_non_null(strstr(rep.error, "two databases"));
    snprintf(path, sizeof path, "%s/other.db", f->dir);
    assert_status(store_open(path, 1, &other), GI_OK);
    assert_status(store_copy(f->st, other, false, NULL, &rep), GI_INVALID);
    assert_non_null(strstr(rep.error, "SQLite database to a PostgreSQL one"));
    store_close(other);
    unlink(path);
    snprintf(path, sizeof path, "%s/other.db-wal", f->dir);
    unlink(path);
    snprintf(path, sizeof path, "%s/other.db-shm", f->dir);
    unlink(path);
    assert_true(store_is_pg_target("postgresql://u@h/db"));
    assert_true(store_is_pg_target("postgres://u@h/db"));
    assert_true(store_is_pg_target("host=/tmp dbname=x"));
    assert_false(store_is_pg_target("/var/lib/gpuinv/gpuinv.db"));
    assert_false(store_is_pg_target("gpuinv.db"));
}

int main(void)
{
    const struct CMUnitTest tests[] = {
        cmocka_unit_test_setup_teardown(test_prep_once_builds_each_text, setup, teardown),
        cmocka_unit_test_setup_teardown(test_row_values_keep_types, setup, teardown),
        cmocka_unit_test_setup_teardown(test_copy_refuses_sqlite_target, setup, teardown),
    };
    return cmocka_run_group_tests(tests, NULL, NULL);
}
