/* SQLite implementation of store.h: a small pool of WAL-mode connections,
 * each with its own cache of prepared statements. All SQL is static text
 * written in the subset PostgreSQL also accepts; values are always bound. */
#include "store/store.h"
#include "core/log.h"
#include "core/status.h"
#include "core/util.h"
#include "store/embedded.h"

#include <pthread.h>
#include <sqlite3.h>
#include <stdlib.h>
#include <string.h>

/* ---- statements ---- */

#define RES_SELECT                                                                                 \
    "SELECT r.id, r.datacenter_id, d.name AS datacenter, r.kind, r.name, r.state, r.tenant, "     \
    "r.project, r.gpu_model, r.gpu_count, r.attrs, r.metadata, r.version, r.created_at, "          \
    "r.updated_at FROM resources r JOIN datacenters d ON d.id = r.datacenter_id "
/* Filters common to every list variant; the variant prefix adds the
 * equality terms the planner can serve from an index. */
#define RES_WHERE_COMMON                                                                           \
    "(:dc = 0 OR r.datacenter_id = :dc) AND (:kind IS NULL OR r.kind = :kind) AND "               \
    "(:state IS NULL OR r.state = :state) AND (:tenant IS NULL OR r.tenant = :tenant) AND "       \
    "(:project IS NULL OR r.project = :project) AND (:q IS NULL OR r.name LIKE :q ESCAPE '!' "    \
    "OR r.attrs LIKE :q ESCAPE '!' OR r.tenant LIKE :q ESCAPE '!') "
#define RES_W_DK "WHERE r.datacenter_id = :dc AND r.kind = :kind AND "
#define RES_W_D "WHERE r.datacenter_id = :dc AND "
#define RES_W_K "WHERE r.kind = :kind AND "
#define RES_W_A "WHERE "
#define RES_KEY_TEXT                                                                               \
    "CASE :sort WHEN 'name' THEN r.name WHEN 'state' THEN r.state WHEN 'kind' THEN r.kind "       \
    "WHEN 'tenant' THEN r.tenant WHEN 'project' THEN r.project WHEN 'gpu_model' THEN r.gpu_model " \
    "WHEN 'datacenter' THEN d.name END"
#define RES_KEY_NUM                                                                                \
    "CASE :sort WHEN 'gpu_count' THEN r.gpu_count WHEN 'created_at' THEN r.created_at "           \
    "WHEN 'updated_at' THEN r.updated_at WHEN 'id' THEN r.id END"
#define PAGE "LIMIT :limit OFFSET :offset"
#define O_ID "ORDER BY r.id " PAGE
#define O_ASC "ORDER BY " RES_KEY_TEXT ", " RES_KEY_NUM ", r.id " PAGE
#define O_DESC "ORDER BY " RES_KEY_TEXT " DESC, " RES_KEY_NUM " DESC, r.id DESC " PAGE
#define RES_LIST(w, o) RES_SELECT w RES_WHERE_COMMON o
#define RES_COUNT(w) "SELECT COUNT(*) FROM resources r " w RES_WHERE_COMMON

#define DC_SELECT                                                                                  \
    "SELECT d.id, d.name, d.location, d.rows_count AS \"rows\", d.created_at, d.updated_at, "      \
    "(SELECT COUNT(*) FROM resources r WHERE r.datacenter_id = d.id AND r.kind = 'server') "      \
    "AS servers, "                                                                                \
    "(SELECT COUNT(*) FROM resources r WHERE r.datacenter_id = d.id AND r.kind = 'vm') AS vms, "  \
    "(SELECT COUNT(*) FROM resources r WHERE r.datacenter_id = d.id AND r.kind = 'storage') "     \
    "AS storages, "                                                                               \
    "(SELECT COUNT(*) FROM resources r WHERE r.datacenter_id = d.id AND r.kind = 'switch') "      \
    "AS switches, "                                                                               \
    "(SELECT COUNT(*) FROM resources r WHERE r.datacenter_id = d.id AND r.kind = 'infiniband') "  \
    "AS infiniband FROM datacenters d "
#define DC_WHERE "WHERE (:q IS NULL OR d.name LIKE :q ESCAPE '!' OR d.location LIKE :q ESCAPE '!') "
#define DC_KEY_TEXT "CASE :sort WHEN 'name' THEN d.name WHEN 'location' THEN d.location END"
#define DC_KEY_NUM                                                                                 \
    "CASE :sort WHEN 'id' THEN d.id WHEN 'created_at' THEN d.created_at WHEN 'rows' THEN "        \
    "d.rows_count END"

