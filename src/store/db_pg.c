/* The PostgreSQL driver under db.c, through libpq: connections that
 * notice a lost server and reconnect, server-side prepared statements
 * cached per connection by the SQL text's address (with the :name
 * parameters the store writes rewritten to $n), parameters sent as text,
 * and the mapping of SQLSTATEs onto the program's statuses.
 *
 * A statement whose text begins with PG_PLAN_EACH is planned for the
 * values it is given at every execution: it is prepared once (parsed
 * once) like the others, and each execution goes between SET
 * plan_cache_mode = force_custom_plan and RESET plan_cache_mode, all
 * three in one message, so without a round trip of their own. That is
 * for statements whose best plan depends on table sizes that change
 * under them, such as an UPDATE joined to the rows of array parameters:
 * the generic plan PostgreSQL caches after five executions is costed
 * with the table as it was then and kept until the table is next
 * analyzed (a sequential scan of a table that was small then). A failed
 * statement fails its transaction (or the pipeline's implicit one), which
 * undoes the SET. Sending the text unnamed each time was measured dearer:
 * parsing it again cost more than planning it (PERFORMANCE.md, "The
 * newest values in one statement, and fewer waits per batch").
 *
 * A statement whose text begins with PG_PLAN_ONCE goes between SET
 * plan_cache_mode = force_generic_plan and the RESET the same way: it is
 * planned once per session for any values (again after the table is next
 * analyzed). That is for a page read whose terms are all equalities an
 * index serves in order, ending in LIMIT and OFFSET parameters: the
 * generic plan prices those at a tenth of the table each, so it looks
 * dearer than the plan for the values given, and left to choose,
 * PostgreSQL planned such a page at every execution, which cost more than
 * reading it (PERFORMANCE.md, "Pages planned once on PostgreSQL"). */
#include "core/log.h"
#include "core/status.h"
#include "core/util.h"
#include "store/db_driver.h"

#include <ctype.h>
#include <inttypes.h>
#include <libpq-fe.h>
#include <poll.h>
#include <stdatomic.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <strings.h>

/* Statements a connection caches; the store's SQL stays well below. */
#define PG_SLOTS 1024
/* Parameters one statement may have. */
#define PG_MAX_PARAMS 64
/* The leading comment of a statement planned at each execution. */
#define PG_PLAN_EACH "/* plan each time */"
/* The leading comment of a statement planned once for any values. */
#define PG_PLAN_ONCE "/* plan once */"
/* Seconds between reconnection attempts of one connection. */
#define PG_RECONNECT_S 1

/* One writer at a time across every replica: the same discipline as
 * SQLite's, so a write's checks hold until it commits. The key is
 * gpuinv's own (an arbitrary constant); the lock ends with the
 * transaction, also when a replica dies. */
#define PG_WRITE_LOCK "SELECT pg_advisory_xact_lock(7305264918007312385)"
/* Taken shared by writers that lock the rows they touch by key
 * (db_tx_begin_keyed()): they run beside each other and exclude, and
 * wait for, every writer that holds it exclusively. */
#define PG_WRITE_LOCK_SHARED "SELECT pg_advisory_xact_lock_shared(7305264918007312385)"

/* The texts without parameters the driver sends most (transaction
 * control, the writers' locks, the plan settings, db_part_begin()'s): each session prepares
 * them once when it connects and sends them by name, so the server does
 * not parse them again at every use. */
enum pg_fixed {
    PF_BEGIN,
    PF_BEGIN_READ,
    PF_COMMIT,
    PF_ROLLBACK,
    PF_WRITE_LOCK,
    PF_WRITE_LOCK_SHARED,
    PF_CUSTOM_ON,
    PF_GENERIC_ON,
    PF_PLAN_OFF,
    PF_PART,
    PF_PART_RELEASE,
    PF_PART_ROLLBACK,
    PF__N
};
static const char *const pg_fixed_sql[PF__N] = {
    [PF_BEGIN] = "BEGIN",
    [PF_BEGIN_READ] = "BEGIN ISOLATION LEVEL REPEATABLE READ READ ONLY",
    [PF_COMMIT] = "COMMIT",
    [PF_ROLLBACK] = "ROLLBACK",
    [PF_WRITE_LOCK] = PG_WRITE_LOCK,
    [PF_WRITE_LOCK_SHARED] = PG_WRITE_LOCK_SHARED,
    [PF_CUSTOM_ON] = "SET plan_cache_mode = force_custom_plan",
    [PF_GENERIC_ON] = "SET plan_cache_mode = force_generic_plan",
    [PF_PLAN_OFF] = "RESET plan_cache_mode",
    [PF_PART] = "SAVEPOINT part",
    [PF_PART_RELEASE] = "RELEASE SAVEPOINT part",
    [PF_PART_ROLLBACK] = "ROLLBACK TO SAVEPOINT part",
};

/* The fixed text sql is (by content), or -1. */
static int fixed_of(const char *sql)
{
    for (int i = 0; i < PF__N; i++)
        if (strcmp(sql, pg_fixed_sql[i]) == 0)
            return i;
    return -1;
}

/* The session's name of a fixed text. */
static void fixed_name(int f, char out[16]) { snprintf(out, 16, "f%d", f); }

/* Sends a fixed text by its name (in pipeline mode): 1, or 0 when
 * sending failed. */
static int send_fixed(PGconn *pg, int f)
{
    char name[16];

    fixed_name(f, name);
    return PQsendQueryPrepared(pg, name, 0, NULL, NULL, NULL, 0);
}

