/* The store's connection pool, statement cache, binders, row readers,
 * transactions and migrations over SQLite; see db.h. */
#include "store/db.h"
#include "core/log.h"
#include "core/status.h"
#include "core/util.h"
#include "store/embedded.h"

#include <errno.h>
#include <math.h>
#include <pthread.h>
#include <sqlite3.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

/* Statements a connection caches; the store's SQL stays well below. */
#define DB_STMT_SLOTS 1024

struct db_slot {
    const char *sql; /* the key: a static string's address */
    sqlite3_stmt *stmt;
};

struct conn {
    sqlite3 *db;
    struct db_slot slots[DB_STMT_SLOTS];
    bool busy;
    bool writing;               /* holds the store's writer lock */
    pthread_mutex_t *writer_mu; /* the store's; borrowed */
};

/* struct db_stmt is never defined: a pointer to one is the library's
 * statement under an opaque name. */
static sqlite3_stmt *raw(struct db_stmt *s) { return (sqlite3_stmt *)s; }

struct store {
    pthread_mutex_t mu;
    pthread_cond_t cv;
    /* SQLite admits one writer at a time. Writers of this process queue
     * here and wake as soon as the lock is free, instead of polling with
     * SQLite's sleeping busy handler (which adds up to 100 ms per wait);
     * the busy timeout still covers writers in other processes. */
    pthread_mutex_t writer_mu;
    int n;
    struct conn *conns;
};

/* Maps an SQLite result code to a program status, logging the unexpected. */
static int db_map_rc(sqlite3 *db, int rc)
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

/* Opens one connection with the pragmas every connection needs. */
static int conn_open(const char *path, struct conn *c)
{
    int rc = sqlite3_open_v2(
        path, &c->db, SQLITE_OPEN_READWRITE | SQLITE_OPEN_CREATE | SQLITE_OPEN_NOMUTEX, NULL);
    if (rc != SQLITE_OK) {
        gi_error("cannot open database %s: %s", path, c->db ? sqlite3_errmsg(c->db) : "no memory");
        return GI_UNAVAILABLE;
    }
    /* Extended codes tell a foreign-key or unique violation from others. */
    sqlite3_extended_result_codes(c->db, 1);
    sqlite3_busy_timeout(c->db, 5000);
    rc = sqlite3_exec(c->db,
                      "PRAGMA journal_mode=WAL; PRAGMA foreign_keys=ON; PRAGMA synchronous=NORMAL;",
                      NULL, NULL, NULL);
    return db_map_rc(c->db, rc);
}

static void conn_close(struct conn *c)
{
    for (int i = 0; i < DB_STMT_SLOTS; i++)
        sqlite3_finalize(c->slots[i].stmt);
    sqlite3_close_v2(c->db);
}

struct conn *db_conn_get(struct store *st)
{
    struct conn *c = NULL;

    pthread_mutex_lock(&st->mu);
    for (;;) {
        for (int i = 0; i < st->n; i++) {
            if (!st->conns[i].busy) {
                c = &st->conns[i];
                c->busy = true;
                break;
            }
        }
        if (c)
            break;
        pthread_cond_wait(&st->cv, &st->mu);
    }
    pthread_mutex_unlock(&st->mu);
    return c;
}

void db_conn_put(struct store *st, struct conn *c)
{
    pthread_mutex_lock(&st->mu);
    c->busy = false;
    pthread_cond_signal(&st->cv);
    pthread_mutex_unlock(&st->mu);
}

/* Open addressing on the text's address: statements are static strings,
 * so the address is the identity and no text is compared. */
struct db_stmt *db_prep(struct conn *c, const char *sql)
{
    uintptr_t h = ((uintptr_t)sql >> 3) * (uintptr_t)0x9E3779B97F4A7C15ull;
    size_t i = (size_t)(h >> 20) & (DB_STMT_SLOTS - 1);
    sqlite3_stmt *s;