#define STATEMENTS(X)                                                                              \
    X(BEGIN, "BEGIN IMMEDIATE")                                                                    \
    X(COMMIT, "COMMIT")                                                                            \
    X(ROLLBACK, "ROLLBACK")                                                                        \
    X(AUDIT_ADD, "INSERT INTO audit (at, actor, action, entity, entity_id, before_json, "         \
                 "after_json) VALUES (:at, :actor, :action, :entity, :eid, :before, :after)")      \
    X(AUDIT_LIST, "SELECT id, at, actor, action, entity, entity_id, before_json AS before, "       \
                  "after_json AS after FROM audit WHERE (:entity IS NULL OR entity = :entity) "    \
                  "AND (:eid = 0 OR entity_id = :eid) AND (:actor IS NULL OR actor = :actor) "     \
                  "ORDER BY id DESC " PAGE)                                                        \
    X(AUDIT_COUNT, "SELECT COUNT(*) FROM audit WHERE (:entity IS NULL OR entity = :entity) AND "   \
                   "(:eid = 0 OR entity_id = :eid) AND (:actor IS NULL OR actor = :actor)")        \
    X(TOKEN_ADD, "INSERT INTO tokens (name, role, hash, created_at) VALUES (:name, :role, :hash, " \
                 ":now)")                                                                          \
    X(TOKEN_BY_HASH, "SELECT id, name, role, revoked_at, last_used_at FROM tokens WHERE hash = "   \
                     ":hash")                                                                      \
    X(TOKEN_TOUCH, "UPDATE tokens SET last_used_at = :now WHERE id = :id")                         \
    X(TOKEN_LIST, "SELECT id, name, role, created_at, last_used_at, revoked_at FROM tokens "       \
                  "ORDER BY id")                                                                   \
    X(TOKEN_GET, "SELECT id, name, role, created_at, last_used_at, revoked_at FROM tokens WHERE "  \
                 "id = :id")                                                                       \
    X(TOKEN_REVOKE, "UPDATE tokens SET revoked_at = :now WHERE id = :id AND revoked_at IS NULL")   \
    X(USER_UPSERT, "INSERT INTO users (name, role, password_hash, created_at) VALUES (:name, "     \
                   ":role, :hash, :now) ON CONFLICT (name) DO UPDATE SET role = excluded.role, "   \
                   "password_hash = excluded.password_hash")                                       \
    X(USER_GET, "SELECT id, role, password_hash FROM users WHERE name = :name")                    \
    X(SESSION_ADD, "INSERT INTO sessions (hash, user_id, created_at, expires_at) VALUES (:hash, "  \
                   ":uid, :now, :exp)")                                                            \
    X(SESSION_AUTH, "SELECT u.name, u.role FROM sessions s JOIN users u ON u.id = s.user_id "      \
                    "WHERE s.hash = :hash AND s.expires_at > :now")                                \
    X(SESSION_DEL, "DELETE FROM sessions WHERE hash = :hash OR expires_at <= :now")                \
    X(DC_ADD, "INSERT INTO datacenters (name, location, rows_count, created_at, updated_at) "      \
              "VALUES (:name, :location, :rows, :now, :now)")                                      \
    X(DC_GET, DC_SELECT "WHERE d.id = :id")                                                        \
    X(DC_LIST_ID, DC_SELECT DC_WHERE "ORDER BY d.id " PAGE)                                        \
    X(DC_LIST_ASC, DC_SELECT DC_WHERE "ORDER BY " DC_KEY_TEXT ", " DC_KEY_NUM ", d.id " PAGE)      \
    X(DC_LIST_DESC,                                                                                \
      DC_SELECT DC_WHERE "ORDER BY " DC_KEY_TEXT " DESC, " DC_KEY_NUM " DESC, d.id DESC " PAGE)    \
    X(DC_COUNT, "SELECT COUNT(*) FROM datacenters d " DC_WHERE)                                    \
    X(DC_UPDATE, "UPDATE datacenters SET name = COALESCE(:name, name), location = "                \
                 "COALESCE(:location, location), rows_count = CASE WHEN :rows < 0 THEN "           \
                 "rows_count ELSE :rows END, updated_at = :now WHERE id = :id")                    \
    X(DC_BY_NAME, "SELECT id FROM datacenters WHERE name = :name")                                 \
    X(DC_DELETE, "DELETE FROM datacenters WHERE id = :id")                                         \
    X(DC_KIND_COUNTS, "SELECT kind, COUNT(*) FROM resources WHERE datacenter_id = :id GROUP BY "   \
                      "kind")                                                                      \
    X(DC_GPU_STATES, "SELECT state, SUM(gpu_count) FROM resources WHERE datacenter_id = :id AND "  \
                     "kind = 'server' GROUP BY state")                                             \
    X(RES_ADD, "INSERT INTO resources (datacenter_id, kind, name, state, tenant, project, "        \
               "gpu_model, gpu_count, attrs, metadata, created_at, updated_at) VALUES (:dc, "      \
               ":kind, :name, :state, :tenant, :project, :gpu_model, :gpu_count, :attrs, "         \
               ":metadata, :now, :now)")                                                           \
    X(RES_GET, RES_SELECT "WHERE r.id = :id")                                                      \
    X(RES_KIND, "SELECT kind, datacenter_id FROM resources WHERE id = :id")                        \
    X(RES_UPDATE, "UPDATE resources SET datacenter_id = :dc, kind = :kind, name = :name, state = " \
                  ":state, tenant = :tenant, project = :project, gpu_model = :gpu_model, "         \
                  "gpu_count = :gpu_count, attrs = :attrs, metadata = :metadata, version = "       \
                  "version + 1, updated_at = :now WHERE id = :id AND version = :version")          \
    X(RES_DELETE, "DELETE FROM resources WHERE id = :id")                                          \
    X(RES_ALLOC, "UPDATE resources SET state = 'in_use', tenant = :tenant, project = :project, "   \
                 "version = version + 1, updated_at = :now WHERE id = :id AND state = "            \
                 "'available'")                                                                    \
    X(RES_RELEASE, "UPDATE resources SET state = 'available', tenant = NULL, project = NULL, "     \
                   "version = version + 1, updated_at = :now WHERE id = :id AND state IN "         \
                   "('in_use', 'reserved')")                                                       \
    X(ALLOC_OPEN, "INSERT INTO allocations (resource_id, tenant, project, actor, started_at) "     \
                  "VALUES (:id, :tenant, :project, :actor, :now)")                                 \
    X(ALLOC_CLOSE, "UPDATE allocations SET ended_at = :now WHERE resource_id = :id AND ended_at "  \
                   "IS NULL")                                                                      \
    X(ALLOC_HISTORY, "SELECT id, tenant, project, actor, started_at, ended_at FROM allocations "   \
                     "WHERE resource_id = :id ORDER BY started_at DESC, id DESC LIMIT 1000")       \
    X(ALLOC_FIND, "SELECT id FROM resources WHERE datacenter_id = :dc AND kind = :kind AND state " \
                  "= 'available' AND gpu_count >= :min_gpus AND (:gpu_model IS NULL OR "          \
                  "gpu_model = :gpu_model) ORDER BY gpu_count, id LIMIT :limit")                   \
    X(RES_LIST_DK_ID, RES_LIST(RES_W_DK, O_ID))                                                    \
    X(RES_LIST_DK_ASC, RES_LIST(RES_W_DK, O_ASC))                                                  \
    X(RES_LIST_DK_DESC, RES_LIST(RES_W_DK, O_DESC))                                                \
    X(RES_LIST_D_ID, RES_LIST(RES_W_D, O_ID))                                                      \
    X(RES_LIST_D_ASC, RES_LIST(RES_W_D, O_ASC))                                                    \
    X(RES_LIST_D_DESC, RES_LIST(RES_W_D, O_DESC))                                                  \
    X(RES_LIST_K_ID, RES_LIST(RES_W_K, O_ID))                                                      \
    X(RES_LIST_K_ASC, RES_LIST(RES_W_K, O_ASC))                                                    \
    X(RES_LIST_K_DESC, RES_LIST(RES_W_K, O_DESC))                                                  \
    X(RES_LIST_A_ID, RES_LIST(RES_W_A, O_ID))                                                      \
    X(RES_LIST_A_ASC, RES_LIST(RES_W_A, O_ASC))                                                    \
    X(RES_LIST_A_DESC, RES_LIST(RES_W_A, O_DESC))                                                  \
    X(RES_COUNT_DK, RES_COUNT(RES_W_DK))                                                           \
    X(RES_COUNT_D, RES_COUNT(RES_W_D))                                                             \
    X(RES_COUNT_K, RES_COUNT(RES_W_K))                                                             \
    X(RES_COUNT_A, RES_COUNT(RES_W_A))

#define AS_ENUM(id, sql) ST_##id,
#define AS_SQL(id, sql) sql,
enum stmt_id { STATEMENTS(AS_ENUM) ST__COUNT };
static const char *const stmt_sql[] = {STATEMENTS(AS_SQL)};

/* ---- connections ---- */

