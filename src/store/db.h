/* The store's private layer under every noun file: a pool of
 * connections, each with a cache of prepared statements, binders by
 * parameter name, row readers, transactions and the mapping of database
 * errors onto the program's status codes, the same over SQLite and
 * PostgreSQL. Only src/store/ includes this.
 *
 * A statement is named by its SQL text, a compile-time constant of the
 * noun file that uses it; the cache is keyed by that text's address, so
 * each noun file keeps its SQL beside its logic. Parameters are written
 * :name in both dialects, and LIKE ignores case in both (the PostgreSQL
 * driver sends ILIKE). Where the dialects differ, a noun file keeps
 * both texts side by side and picks one by db_dialect(). */
#ifndef GI_STORE_DB_H
#define GI_STORE_DB_H

#include "store/store.h"

#include <jansson.h>
#include <stdbool.h>
#include <stdint.h>

/* A borrowed connection and one of its prepared statements; both opaque
 * outside db.c and the drivers, the only files that know the database
 * libraries. */
struct conn;
struct db_stmt;

enum db_dialect { DB_SQLITE, DB_PG };

/* True when `target` names a PostgreSQL database (a postgres:// or
 * postgresql:// URL, or a libpq key=value string); anything else is a
 * SQLite file path. */
bool db_is_pg_target(const char *target);
/* The dialect of c's database, for the statements that differ. */
enum db_dialect db_dialect(const struct conn *c);

/* What db_step() returns besides an error status (a gi_status > GI_OK). */
enum db_step_result {
    DB_ROW = -1,  /* a row is ready for the db_col_* readers */
    DB_DONE = -2, /* the statement has finished */
};

/* Borrows a free connection, waiting for one; give it back with
 * db_conn_put(). */
struct conn *db_conn_get(struct store *st);
void db_conn_put(struct store *st, struct conn *c);

/* The connection's cached statement for `sql` (a static string), reset and
 * with cleared bindings; NULL (logged) if it fails to prepare, which is a
 * programming error. */
struct db_stmt *db_prep(struct conn *c, const char *sql);

/* A statement built at run time (SQL text that is not a static string:
 * one per table, say), prepared for the caller alone and not cached,
 * since the cache of db_prep() is keyed by the text's address. Binders,
 * db_step() and the readers work on it as on a cached one. NULL (logged)
 * if it fails to prepare; release it with db_stmt_free(), before the
 * connection goes back to the pool. */
struct db_stmt *db_prep_once(struct conn *c, const char *sql);
/* Releases a statement of db_prep_once(); NULL is ignored. */
void db_stmt_free(struct db_stmt *s);

/* Binders by parameter name; a name the statement lacks is skipped so
 * statement variants can share one binding sequence. */
void db_bind_text(struct db_stmt *s, const char *name, const char *v); /* NULL binds NULL */
void db_bind_int(struct db_stmt *s, const char *name, int64_t v);
/* NAN binds NULL. */
void db_bind_dbl(struct db_stmt *s, const char *name, double v);
/* A negative value binds NULL ("unknown"). */
void db_bind_opt_int(struct db_stmt *s, const char *name, int64_t v);
/* An empty string binds NULL. */
void db_bind_opt_text(struct db_stmt *s, const char *name, const char *v);
/* A JSON value as compact text with sorted keys; NULL binds NULL. */
void db_bind_json(struct db_stmt *s, const char *name, const json_t *v);
/* :limit, :offset and :sort of a page (pg may be NULL: the first 100). */
void db_bind_page(struct db_stmt *s, const struct store_page *pg);
/* Binds `q` as a LIKE pattern (ESCAPE '!') matching it as a substring;
 * NULL or empty binds NULL. */
void db_bind_like(struct db_stmt *s, const char *name, const char *q);

/* A column of values bound as one PostgreSQL array parameter (text form,
 * '{1,NULL,2.5}'), so that a statement such as INSERT ... SELECT FROM
 * unnest(CAST(:ts AS BIGINT[]), ...) writes many rows in one round trip.
 * Zero-initialise, append, bind once, free. On allocation failure
 * `failed` is set and binding the array binds NULL. */
struct db_array {
    char *buf;
    size_t len, cap;
    bool failed;
};
void db_array_int(struct db_array *a, int64_t v);
/* NAN appends NULL. */
void db_array_dbl(struct db_array *a, double v);
/* A negative value appends NULL ("unknown"). */
void db_array_opt_int(struct db_array *a, int64_t v);
void db_bind_array(struct db_stmt *s, const char *name, struct db_array *a);
void db_array_free(struct db_array *a);
/* Binds the ids ids[0..n) as `name`: an array on PostgreSQL (read with
 * ANY(CAST(name AS BIGINT[])) or unnest), a JSON array on SQLite (read
 * with json_each(name)); false when out of memory. */