    for (size_t probe = 0; probe < DB_STMT_SLOTS; probe++, i = (i + 1) & (DB_STMT_SLOTS - 1)) {
        struct db_slot *slot = &c->slots[i];
        if (slot->sql == sql) {
            s = slot->stmt;
            sqlite3_reset(s);
            sqlite3_clear_bindings(s);
            return (struct db_stmt *)s;
        }
        if (slot->sql != NULL)
            continue;
        if (sqlite3_prepare_v3(c->db, sql, -1, SQLITE_PREPARE_PERSISTENT, &s, NULL) != SQLITE_OK) {
            gi_error("prepare: %s in: %.120s", sqlite3_errmsg(c->db), sql);
            return NULL;
        }
        slot->sql = sql;
        slot->stmt = s;
        return (struct db_stmt *)s;
    }
    gi_error("prepare: statement cache full (%d)", DB_STMT_SLOTS);
    return NULL;
}

int db_param_index(struct db_stmt *s, const char *name)
{
    return sqlite3_bind_parameter_index(raw(s), name);
}

void db_bind_int_at(struct db_stmt *s, int i, int64_t v)
{
    if (i != 0)
        sqlite3_bind_int64(raw(s), i, v);
}

void db_bind_dbl_at(struct db_stmt *s, int i, double v)
{
    if (i != 0)
        sqlite3_bind_double(raw(s), i, v);
}

void db_bind_null_at(struct db_stmt *s, int i)
{
    if (i != 0)
        sqlite3_bind_null(raw(s), i);
}

int db_step(struct conn *c, struct db_stmt *s)
{
    int rc = sqlite3_step(raw(s));

    if (rc == SQLITE_ROW)
        return DB_ROW;
    if (rc == SQLITE_DONE)
        return DB_DONE;
    rc = db_map_rc(c->db, rc);
    return rc == GI_OK ? GI_INTERNAL : rc; /* an error is never GI_OK */
}

int db_status(int step) { return step == DB_ROW || step == DB_DONE ? GI_OK : step; }

void db_reset(struct db_stmt *s) { sqlite3_reset(raw(s)); }

int64_t db_col_int(struct db_stmt *s, int i) { return sqlite3_column_int64(raw(s), i); }

double db_col_dbl(struct db_stmt *s, int i) { return sqlite3_column_double(raw(s), i); }

const char *db_col_text(struct db_stmt *s, int i)
{
    return (const char *)sqlite3_column_text(raw(s), i);
}

int db_col_bytes(struct db_stmt *s, int i) { return sqlite3_column_bytes(raw(s), i); }

bool db_col_is_null(struct db_stmt *s, int i)
{
    return sqlite3_column_type(raw(s), i) == SQLITE_NULL;
}

int64_t db_changes(struct conn *c) { return sqlite3_changes(c->db); }

int64_t db_last_id(struct conn *c) { return sqlite3_last_insert_rowid(c->db); }

void db_bind_text(struct db_stmt *ds, const char *name, const char *v)
{
    sqlite3_stmt *s = raw(ds);
    int i = sqlite3_bind_parameter_index(s, name);
    if (i == 0)
        return;
    if (v)
        sqlite3_bind_text(s, i, v, -1, SQLITE_TRANSIENT);
    else
        sqlite3_bind_null(s, i);
}

void db_bind_int(struct db_stmt *ds, const char *name, int64_t v)
{
    sqlite3_stmt *s = raw(ds);
    int i = sqlite3_bind_parameter_index(s, name);
    if (i != 0)
        sqlite3_bind_int64(s, i, v);
}

void db_bind_dbl(struct db_stmt *ds, const char *name, double v)
{
    sqlite3_stmt *s = raw(ds);
    int i = sqlite3_bind_parameter_index(s, name);
    if (i == 0)
        return;
    if (isnan(v))
        sqlite3_bind_null(s, i);
    else
        sqlite3_bind_double(s, i, v);
}

void db_bind_opt_int(struct db_stmt *ds, const char *name, int64_t v)
{
    sqlite3_stmt *s = raw(ds);
    int i = sqlite3_bind_parameter_index(s, name);
    if (i == 0)
        return;
    if (v < 0)
        sqlite3_bind_null(s, i);
    else
        sqlite3_bind_int64(s, i, v);
}

void db_bind_opt_text(struct db_stmt *s, const char *name, const char *v)
{
    db_bind_text(s, name, v && *v ? v : NULL);
}