struct conn {
    sqlite3 *db;
    sqlite3_stmt *stmts[ST__COUNT];
    bool busy;
};

struct store {
    pthread_mutex_t mu;
    pthread_cond_t cv;
    int n;
    struct conn *conns;
};

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
    }
    gi_error("sqlite: %s (%d)", db ? sqlite3_errmsg(db) : sqlite3_errstr(rc), rc);
    return GI_INTERNAL;
}

/* Opens one connection with the pragmas every connection needs. */
static int conn_open(const char *path, struct conn *c)
{
    int rc = sqlite3_open_v2(path, &c->db,
                             SQLITE_OPEN_READWRITE | SQLITE_OPEN_CREATE | SQLITE_OPEN_NOMUTEX, NULL);
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
    return map_rc(c->db, rc);
}

static void conn_close(struct conn *c)
{
    for (int i = 0; i < ST__COUNT; i++)
        sqlite3_finalize(c->stmts[i]);
    sqlite3_close_v2(c->db);
}

/* Borrows a free connection, waiting for one; return it with conn_put(). */
static struct conn *conn_get(struct store *st)
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

static void conn_put(struct store *st, struct conn *c)
{
    pthread_mutex_lock(&st->mu);
    c->busy = false;
    pthread_cond_signal(&st->cv);
    pthread_mutex_unlock(&st->mu);
}

/* The connection's cached statement `id`, reset and with cleared bindings;
 * NULL (logged) if it fails to prepare, which is a programming error. */
static sqlite3_stmt *prep(struct conn *c, enum stmt_id id)
{
    sqlite3_stmt *s = c->stmts[id];

    if (s == NULL) {
        int rc = sqlite3_prepare_v3(c->db, stmt_sql[id], -1, SQLITE_PREPARE_PERSISTENT, &s, NULL);
        if (rc != SQLITE_OK) {
            gi_error("prepare %d: %s", (int)id, sqlite3_errmsg(c->db));
            return NULL;
        }
        c->stmts[id] = s;
    }
    sqlite3_reset(s);
    sqlite3_clear_bindings(s);
    return s;
}

/* Binders by parameter name; a name the statement lacks is skipped so
 * statement variants can share one binding sequence. */
static void bind_text(sqlite3_stmt *s, const char *name, const char *v)
{
    int i = sqlite3_bind_parameter_index(s, name);
    if (i == 0)
        return;
    if (v)
        sqlite3_bind_text(s, i, v, -1, SQLITE_TRANSIENT);
    else
        sqlite3_bind_null(s, i);
}

static void bind_int(sqlite3_stmt *s, const char *name, int64_t v)
{
    int i = sqlite3_bind_parameter_index(s, name);
    if (i != 0)
        sqlite3_bind_int64(s, i, v);
}

/* Binds a JSON value as compact text (NULL binds SQL NULL). */
static void bind_json(sqlite3_stmt *s, const char *name, const json_t *v)
{
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

static void bind_page(sqlite3_stmt *s, const struct store_page *pg)
{
    bind_int(s, ":limit", pg ? pg->limit : 100);
    bind_int(s, ":offset", pg ? pg->offset : 0);
    bind_text(s, ":sort", pg ? pg->sort : NULL);
}

/* Binds `q` as a LIKE pattern that matches it as a plain substring. */
static void bind_like(sqlite3_stmt *s, const char *name, const char *q)
{
    char buf[512];
    size_t j = 0;

    if (q == NULL || *q == '\0') {
        bind_text(s, name, NULL);
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
    bind_text(s, name, buf);
}

/* Steps a statement expected to finish without rows. */
static int exec_done(struct conn *c, sqlite3_stmt *s)
{
    int rc = sqlite3_step(s);
    int st = rc == SQLITE_DONE ? GI_OK : map_rc(c->db, rc);
    sqlite3_reset(s);
    return st;
}

static int simple(struct conn *c, enum stmt_id id)
{
    sqlite3_stmt *s = prep(c, id);
    return s ? exec_done(c, s) : GI_INTERNAL;
}

static int tx_begin(struct conn *c) { return simple(c, ST_BEGIN); }

/* Commits when st is GI_OK, else rolls back; returns the final status. */
static int tx_end(struct conn *c, int st)
{
    if (st == GI_OK) {
        st = simple(c, ST_COMMIT);
        if (st == GI_OK)
            return GI_OK;
    }
    if (!sqlite3_get_autocommit(c->db))
        simple(c, ST_ROLLBACK);
    return st;
}

/* Converts the current row to an object: `at` and *_at integers become RFC 3339,
 * `attrs` text is merged into the object, `metadata`, `before` and `after`
 * text is parsed as JSON. Caller owns the result. */
static json_t *row_json(sqlite3_stmt *s)
{
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
            if ((nl > 3 && strcmp(name + nl - 3, "_at") == 0) || strcmp(name, "at") == 0) {
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
            if (strcmp(name, "metadata") == 0 || strcmp(name, "before") == 0 ||
                strcmp(name, "after") == 0)
                v = json_loads(t, JSON_DECODE_ANY, NULL);
            if (v == NULL)
                v = json_string(t);
        }
        }
        json_object_set_new(o, name, v ? v : json_null());
    }
    return o;
}

/* Runs a statement and collects every row as an object into a new array. */
static int collect(struct conn *c, sqlite3_stmt *s, json_t **items)
{
    json_t *arr = json_array();
    int rc;

    while ((rc = sqlite3_step(s)) == SQLITE_ROW)
        json_array_append_new(arr, row_json(s));
    sqlite3_reset(s);
    if (rc != SQLITE_DONE) {
        json_decref(arr);
        return map_rc(c->db, rc);
    }
    *items = arr;
    return GI_OK;
}

/* Runs a statement expected to yield one row, as an object. */
static int fetch_one(struct conn *c, sqlite3_stmt *s, json_t **out)
{
    int rc = sqlite3_step(s);
    int st = GI_OK;

    if (rc == SQLITE_ROW)
        *out = row_json(s);
    else
        st = rc == SQLITE_DONE ? GI_NOT_FOUND : map_rc(c->db, rc);
    sqlite3_reset(s);
    return st;
}

/* Runs a single-integer query (COUNT). */
static int fetch_int(struct conn *c, sqlite3_stmt *s, int64_t *out)
{
    int rc = sqlite3_step(s);
    int st = GI_OK;

    if (rc == SQLITE_ROW)
        *out = sqlite3_column_int64(s, 0);
    else
        st = rc == SQLITE_DONE ? GI_NOT_FOUND : map_rc(c->db, rc);
    sqlite3_reset(s);
    return st;
}

