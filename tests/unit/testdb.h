/* A fresh, empty store for a unit test, on SQLite or on PostgreSQL.
 *
 * Without GPUINV_TEST_PG the store is a SQLite file in a new temporary
 * directory. With it, each store is a newly created PostgreSQL database
 * gi_<random hex> on the server GPUINV_TEST_PG names: either a libpq URL
 * without a database name (postgresql://gpuinv@/?host=/tmp/gipg.abc123) or
 * a directory holding such a URL in its file `conninfo` (what
 * tests/lib/pg.sh start writes). The databases are made and dropped with
 * psql, so nothing here needs libpq.
 *
 * A unit test that includes this header is registered a second time, as
 * unit-pg/<name>, with GPUINV_TEST_PG set (see CMakeLists.txt). Include
 * unit.h first. */
#ifndef GI_TESTDB_H
#define GI_TESTDB_H

#include "core/log.h"
#include "core/util.h"
#include "store/store.h"

#include <errno.h>
#include <fcntl.h>
#include <spawn.h>
#include <sqlite3.h>
#include <stdarg.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/random.h>
#include <sys/wait.h>
#include <unistd.h>

extern char **environ;

struct testdb {
    char dir[256];      /* SQLite: the temporary directory; empty on PostgreSQL */
    char locator[1024]; /* what store_open takes: the file's path or the database's URL */
    char admin[1024];   /* PostgreSQL: the URL of the maintenance database "postgres" */
    char name[40];      /* PostgreSQL: the database's name */
};

/* Whether the unit tests run on PostgreSQL (GPUINV_TEST_PG is set). */
static inline int testdb_on_pg(void)
{
    const char *v = getenv("GPUINV_TEST_PG");
    return v != NULL && *v != '\0';
}

/* The URL base from GPUINV_TEST_PG into out (a URL is taken as it is, a
 * directory's `conninfo` file is read, its trailing newline dropped).
 * Returns 0, or -1 with a message on stderr. */
static inline int testdb_pg_base(char *out, size_t size)
{
    const char *v = getenv("GPUINV_TEST_PG");
    char path[1024];
    FILE *f;
    size_t n;

    if (strncmp(v, "postgres://", 11) == 0 || strncmp(v, "postgresql://", 13) == 0) {
        if ((size_t)snprintf(out, size, "%s", v) >= size)
            return -1;
        return 0;
    }
    snprintf(path, sizeof path, "%s/conninfo", v);
    f = fopen(path, "r");
    if (f == NULL) {
        fprintf(stderr, "testdb: cannot read %s: %s\n", path, strerror(errno));
        return -1;
    }
    n = fread(out, 1, size - 1, f);
    fclose(f);
    out[n] = '\0';
    while (n > 0 && (out[n - 1] == '\n' || out[n - 1] == '\r' || out[n - 1] == ' '))
        out[--n] = '\0';
    return n > 0 ? 0 : -1;
}

/* base with its database name replaced by name, into out: the part after
 * the authority (postgresql://[user@][host][:port]) up to the query is the
 * database; the query (?host=...) is kept. Returns 0, or -1 when out is
 * too small or base is not a URL. */
static inline int testdb_pg_url(const char *base, const char *name, char *out, size_t size)
{
    const char *auth = strstr(base, "://");
    const char *query, *end;
    int n;

    if (auth == NULL)
        return -1;
    auth += 3;
    query = strchr(auth, '?');
    if (query == NULL)
        query = base + strlen(base);
    end = memchr(auth, '/', (size_t)(query - auth));
    if (end == NULL)
        end = query;
    n = snprintf(out, size, "%.*s/%s%s", (int)(end - base), base, name, query);
    return n < 0 || (size_t)n >= size ? -1 : 0;
}

/* Runs psql -X -q -A -t -v ON_ERROR_STOP=1 -d url -c sql. Its output goes
 * into out (NUL-terminated, cut at size - 1) when out is not NULL; its
 * errors go to stderr. Returns psql's exit status, or -1 when it could not
 * be run. */
static inline int testdb_psql(const char *url, const char *sql, char *out, size_t size)
{
    char *argv[] = {"psql", "-X",        "-q", "-A",        "-t", "-v", "ON_ERROR_STOP=1",
                    "-d",   (char *)url, "-c", (char *)sql, NULL};
    posix_spawn_file_actions_t fa;
    int fds[2] = {-1, -1}, status = 0, rc;
    size_t len = 0;
    pid_t pid;

    if (pipe(fds) != 0)
        return -1;
    posix_spawn_file_actions_init(&fa);
    posix_spawn_file_actions_adddup2(&fa, fds[1], STDOUT_FILENO);
    posix_spawn_file_actions_addclose(&fa, fds[0]);
    posix_spawn_file_actions_addclose(&fa, fds[1]);
    rc = posix_spawnp(&pid, "psql", &fa, NULL, argv, environ);
    posix_spawn_file_actions_destroy(&fa);
    close(fds[1]);
    if (rc != 0) {
        fprintf(stderr, "testdb: cannot run psql: %s\n", strerror(rc));
        close(fds[0]);
        return -1;
    }
    for (;;) {
        char buf[512];
        ssize_t got = read(fds[0], buf, sizeof buf);
        if (got < 0 && errno == EINTR)
            continue;
        if (got <= 0)
            break;
        if (out != NULL && len + 1 < size) {
            size_t take = (size_t)got < size - 1 - len ? (size_t)got : size - 1 - len;
            memcpy(out + len, buf, take);
            len += take;
        }
    }
    close(fds[0]);
    if (out != NULL && size > 0)
        out[len] = '\0';
    while (waitpid(pid, &status, 0) < 0) {
        if (errno != EINTR)
            return -1;
    }
    return WIFEXITED(status) ? WEXITSTATUS(status) : -1;
}

