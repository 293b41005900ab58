/* Hardware assets: the write of a record's fields with their provenance
 * and event, create / get / update / list, stage changes through the API,
 * and the asset document as the API shows it (book value, warranty and
 * energy computed at read time).
 *
 * Provenance: asset_fields holds, for every field an asset has had a
 * value in, the source that set it last ('api', 'csv', 'discovery' or an
 * import source such as 'glpi:<deviceid>'). A person (the API, a CSV
 * import) may change every field; a source changes a field only when no
 * one set it yet or it set it itself, so it never undoes a correction. */
#include "store/assets_int.h"
#include "store/kept.h"
#include "core/money.h"
#include "core/status.h"
#include "core/util.h"

#include <stdio.h>
#include <stdlib.h>
#include <string.h>

/* The columns of asset_cols in order (0..25), then the rest of the row. */
#define ASSET_COLS                                                                                 \
    "a.tag, a.kind, a.serial, a.epc, a.vendor, a.model, a.parent_id, a.datacenter_id, a.room, "    \
    "a.rack, a.rack_u, a.storage, a.purchase_date, a.purchase_cost_micros, a.currency, "           \
    "a.supplier, a.order_number, a.warranty_end, a.lease_end, a.depreciation_years, "              \
    "a.salvage_micros, a.gpu_uuid, a.host_id, a.source_key, a.custom, a.last_seen"
#define N_COLS 26
#define C_ID 26
#define C_STAGE 27
#define C_STAGE_SINCE 28
#define C_SOURCE 29
#define C_CREATED 30
#define C_UPDATED 31
#define C_DC 32
#define C_PARENT 33
#define ASSET_SELECT                                                                               \
    "SELECT " ASSET_COLS ", a.id, a.stage, a.stage_since, a.source, a.created_at, a.updated_at, "  \
    "d.name, p.tag FROM assets a LEFT JOIN datacenters d ON d.id = a.datacenter_id LEFT JOIN "     \
    "assets p ON p.id = a.parent_id "
/* The columns asset_doc_append() reads: the stored document and what the
 * list adds to it at read time. The data center's name is not joined:
 * the page reads every data center's name beside it (asset_dc_names_prep())
 * and asset_doc_append() looks the row's one up. The parent's tag is read
 * by key in the select list rather than joined, the same value (the key
 * is unique). PostgreSQL plans a page's statement at every execution (a
 * generic plan costs LIMIT $n as a tenth of the rows, so it never wins),
 * and on the first page the two joins were three quarters of that
 * planning and two thirds of the execution (PERFORMANCE.md, "The asset
 * list on PostgreSQL without joins"). ASSET_DOC_JOINED keeps the joins
 * for the orders by the data center's name (asset_doc_append() reads its
 * a.datacenter_id all the same). */
#define ASSET_DOC_COLS                                                                             \
    "SELECT a.doc, a.doc_cut, a.purchase_cost_micros, a.purchase_date, a.depreciation_years, "     \
    "a.salvage_micros, a.currency, a.warranty_end, a.datacenter_id, "
#define ASSET_DOC_SELECT                                                                           \
    ASSET_DOC_COLS "(SELECT p.tag FROM assets p WHERE p.id = a.parent_id) FROM assets a "
#define ASSET_DOC_JOINED                                                                           \
    ASSET_DOC_COLS "p.tag FROM assets a LEFT JOIN datacenters d ON d.id = a.datacenter_id LEFT "   \
                   "JOIN assets p ON p.id = a.parent_id "
#define ASSET_VALUES                                                                               \
    ":tag, :kind, :serial, :epc, :vendor, :model, :parent_id, :datacenter_id, :room, :rack, "      \
    ":rack_u, :storage, :purchase_date, :purchase_cost_micros, :currency, :supplier, "             \
    ":order_number, :warranty_end, :lease_end, :depreciation_years, :salvage_micros, :gpu_uuid, "  \
    ":host_id, :source_key, :custom, :last_seen"

#define ASSET_WHERE                                                                                \
    "WHERE (:kind IS NULL OR a.kind = :kind) AND (:stage IS NULL OR a.stage = :stage) AND "        \
    "(:dc = 0 OR a.datacenter_id = :dc) AND (:model IS NULL OR a.model = :model) AND "             \
    "(:wb IS NULL OR a.warranty_end < :wb) AND (:wa IS NULL OR a.warranty_end >= :wa) AND "        \
    "(:ends = 0 OR (a.warranty_end >= :ea AND a.warranty_end < :eb) OR (a.lease_end >= :ea AND "   \
    "a.lease_end < :eb)) AND (:parent IS NULL OR a.parent_id = (SELECT x.id FROM assets x WHERE "  \
    "x.tag = :parent)) AND "                                                                       \
    "(:q IS NULL OR a.tag LIKE :q ESCAPE '!' OR a.serial LIKE :q ESCAPE '!' OR a.model LIKE :q "   \
    "ESCAPE '!') AND " STORE_SCOPE_IN("a.datacenter_id") " "
/* Equality-only filters: a page of one kind, stage and/or data center
 * with no other filter (or none at all), in tag order. The optional terms
 * of ASSET_WHERE ("(:kind IS NULL OR ...)") are planned before the values
 * are known, so SQLite and PostgreSQL's generic plan walk the tag index
 * and read rows until a page matches; these variants name only the terms
 * given (an unset one is "1 = 1"), so the index of migration 046 (kind,
 * stage, data center, tag) or 016's (data center, kind) serves them. The
 * rows and their order are those of ASSET_WHERE with the same values. */
#define EQ_K "a.kind = :kind"
#define EQ_S "a.stage = :stage"
#define EQ_D "a.datacenter_id = :dc"
#define EQ_NONE "1 = 1"
#define EQ_WHERE(k, s, d) "WHERE " k " AND " s " AND " d " "
/* The three statements of one set of equality terms, in the order
 * eq_stmt() counts on: the page by tag, by tag descending, the count. */