/* Type OIDs of the built-in types the readers tell apart (pg_type.h). */
enum {
    OID_BOOL = 16,
    OID_INT8 = 20,
    OID_INT2 = 21,
    OID_TEXT = 25,
    OID_INT4 = 23,
    OID_FLOAT4 = 700,
    OID_FLOAT8 = 701,
    OID_NUMERIC = 1700
};

struct pg_conn;

struct pg_stmt {
    struct db_stmt base;
    struct pg_conn *pc;
    char name[16];               /* the server-side prepared statement's name */
    char *text;                  /* the SQL with $n parameters */
    bool prepared;               /* on the current server session */
    int plan_mode;               /* the SET around each execution (PF_*), or -1 */
    int np;                      /* distinct parameters */
    char *names[PG_MAX_PARAMS];  /* ":name", in $n order */
    char *vals[PG_MAX_PARAMS];   /* bound values; NULL is SQL NULL */
    bool owned[PG_MAX_PARAMS];   /* vals[i] was allocated */
    char num[PG_MAX_PARAMS][32]; /* storage of bound numbers */
    PGresult *res;               /* the executed statement's result, until reset */
    int row, nrows;
};

struct pg_slot {
    const char *sql; /* the key: a static string's address */
    struct pg_stmt *st;
};

struct pg_conn {
    struct conn base;
    PGconn *pg;
    char *target;
    unsigned next_name;
    int64_t changes;
    int queued;              /* statements sent by pg_send() whose answers are due */
    int defer_st;            /* the first of them that failed, until reported */
    int64_t retry_at;        /* no reconnection attempt before this time... */
    unsigned connects_since; /* ...unless pg_connects has moved past this */
    struct pg_slot slots[PG_SLOTS];
};

/* Successful connections made by this process. A connection that failed
 * to reconnect waits out its retry interval only while no other has
 * reached the server since: once one has, the server is back, and every
 * connection of the pool tries again when next borrowed. */
static atomic_uint pg_connects;

static struct pg_conn *pgc(struct conn *c) { return (struct pg_conn *)c; }

static struct pg_stmt *pgs(struct db_stmt *s) { return (struct pg_stmt *)s; }

static void on_notice(void *arg, const char *msg)
{
    (void)arg;
    gi_log(GI_LOG_DEBUG, "postgresql: %s", msg);
}

/* Maps a failed result (or, when res is NULL, the connection's state) to
 * a status, logging what is not an expected outcome. */
static int map_error(struct pg_conn *c, const PGresult *res)
{
    const char *code = res ? PQresultErrorField(res, PG_DIAG_SQLSTATE) : NULL;
    const char *msg = res ? PQresultErrorMessage(res) : PQerrorMessage(c->pg);

    if (PQstatus(c->pg) != CONNECTION_OK || code == NULL || strncmp(code, "08", 2) == 0 ||
        strncmp(code, "57P", 3) == 0) {
        gi_warn("postgresql: connection lost: %s", msg);
        return GI_UNAVAILABLE;
    }
    if (strcmp(code, "23505") == 0)
        return GI_CONFLICT;
    if (strcmp(code, "23503") == 0)
        return GI_NOT_FOUND;
    if (strcmp(code, "40001") == 0 || strcmp(code, "40P01") == 0) {
        gi_info("postgresql: %s (%s); the request will be retried", msg, code);
        return GI_RETRY;
    }
    if (strcmp(code, "55P03") == 0 || strcmp(code, "57014") == 0 || strcmp(code, "53300") == 0)
        return GI_UNAVAILABLE; /* lock or statement timeout, too many connections */
    if (strcmp(code, "53100") == 0) {
        gi_warn("postgresql: the database's disk is full: %s", msg);
        return GI_NO_SPACE;
    }
    if (strcmp(code, "54000") == 0 || strcmp(code, "22001") == 0)
        return GI_TOO_LARGE;
    gi_error("postgresql: %s (%s)", msg, code);
    return GI_INTERNAL;
}

static void stmt_clear(struct pg_stmt *s)
{
    for (int i = 0; i < s->np; i++) {
        if (s->owned[i])
            free(s->vals[i]);
        s->vals[i] = NULL;
        s->owned[i] = false;
    }
}

static void stmt_free(struct pg_stmt *s)
{
    if (s == NULL)
        return;
    stmt_clear(s);
    PQclear(s->res);
    for (int i = 0; i < s->np; i++)
        free(s->names[i]);
    free(s->text);
    free(s);
}

static void pg_close(struct conn *bc)
{
    struct pg_conn *c = pgc(bc);

    if (c == NULL)
        return;
    for (int i = 0; i < PG_SLOTS; i++)
        stmt_free(c->slots[i].st);
    PQfinish(c->pg);
    free(c->target);
    free(c);
}

/* Connects (or reconnects) c: defaults a target may override, then
 * session settings the store relies on. */
