/* The store's connection pool, binders by name, row documents,
 * transactions and migrations, written once over the driver of the
 * database in use (db_sqlite.c or db_pg.c); see db.h and db_driver.h. */
#include "store/db.h"
#include "core/log.h"
#include "core/status.h"
#include "core/util.h"
#include "store/db_driver.h"
#include "store/embedded.h"
#include "store/store_int.h"

#include <ctype.h>
#include <inttypes.h>
#include <math.h>
#include <pthread.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <strings.h>
#include <time.h>

struct store {
    const struct db_driver *drv;
    pthread_mutex_t mu;
    pthread_cond_t cv;
    /* The store admits one writer at a time (SQLite's rule, and on
     * PostgreSQL the database-wide writer lock of db_tx_begin()). Writers
     * of this process queue here and wake as soon as the lock is free,
     * instead of polling in the database; the database's own lock still
     * orders writers of other processes. */
    pthread_mutex_t writer_mu;
    int n;
    struct conn **conns;
    /* Borrows that found every connection lent, and the time they waited
     * (under mu), for /metrics. */
    int64_t waits;
    int64_t wait_ns;
};

bool db_is_pg_target(const char *target)
{
    const char *p = target;

    if (strncmp(target, "postgres://", 11) == 0 || strncmp(target, "postgresql://", 13) == 0)
        return true;
    /* A libpq key/value string starts with a keyword and '='. */
    while (*p == ' ')
        p++;
    if (!isalpha((unsigned char)*p))
        return false;
    while (isalnum((unsigned char)*p) || *p == '_')
        p++;
    while (*p == ' ')
        p++;
    return *p == '=';
}

void store_target_display(const char *target, char *buf, size_t len)
{
    size_t j = 0;
    const char *p = target, *at = NULL;

    if (len == 0)
        return;
    if (db_is_pg_target(target) && strstr(target, "://")) {
        const char *auth = strstr(target, "://") + 3;
        const char *end = auth + strcspn(auth, "/?");
        const char *colon;
        for (const char *q = auth; q < end; q++)
            if (*q == '@')
                at = q;
        colon = at ? memchr(auth, ':', (size_t)(at - auth)) : NULL;
        if (colon) {
            /* scheme://user:secret@host -> scheme://user:***@host */
            for (; p <= colon && j + 1 < len; p++)
                buf[j++] = *p;
            for (const char *m = "***"; *m && j + 1 < len; m++)
                buf[j++] = *m;
            p = at;
        }
    }
    while (*p && j + 1 < len) {
        /* password=secret (key/value form or URL parameter) -> password=*** */
        if (strncasecmp(p, "password=", 9) == 0 &&
            (p == target || p[-1] == ' ' || p[-1] == '?' || p[-1] == '&')) {
            for (const char *m = "password=***"; *m && j + 1 < len; m++)
                buf[j++] = *m;
            p += 9;
            while (*p && *p != ' ' && *p != '&')
                p++;
            continue;
        }
        buf[j++] = *p++;
    }
    buf[j] = '\0';
}

enum db_dialect db_dialect(const struct conn *c) { return c->dialect; }

static int64_t mono_ns(void)
{
    struct timespec ts;

    clock_gettime(CLOCK_MONOTONIC, &ts);
    return (int64_t)ts.tv_sec * 1000000000 + ts.tv_nsec;
}

struct conn *db_conn_get(struct store *st)
{
    struct conn *c = NULL;
    int64_t waited = 0;

    pthread_mutex_lock(&st->mu);
    for (;;) {
        for (int i = 0; i < st->n; i++) {
            if (!st->conns[i]->busy) {
                c = st->conns[i];
                c->busy = true;
                break;
            }
        }
        if (c)
            break;
        if (waited == 0)
            waited = mono_ns();
        pthread_cond_wait(&st->cv, &st->mu);
    }
    if (waited) {
        st->waits++;
        st->wait_ns += mono_ns() - waited;
    }
    pthread_mutex_unlock(&st->mu);
    /* A connection the database dropped is re-established here; while it
     * cannot be, its statements answer GI_UNAVAILABLE. */
    c->drv->alive(c);
    return c;
}

