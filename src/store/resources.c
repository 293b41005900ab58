/* Inventory resources: create, import, list (JSON and text), update and
 * delete, and their allocations to tenants with the allocation history. */
#include "store/store_int.h"
#include "core/log.h"
#include "core/status.h"
#include "core/util.h"
#include "store/links.h"

#include <stdlib.h>
#include <string.h>

#define RES_SELECT                                                                                 \
    "SELECT r.id, r.datacenter_id, d.name AS datacenter, r.kind, r.name, r.state, r.tenant, "      \
    "r.project, r.gpu_model, r.gpu_count, r.attrs, r.metadata, r.version, r.created_at, "          \
    "r.updated_at FROM resources r JOIN datacenters d ON d.id = r.datacenter_id "
/* Filters common to every list variant; the variant prefix adds the
 * equality terms the planner can serve from an index. */
#define RES_WHERE_COMMON                                                                           \
    "(:dc = 0 OR r.datacenter_id = :dc) AND (:kind IS NULL OR r.kind = :kind) AND "                \
    "(:state IS NULL OR r.state = :state) AND (:tenant IS NULL OR r.tenant = :tenant) AND "        \
    "(:project IS NULL OR r.project = :project) AND (:q IS NULL OR r.name LIKE :q ESCAPE '!' "     \
    "OR r.attrs LIKE :q ESCAPE '!' OR r.tenant LIKE :q ESCAPE '!') AND " STORE_SCOPE_IN(           \
        "r.datacenter_id") " "
#define RES_W_DKS "WHERE r.datacenter_id = :dc AND r.kind = :kind AND r.state = :state AND "
#define RES_W_DK "WHERE r.datacenter_id = :dc AND r.kind = :kind AND "
#define RES_W_D "WHERE r.datacenter_id = :dc AND "
#define RES_W_K "WHERE r.kind = :kind AND "
#define RES_W_A "WHERE "
#define RES_KEY_TEXT                                                                               \
    "CASE :sort WHEN 'name' THEN r.name WHEN 'state' THEN r.state WHEN 'kind' THEN r.kind "        \
    "WHEN 'tenant' THEN r.tenant WHEN 'project' THEN r.project WHEN 'gpu_model' THEN r.gpu_model " \
    "WHEN 'datacenter' THEN d.name END"
#define RES_KEY_NUM                                                                                \
    "CASE :sort WHEN 'gpu_count' THEN r.gpu_count WHEN 'created_at' THEN r.created_at "            \
    "WHEN 'updated_at' THEN r.updated_at WHEN 'id' THEN r.id END"
#define O_ID "ORDER BY r.id " PAGE
#define O_ASC "ORDER BY " RES_KEY_TEXT ", " RES_KEY_NUM ", r.id " PAGE
#define O_DESC "ORDER BY " RES_KEY_TEXT " DESC, " RES_KEY_NUM " DESC, r.id DESC " PAGE
/* List rows are the stored API documents (resources.doc, kept by the
 * triggers of migration 006): the hottest read path builds nothing per row. */
#define RES_DOC_SELECT "SELECT r.doc FROM resources r JOIN datacenters d ON d.id = r.datacenter_id "
#define RES_LIST(w, o) RES_DOC_SELECT w RES_WHERE_COMMON o
/* A page in id order of one data center and kind (and state) with no
 * other filter: equality terms only, which the index of migration 016
 * serves in order, so that even PostgreSQL's generic plan of the prepared
 * statement (planned once, for any values) reads just the page's rows;
 * on PostgreSQL it is planned just once (db_pg.c, PG_PLAN_ONCE; to
 * SQLite the leading comment is a space). The optional terms of RES_WHERE_COMMON make
 * a generic plan expect one row and sort every match instead. The data
 * center is known to exist (a foreign key): no join. */
#define RES_PLAIN_DKS                                                                              \
    "/* plan once */ SELECT r.doc FROM resources r WHERE r.datacenter_id = :dc AND r.kind = "      \
    ":kind AND r.state = :state ORDER BY r.id " PAGE
#define RES_PLAIN_DK                                                                               \
    "/* plan once */ SELECT r.doc FROM resources r WHERE r.datacenter_id = :dc AND r.kind = "      \
    ":kind ORDER BY r.id " PAGE
