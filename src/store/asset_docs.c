/* The stored document of an asset (assets.doc, migration 041): its API
 * representation rendered once per write, in the writing transaction, so
 * that a list page passes documents through instead of building and
 * encoding each one.
 *
 * The one definition of the document stays asset_doc_get() (assets.c):
 * asset_doc_save() renders from what it returns. The stored text is that
 * document less four members whose value depends on the time of the read
 * or on another row: book_value (today's depreciation), warranty (its
 * days_left and status), location.datacenter (the data center's name)
 * and parent (the parent's tag). Stored, they would go stale without a
 * write to the asset; the list adds them from the row's own columns, the
 * parent's tag and the data center names read beside the page
 * (asset_doc_append()), in the places the document has them,
 * so that a listed asset is, byte for byte, what json_dumps() of
 * asset_doc_get() gives:
 *
 *   doc:    {"tag":...,"salvage":...,"location":{"room":...,"storage":...}}
 *                                    ^ doc_cut
 *   listed: {"tag":...,"salvage":...,"book_value":B,"location":{"datacenter":D,
 *            "room":...,"storage":...},"parent":P,"warranty":W}
 *
 * A rendering is cut from the document's own text, which must end with
 * those four members as the list writes them; when it does not (a shape
 * this file does not know), doc stays NULL and the list builds that asset
 * as before. */
#include "store/assets_int.h"
#include "core/log.h"
#include "core/money.h"
#include "core/status.h"

#include <math.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

/* What the list adds begins here in the stored text. */
static const char loc_key[] = "\"location\":{";
#define LOC_KEY_LEN (sizeof loc_key - 1)
#define DUMP_FLAGS (JSON_COMPACT | JSON_ENCODE_ANY)
/* Assets rendered per transaction by store_asset_docs_fill(). */
#define FILL_BATCH 500

static const char sql_save[] =
    "UPDATE assets SET doc = :doc, doc_cut = :cut WHERE id = :id AND doc IS DISTINCT FROM :doc";
static const char sql_unrendered[] =
    "SELECT id FROM assets WHERE doc IS NULL AND id > :after ORDER BY id LIMIT :limit";
static const char sql_dc_names[] = "SELECT id, name FROM datacenters ORDER BY id";
static const char sql_dc_clear[] = "SELECT id FROM assets WHERE datacenter_id = :dc ORDER BY id";
static const char sql_dc_null[] =
    "UPDATE assets SET datacenter_id = NULL WHERE datacenter_id = :dc";
/* The spares of open reservations in a data center. */
static const char sql_dc_spares[] =
    "SELECT DISTINCT r.spare_id FROM asset_reservations r JOIN assets a ON a.id = r.spare_id "
    "WHERE r.released_at IS NULL AND a.datacenter_id = :dc ORDER BY r.spare_id";

/* ---- text ---- */

static bool text_room(struct asset_text *t, size_t n)
{
    size_t cap;
    char *p;

    if (t->failed)
        return false;
    if (t->len + n + 1 <= t->cap)
        return true;
    cap = t->cap ? t->cap : 4096;
    while (cap < t->len + n + 1)
        cap *= 2;
    if ((p = realloc(t->p, cap)) == NULL) {
        t->failed = true;
        return false;
    }
    t->p = p;
    t->cap = cap;
    return true;
}

void asset_text_add(struct asset_text *t, const char *s, size_t n)
{
    if (!text_room(t, n))
        return;
    memcpy(t->p + t->len, s, n);
    t->len += n;
    t->p[t->len] = '\0';
}

static void add_str(struct asset_text *t, const char *s) { asset_text_add(t, s, strlen(s)); }

/* s as a JSON string exactly as json_dumps() writes it (null for NULL).
 * Plain ASCII is quoted as it is; anything else goes through jansson. */
static void add_json_str(struct asset_text *t, const char *s)
{
    const unsigned char *u = (const unsigned char *)s;
    size_t n = 0;
    json_t *v;
    char *d;

    if (!s) {
        add_str(t, "null");
        return;
    }
    while (u[n] >= 0x20 && u[n] < 0x80 && u[n] != '"' && u[n] != '\\')
        n++;
    if (u[n] == '\0') {
        asset_text_add(t, "\"", 1);
        asset_text_add(t, s, n);
        asset_text_add(t, "\"", 1);
        return;
    }
    v = json_string(s);
    d = v ? json_dumps(v, DUMP_FLAGS) : NULL;
    add_str(t, d ? d : "null");
    free(d);
    json_decref(v);
}

void asset_text_free(struct asset_text *t)
{
    free(t->p);
    t->p = NULL;
    t->len = t->cap = 0;
    t->failed = false;
}

