/* Ownership dimensions: teams, environments, pools and clusters/clouds,
 * one table and one code path for the four kinds. See store.h. */
#include "store/owner_int.h"
#include "core/status.h"
#include "core/util.h"

#include <string.h>

#define DIM_SELECT                                                                                 \
    "SELECT id, kind, name, display, description, attrs AS attrs_json, created_at, updated_at "    \
    "FROM owner_dims "
#define DIM_WHERE                                                                                  \
    "WHERE kind = :kind AND (:q IS NULL OR name LIKE :q ESCAPE '!' OR display LIKE :q ESCAPE "     \
    "'!' OR description LIKE :q ESCAPE '!') "

#define STATEMENTS(X)                                                                              \
    X(DIM_ADD, "INSERT INTO owner_dims (kind, name, display, description, attrs, created_at, "     \
               "updated_at) VALUES (:kind, :name, :display, :descr, :attrs, :now, :now) "          \
               "RETURNING id")                                                                     \
    X(DIM_GET, DIM_SELECT "WHERE kind = :kind AND name = :name")                                   \
    X(DIM_LIST, DIM_SELECT DIM_WHERE "ORDER BY name " PAGE)                                        \
    X(DIM_LIST_ASC, DIM_SELECT DIM_WHERE "ORDER BY CASE :sort WHEN 'display' THEN display END, "   \
                                         "CASE :sort WHEN 'created_at' THEN created_at END, "      \
                                         "name " PAGE)                                             \
    X(DIM_LIST_DESC, DIM_SELECT DIM_WHERE "ORDER BY CASE :sort WHEN 'display' THEN display END "   \
                                          "DESC, CASE :sort WHEN 'created_at' THEN created_at "    \
                                          "END DESC, name DESC " PAGE)                             \
    X(DIM_COUNT, "SELECT COUNT(*) FROM owner_dims " DIM_WHERE)                                     \
    X(DIM_UPDATE, "UPDATE owner_dims SET display = COALESCE(:display, display), description = "    \
                  "COALESCE(:descr, description), attrs = COALESCE(:attrs, attrs), updated_at = "  \
                  ":now WHERE kind = :kind AND name = :name")                                      \
    X(DIM_DELETE, "DELETE FROM owner_dims WHERE kind = :kind AND name = :name")                    \
    X(DIM_EXISTS, "SELECT COUNT(*) FROM owner_dims WHERE kind = :kind AND name = :name")           \
    X(DIM_CLUSTER_ATTRS, "SELECT attrs FROM owner_dims WHERE kind = 'cluster'")                    \
    X(DIM_USED_ASSIGN,                                                                             \
      "SELECT id, target, target_id FROM owner_assignments WHERE effective_to IS NULL AND "        \
      "((:kind = 'team' AND team = :name) OR (:kind = 'environment' AND env = :name) OR (:kind = " \
      "'pool' AND pool = :name)) ORDER BY id")                                                     \
    X(DIM_USED_RULES,                                                                              \
      "SELECT DISTINCT rule_id FROM owner_rules WHERE effective_to IS NULL AND ((:kind = 'team' "  \
      "AND set_team = :name) OR (:kind = 'environment' AND set_env = :name) OR (:kind = 'pool' "   \
      "AND set_pool = :name) OR (:kind = 'cluster' AND (set_cluster = :name OR set_cloud = "       \
      ":name))) ORDER BY rule_id")

enum stmt_id { STATEMENTS(STORE_AS_ENUM) ST__COUNT };
static const char *const stmt_sql[] = {STATEMENTS(STORE_AS_SQL)};

static struct db_stmt *prep(struct conn *c, enum stmt_id id) { return db_prep(c, stmt_sql[id]); }

static const char *const dim_kinds[] = {"team", "environment", "pool", "cluster", NULL};

bool store_dim_kind_valid(const char *kind)
{
    for (int i = 0; kind && dim_kinds[i]; i++)
        if (strcmp(kind, dim_kinds[i]) == 0)
            return true;
    return false;
}

const char *owner_field_kind(const char *field)
{
    if (strcmp(field, "team") == 0)
        return "team";
    if (strcmp(field, "env") == 0)
        return "environment";
    if (strcmp(field, "pool") == 0)
        return "pool";
    return "cluster";
}