#define RES_COUNT(w) "SELECT COUNT(*) FROM resources r " w RES_WHERE_COMMON

/* A bulk allocation's candidates. On PostgreSQL the rows are also locked
 * as they are picked, skipping rows another transaction holds, so that
 * two allocations can never pick the same resource nor wait on each
 * other, even without the database-wide writer lock (db_tx_begin). */
#define ALLOC_FIND_SQL                                                                             \
    "SELECT id FROM resources WHERE datacenter_id = :dc AND kind = :kind AND state = "             \
    "'available' AND gpu_count >= :min_gpus AND (:gpu_model IS NULL OR gpu_model = :gpu_model) "   \
    "ORDER BY gpu_count, id LIMIT :limit"

#define STATEMENTS(X)                                                                              \
    X(RES_COUNT_FAST, "SELECT COALESCE(SUM(n), 0) FROM dc_counts WHERE (:dc = 0 OR datacenter_id " \
                      "= :dc) AND (:kind IS NULL OR kind = :kind) AND (:state IS NULL OR state = " \
                      ":state) AND " STORE_SCOPE_IN("datacenter_id"))                              \
    X(RES_ADD, "INSERT INTO resources (datacenter_id, kind, name, state, tenant, project, "        \
               "gpu_model, gpu_count, attrs, metadata, created_at, updated_at) VALUES (:dc, "      \
               ":kind, :name, :state, :tenant, :project, :gpu_model, :gpu_count, :attrs, "         \
               ":metadata, :now, :now) RETURNING id")                                              \
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
    X(ALLOC_FIND, ALLOC_FIND_SQL)                                                                  \
    X(ALLOC_FIND_LOCKED, ALLOC_FIND_SQL " FOR UPDATE SKIP LOCKED")                                 \
    X(RES_LIST_DKS_PLAIN, RES_PLAIN_DKS)                                                           \
    X(RES_LIST_DK_PLAIN, RES_PLAIN_DK)                                                             \
    X(RES_LIST_DKS_ID, RES_LIST(RES_W_DKS, O_ID))                                                  \
    X(RES_LIST_DKS_ASC, RES_LIST(RES_W_DKS, O_ASC))                                                \
    X(RES_LIST_DKS_DESC, RES_LIST(RES_W_DKS, O_DESC))                                              \
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
    X(RES_COUNT_DKS, RES_COUNT(RES_W_DKS))                                                         \
    X(RES_COUNT_DK, RES_COUNT(RES_W_DK))                                                           \
    X(RES_COUNT_D, RES_COUNT(RES_W_D))                                                             \
    X(RES_COUNT_K, RES_COUNT(RES_W_K))                                                             \
    X(RES_COUNT_A, RES_COUNT(RES_W_A))

enum stmt_id { STATEMENTS(STORE_AS_ENUM) ST__COUNT };
static const char *const stmt_sql[] = {STATEMENTS(STORE_AS_SQL)};

static struct db_stmt *prep(struct conn *c, enum stmt_id id) { return db_prep(c, stmt_sql[id]); }

static int collect_with(struct store *st, enum stmt_id id, const char *name, int64_t v,
                        json_t **items)
{
    return db_collect_with(st, stmt_sql[id], name, v, items);
}

static int res_get(struct conn *c, int64_t id, json_t **out)
{
    struct db_stmt *s = prep(c, ST_RES_GET);
    if (!s)
        return GI_INTERNAL;
    db_bind_int(s, ":id", id);
    return db_fetch_one(c, s, out);
}

static void bind_resource(struct db_stmt *s, const struct store_resource *in)
{
    db_bind_int(s, ":dc", in->datacenter_id);
    db_bind_text(s, ":kind", in->kind);
    db_bind_text(s, ":name", in->name);
    db_bind_text(s, ":state", in->state ? in->state : "available");
    db_bind_text(s, ":tenant", in->tenant);
    db_bind_text(s, ":project", in->project);
    db_bind_text(s, ":gpu_model", in->gpu_model);
    db_bind_int(s, ":gpu_count", in->gpu_count);
    /* Both columns are NOT NULL: no attributes or metadata is "{}". */
    if (in->attrs)
        db_bind_json(s, ":attrs", in->attrs);
    else
        db_bind_text(s, ":attrs", "{}");
    if (in->metadata)
        db_bind_json(s, ":metadata", in->metadata);
    else
        db_bind_text(s, ":metadata", "{}");
    db_bind_int(s, ":now", gi_now());
}