/* ---- the read-time members ---- */

bool asset_book_value(bool has_cost, int64_t cost, const char *purchase_date, double years,
                      int64_t salvage, int64_t today, int64_t *value)
{
    int64_t start;
    double share;

    if (!has_cost || !asset_date_parse(purchase_date, &start) || !(years > 0))
        return false;
    if (salvage > cost)
        salvage = cost;
    share = (double)(today - start) / (years * 365.25);
    share = share < 0 ? 0 : share > 1 ? 1 : share;
    *value = cost - (int64_t)llround((double)(cost - salvage) * share);
    return true;
}

const char *asset_warranty_status(const char *end, int64_t today, int64_t *days_left)
{
    int64_t d;

    if (!asset_date_parse(end, &d))
        return NULL;
    *days_left = d - today;
    return *days_left < 0 ? "expired" : *days_left <= 30 ? "expiring" : "in_warranty";
}

/* ---- the data center names ---- */

struct db_stmt *asset_dc_names_prep(struct conn *c) { return db_prep(c, sql_dc_names); }

int asset_dc_names_read(struct conn *c, struct db_stmt *s, struct asset_dc_names *out)
{
    size_t cap = 0;
    int step, rc = GI_OK;

    memset(out, 0, sizeof *out);
    while ((step = db_step(c, s)) == DB_ROW) {
        if (out->n == cap) {
            size_t ncap = cap ? cap * 2 : 16;
            int64_t *ids = realloc(out->ids, ncap * sizeof *ids);
            char **names = ids ? realloc(out->names, ncap * sizeof *names) : NULL;
            if (ids)
                out->ids = ids;
            if (names)
                out->names = names;
            if (!ids || !names) {
                rc = GI_INTERNAL;
                break;
            }
            cap = ncap;
        }
        if ((out->names[out->n] = strdup(db_col_text(s, 1) ? db_col_text(s, 1) : "")) == NULL) {
            rc = GI_INTERNAL;
            break;
        }
        out->ids[out->n++] = db_col_int(s, 0);
    }
    db_reset(s);
    if (rc == GI_OK && step != DB_DONE)
        rc = db_status(step);
    if (rc != GI_OK)
        asset_dc_names_free(out);
    return rc;
}

void asset_dc_names_free(struct asset_dc_names *d)
{
    for (size_t i = 0; d && i < d->n; i++)
        free(d->names[i]);
    if (d) {
        free(d->ids);
        free(d->names);
        memset(d, 0, sizeof *d);
    }
}

/* The name of data center id in d (ids ascending); NULL when none. */
static const char *dc_name(const struct asset_dc_names *d, int64_t id)
{
    size_t lo = 0, hi = d ? d->n : 0;

    while (lo < hi) {
        size_t mid = lo + (hi - lo) / 2;
        if (d->ids[mid] == id)
            return d->names[mid];
        if (d->ids[mid] < id)
            lo = mid + 1;
        else
            hi = mid;
    }
    return NULL;
}

/* True when doc_cut fits the stored text's shape (see the top). */
static bool cut_fits(const char *doc, size_t len, int64_t cut)
{
    return cut > 1 && (size_t)cut + LOC_KEY_LEN + 3 <= len &&
           memcmp(doc + cut, loc_key, LOC_KEY_LEN) == 0 && doc[len - 2] == '}' &&
           doc[len - 1] == '}';
}

/* The row's book value (see asset_book_value()) as the document has it. */
static void add_book_value(struct asset_text *t, struct db_stmt *s, int col, int64_t today)
{
    const char *currency = db_col_text(s, col + 6);
    int64_t value = 0;
    char amount[32];

    if (!asset_book_value(!db_col_is_null(s, col + 2), db_col_int(s, col + 2),
                          db_col_text(s, col + 3), db_col_dbl(s, col + 4), db_col_int(s, col + 5),
                          today, &value)) {
        add_str(t, "null");
        return;
    }
    gi_money_format(value, 2, amount, sizeof amount);
    add_str(t, "{\"amount\":");
    add_json_str(t, amount);
    add_str(t, ",\"currency\":");
    add_json_str(t, currency);
    add_str(t, "}");
}

/* The row's warranty (see asset_warranty_status()) as the document has it. */
static void add_warranty(struct asset_text *t, const char *end, int64_t today)
{
    int64_t left = 0;
    const char *status = asset_warranty_status(end, today, &left);
    char days[24];

    if (!status) {
        add_str(t, "{\"end\":null,\"days_left\":null,\"status\":\"unknown\"}");
        return;
    }
    snprintf(days, sizeof days, "%lld", (long long)left);
    add_str(t, "{\"end\":");
    add_json_str(t, end);
    add_str(t, ",\"days_left\":");
    add_str(t, days);
    add_str(t, ",\"status\":\"");
    add_str(t, status);
    add_str(t, "\"}");
}

