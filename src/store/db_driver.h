/* The contract between db.c (the pool, binders by name, row documents,
 * transactions and migrations every noun file uses through db.h) and the
 * two database drivers under it: db_sqlite.c and db_pg.c. Private to
 * db.c and the drivers; noun files never see it.
 *
 * A driver's connection and statement types begin with struct conn and
 * struct db_stmt, so db.c reaches the driver through them. */
#ifndef GI_STORE_DB_DRIVER_H
#define GI_STORE_DB_DRIVER_H

#include "store/db.h"

#include <pthread.h>
#include <stdbool.h>
#include <stdint.h>

/* A column value's type, as the driver reports it. */
enum db_type { DB_T_NULL, DB_T_INT, DB_T_REAL, DB_T_TEXT };

struct db_driver;

struct conn {
    const struct db_driver *drv;
    enum db_dialect dialect;
    bool busy;                  /* lent out by the pool */
    bool writing;               /* holds the store's writer lock */
    bool in_tx;                 /* inside a transaction db.c began */
    bool deferring;             /* db_exec_done() sends without waiting (db_defer()) */
    pthread_mutex_t *writer_mu; /* the store's; borrowed */
};

struct db_stmt {
    const struct db_driver *drv;
};

struct db_driver {
    enum db_dialect dialect;
    /* Opens one connection to `target` (a path or a connection string). */
    int (*open)(const char *target, struct conn **out);
    void (*close)(struct conn *c);
    /* The connection's cached statement for `sql`, reset, bindings cleared. */
    struct db_stmt *(*prep)(struct conn *c, const char *sql);
    /* A statement for `sql` of any lifetime, not cached; stmt_free
     * releases it. */
    struct db_stmt *(*prep_once)(struct conn *c, const char *sql);
    void (*stmt_free)(struct db_stmt *s);
    /* 1-based index of `name` (":name"), 0 when the statement lacks it. */
    int (*param_index)(struct db_stmt *s, const char *name);
    void (*bind_int)(struct db_stmt *s, int i, int64_t v);
    void (*bind_dbl)(struct db_stmt *s, int i, double v);
    void (*bind_text)(struct db_stmt *s, int i, const char *v); /* copied */
    void (*bind_null)(struct db_stmt *s, int i);
    /* DB_ROW, DB_DONE or a status > GI_OK (logged). */
    int (*step)(struct conn *c, struct db_stmt *s);
    void (*reset)(struct db_stmt *s);
    int (*col_count)(struct db_stmt *s);
    const char *(*col_name)(struct db_stmt *s, int i);
    enum db_type (*col_type)(struct db_stmt *s, int i);
    int64_t (*col_int)(struct db_stmt *s, int i);
    double (*col_dbl)(struct db_stmt *s, int i);
    const char *(*col_text)(struct db_stmt *s, int i);
    int (*col_bytes)(struct db_stmt *s, int i);
    int64_t (*changes)(struct conn *c);
    /* Runs SQL text holding one or more statements without parameters
     * (transaction control, migrations); GI_OK or the error's status. */
    int (*exec)(struct conn *c, const char *sql);
    /* Runs n bound statements together, as one snapshot, keeping each
     * one's rows for step (db_read_batch()); NULL when the driver has no
     * faster way than a read transaction around statements stepped one by
     * one. */
    int (*run_batch)(struct conn *c, struct db_stmt *const *s, int n);
    /* db_exec_done() while deferring: sends the bound statement without
     * waiting for its answer; GI_OK, or the status of an earlier deferred
     * statement that failed. NULL when the driver always waits. */
    int (*send)(struct conn *c, struct db_stmt *s);
    /* Reads every answer still due for send(); the first failure's
     * status (then forgotten) or GI_OK. */
    int (*flush)(struct conn *c);
    /* db_copy_in(); NULL when the database has no bulk copy. */
    int (*copy_in)(struct conn *c, const char *sql, const char *data, size_t len, int64_t *rows);
    /* SQL that begins a writing transaction, and the extra statement (or
     * NULL) that makes it exclude every other writer of the database. */
    const char *begin_write;
    const char *write_lock;
    /* The same lock taken shared (db_tx_begin_keyed()), or NULL when the
     * database has one writer at a time anyway. */
    const char *write_lock_shared;
    /* True while the connection is inside a transaction (one a failed
     * statement has not already ended). */
    bool (*tx_open)(struct conn *c);
    /* True while the connection is usable; a driver that can reconnect
     * does so here, returning false while the database stays away. */
    bool (*alive)(struct conn *c);
};

extern const struct db_driver db_sqlite_driver;
extern const struct db_driver db_pg_driver;

#endif