/* Inserts one resource (and an allocation interval when it starts held)
 * inside the caller's transaction; *id receives its id. */
static int res_insert(struct conn *c, const char *actor, const struct store_resource *in,
                      int64_t *id, json_t **after)
{
    struct db_stmt *s = prep(c, ST_RES_ADD);
    int rc;

    if (!s)
        return GI_INTERNAL;
    bind_resource(s, in);
    if ((rc = db_fetch_int(c, s, id)) != GI_OK)
        return rc;
    if ((rc = links_server_changed(c, actor, *id)) != GI_OK)
        return rc;
    if (in->state && strcmp(in->state, "in_use") == 0 && in->tenant) {
        if (!(s = prep(c, ST_ALLOC_OPEN)))
            return GI_INTERNAL;
        db_bind_int(s, ":id", *id);
        db_bind_text(s, ":tenant", in->tenant);
        db_bind_text(s, ":project", in->project);
        db_bind_text(s, ":actor", actor);
        db_bind_int(s, ":now", gi_now());
        if ((rc = db_exec_done(c, s)) != GI_OK)
            return rc;
    }
    if ((rc = res_get(c, *id, after)) != GI_OK)
        return rc;
    return db_audit(c, actor, "create", "resource", *id, NULL, *after);
}

int store_res_create(struct store *st, const char *actor, const struct store_resource *in,
                     json_t **out)
{
    struct conn *c = db_conn_get(st);
    int64_t id;
    int rc = db_tx_begin(c);

    *out = NULL;
    if (rc == GI_OK)
        rc = res_insert(c, actor, in, &id, out);
    rc = db_tx_end_doc(c, rc, out);
    db_conn_put(st, c);
    return rc;
}

/* On PostgreSQL an import counts its rows into dc_counts once, at its end
 * (migration 016): its inserts, one statement per row, would otherwise
 * update the same few group rows once per resource inside one
 * transaction. */
static const char sql_counts_defer[] = "SELECT set_config('gi.counts_deferred', 'on', true)";
static const char sql_counts_resume[] = "SELECT set_config('gi.counts_deferred', 'off', true)";
static const char sql_counts_add[] =
    "INSERT INTO dc_counts AS c (datacenter_id, kind, state, n, gpus) "
    "SELECT datacenter_id, kind, state, COUNT(*), COALESCE(SUM(gpu_count), 0) FROM resources "
    "WHERE id IN (SELECT unnest(CAST(:ids AS BIGINT[]))) GROUP BY datacenter_id, kind, state "
    "ON CONFLICT (datacenter_id, kind, state) DO UPDATE SET n = c.n + excluded.n, "
    "gpus = c.gpus + excluded.gpus";

/* Adds the groups of the resources `ids` inserted with counting deferred,
 * and counts the transaction's later writes again as they happen. */
static int counts_add(struct conn *c, struct db_array *ids)
{
    struct db_stmt *s = db_prep(c, sql_counts_add);
    int rc;

    if (!s || ids->failed)
        return GI_INTERNAL;
    db_bind_array(s, ":ids", ids);
    if ((rc = db_exec_done(c, s)) != GI_OK)
        return rc;
    return db_simple(c, sql_counts_resume);
}