/* Appends an audit row inside the caller's transaction. */
static int audit(struct conn *c, const char *actor, const char *action, const char *entity,
                 int64_t id, const json_t *before, const json_t *after)
{
    sqlite3_stmt *s = prep(c, ST_AUDIT_ADD);
    if (!s)
        return GI_INTERNAL;
    bind_int(s, ":at", gi_now());
    bind_text(s, ":actor", actor);
    bind_text(s, ":action", action);
    bind_text(s, ":entity", entity);
    bind_int(s, ":eid", id);
    bind_json(s, ":before", before);
    bind_json(s, ":after", after);
    return exec_done(c, s);
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
        return map_rc(c->db, rc);
    rc = sqlite3_prepare_v2(c->db, "SELECT COALESCE(MAX(version), 0) FROM schema_version", -1, &s,
                            NULL);
    if (rc != SQLITE_OK)
        return map_rc(c->db, rc);
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
    st->conns = calloc((size_t)conns, sizeof *st->conns);
    if (st->conns == NULL) {
        free(st);
        return GI_INTERNAL;
    }
    for (int i = 0; i < conns; i++) {
        st->n = i + 1;
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
    free(st);
}

int store_schema_version(struct store *st, int64_t *out)
{
    struct conn *c = conn_get(st);
    sqlite3_stmt *s = NULL;
    int rc = sqlite3_prepare_v2(c->db, "SELECT MAX(version) FROM schema_version", -1, &s, NULL);
    int status = rc == SQLITE_OK ? fetch_int(c, s, out) : map_rc(c->db, rc);
    sqlite3_finalize(s);
    conn_put(st, c);
    return status;
}

/* ---- credentials ---- */

int store_token_create(struct store *st, const char *actor, const char *name, enum gi_role role,
                       const char *hash, int64_t *id_out)
{
    struct conn *c = conn_get(st);
    sqlite3_stmt *s;
    json_t *after = NULL;
    int rc = tx_begin(c);

    if (rc != GI_OK)
        goto cleanup;
    rc = GI_INTERNAL;
    if (!(s = prep(c, ST_TOKEN_ADD)))
        goto cleanup;
    bind_text(s, ":name", name);
    bind_text(s, ":role", gi_role_name(role));
    bind_text(s, ":hash", hash);
    bind_int(s, ":now", gi_now());
    if ((rc = exec_done(c, s)) != GI_OK)
        goto cleanup;
    *id_out = sqlite3_last_insert_rowid(c->db);
    after = json_pack("{s:s, s:s}", "name", name, "role", gi_role_name(role));
    rc = audit(c, actor, "create", "token", *id_out, NULL, after);
cleanup:
    rc = tx_end(c, rc);
    json_decref(after);
    conn_put(st, c);
    return rc;
}

int store_token_ensure(struct store *st, const char *name, enum gi_role role, const char *hash)
{
    struct gi_principal p;
    int64_t id;
    int rc = store_token_auth(st, hash, &p);

    if (rc == GI_NOT_FOUND)
        return store_token_create(st, "system", name, role, hash, &id);
    return rc;
}

int store_token_auth(struct store *st, const char *hash, struct gi_principal *out)
{
    struct conn *c = conn_get(st);
    sqlite3_stmt *s = prep(c, ST_TOKEN_BY_HASH);
    int64_t now = gi_now(), id = 0, last = 0;
    int rc = GI_INTERNAL, step;

    if (!s)
        goto cleanup;
    bind_text(s, ":hash", hash);
    step = sqlite3_step(s);
    if (step != SQLITE_ROW) {
        rc = step == SQLITE_DONE ? GI_NOT_FOUND : map_rc(c->db, step);
        sqlite3_reset(s);
        goto cleanup;
    }
    rc = GI_OK;
    id = sqlite3_column_int64(s, 0);
    gi_strlcpy(out->name, (const char *)sqlite3_column_text(s, 1), sizeof out->name);
    if (gi_role_parse((const char *)sqlite3_column_text(s, 2), &out->role) != GI_OK)
        rc = GI_NOT_FOUND;
    if (sqlite3_column_type(s, 3) != SQLITE_NULL)
        rc = GI_NOT_FOUND; /* revoked */
    last = sqlite3_column_int64(s, 4);
    out->token_id = id;
    sqlite3_reset(s);
    /* Record use at most once a minute so reads stay reads. */
    if (rc == GI_OK && now - last >= 60 && (s = prep(c, ST_TOKEN_TOUCH)) != NULL) {
        bind_int(s, ":now", now);
        bind_int(s, ":id", id);
        if (exec_done(c, s) != GI_OK)
            gi_warn("could not record use of token %lld", (long long)id);
    }
cleanup:
    conn_put(st, c);
    return rc;
}

int store_token_list(struct store *st, json_t **items)
{
    struct conn *c = conn_get(st);
    sqlite3_stmt *s = prep(c, ST_TOKEN_LIST);
    int rc = s ? collect(c, s, items) : GI_INTERNAL;
    conn_put(st, c);
    return rc;
}

int store_token_revoke(struct store *st, const char *actor, int64_t id)
{
    struct conn *c = conn_get(st);
    sqlite3_stmt *s;
    json_t *before = NULL, *after = NULL;
    int rc = tx_begin(c);

    if (rc != GI_OK)
        goto cleanup;
    rc = GI_INTERNAL;
    if (!(s = prep(c, ST_TOKEN_GET)))
        goto cleanup;
    bind_int(s, ":id", id);
    if ((rc = fetch_one(c, s, &before)) != GI_OK)
        goto cleanup;
    if (!json_is_null(json_object_get(before, "revoked_at"))) {
        rc = GI_CONFLICT;
        goto cleanup;
    }
    rc = GI_INTERNAL;
    if (!(s = prep(c, ST_TOKEN_REVOKE)))
        goto cleanup;
    bind_int(s, ":id", id);
    bind_int(s, ":now", gi_now());
    if ((rc = exec_done(c, s)) != GI_OK)
        goto cleanup;
    after = json_deep_copy(before);
    {
        char ts[32];
        gi_time_format(gi_now(), ts, sizeof ts);
        json_object_set_new(after, "revoked_at", json_string(ts));
    }
    rc = audit(c, actor, "revoke", "token", id, before, after);
cleanup:
    rc = tx_end(c, rc);
    json_decref(before);
    json_decref(after);
    conn_put(st, c);
    return rc;
}

int store_user_set(struct store *st, const char *name, enum gi_role role, const char *pwhash)
{
    struct conn *c = conn_get(st);
    sqlite3_stmt *s = prep(c, ST_USER_UPSERT);
    int rc = GI_INTERNAL;

    if (s) {
        bind_text(s, ":name", name);
        bind_text(s, ":role", gi_role_name(role));
        bind_text(s, ":hash", pwhash);
        bind_int(s, ":now", gi_now());
        rc = exec_done(c, s);
    }
    conn_put(st, c);
    return rc;
}

int store_user_get(struct store *st, const char *name, int64_t *id, enum gi_role *role,
                   char *pwhash, size_t len)
{
    struct conn *c = conn_get(st);
    sqlite3_stmt *s = prep(c, ST_USER_GET);
    int rc = GI_INTERNAL, step;

    if (s) {
        bind_text(s, ":name", name);
        step = sqlite3_step(s);
        if (step == SQLITE_ROW) {
            *id = sqlite3_column_int64(s, 0);
            rc = gi_role_parse((const char *)sqlite3_column_text(s, 1), role);
            gi_strlcpy(pwhash, (const char *)sqlite3_column_text(s, 2), len);
        } else {
            rc = step == SQLITE_DONE ? GI_NOT_FOUND : map_rc(c->db, step);
        }
        sqlite3_reset(s);
    }
    conn_put(st, c);
    return rc;
}

int store_session_create(struct store *st, const char *hash, int64_t user_id, int64_t expires_at)
{
    struct conn *c = conn_get(st);
    sqlite3_stmt *s = prep(c, ST_SESSION_ADD);
    int rc = GI_INTERNAL;

    if (s) {
        bind_text(s, ":hash", hash);
        bind_int(s, ":uid", user_id);
        bind_int(s, ":now", gi_now());
        bind_int(s, ":exp", expires_at);
        rc = exec_done(c, s);
    }
    conn_put(st, c);
    return rc;
}

int store_session_auth(struct store *st, const char *hash, struct gi_principal *out)
{
    struct conn *c = conn_get(st);
    sqlite3_stmt *s = prep(c, ST_SESSION_AUTH);
    int rc = GI_INTERNAL, step;

    if (s) {
        bind_text(s, ":hash", hash);
        bind_int(s, ":now", gi_now());
        step = sqlite3_step(s);
        if (step == SQLITE_ROW) {
            gi_strlcpy(out->name, (const char *)sqlite3_column_text(s, 0), sizeof out->name);
            rc = gi_role_parse((const char *)sqlite3_column_text(s, 1), &out->role);
            out->token_id = 0;
        } else {
            rc = step == SQLITE_DONE ? GI_NOT_FOUND : map_rc(c->db, step);
        }
        sqlite3_reset(s);
    }
    conn_put(st, c);
    return rc;
}

int store_session_delete(struct store *st, const char *hash)
{
    struct conn *c = conn_get(st);
    sqlite3_stmt *s = prep(c, ST_SESSION_DEL);
    int rc = GI_INTERNAL;

    if (s) {
        bind_text(s, ":hash", hash);
        bind_int(s, ":now", gi_now());
        rc = exec_done(c, s);
    }
    conn_put(st, c);
    return rc;
}

/* ---- audit ---- */

int store_audit_list(struct store *st, const struct store_audit_filter *f,
                     const struct store_page *pg, json_t **items, int64_t *total)
{
    struct conn *c = conn_get(st);
    sqlite3_stmt *s;
    int rc = GI_INTERNAL;

    for (int pass = 0; pass < 2; pass++) {
        if (!(s = prep(c, pass == 0 ? ST_AUDIT_COUNT : ST_AUDIT_LIST)))
            goto cleanup;
        bind_text(s, ":entity", f->entity);
        bind_int(s, ":eid", f->entity_id);
        bind_text(s, ":actor", f->actor);
        bind_page(s, pg);
        rc = pass == 0 ? fetch_int(c, s, total) : collect(c, s, items);
        if (rc != GI_OK)
            goto cleanup;
    }
cleanup:
    conn_put(st, c);
    return rc;
}

/* ---- data centers ---- */

static int dc_get(struct conn *c, int64_t id, json_t **out)
{
    sqlite3_stmt *s = prep(c, ST_DC_GET);
    if (!s)
        return GI_INTERNAL;
    bind_int(s, ":id", id);
    return fetch_one(c, s, out);
}

int store_dc_create(struct store *st, const char *actor, const struct store_dc *in, json_t **out)
{
    struct conn *c = conn_get(st);
    sqlite3_stmt *s;
    int64_t id;
    int rc = tx_begin(c);

    *out = NULL;
    if (rc != GI_OK)
        goto cleanup;
    rc = GI_INTERNAL;
    if (!(s = prep(c, ST_DC_ADD)))
        goto cleanup;
    bind_text(s, ":name", in->name);
    bind_text(s, ":location", in->location ? in->location : "");
    bind_int(s, ":rows", in->rows < 0 ? 0 : in->rows);
    bind_int(s, ":now", gi_now());
    if ((rc = exec_done(c, s)) != GI_OK)
        goto cleanup;
    id = sqlite3_last_insert_rowid(c->db);
    if ((rc = dc_get(c, id, out)) != GI_OK)
        goto cleanup;
    rc = audit(c, actor, "create", "datacenter", id, NULL, *out);
cleanup:
    rc = tx_end(c, rc);
    if (rc != GI_OK && *out) {
        json_decref(*out);
        *out = NULL;
    }
    conn_put(st, c);
    return rc;
}

int store_dc_list(struct store *st, const char *q, const struct store_page *pg, json_t **items,
                  int64_t *total)
{
    struct conn *c = conn_get(st);
    enum stmt_id list = !pg->sort ? ST_DC_LIST_ID : pg->desc ? ST_DC_LIST_DESC : ST_DC_LIST_ASC;
    sqlite3_stmt *s;
    int rc = GI_INTERNAL;

    for (int pass = 0; pass < 2; pass++) {
        if (!(s = prep(c, pass == 0 ? ST_DC_COUNT : list)))
            goto cleanup;
        bind_like(s, ":q", q);
        bind_page(s, pg);
        rc = pass == 0 ? fetch_int(c, s, total) : collect(c, s, items);
        if (rc != GI_OK)
            goto cleanup;
    }
cleanup:
    conn_put(st, c);
    return rc;
}

int store_dc_get(struct store *st, int64_t id, json_t **out)
{
    struct conn *c = conn_get(st);
    int rc = dc_get(c, id, out);
    conn_put(st, c);
    return rc;
}

int store_dc_update(struct store *st, const char *actor, int64_t id, const struct store_dc *in,
                    json_t **out)
{
    struct conn *c = conn_get(st);
    sqlite3_stmt *s;
    json_t *before = NULL;
    int rc = tx_begin(c);

    *out = NULL;
    if (rc != GI_OK)
        goto cleanup;
    if ((rc = dc_get(c, id, &before)) != GI_OK)
        goto cleanup;
    rc = GI_INTERNAL;
    if (!(s = prep(c, ST_DC_UPDATE)))
        goto cleanup;
    bind_int(s, ":id", id);
    bind_text(s, ":name", in->name);
    bind_text(s, ":location", in->location);
    bind_int(s, ":rows", in->rows);
    bind_int(s, ":now", gi_now());
    if ((rc = exec_done(c, s)) != GI_OK)
        goto cleanup;
    if ((rc = dc_get(c, id, out)) != GI_OK)
        goto cleanup;
    rc = audit(c, actor, "update", "datacenter", id, before, *out);
cleanup:
    rc = tx_end(c, rc);
    if (rc != GI_OK && *out) {
        json_decref(*out);
        *out = NULL;
    }
    json_decref(before);
    conn_put(st, c);
    return rc;
}

/* Per-kind resource counts of a data center, every kind present. */
static int dc_counts(struct conn *c, int64_t id, json_t **out)
{
    sqlite3_stmt *s = prep(c, ST_DC_KIND_COUNTS);
    json_t *o;
    int step;

    if (!s)
        return GI_INTERNAL;
    o = json_pack("{s:i, s:i, s:i, s:i, s:i}", "servers", 0, "vms", 0, "storages", 0, "switches",
                  0, "infiniband", 0);
    bind_int(s, ":id", id);
    while ((step = sqlite3_step(s)) == SQLITE_ROW) {
        const char *k = (const char *)sqlite3_column_text(s, 0);
        const char *key = strcmp(k, "server") == 0    ? "servers"
                          : strcmp(k, "vm") == 0      ? "vms"
                          : strcmp(k, "storage") == 0 ? "storages"
                          : strcmp(k, "switch") == 0  ? "switches"
                                                      : "infiniband";
        json_object_set_new(o, key, json_integer(sqlite3_column_int64(s, 1)));
    }
    sqlite3_reset(s);
    if (step != SQLITE_DONE) {
        json_decref(o);
        return map_rc(c->db, step);
    }
    *out = o;
    return GI_OK;
}

int store_dc_delete(struct store *st, const char *actor, int64_t id, bool force, json_t **counts)
{
    struct conn *c = conn_get(st);
    sqlite3_stmt *s;
    json_t *before = NULL, *cnt = NULL;
    json_int_t total = 0;
    const char *k;
    json_t *v;
    int rc = tx_begin(c);

    if (rc != GI_OK)
        goto cleanup;
    if ((rc = dc_get(c, id, &before)) != GI_OK)
        goto cleanup;
    if ((rc = dc_counts(c, id, &cnt)) != GI_OK)
        goto cleanup;
    json_object_foreach(cnt, k, v) total += json_integer_value(v);
    if (total > 0 && !force) {
        rc = GI_CONFLICT;
        goto cleanup;
    }
    rc = GI_INTERNAL;
    if (!(s = prep(c, ST_DC_DELETE)))
        goto cleanup;
    bind_int(s, ":id", id);
    if ((rc = exec_done(c, s)) != GI_OK)
        goto cleanup;
    json_object_set(before, "deleted_resources", cnt);
    rc = audit(c, actor, "delete", "datacenter", id, before, NULL);
cleanup:
    rc = tx_end(c, rc);
    if (counts)
        *counts = cnt;
    else
        json_decref(cnt);
    json_decref(before);
    conn_put(st, c);
    return rc;
}

int store_dc_overview(struct store *st, int64_t id, json_t **out)
{
    struct conn *c = conn_get(st);
    sqlite3_stmt *s;
    json_t *dc = NULL, *cnt = NULL;
    json_int_t total = 0, allocated = 0, available = 0;
    int rc, step;

    /* One read transaction so counts and GPU totals agree. */
    sqlite3_exec(c->db, "BEGIN", NULL, NULL, NULL);
    if ((rc = dc_get(c, id, &dc)) != GI_OK)
        goto cleanup;
    if ((rc = dc_counts(c, id, &cnt)) != GI_OK)
        goto cleanup;
    rc = GI_INTERNAL;
    if (!(s = prep(c, ST_DC_GPU_STATES)))
        goto cleanup;
    bind_int(s, ":id", id);
    while ((step = sqlite3_step(s)) == SQLITE_ROW) {
        const char *state = (const char *)sqlite3_column_text(s, 0);
        json_int_t n = sqlite3_column_int64(s, 1);
        if (strcmp(state, "retired") == 0)
            continue;
        total += n;
        if (strcmp(state, "available") == 0)
            available += n;
        else if (strcmp(state, "in_use") == 0 || strcmp(state, "reserved") == 0)
            allocated += n;
    }
    sqlite3_reset(s);
    if (step != SQLITE_DONE) {
        rc = map_rc(c->db, step);
        goto cleanup;
    }
    *out = json_pack("{s:I, s:s?, s:s?, s:O, s:{s:I, s:I, s:I, s:I}}", "datacenter_id",
                     (json_int_t)id, "name", json_string_value(json_object_get(dc, "name")),
                     "location", json_string_value(json_object_get(dc, "location")), "counts", cnt,
                     "gpus", "total", total, "allocated", allocated, "available", available,
                     "unavailable", total - allocated - available);
    rc = *out ? GI_OK : GI_INTERNAL;
cleanup:
    sqlite3_exec(c->db, "COMMIT", NULL, NULL, NULL);
    json_decref(dc);
    json_decref(cnt);
    conn_put(st, c);
    return rc;
}

int store_dc_id_by_name(struct store *st, const char *name, int64_t *id)
{
    struct conn *c = conn_get(st);
    sqlite3_stmt *s = prep(c, ST_DC_BY_NAME);
    int rc = GI_INTERNAL;

    if (s) {
        bind_text(s, ":name", name);
        rc = fetch_int(c, s, id);
    }
    conn_put(st, c);
    return rc;
}

/* ---- resources ---- */

static int res_get(struct conn *c, int64_t id, json_t **out)
{
    sqlite3_stmt *s = prep(c, ST_RES_GET);
    if (!s)
        return GI_INTERNAL;
    bind_int(s, ":id", id);
    return fetch_one(c, s, out);
}

static void bind_resource(sqlite3_stmt *s, const struct store_resource *in)
{
    bind_int(s, ":dc", in->datacenter_id);
    bind_text(s, ":kind", in->kind);
    bind_text(s, ":name", in->name);
    bind_text(s, ":state", in->state ? in->state : "available");
    bind_text(s, ":tenant", in->tenant);
    bind_text(s, ":project", in->project);
    bind_text(s, ":gpu_model", in->gpu_model);
    bind_int(s, ":gpu_count", in->gpu_count);
    /* Both columns are NOT NULL: no attributes or metadata is "{}". */
    if (in->attrs)
        bind_json(s, ":attrs", in->attrs);
    else
        bind_text(s, ":attrs", "{}");
    if (in->metadata)
        bind_json(s, ":metadata", in->metadata);
    else
        bind_text(s, ":metadata", "{}");
    bind_int(s, ":now", gi_now());
}

/* Inserts one resource (and an allocation interval when it starts held)
 * inside the caller's transaction; *id receives its id. */
static int res_insert(struct conn *c, const char *actor, const struct store_resource *in,
                      int64_t *id, json_t **after)
{
    sqlite3_stmt *s = prep(c, ST_RES_ADD);
    int rc;

    if (!s)
        return GI_INTERNAL;
    bind_resource(s, in);
    if ((rc = exec_done(c, s)) != GI_OK)
        return rc;
    *id = sqlite3_last_insert_rowid(c->db);
    if (in->state && strcmp(in->state, "in_use") == 0 && in->tenant) {
        if (!(s = prep(c, ST_ALLOC_OPEN)))
            return GI_INTERNAL;
        bind_int(s, ":id", *id);
        bind_text(s, ":tenant", in->tenant);
        bind_text(s, ":project", in->project);
        bind_text(s, ":actor", actor);
        bind_int(s, ":now", gi_now());
        if ((rc = exec_done(c, s)) != GI_OK)
            return rc;
    }
    if ((rc = res_get(c, *id, after)) != GI_OK)
        return rc;
    return audit(c, actor, "create", "resource", *id, NULL, *after);
}

int store_res_create(struct store *st, const char *actor, const struct store_resource *in,
                     json_t **out)
{
    struct conn *c = conn_get(st);
    int64_t id;
    int rc = tx_begin(c);

    *out = NULL;
    if (rc == GI_OK)
        rc = res_insert(c, actor, in, &id, out);
    rc = tx_end(c, rc);
    if (rc != GI_OK && *out) {
        json_decref(*out);
        *out = NULL;
    }
    conn_put(st, c);
    return rc;
}

int store_res_import(struct store *st, const char *actor, const struct store_resource *rows,
                     size_t n, size_t *bad_index)
{
    struct conn *c = conn_get(st);
    int64_t id;
    int rc = tx_begin(c);

    for (size_t i = 0; rc == GI_OK && i < n; i++) {
        json_t *after = NULL;
        rc = res_insert(c, actor, &rows[i], &id, &after);
        json_decref(after);
        if (rc != GI_OK)
            *bad_index = i;
    }
    rc = tx_end(c, rc);
    conn_put(st, c);
    return rc;
}

int store_res_list(struct store *st, const struct store_res_filter *f, const struct store_page *pg,
                   json_t **items, int64_t *total)
{
    struct conn *c = conn_get(st);
    /* Pick the variant whose WHERE prefix lets the planner use an index. */
    int variant = f->datacenter_id && f->kind ? 0 : f->datacenter_id ? 1 : f->kind ? 2 : 3;
    int order = !pg->sort ? 0 : pg->desc ? 2 : 1;
    enum stmt_id list = (enum stmt_id)(ST_RES_LIST_DK_ID + variant * 3 + order);
    enum stmt_id count = (enum stmt_id)(ST_RES_COUNT_DK + variant);
    sqlite3_stmt *s;
    int rc = GI_INTERNAL;

    for (int pass = 0; pass < 2; pass++) {
        if (!(s = prep(c, pass == 0 ? count : list)))
            goto cleanup;
        bind_int(s, ":dc", f->datacenter_id);
        bind_text(s, ":kind", f->kind);
        bind_text(s, ":state", f->state);
        bind_text(s, ":tenant", f->tenant);
        bind_text(s, ":project", f->project);
        bind_like(s, ":q", f->q);
        bind_page(s, pg);
        rc = pass == 0 ? fetch_int(c, s, total) : collect(c, s, items);
        if (rc != GI_OK)
            goto cleanup;
    }
cleanup:
    conn_put(st, c);
    return rc;
}

int store_res_get(struct store *st, int64_t id, json_t **out)
{
    struct conn *c = conn_get(st);
    int rc = res_get(c, id, out);
    conn_put(st, c);
    return rc;
}

int store_res_kind(struct store *st, int64_t id, char *kind, size_t len, int64_t *datacenter_id)
{
    struct conn *c = conn_get(st);
    sqlite3_stmt *s = prep(c, ST_RES_KIND);
    int rc = GI_INTERNAL, step;

    if (s) {
        bind_int(s, ":id", id);
        step = sqlite3_step(s);
        if (step == SQLITE_ROW) {
            gi_strlcpy(kind, (const char *)sqlite3_column_text(s, 0), len);
            *datacenter_id = sqlite3_column_int64(s, 1);
            rc = GI_OK;
        } else {
            rc = step == SQLITE_DONE ? GI_NOT_FOUND : map_rc(c->db, step);
        }
        sqlite3_reset(s);
    }
    conn_put(st, c);
    return rc;
}

/* Opens or closes the allocation interval of a resource whose state moved
 * between held and not held. */
static int alloc_track(struct conn *c, const char *actor, int64_t id, const char *old_state,
                       const struct store_resource *in)
{
    bool was = strcmp(old_state, "in_use") == 0 || strcmp(old_state, "reserved") == 0;
    bool now_held = strcmp(in->state, "in_use") == 0 || strcmp(in->state, "reserved") == 0;
    sqlite3_stmt *s;
    int rc;

    if (was && !now_held) {
        if (!(s = prep(c, ST_ALLOC_CLOSE)))
            return GI_INTERNAL;
        bind_int(s, ":id", id);
        bind_int(s, ":now", gi_now());
        return exec_done(c, s);
    }
    if (!was && now_held) {
        if (!(s = prep(c, ST_ALLOC_OPEN)))
            return GI_INTERNAL;
        bind_int(s, ":id", id);
        bind_text(s, ":tenant", in->tenant ? in->tenant : "");
        bind_text(s, ":project", in->project);
        bind_text(s, ":actor", actor);
        bind_int(s, ":now", gi_now());
        rc = exec_done(c, s);
        return rc;
    }
    return GI_OK;
}

int store_res_update(struct store *st, const char *actor, int64_t id, int64_t version,
                     const struct store_resource *in, json_t **out)
{
    struct conn *c = conn_get(st);
    sqlite3_stmt *s;
    json_t *before = NULL;
    int rc = tx_begin(c);

    *out = NULL;
    if (rc != GI_OK)
        goto cleanup;
    if ((rc = res_get(c, id, &before)) != GI_OK)
        goto cleanup;
    rc = GI_INTERNAL;
    if (!(s = prep(c, ST_RES_UPDATE)))
        goto cleanup;
    bind_resource(s, in);
    bind_int(s, ":id", id);
    bind_int(s, ":version", version);
    if ((rc = exec_done(c, s)) != GI_OK)
        goto cleanup;
    if (sqlite3_changes(c->db) != 1) {
        rc = GI_CONFLICT;
        goto cleanup;
    }
    rc = alloc_track(c, actor, id, json_string_value(json_object_get(before, "state")), in);
    if (rc != GI_OK)
        goto cleanup;
    if ((rc = res_get(c, id, out)) != GI_OK)
        goto cleanup;
    rc = audit(c, actor, "update", "resource", id, before, *out);
cleanup:
    rc = tx_end(c, rc);
    if (rc != GI_OK && *out) {
        json_decref(*out);
        *out = NULL;
    }
    json_decref(before);
    conn_put(st, c);
    return rc;
}

int store_res_delete(struct store *st, const char *actor, int64_t id)
{
    struct conn *c = conn_get(st);
    sqlite3_stmt *s;
    json_t *before = NULL;
    int rc = tx_begin(c);

    if (rc != GI_OK)
        goto cleanup;
    if ((rc = res_get(c, id, &before)) != GI_OK)
        goto cleanup;
    rc = GI_INTERNAL;
    if (!(s = prep(c, ST_RES_DELETE)))
        goto cleanup;
    bind_int(s, ":id", id);
    if ((rc = exec_done(c, s)) != GI_OK)
        goto cleanup;
    rc = audit(c, actor, "delete", "resource", id, before, NULL);
cleanup:
    rc = tx_end(c, rc);
    json_decref(before);
    conn_put(st, c);
    return rc;
}

/* available -> in_use inside the caller's transaction; GI_CONFLICT when
 * the resource is not available at this instant. */
static int res_allocate(struct conn *c, const char *actor, int64_t id, const char *tenant,
                        const char *project, json_t **after)
{
    sqlite3_stmt *s;
    json_t *before = NULL;
    int rc;

    if ((rc = res_get(c, id, &before)) != GI_OK)
        return rc;
    rc = GI_INTERNAL;
    if (!(s = prep(c, ST_RES_ALLOC)))
        goto cleanup;
    bind_int(s, ":id", id);
    bind_text(s, ":tenant", tenant);
    bind_text(s, ":project", project);
    bind_int(s, ":now", gi_now());
    if ((rc = exec_done(c, s)) != GI_OK)
        goto cleanup;
    if (sqlite3_changes(c->db) != 1) {
        rc = GI_CONFLICT;
        goto cleanup;
    }
    rc = GI_INTERNAL;
    if (!(s = prep(c, ST_ALLOC_OPEN)))
        goto cleanup;
    bind_int(s, ":id", id);
    bind_text(s, ":tenant", tenant);
    bind_text(s, ":project", project);
    bind_text(s, ":actor", actor);
    bind_int(s, ":now", gi_now());
    if ((rc = exec_done(c, s)) != GI_OK)
        goto cleanup;
    if ((rc = res_get(c, id, after)) != GI_OK)
        goto cleanup;
    rc = audit(c, actor, "allocate", "resource", id, before, *after);
cleanup:
    json_decref(before);
    return rc;
}

int store_res_allocate(struct store *st, const char *actor, int64_t id, const char *tenant,
                       const char *project, json_t **out)
{
    struct conn *c = conn_get(st);
    int rc = tx_begin(c);

    *out = NULL;
    if (rc == GI_OK)
        rc = res_allocate(c, actor, id, tenant, project, out);
    rc = tx_end(c, rc);
    if (rc != GI_OK && *out) {
        json_decref(*out);
        *out = NULL;
    }
    conn_put(st, c);
    return rc;
}

int store_res_release(struct store *st, const char *actor, int64_t id, json_t **out)
{
    struct conn *c = conn_get(st);
    sqlite3_stmt *s;
    json_t *before = NULL;
    int rc = tx_begin(c);

    *out = NULL;
    if (rc != GI_OK)
        goto cleanup;
    if ((rc = res_get(c, id, &before)) != GI_OK)
        goto cleanup;
    rc = GI_INTERNAL;
    if (!(s = prep(c, ST_RES_RELEASE)))
        goto cleanup;
    bind_int(s, ":id", id);
    bind_int(s, ":now", gi_now());
    if ((rc = exec_done(c, s)) != GI_OK)
        goto cleanup;
    if (sqlite3_changes(c->db) != 1) {
        rc = GI_CONFLICT;
        goto cleanup;
    }
    rc = GI_INTERNAL;
    if (!(s = prep(c, ST_ALLOC_CLOSE)))
        goto cleanup;
    bind_int(s, ":id", id);
    bind_int(s, ":now", gi_now());
    if ((rc = exec_done(c, s)) != GI_OK)
        goto cleanup;
    if ((rc = res_get(c, id, out)) != GI_OK)
        goto cleanup;
    rc = audit(c, actor, "release", "resource", id, before, *out);
cleanup:
    rc = tx_end(c, rc);
    if (rc != GI_OK && *out) {
        json_decref(*out);
        *out = NULL;
    }
    json_decref(before);
    conn_put(st, c);
    return rc;
}

int store_res_allocations(struct store *st, int64_t id, json_t **items)
{
    struct conn *c = conn_get(st);
    sqlite3_stmt *s = prep(c, ST_ALLOC_HISTORY);
    int rc = GI_INTERNAL;

    if (s) {
        bind_int(s, ":id", id);
        rc = collect(c, s, items);
    }
    conn_put(st, c);
    return rc;
}

int store_alloc_bulk(struct store *st, const char *actor, const struct store_alloc_req *req,
                     json_t **items, int64_t *available)
{
    struct conn *c = conn_get(st);
    sqlite3_stmt *s;
    int64_t ids[1000];
    int64_t n = 0;
    json_t *arr = json_array();
    int rc = tx_begin(c), step = SQLITE_DONE;

    *items = NULL;
    *available = 0;
    if (rc != GI_OK)
        goto cleanup;
    rc = GI_INTERNAL;
    if (!(s = prep(c, ST_ALLOC_FIND)))
        goto cleanup;
    bind_int(s, ":dc", req->datacenter_id);
    bind_text(s, ":kind", req->kind);
    bind_int(s, ":min_gpus", req->min_gpus);
    bind_text(s, ":gpu_model", req->gpu_model);
    bind_int(s, ":limit", req->count < 1000 ? req->count : 1000);
    while (n < 1000 && (step = sqlite3_step(s)) == SQLITE_ROW)
        ids[n++] = sqlite3_column_int64(s, 0);
    sqlite3_reset(s);
    if (step != SQLITE_ROW && step != SQLITE_DONE) {
        rc = map_rc(c->db, step);
        goto cleanup;
    }
    *available = n;
    if (n < req->count) {
        rc = GI_CONFLICT;
        goto cleanup;
    }
    for (int64_t i = 0; i < n; i++) {
        json_t *after = NULL;
        if ((rc = res_allocate(c, actor, ids[i], req->tenant, req->project, &after)) != GI_OK)
            goto cleanup;
        json_array_append_new(arr, after);
    }
    rc = GI_OK;
cleanup:
    rc = tx_end(c, rc);
    if (rc == GI_OK) {
        *items = arr;
        arr = NULL;
    }
    json_decref(arr);
    conn_put(st, c);
    return rc;
}