static int pg_connect(struct pg_conn *c)
{
    const char *keys[] = {"connect_timeout", "application_name", "dbname", NULL};
    const char *vals[] = {"5", "gpuinv", c->target, NULL};
    PGresult *r;

    PQfinish(c->pg);
    c->queued = 0;
    c->defer_st = GI_OK;
    c->pg = PQconnectdbParams(keys, vals, 1);
    if (c->pg == NULL)
        return GI_INTERNAL;
    for (int i = 0; i < PG_SLOTS; i++)
        if (c->slots[i].st)
            c->slots[i].st->prepared = false;
    if (PQstatus(c->pg) != CONNECTION_OK) {
        gi_warn("postgresql: cannot connect: %s", PQerrorMessage(c->pg));
        return GI_UNAVAILABLE;
    }
    PQsetNoticeProcessor(c->pg, on_notice, NULL);
    /* No JIT compilation: it is made again at every execution, tens of
     * milliseconds for a statement costed above jit_above_cost, which a
     * generic plan of a page is (its LIMIT priced at a tenth of the
     * table), while the store's statements read pages and rollups in
     * well under that (PERFORMANCE.md, "Pages planned once on
     * PostgreSQL"). */
    r = PQexec(c->pg, "SET TIME ZONE 'UTC'; SET client_min_messages = warning; SET jit = off");
    if (PQresultStatus(r) != PGRES_COMMAND_OK) {
        int st = map_error(c, r);
        PQclear(r);
        return st;
    }
    PQclear(r);
    for (int f = 0; f < PF__N; f++) {
        char name[16];
        fixed_name(f, name);
        r = PQprepare(c->pg, name, pg_fixed_sql[f], 0, NULL);
        if (PQresultStatus(r) != PGRES_COMMAND_OK) {
            int st = map_error(c, r);
            PQclear(r);
            return st;
        }
        PQclear(r);
    }
    atomic_fetch_add(&pg_connects, 1);
    return GI_OK;
}

static int pg_open(const char *target, struct conn **out)
{
    struct pg_conn *c = calloc(1, sizeof *c);
    int rc;

    if (c == NULL || (c->target = strdup(target)) == NULL) {
        free(c);
        return GI_INTERNAL;
    }
    c->base.drv = &db_pg_driver;
    c->base.dialect = DB_PG;
    if ((rc = pg_connect(c)) != GI_OK) {
        pg_close(&c->base);
        return rc;
    }
    *out = &c->base;
    return GI_OK;
}

/* Notices a server that closed an idle connection (a restart or fast
 * shutdown ends every session): libpq learns of it only when it next
 * reads, so an idle connection still says CONNECTION_OK. Between
 * requests nothing is expected from the server, so a readable socket
 * means a message the server sent unasked (a termination notice, then
 * the end of the stream) or a harmless one (a parameter's new value);
 * reading it lets libpq mark a closed connection bad. Never blocks. */
static void notice_closed(struct pg_conn *c)
{
    struct pollfd pfd = {.fd = PQsocket(c->pg), .events = POLLIN};

    /* The termination notice and the end of the stream may take one read
     * each. */
    for (int i = 0; i < 4 && pfd.fd >= 0 && PQstatus(c->pg) == CONNECTION_OK; i++) {
        if (poll(&pfd, 1, 0) <= 0 || !PQconsumeInput(c->pg))
            return;
    }
}

static bool pg_alive(struct conn *bc)
{
    struct pg_conn *c = pgc(bc);
    int64_t now = gi_now();
    unsigned connects = atomic_load(&pg_connects);

    if (PQstatus(c->pg) == CONNECTION_OK && PQtransactionStatus(c->pg) == PQTRANS_IDLE)
        notice_closed(c);
    if (PQstatus(c->pg) == CONNECTION_OK)
        return true;
    if (now < c->retry_at && connects == c->connects_since)
        return false;
    c->retry_at = now + PG_RECONNECT_S;
    c->connects_since = connects;
    if (pg_connect(c) != GI_OK)
        return false;
    gi_info("postgresql: reconnected");
    return true;
}

static bool word_char(char ch) { return isalnum((unsigned char)ch) || ch == '_'; }

/* True when the keyword LIKE starts at sql[i]. */
static bool is_like(const char *sql, size_t i, size_t n)
{
    return i + 4 <= n && strncasecmp(sql + i, "LIKE", 4) == 0 &&
           (i == 0 || !word_char(sql[i - 1])) && (i + 4 == n || !word_char(sql[i + 4]));
}

/* Rewrites :name parameters to $n, outside string literals, quoted
 * identifiers, comments and :: casts; records each distinct name once.
 * LIKE becomes ILIKE: the store's LIKE matches regardless of case, as
 * SQLite's does. */
static int rewrite(struct pg_stmt *s, const char *sql)
{
    size_t n = strlen(sql), j = 0;
    char *out = malloc(n * 2 + 1);

    if (out == NULL)
        return GI_INTERNAL;
    for (size_t i = 0; i < n;) {
        char ch = sql[i];
        if (ch == '\'' || ch == '"') {
            size_t k = i + 1;
            while (k < n && sql[k] != ch)
                k++;
            k = k < n ? k + 1 : n;
            memcpy(out + j, sql + i, k - i);
            j += k - i;
            i = k;
        } else if (ch == '-' && i + 1 < n && sql[i + 1] == '-') {
            while (i < n && sql[i] != '\n')
                out[j++] = sql[i++];
        } else if (is_like(sql, i, n)) {
            memcpy(out + j, "ILIKE", 5);
            j += 5;
            i += 4;
        } else if (ch == ':' && i + 1 < n && sql[i + 1] == ':') {
            out[j++] = ':';
            out[j++] = ':';
            i += 2;
        } else if (ch == ':' && i + 1 < n &&
                   (isalpha((unsigned char)sql[i + 1]) || sql[i + 1] == '_')) {
            size_t k = i + 1;
            int idx = -1;
            while (k < n && (isalnum((unsigned char)sql[k]) || sql[k] == '_'))
                k++;
            for (int p = 0; p < s->np; p++)
                if (strlen(s->names[p]) == k - i && memcmp(s->names[p], sql + i, k - i) == 0)
                    idx = p;
            if (idx < 0) {
                if (s->np == PG_MAX_PARAMS || !(s->names[s->np] = strndup(sql + i, k - i))) {
                    free(out);
                    return GI_INTERNAL;
                }
                idx = s->np++;
            }
            j += (size_t)snprintf(out + j, 8, "$%d", idx + 1);
            i = k;
        } else {
            out[j++] = sql[i++];
        }
    }
    out[j] = '\0';
    s->text = out;
    return GI_OK;
}