/* The stored attrs text is shown as the object "attrs". */
static void dim_doc_fix(json_t *d)
{
    json_t *a = json_object_get(d, "attrs_json");
    json_object_set_new(d, "attrs", json_is_object(a) ? json_incref(a) : json_object());
    json_object_del(d, "attrs_json");
}

static int dim_get(struct conn *c, const char *kind, const char *name, json_t **out)
{
    struct db_stmt *s = prep(c, ST_DIM_GET);
    int rc;

    if (!s)
        return GI_INTERNAL;
    db_bind_text(s, ":kind", kind);
    db_bind_text(s, ":name", name);
    if ((rc = db_fetch_one(c, s, out)) == GI_OK)
        dim_doc_fix(*out);
    return rc;
}

int owner_dim_check(struct conn *c, const char *field, const char *value)
{
    struct db_stmt *s = prep(c, ST_DIM_EXISTS);
    int64_t n = 0;
    int rc, step;

    if (!s)
        return GI_INTERNAL;
    db_bind_text(s, ":kind", owner_field_kind(field));
    db_bind_text(s, ":name", value);
    if ((rc = db_fetch_int(c, s, &n)) != GI_OK)
        return rc;
    if (n > 0)
        return GI_OK;
    if (strcmp(field, "cloud") != 0)
        return GI_INVALID;
    /* A cloud may also be what a cluster says it runs on. */
    if (!(s = prep(c, ST_DIM_CLUSTER_ATTRS)))
        return GI_INTERNAL;
    rc = GI_INVALID;
    while ((step = db_step(c, s)) == DB_ROW) {
        json_t *a = json_loads(db_col_text(s, 0), 0, NULL);
        const char *cloud = json_string_value(json_object_get(a, "cloud"));
        if (cloud && strcmp(cloud, value) == 0)
            rc = GI_OK;
        json_decref(a);
    }
    db_reset(s);
    return step == DB_DONE ? rc : db_status(step);
}

static const char *audit_entity(const char *kind) { return kind; }

int store_dim_create(struct store *st, const char *actor, const char *kind,
                     const struct store_dim *in, json_t **out)
{
    struct conn *c = db_conn_get(st);
    struct db_stmt *s;
    json_t *empty = json_object();
    int64_t id;
    int rc = db_tx_begin(c);

    *out = NULL;
    if (rc != GI_OK)
        goto cleanup;
    rc = GI_INTERNAL;
    if (!(s = prep(c, ST_DIM_ADD)))
        goto cleanup;
    db_bind_text(s, ":kind", kind);
    db_bind_text(s, ":name", in->name);
    db_bind_opt_text(s, ":display", in->display);
    db_bind_opt_text(s, ":descr", in->description);
    db_bind_json(s, ":attrs", in->attrs ? in->attrs : empty);
    db_bind_int(s, ":now", gi_now());
    if ((rc = db_fetch_int(c, s, &id)) != GI_OK || (rc = dim_get(c, kind, in->name, out)) != GI_OK)
        goto cleanup;
    rc = db_audit(c, actor, "create", audit_entity(kind), id, NULL, *out);
cleanup:
    rc = db_tx_end_doc(c, rc, out);
    json_decref(empty);
    db_conn_put(st, c);
    return rc;
}

struct dim_filter {
    const char *kind, *q;
};

static void bind_dim_filter(struct db_stmt *s, const void *filter)
{
    const struct dim_filter *f = filter;
    db_bind_text(s, ":kind", f->kind);
    db_bind_like(s, ":q", f->q);
}

int store_dim_list(struct store *st, const char *kind, const char *q, const struct store_page *pg,
                   json_t **items, int64_t *total)
{
    struct dim_filter f = {kind, q};
    enum stmt_id list = !pg->sort ? ST_DIM_LIST : pg->desc ? ST_DIM_LIST_DESC : ST_DIM_LIST_ASC;
    size_t i;
    json_t *d;
    int rc = db_list_page(st, stmt_sql[ST_DIM_COUNT], stmt_sql[list], bind_dim_filter, &f, pg,
                          items, total);

    if (rc == GI_OK)
        json_array_foreach(*items, i, d)
            dim_doc_fix(d);
    return rc;
}