/* Removes what test_store_open made: the SQLite file with its WAL and
 * shared-memory files and its directory, or the PostgreSQL database. Call
 * after store_close; a second call does nothing. */
static inline void testdb_remove(struct testdb *t)
{
    if (t->name[0] != '\0') {
        char sql[80];

        snprintf(sql, sizeof sql, "DROP DATABASE IF EXISTS %s WITH (FORCE)", t->name);
        testdb_psql(t->admin, sql, NULL, 0);
    } else if (t->dir[0] != '\0') {
        static const char *const suffix[] = {"", "-wal", "-shm"};

        for (int i = 0; i < 3; i++) {
            char p[1300];
            snprintf(p, sizeof p, "%s%s", t->locator, suffix[i]);
            unlink(p);
        }
        rmdir(t->dir);
    }
    memset(t, 0, sizeof *t);
}

/* Creates a fresh database (see the top of this file), records where it
 * is in *t and opens it with a pool of `pool` connections into *st.
 * Returns 0, or -1 with *st untouched (and nothing left behind). */
static inline int test_store_open(struct testdb *t, int pool, struct store **st)
{
    memset(t, 0, sizeof *t);
    if (testdb_on_pg()) {
        char base[1024], sql[80];
        unsigned char rnd[8];

        if (testdb_pg_base(base, sizeof base) != 0 ||
            getrandom(rnd, sizeof rnd, 0) != (ssize_t)sizeof rnd)
            return -1;
        snprintf(t->name, sizeof t->name, "gi_");
        for (size_t i = 0; i < sizeof rnd; i++)
            snprintf(t->name + 3 + 2 * i, 3, "%02x", rnd[i]);
        if (testdb_pg_url(base, "postgres", t->admin, sizeof t->admin) != 0 ||
            testdb_pg_url(base, t->name, t->locator, sizeof t->locator) != 0)
            return -1;
        snprintf(sql, sizeof sql, "CREATE DATABASE %s", t->name);
        if (testdb_psql(t->admin, sql, NULL, 0) != 0) {
            memset(t, 0, sizeof *t);
            return -1;
        }
    } else {
        const char *tmp = getenv("TMPDIR");

        snprintf(t->dir, sizeof t->dir, "%s/gi-store-XXXXXX", tmp && *tmp ? tmp : "/tmp");
        if (mkdtemp(t->dir) == NULL) {
            t->dir[0] = '\0';
            return -1;
        }
        snprintf(t->locator, sizeof t->locator, "%s/test.db", t->dir);
    }
    if (store_open(t->locator, pool, st) != GI_OK) {
        fprintf(stderr, "testdb: cannot open the store on %s\n", t->locator);
        testdb_remove(t);
        return -1;
    }
    return 0;
}

/* The integer that sql (one row, one column) answers on the test's
 * database, read outside the store: through SQLite itself or psql. Fails
 * the test when the query does not answer one integer. */
static inline int64_t testdb_scalar(const struct testdb *t, const char *sql)
{
    int64_t n = 0;

    if (t->name[0] != '\0') {
        char out[64];
        char *end = NULL;

        if (testdb_psql(t->locator, sql, out, sizeof out) != 0)
            fail_msg("psql failed on: %s", sql);
        errno = 0;
        n = strtoll(out, &end, 10);
        if (errno != 0 || end == out || (*end != '\0' && *end != '\n'))
            fail_msg("not an integer from %s: %s", sql, out);
    } else {
        sqlite3 *db = NULL;
        sqlite3_stmt *s = NULL;

        if (sqlite3_open_v2(t->locator, &db, SQLITE_OPEN_READONLY, NULL) != SQLITE_OK ||
            sqlite3_prepare_v2(db, sql, -1, &s, NULL) != SQLITE_OK || sqlite3_step(s) != SQLITE_ROW)
            fail_msg("sqlite3 failed on %s: %s", sql, sqlite3_errmsg(db));
        n = sqlite3_column_int64(s, 0);
        sqlite3_finalize(s);
        sqlite3_close(db);
    }
    return n;
}

/* The usual cmocka fixture: a fresh store (pool of 2) per test, in
 * *state as a struct testdb_fixture; teardown closes and removes it. */
struct testdb_fixture {
    struct testdb db;
    struct store *st;
};