/* A new statement for sql, its server-side name `kind` and a number. */

static struct pg_stmt *stmt_new(struct pg_conn *c, const char *sql, char kind)
{
    struct pg_stmt *s = calloc(1, sizeof *s);

    if (s == NULL)
        return NULL;
    if (rewrite(s, sql) != GI_OK) {
        gi_error("prepare: cannot rewrite: %.120s", sql);
        stmt_free(s);
        return NULL;
    }
    s->base.drv = &db_pg_driver;
    s->pc = c;
    s->plan_mode = -1;
    if (strncmp(sql, PG_PLAN_EACH, sizeof PG_PLAN_EACH - 1) == 0)
        s->plan_mode = PF_CUSTOM_ON;
    else if (strncmp(sql, PG_PLAN_ONCE, sizeof PG_PLAN_ONCE - 1) == 0)
        s->plan_mode = PF_GENERIC_ON;
    snprintf(s->name, sizeof s->name, "%c%u", kind, c->next_name++);
    return s;
}

static struct db_stmt *pg_prep(struct conn *bc, const char *sql)
{
    struct pg_conn *c = pgc(bc);
    uintptr_t h = ((uintptr_t)sql >> 3) * (uintptr_t)0x9E3779B97F4A7C15ull;
    size_t i = (size_t)(h >> 20) & (PG_SLOTS - 1);

    for (size_t probe = 0; probe < PG_SLOTS; probe++, i = (i + 1) & (PG_SLOTS - 1)) {
        struct pg_slot *slot = &c->slots[i];
        struct pg_stmt *s;
        if (slot->sql == sql) {
            s = slot->st;
            PQclear(s->res);
            s->res = NULL;
            stmt_clear(s);
            return &s->base;
        }
        if (slot->sql != NULL)
            continue;
        if ((s = stmt_new(c, sql, 'g')) == NULL)
            return NULL;
        slot->sql = sql;
        slot->st = s;
        return &s->base;
    }
    gi_error("prepare: statement cache full (%d)", PG_SLOTS);
    return NULL;
}

static struct db_stmt *pg_prep_once(struct conn *bc, const char *sql)
{
    struct pg_stmt *s = stmt_new(pgc(bc), sql, 'o');

    return s ? &s->base : NULL;
}

static void drain(struct pg_conn *c);

/* Frees a statement of pg_prep_once(), deallocating it on the server
 * when it was prepared there (which a failed transaction refuses until
 * it ends; the session's end then drops it). */
static void pg_stmt_free(struct db_stmt *bs)
{
    struct pg_stmt *s = pgs(bs);
    char sql[40];

    drain(s->pc); /* a failure among them is reported by the next call that answers */
    if (s->prepared && PQstatus(s->pc->pg) == CONNECTION_OK &&
        PQtransactionStatus(s->pc->pg) != PQTRANS_INERROR) {
        snprintf(sql, sizeof sql, "DEALLOCATE %s", s->name);
        PQclear(PQexec(s->pc->pg, sql));
    }
    stmt_free(s);
}

static int pg_param_index(struct db_stmt *bs, const char *name)
{
    struct pg_stmt *s = pgs(bs);

    for (int i = 0; i < s->np; i++)
        if (strcmp(s->names[i], name) == 0)
            return i + 1;
    return 0;
}

/* Drops the value parameter i holds, making room for a new one. */
static void unbind(struct pg_stmt *s, int i)
{
    if (s->owned[i])
        free(s->vals[i]);
    s->owned[i] = false;
    s->vals[i] = NULL;
}

static void pg_bind_int(struct db_stmt *bs, int i, int64_t v)
{
    struct pg_stmt *s = pgs(bs);

    unbind(s, i - 1);
    snprintf(s->num[i - 1], sizeof s->num[i - 1], "%" PRId64, v);
    s->vals[i - 1] = s->num[i - 1];
}

static void pg_bind_dbl(struct db_stmt *bs, int i, double v)
{
    struct pg_stmt *s = pgs(bs);

    unbind(s, i - 1);
    snprintf(s->num[i - 1], sizeof s->num[i - 1], "%.17g", v);
    s->vals[i - 1] = s->num[i - 1];
}

static void pg_bind_text(struct db_stmt *bs, int i, const char *v)
{
    struct pg_stmt *s = pgs(bs);

    unbind(s, i - 1);
    if ((s->vals[i - 1] = strdup(v)) != NULL)
        s->owned[i - 1] = true;
}

static void pg_bind_null(struct db_stmt *bs, int i) { unbind(pgs(bs), i - 1); }

static int pg_exec(struct conn *bc, const char *sql);
static bool pg_tx_open(struct conn *c);
static int send_text(struct pg_conn *c, const char *sql);

/* Prepares s on the server. A parameter whose type the statement leaves
 * open (only ever compared with NULL before its typed use, as in
 * ":q IS NULL OR name LIKE :q") is declared text and the statement
 * prepared again. */