int store_res_import(struct store *st, const char *actor, const struct store_resource *rows,
                     size_t n, bool dry_run, int *row_status)
{
    struct conn *c = db_conn_get(st);
    struct db_array ids = {0};
    bool deferred = false;
    int64_t id;
    int rc = db_tx_begin(c), failed = GI_OK;

    if (rc == GI_OK && db_dialect(c) == DB_PG && n > 1) {
        rc = db_simple(c, sql_counts_defer);
        deferred = rc == GI_OK;
    }
    /* A constraint failure undoes only its row (a savepoint), so the
     * transaction goes on and every row's conflict is found. */
    for (size_t i = 0; rc == GI_OK && i < n; i++) {
        json_t *after = NULL;
        int one = db_savepoint(c);
        if (one == GI_OK) {
            one = res_insert(c, actor, &rows[i], &id, &after);
            db_savepoint_end(c, one);
        }
        json_decref(after);
        row_status[i] = one;
        if (one == GI_OK && deferred)
            db_array_int(&ids, id);
        if (one == GI_CONFLICT || one == GI_NOT_FOUND) {
            if (failed == GI_OK)
                failed = one;
        } else {
            rc = one;
        }
    }
    if (rc == GI_OK)
        rc = failed;
    if (rc == GI_OK && deferred)
        rc = counts_add(c, &ids);
    db_array_free(&ids);
    /* A rehearsal runs every insert and constraint, then undoes them
     * (db_tx_end rolls back for any status but GI_OK). */
    if (rc == GI_OK && dry_run)
        db_tx_end(c, GI_CONFLICT);
    else
        rc = db_tx_end(c, rc);
    db_conn_put(st, c);
    return rc;
}

/* Appends a statement's single text column, row by row, to *buf as a
 * comma-separated list (the inside of a JSON array); *rows counts them. */
static int collect_text(struct conn *c, struct db_stmt *s, char **buf, size_t *len, size_t *cap,
                        size_t *rows)
{
    int rc;

    while ((rc = db_step(c, s)) == DB_ROW) {
        const char *t = db_col_text(s, 0);
        size_t n = (size_t)db_col_bytes(s, 0);
        if (*len + n + 2 > *cap) {
            size_t nc = *cap ? *cap * 2 : 65536;
            char *nb;
            while (nc < *len + n + 2)
                nc *= 2;
            if ((nb = realloc(*buf, nc)) == NULL) {
                db_reset(s);
                return GI_INTERNAL;
            }
            *buf = nb;
            *cap = nc;
        }
        if (*rows)
            (*buf)[(*len)++] = ',';
        memcpy(*buf + *len, t ? t : "null", t ? n : 4);
        *len += t ? n : 4;
        (*buf)[*len] = '\0';
        (*rows)++;
    }
    db_reset(s);
    return rc == DB_DONE ? GI_OK : db_status(rc);
}

int store_res_list_text(struct store *st, const struct store_res_filter *f,
                        const struct store_page *pg, char **items, size_t *len, size_t *rows,
                        int64_t *total)
{
    struct conn *c = db_conn_get(st);
    /* Pick the variant whose WHERE prefix lets the planner use an index. */
    int variant = f->datacenter_id && f->kind && f->state ? 0
                  : f->datacenter_id && f->kind           ? 1
                  : f->datacenter_id                      ? 2
                  : f->kind                               ? 3
                                                          : 4;
    int order = !pg->sort ? 0 : pg->desc ? 2 : 1;
    /* Without tenant/project/text filters the trigger-kept counts answer. */
    bool plain = !f->tenant && !f->project && !(f->q && *f->q);
    enum stmt_id list = plain && order == 0 && variant < 2
                            ? (variant == 0 ? ST_RES_LIST_DKS_PLAIN : ST_RES_LIST_DK_PLAIN)
                            : (enum stmt_id)(ST_RES_LIST_DKS_ID + variant * 3 + order);
    enum stmt_id count = plain ? ST_RES_COUNT_FAST : (enum stmt_id)(ST_RES_COUNT_DKS + variant);
    size_t cap = 0;
    struct db_stmt *s[2] = {prep(c, count), prep(c, list)};
    int rc;

    *items = NULL;
    *len = *rows = 0;
    for (int i = 0; i < 2; i++) {
        if (!s[i])
            continue;
        db_bind_int(s[i], ":dc", f->datacenter_id);
        db_bind_scope(s[i], &f->scope);
        db_bind_text(s[i], ":kind", f->kind);
        db_bind_text(s[i], ":state", f->state);
        db_bind_text(s[i], ":tenant", f->tenant);
        db_bind_text(s[i], ":project", f->project);
        db_bind_like(s[i], ":q", f->q);
        db_bind_page(s[i], pg);
    }
    /* The total and the page in one snapshot (one round trip on
     * PostgreSQL). */
    if ((rc = db_read_batch(c, s, 2)) != GI_OK)
        goto cleanup;
    if ((rc = db_fetch_int(c, s[0], total)) != GI_OK)
        goto cleanup;
    if ((rc = collect_text(c, s[1], items, len, &cap, rows)) != GI_OK)
        goto cleanup;
    if (*items == NULL && (*items = calloc(1, 1)) == NULL)
        rc = GI_INTERNAL;
cleanup:
    db_read_end(c);
    if (rc != GI_OK) {
        free(*items);
        *items = NULL;
    }
    db_conn_put(st, c);
    return rc;
}