#ifdef fail_msg
/* Runs SQL (one or more statements) on the test database t outside the
 * store; a failure fails the test. */
static inline void testdb_exec_on(const struct testdb *t, const char *sql)
{
    if (t->name[0] != '\0') {
        if (testdb_psql(t->locator, sql, NULL, 0) != 0)
            fail_msg("psql failed on: %.200s", sql);
    } else {
        sqlite3 *db = NULL;
        if (sqlite3_open(t->locator, &db) != SQLITE_OK ||
            sqlite3_exec(db, sql, NULL, NULL, NULL) != SQLITE_OK)
            fail_msg("sqlite3 failed on %.200s: %s", sql, sqlite3_errmsg(db));
        sqlite3_close(db);
    }
}

/* The same on the fixture's database. */
static inline void testdb_exec(struct testdb_fixture *f, const char *sql)
{
    testdb_exec_on(&f->db, sql);
}

/* Runs the usage rollup to the end: no dirty hour and no hour whose
 * group sums wait. */
static inline void testdb_rollup_summed(struct testdb_fixture *f)
{
    struct store_usage_run run;

    assert_status(store_usage_rollup(f->st, NULL, gi_now(), 0, &run), GI_OK);
    assert_int_equal(run.dirty_left, 0);
    assert_int_equal(run.groups_left, 0);
}

/* Marks gpu's hour dirty, so that the next rollup sums its day again. */
static inline void testdb_mark_dirty(struct testdb_fixture *f, int64_t gpu, int64_t hour)
{
    char sql[160];

    snprintf(sql, sizeof sql,
             "INSERT INTO usage_dirty (hour, gpu_id, marked_at) VALUES (%lld, %lld, 1)",
             (long long)hour, (long long)gpu);
    testdb_exec(f, sql);
}

/* SQL text gathered by testdb_sql_add() and run in one go by
 * testdb_sql_run() (start from {0}). */
struct testdb_sql {
    char *p;
    size_t len, cap;
};

/* Appends to q; one call adds less than 1,024 bytes. */
static inline void testdb_sql_add(struct testdb_sql *q, const char *fmt, ...)
    __attribute__((format(printf, 2, 3)));
static inline void testdb_sql_add(struct testdb_sql *q, const char *fmt, ...)
{
    va_list ap;
    int n;

    if (q->cap - q->len < 1024) {
        q->cap = q->cap ? q->cap * 2 : 65536;
        q->p = realloc(q->p, q->cap);
        if (q->p == NULL)
            fail_msg("out of memory");
    }
    va_start(ap, fmt);
    n = vsnprintf(q->p + q->len, q->cap - q->len, fmt, ap);
    va_end(ap);
    if (n <= 0 || (size_t)n >= q->cap - q->len)
        fail_msg("testdb_sql_add: %d bytes do not fit", n);
    q->len += (size_t)n;
}

/* Runs q on t (testdb_exec_on) and empties it. */
static inline void testdb_sql_run(const struct testdb *t, struct testdb_sql *q)
{
    testdb_exec_on(t, q->p ? q->p : "");
    free(q->p);
    memset(q, 0, sizeof *q);
}

/* Idle samples of gpu (utilization 0, 100 W, source 7) every step seconds
 * over the hours [from, to), but the two hours from skip on (0: none),
 * each hour marked dirty as ingest would. */
static inline void testdb_idle_hours(const struct testdb *t, int64_t gpu, int64_t from, int64_t to,
                                     int64_t step, int64_t skip)
{
    struct testdb_sql s = {0}, d = {0};
    bool first = true;

    testdb_sql_add(
        &s, "INSERT INTO gpu_samples (ts, gpu_id, util_avg, power_avg_w, source_id) VALUES ");
    testdb_sql_add(&d, "INSERT INTO usage_dirty (hour, gpu_id, marked_at) VALUES ");
    for (int64_t h = from; h < to; h += 3600) {
        if (skip && (h == skip || h == skip + 3600))
            continue;
        for (int64_t ts = h; ts < h + 3600; ts += step)
            testdb_sql_add(&s, "%s(%lld, %lld, 0, 100, 7)", first && ts == h ? "" : ", ",
                           (long long)ts, (long long)gpu);
        testdb_sql_add(&d, "%s(%lld, %lld, 1)", first ? "" : ", ", (long long)h, (long long)gpu);
        first = false;
    }
    testdb_sql_run(t, &s);
    testdb_sql_run(t, &d);
}
#endif

static inline int testdb_setup(void **state)
{
    struct testdb_fixture *f = calloc(1, sizeof *f);

    if (f == NULL)
        return -1;
    gi_log_set_level(GI_LOG_WARN);
    if (test_store_open(&f->db, 2, &f->st) != 0) {
        free(f);
        return -1;
    }
    *state = f;
    return 0;
}

static inline int testdb_teardown(void **state)
{
    struct testdb_fixture *f = *state;

    store_close(f->st);
    testdb_remove(&f->db);
    free(f);
    return 0;
}

#endif
