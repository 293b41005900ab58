/* The SQLite driver under db.c: connections with the pragmas every one
 * needs, a statement cache keyed by the SQL text's address, and the
 * mapping of SQLite's result codes onto the program's statuses. */
#include "core/log.h"
#include "core/status.h"
#include "store/db_driver.h"

#include <errno.h>
#include <pthread.h>
#include <sqlite3.h>
#include <stdlib.h>
#include <string.h>

/* Statements a connection caches; the store's SQL stays well below. */
#define SQ_SLOTS 1024

struct sq_stmt {
    struct db_stmt base;
    sqlite3_stmt *raw;
};

struct sq_slot {
    const char *sql; /* the key: a static string's address */
    struct sq_stmt st;
};

struct sq_conn {
    struct conn base;
    sqlite3 *db;
    struct sq_slot slots[SQ_SLOTS];
};

static sqlite3_stmt *raw(struct db_stmt *s) { return ((struct sq_stmt *)s)->raw; }

static sqlite3 *handle(struct conn *c) { return ((struct sq_conn *)c)->db; }

/* Maps an SQLite result code to a program status, logging the unexpected. */
static int map_rc(sqlite3 *db, int rc)
{
    switch (rc & 0xff) {
    case SQLITE_OK:
    case SQLITE_DONE:
    case SQLITE_ROW:
        return GI_OK;
    case SQLITE_BUSY:
    case SQLITE_LOCKED:
        return GI_UNAVAILABLE;
    case SQLITE_CONSTRAINT:
        if (rc == SQLITE_CONSTRAINT_FOREIGNKEY)
            return GI_NOT_FOUND;
        if (rc == SQLITE_CONSTRAINT_UNIQUE || rc == SQLITE_CONSTRAINT_PRIMARYKEY)
            return GI_CONFLICT;
        break; /* NOT NULL, CHECK: a value the code should never have bound */
    case SQLITE_TOOBIG:
        return GI_TOO_LARGE;
    case SQLITE_FULL:
        gi_warn("sqlite: the database's disk is full (%s)",
                db ? sqlite3_errmsg(db) : sqlite3_errstr(rc));
        return GI_NO_SPACE;
    case SQLITE_IOERR:
        /* Growing the WAL or its index can fail this way on a full disk. */
        if (db && (sqlite3_system_errno(db) == ENOSPC || sqlite3_system_errno(db) == EDQUOT)) {
            gi_warn("sqlite: the database's disk is full (%s, %d)", sqlite3_errmsg(db), rc);
            return GI_NO_SPACE;
        }
        break;
    }
    gi_error("sqlite: %s (%d)", db ? sqlite3_errmsg(db) : sqlite3_errstr(rc), rc);
    return GI_INTERNAL;
}

static void sq_close(struct conn *bc)
{
    struct sq_conn *c = (struct sq_conn *)bc;

    if (c == NULL)
        return;
    for (int i = 0; i < SQ_SLOTS; i++)
        sqlite3_finalize(c->slots[i].st.raw);
    sqlite3_close_v2(c->db);
    free(c);
}

static int sq_exec(struct conn *c, const char *sql)
{
    char *err = NULL;
    int rc = sqlite3_exec(handle(c), sql, NULL, NULL, &err);

    if (rc != SQLITE_OK && err)
        gi_error("sqlite: %s in: %.120s", err, sql);
    sqlite3_free(err);
    return map_rc(handle(c), rc);
}

/* Before SQLite's first use: no count of the memory it holds, which
 * otherwise takes a process-wide mutex at every allocation and free (the
 * store never reads the count). Too late once a connection is open, which
 * SQLite refuses harmlessly. */
static void sq_configure(void) { sqlite3_config(SQLITE_CONFIG_MEMSTATUS, 0); }

/* Opens one connection with the pragmas every connection needs. */
static int sq_open(const char *path, struct conn **out)
{
    static pthread_once_t configured = PTHREAD_ONCE_INIT;
    struct sq_conn *c;
    int rc;

    pthread_once(&configured, sq_configure);
    if ((c = calloc(1, sizeof *c)) == NULL)
        return GI_INTERNAL;
    c->base.drv = &db_sqlite_driver;
    c->base.dialect = DB_SQLITE;
    rc = sqlite3_open_v2(path, &c->db,
                         SQLITE_OPEN_READWRITE | SQLITE_OPEN_CREATE | SQLITE_OPEN_NOMUTEX, NULL);
    if (rc != SQLITE_OK) {
        gi_error("cannot open database %s: %s", path, c->db ? sqlite3_errmsg(c->db) : "no memory");
        sq_close(&c->base);
        return GI_UNAVAILABLE;
    }
    /* Extended codes tell a foreign-key or unique violation from others. */
    sqlite3_extended_result_codes(c->db, 1);
    sqlite3_busy_timeout(c->db, 5000);
    rc = sq_exec(&c->base,
                 "PRAGMA journal_mode=WAL; PRAGMA foreign_keys=ON; PRAGMA synchronous=NORMAL;");
    if (rc != GI_OK) {
        sq_close(&c->base);
        return rc;
    }
    *out = &c->base;
    return GI_OK;
}

/* Open addressing on the text's address: statements are static strings,
 * so the address is the identity and no text is compared. */
static struct db_stmt *sq_prep(struct conn *bc, const char *sql)
{
    struct sq_conn *c = (struct sq_conn *)bc;
    uintptr_t h = ((uintptr_t)sql >> 3) * (uintptr_t)0x9E3779B97F4A7C15ull;
    size_t i = (size_t)(h >> 20) & (SQ_SLOTS - 1);

