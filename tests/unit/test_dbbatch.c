/* Reads run together (db_read_batch: one pipeline on PostgreSQL) and bulk
 * copies (db_copy_in: COPY on PostgreSQL), on a fresh database of either
 * store: each statement of a batch gives its own rows, a failing one fails
 * the batch and leaves the connection usable with no transaction open, a
 * batch inside a write transaction reads that transaction's rows and does
 * not end it, a copy that meets a taken key undoes only itself, and a
 * statement planned once (PostgreSQL: one generic plan) gives each
 * execution's rows alone, in a batch and deferred, and leaves the
 * session's planning as it was. */
#include "unit.h"
#include "testdb.h"

#include "core/log.h"
#include "store/db.h"
#include "store/store.h"

#include <stdint.h>
#include <string.h>

static const char sql_one[] = "SELECT CAST(:a AS BIGINT) + 1";
/* abs() of the smallest integer overflows in both databases. */
static const char sql_abs[] = "SELECT abs(CAST(:z AS BIGINT))";
static const char sql_names[] = "SELECT name FROM datacenters ORDER BY name";
static const char sql_count[] = "SELECT COUNT(*) FROM datacenters";
static const char sql_add[] = "INSERT INTO datacenters (name, location, rows_count, created_at, "
                              "updated_at) VALUES (:name, '', 0, 0, 0)";
static const char sql_once[] = "/* plan once */ SELECT name FROM datacenters WHERE name >= "
                               ":from ORDER BY name LIMIT :limit OFFSET :offset";
static const char sql_plans[] = "SELECT generic_plans, custom_plans FROM pg_prepared_statements "
                                "WHERE statement LIKE '/* plan once */%'";
static const char sql_setting[] = "SELECT current_setting(:name)";
static const char sql_copy[] =
    "COPY datacenters (name, location, rows_count, created_at, updated_at) FROM STDIN";

/* Adds data centers named names[0..n-1] in one committed transaction. */
static void add_dcs(struct store *st, const char *const *names, int n)
{
    struct conn *c = db_conn_get(st);
    int rc = db_tx_begin(c);

    for (int i = 0; rc == GI_OK && i < n; i++) {
        struct db_stmt *s = db_prep(c, sql_add);
        assert_non_null(s);
        db_bind_text(s, ":name", names[i]);
        rc = db_exec_done(c, s);
    }
    assert_status(db_tx_end(c, rc), GI_OK);
    db_conn_put(st, c);
}

static int64_t count_dcs(struct conn *c)
{
    struct db_stmt *s = db_prep(c, sql_count);
    int64_t n = -1;

    assert_non_null(s);
    assert_status(db_fetch_int(c, s, &n), GI_OK);
    return n;
}

static void test_each_statement_gives_its_rows(void **state)
{
    struct testdb_fixture *f = *state;
    static const char *const names[] = {"b-hall", "a-hall"};
    struct conn *c;
    struct db_stmt *s[3];
    int64_t v = 0;

    add_dcs(f->st, names, 2);
    c = db_conn_get(f->st);
    s[0] = db_prep(c, sql_one);
    s[1] = db_prep(c, sql_names);
    s[2] = db_prep(c, sql_count);
    db_bind_int(s[0], ":a", 41);
    assert_status(db_read_batch(c, s, 3), GI_OK);
    /* Read in another order than they ran. */
    assert_status(db_fetch_int(c, s[2], &v), GI_OK);
    assert_int_equal(v, 2);
    assert_int_equal(db_step(c, s[1]), DB_ROW);
    assert_string_equal(db_col_text(s[1], 0), "a-hall");
    assert_int_equal(db_step(c, s[1]), DB_ROW);
    assert_string_equal(db_col_text(s[1], 0), "b-hall");
    assert_int_equal(db_step(c, s[1]), DB_DONE);
    db_reset(s[1]);
    assert_status(db_fetch_int(c, s[0], &v), GI_OK);
    assert_int_equal(v, 42);
    db_read_end(c);
    /* The same statements run again, with new values. */
    s[0] = db_prep(c, sql_one);
    db_bind_int(s[0], ":a", 1);
    assert_status(db_read_batch(c, s, 1), GI_OK);
    assert_status(db_fetch_int(c, s[0], &v), GI_OK);
    assert_int_equal(v, 2);
    db_read_end(c);
    db_conn_put(f->st, c);
}