static int prepare(struct pg_conn *c, struct pg_stmt *s)
{
    Oid types[PG_MAX_PARAMS] = {0};
    /* Inside a transaction a failed attempt would fail the transaction:
     * each attempt runs under a savepoint. */
    bool guard = pg_tx_open(&c->base);

    for (int attempt = 0; attempt <= s->np; attempt++) {
        if (guard && pg_exec(&c->base, "SAVEPOINT gi_prepare") != GI_OK)
            return GI_UNAVAILABLE;
        PGresult *r = PQprepare(c->pg, s->name, s->text, s->np, types);
        const char *code = PQresultErrorField(r, PG_DIAG_SQLSTATE);
        const char *msg = PQresultErrorMessage(r);
        const char *at = msg ? strstr(msg, "parameter $") : NULL;
        long k = at ? strtol(at + 11, NULL, 10) : 0;
        int st;

        if (PQresultStatus(r) == PGRES_COMMAND_OK) {
            PQclear(r);
            s->prepared = true;
            return guard ? pg_exec(&c->base, "RELEASE SAVEPOINT gi_prepare") : GI_OK;
        }
        if (guard)
            pg_exec(&c->base, "ROLLBACK TO SAVEPOINT gi_prepare");
        if (code && (strcmp(code, "42P18") == 0 || strcmp(code, "42P08") == 0) && k >= 1 &&
            k <= s->np && types[k - 1] == 0) {
            types[k - 1] = OID_TEXT;
            PQclear(r);
            continue;
        }
        st = map_error(c, r);
        if (st == GI_INTERNAL)
            gi_error("prepare failed for: %.200s", s->text);
        PQclear(r);
        return st;
    }
    return GI_INTERNAL;
}

/* Sends the bound, prepared statement in pipeline mode, between the
 * settings of PG_PLAN_EACH or PG_PLAN_ONCE when it has one; the number of
 * queries sent (1 or 3, each answered in turn) or 0 when sending failed. */
static int send_bound(struct pg_conn *c, const struct pg_stmt *s)
{
    const char *const *v = (const char *const *)s->vals;

    if (s->plan_mode >= 0 && send_fixed(c->pg, s->plan_mode) != 1)
        return 0;
    if (PQsendQueryPrepared(c->pg, s->name, s->np, v, NULL, NULL, 0) != 1)
        return 0;
    if (s->plan_mode >= 0 && send_fixed(c->pg, PF_PLAN_OFF) != 1)
        return 0;
    return s->plan_mode >= 0 ? 3 : 1;
}

/* A write's result: its row count becomes the connection's changes. */
static void note_changes(struct pg_conn *c, PGresult *r)
{
    const char *cmd = PQcmdStatus(r);

    if (strncmp(cmd, "INSERT", 6) == 0 || strncmp(cmd, "UPDATE", 6) == 0 ||
        strncmp(cmd, "DELETE", 6) == 0)
        c->changes = strtoll(PQcmdTuples(r), NULL, 10);
}

static void pipeline_take(struct pg_conn *c, PGresult **out);
static void pipeline_leave(struct pg_conn *c);

/* Reads the answers of the statements pg_send() sent, in order: each
 * write's row count becomes the connection's, the first failure is kept
 * in defer_st; with `last`, the last query's result goes there instead,
 * unjudged (NULL when none came). Leaves pipeline mode. */
static void drain_into(struct pg_conn *c, PGresult **last)
{
    PGresult *r;

    if (c->queued == 0)
        return;
    if (!PQpipelineSync(c->pg)) {
        if (c->defer_st == GI_OK)
            c->defer_st = map_error(c, NULL);
    } else {
        for (int q = 0; q < c->queued; q++) {
            pipeline_take(c, &r);
            if (last && q == c->queued - 1) {
                *last = r;
                break;
            }
            if (r == NULL) {
                if (c->defer_st == GI_OK)
                    c->defer_st = map_error(c, NULL);
                break;
            }
            switch (PQresultStatus(r)) {
            case PGRES_COMMAND_OK:
            case PGRES_TUPLES_OK:
                note_changes(c, r);
                break;
            case PGRES_PIPELINE_ABORTED:
                break;
            default:
                if (c->defer_st == GI_OK)
                    c->defer_st = map_error(c, r);
            }
            PQclear(r);
        }
    }
    c->queued = 0;
    pipeline_leave(c);
}

static void drain(struct pg_conn *c) { drain_into(c, NULL); }

/* For a query just sent after deferred ones, into their pipeline: reads
 * every answer, the query's into *out, so that a waited statement behind
 * deferred ones costs one round trip, not two. GI_OK, or the first
 * deferred failure (reported once; *out is then NULL). */
static int drain_then(struct pg_conn *c, PGresult **out)
{
    int st;

    *out = NULL;
    drain_into(c, out);
    if ((st = c->defer_st) != GI_OK) {
        c->defer_st = GI_OK;
        PQclear(*out);
        *out = NULL;
    }
    return st;
}

/* Reads what is due and reports (once) the first deferred failure. */
static int flush(struct pg_conn *c)
{
    int st;

    drain(c);
    st = c->defer_st;
    c->defer_st = GI_OK;
    return st;
}

static int pg_flush(struct conn *bc) { return flush(pgc(bc)); }

/* Deferred statements sent before their answers are read, at most. */
#define PG_DEFER_MAX 256

/* db_exec_done() while deferring: the statement goes into the pipeline
 * (libpq copies its parameters at once); a statement not yet prepared on
 * this session is prepared first, outside the pipeline. */
static int pg_send(struct conn *bc, struct db_stmt *bs)
{
    struct pg_conn *c = pgc(bc);
    struct pg_stmt *s = pgs(bs);
    int st, sent;

    if (PQstatus(c->pg) != CONNECTION_OK)
        return GI_UNAVAILABLE;
    if (c->defer_st != GI_OK || !s->prepared || c->queued >= PG_DEFER_MAX) {
        if ((st = flush(c)) != GI_OK)
            return st;
        if (!s->prepared && (st = prepare(c, s)) != GI_OK)
            return st;
    }
    if (PQpipelineStatus(c->pg) == PQ_PIPELINE_OFF && !PQenterPipelineMode(c->pg))
        return map_error(c, NULL);
    if ((sent = send_bound(c, s)) == 0) {
        st = map_error(c, NULL);
        return flush(c) != GI_OK ? GI_UNAVAILABLE : st;
    }
    c->queued += sent;
    return GI_OK;
}