void store_pool_stats(struct store *st, struct store_pool_stats *out)
{
    pthread_mutex_lock(&st->mu);
    out->connections = st->n;
    out->waits = st->waits;
    out->wait_s = (double)st->wait_ns / 1e9;
    pthread_mutex_unlock(&st->mu);
}

void db_conn_put(struct store *st, struct conn *c)
{
    pthread_mutex_lock(&st->mu);
    c->busy = false;
    pthread_cond_signal(&st->cv);
    pthread_mutex_unlock(&st->mu);
}

struct db_stmt *db_prep(struct conn *c, const char *sql) { return c->drv->prep(c, sql); }

struct db_stmt *db_prep_once(struct conn *c, const char *sql) { return c->drv->prep_once(c, sql); }

void db_stmt_free(struct db_stmt *s)
{
    if (s)
        s->drv->stmt_free(s);
}

int db_param_index(struct db_stmt *s, const char *name) { return s->drv->param_index(s, name); }

void db_bind_int_at(struct db_stmt *s, int i, int64_t v)
{
    if (i != 0)
        s->drv->bind_int(s, i, v);
}

void db_bind_dbl_at(struct db_stmt *s, int i, double v)
{
    if (i != 0)
        s->drv->bind_dbl(s, i, v);
}

void db_bind_null_at(struct db_stmt *s, int i)
{
    if (i != 0)
        s->drv->bind_null(s, i);
}

int db_step(struct conn *c, struct db_stmt *s) { return c->drv->step(c, s); }

int db_status(int step) { return step == DB_ROW || step == DB_DONE ? GI_OK : step; }

void db_reset(struct db_stmt *s) { s->drv->reset(s); }

int64_t db_col_int(struct db_stmt *s, int i) { return s->drv->col_int(s, i); }

double db_col_dbl(struct db_stmt *s, int i) { return s->drv->col_dbl(s, i); }

const char *db_col_text(struct db_stmt *s, int i) { return s->drv->col_text(s, i); }

int db_col_bytes(struct db_stmt *s, int i) { return s->drv->col_bytes(s, i); }

bool db_col_is_null(struct db_stmt *s, int i) { return s->drv->col_type(s, i) == DB_T_NULL; }

int64_t db_changes(struct conn *c) { return c->drv->changes(c); }

int db_copy_in(struct conn *c, const char *sql, const char *data, size_t len, int64_t *rows)
{
    *rows = 0;
    if (c->drv->copy_in == NULL || !c->drv->tx_open(c))
        return GI_INTERNAL;
    return c->drv->copy_in(c, sql, data, len, rows);
}

void db_bind_text(struct db_stmt *s, const char *name, const char *v)
{
    int i = s->drv->param_index(s, name);
    if (i == 0)
        return;
    if (v)
        s->drv->bind_text(s, i, v);
    else
        s->drv->bind_null(s, i);
}

void db_bind_int(struct db_stmt *s, const char *name, int64_t v)
{
    db_bind_int_at(s, s->drv->param_index(s, name), v);
}

void db_bind_dbl(struct db_stmt *s, const char *name, double v)
{
    int i = s->drv->param_index(s, name);
    if (isnan(v))
        db_bind_null_at(s, i);
    else
        db_bind_dbl_at(s, i, v);
}

void db_bind_opt_int(struct db_stmt *s, const char *name, int64_t v)
{
    int i = s->drv->param_index(s, name);
    if (v < 0)
        db_bind_null_at(s, i);
    else
        db_bind_int_at(s, i, v);
}

void db_bind_opt_text(struct db_stmt *s, const char *name, const char *v)
{
    db_bind_text(s, name, v && *v ? v : NULL);
}