void db_bind_json(struct db_stmt *ds, const char *name, const json_t *v)
{
    sqlite3_stmt *s = raw(ds);
    int i = sqlite3_bind_parameter_index(s, name);
    char *txt;

    if (i == 0)
        return;
    if (v == NULL) {
        sqlite3_bind_null(s, i);
        return;
    }
    txt = json_dumps(v, JSON_COMPACT | JSON_SORT_KEYS | JSON_ENCODE_ANY);
    if (txt)
        sqlite3_bind_text(s, i, txt, -1, free);
    else
        sqlite3_bind_null(s, i);
}

void db_bind_page(struct db_stmt *s, const struct store_page *pg)
{
    db_bind_int(s, ":limit", pg ? pg->limit : 100);
    db_bind_int(s, ":offset", pg ? pg->offset : 0);
    db_bind_text(s, ":sort", pg ? pg->sort : NULL);
}

void db_bind_like(struct db_stmt *s, const char *name, const char *q)
{
    char buf[512];
    size_t j = 0;

    if (q == NULL || *q == '\0') {
        db_bind_text(s, name, NULL);
        return;
    }
    buf[j++] = '%';
    for (const char *p = q; *p && j < sizeof buf - 3; p++) {
        if (*p == '%' || *p == '_' || *p == '!')
            buf[j++] = '!';
        buf[j++] = *p;
    }
    buf[j++] = '%';
    buf[j] = '\0';
    db_bind_text(s, name, buf);
}

int db_exec_done(struct conn *c, struct db_stmt *s)
{
    int rc = db_step(c, s);
    int st = rc == DB_DONE ? GI_OK : db_status(rc);
    db_reset(s);
    return st;
}

int db_simple(struct conn *c, const char *sql)
{
    struct db_stmt *s = db_prep(c, sql);
    return s ? db_exec_done(c, s) : GI_INTERNAL;
}

static const char sql_begin[] = "BEGIN IMMEDIATE";
static const char sql_commit[] = "COMMIT";
static const char sql_rollback[] = "ROLLBACK";

int db_tx_begin(struct conn *c)
{
    pthread_mutex_lock(c->writer_mu);
    c->writing = true;
    return db_simple(c, sql_begin);
}

int db_tx_end(struct conn *c, int st)
{
    if (st == GI_OK)
        st = db_simple(c, sql_commit);
    if (st != GI_OK && !sqlite3_get_autocommit(c->db))
        db_simple(c, sql_rollback);
    if (c->writing) {
        c->writing = false;
        pthread_mutex_unlock(c->writer_mu);
    }
    return st;
}

int db_tx_end_doc(struct conn *c, int st, json_t **out)
{
    st = db_tx_end(c, st);
    if (st != GI_OK && *out) {
        json_decref(*out);
        *out = NULL;
    }
    return st;
}

void db_read_begin(struct conn *c) { sqlite3_exec(c->db, "BEGIN", NULL, NULL, NULL); }

void db_read_end(struct conn *c) { sqlite3_exec(c->db, "COMMIT", NULL, NULL, NULL); }

/* True for the columns whose text is a JSON document. */
static bool json_column(const char *name, size_t nl)
{
    static const char *const names[] = {"metadata", "before", "after",  "detail",
                                        "config",   "labels", "models", NULL};
    for (int i = 0; names[i]; i++)
        if (strcmp(name, names[i]) == 0)
            return true;
    return nl > 5 && strcmp(name + nl - 5, "_json") == 0;
}