static void test_failure_leaves_connection_usable(void **state)
{
    struct testdb_fixture *f = *state;
    struct conn *c = db_conn_get(f->st);
    struct db_stmt *s[3];
    int64_t v = 0;
    int rc;

    s[0] = db_prep(c, sql_one);
    s[1] = db_prep(c, sql_abs);
    s[2] = db_prep(c, sql_count);
    db_bind_int(s[0], ":a", 1);
    db_bind_int(s[1], ":z", INT64_MIN);
    rc = db_read_batch(c, s, 3);
    if (db_dialect(c) == DB_PG) {
        assert_int_not_equal(rc, GI_OK);
    } else {
        /* SQLite runs each statement as it is stepped. */
        assert_status(rc, GI_OK);
        assert_status(db_fetch_int(c, s[0], &v), GI_OK);
        assert_int_not_equal(db_fetch_int(c, s[1], &v), GI_OK);
    }
    db_read_end(c);
    /* A write transaction can begin: no read transaction was left open. */
    assert_status(db_tx_begin(c), GI_OK);
    assert_status(db_tx_end(c, GI_OK), GI_OK);
    s[0] = db_prep(c, sql_one);
    s[1] = db_prep(c, sql_abs);
    db_bind_int(s[0], ":a", 5);
    db_bind_int(s[1], ":z", -5);
    assert_status(db_read_batch(c, s, 2), GI_OK);
    assert_status(db_fetch_int(c, s[0], &v), GI_OK);
    assert_int_equal(v, 6);
    assert_status(db_fetch_int(c, s[1], &v), GI_OK);
    assert_int_equal(v, 5);
    db_read_end(c);
    db_conn_put(f->st, c);
}

static void test_batch_inside_write_transaction(void **state)
{
    struct testdb_fixture *f = *state;
    struct conn *c = db_conn_get(f->st);
    struct db_stmt *s[2];
    int64_t v = 0;

    assert_status(db_tx_begin(c), GI_OK);
    s[0] = db_prep(c, sql_add);
    db_bind_text(s[0], ":name", "uncommitted");
    assert_status(db_exec_done(c, s[0]), GI_OK);
    s[0] = db_prep(c, sql_count);
    s[1] = db_prep(c, sql_names);
    assert_status(db_read_batch(c, s, 2), GI_OK);
    assert_status(db_fetch_int(c, s[0], &v), GI_OK);
    assert_int_equal(v, 1);
    assert_int_equal(db_step(c, s[1]), DB_ROW);
    assert_string_equal(db_col_text(s[1], 0), "uncommitted");
    db_reset(s[1]);
    db_read_end(c); /* leaves the write transaction to its owner */
    assert_status(db_tx_end(c, GI_CONFLICT), GI_CONFLICT);
    assert_int_equal(count_dcs(c), 0);
    db_conn_put(f->st, c);
}

static void test_copy_in(void **state)
{
    struct testdb_fixture *f = *state;
    static const char *const names[] = {"taken"};
    static const char rows[] = "copied-1\t\t0\t0\t0\ncopied-2\tHall \\\\ 2\t3\t0\t0\n";
    static const char clash[] = "fresh\t\t0\t0\t0\ntaken\t\t0\t0\t0\n";
    struct conn *c;
    struct db_stmt *s;
    int64_t n = -1;

    add_dcs(f->st, names, 1);
    c = db_conn_get(f->st);
    if (db_dialect(c) != DB_PG) {
        assert_status(db_tx_begin(c), GI_OK);
        assert_status(db_copy_in(c, sql_copy, rows, strlen(rows), &n), GI_INTERNAL);
        assert_status(db_tx_end(c, GI_OK), GI_OK);
        db_conn_put(f->st, c);
        return;
    }
    /* Outside a transaction a copy is refused. */
    assert_status(db_copy_in(c, sql_copy, rows, strlen(rows), &n), GI_INTERNAL);
    assert_status(db_tx_begin(c), GI_OK);
    assert_status(db_copy_in(c, sql_copy, rows, strlen(rows), &n), GI_OK);
    assert_int_equal(n, 2);
    assert_status(db_copy_in(c, sql_copy, clash, strlen(clash), &n), GI_CONFLICT);
    assert_int_equal(n, 0);
    /* The transaction goes on and keeps the first copy. */
    s = db_prep(c, sql_add);
    db_bind_text(s, ":name", "after");
    assert_status(db_exec_done(c, s), GI_OK);
    assert_status(db_tx_end(c, GI_OK), GI_OK);
    assert_int_equal(count_dcs(c), 4);
    s = db_prep(c, "SELECT location FROM datacenters WHERE name = 'copied-2'");
    assert_int_equal(db_step(c, s), DB_ROW);
    assert_string_equal(db_col_text(s, 0), "Hall \\ 2");
    db_reset(s);
    db_conn_put(f->st, c);
}

/* The page of sql_once from `from`, its names joined by commas, read
 * alone or in a batch. */
static void once_page(struct conn *c, const char *from, int limit, int offset, bool batch,
                      char *out, size_t len)
{
    struct db_stmt *s = db_prep(c, sql_once);

    assert_non_null(s);
    db_bind_text(s, ":from", from);
    db_bind_int(s, ":limit", limit);
    db_bind_int(s, ":offset", offset);
    if (batch)
        assert_status(db_read_batch(c, &s, 1), GI_OK);
    out[0] = '\0';
    while (db_step(c, s) == DB_ROW) {
        if (out[0])
            strncat(out, ",", len - strlen(out) - 1);
        strncat(out, db_col_text(s, 0), len - strlen(out) - 1);
    }
    db_reset(s);
    if (batch)
        db_read_end(c);
}