/* Executes a statement between its plan settings, the three in
 * one pipeline (one round trip): the first failed result, else the
 * statement's; NULL when nothing came back. */
static PGresult *execute_between(struct pg_conn *c, struct pg_stmt *s)
{
    PGresult *r[3] = {NULL, NULL, NULL}, *out;
    int sent;

    if (!PQenterPipelineMode(c->pg))
        return NULL;
    sent = send_bound(c, s);
    if (PQpipelineSync(c->pg) && sent == 3)
        for (int q = 0; q < 3; q++)
            pipeline_take(c, &r[q]);
    pipeline_leave(c);
    out = r[0] && PQresultStatus(r[0]) != PGRES_COMMAND_OK ? r[0] : r[1];
    for (int q = 0; q < 3; q++)
        if (r[q] != out)
            PQclear(r[q]);
    return out;
}

/* Prepares s on the server (once per session) and executes it. */
static int execute(struct pg_conn *c, struct pg_stmt *s)
{
    /* Behind deferred statements, it joins their pipeline. */
    bool behind = c->queued > 0 && c->defer_st == GI_OK && s->prepared && s->plan_mode < 0;
    PGresult *r;
    int st;

    if (!behind && (c->queued || c->defer_st != GI_OK) && (st = flush(c)) != GI_OK)
        return st;
    if (!s->prepared && (st = prepare(c, s)) != GI_OK)
        return st;
    if (behind) {
        if (send_bound(c, s) != 1) {
            st = map_error(c, NULL);
            return flush(c) != GI_OK ? GI_UNAVAILABLE : st;
        }
        c->queued++;
        if ((st = drain_then(c, &r)) != GI_OK)
            return st;
    } else if (s->plan_mode >= 0) {
        r = execute_between(c, s);
    } else {
        r = PQexecPrepared(c->pg, s->name, s->np, (const char *const *)s->vals, NULL, NULL, 0);
    }
    switch (PQresultStatus(r)) {
    case PGRES_COMMAND_OK:
    case PGRES_TUPLES_OK: {
        note_changes(c, r);
        s->res = r;
        s->row = -1;
        s->nrows = PQntuples(r);
        return GI_OK;
    }
    default:
        st = map_error(c, r);
        PQclear(r);
        return st;
    }
}

static int pg_step(struct conn *bc, struct db_stmt *bs)
{
    struct pg_conn *c = pgc(bc);
    struct pg_stmt *s = pgs(bs);
    int st;

    if (s->res == NULL) {
        if (PQstatus(c->pg) != CONNECTION_OK)
            return GI_UNAVAILABLE;
        if ((st = execute(c, s)) != GI_OK)
            return st;
    }
    if (s->row < s->nrows)
        s->row++;
    return s->row < s->nrows ? DB_ROW : DB_DONE;
}

/* The SQL of a batch's snapshot, sent in its pipeline. */

/* Reads the results of one query of a pipeline: its first result is kept
 * in *out (NULL when none came), the rest are dropped, up to the NULL that
 * ends the query. */
static void pipeline_take(struct pg_conn *c, PGresult **out)
{
    PGresult *r;

    *out = NULL;
    while ((r = PQgetResult(c->pg)) != NULL) {
        if (*out == NULL)
            *out = r;
        else
            PQclear(r);
    }
}

/* Ends pipeline mode, reading and dropping whatever the server still
 * sends up to the synchronization point (bounded, for a connection that
 * broke on the way). */
static void pipeline_leave(struct pg_conn *c)
{
    PGresult *r;

    for (int i = 0; i < 1024 && !PQexitPipelineMode(c->pg); i++) {
        if (PQstatus(c->pg) != CONNECTION_OK)
            break;
        if ((r = PQgetResult(c->pg)) != NULL)
            PQclear(r);
    }
}

/* db_read_batch() on PostgreSQL: one pipeline, so one round trip, with
 * BEGIN ... COMMIT around the statements when there are several and no
 * transaction is open (REPEATABLE READ: one snapshot for all of them). A
 * statement the session has not prepared yet is prepared first, once per
 * session. On failure every statement is left without rows. */
