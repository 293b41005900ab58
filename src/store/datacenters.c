/* Data centers: their rows, the per-kind resource counts kept in
 * dc_counts, and the overview of one data center. */
#include "store/store_int.h"
#include "core/status.h"
#include "core/util.h"

#include <string.h>

#define DC_KIND_N(kind)                                                                            \
    "(SELECT COALESCE(SUM(c.n), 0) FROM dc_counts c WHERE c.datacenter_id = d.id AND c.kind = "    \
    "'" kind "')"
#define DC_SELECT                                                                                  \
    "SELECT d.id, d.name, d.location, d.rows_count AS \"rows\", d.created_at, "                    \
    "d.updated_at, " DC_KIND_N("server") " AS servers, " DC_KIND_N("vm") " AS vms, " DC_KIND_N(    \
        "storage") " AS storages, " DC_KIND_N("switch") " AS switches, " DC_KIND_N("infiniband") " AS infiniband FROM datacenters d "
#define DC_WHERE "WHERE (:q IS NULL OR d.name LIKE :q ESCAPE '!' OR d.location LIKE :q ESCAPE '!') "
#define DC_KEY_TEXT "CASE :sort WHEN 'name' THEN d.name WHEN 'location' THEN d.location END"
#define DC_KEY_NUM                                                                                 \
    "CASE :sort WHEN 'id' THEN d.id WHEN 'created_at' THEN d.created_at WHEN 'rows' THEN "         \
    "d.rows_count END"

const char store_sql_dc_by_name[] = "SELECT id FROM datacenters WHERE name = :name";

#define STATEMENTS(X)                                                                              \
    X(DC_ADD, "INSERT INTO datacenters (name, location, rows_count, created_at, updated_at) "      \
              "VALUES (:name, :location, :rows, :now, :now) RETURNING id")                         \
    X(DC_GET, DC_SELECT "WHERE d.id = :id")                                                        \
    X(DC_LIST_ID, DC_SELECT DC_WHERE "ORDER BY d.id " PAGE)                                        \
    X(DC_LIST_ASC, DC_SELECT DC_WHERE "ORDER BY " DC_KEY_TEXT ", " DC_KEY_NUM ", d.id " PAGE)      \
    X(DC_LIST_DESC,                                                                                \
      DC_SELECT DC_WHERE "ORDER BY " DC_KEY_TEXT " DESC, " DC_KEY_NUM " DESC, d.id DESC " PAGE)    \
    X(DC_COUNT, "SELECT COUNT(*) FROM datacenters d " DC_WHERE)                                    \
    X(DC_UPDATE, "UPDATE datacenters SET name = COALESCE(:name, name), location = "                \
                 "COALESCE(:location, location), rows_count = CASE WHEN :rows < 0 THEN "           \
                 "rows_count ELSE :rows END, updated_at = :now WHERE id = :id")                    \
    X(DC_BY_NAME, store_sql_dc_by_name)                                                            \
    X(DC_DELETE, "DELETE FROM datacenters WHERE id = :id")                                         \
    X(DC_COUNTS, "SELECT kind, state, n, gpus FROM dc_counts WHERE datacenter_id = :id")           \
    X(DC_BASIC, "SELECT id, name, location FROM datacenters WHERE id = :id")

enum stmt_id { STATEMENTS(STORE_AS_ENUM) ST__COUNT };
static const char *const stmt_sql[] = {STATEMENTS(STORE_AS_SQL)};

static struct db_stmt *prep(struct conn *c, enum stmt_id id) { return db_prep(c, stmt_sql[id]); }

static int list_page(struct store *st, enum stmt_id count, enum stmt_id list, db_filter_binder bind,
                     const void *filter, const struct store_page *pg, json_t **items,
                     int64_t *total)
{
    return db_list_page(st, stmt_sql[count], stmt_sql[list], bind, filter, pg, items, total);
}

static int dc_get(struct conn *c, int64_t id, json_t **out)
{
    struct db_stmt *s = prep(c, ST_DC_GET);
    if (!s)
        return GI_INTERNAL;
    db_bind_int(s, ":id", id);
    return db_fetch_one(c, s, out);
}