static const char *setting(struct conn *c, const char *name, char *out, size_t len)
{
    struct db_stmt *s = db_prep(c, sql_setting);

    assert_non_null(s);
    db_bind_text(s, ":name", name);
    assert_int_equal(db_step(c, s), DB_ROW);
    snprintf(out, len, "%s", db_col_text(s, 0));
    db_reset(s);
    return out;
}

static void test_planned_once(void **state)
{
    struct testdb_fixture *f = *state;
    static const char *const names[] = {"d1", "d2", "d3", "d4", "d5"};
    char page[128], val[64];
    struct conn *c;
    int rc;

    add_dcs(f->st, names, 5);
    c = db_conn_get(f->st);
    /* More executions than PostgreSQL plans for the values before it
     * weighs a generic plan, with other values each time. */
    for (int i = 0; i < 4; i++) {
        once_page(c, "d2", 2, 0, false, page, sizeof page);
        assert_string_equal(page, "d2,d3");
        once_page(c, "d1", 10, 3, true, page, sizeof page);
        assert_string_equal(page, "d4,d5");
        once_page(c, "d9", 5, 0, i % 2 == 0, page, sizeof page);
        assert_string_equal(page, "");
    }
    /* Inside a write transaction, behind a deferred write. */
    assert_status(db_tx_begin(c), GI_OK);
    assert_status(db_defer(c, true), GI_OK);
    {
        struct db_stmt *s = db_prep(c, sql_add);
        assert_non_null(s);
        db_bind_text(s, ":name", "d0");
        assert_status(db_exec_done(c, s), GI_OK);
    }
    once_page(c, "d0", 2, 0, false, page, sizeof page);
    assert_string_equal(page, "d0,d1");
    rc = db_tx_end(c, GI_CONFLICT);
    assert_status(rc, GI_CONFLICT);
    once_page(c, "d0", 2, 0, false, page, sizeof page);
    assert_string_equal(page, "d1,d2");
    if (db_dialect(c) == DB_PG) {
        struct db_stmt *s = db_prep(c, sql_plans);
        assert_non_null(s);
        assert_int_equal(db_step(c, s), DB_ROW);
        assert_true(db_col_int(s, 0) >= 1);
        assert_int_equal(db_col_int(s, 1), 0);
        db_reset(s);
        /* The setting around it does not outlive it; no JIT. */
        assert_string_equal(setting(c, "plan_cache_mode", val, sizeof val), "auto");
        assert_string_equal(setting(c, "jit", val, sizeof val), "off");
    }
    db_conn_put(f->st, c);
}

/* Parts of one writing transaction: a part that fails is undone whole
 * (its first statement too), the parts before and after it stay. */
static void test_parts(void **state)
{
    struct testdb_fixture *f = *state;
    static const char *const names[] = {"p-a"};
    const char *part2[] = {"p-b", "p-a"}; /* p-a is taken: the part fails */
    struct conn *c;
    int rc;

    add_dcs(f->st, names, 1);
    c = db_conn_get(f->st);
    assert_status(db_tx_begin(c), GI_OK);
    for (int p = 0; p < 3; p++) {
        assert_status(db_part_begin(c), GI_OK);
        rc = GI_OK;
        for (int i = 0; rc == GI_OK && i < 2; i++) {
            struct db_stmt *s = db_prep(c, sql_add);
            assert_non_null(s);
            db_bind_text(s, ":name",
                         p == 1 ? part2[i] : (p == 0 ? (i ? "p-d" : "p-c") : (i ? "p-f" : "p-e")));
            rc = db_exec_done(c, s);
        }
        assert_int_equal(db_part_end(c, rc) == GI_OK, p != 1);
    }
    assert_status(db_tx_end(c, GI_OK), GI_OK);
    assert_int_equal(count_dcs(c), 5); /* p-a, p-c, p-d, p-e, p-f; no p-b */
    db_conn_put(f->st, c);
}

int main(void)
{
    const struct CMUnitTest tests[] = {
        cmocka_unit_test_setup_teardown(test_each_statement_gives_its_rows, testdb_setup,
                                        testdb_teardown),
        cmocka_unit_test_setup_teardown(test_failure_leaves_connection_usable, testdb_setup,
                                        testdb_teardown),
        cmocka_unit_test_setup_teardown(test_batch_inside_write_transaction, testdb_setup,
                                        testdb_teardown),
        cmocka_unit_test_setup_teardown(test_copy_in, testdb_setup, testdb_teardown),
        cmocka_unit_test_setup_teardown(test_planned_once, testdb_setup, testdb_teardown),
        cmocka_unit_test_setup_teardown(test_parts, testdb_setup, testdb_teardown),
    };
    return cmocka_run_group_tests(tests, NULL, NULL);
}
