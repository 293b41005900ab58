/* Periodic jobs shared by several replicas on one database, through one
 * lease row per job in job_leases; and the readiness ping. See store.h.
 *
 * Taking a slot is one conditional UPDATE whose WHERE re-checks that the
 * job is due and unheld: SQLite runs it under its single writer lock, and
 * PostgreSQL (READ COMMITTED) re-evaluates the WHERE on the newest row
 * version after waiting for a concurrent writer's row lock, so of two
 * replicas racing for one slot exactly one changes the row. So a claim
 * needs no lock of its own: on PostgreSQL it runs beside pushes
 * (db_tx_begin_keyed() with no key) instead of waiting for every write in
 * progress and holding up every write behind it, several times a minute. */
#include "store/store_int.h"
#include "core/status.h"

#define STATEMENTS(X)                                                                              \
    X(JOB_ADD, "INSERT INTO job_leases (name, next_run_at) VALUES (:name, :now) "                  \
               "ON CONFLICT (name) DO NOTHING")                                                    \
    X(JOB_TAKE, "UPDATE job_leases SET holder = :holder, next_run_at = :next, lease_until = "      \
                ":until WHERE name = :name AND next_run_at <= :now AND lease_until <= :now")       \
    X(JOB_DONE, "UPDATE job_leases SET lease_until = 0, last_run_at = :now, last_holder = "        \
                ":holder, runs = runs + 1 WHERE name = :name AND holder = :holder")                \
    X(JOB_GET, "SELECT name, holder, next_run_at, lease_until, last_run_at, last_holder, runs "    \
               "FROM job_leases WHERE name = :name")                                               \
    X(PING, "SELECT COUNT(*) FROM schema_version")

enum stmt_id { STATEMENTS(STORE_AS_ENUM) ST__COUNT };
static const char *const stmt_sql[] = {STATEMENTS(STORE_AS_SQL)};

static struct db_stmt *prep(struct conn *c, enum stmt_id id) { return db_prep(c, stmt_sql[id]); }

int store_job_claim(struct store *st, const char *name, const char *holder, int64_t interval_s,
                    int64_t max_run_s, int64_t now, bool *run)
{
    struct conn *c = db_conn_get(st);
    struct db_stmt *s;
    int rc = db_tx_begin_keyed(c, NULL, NULL, 0);

    *run = false;
    if (rc != GI_OK)
        goto cleanup;
    rc = GI_INTERNAL;
    if (!(s = prep(c, ST_JOB_ADD)))
        goto cleanup;
    db_bind_text(s, ":name", name);
    db_bind_int(s, ":now", now);
    if ((rc = db_exec_done(c, s)) != GI_OK)
        goto cleanup;
    rc = GI_INTERNAL;
    if (!(s = prep(c, ST_JOB_TAKE)))
        goto cleanup;
    db_bind_text(s, ":name", name);
    db_bind_text(s, ":holder", holder);
    db_bind_int(s, ":now", now);
    db_bind_int(s, ":next", now + interval_s);
    db_bind_int(s, ":until", now + max_run_s);
    if ((rc = db_exec_done(c, s)) != GI_OK)
        goto cleanup;
    *run = db_changes(c) == 1;
cleanup:
    rc = db_tx_end(c, rc);
    if (rc != GI_OK)
        *run = false;
    db_conn_put(st, c);
    return rc;
}

int store_job_done(struct store *st, const char *name, const char *holder, int64_t now)
{
    struct conn *c = db_conn_get(st);
    struct db_stmt *s = prep(c, ST_JOB_DONE);
    int rc = GI_INTERNAL;

    if (s) {
        db_bind_text(s, ":name", name);
        db_bind_text(s, ":holder", holder);
        db_bind_int(s, ":now", now);
        rc = db_exec_done(c, s);
    }
    db_conn_put(st, c);
    return rc;
}

int store_job_get(struct store *st, const char *name, json_t **out)
{
    struct conn *c = db_conn_get(st);
    struct db_stmt *s = prep(c, ST_JOB_GET);
    int rc = GI_INTERNAL;

    *out = NULL;
    if (s) {
        db_bind_text(s, ":name", name);
        rc = db_fetch_one(c, s, out);
    }
    db_conn_put(st, c);
    return rc;
}

/* SQLite answers a bare SELECT 1 without touching the database file, so
 * the ping reads the schema's own table: it fails while the file cannot be
 * read (locked past the busy timeout) or, on PostgreSQL, while the server
 * does not answer. */
int store_ping(struct store *st)
{
    struct conn *c = db_conn_get(st);
    struct db_stmt *s = prep(c, ST_PING);
    int64_t n = 0;
    int rc = s ? db_fetch_int(c, s, &n) : GI_INTERNAL;

    db_conn_put(st, c);
    if (rc == GI_OK && n < 1) /* a database without its schema is not ready */
        rc = GI_UNAVAILABLE;
    return rc;
}