bool db_bind_ids(struct conn *c, struct db_stmt *s, const char *name, const int64_t *ids, size_t n);

/* Positional binders for hot paths: the index of parameter `name` (0 when
 * the statement lacks it, which the *_at binders then skip), looked up
 * once and reused for every execution. */
int db_param_index(struct db_stmt *s, const char *name);
void db_bind_int_at(struct db_stmt *s, int i, int64_t v);
void db_bind_dbl_at(struct db_stmt *s, int i, double v);
void db_bind_null_at(struct db_stmt *s, int i);

/* Runs a statement one step: DB_ROW, DB_DONE or the error's status
 * (logged). The caller resets the statement with db_reset() when done. */
int db_step(struct conn *c, struct db_stmt *s);
/* A db_step() result as a status: DB_ROW and DB_DONE are GI_OK. */
int db_status(int step);
/* Makes the statement ready to run again, keeping its bindings. */
void db_reset(struct db_stmt *s);

/* Readers of the current row's column i (from 0). */
int64_t db_col_int(struct db_stmt *s, int i); /* 0 for NULL */
double db_col_dbl(struct db_stmt *s, int i);  /* 0.0 for NULL */
/* Text, NULL for NULL; borrowed until the next step or reset. */
const char *db_col_text(struct db_stmt *s, int i);
/* Bytes of the column's text, without the terminating NUL. */
int db_col_bytes(struct db_stmt *s, int i);
bool db_col_is_null(struct db_stmt *s, int i);
/* The current row's columns as a new JSON array, each value as the
 * database holds it: an integer, a real, text as a string, NULL as null,
 * without db_row_json()'s conversions. NULL when a value has no JSON form
 * (text that is not UTF-8, an infinite real). Caller owns the result. */
json_t *db_row_values(struct db_stmt *s);

/* Rows into a table as one stream: PostgreSQL's COPY ... FROM STDIN.
 * `sql` is the COPY statement (a static string naming the table and
 * columns, and the format), `data` the rows in that format (text: values
 * separated by tabs, \N for NULL, each row ending in a newline; binary:
 * the whole stream, header and trailer included). Only inside a
 * transaction; the copy runs under a savepoint, so a failure undoes the
 * copy alone and the transaction goes on. *rows receives the rows copied.
 * GI_CONFLICT when a row's key is already taken (nothing copied),
 * GI_INTERNAL on SQLite, which has no COPY. */
int db_copy_in(struct conn *c, const char *sql, const char *data, size_t len, int64_t *rows);

/* Rows the connection's last INSERT, UPDATE or DELETE changed. (An
 * INSERT that needs its new row's id says RETURNING id.) */
int64_t db_changes(struct conn *c);

/* Steps a statement expected to finish without rows. */
int db_exec_done(struct conn *c, struct db_stmt *s);
/* Prepares and runs one parameterless statement. */
int db_simple(struct conn *c, const char *sql);

/* Takes the store's writer lock and begins a transaction that excludes
 * every other writer of the database (SQLite: BEGIN IMMEDIATE;
 * PostgreSQL: a transaction-scoped advisory lock), so that each write
 * sees the state it checks until it commits. Always end it with
 * db_tx_end(), even when this fails. */
int db_tx_begin(struct conn *c);
/* The kinds of key of db_tx_begin_keyed(), in the order their locks are
 * taken. */
enum db_lock_kind {
    DB_LOCK_HOST = 1, /* a reporting host, by hostname */
    DB_LOCK_GPU = 2,  /* a GPU, by a name it is stored under */
    /* a day of the consumer totals, by its day number (taken inside a
     * transaction, after its keys: usage_consumer_totals.c) */
    DB_LOCK_CONSUMER_DAY = 3,
};
/* The most keys db_tx_begin_keyed() takes; a write naming more takes the
 * writer lock exclusively instead (db_tx_begin()). */
#define DB_LOCK_KEYS_MAX 64
/* A writing transaction for work whose rows are named by a few keys (a
 * push batch: its host and GPUs), which may run beside other such
 * transactions on PostgreSQL: the writer lock is taken shared, so it
 * still waits for and excludes every db_tx_begin() writer, and then each
 * key's lock exclusively, transaction-scoped, in one statement and in one
 * fixed order (kind, then the name's hash), so that two of them cannot
 * deadlock on their keys. Two names may share a hash (they then wait for each
 * other, harmlessly). No lock of this process is held, so they run
 * beside each other on several connections. On SQLite, and with more than
 * DB_LOCK_KEYS_MAX keys, it is db_tx_begin(). kinds[i] is the kind of
 * names[i]. End it with db_tx_end(). */