#define EQ_VARIANT(X, n, p, w)                                                                     \
    X(EQ_DOCS_##n, p ASSET_DOC_SELECT w "ORDER BY a.tag " PAGE)                                    \
    X(EQ_DOCS_DESC_##n, p ASSET_DOC_SELECT w "ORDER BY a.tag DESC " PAGE)                          \
    X(EQ_COUNT_##n, "SELECT COUNT(*) FROM assets a " w)
/* The pages of no filter and of all three terms are read from an index in
 * tag order (the tag's own, migration 046's) whatever the values: on
 * PostgreSQL they are planned just once (db_pg.c, PG_PLAN_ONCE). The
 * others filter what an index walks, and a value with few rows (a kind
 * with none) needs the plan made for it. */
#define EQ_ONCE "/* plan once */ "
#define EQ_VARIANTS(X)                                                                             \
    EQ_VARIANT(X, 0, EQ_ONCE, EQ_WHERE(EQ_NONE, EQ_NONE, EQ_NONE))                                 \
    EQ_VARIANT(X, 1, "", EQ_WHERE(EQ_K, EQ_NONE, EQ_NONE))                                         \
    EQ_VARIANT(X, 2, "", EQ_WHERE(EQ_NONE, EQ_S, EQ_NONE))                                         \
    EQ_VARIANT(X, 3, "", EQ_WHERE(EQ_K, EQ_S, EQ_NONE))                                            \
    EQ_VARIANT(X, 4, "", EQ_WHERE(EQ_NONE, EQ_NONE, EQ_D))                                         \
    EQ_VARIANT(X, 5, "", EQ_WHERE(EQ_K, EQ_NONE, EQ_D))                                            \
    EQ_VARIANT(X, 6, "", EQ_WHERE(EQ_NONE, EQ_S, EQ_D))                                            \
    EQ_VARIANT(X, 7, EQ_ONCE, EQ_WHERE(EQ_K, EQ_S, EQ_D))
/* One model, any other filter: ASSET_WHERE with its model term made an
 * equality, so that migration 058's index (model, tag) gives the model's
 * rows in tag order and the page stops after its last row instead of
 * walking the tag index through every other model. The other terms stay
 * optional as in ASSET_WHERE, so the rows and their order are the same. */
#define MODEL_WHERE                                                                                \
    "WHERE a.model = :model AND (:kind IS NULL OR a.kind = :kind) AND (:stage IS NULL OR "         \
    "a.stage = :stage) AND (:dc = 0 OR a.datacenter_id = :dc) AND (:wb IS NULL OR "                \
    "a.warranty_end < :wb) AND (:wa IS NULL OR a.warranty_end >= :wa) AND (:ends = 0 OR "          \
    "(a.warranty_end >= :ea AND a.warranty_end < :eb) OR (a.lease_end >= :ea AND a.lease_end < "   \
    ":eb)) AND (:parent IS NULL OR a.parent_id = (SELECT x.id FROM assets x WHERE x.tag = "        \
    ":parent)) AND (:q IS NULL OR a.tag LIKE :q ESCAPE '!' OR a.serial LIKE :q ESCAPE '!' OR "     \
    "a.model LIKE :q ESCAPE '!') AND " STORE_SCOPE_IN("a.datacenter_id") " "
/* Warranty before a date and no other filter: eight terms fewer to test on
 * every row the tag index walks past (the range cannot give tag order). */
#define WB_WHERE "WHERE a.warranty_end < :wb AND " STORE_SCOPE_IN("a.datacenter_id") " "
#define ASSET_KEY                                                                                  \
    "CASE :sort WHEN 'kind' THEN a.kind WHEN 'stage' THEN a.stage WHEN 'model' THEN a.model WHEN " \
    "'serial' THEN a.serial WHEN 'warranty_end' THEN a.warranty_end WHEN 'purchase_date' THEN "    \
    "a.purchase_date WHEN 'datacenter' THEN d.name WHEN 'vendor' THEN a.vendor END"
#define ASSET_KEY_NUM                                                                              \
    "CASE :sort WHEN 'created_at' THEN a.created_at WHEN 'updated_at' THEN a.updated_at WHEN "     \
    "'stage_since' THEN a.stage_since WHEN 'id' THEN a.id END"

#define STATEMENTS(X)                                                                              \
    X(GET_ID, ASSET_SELECT "WHERE a.id = :id")                                                     \
    X(ID_BY_TAG, "SELECT id FROM assets WHERE tag = :tag")                                         \
    X(ID_BY_SERIAL, "SELECT id FROM assets WHERE kind = :kind AND serial = :serial ORDER BY id "   \
                    "LIMIT 1")                                                                     \
    X(ID_BY_SKEY, "SELECT id FROM assets WHERE source = :source AND source_key = :key ORDER BY "   \
                  "id LIMIT 1")                                                                    \
    X(NEXT_ID, "SELECT COALESCE(MAX(id), 0) + 1 FROM assets")                                      \
    X(INSERT, "INSERT INTO assets (tag, kind, serial, epc, vendor, model, parent_id, "             \
              "datacenter_id, room, rack, rack_u, storage, purchase_date, purchase_cost_micros, "  \
              "currency, supplier, order_number, warranty_end, lease_end, depreciation_years, "    \
              "salvage_micros, gpu_uuid, host_id, source_key, custom, last_seen, stage, "          \
              "stage_since, source, created_at, updated_at) VALUES (" ASSET_VALUES                 \
              ", :stage, :now, :source, :now, :now) RETURNING id")                                 \
    X(UPDATE, "UPDATE assets SET tag = :tag, kind = :kind, serial = :serial, epc = :epc, vendor "  \
              "= :vendor, model = :model, parent_id = :parent_id, datacenter_id = "                \
              ":datacenter_id, room = :room, rack = :rack, rack_u = :rack_u, storage = :storage, " \
              "purchase_date = :purchase_date, purchase_cost_micros = :purchase_cost_micros, "     \
              "currency = :currency, supplier = :supplier, order_number = :order_number, "         \
              "warranty_end = :warranty_end, lease_end = :lease_end, depreciation_years = "        \
              ":depreciation_years, salvage_micros = :salvage_micros, gpu_uuid = :gpu_uuid, "      \
              "host_id = :host_id, source_key = :source_key, custom = :custom, last_seen = "       \
              ":last_seen, updated_at = :now WHERE id = :id")                                      \
    X(PROV_GET, "SELECT field, source FROM asset_fields WHERE asset_id = :id")                     \
    X(PROV_SET, "INSERT INTO asset_fields (asset_id, field, source, at) VALUES (:id, :field, "     \
                ":source, :at) ON CONFLICT (asset_id, field) DO UPDATE SET source = "              \
                "excluded.source, at = excluded.at")                                               \
    X(EPC_TAKEN, "SELECT COUNT(*) FROM assets WHERE epc = :epc AND id <> :id")                     \
    X(GPU_MATCH, "SELECT uuid, last_seen_at FROM gpus WHERE uuid = :uuid OR uuid = :serial OR "    \
                 "serial = :serial ORDER BY id LIMIT 1")                                           \
    X(HOST_MATCH, "SELECT id, last_seen_at FROM hosts WHERE serial = :serial ORDER BY id LIMIT 1") \
    X(CHILDREN, "SELECT tag FROM assets WHERE parent_id = :id ORDER BY tag")                       \
    X(ENERGY_GPU, "SELECT COUNT(*), COALESCE(SUM(u.energy_wh), 0) FROM usage_hourly u JOIN gpus "  \
                  "g ON g.id = u.gpu_id WHERE g.uuid = :uuid AND u.hour >= :from AND u.hour < "    \
                  ":to")                                                                           \
    X(ENERGY_SERVER, "SELECT COUNT(*), COALESCE(SUM(u.energy_wh), 0) FROM usage_hourly u JOIN "    \
                     "gpus g ON g.id = u.gpu_id WHERE g.uuid IN (SELECT c.gpu_uuid FROM assets c " \
                     "WHERE c.parent_id = :id AND c.gpu_uuid IS NOT NULL) AND u.hour >= :from "    \
                     "AND u.hour < :to")                                                           \
    X(CHILD_GPUS, "SELECT COUNT(*) FROM assets WHERE parent_id = :id AND gpu_uuid IS NOT NULL")    \
    X(LIST_COUNT, "SELECT COUNT(*) FROM assets a " ASSET_WHERE)                                    \
    X(STAGE_COUNTS, "SELECT a.stage, COUNT(*) FROM assets a " ASSET_WHERE "GROUP BY a.stage")      \
    X(CHAIN_SEQ, "SELECT COALESCE(MAX(seq), 0) FROM asset_chain")                                  \
    X(LIST_TAG, ASSET_SELECT ASSET_WHERE "ORDER BY a.tag " PAGE)                                   \
    X(LIST_TAG_DESC, ASSET_SELECT ASSET_WHERE "ORDER BY a.tag DESC " PAGE)                         \
    X(LIST_ASC, ASSET_SELECT ASSET_WHERE "ORDER BY " ASSET_KEY ", " ASSET_KEY_NUM ", a.tag " PAGE) \
    X(LIST_DESC, ASSET_SELECT ASSET_WHERE "ORDER BY " ASSET_KEY " DESC, " ASSET_KEY_NUM            \
                                          " DESC, a.tag DESC " PAGE)                               \
    X(DOCS_TAG, ASSET_DOC_SELECT ASSET_WHERE "ORDER BY a.tag " PAGE)                               \
    X(DOCS_TAG_DESC, ASSET_DOC_SELECT ASSET_WHERE "ORDER BY a.tag DESC " PAGE)                     \
    X(DOCS_ASC,                                                                                    \
      ASSET_DOC_JOINED ASSET_WHERE "ORDER BY " ASSET_KEY ", " ASSET_KEY_NUM ", a.tag " PAGE)       \
    X(DOCS_DESC, ASSET_DOC_JOINED ASSET_WHERE "ORDER BY " ASSET_KEY " DESC, " ASSET_KEY_NUM        \
                                              " DESC, a.tag DESC " PAGE)                           \
    EQ_VARIANTS(X)                                                                                 \
    X(MODEL_DOCS, ASSET_DOC_SELECT MODEL_WHERE "ORDER BY a.tag " PAGE)                             \
    X(MODEL_DOCS_DESC, ASSET_DOC_SELECT MODEL_WHERE "ORDER BY a.tag DESC " PAGE)                   \
    X(MODEL_COUNT, "SELECT COUNT(*) FROM assets a " MODEL_WHERE)                                   \
    X(WB_DOCS, ASSET_DOC_SELECT WB_WHERE "ORDER BY a.tag " PAGE)                                   \
    X(WB_DOCS_DESC, ASSET_DOC_SELECT WB_WHERE "ORDER BY a.tag DESC " PAGE)                         \
    X(WB_COUNT, "SELECT COUNT(*) FROM assets a " WB_WHERE)

enum stmt_id { STATEMENTS(STORE_AS_ENUM) ST__COUNT };
static const char *const stmt_sql[] = {STATEMENTS(STORE_AS_SQL)};
_Static_assert(ST_EQ_COUNT_7 == ST_EQ_DOCS_0 + 23, "eq_stmt() counts three statements per variant");

static struct db_stmt *prep(struct conn *c, enum stmt_id id) { return db_prep(c, stmt_sql[id]); }

/* ---- reading ---- */

/* Column i of the current row as JSON of its column type. */
static json_t *col_value(struct db_stmt *s, int i, enum asset_col_type t)
{
    json_error_t jerr;
    json_t *v;

    if (db_col_is_null(s, i))
        return t == AC_JSON ? json_object() : json_null();
    switch (t) {
    case AC_INT:
        return json_integer(db_col_int(s, i));
    case AC_DBL:
        return json_real(db_col_dbl(s, i));
    case AC_JSON:
        v = json_loads(db_col_text(s, i), 0, &jerr);
        if (!json_is_object(v)) {
            json_decref(v);
            v = json_object();
        }
        return v;
    case AC_TEXT:
    default:
        return json_string(db_col_text(s, i));
    }
}

/* The row's column values (asset_cols order) as an object. */
static json_t *row_cols(struct db_stmt *s)
{
    json_t *o = json_object();
    for (int i = 0; asset_cols[i].name; i++)
        json_object_set_new(o, asset_cols[i].name, col_value(s, i, asset_cols[i].type));
    return o;
}

static json_t *money_json(int64_t micros, const char *currency)
{
    char buf[32];
    gi_money_format(micros, 2, buf, sizeof buf);
    return json_pack("{s:s, s:s?}", "amount", buf, "currency", currency);
}

static int64_t today_days(void) { return gi_now() / 86400; }

/* Straight-line book value over depreciation_years from purchase_date
 * down to the salvage value; null when cost, date or years are missing. */
static json_t *book_value(const json_t *cols)
{
    const json_t *cost = json_object_get(cols, "purchase_cost_micros");
    int64_t value;

    if (!asset_book_value(json_is_integer(cost), json_integer_value(cost),
                          json_string_value(json_object_get(cols, "purchase_date")),
                          json_number_value(json_object_get(cols, "depreciation_years")),
                          json_integer_value(json_object_get(cols, "salvage_micros")), today_days(),
                          &value))
        return json_null();
    return money_json(value, json_string_value(json_object_get(cols, "currency")));
}

static json_t *warranty_json(const char *end)
{
    int64_t left = 0;
    const char *status = asset_warranty_status(end, today_days(), &left);

    if (!status)
        return json_pack("{s:n, s:n, s:s}", "end", "days_left", "status", "unknown");
    return json_pack("{s:s, s:I, s:s}", "end", end, "days_left", (json_int_t)left, "status",
                     status);
}

static json_t *time_json(struct db_stmt *s, int i)
{
    char buf[32];

    if (db_col_is_null(s, i))
        return json_null();
    gi_time_format(db_col_int(s, i), buf, sizeof buf);
    return json_string(buf);
}

/* The current row (ASSET_SELECT) as the API's document. */
static json_t *row_doc(struct db_stmt *s)
{
    /* The columns become the document in place: their values are read
     * before anything is added, and source_key moves after source. */
    json_t *doc = row_cols(s), *cols = doc;
    const json_t *cost = json_object_get(cols, "purchase_cost_micros");
    const json_t *salv = json_object_get(cols, "salvage_micros");
    const char *cur = json_string_value(json_object_get(cols, "currency"));
    json_t *skey = json_incref(json_object_get(cols, "source_key"));
    json_t *warranty = warranty_json(json_string_value(json_object_get(cols, "warranty_end")));
    json_t *book = book_value(cols);
    json_t *price = json_is_integer(cost) ? money_json(json_integer_value(cost), cur) : json_null();
    json_t *salvage =
        json_is_integer(salv) ? money_json(json_integer_value(salv), cur) : json_null();
    json_t *location =
        json_pack("{s:s?, s:O, s:O, s:O, s:O}", "datacenter", db_col_text(s, C_DC), "room",
                  json_object_get(cols, "room"), "rack", json_object_get(cols, "rack"), "u",
                  json_object_get(cols, "rack_u"), "storage", json_object_get(cols, "storage"));

    json_object_del(doc, "source_key");
    json_object_set_new(doc, "id", json_integer(db_col_int(s, C_ID)));
    json_object_set_new(doc, "stage", json_string(db_col_text(s, C_STAGE)));
    json_object_set_new(doc, "stage_since", time_json(s, C_STAGE_SINCE));
    json_object_set_new(doc, "source", json_string(db_col_text(s, C_SOURCE)));
    json_object_set_new(doc, "source_key", skey ? skey : json_null());
    json_object_set_new(doc, "created_at", time_json(s, C_CREATED));
    json_object_set_new(doc, "updated_at", time_json(s, C_UPDATED));
    json_object_set_new(doc, "last_seen", time_json(s, 25));
    json_object_set_new(doc, "purchase_cost", price);
    json_object_set_new(doc, "salvage", salvage);
    json_object_set_new(doc, "book_value", book);
    json_object_set_new(doc, "location", location);
    json_object_set_new(doc, "parent",
                        db_col_is_null(s, C_PARENT) ? json_null()
                                                    : json_string(db_col_text(s, C_PARENT)));
    json_object_set_new(doc, "warranty", warranty);
    return doc;
}

static int get_row(struct conn *c, int64_t id, json_t **doc, json_t **cols)
{
    struct db_stmt *s = prep(c, ST_GET_ID);
    int step;

    if (!s)
        return GI_INTERNAL;
    db_bind_int(s, ":id", id);
    step = db_step(c, s);
    if (step == DB_ROW) {
        if (doc)
            *doc = row_doc(s);
        if (cols)
            *cols = row_cols(s);
    }
    db_reset(s);
    return step == DB_ROW ? GI_OK : step == DB_DONE ? GI_NOT_FOUND : db_status(step);
}

int asset_doc_get(struct conn *c, int64_t asset_id, json_t **out)
{
    *out = NULL;
    return get_row(c, asset_id, out, NULL);
}

static int id_by(struct conn *c, enum stmt_id id, const char *n1, const char *v1, const char *n2,
                 const char *v2, int64_t *out)
{
    struct db_stmt *s = prep(c, id);

    if (!s)
        return GI_INTERNAL;
    db_bind_text(s, n1, v1);
    if (n2)
        db_bind_text(s, n2, v2);
    return db_fetch_int(c, s, out);
}

int asset_id_by_tag(struct conn *c, const char *tag, int64_t *id)
{
    return id_by(c, ST_ID_BY_TAG, ":tag", tag, NULL, NULL, id);
}

int asset_id_by_serial(struct conn *c, const char *kind, const char *serial, int64_t *id)
{
    return id_by(c, ST_ID_BY_SERIAL, ":kind", kind, ":serial", serial, id);
}

int asset_id_by_source_key(struct conn *c, const char *source, const char *key, int64_t *id)
{
    return id_by(c, ST_ID_BY_SKEY, ":source", source, ":key", key, id);
}

/* ---- writing ---- */

static void bind_cols(struct db_stmt *s, const json_t *cols)
{
    char name[40];

    for (int i = 0; asset_cols[i].name; i++) {
        const json_t *v = json_object_get(cols, asset_cols[i].name);
        snprintf(name, sizeof name, ":%s", asset_cols[i].name);
        if (!v || json_is_null(v))
            db_bind_text(s, name, NULL);
        else if (asset_cols[i].type == AC_INT)
            db_bind_int(s, name, json_integer_value(v));
        else if (asset_cols[i].type == AC_DBL)
            db_bind_dbl(s, name, json_number_value(v));
        else if (asset_cols[i].type == AC_JSON)
            db_bind_json(s, name, v);
        else
            db_bind_text(s, name, json_string_value(v));
    }
}

/* The asset's provenance: field -> source. */
static int prov_load(struct conn *c, int64_t id, json_t *prov)
{
    struct db_stmt *s = prep(c, ST_PROV_GET);
    int step;

    if (!s)
        return GI_INTERNAL;
    db_bind_int(s, ":id", id);
    while ((step = db_step(c, s)) == DB_ROW)
        json_object_set_new(prov, db_col_text(s, 0), json_string(db_col_text(s, 1)));
    db_reset(s);
    return step == DB_DONE ? GI_OK : db_status(step);
}

static int prov_save(struct conn *c, int64_t id, json_t *marks, int64_t at)
{
    const char *field;
    json_t *src;
    int rc;

    json_object_foreach(marks, field, src) {
        struct db_stmt *s = prep(c, ST_PROV_SET);
        if (!s)
            return GI_INTERNAL;
        db_bind_int(s, ":id", id);
        db_bind_text(s, ":field", field);
        db_bind_text(s, ":source", json_string_value(src));
        db_bind_int(s, ":at", at);
        if ((rc = db_exec_done(c, s)) != GI_OK)
            return rc;
    }
    return GI_OK;
}

static bool may_set(const struct asset_write *w, const json_t *prov, const char *field)
{
    const char *by = json_string_value(json_object_get(prov, field));
    return w->person || !by || strcmp(by, w->source) == 0;
}

/* Sets next[key] = v when it differs, recording [old, new] in changes and
 * the field's new provenance in marks. */
static void change(json_t *next, json_t *changes, json_t *marks, const char *key, json_t *v,
                   const char *source)
{
    json_t *old = json_object_get(next, key);

    if (!old)
        old = json_null();
    if (json_equal(old, v)) {
        json_decref(v);
        return;
    }
    json_object_set_new(changes, key, json_pack("[O, O]", old, v));
    json_object_set_new(marks, key, json_string(source));
    json_object_set_new(next, key, v);
}

/* Matches a GPU asset to the discovered GPU with its UUID or serial, a
 * server to the discovered host with its serial. */
static int discovery_match(struct conn *c, json_t *next, json_t *changes, json_t *marks)
{
    const char *kind = json_string_value(json_object_get(next, "kind"));
    const char *serial = json_string_value(json_object_get(next, "serial"));
    const char *uuid = json_string_value(json_object_get(next, "gpu_uuid"));
    struct db_stmt *s;
    int step;

    if (!kind || !serial || !asset_serial_usable(serial))
        serial = NULL;
    if (kind && strcmp(kind, "gpu") == 0 && !uuid && serial) {
        if (!(s = prep(c, ST_GPU_MATCH)))
            return GI_INTERNAL;
        db_bind_text(s, ":uuid", uuid);
        db_bind_text(s, ":serial", serial);
        step = db_step(c, s);
        if (step == DB_ROW) {
            change(next, changes, marks, "gpu_uuid", json_string(db_col_text(s, 0)), "discovery");
            change(next, changes, marks, "last_seen", json_integer(db_col_int(s, 1)), "discovery");
        }
        db_reset(s);
        if (step != DB_ROW && step != DB_DONE)
            return db_status(step);
    } else if (kind && strcmp(kind, "server") == 0 && serial &&
               json_is_null(json_object_get(next, "host_id"))) {
        if (!(s = prep(c, ST_HOST_MATCH)))
            return GI_INTERNAL;
        db_bind_text(s, ":serial", serial);
        step = db_step(c, s);
        if (step == DB_ROW) {
            change(next, changes, marks, "host_id", json_integer(db_col_int(s, 0)), "discovery");
            change(next, changes, marks, "last_seen", json_integer(db_col_int(s, 1)), "discovery");
        }
        db_reset(s);
        if (step != DB_ROW && step != DB_DONE)
            return db_status(step);
    }
    return GI_OK;
}

/* A new asset's tag: GI-<next id, six digits>, moved on past tags taken. */
static int next_tag(struct conn *c, char *tag, size_t len)
{
    struct db_stmt *s = prep(c, ST_NEXT_ID);
    int64_t n, taken;
    int rc;

    if (!s)
        return GI_INTERNAL;
    if ((rc = db_fetch_int(c, s, &n)) != GI_OK)
        return rc;
    for (int tries = 0; tries < 1000; tries++, n++) {
        snprintf(tag, len, "GI-%06lld", (long long)n);
        rc = asset_id_by_tag(c, tag, &taken);
        if (rc == GI_NOT_FOUND)
            return GI_OK;
        if (rc != GI_OK)
            return rc;
    }
    return GI_CONFLICT;
}

/* A blank asset: every column null, custom {}. */
static json_t *blank_cols(void)
{
    json_t *o = json_object();
    for (int i = 0; asset_cols[i].name; i++)
        json_object_set_new(o, asset_cols[i].name,
                            asset_cols[i].type == AC_JSON ? json_object() : json_null());
    return o;
}

int asset_apply(struct conn *c, const struct asset_write *w, int64_t id, const json_t *cols,
                const char *stage, int64_t *id_out, char *outcome)
{
    json_t *cur = NULL, *prov = json_object(), *next = NULL, *changes = json_object();
    json_t *marks = json_object(), *detail = NULL, *v;
    struct db_stmt *s;
    const char *key;
    char tag[32];
    bool creating = id == 0;
    int rc;

    *outcome = 'n';
    if (id) {
        if ((rc = get_row(c, id, NULL, &cur)) != GI_OK || (rc = prov_load(c, id, prov)) != GI_OK)
            goto cleanup;
    } else {
        cur = blank_cols();
    }
    next = json_deep_copy(cur);
    json_object_foreach((json_t *)cols, key, v) {
        if (strcmp(key, "custom") == 0) {
            const char *ck;
            json_t *cv, *custom = json_object_get(next, "custom");
            json_object_foreach(v, ck, cv) {
                char field[80];
                json_t *old = json_object_get(custom, ck);
                snprintf(field, sizeof field, "custom.%s", ck);
                if (!may_set(w, prov, field) || json_equal(old ? old : json_null(), cv))
                    continue;
                json_object_set_new(changes, field,
                                    json_pack("[O, O]", old ? old : json_null(), cv));
                json_object_set_new(marks, field, json_string(w->source));
                if (json_is_null(cv))
                    json_object_del(custom, ck);
                else
                    json_object_set(custom, ck, cv);
            }
            continue;
        }
        /* A source's record names its asset by tag; only a person renames. */
        if (id && strcmp(key, "tag") == 0 && !w->person)
            continue;
        if (may_set(w, prov, key))
            change(next, changes, marks, key, json_incref(v), w->source);
    }
    if (!json_is_string(json_object_get(next, "kind")))
        change(next, changes, marks, "kind", json_string("other"), w->source);
    if (!id && !json_is_string(json_object_get(next, "tag"))) {
        if ((rc = next_tag(c, tag, sizeof tag)) != GI_OK)
            goto cleanup;
        change(next, changes, marks, "tag", json_string(tag), w->source);
    }
    if ((rc = discovery_match(c, next, changes, marks)) != GI_OK)
        goto cleanup;
    if (id && json_object_size(changes) == 0) {
        *id_out = id;
        rc = GI_OK;
        goto cleanup;
    }
    rc = GI_INTERNAL;
    if (!(s = prep(c, id ? ST_UPDATE : ST_INSERT)))
        goto cleanup;
    bind_cols(s, next);
    db_bind_int(s, ":now", w->at);
    db_bind_int(s, ":id", id);
    db_bind_text(s, ":stage", stage ? stage : "active");
    db_bind_text(s, ":source", w->source);
    if (id) {
        if ((rc = db_exec_done(c, s)) != GI_OK)
            goto cleanup;
    } else if ((rc = db_fetch_int(c, s, &id)) != GI_OK) {
        goto cleanup;
    }
    *id_out = id;
    if ((rc = prov_save(c, id, marks, w->at)) != GI_OK || (rc = asset_doc_save(c, id)) != GI_OK)
        goto cleanup;
    if (!creating) {
        detail = json_incref(changes);
        *outcome = 'u';
    } else {
        /* A creation's detail: the values it was created with. */
        const char *f;
        json_t *pair;
        detail = json_object();
        json_object_foreach(changes, f, pair)
            json_object_set(detail, f, json_array_get(pair, 1));
        json_object_set_new(detail, "stage", json_string(stage ? stage : "active"));
        *outcome = 'c';
    }
    rc =
        asset_event_append(c, id, *outcome == 'c' ? "created" : "updated", w->actor, detail, w->at);
    if (rc == GI_OK && !creating && json_object_get(changes, "datacenter_id"))
        rc = asset_reservations_on_move(c, id, w->actor, w->at);
cleanup:
    json_decref(cur);
    json_decref(prov);
    json_decref(next);
    json_decref(changes);
    json_decref(marks);
    json_decref(detail);
    return rc;
}

/* Checks that an EPC is not another asset's (the write would fail on the
 * unique index). */
static int epc_free(struct conn *c, const json_t *cols, int64_t id, bool *free_out)
{
    const char *epc = json_string_value(json_object_get(cols, "epc"));
    struct db_stmt *s;
    int64_t n = 0;
    int rc;

    *free_out = true;
    if (!epc)
        return GI_OK;
    if (!(s = prep(c, ST_EPC_TAKEN)))
        return GI_INTERNAL;
    db_bind_text(s, ":epc", epc);
    db_bind_int(s, ":id", id);
    if ((rc = db_fetch_int(c, s, &n)) != GI_OK)
        return rc;
    *free_out = n == 0;
    return GI_OK;
}

int asset_epc_free(struct conn *c, const json_t *cols, int64_t id, bool *free_out)
{
    return epc_free(c, cols, id, free_out);
}

/* ---- the API's operations ---- */

static void err_from(struct store_asset_err *err, json_t *errors)
{
    json_t *e = json_array_get(errors, 0);

    if (!err || !e)
        return;
    err->index = json_integer_value(json_object_get(e, "index"));
    gi_strlcpy(err->field, json_string_value(json_object_get(e, "field")), sizeof err->field);
    gi_strlcpy(err->message, json_string_value(json_object_get(e, "error")), sizeof err->message);
}

static void err_set(struct store_asset_err *err, const char *field, const char *msg)
{
    if (!err)
        return;
    gi_strlcpy(err->field, field, sizeof err->field);
    gi_strlcpy(err->message, msg, sizeof err->message);
}

/* Reads rec strictly and writes it (create when id is 0) as a person. */
static int person_write(struct conn *c, const char *actor, const char *source, int64_t id,
                        const json_t *rec, int index, int64_t *id_out, char *outcome,
                        struct store_asset_err *err)
{
    struct asset_write w = {actor, source, true, true, gi_now()};
    json_t *errors = json_array(), *cols = NULL;
    const char *stage = NULL;
    bool epc_ok = true;
    int rc = asset_fields_read(c, rec, true, id, index, &cols, &stage, errors);

    if (rc == GI_INVALID)
        err_from(err, errors);
    if (rc == GI_OK && (rc = epc_free(c, cols, id, &epc_ok)) == GI_OK && !epc_ok) {
        err_set(err, "epc", "another asset carries this EPC");
        rc = GI_CONFLICT;
    }
    if (rc == GI_OK && !id && !json_object_get(cols, "kind")) {
        err_set(err, "kind", "is required");
        rc = GI_INVALID;
    }
    if (rc == GI_OK && json_is_string(json_object_get(cols, "tag"))) {
        int64_t other;
        int t = asset_id_by_tag(c, json_string_value(json_object_get(cols, "tag")), &other);
        if (t == GI_OK && other != id) {
            err_set(err, "tag", "another asset has this tag");
            rc = GI_CONFLICT;
        } else if (t != GI_OK && t != GI_NOT_FOUND) {
            rc = t;
        }
    }
    if (rc == GI_OK)
        rc = asset_apply(c, &w, id, cols, stage, id_out, outcome);
    json_decref(cols);
    json_decref(errors);
    return rc;
}

int store_asset_create(struct store *st, const char *actor, const json_t *in, json_t **out,
                       struct store_asset_err *err)
{
    struct conn *c = db_conn_get(st);
    int64_t id = 0;
    char outcome;
    int rc = db_tx_begin(c);

    *out = NULL;
    if (rc == GI_OK)
        rc = person_write(c, actor, "api", 0, in, 0, &id, &outcome, err);
    if (rc == GI_OK)
        rc = asset_doc_get(c, id, out);
    rc = db_tx_end_doc(c, rc, out);
    db_conn_put(st, c);
    return rc;
}

/* True when a patch names a location field (a move to push back). */
static bool moves(const json_t *patch)
{
    static const char *const keys[] = {"location", "datacenter", "room",   "rack",
                                       "rack_u",   "u",          "storage"};

    for (size_t i = 0; i < sizeof keys / sizeof *keys; i++)
        if (json_object_get(patch, keys[i]))
            return true;
    return false;
}

int store_asset_update(struct store *st, const char *actor, const char *tag, const json_t *patch,
                       json_t **out, struct store_asset_err *err)
{
    struct conn *c = db_conn_get(st);
    int64_t id = 0, ignored;
    char outcome;
    int rc = db_tx_begin(c);

    *out = NULL;
    if (rc == GI_OK)
        rc = asset_id_by_tag(c, tag, &id);
    if (rc == GI_OK)
        rc = person_write(c, actor, "api", id, patch, 0, &ignored, &outcome, err);
    if (rc == GI_OK && outcome == 'u' && moves(patch))
        rc = asset_sync_queue(c, id, "located", gi_now());
    if (rc == GI_OK)
        rc = asset_doc_get(c, id, out);
    rc = db_tx_end_doc(c, rc, out);
    db_conn_put(st, c);
    return rc;
}

int store_asset_id(struct store *st, const char *tag, int64_t *id)
{
    struct conn *c = db_conn_get(st);
    int rc = asset_id_by_tag(c, tag, id);
    db_conn_put(st, c);
    return rc;
}

/* energy_wh of a GPU asset with a UUID, or of a server with GPUs inside;
 * absent otherwise. */
static int add_energy(struct conn *c, json_t *doc, int64_t id, int64_t from, int64_t to)
{
    const char *kind = json_string_value(json_object_get(doc, "kind"));
    const char *uuid = json_string_value(json_object_get(doc, "gpu_uuid"));
    struct db_stmt *s;
    int64_t n = 0;
    int rc, step;

    if (kind && strcmp(kind, "server") == 0) {
        if (!(s = prep(c, ST_CHILD_GPUS)))
            return GI_INTERNAL;
        db_bind_int(s, ":id", id);
        if ((rc = db_fetch_int(c, s, &n)) != GI_OK || n == 0)
            return rc;
        s = prep(c, ST_ENERGY_SERVER);
    } else if (kind && strcmp(kind, "gpu") == 0 && uuid) {
        s = prep(c, ST_ENERGY_GPU);
    } else {
        return GI_OK;
    }
    if (!s)
        return GI_INTERNAL;
    db_bind_int(s, ":id", id);
    db_bind_text(s, ":uuid", uuid);
    db_bind_int(s, ":from", from);
    db_bind_int(s, ":to", to);
    step = db_step(c, s);
    if (step == DB_ROW)
        json_object_set_new(doc, "energy_wh", json_real(db_col_dbl(s, 1)));
    db_reset(s);
    return step == DB_ROW ? GI_OK : db_status(step);
}

int store_asset_get(struct store *st, const char *tag, int64_t from, int64_t to, json_t **out)
{
    struct conn *c = db_conn_get(st);
    json_t *kids = json_array();
    struct db_stmt *s;
    int64_t id = 0;
    int rc, step;

    *out = NULL;
    db_read_begin(c);
    rc = asset_id_by_tag(c, tag, &id);
    if (rc == GI_OK)
        rc = asset_doc_get(c, id, out);
    if (rc == GI_OK && (s = prep(c, ST_CHILDREN)) != NULL) {
        db_bind_int(s, ":id", id);
        while ((step = db_step(c, s)) == DB_ROW)
            json_array_append_new(kids, json_string(db_col_text(s, 0)));
        db_reset(s);
        rc = step == DB_DONE ? GI_OK : db_status(step);
    } else if (rc == GI_OK) {
        rc = GI_INTERNAL;
    }
    if (rc == GI_OK) {
        json_object_set(*out, "children", kids);
        rc = add_energy(c, *out, id, from, to);
    }
    db_read_end(c);
    if (rc != GI_OK) {
        json_decref(*out);
        *out = NULL;
    }
    json_decref(kids);
    db_conn_put(st, c);
    return rc;
}

static void bind_filter(struct db_stmt *s, const void *filter)
{
    const struct store_asset_filter *f = filter;

    db_bind_text(s, ":kind", f->kind);
    db_bind_text(s, ":stage", f->stage);
    db_bind_int(s, ":dc", f->datacenter_id);
    db_bind_scope(s, &f->scope);
    db_bind_text(s, ":model", f->model);
    db_bind_text(s, ":wb", f->warranty_before);
    db_bind_text(s, ":wa", f->warranty_after);
    db_bind_int(s, ":ends", f->ends_after || f->ends_before);
    db_bind_text(s, ":ea", f->ends_after ? f->ends_after : "");
    db_bind_text(s, ":eb", f->ends_before ? f->ends_before : "9999-12-31");
    db_bind_text(s, ":parent", f->parent);
    db_bind_like(s, ":q", f->q);
}

/* Totals and stage counts are kept answers (kept.h) at the audit chain's
 * head: every change to an asset appends an event in the writing
 * transaction, so the head's seq moves with every write that can change
 * a count. The one change without an event, a data center's deletion
 * clearing its assets' datacenter_id, is seen within KEPT_TTL_S. */
#define KEPT_TTL_S 60
static const char kept_total[] = "asset total";
static const char kept_stages[] = "asset stages";

static bool filter_key(const struct store_asset_filter *f, char *key, size_t len)
{
    char dc[24 + KEPT_SCOPE_TEXT_MAX];
    int n;
    const char *parts[11] = {f->kind,
                             f->stage,
                             f->model,
                             f->q,
                             f->warranty_before,
                             f->warranty_after,
                             f->ends_after,
                             f->ends_before,
                             f->parent,
                             dc,
                             NULL};

    n = snprintf(dc, sizeof dc, "%lld", (long long)f->datacenter_id);
    kept_scope_text(&f->scope, dc + n, sizeof dc - (size_t)n);
    return kept_key(key, len, 10, parts);
}

static bool by_tag(const struct store_page *pg)
{
    return !pg || !pg->sort || strcmp(pg->sort, "tag") == 0;
}

/* Whether one of EQ_VARIANTS serves f: no filter but kind, stage and data
 * center, and no scope of data centers unless one data center is named
 * (the variants bind no scope; a named one is inside the scope). */
static bool eq_only(const struct store_asset_filter *f)
{
    return !f->model && !f->q && !f->warranty_before && !f->warranty_after && !f->ends_after &&
           !f->ends_before && !f->parent && !(f->scope.n > 0 && !f->datacenter_id);
}

/* The EQ_VARIANTS index of f's terms (bit 0 kind, bit 1 stage, bit 2 data
 * center). */
static unsigned eq_terms(const struct store_asset_filter *f)
{
    return (f->kind ? 1u : 0u) | (f->stage ? 2u : 0u) | (f->datacenter_id ? 4u : 0u);
}

/* Whether f is warranty_before alone (a scope of data centers aside). */
static bool wb_only(const struct store_asset_filter *f)
{
    return f->warranty_before && !f->kind && !f->stage && !f->datacenter_id && !f->model && !f->q &&
           !f->warranty_after && !f->ends_after && !f->ends_before && !f->parent;
}

/* The statement `which` (0 page, 1 page descending, 2 count) of the
 * equality-only variant with terms t (0..7). */
static enum stmt_id eq_stmt(unsigned t, unsigned which)
{
    return (enum stmt_id)(ST_EQ_DOCS_0 + 3 * t + which);
}

/* The list statement of a page's order: the documents built here (ST_LIST_*)
 * or the stored ones (ST_DOCS_*, in the same order; an equality-only
 * variant when f allows). */
static enum stmt_id list_stmt(const struct store_asset_filter *f, const struct store_page *pg,
                              bool stored)
{
    bool desc = pg && pg->desc;
    enum stmt_id id =
        by_tag(pg) ? (desc ? ST_LIST_TAG_DESC : ST_LIST_TAG) : (desc ? ST_LIST_DESC : ST_LIST_ASC);

    if (stored && eq_only(f) && by_tag(pg))
        return eq_stmt(eq_terms(f), desc ? 1 : 0);
    if (stored && f->model && by_tag(pg))
        return desc ? ST_MODEL_DOCS_DESC : ST_MODEL_DOCS;
    if (stored && wb_only(f) && by_tag(pg))
        return desc ? ST_WB_DOCS_DESC : ST_WB_DOCS;
    return stored ? (enum stmt_id)(id - ST_LIST_TAG + ST_DOCS_TAG) : id;
}

/* The count of the statement list_stmt() picks for f (the same terms). */
static enum stmt_id count_stmt(const struct store_asset_filter *f)
{
    if (eq_only(f))
        return eq_stmt(eq_terms(f), 2);
    if (f->model)
        return ST_MODEL_COUNT;
    return wb_only(f) ? ST_WB_COUNT : ST_LIST_COUNT;
}

/* The filter's total, kept at rev (read before the page, see below) or
 * counted on c. */
static int list_total(struct store *st, struct conn *c, const struct store_asset_filter *f,
                      const struct kept_rev *rev, int64_t now, int64_t *total)
{
    char key[KEPT_KEY_MAX];
    bool keep = filter_key(f, key, sizeof key);
    json_t *kept = NULL;
    struct db_stmt *cs;
    int rc;

    if (keep && (kept = kept_get(st, kept_total, key, rev, now, KEPT_TTL_S)) != NULL) {
        *total = json_integer_value(kept);
        json_decref(kept);
        return GI_OK;
    }
    if ((cs = prep(c, count_stmt(f))) == NULL)
        return GI_INTERNAL;
    bind_filter(cs, f);
    rc = db_fetch_int(c, cs, total);
    if (rc == GI_OK && keep && (kept = json_integer(*total)) != NULL)
        kept_put(st, kept_total, key, rev, now, kept);
    json_decref(kept);
    return rc;
}

int store_asset_list(struct store *st, const struct store_asset_filter *f,
                     const struct store_page *pg, json_t **items, int64_t *total)
{
    struct conn *c = db_conn_get(st);
    struct db_stmt *s[2] = {prep(c, ST_CHAIN_SEQ), prep(c, list_stmt(f, pg, false))};
    struct kept_rev rev = {0, 0};
    json_t *arr = json_array();
    int64_t now = gi_now();
    int rc, step;

    *items = NULL;
    if (s[1]) {
        bind_filter(s[1], f);
        db_bind_page(s[1], pg);
    }
    /* The head's seq first, so that a total counted after it is never
     * older than the seq it is kept under. */
    rc = db_read_batch(c, s, 2);
    if (rc == GI_OK)
        rc = db_fetch_int(c, s[0], &rev.a);
    if (rc == GI_OK) {
        while ((step = db_step(c, s[1])) == DB_ROW)
            json_array_append_new(arr, row_doc(s[1]));
        db_reset(s[1]);
        rc = step == DB_DONE ? GI_OK : db_status(step);
    }
    db_read_end(c);
    if (rc == GI_OK)
        rc = list_total(st, c, f, &rev, now, total);
    if (rc == GI_OK)
        *items = json_incref(arr);
    json_decref(arr);
    db_conn_put(st, c);
    return rc;
}

/* store_asset_list()'s page, each member encoded, into t. */
static int list_encoded(struct store *st, const struct store_asset_filter *f,
                        const struct store_page *pg, struct asset_text *t, size_t *rows,
                        int64_t *total)
{
    json_t *items = NULL, *v;
    size_t i;
    int rc = store_asset_list(st, f, pg, &items, total);

    json_array_foreach(items, i, v) {
        char *d = json_dumps(v, JSON_COMPACT | JSON_ENCODE_ANY);
        if (d == NULL) {
            rc = GI_INTERNAL;
            break;
        }
        if (i)
            asset_text_add(t, ",", 1);
        asset_text_add(t, d, strlen(d));
        free(d);
        (*rows)++;
    }
    json_decref(items);
    return rc;
}

int store_asset_list_text(struct store *st, const struct store_asset_filter *f,
                          const struct store_page *pg, char **items, size_t *len, size_t *rows,
                          int64_t *total)
{
    struct conn *c = db_conn_get(st);
    struct db_stmt *s[3] = {prep(c, ST_CHAIN_SEQ), asset_dc_names_prep(c),
                            prep(c, list_stmt(f, pg, true))};
    struct asset_dc_names dcs = {0};
    struct kept_rev rev = {0, 0};
    struct asset_text t = {0};
    int64_t now = gi_now();
    bool stored = true;
    int rc, step = DB_DONE;

    *items = NULL;
    *len = *rows = 0;
    if (s[2]) {
        bind_filter(s[2], f);
        db_bind_page(s[2], pg);
    }
    /* The head's seq first (see store_asset_list), the data center names
     * and the page in the same snapshot (one round trip on PostgreSQL). */
    rc = db_read_batch(c, s, 3);
    if (rc == GI_OK)
        rc = db_fetch_int(c, s[0], &rev.a);
    if (rc == GI_OK)
        rc = asset_dc_names_read(c, s[1], &dcs);
    if (rc == GI_OK) {
        while (stored && (step = db_step(c, s[2])) == DB_ROW) {
            if (*rows)
                asset_text_add(&t, ",", 1);
            stored = asset_doc_append(&t, s[2], 0, now / 86400, &dcs);
            (*rows)++;
        }
        db_reset(s[2]);
        rc = !stored || step == DB_DONE ? GI_OK : db_status(step);
    }
    db_read_end(c);
    asset_dc_names_free(&dcs);
    if (rc == GI_OK && stored)
        rc = list_total(st, c, f, &rev, now, total);
    db_conn_put(st, c);
    if (rc == GI_OK && !stored) {
        /* A row without its stored document: the page is built. */
        asset_text_free(&t);
        *rows = 0;
        rc = list_encoded(st, f, pg, &t, rows, total);
    }
    if (rc == GI_OK && (t.failed || (!t.p && (t.p = calloc(1, 1)) == NULL)))
        rc = GI_INTERNAL;
    if (rc == GI_OK) {
        *items = t.p;
        *len = t.len;
        t.p = NULL;
    } else {
        *rows = 0;
    }
    asset_text_free(&t);
    return rc;
}

int store_asset_stage_counts(struct store *st, const struct store_asset_filter *f, json_t **counts)
{
    static const char *const stages[] = {"ordered",
                                         "received",
                                         "active",
                                         "spare",
                                         "diagnostic_repair",
                                         "refurbishment_candidate",
                                         "decommissioned",
                                         NULL};
    struct conn *c = db_conn_get(st);
    struct store_asset_filter any = *f;
    struct db_stmt *s = prep(c, ST_STAGE_COUNTS), *hs = prep(c, ST_CHAIN_SEQ);
    struct kept_rev rev = {0, 0};
    char key[KEPT_KEY_MAX];
    int64_t now = gi_now();
    json_t *out = NULL;
    bool keep;
    int rc = GI_INTERNAL, step;

    *counts = NULL;
    any.stage = NULL;
    keep = filter_key(&any, key, sizeof key);
    if (!s || !hs)
        goto cleanup;
    /* The head's seq first (see store_asset_list). */
    if ((rc = db_fetch_int(c, hs, &rev.a)) != GI_OK)
        goto cleanup;
    if (keep && (out = kept_get(st, kept_stages, key, &rev, now, KEPT_TTL_S)) != NULL)
        goto cleanup;
    rc = GI_INTERNAL;
    if ((out = json_object()) == NULL)
        goto cleanup;
    for (int i = 0; stages[i]; i++)
        json_object_set_new(out, stages[i], json_integer(0));
    bind_filter(s, &any);
    while ((step = db_step(c, s)) == DB_ROW)
        if (db_col_text(s, 0))
            json_object_set_new(out, db_col_text(s, 0), json_integer(db_col_int(s, 1)));
    db_reset(s);
    rc = step == DB_DONE ? GI_OK : db_status(step);
    if (rc == GI_OK && keep)
        kept_put(st, kept_stages, key, &rev, now, out);
cleanup:
    if (rc == GI_OK)
        *counts = json_incref(out);
    json_decref(out);
    db_conn_put(st, c);
    return rc;
}

int store_asset_set_stage(struct store *st, const char *actor, const char *tag, const char *to,
                          const char *reason, bool override, json_t **out, char *from,
                          size_t fromlen, char *err, size_t errlen)
{
    struct conn *c = db_conn_get(st);
    json_t *before = NULL;
    int64_t id = 0;
    int rc = db_tx_begin(c);

    *out = NULL;
    if (from && fromlen)
        from[0] = '\0';
    if (rc == GI_OK)
        rc = asset_id_by_tag(c, tag, &id);
    if (rc == GI_OK)
        rc = get_row(c, id, &before, NULL);
    if (rc == GI_OK && from)
        gi_strlcpy(from, json_string_value(json_object_get(before, "stage")), fromlen);
    if (rc == GI_OK)
        rc = asset_stage_change(c, id, to, reason, actor, override, gi_now(), err, errlen);
    if (rc == GI_OK)
        rc = asset_doc_get(c, id, out);
    rc = db_tx_end_doc(c, rc, out);
    json_decref(before);
    db_conn_put(st, c);
    return rc;
}