int store_res_list(struct store *st, const struct store_res_filter *f, const struct store_page *pg,
                   json_t **items, int64_t *total)
{
    char *text = NULL, *wrapped;
    size_t len, rows;
    json_error_t err;
    int rc = store_res_list_text(st, f, pg, &text, &len, &rows, total);

    if (rc != GI_OK)
        return rc;
    wrapped = malloc(len + 3);
    if (wrapped == NULL) {
        free(text);
        return GI_INTERNAL;
    }
    wrapped[0] = '[';
    memcpy(wrapped + 1, text, len);
    wrapped[len + 1] = ']';
    wrapped[len + 2] = '\0';
    free(text);
    *items = json_loadb(wrapped, len + 2, 0, &err);
    free(wrapped);
    return *items ? GI_OK : GI_INTERNAL;
}

int store_res_get(struct store *st, int64_t id, json_t **out)
{
    struct conn *c = db_conn_get(st);
    int rc = res_get(c, id, out);
    db_conn_put(st, c);
    return rc;
}

int store_res_kind(struct store *st, int64_t id, char *kind, size_t len, int64_t *datacenter_id)
{
    struct conn *c = db_conn_get(st);
    struct db_stmt *s = prep(c, ST_RES_KIND);
    int rc = GI_INTERNAL, step;

    if (s) {
        db_bind_int(s, ":id", id);
        step = db_step(c, s);
        if (step == DB_ROW) {
            gi_strlcpy(kind, db_col_text(s, 0), len);
            *datacenter_id = db_col_int(s, 1);
            rc = GI_OK;
        } else {
            rc = step == DB_DONE ? GI_NOT_FOUND : db_status(step);
        }
        db_reset(s);
    }
    db_conn_put(st, c);
    return rc;
}

/* Opens or closes the allocation interval of a resource whose state moved
 * between held and not held. */
static int alloc_track(struct conn *c, const char *actor, int64_t id, const char *old_state,
                       const struct store_resource *in)
{
    const char *state = in->state ? in->state : "available"; /* as bind_resource stores it */
    bool was = strcmp(old_state, "in_use") == 0 || strcmp(old_state, "reserved") == 0;
    bool now_held = strcmp(state, "in_use") == 0 || strcmp(state, "reserved") == 0;
    struct db_stmt *s;
    int rc;

    if (was && !now_held) {
        if (!(s = prep(c, ST_ALLOC_CLOSE)))
            return GI_INTERNAL;
        db_bind_int(s, ":id", id);
        db_bind_int(s, ":now", gi_now());
        return db_exec_done(c, s);
    }
    if (!was && now_held) {
        if (!(s = prep(c, ST_ALLOC_OPEN)))
            return GI_INTERNAL;
        db_bind_int(s, ":id", id);
        db_bind_text(s, ":tenant", in->tenant ? in->tenant : "");
        db_bind_text(s, ":project", in->project);
        db_bind_text(s, ":actor", actor);
        db_bind_int(s, ":now", gi_now());
        rc = db_exec_done(c, s);
        return rc;
    }
    return GI_OK;
}

/* Whether an update changed what ownership rules match on: the tags (of
 * the attributes or the metadata) or the data center. */
static bool owner_inputs_changed(const json_t *before, const json_t *after)
{
    const json_t *mb = json_object_get(before, "metadata"),
                 *ma = json_object_get(after, "metadata");
    const char *const keys[2] = {"tags", "datacenter_id"};

    for (int i = 0; i < 2; i++) {
        const json_t *b = json_object_get(before, keys[i]), *a = json_object_get(after, keys[i]);
        if ((a || b) && !(a && b && json_equal(a, b)))
            return true;
    }
    mb = json_object_get(mb, "tags");
    ma = json_object_get(ma, "tags");
    return (ma || mb) && !(ma && mb && json_equal(ma, mb));
}