    for (size_t probe = 0; probe < SQ_SLOTS; probe++, i = (i + 1) & (SQ_SLOTS - 1)) {
        struct sq_slot *slot = &c->slots[i];
        if (slot->sql == sql) {
            sqlite3_reset(slot->st.raw);
            sqlite3_clear_bindings(slot->st.raw);
            return &slot->st.base;
        }
        if (slot->sql != NULL)
            continue;
        if (sqlite3_prepare_v3(c->db, sql, -1, SQLITE_PREPARE_PERSISTENT, &slot->st.raw, NULL) !=
            SQLITE_OK) {
            gi_error("prepare: %s in: %.120s", sqlite3_errmsg(c->db), sql);
            slot->st.raw = NULL;
            return NULL;
        }
        slot->sql = sql;
        slot->st.base.drv = &db_sqlite_driver;
        return &slot->st.base;
    }
    gi_error("prepare: statement cache full (%d)", SQ_SLOTS);
    return NULL;
}

static struct db_stmt *sq_prep_once(struct conn *c, const char *sql)
{
    struct sq_stmt *s = calloc(1, sizeof *s);

    if (s == NULL)
        return NULL;
    if (sqlite3_prepare_v2(handle(c), sql, -1, &s->raw, NULL) != SQLITE_OK) {
        gi_error("prepare: %s in: %.120s", sqlite3_errmsg(handle(c)), sql);
        sqlite3_finalize(s->raw);
        free(s);
        return NULL;
    }
    s->base.drv = &db_sqlite_driver;
    return &s->base;
}

static void sq_stmt_free(struct db_stmt *s)
{
    sqlite3_finalize(raw(s));
    free(s);
}

static int sq_param_index(struct db_stmt *s, const char *name)
{
    return sqlite3_bind_parameter_index(raw(s), name);
}

static void sq_bind_int(struct db_stmt *s, int i, int64_t v) { sqlite3_bind_int64(raw(s), i, v); }

static void sq_bind_dbl(struct db_stmt *s, int i, double v) { sqlite3_bind_double(raw(s), i, v); }

static void sq_bind_text(struct db_stmt *s, int i, const char *v)
{
    sqlite3_bind_text(raw(s), i, v, -1, SQLITE_TRANSIENT);
}

static void sq_bind_null(struct db_stmt *s, int i) { sqlite3_bind_null(raw(s), i); }

static int sq_step(struct conn *c, struct db_stmt *s)
{
    int rc = sqlite3_step(raw(s));

    if (rc == SQLITE_ROW)
        return DB_ROW;
    if (rc == SQLITE_DONE)
        return DB_DONE;
    rc = map_rc(handle(c), rc);
    return rc == GI_OK ? GI_INTERNAL : rc; /* an error is never GI_OK */
}

static void sq_reset(struct db_stmt *s) { sqlite3_reset(raw(s)); }

static int sq_col_count(struct db_stmt *s) { return sqlite3_column_count(raw(s)); }

static const char *sq_col_name(struct db_stmt *s, int i) { return sqlite3_column_name(raw(s), i); }

static enum db_type sq_col_type(struct db_stmt *s, int i)
{
    switch (sqlite3_column_type(raw(s), i)) {
    case SQLITE_NULL:
        return DB_T_NULL;
    case SQLITE_INTEGER:
        return DB_T_INT;
    case SQLITE_FLOAT:
        return DB_T_REAL;
    default:
        return DB_T_TEXT;
    }
}

static int64_t sq_col_int(struct db_stmt *s, int i) { return sqlite3_column_int64(raw(s), i); }

static double sq_col_dbl(struct db_stmt *s, int i) { return sqlite3_column_double(raw(s), i); }

static const char *sq_col_text(struct db_stmt *s, int i)
{
    return (const char *)sqlite3_column_text(raw(s), i);
}

static int sq_col_bytes(struct db_stmt *s, int i) { return sqlite3_column_bytes(raw(s), i); }

static int64_t sq_changes(struct conn *c) { return sqlite3_changes(handle(c)); }

static bool sq_tx_open(struct conn *c) { return !sqlite3_get_autocommit(handle(c)); }

static bool sq_alive(struct conn *c)
{
    (void)c;
    return true;
}

const struct db_driver db_sqlite_driver = {
    .dialect = DB_SQLITE,
    .open = sq_open,
    .close = sq_close,
    .prep = sq_prep,
    .prep_once = sq_prep_once,
    .stmt_free = sq_stmt_free,
    .param_index = sq_param_index,
    .bind_int = sq_bind_int,
    .bind_dbl = sq_bind_dbl,
    .bind_text = sq_bind_text,
    .bind_null = sq_bind_null,
    .step = sq_step,
    .reset = sq_reset,
    .col_count = sq_col_count,
    .col_name = sq_col_name,
    .col_type = sq_col_type,
    .col_int = sq_col_int,
    .col_dbl = sq_col_dbl,
    .col_text = sq_col_text,
    .col_bytes = sq_col_bytes,
    .changes = sq_changes,
    .exec = sq_exec,
    /* IMMEDIATE takes SQLite's write lock at once, so the transaction
     * never fails later for want of it. */
    .begin_write = "BEGIN IMMEDIATE",
    .write_lock = NULL,
    .write_lock_shared = NULL,
    .tx_open = sq_tx_open,
    .alive = sq_alive,
};