static int pg_run_batch(struct conn *bc, struct db_stmt *const *ss, int n)
{
    struct pg_conn *c = pgc(bc);
    bool tx, sent = true;
    PGresult *r = NULL;
    int st = GI_OK;

    if (PQstatus(c->pg) != CONNECTION_OK)
        return GI_UNAVAILABLE;
    if ((c->queued || c->defer_st != GI_OK) && (st = flush(c)) != GI_OK)
        return st;
    tx = n > 1 && PQtransactionStatus(c->pg) == PQTRANS_IDLE;
    for (int i = 0; i < n; i++) {
        struct pg_stmt *s = pgs(ss[i]);
        PQclear(s->res);
        s->res = NULL;
        if (!s->prepared && (st = prepare(c, s)) != GI_OK)
            return st;
    }
    if (!PQenterPipelineMode(c->pg))
        return map_error(c, NULL);
    if (tx)
        sent = send_fixed(c->pg, PF_BEGIN_READ) == 1;
    for (int i = 0; sent && i < n; i++)
        sent = send_bound(c, pgs(ss[i])) != 0;
    if (sent && tx)
        sent = send_fixed(c->pg, PF_COMMIT) == 1;
    if (!sent || !PQpipelineSync(c->pg)) {
        st = map_error(c, NULL);
        if (!sent)
            PQpipelineSync(c->pg);
        pipeline_leave(c);
        return st;
    }
    /* Results come in the order sent: BEGIN, the statements (one planned
     * each time between its two settings), COMMIT. */
    for (int i = tx ? -1 : 0; i < n + (tx ? 1 : 0); i++) {
        struct pg_stmt *s = i >= 0 && i < n ? pgs(ss[i]) : NULL;
        int parts = s && s->plan_mode >= 0 ? 3 : 1;
        for (int k = 0; k < parts; k++) {
            pipeline_take(c, &r);
            if (r == NULL) {
                if (st == GI_OK)
                    st = map_error(c, NULL);
                goto done;
            }
            switch (PQresultStatus(r)) {
            case PGRES_COMMAND_OK:
            case PGRES_TUPLES_OK:
                if (s && k == parts / 2 && st == GI_OK) {
                    s->res = r;
                    s->row = -1;
                    s->nrows = PQntuples(r);
                    r = NULL;
                }
                break;
            case PGRES_PIPELINE_ABORTED:
                break;
            default:
                if (st == GI_OK)
                    st = map_error(c, r);
            }
            PQclear(r);
            r = NULL;
        }
    }
done:
    pipeline_leave(c);
    /* A failed statement leaves the batch's transaction failed. */
    if (tx && PQtransactionStatus(c->pg) != PQTRANS_IDLE)
        pg_exec(bc, "ROLLBACK");
    if (st != GI_OK)
        for (int i = 0; i < n; i++) {
            PQclear(pgs(ss[i])->res);
            pgs(ss[i])->res = NULL;
        }
    return st;
}

static void pg_reset(struct db_stmt *bs)
{
    struct pg_stmt *s = pgs(bs);

    PQclear(s->res);
    s->res = NULL;
}

static int pg_col_count(struct db_stmt *s) { return pgs(s)->res ? PQnfields(pgs(s)->res) : 0; }

static const char *pg_col_name(struct db_stmt *s, int i) { return PQfname(pgs(s)->res, i); }

static bool is_null(struct pg_stmt *s, int i)
{
    return s->res == NULL || s->row < 0 || s->row >= s->nrows || PQgetisnull(s->res, s->row, i);
}

static enum db_type pg_col_type(struct db_stmt *bs, int i)
{
    struct pg_stmt *s = pgs(bs);
    const char *v;

    if (is_null(s, i))
        return DB_T_NULL;
    switch (PQftype(s->res, i)) {
    case OID_BOOL:
    case OID_INT2:
    case OID_INT4:
    case OID_INT8:
        return DB_T_INT;
    case OID_FLOAT4:
    case OID_FLOAT8:
        return DB_T_REAL;
    case OID_NUMERIC:
        /* SUM of integers is numeric: whole values read as integers. */
        v = PQgetvalue(s->res, s->row, i);
        return strpbrk(v, ".eEN") ? DB_T_REAL : DB_T_INT;
    default:
        return DB_T_TEXT;
    }
}

static int64_t pg_col_int(struct db_stmt *bs, int i)
{
    struct pg_stmt *s = pgs(bs);
    const char *v;

    if (is_null(s, i))
        return 0;
    v = PQgetvalue(s->res, s->row, i);
    if (PQftype(s->res, i) == OID_BOOL)
        return v[0] == 't';
    if (strpbrk(v, ".eE"))
        return (int64_t)strtod(v, NULL);
    return strtoll(v, NULL, 10);
}

static double pg_col_dbl(struct db_stmt *bs, int i)
{
    struct pg_stmt *s = pgs(bs);

    if (is_null(s, i))
        return 0.0;
    if (PQftype(s->res, i) == OID_BOOL)
        return PQgetvalue(s->res, s->row, i)[0] == 't';
    return strtod(PQgetvalue(s->res, s->row, i), NULL);
}

static const char *pg_col_text(struct db_stmt *bs, int i)
{
    struct pg_stmt *s = pgs(bs);

    return is_null(s, i) ? NULL : PQgetvalue(s->res, s->row, i);
}

static int pg_col_bytes(struct db_stmt *bs, int i)
{
    struct pg_stmt *s = pgs(bs);

    return is_null(s, i) ? 0 : PQgetlength(s->res, s->row, i);
}

/* The row count of the last statement run: deferred ones are read first
 * (a failure among them is reported by the next call that answers). */
static int64_t pg_changes(struct conn *c)
{
    drain(pgc(c));
    return pgc(c)->changes;
}

/* Runs SQL text. One statement behind deferred ones joins their pipeline
 * (the commit of a batch costs one round trip with them); BEGIN on an
 * idle connection is itself sent without waiting, its answer read with
 * the next statement's (the lock a writing transaction takes next), as it
 * fails only with the connection, which that statement notices too. */
static int pg_exec(struct conn *bc, const char *sql)
{
    struct pg_conn *c = pgc(bc);
    bool one = strchr(sql, ';') == NULL, behind = one && c->queued > 0 && c->defer_st == GI_OK;
    int f = one ? fixed_of(sql) : -1;
    PGresult *r;
    int st = GI_OK;

    if (PQstatus(c->pg) != CONNECTION_OK)
        return GI_UNAVAILABLE;
    if (!behind && (c->queued || c->defer_st != GI_OK) && (st = flush(c)) != GI_OK)
        return st;
    if (behind) {
        if ((f >= 0 ? send_fixed(c->pg, f)
                    : PQsendQueryParams(c->pg, sql, 0, NULL, NULL, NULL, NULL, 0)) != 1) {
            st = map_error(c, NULL);
            return flush(c) != GI_OK ? GI_UNAVAILABLE : st;
        }
        c->queued++;
        if ((st = drain_then(c, &r)) != GI_OK)
            return st;
    } else if (f == PF_BEGIN && PQtransactionStatus(c->pg) == PQTRANS_IDLE) {
        return send_text(c, sql);
    } else if (f >= 0) {
        char name[16];
        fixed_name(f, name);
        r = PQexecPrepared(c->pg, name, 0, NULL, NULL, NULL, 0);
    } else {
        r = PQexec(c->pg, sql);
    }
    if (PQresultStatus(r) != PGRES_COMMAND_OK && PQresultStatus(r) != PGRES_TUPLES_OK) {
        st = map_error(c, r);
        if (st == GI_INTERNAL)
            gi_error("postgresql: failed: %.200s", sql);
    }
    PQclear(r);
    return st;
}