json_t *db_row_json(struct db_stmt *ds)
{
    sqlite3_stmt *s = raw(ds);
    json_t *o = json_object();
    int n = sqlite3_column_count(s);

    for (int i = 0; i < n; i++) {
        const char *name = sqlite3_column_name(s, i);
        size_t nl = strlen(name);
        json_t *v = NULL;

        switch (sqlite3_column_type(s, i)) {
        case SQLITE_NULL:
            v = json_null();
            break;
        case SQLITE_INTEGER:
            if ((nl > 3 && strcmp(name + nl - 3, "_at") == 0) ||
                (nl > 6 && strcmp(name + nl - 6, "_since") == 0)) {
                char ts[32];
                gi_time_format(sqlite3_column_int64(s, i), ts, sizeof ts);
                v = json_string(ts);
            } else {
                v = json_integer(sqlite3_column_int64(s, i));
            }
            break;
        case SQLITE_FLOAT:
            v = json_real(sqlite3_column_double(s, i));
            break;
        default: {
            const char *t = (const char *)sqlite3_column_text(s, i);
            if (strcmp(name, "attrs") == 0) {
                json_t *a = json_loads(t, 0, NULL);
                if (json_is_object(a))
                    json_object_update_missing(o, a);
                json_decref(a);
                continue;
            }
            if (json_column(name, nl))
                v = json_loads(t, JSON_DECODE_ANY, NULL);
            if (v == NULL)
                v = json_string(t);
        }
        }
        json_object_set_new(o, name, v ? v : json_null());
    }
    return o;
}

int db_collect(struct conn *c, struct db_stmt *s, json_t **items)
{
    json_t *arr = json_array();
    int rc;

    while ((rc = db_step(c, s)) == DB_ROW)
        json_array_append_new(arr, db_row_json(s));
    db_reset(s);
    if (rc != DB_DONE) {
        json_decref(arr);
        return db_status(rc);
    }
    *items = arr;
    return GI_OK;
}

int db_fetch_one(struct conn *c, struct db_stmt *s, json_t **out)
{
    int rc = db_step(c, s);
    int st = GI_OK;

    if (rc == DB_ROW)
        *out = db_row_json(s);
    else
        st = rc == DB_DONE ? GI_NOT_FOUND : db_status(rc);
    db_reset(s);
    return st;
}

int db_fetch_int(struct conn *c, struct db_stmt *s, int64_t *out)
{
    int rc = db_step(c, s);
    int st = GI_OK;

    if (rc == DB_ROW)
        *out = db_col_int(s, 0);
    else
        st = rc == DB_DONE ? GI_NOT_FOUND : db_status(rc);
    db_reset(s);
    return st;
}

int db_collect_with(struct store *st, const char *sql, const char *name, int64_t v, json_t **items)
{
    struct conn *c = db_conn_get(st);
    struct db_stmt *s = db_prep(c, sql);
    int rc = GI_INTERNAL;

    if (s) {
        if (name)
            db_bind_int(s, name, v);
        rc = db_collect(c, s, items);
    }
    db_conn_put(st, c);
    return rc;
}

int db_list_page(struct store *st, const char *count_sql, const char *list_sql,
                 db_filter_binder bind, const void *filter, const struct store_page *pg,
                 json_t **items, int64_t *total)
{
    struct conn *c = db_conn_get(st);
    struct db_stmt *s;
    int rc = GI_INTERNAL;

    db_read_begin(c);
    for (int pass = 0; pass < 2; pass++) {
        if (!(s = db_prep(c, pass == 0 ? count_sql : list_sql)))
            goto cleanup;
        bind(s, filter);
        db_bind_page(s, pg);
        rc = pass == 0 ? db_fetch_int(c, s, total) : db_collect(c, s, items);
        if (rc != GI_OK)
            goto cleanup;
    }
cleanup:
    db_read_end(c);
    db_conn_put(st, c);
    return rc;
}

static const char sql_audit_add[] =
    "INSERT INTO audit (at, actor, action, entity, entity_id, before_json, after_json) "
    "VALUES (:at, :actor, :action, :entity, :eid, :before, :after)";

int db_audit(struct conn *c, const char *actor, const char *action, const char *entity, int64_t id,
             const json_t *before, const json_t *after)
{
    struct db_stmt *s = db_prep(c, sql_audit_add);
    if (!s)
        return GI_INTERNAL;
    db_bind_int(s, ":at", gi_now());
    db_bind_text(s, ":actor", actor);
    db_bind_text(s, ":action", action);
    db_bind_text(s, ":entity", entity);
    db_bind_int(s, ":eid", id);
    db_bind_json(s, ":before", before);
    db_bind_json(s, ":after", after);
    return db_exec_done(c, s);
}

/* ---- open, migrate, close ---- */