void db_bind_json(struct db_stmt *s, const char *name, const json_t *v)
{
    int i = s->drv->param_index(s, name);
    char *txt;

    if (i == 0)
        return;
    txt = v ? json_dumps(v, JSON_COMPACT | JSON_SORT_KEYS | JSON_ENCODE_ANY) : NULL;
    if (txt)
        s->drv->bind_text(s, i, txt);
    else
        s->drv->bind_null(s, i);
    free(txt);
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

/* Appends one element's text to the array. */
static void array_add(struct db_array *a, const char *v)
{
    size_t n = strlen(v);

    if (a->failed)
        return;
    if (a->len + n + 3 > a->cap) {
        size_t cap = a->cap ? a->cap * 2 : 4096;
        char *p;
        while (cap < a->len + n + 3)
            cap *= 2;
        if ((p = realloc(a->buf, cap)) == NULL) {
            a->failed = true;
            return;
        }
        a->buf = p;
        a->cap = cap;
    }
    a->buf[a->len] = a->len == 0 ? '{' : ',';
    a->len++;
    memcpy(a->buf + a->len, v, n);
    a->len += n;
}

void db_array_int(struct db_array *a, int64_t v)
{
    char t[32];
    snprintf(t, sizeof t, "%" PRId64, v);
    array_add(a, t);
}

void db_array_dbl(struct db_array *a, double v)
{
    char t[40];
    if (isnan(v) || isinf(v)) {
        array_add(a, "NULL");
        return;
    }
    snprintf(t, sizeof t, "%.17g", v);
    array_add(a, t);
}

void db_array_opt_int(struct db_array *a, int64_t v)
{
    if (v < 0)
        array_add(a, "NULL");
    else
        db_array_int(a, v);
}

void db_bind_array(struct db_stmt *s, const char *name, struct db_array *a)
{
    /* array_add() keeps two bytes spare, for the closing brace and NUL. */
    if (a->failed) {
        db_bind_text(s, name, NULL);
        return;
    }
    if (a->len == 0) {
        db_bind_text(s, name, "{}");
        return;
    }
    a->buf[a->len] = '}';
    a->buf[a->len + 1] = '\0';
    db_bind_text(s, name, a->buf);
}

void db_array_free(struct db_array *a)
{
    free(a->buf);
    memset(a, 0, sizeof *a);
}

bool db_bind_ids(struct conn *c, struct db_stmt *s, const char *name, const int64_t *ids, size_t n)
{
    size_t len = 0, cap = 3 + n * 21; /* an id is at most 20 characters */
    struct db_array a = {0};
    char *json;

    if (db_dialect(c) == DB_PG) {
        bool ok;
        for (size_t i = 0; i < n; i++)
            db_array_int(&a, ids[i]);
        ok = !a.failed;
        db_bind_array(s, name, &a);
        db_array_free(&a);
        return ok;
    }
    if ((json = malloc(cap)) == NULL)
        return false;
    json[len++] = '[';
    for (size_t i = 0; i < n; i++)
        len += (size_t)snprintf(json + len, cap - len, "%s%" PRId64, i ? "," : "", ids[i]);
    json[len++] = ']';
    json[len] = '\0';
    db_bind_text(s, name, json);
    free(json);
    return true;
}

int db_exec_done(struct conn *c, struct db_stmt *s)
{
    int rc;

    if (c->deferring && c->drv->send) {
        rc = c->drv->send(c, s);
        db_reset(s);
        return rc;
    }
    rc = db_step(c, s);
    int st = rc == DB_DONE ? GI_OK : db_status(rc);
    db_reset(s);
    return st;
}

int db_simple(struct conn *c, const char *sql)
{
    struct db_stmt *s = db_prep(c, sql);
    return s ? db_exec_done(c, s) : GI_INTERNAL;
}

/* Begins a writing transaction that excludes every other writer of the
 * database, on c's own connection (no writer lock of this process). */
static int tx_open_write(struct conn *c)
{
    int st = c->drv->exec(c, c->drv->begin_write);

    if (st == GI_OK && c->drv->write_lock && (st = c->drv->exec(c, c->drv->write_lock)) != GI_OK)
        c->drv->exec(c, "ROLLBACK");
    c->in_tx = st == GI_OK;
    return st;
}

/* Commits when st is GI_OK, else rolls back what is still open. */
static int tx_close(struct conn *c, int st)
{
    if (st == GI_OK)
        st = c->drv->exec(c, "COMMIT");
    if (st != GI_OK && c->drv->tx_open(c))
        c->drv->exec(c, "ROLLBACK");
    c->in_tx = false;
    return st;
}

int db_tx_begin(struct conn *c)
{
    pthread_mutex_lock(c->writer_mu);
    c->writing = true;
    return tx_open_write(c);
}

/* A name's key within its kind: 32 bits of its FNV-1a hash. */
static int64_t lock_hash(const char *name)
{
    uint64_t h = 1469598103934665603ULL;

    for (const unsigned char *p = (const unsigned char *)name; *p; p++) {
        h ^= *p;
        h *= 1099511628211ULL;
    }
    return (int64_t)(int32_t)(uint32_t)(h ^ (h >> 32));
}

/* The keys' locks, in (kind, hash) order, in one statement. */
static const char sql_lock_keys[] =
    "SELECT COUNT(pg_advisory_xact_lock(k.kind, k.h)) FROM (SELECT DISTINCT kind, h FROM "
    "unnest(CAST(:kinds AS INT[]), CAST(:hashes AS INT[])) AS u(kind, h) ORDER BY kind, h) k";

static int lock_keys(struct conn *c, const int *kinds, const char *const *names, int n)
{
    struct db_array k = {0}, h = {0};
    struct db_stmt *s = db_prep(c, sql_lock_keys);
    int st = GI_INTERNAL;

    for (int i = 0; i < n; i++) {
        db_array_int(&k, kinds[i]);
        db_array_int(&h, lock_hash(names[i]));
    }
    if (s && !k.failed && !h.failed) {
        db_bind_array(s, ":kinds", &k);
        db_bind_array(s, ":hashes", &h);
        st = db_step(c, s);
        db_reset(s);
        st = db_status(st);
    }
    db_array_free(&k);
    db_array_free(&h);
    return st;
}

int db_tx_begin_keyed(struct conn *c, const int *kinds, const char *const *names, int n)
{
    int st;

    if (!c->drv->write_lock_shared || n > DB_LOCK_KEYS_MAX)
        return db_tx_begin(c);
    st = c->drv->exec(c, c->drv->begin_write);
    if (st == GI_OK && (st = c->drv->exec(c, c->drv->write_lock_shared)) == GI_OK)
        st = lock_keys(c, kinds, names, n);
    if (st != GI_OK && c->drv->tx_open(c))
        c->drv->exec(c, "ROLLBACK");
    c->in_tx = st == GI_OK;
    return st;
}

int db_defer(struct conn *c, bool on)
{
    int st = c->drv->flush ? c->drv->flush(c) : GI_OK;

    c->deferring = on;
    return st;
}

int db_tx_end(struct conn *c, int st)
{
    /* The commit reads what is still due, and fails with it. */
    c->deferring = false;
    st = tx_close(c, st);
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

void db_read_begin(struct conn *c)
{
    /* REPEATABLE READ gives PostgreSQL's statements one snapshot, as a
     * read transaction does on SQLite. */
    c->drv->exec(c,
                 c->dialect == DB_PG ? "BEGIN ISOLATION LEVEL REPEATABLE READ READ ONLY" : "BEGIN");
}

int db_read_batch(struct conn *c, struct db_stmt *const *s, int n)
{
    for (int i = 0; i < n; i++)
        if (s[i] == NULL)
            return GI_INTERNAL;
    if (c->drv->run_batch)
        return c->drv->run_batch(c, s, n);
    /* Statements step one by one; several need one read transaction. */
    if (n > 1 && !c->drv->tx_open(c))
        db_read_begin(c);
    return GI_OK;
}

void db_read_end(struct conn *c)
{
    /* Inside a writing transaction of db_tx_begin() the reads were part of
     * it: its owner commits. */
    if (!c->in_tx && c->drv->tx_open(c))
        c->drv->exec(c, "COMMIT");
}

int db_savepoint(struct conn *c)
{
    return c->dialect == DB_PG ? c->drv->exec(c, "SAVEPOINT stmt") : GI_OK;
}

void db_savepoint_end(struct conn *c, int st)
{
    /* SQLite undoes a failed statement by itself; PostgreSQL marks the
     * whole transaction failed unless it returns to the savepoint. */
    if (c->dialect != DB_PG)
        return;
    c->drv->exec(c, st == GI_OK ? "RELEASE SAVEPOINT stmt" : "ROLLBACK TO SAVEPOINT stmt");
}

int db_part_begin(struct conn *c) { return c->drv->exec(c, "SAVEPOINT part"); }

int db_part_end(struct conn *c, int st)
{
    if (st == GI_OK && (st = c->drv->exec(c, "RELEASE SAVEPOINT part")) == GI_OK)
        return GI_OK;
    c->drv->exec(c, "ROLLBACK TO SAVEPOINT part");
    c->drv->exec(c, "RELEASE SAVEPOINT part");
    return st;
}

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

json_t *db_row_json(struct db_stmt *s)
{
    json_t *o = json_object();
    int n = s->drv->col_count(s);

    for (int i = 0; i < n; i++) {
        const char *name = s->drv->col_name(s, i);
        size_t nl = strlen(name);
        json_t *v = NULL;

        switch (s->drv->col_type(s, i)) {
        case DB_T_NULL:
            v = json_null();
            break;
        case DB_T_INT:
            if ((nl > 3 && strcmp(name + nl - 3, "_at") == 0) ||
                (nl > 6 && strcmp(name + nl - 6, "_since") == 0)) {
                char ts[32];
                gi_time_format(s->drv->col_int(s, i), ts, sizeof ts);
                v = json_string(ts);
            } else {
                v = json_integer(s->drv->col_int(s, i));
            }
            break;
        case DB_T_REAL:
            v = json_real(s->drv->col_dbl(s, i));
            break;
        default: {
            const char *t = s->drv->col_text(s, i);
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

json_t *db_row_values(struct db_stmt *s)
{
    json_t *arr = json_array();
    int n = s->drv->col_count(s);

    for (int i = 0; arr && i < n; i++) {
        json_t *v = NULL;

        switch (s->drv->col_type(s, i)) {
        case DB_T_NULL:
            v = json_null();
            break;
        case DB_T_INT:
            v = json_integer(s->drv->col_int(s, i));
            break;
        case DB_T_REAL:
            v = json_real(s->drv->col_dbl(s, i)); /* NULL when not finite */
            break;
        default:
            v = json_stringn(s->drv->col_text(s, i), (size_t)s->drv->col_bytes(s, i));
        }
        if (v == NULL || json_array_append_new(arr, v) != 0) {
            json_decref(arr);
            return NULL;
        }
    }
    return arr;
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
    struct db_stmt *s[2] = {db_prep(c, count_sql), db_prep(c, list_sql)};
    int rc;

    for (int i = 0; i < 2; i++) {
        if (s[i]) {
            bind(s[i], filter);
            db_bind_page(s[i], pg);
        }
    }
    /* The total and the page in one snapshot (one round trip on
     * PostgreSQL). */
    if ((rc = db_read_batch(c, s, 2)) != GI_OK)
        goto cleanup;
    if ((rc = db_fetch_int(c, s[0], total)) != GI_OK)
        goto cleanup;
    rc = db_collect(c, s[1], items);
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

static const char sql_version_table[] =
    "CREATE TABLE IF NOT EXISTS schema_version (version BIGINT NOT NULL)";
static const char sql_version_max[] = "SELECT COALESCE(MAX(version), 0) FROM schema_version";
static const char sql_version_has[] = "SELECT COUNT(*) FROM schema_version WHERE version = :v";
static const char sql_version_add[] = "INSERT INTO schema_version (version) VALUES (:v)";

/* Applies one migration if the database has not got it yet: each number
 * is looked up, not compared with the highest applied, so a migration
 * numbered below one already applied (written on a branch that landed
 * later) is still applied. The check runs under the writer lock, so
 * replicas starting together apply each migration once. */
static int migrate_one(struct conn *c, const struct gi_embedded *m)
{
    int64_t v = strtoll(m->name, NULL, 10), have = 0; /* names start with their number */
    struct db_stmt *s;
    int rc = tx_open_write(c);

    if (rc != GI_OK)
        return rc;
    if ((rc = c->drv->exec(c, sql_version_table)) != GI_OK)
        goto cleanup;
    rc = GI_INTERNAL;
    if (!(s = db_prep(c, sql_version_has)))
        goto cleanup;
    db_bind_int(s, ":v", v);
    if (db_fetch_int(c, s, &have) != GI_OK)
        goto cleanup;
    rc = GI_OK;
    if (have > 0)
        goto cleanup;
    if ((rc = c->drv->exec(c, (const char *)m->data)) != GI_OK) {
        gi_error("migration %s failed", m->name);
        goto cleanup;
    }
    rc = GI_INTERNAL;
    if (!(s = db_prep(c, sql_version_add)))
        goto cleanup;
    db_bind_int(s, ":v", v);
    if ((rc = db_exec_done(c, s)) == GI_OK)
        gi_info("applied migration %s", m->name);
cleanup:
    return tx_close(c, rc);
}

static int migrate(struct conn *c)
{
    const struct gi_embedded *list = c->dialect == DB_PG ? gi_migrations_pg : gi_migrations;
    int rc = GI_OK;

    for (const struct gi_embedded *m = list; rc == GI_OK && m->name; m++)
        rc = migrate_one(c, m);
    return rc;
}

int store_open(const char *target, int conns, struct store **out)
{
    struct store *st = calloc(1, sizeof *st);
    int rc = GI_OK;

    if (st == NULL)
        return GI_INTERNAL;
    if (conns < 1)
        conns = 1;
    st->drv = db_is_pg_target(target) ? &db_pg_driver : &db_sqlite_driver;
    pthread_mutex_init(&st->mu, NULL);
    pthread_cond_init(&st->cv, NULL);
    pthread_mutex_init(&st->writer_mu, NULL);
    st->conns = calloc((size_t)conns, sizeof *st->conns);
    if (st->conns == NULL) {
        store_close(st);
        return GI_INTERNAL;
    }
    for (int i = 0; i < conns; i++) {
        if ((rc = st->drv->open(target, &st->conns[i])) != GI_OK)
            goto cleanup;
        st->n = i + 1;
        st->conns[i]->writer_mu = &st->writer_mu;
        if (i == 0 && (rc = migrate(st->conns[0])) != GI_OK)
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
    store_token_forget(st);
    for (int i = 0; i < st->n; i++)
        st->drv->close(st->conns[i]);
    free(st->conns);
    pthread_mutex_destroy(&st->mu);
    pthread_cond_destroy(&st->cv);
    pthread_mutex_destroy(&st->writer_mu);
    free(st);
}

int store_schema_version(struct store *st, int64_t *out)
{
    struct conn *c = db_conn_get(st);
    struct db_stmt *s = db_prep(c, sql_version_max);
    int rc = s ? db_fetch_int(c, s, out) : GI_INTERNAL;

    db_conn_put(st, c);
    return rc;
}