/* Bytes of COPY data sent per message. */
#define PG_COPY_CHUNK (1 << 20)

/* Sends SQL text without parameters into the pipeline of deferred
 * statements (pg_send()), its answer read with theirs. */
static int send_text(struct pg_conn *c, const char *sql)
{
    if (PQpipelineStatus(c->pg) == PQ_PIPELINE_OFF && !PQenterPipelineMode(c->pg))
        return map_error(c, NULL);
    int f = fixed_of(sql);

    if ((f >= 0 ? send_fixed(c->pg, f)
                : PQsendQueryParams(c->pg, sql, 0, NULL, NULL, NULL, NULL, 0)) != 1) {
        int st = map_error(c, NULL);
        return flush(c) != GI_OK ? GI_UNAVAILABLE : st;
    }
    c->queued++;
    return GI_OK;
}

/* db_copy_in(): the savepoint and the COPY go in one message, so the copy
 * costs two round trips (its start, then the data and its result); the
 * savepoint's release is a third, or, while deferring, goes with the
 * deferred statements that follow. */
static int pg_copy_in(struct conn *bc, const char *sql, const char *data, size_t len, int64_t *rows)
{
    struct pg_conn *c = pgc(bc);
    static const char savepoint[] = "SAVEPOINT gi_copy; ";
    size_t n = strlen(sql);
    char *q = malloc(sizeof savepoint + n);
    PGresult *r;
    int st = GI_OK;

    if (q == NULL)
        return GI_INTERNAL;
    if (PQstatus(c->pg) != CONNECTION_OK) {
        free(q);
        return GI_UNAVAILABLE;
    }
    if ((c->queued || c->defer_st != GI_OK) && (st = flush(c)) != GI_OK) {
        free(q);
        return st;
    }
    memcpy(q, savepoint, sizeof savepoint - 1);
    memcpy(q + sizeof savepoint - 1, sql, n + 1);
    r = PQexec(c->pg, q);
    free(q);
    if (PQresultStatus(r) != PGRES_COPY_IN) {
        st = map_error(c, r);
        PQclear(r);
        pg_exec(bc, "ROLLBACK TO SAVEPOINT gi_copy; RELEASE SAVEPOINT gi_copy");
        return st;
    }
    PQclear(r);
    for (size_t off = 0; st == GI_OK && off < len; off += PG_COPY_CHUNK) {
        int chunk = (int)(len - off < PG_COPY_CHUNK ? len - off : PG_COPY_CHUNK);
        if (PQputCopyData(c->pg, data + off, chunk) != 1)
            st = map_error(c, NULL);
    }
    if (PQputCopyEnd(c->pg, st == GI_OK ? NULL : "gpuinv: the copy was abandoned") != 1 &&
        st == GI_OK)
        st = map_error(c, NULL);
    while ((r = PQgetResult(c->pg)) != NULL) {
        if (PQresultStatus(r) == PGRES_COMMAND_OK)
            *rows = strtoll(PQcmdTuples(r), NULL, 10);
        else if (st == GI_OK)
            st = map_error(c, r);
        PQclear(r);
    }
    if (st == GI_OK) {
        c->changes = *rows;
        return c->base.deferring ? send_text(c, "RELEASE SAVEPOINT gi_copy")
                                 : pg_exec(bc, "RELEASE SAVEPOINT gi_copy");
    }
    *rows = 0;
    pg_exec(bc, "ROLLBACK TO SAVEPOINT gi_copy; RELEASE SAVEPOINT gi_copy");
    return st;
}

static bool pg_tx_open(struct conn *c)
{
    PGTransactionStatusType t;

    /* Deferred statements in flight say "active": their answers tell. */
    drain(pgc(c));
    t = PQtransactionStatus(pgc(c)->pg);
    return t == PQTRANS_INTRANS || t == PQTRANS_INERROR;
}

const struct db_driver db_pg_driver = {
    .dialect = DB_PG,
    .open = pg_open,
    .close = pg_close,
    .prep = pg_prep,
    .prep_once = pg_prep_once,
    .stmt_free = pg_stmt_free,
    .param_index = pg_param_index,
    .bind_int = pg_bind_int,
    .bind_dbl = pg_bind_dbl,
    .bind_text = pg_bind_text,
    .bind_null = pg_bind_null,
    .step = pg_step,
    .reset = pg_reset,
    .col_count = pg_col_count,
    .col_name = pg_col_name,
    .col_type = pg_col_type,
    .col_int = pg_col_int,
    .col_dbl = pg_col_dbl,
    .col_text = pg_col_text,
    .col_bytes = pg_col_bytes,
    .changes = pg_changes,
    .exec = pg_exec,
    .run_batch = pg_run_batch,
    .send = pg_send,
    .flush = pg_flush,
    .copy_in = pg_copy_in,
    .begin_write = "BEGIN",
    .write_lock = PG_WRITE_LOCK,
    .write_lock_shared = PG_WRITE_LOCK_SHARED,
    .tx_open = pg_tx_open,
    .alive = pg_alive,
};