static int migrate(struct conn *c)
{
    int64_t have = 0;
    sqlite3_stmt *s = NULL;
    int rc;

    rc = sqlite3_exec(c->db, "CREATE TABLE IF NOT EXISTS schema_version (version BIGINT NOT NULL)",
                      NULL, NULL, NULL);
    if (rc != SQLITE_OK)
        return db_map_rc(c->db, rc);
    rc = sqlite3_prepare_v2(c->db, "SELECT COALESCE(MAX(version), 0) FROM schema_version", -1, &s,
                            NULL);
    if (rc != SQLITE_OK)
        return db_map_rc(c->db, rc);
    if (sqlite3_step(s) == SQLITE_ROW)
        have = sqlite3_column_int64(s, 0);
    sqlite3_finalize(s);

    for (const struct gi_embedded *m = gi_migrations; m->name; m++) {
        int64_t v = strtoll(m->name, NULL, 10); /* names start with their number */
        char *err = NULL;
        if (v <= have)
            continue;
        rc = sqlite3_exec(c->db, "BEGIN IMMEDIATE", NULL, NULL, NULL);
        if (rc == SQLITE_OK)
            rc = sqlite3_exec(c->db, (const char *)m->data, NULL, NULL, &err);
        if (rc == SQLITE_OK) {
            sqlite3_stmt *ins = NULL;
            rc = sqlite3_prepare_v2(c->db, "INSERT INTO schema_version (version) VALUES (?)", -1,
                                    &ins, NULL);
            if (rc == SQLITE_OK) {
                sqlite3_bind_int64(ins, 1, v);
                rc = sqlite3_step(ins) == SQLITE_DONE ? SQLITE_OK : SQLITE_ERROR;
            }
            sqlite3_finalize(ins);
        }
        if (rc == SQLITE_OK)
            rc = sqlite3_exec(c->db, "COMMIT", NULL, NULL, NULL);
        if (rc != SQLITE_OK) {
            gi_error("migration %s failed: %s", m->name, err ? err : sqlite3_errmsg(c->db));
            sqlite3_free(err);
            sqlite3_exec(c->db, "ROLLBACK", NULL, NULL, NULL);
            return GI_INTERNAL;
        }
        gi_info("applied migration %s", m->name);
    }
    return GI_OK;
}

int store_open(const char *path, int conns, struct store **out)
{
    struct store *st = calloc(1, sizeof *st);
    int rc = GI_OK;

    if (st == NULL)
        return GI_INTERNAL;
    if (conns < 1)
        conns = 1;
    pthread_mutex_init(&st->mu, NULL);
    pthread_cond_init(&st->cv, NULL);
    pthread_mutex_init(&st->writer_mu, NULL);
    st->conns = calloc((size_t)conns, sizeof *st->conns);
    if (st->conns == NULL) {
        free(st);
        return GI_INTERNAL;
    }
    for (int i = 0; i < conns; i++) {
        st->n = i + 1;
        st->conns[i].writer_mu = &st->writer_mu;
        rc = conn_open(path, &st->conns[i]);
        if (rc != GI_OK)
            goto cleanup;
        if (i == 0 && (rc = migrate(&st->conns[0])) != GI_OK)
            goto cleanup;
    }
    *out = st;
    return GI_OK;
cleanup:
    store_close(st);
    return rc;
}

void store_close(struct store *st)
{
    if (st == NULL)
        return;
    for (int i = 0; i < st->n; i++)
        conn_close(&st->conns[i]);
    free(st->conns);
    pthread_mutex_destroy(&st->mu);
    pthread_cond_destroy(&st->cv);
    pthread_mutex_destroy(&st->writer_mu);
    free(st);
}

int store_schema_version(struct store *st, int64_t *out)
{
    struct conn *c = db_conn_get(st);
    sqlite3_stmt *s = NULL;
    int rc = sqlite3_prepare_v2(c->db, "SELECT MAX(version) FROM schema_version", -1, &s, NULL);
    int status = rc == SQLITE_OK ? db_fetch_int(c, (struct db_stmt *)s, out) : db_map_rc(c->db, rc);
    sqlite3_finalize(s);
    db_conn_put(st, c);
    return status;
}