bool asset_doc_append(struct asset_text *t, struct db_stmt *s, int col, int64_t today,
                      const struct asset_dc_names *dcs)
{
    const char *doc = db_col_text(s, col);
    size_t len = doc ? (size_t)db_col_bytes(s, col) : 0;
    int64_t cut = db_col_int(s, col + 1);

    if (!doc || db_col_is_null(s, col + 1) || !cut_fits(doc, len, cut))
        return false;
    /* The stored text with the four read-time members put in, written
     * straight into t (an allocation failure marks t failed). */
    asset_text_add(t, doc, (size_t)cut);
    add_str(t, "\"book_value\":");
    add_book_value(t, s, col, today);
    add_str(t, ",\"location\":{\"datacenter\":");
    add_json_str(t, db_col_is_null(s, col + 8) ? NULL : dc_name(dcs, db_col_int(s, col + 8)));
    asset_text_add(t, ",", 1);
    asset_text_add(t, doc + cut + LOC_KEY_LEN, len - (size_t)cut - LOC_KEY_LEN - 2);
    add_str(t, "},\"parent\":");
    add_json_str(t, db_col_text(s, col + 9));
    add_str(t, ",\"warranty\":");
    add_warranty(t, db_col_text(s, col + 7), today);
    asset_text_add(t, "}", 1);
    return true;
}

/* ---- rendering ---- */

/* The stored text of a document (see the top) into *out (caller frees)
 * and its cut. The document's own text must end with its four read-time
 * members as asset_doc_append() writes them (the location object whole, its
 * datacenter first); what comes before is the head. False when it does
 * not: a shape this file does not know is not stored. */
static bool render(const json_t *doc, char **out, size_t *cut_out)
{
    static const char dc_key[] = "{\"datacenter\":";
    const json_t *where = json_object_get(doc, "location");
    char *full = NULL, *loc = NULL, *parts[4] = {NULL};
    struct asset_text tail = {0}, t = {0};
    size_t fl, ll, dl, head;
    bool ok = false;

    *out = NULL;
    if (!json_is_object(where) || !json_object_get(where, "datacenter") ||
        json_object_size(where) < 2)
        return false;
    if ((full = json_dumps(doc, DUMP_FLAGS)) == NULL ||
        (loc = json_dumps(where, DUMP_FLAGS)) == NULL)
        goto cleanup;
    parts[0] = json_dumps(json_object_get(doc, "book_value"), DUMP_FLAGS);
    parts[1] = json_dumps(json_object_get(where, "datacenter"), DUMP_FLAGS);
    parts[2] = json_dumps(json_object_get(doc, "parent"), DUMP_FLAGS);
    parts[3] = json_dumps(json_object_get(doc, "warranty"), DUMP_FLAGS);
    if (!parts[0] || !parts[1] || !parts[2] || !parts[3])
        goto cleanup;
    /* loc is {"datacenter":D,REST}: REST is what the stored text keeps. */
    ll = strlen(loc);
    dl = sizeof dc_key - 1 + strlen(parts[1]) + 1;
    if (ll <= dl + 1 || memcmp(loc, dc_key, sizeof dc_key - 1) != 0 ||
        memcmp(loc + sizeof dc_key - 1, parts[1], strlen(parts[1])) != 0 || loc[dl - 1] != ',')
        goto cleanup;
    add_str(&tail, "\"book_value\":");
    add_str(&tail, parts[0]);
    add_str(&tail, ",\"location\":");
    add_str(&tail, loc);
    add_str(&tail, ",\"parent\":");
    add_str(&tail, parts[2]);
    add_str(&tail, ",\"warranty\":");
    add_str(&tail, parts[3]);
    asset_text_add(&tail, "}", 1);
    fl = strlen(full);
    if (tail.failed || fl < tail.len + 2 || memcmp(full + fl - tail.len, tail.p, tail.len) != 0 ||
        full[fl - tail.len - 1] != ',')
        goto cleanup;
    head = fl - tail.len;
    asset_text_add(&t, full, head);
    asset_text_add(&t, loc_key, LOC_KEY_LEN);
    asset_text_add(&t, loc + dl, ll - dl);
    asset_text_add(&t, "}", 1);
    if (t.failed || !cut_fits(t.p, t.len, (int64_t)head))
        goto cleanup;
    *out = t.p;
    t.p = NULL;
    *cut_out = head;
    ok = true;
cleanup:
    for (int i = 0; i < 4; i++)
        free(parts[i]);
    free(full);
    free(loc);
    asset_text_free(&tail);
    asset_text_free(&t);
    return ok;
}