int store_dc_create(struct store *st, const char *actor, const struct store_dc *in, json_t **out)
{
    struct conn *c = db_conn_get(st);
    struct db_stmt *s;
    int64_t id;
    int rc = db_tx_begin(c);

    *out = NULL;
    if (rc != GI_OK)
        goto cleanup;
    rc = GI_INTERNAL;
    if (!(s = prep(c, ST_DC_ADD)))
        goto cleanup;
    db_bind_text(s, ":name", in->name);
    db_bind_text(s, ":location", in->location ? in->location : "");
    db_bind_int(s, ":rows", in->rows < 0 ? 0 : in->rows);
    db_bind_int(s, ":now", gi_now());
    if ((rc = db_fetch_int(c, s, &id)) != GI_OK)
        goto cleanup;
    if ((rc = dc_get(c, id, out)) != GI_OK)
        goto cleanup;
    rc = db_audit(c, actor, "create", "datacenter", id, NULL, *out);
cleanup:
    rc = db_tx_end_doc(c, rc, out);
    db_conn_put(st, c);
    return rc;
}

static void bind_dc_filter(struct db_stmt *s, const void *q) { db_bind_like(s, ":q", q); }

int store_dc_list(struct store *st, const char *q, const struct store_page *pg, json_t **items,
                  int64_t *total)
{
    enum stmt_id list = !pg->sort ? ST_DC_LIST_ID : pg->desc ? ST_DC_LIST_DESC : ST_DC_LIST_ASC;
    return list_page(st, ST_DC_COUNT, list, bind_dc_filter, q, pg, items, total);
}

int store_dc_get(struct store *st, int64_t id, json_t **out)
{
    struct conn *c = db_conn_get(st);
    int rc = dc_get(c, id, out);
    db_conn_put(st, c);
    return rc;
}

int store_dc_update(struct store *st, const char *actor, int64_t id, const struct store_dc *in,
                    json_t **out)
{
    struct conn *c = db_conn_get(st);
    struct db_stmt *s;
    json_t *before = NULL;
    int rc = db_tx_begin(c);

    *out = NULL;
    if (rc != GI_OK)
        goto cleanup;
    if ((rc = dc_get(c, id, &before)) != GI_OK)
        goto cleanup;
    rc = GI_INTERNAL;
    if (!(s = prep(c, ST_DC_UPDATE)))
        goto cleanup;
    db_bind_int(s, ":id", id);
    db_bind_text(s, ":name", in->name);
    db_bind_text(s, ":location", in->location);
    db_bind_int(s, ":rows", in->rows);
    db_bind_int(s, ":now", gi_now());
    if ((rc = db_exec_done(c, s)) != GI_OK)
        goto cleanup;
    if ((rc = dc_get(c, id, out)) != GI_OK)
        goto cleanup;
    rc = db_audit(c, actor, "update", "datacenter", id, before, *out);
cleanup:
    rc = db_tx_end_doc(c, rc, out);
    json_decref(before);
    db_conn_put(st, c);
    return rc;
}

/* Per-kind resource counts of a data center (every kind present) and,
 * when gpus is not NULL, its servers' GPU totals by allocation state, from
 * the rows of ST_DC_COUNTS (the trigger-kept dc_counts table) that s,
 * bound, gives. */
static int dc_counts_rows(struct conn *c, struct db_stmt *s, json_t **out, json_t **gpus)
{
    json_int_t n[5] = {0}, total = 0, allocated = 0, available = 0;
    static const char *const kinds[5] = {"server", "vm", "storage", "switch", "infiniband"};
    int step;

    while ((step = db_step(c, s)) == DB_ROW) {
        const char *k = db_col_text(s, 0);
        const char *state = db_col_text(s, 1);
        json_int_t cnt = db_col_int(s, 2), g = db_col_int(s, 3);
        for (int i = 0; i < 5; i++)
            if (strcmp(k, kinds[i]) == 0)
                n[i] += cnt;
        /* Servers carry the GPUs; a VM's GPUs are its host's. */
        if (strcmp(k, "server") != 0 || strcmp(state, "retired") == 0)
            continue;
        total += g;
        if (strcmp(state, "available") == 0)
            available += g;
        else if (strcmp(state, "in_use") == 0 || strcmp(state, "reserved") == 0)
            allocated += g;
    }
    db_reset(s);
    if (step != DB_DONE)
        return db_status(step);
    *out = json_pack("{s:I, s:I, s:I, s:I, s:I}", "servers", n[0], "vms", n[1], "storages", n[2],
                     "switches", n[3], "infiniband", n[4]);
    if (gpus)
        *gpus = json_pack("{s:I, s:I, s:I, s:I}", "total", total, "allocated", allocated,
                          "available", available, "unavailable", total - allocated - available);
    return GI_OK;
}