int store_res_update(struct store *st, const char *actor, int64_t id, int64_t version,
                     const struct store_resource *in, json_t **out)
{
    struct conn *c = db_conn_get(st);
    struct db_stmt *s;
    json_t *before = NULL;
    int rc = db_tx_begin(c);

    *out = NULL;
    if (rc != GI_OK)
        goto cleanup;
    if ((rc = res_get(c, id, &before)) != GI_OK)
        goto cleanup;
    rc = GI_INTERNAL;
    if (!(s = prep(c, ST_RES_UPDATE)))
        goto cleanup;
    bind_resource(s, in);
    db_bind_int(s, ":id", id);
    db_bind_int(s, ":version", version);
    if ((rc = db_exec_done(c, s)) != GI_OK)
        goto cleanup;
    if (db_changes(c) != 1) {
        rc = GI_CONFLICT;
        goto cleanup;
    }
    rc = alloc_track(c, actor, id, json_string_value(json_object_get(before, "state")), in);
    if (rc != GI_OK)
        goto cleanup;
    if ((rc = links_server_changed(c, actor, id)) != GI_OK)
        goto cleanup;
    if ((rc = res_get(c, id, out)) != GI_OK)
        goto cleanup;
    if (owner_inputs_changed(before, *out) &&
        (rc = owner_resource_changed(c, id, gi_now())) != GI_OK)
        goto cleanup;
    rc = db_audit(c, actor, "update", "resource", id, before, *out);
cleanup:
    rc = db_tx_end_doc(c, rc, out);
    json_decref(before);
    db_conn_put(st, c);
    return rc;
}

int store_res_delete(struct store *st, const char *actor, int64_t id, bool force, json_t **held)
{
    struct conn *c = db_conn_get(st);
    struct db_stmt *s;
    json_t *before = NULL;
    const char *state;
    int rc = db_tx_begin(c);

    if (held)
        *held = NULL;
    if (rc != GI_OK)
        goto cleanup;
    if ((rc = res_get(c, id, &before)) != GI_OK)
        goto cleanup;
    /* Checked inside the transaction, so an allocation cannot slip in
     * between the check and the delete. */
    state = json_string_value(json_object_get(before, "state"));
    if (!force && state && (strcmp(state, "in_use") == 0 || strcmp(state, "reserved") == 0)) {
        rc = GI_CONFLICT;
        if (held)
            *held = json_incref(before);
        goto cleanup;
    }
    if ((rc = links_server_removing(c, actor, id)) != GI_OK)
        goto cleanup;
    rc = GI_INTERNAL;
    if (!(s = prep(c, ST_RES_DELETE)))
        goto cleanup;
    db_bind_int(s, ":id", id);
    if ((rc = db_exec_done(c, s)) != GI_OK)
        goto cleanup;
    rc = db_audit(c, actor, "delete", "resource", id, before, NULL);
cleanup:
    rc = db_tx_end(c, rc);
    json_decref(before);
    db_conn_put(st, c);
    return rc;
}

/* available -> in_use inside the caller's transaction; GI_CONFLICT when
 * the resource is not available at this instant. */
static int res_allocate(struct conn *c, const char *actor, int64_t id, const char *tenant,
                        const char *project, json_t **after)
{
    struct db_stmt *s;
    json_t *before = NULL;
    int rc;

    if ((rc = res_get(c, id, &before)) != GI_OK)
        return rc;
    rc = GI_INTERNAL;
    if (!(s = prep(c, ST_RES_ALLOC)))
        goto cleanup;
    db_bind_int(s, ":id", id);
    db_bind_text(s, ":tenant", tenant);
    db_bind_text(s, ":project", project);
    db_bind_int(s, ":now", gi_now());
    if ((rc = db_exec_done(c, s)) != GI_OK)
        goto cleanup;
    if (db_changes(c) != 1) {
        rc = GI_CONFLICT;
        goto cleanup;
    }
    rc = GI_INTERNAL;
    if (!(s = prep(c, ST_ALLOC_OPEN)))
        goto cleanup;
    db_bind_int(s, ":id", id);
    db_bind_text(s, ":tenant", tenant);
    db_bind_text(s, ":project", project);
    db_bind_text(s, ":actor", actor);
    db_bind_int(s, ":now", gi_now());
    if ((rc = db_exec_done(c, s)) != GI_OK)
        goto cleanup;
    if ((rc = res_get(c, id, after)) != GI_OK)
        goto cleanup;
    rc = db_audit(c, actor, "allocate", "resource", id, before, *after);
cleanup:
    json_decref(before);
    return rc;
}