int asset_doc_save(struct conn *c, int64_t id)
{
    struct db_stmt *s;
    json_t *doc = NULL;
    char *text = NULL;
    size_t cut = 0;
    int rc;

    if ((rc = asset_doc_get(c, id, &doc)) != GI_OK)
        return rc;
    if (!render(doc, &text, &cut))
        gi_warn("asset %lld: its document is not stored; the list builds it", (long long)id);
    rc = GI_INTERNAL;
    if ((s = db_prep(c, sql_save)) != NULL) {
        db_bind_text(s, ":doc", text);
        if (text)
            db_bind_int(s, ":cut", (int64_t)cut);
        else
            db_bind_text(s, ":cut", NULL);
        db_bind_int(s, ":id", id);
        rc = db_exec_done(c, s);
    }
    free(text);
    json_decref(doc);
    return rc;
}

/* The ids the statement gives (one integer column) into a new array. */
static int ids_of(struct conn *c, struct db_stmt *s, json_t **ids)
{
    int step;

    *ids = json_array();
    while ((step = db_step(c, s)) == DB_ROW)
        json_array_append_new(*ids, json_integer(db_col_int(s, 0)));
    db_reset(s);
    return step == DB_DONE ? GI_OK : db_status(step);
}

int asset_docs_save_all(struct conn *c, const json_t *ids)
{
    const json_t *v;
    size_t i;
    int rc = GI_OK;

    json_array_foreach(ids, i, v) {
        if ((rc = asset_doc_save(c, json_integer_value(v))) != GI_OK)
            break;
    }
    return rc;
}

/* The ids statement sql returns for data center dc_id into *ids. */
static int dc_ids(struct conn *c, const char *sql, int64_t dc_id, json_t **ids)
{
    struct db_stmt *s = db_prep(c, sql);

    *ids = NULL;
    if (!s)
        return GI_INTERNAL;
    db_bind_int(s, ":dc", dc_id);
    return ids_of(c, s, ids);
}

int asset_docs_dc_clear(struct conn *c, int64_t dc_id, const char *actor, int64_t at)
{
    struct db_stmt *s;
    json_t *ids = NULL, *spares = NULL, *v;
    size_t i;
    int rc;

    if ((rc = dc_ids(c, sql_dc_clear, dc_id, &ids)) != GI_OK ||
        (rc = dc_ids(c, sql_dc_spares, dc_id, &spares)) != GI_OK)
        goto cleanup;
    rc = GI_INTERNAL;
    if (!(s = db_prep(c, sql_dc_null)))
        goto cleanup;
    db_bind_int(s, ":dc", dc_id);
    if ((rc = db_exec_done(c, s)) != GI_OK)
        goto cleanup;
    rc = asset_docs_save_all(c, ids);
    /* only a reserved spare's move ends anything */
    json_array_foreach(spares, i, v) {
        if (rc != GI_OK)
            break;
        rc = asset_reservations_on_move(c, json_integer_value(v), actor, at);
    }
cleanup:
    json_decref(ids);
    json_decref(spares);
    return rc;
}

int store_asset_docs_fill(struct store *st, int64_t *filled)
{
    struct conn *c = db_conn_get(st);
    int64_t after = 0;
    json_t *ids = NULL;
    size_t n = 0;
    int rc;

    *filled = 0;
    do {
        /* The ids are read outside the writing transaction, so that with
         * none missing nothing is locked; one rendered meanwhile by another
         * replica is rendered to the same text, which is not written. */
        struct db_stmt *s = db_prep(c, sql_unrendered);
        json_decref(ids);
        ids = NULL;
        if (!s) {
            rc = GI_INTERNAL;
            break;
        }
        db_bind_int(s, ":after", after);
        db_bind_int(s, ":limit", FILL_BATCH);
        if ((rc = ids_of(c, s, &ids)) != GI_OK || (n = json_array_size(ids)) == 0)
            break;
        rc = db_tx_begin(c);
        if (rc == GI_OK)
            rc = asset_docs_save_all(c, ids);
        if ((rc = db_tx_end(c, rc)) == GI_OK) {
            after = json_integer_value(json_array_get(ids, n - 1));
            *filled += (int64_t)n;
        }
    } while (rc == GI_OK && n == FILL_BATCH);
    json_decref(ids);
    db_conn_put(st, c);
    return rc;
}