int db_tx_begin_keyed(struct conn *c, const int *kinds, const char *const *names, int n);
/* Commits when st is GI_OK, else rolls back; releases the writer lock and
 * returns the final status. */
int db_tx_end(struct conn *c, int st);
/* db_tx_end() for a write that returns a document: when the transaction
 * fails, *out (if set) is released and set to NULL, so the caller never
 * sees a document of a write that did not happen. */
int db_tx_end_doc(struct conn *c, int st, json_t **out);
/* Writes sent without waiting for each one's answer, for a writing
 * transaction of many short statements: after db_defer(c, true),
 * db_exec_done() on PostgreSQL sends its statement into a pipeline and
 * returns GI_OK at once (or the status of an earlier deferred statement
 * that failed). The answers are read together, one round trip for all,
 * by the next call that needs the database to answer (a statement's
 * rows, db_changes(), a copy, a savepoint, a read batch, the commit),
 * which fails with the first deferred failure's status instead of
 * running: the transaction has failed, and its end rolls it back.
 * db_changes() stays that of the last statement run. Only for statements
 * whose failure fails the transaction: one whose failure the caller
 * handles (under a savepoint) must not run while deferring.
 * db_defer(c, false) reads what is due and returns that status;
 * db_tx_end() also stops deferring. SQLite runs each statement at once
 * (it has no round trips). */
int db_defer(struct conn *c, bool on);
/* A statement inside a transaction that may fail without failing the
 * transaction (one row of an import): db_savepoint() before it,
 * db_savepoint_end() with its status after. */
int db_savepoint(struct conn *c);
void db_savepoint_end(struct conn *c, int st);
/* Several statements inside a writing transaction that take effect
 * together or not at all without ending it (one rule's firing among
 * others): db_part_begin() before them, db_part_end() with their status
 * after, which undoes them on either store when it is not GI_OK and
 * returns it, or the savepoint's own failure. */
int db_part_begin(struct conn *c);
int db_part_end(struct conn *c, int st);
/* A read transaction, so that several statements see one snapshot. */
void db_read_begin(struct conn *c);
void db_read_end(struct conn *c);
/* Several reads that must see one snapshot, in as few round trips as the
 * database allows. The n statements are prepared (db_prep) and bound, and
 * differ from each other; db_read_batch() runs them, and then db_step()
 * and the readers give each one's rows as usual. PostgreSQL runs them as
 * one pipeline (BEGIN ISOLATION LEVEL REPEATABLE READ READ ONLY, the
 * statements, COMMIT): one round trip, all rows received at once. SQLite
 * steps each as it is read, inside a read transaction begun here. One
 * statement alone, or a batch inside an open transaction, takes no
 * transaction of its own (a single statement always reads one snapshot).
 * Call db_read_end() when done, whatever this returns. GI_OK, or the
 * first failure's status (a NULL statement is GI_INTERNAL), after which
 * no statement of the batch has rows to read. */
int db_read_batch(struct conn *c, struct db_stmt *const *s, int n);

/* The current row as an object: *_at and *_since integers become RFC 3339,
 * `attrs` text is merged into the object, and columns holding JSON text
 * (metadata, before, after, detail, config, labels, and any name ending
 * in _json) are parsed. Caller owns the result. */
json_t *db_row_json(struct db_stmt *s);
/* Runs a statement and collects every row as an object into a new array. */
int db_collect(struct conn *c, struct db_stmt *s, json_t **items);
/* One row as an object; GI_NOT_FOUND when there is none. */
int db_fetch_one(struct conn *c, struct db_stmt *s, json_t **out);
/* A single-integer query (COUNT, an id); GI_NOT_FOUND when no row. */
int db_fetch_int(struct conn *c, struct db_stmt *s, int64_t *out);
/* Runs one statement with at most one integer parameter (name NULL for
 * none) on a borrowed connection and collects its rows. */
int db_collect_with(struct store *st, const char *sql, const char *name, int64_t v, json_t **items);

/* Binds one list's filters to a statement (count or page). */
typedef void (*db_filter_binder)(struct db_stmt *s, const void *filter);
/* A list page and its total: the count and the page statement get the
 * same filter bindings, in one read transaction so they agree. */
int db_list_page(struct store *st, const char *count_sql, const char *list_sql,
                 db_filter_binder bind, const void *filter, const struct store_page *pg,
                 json_t **items, int64_t *total);

/* Appends an audit row inside the caller's transaction (before/after
 * borrowed, may be NULL). */
int db_audit(struct conn *c, const char *actor, const char *action, const char *entity, int64_t id,
             const json_t *before, const json_t *after);

#endif