/* dc_counts_rows() of data center id. */
static int dc_counts(struct conn *c, int64_t id, json_t **out, json_t **gpus)
{
    struct db_stmt *s = prep(c, ST_DC_COUNTS);

    if (!s)
        return GI_INTERNAL;
    db_bind_int(s, ":id", id);
    return dc_counts_rows(c, s, out, gpus);
}

int store_dc_delete(struct store *st, const char *actor, int64_t id, bool force, json_t **counts)
{
    struct conn *c = db_conn_get(st);
    struct db_stmt *s;
    json_t *before = NULL, *cnt = NULL;
    json_int_t total = 0;
    const char *k;
    json_t *v;
    int rc = db_tx_begin(c);

    if (rc != GI_OK)
        goto cleanup;
    if ((rc = dc_get(c, id, &before)) != GI_OK)
        goto cleanup;
    if ((rc = dc_counts(c, id, &cnt, NULL)) != GI_OK)
        goto cleanup;
    json_object_foreach(cnt, k, v)
        total += json_integer_value(v);
    if (total > 0 && !force) {
        rc = GI_CONFLICT;
        goto cleanup;
    }
    if ((rc = asset_docs_dc_clear(c, id, actor, gi_now())) != GI_OK)
        goto cleanup;
    rc = GI_INTERNAL;
    if (!(s = prep(c, ST_DC_DELETE)))
        goto cleanup;
    db_bind_int(s, ":id", id);
    if ((rc = db_exec_done(c, s)) != GI_OK)
        goto cleanup;
    json_object_set(before, "deleted_resources", cnt);
    rc = db_audit(c, actor, "delete", "datacenter", id, before, NULL);
cleanup:
    rc = db_tx_end(c, rc);
    if (counts)
        *counts = cnt;
    else
        json_decref(cnt);
    json_decref(before);
    db_conn_put(st, c);
    return rc;
}

int store_dc_overview(struct store *st, int64_t id, int64_t stale_before, json_t **out,
                      json_t **discovered)
{
    struct conn *c = db_conn_get(st);
    struct db_stmt *s[4] = {prep(c, ST_DC_BASIC), prep(c, ST_DC_COUNTS)};
    json_t *dc = NULL, *cnt = NULL, *gpus = NULL;
    int rc;

    *out = *discovered = NULL;
    for (int i = 0; i < 2; i++)
        if (s[i])
            db_bind_int(s[i], ":id", id);
    dc_discovered_prep(c, id, stale_before, s + 2);
    /* One snapshot so the counts, the declared and the discovered GPU
     * totals agree (one round trip on PostgreSQL). */
    if ((rc = db_read_batch(c, s, 4)) != GI_OK)
        goto cleanup;
    if ((rc = db_fetch_one(c, s[0], &dc)) != GI_OK)
        goto cleanup;
    if ((rc = dc_counts_rows(c, s[1], &cnt, &gpus)) != GI_OK)
        goto cleanup;
    if ((rc = dc_discovered_read(c, s + 2, discovered)) != GI_OK)
        goto cleanup;
    *out =
        json_pack("{s:I, s:s?, s:s?, s:o, s:o}", "datacenter_id", (json_int_t)id, "name",
                  json_string_value(json_object_get(dc, "name")), "location",
                  json_string_value(json_object_get(dc, "location")), "counts", cnt, "gpus", gpus);
    cnt = gpus = NULL;
    rc = *out ? GI_OK : GI_INTERNAL;
cleanup:
    db_read_end(c);
    if (rc != GI_OK) {
        json_decref(*discovered);
        *discovered = NULL;
    }
    json_decref(dc);
    json_decref(cnt);
    json_decref(gpus);
    db_conn_put(st, c);
    return rc;
}

int store_dc_id_by_name(struct store *st, const char *name, int64_t *id)
{
    struct conn *c = db_conn_get(st);
    struct db_stmt *s = prep(c, ST_DC_BY_NAME);
    int rc = GI_INTERNAL;

    if (s) {
        db_bind_text(s, ":name", name);
        rc = db_fetch_int(c, s, id);
    }
    db_conn_put(st, c);
    return rc;
}