int store_res_allocate(struct store *st, const char *actor, int64_t id, const char *tenant,
                       const char *project, json_t **out)
{
    struct conn *c = db_conn_get(st);
    int rc = db_tx_begin(c);

    *out = NULL;
    if (rc == GI_OK)
        rc = res_allocate(c, actor, id, tenant, project, out);
    rc = db_tx_end_doc(c, rc, out);
    db_conn_put(st, c);
    return rc;
}

int store_res_release(struct store *st, const char *actor, int64_t id, json_t **out)
{
    struct conn *c = db_conn_get(st);
    struct db_stmt *s;
    json_t *before = NULL;
    int rc = db_tx_begin(c);

    *out = NULL;
    if (rc != GI_OK)
        goto cleanup;
    if ((rc = res_get(c, id, &before)) != GI_OK)
        goto cleanup;
    rc = GI_INTERNAL;
    if (!(s = prep(c, ST_RES_RELEASE)))
        goto cleanup;
    db_bind_int(s, ":id", id);
    db_bind_int(s, ":now", gi_now());
    if ((rc = db_exec_done(c, s)) != GI_OK)
        goto cleanup;
    if (db_changes(c) != 1) {
        rc = GI_CONFLICT;
        goto cleanup;
    }
    rc = GI_INTERNAL;
    if (!(s = prep(c, ST_ALLOC_CLOSE)))
        goto cleanup;
    db_bind_int(s, ":id", id);
    db_bind_int(s, ":now", gi_now());
    if ((rc = db_exec_done(c, s)) != GI_OK)
        goto cleanup;
    if ((rc = res_get(c, id, out)) != GI_OK)
        goto cleanup;
    rc = db_audit(c, actor, "release", "resource", id, before, *out);
cleanup:
    rc = db_tx_end_doc(c, rc, out);
    json_decref(before);
    db_conn_put(st, c);
    return rc;
}

int store_res_allocations(struct store *st, int64_t id, json_t **items)
{
    return collect_with(st, ST_ALLOC_HISTORY, ":id", id, items);
}

int store_alloc_bulk(struct store *st, const char *actor, const struct store_alloc_req *req,
                     json_t **items, int64_t *available)
{
    struct conn *c = db_conn_get(st);
    struct db_stmt *s;
    int64_t ids[1000];
    int64_t n = 0;
    json_t *arr = json_array();
    int rc = db_tx_begin(c), step = DB_DONE;

    *items = NULL;
    *available = 0;
    if (rc != GI_OK)
        goto cleanup;
    rc = GI_INTERNAL;
    if (!(s = prep(c, db_dialect(c) == DB_PG ? ST_ALLOC_FIND_LOCKED : ST_ALLOC_FIND)))
        goto cleanup;
    db_bind_int(s, ":dc", req->datacenter_id);
    db_bind_text(s, ":kind", req->kind);
    db_bind_int(s, ":min_gpus", req->min_gpus);
    db_bind_text(s, ":gpu_model", req->gpu_model);
    db_bind_int(s, ":limit", req->count < 1000 ? req->count : 1000);
    while (n < 1000 && (step = db_step(c, s)) == DB_ROW)
        ids[n++] = db_col_int(s, 0);
    db_reset(s);
    if (step != DB_ROW && step != DB_DONE) {
        rc = db_status(step);
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
    rc = db_tx_end(c, rc);
    if (rc == GI_OK) {
        *items = arr;
        arr = NULL;
    }
    json_decref(arr);
    db_conn_put(st, c);
    return rc;
}