int store_dim_get(struct store *st, const char *kind, const char *name, json_t **out)
{
    struct conn *c = db_conn_get(st);
    int rc = dim_get(c, kind, name, out);
    db_conn_put(st, c);
    return rc;
}

int store_dim_update(struct store *st, const char *actor, const char *kind, const char *name,
                     const struct store_dim *in, json_t **out)
{
    struct conn *c = db_conn_get(st);
    struct db_stmt *s;
    json_t *before = NULL;
    int rc = db_tx_begin(c);

    *out = NULL;
    if (rc != GI_OK || (rc = dim_get(c, kind, name, &before)) != GI_OK)
        goto cleanup;
    rc = GI_INTERNAL;
    if (!(s = prep(c, ST_DIM_UPDATE)))
        goto cleanup;
    db_bind_text(s, ":kind", kind);
    db_bind_text(s, ":name", name);
    db_bind_text(s, ":display", in->display);
    db_bind_text(s, ":descr", in->description);
    db_bind_json(s, ":attrs", in->attrs);
    db_bind_int(s, ":now", gi_now());
    if ((rc = db_exec_done(c, s)) != GI_OK || (rc = dim_get(c, kind, name, out)) != GI_OK)
        goto cleanup;
    rc = db_audit(c, actor, "update", audit_entity(kind),
                  json_integer_value(json_object_get(before, "id")), before, *out);
cleanup:
    rc = db_tx_end_doc(c, rc, out);
    json_decref(before);
    db_conn_put(st, c);
    return rc;
}

/* What still names the value: open assignments and rules. */
static int dim_users(struct conn *c, const char *kind, const char *name, json_t **users)
{
    json_t *assign = NULL, *rules = json_array(), *rows = NULL;
    struct db_stmt *s;
    size_t i;
    json_t *r;
    int rc = GI_INTERNAL;

    *users = NULL;
    if (!(s = prep(c, ST_DIM_USED_ASSIGN)))
        goto cleanup;
    db_bind_text(s, ":kind", kind);
    db_bind_text(s, ":name", name);
    if ((rc = db_collect(c, s, &assign)) != GI_OK)
        goto cleanup;
    rc = GI_INTERNAL;
    if (!(s = prep(c, ST_DIM_USED_RULES)))
        goto cleanup;
    db_bind_text(s, ":kind", kind);
    db_bind_text(s, ":name", name);
    if ((rc = db_collect(c, s, &rows)) != GI_OK)
        goto cleanup;
    json_array_foreach(rows, i, r)
        json_array_append(rules, json_object_get(r, "rule_id"));
    *users = json_pack("{s:O, s:O}", "assignments", assign, "rules", rules);
    rc = *users ? GI_OK : GI_INTERNAL;
cleanup:
    json_decref(assign);
    json_decref(rules);
    json_decref(rows);
    return rc;
}

int store_dim_delete(struct store *st, const char *actor, const char *kind, const char *name,
                     json_t **users)
{
    struct conn *c = db_conn_get(st);
    struct db_stmt *s;
    json_t *before = NULL, *u = NULL;
    int rc = db_tx_begin(c);

    if (users)
        *users = NULL;
    if (rc != GI_OK || (rc = dim_get(c, kind, name, &before)) != GI_OK ||
        (rc = dim_users(c, kind, name, &u)) != GI_OK)
        goto cleanup;
    if (json_array_size(json_object_get(u, "assignments")) ||
        json_array_size(json_object_get(u, "rules"))) {
        rc = GI_CONFLICT;
        if (users) {
            *users = u;
            u = NULL;
        }
        goto cleanup;
    }
    rc = GI_INTERNAL;
    if (!(s = prep(c, ST_DIM_DELETE)))
        goto cleanup;
    db_bind_text(s, ":kind", kind);
    db_bind_text(s, ":name", name);
    if ((rc = db_exec_done(c, s)) != GI_OK)
        goto cleanup;
    rc = db_audit(c, actor, "delete", audit_entity(kind),
                  json_integer_value(json_object_get(before, "id")), before, NULL);
cleanup:
    rc = db_tx_end(c, rc);
    json_decref(before);
    json_decref(u);
    db_conn_put(st, c);
    return rc;
}
