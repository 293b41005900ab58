/* The price catalog: hourly rates and purchase prices per GPU model, each
 * optionally narrowed to an environment, cloud and pool, with effective
 * dates. See store.h and store_int.h.
 *
 * An entry is in force from its effective_from until the next entry of
 * the same kind, model (ignoring case), env, cloud and pool. Of the
 * entries in force at a time that fit a GPU, the most specific wins:
 *   1. the most narrowing: pool counts 4, cloud 2, env 1 (an entry that
 *      names a field fits only GPUs with that value; one that leaves it
 *      open fits any);
 *   2. an entry someone set beats a shipped estimate;
 *   3. the closest model: equal ignoring case, then the entry with more
 *      words (an entry's model fits a GPU model that has each of its
 *      words, ignoring case: "A100 80GB" fits "NVIDIA A100-SXM4-80GB");
 *   4. the latest effective_from, then the newest entry. */
#include "store/store_int.h"
#include "core/money.h"
#include "core/status.h"
#include "core/util.h"

#include <ctype.h>
#include <stdlib.h>
#include <string.h>
#include <strings.h>

#define PRICE_COLS                                                                                 \
    "p.id, p.kind, p.model, p.env, p.cloud, p.pool, p.micros, p.currency, p.effective_from, "      \
    "p.estimate, p.note, p.created_at, p.updated_at, (SELECT MIN(q.effective_from) FROM prices "   \
    "q WHERE q.kind = p.kind AND LOWER(q.model) = LOWER(p.model) AND q.env = p.env AND q.cloud = " \
    "p.cloud AND q.pool = p.pool AND q.effective_from > p.effective_from) "
/* The catalog is small (hundreds of entries): lists are read whole and
 * filtered by model in C, where the word matching lives. */
#define PRICE_MAX 10000

#define STATEMENTS(X)                                                                              \
    X(PRICE_ADD, "INSERT INTO prices (kind, model, env, cloud, pool, micros, currency, "           \
                 "effective_from, estimate, note, created_at, updated_at) VALUES (:kind, :model, " \
                 ":env, :cloud, :pool, :micros, :currency, :from, :estimate, :note, :now, :now) "  \
                 "RETURNING id")                                                                   \
    X(PRICE_GET, "SELECT " PRICE_COLS "FROM prices p WHERE p.id = :id")                            \
    X(PRICE_LIST, "SELECT " PRICE_COLS "FROM prices p WHERE (:kind IS NULL OR p.kind = :kind) "    \
                  "ORDER BY p.kind, LOWER(p.model), p.env, p.cloud, p.pool, p.effective_from, "    \
                  "p.id LIMIT 10000")                                                              \
    X(PRICE_DUP, "SELECT id FROM prices WHERE kind = :kind AND LOWER(model) = LOWER(:model) AND "  \
                 "env = :env AND cloud = :cloud AND pool = :pool AND effective_from = :from AND "  \
                 "id <> :id")                                                                      \
    X(PRICE_UPDATE, "UPDATE prices SET kind = :kind, model = :model, env = :env, cloud = :cloud, " \
                    "pool = :pool, micros = :micros, currency = :currency, effective_from = "      \
                    ":from, estimate = :estimate, note = :note, updated_at = :now WHERE id = :id") \
    X(PRICE_DELETE, "DELETE FROM prices WHERE id = :id")                                           \
    X(SEED_MARK, "SELECT COUNT(*) FROM cost_settings WHERE name = 'catalog_seeded'")               \
    X(SEED_DONE, "INSERT INTO cost_settings (name, value, updated_at) VALUES ('catalog_seeded', "  \
                 "'1', :now)")                                                                     \
    X(PRICE_KIND, "SELECT id, model, env, cloud, pool, micros, currency, effective_from, "         \
                  "estimate FROM prices WHERE kind = :kind ORDER BY id LIMIT 10000")

enum stmt_id { STATEMENTS(STORE_AS_ENUM) ST__COUNT };
static const char *const stmt_sql[] = {STATEMENTS(STORE_AS_SQL)};

static struct db_stmt *prep(struct conn *c, enum stmt_id id) { return db_prep(c, stmt_sql[id]); }

/* ---- the catalog in memory ---- */

struct price_entry {
    int64_t id, micros, from, until; /* until: INT64_MAX while in force */
    char model[128], env[128], cloud[128], pool[128], currency[4];
    bool estimate;
    int words;
};

struct price_catalog {
    struct price_entry *e;
    size_t n;
};

static const char *text_or_empty(struct db_stmt *s, int i)
{
    const char *t = db_col_text(s, i);
    return t ? t : "";
}

static int count_words(const char *s)
{
    int n = 0;
    bool in = false;

    for (; *s; s++) {
        bool w = isalnum((unsigned char)*s) != 0;
        if (w && !in)
            n++;
        in = w;
    }
    return n;
}

static bool same_key(const struct price_entry *a, const struct price_entry *b)
{
    return strcasecmp(a->model, b->model) == 0 && strcmp(a->env, b->env) == 0 &&
           strcmp(a->cloud, b->cloud) == 0 && strcmp(a->pool, b->pool) == 0;
}

int price_catalog_load(struct conn *c, const char *kind, struct price_catalog **out)
{
    struct db_stmt *s = prep(c, ST_PRICE_KIND);
    struct price_catalog *cat = calloc(1, sizeof *cat);
    size_t cap = 0;
    int step;

    *out = NULL;
    if (!s || !cat) {
        free(cat);
        return GI_INTERNAL;
    }
    db_bind_text(s, ":kind", kind);
    while ((step = db_step(c, s)) == DB_ROW) {
        struct price_entry *e;
        if (cat->n == cap) {
            size_t nc = cap ? cap * 2 : 32;
            struct price_entry *ne = realloc(cat->e, nc * sizeof *ne);
            if (!ne) {
                step = GI_INTERNAL;
                break;
            }
            cat->e = ne;
            cap = nc;
        }
        e = &cat->e[cat->n++];
        memset(e, 0, sizeof *e);
        e->id = db_col_int(s, 0);
        gi_strlcpy(e->model, text_or_empty(s, 1), sizeof e->model);
        gi_strlcpy(e->env, text_or_empty(s, 2), sizeof e->env);
        gi_strlcpy(e->cloud, text_or_empty(s, 3), sizeof e->cloud);
        gi_strlcpy(e->pool, text_or_empty(s, 4), sizeof e->pool);
        e->micros = db_col_int(s, 5);
        gi_strlcpy(e->currency, text_or_empty(s, 6), sizeof e->currency);
        e->from = db_col_int(s, 7);
        e->estimate = db_col_int(s, 8) != 0;
        e->words = count_words(e->model);
        e->until = INT64_MAX;
    }
    db_reset(s);
    if (step != DB_DONE) {
        price_catalog_free(cat);
        return step == DB_ROW ? GI_INTERNAL : db_status(step);
    }
    /* Each entry is in force until the next one of its key. */
    for (size_t i = 0; i < cat->n; i++)
        for (size_t j = 0; j < cat->n; j++)
            if (j != i && cat->e[j].from > cat->e[i].from && cat->e[j].from < cat->e[i].until &&
                same_key(&cat->e[i], &cat->e[j]))
                cat->e[i].until = cat->e[j].from;
    *out = cat;
    return GI_OK;
}

void price_catalog_free(struct price_catalog *cat)
{
    if (!cat)
        return;
    free(cat->e);
    free(cat);
}

/* An entry's narrowing field fits the GPU's value: open, or equal. */
static bool field_fits(const char *entry, const char *gpu)
{
    return entry[0] == '\0' || (gpu && strcasecmp(entry, gpu) == 0);
}

/* How closely an entry's model names a GPU model: 0 not at all, 1000
 * equal, else the entry's word count (all of them found in the GPU's). */
static int model_fit(const struct price_entry *e, const char *model)
{
    if (!model || !*model)
        return 0;
    if (strcasecmp(e->model, model) == 0)
        return 1000;
    if (e->words > 0 && store_model_matches(e->model, model))
        return e->words;
    return 0;
}

/* True when a is more specific than b for a GPU whose model fits them
 * by fa and fb (see the file's comment). */
static bool better(const struct price_entry *a, int fa, const struct price_entry *b, int fb)
{
    int na = (a->pool[0] ? 4 : 0) + (a->cloud[0] ? 2 : 0) + (a->env[0] ? 1 : 0);
    int nb = (b->pool[0] ? 4 : 0) + (b->cloud[0] ? 2 : 0) + (b->env[0] ? 1 : 0);

    if (na != nb)
        return na > nb;
    if (a->estimate != b->estimate)
        return !a->estimate;
    if (fa != fb)
        return fa > fb;
    if (a->from != b->from)
        return a->from > b->from;
    return a->id > b->id;
}

bool price_catalog_pick(const struct price_catalog *cat, const char *model, const char *env,
                        const char *cloud, const char *pool, int64_t at, int64_t *micros,
                        char currency[4], int64_t *price_id)
{
    const struct price_entry *best = NULL;
    int best_fit = 0;

    for (size_t i = 0; cat && i < cat->n; i++) {
        const struct price_entry *e = &cat->e[i];
        int fit;
        if (e->from > at || at >= e->until || !field_fits(e->env, env) ||
            !field_fits(e->cloud, cloud) || !field_fits(e->pool, pool))
            continue;
        if ((fit = model_fit(e, model)) == 0)
            continue;
        if (!best || better(e, fit, best, best_fit)) {
            best = e;
            best_fit = fit;
        }
    }
    if (!best) {
        *micros = 0;
        currency[0] = '\0';
        *price_id = 0;
        return false;
    }
    *micros = best->micros;
    memcpy(currency, best->currency, 4);
    *price_id = best->id;
    return true;
}

int price_rate(struct conn *c, const char *model, const char *env, const char *cloud,
               const char *pool, int64_t at, int64_t *micros_per_hour, char currency[4],
               int64_t *price_id)
{
    struct price_catalog *cat = NULL;
    int rc = price_catalog_load(c, "hourly", &cat);

    *micros_per_hour = 0;
    currency[0] = '\0';
    *price_id = 0;
    if (rc != GI_OK)
        return rc;
    rc = price_catalog_pick(cat, model, env, cloud, pool, at, micros_per_hour, currency, price_id)
             ? GI_OK
             : GI_NOT_FOUND;
    price_catalog_free(cat);
    return rc;
}

/* ---- documents ---- */

static json_t *opt_text(const char *t) { return t && *t ? json_string(t) : json_null(); }

static json_t *time_text(int64_t t)
{
    char buf[32];
    gi_time_format(t, buf, sizeof buf);
    return json_string(buf);
}

/* The current row of a PRICE_COLS statement as its API document. */
static json_t *price_doc(struct db_stmt *s)
{
    char money[32];
    const char *kind = text_or_empty(s, 1);
    json_t *o = json_object();

    gi_money_format(db_col_int(s, 6), 2, money, sizeof money);
    json_object_set_new(o, "id", json_integer(db_col_int(s, 0)));
    json_object_set_new(o, "kind", json_string(kind));
    json_object_set_new(o, "model", json_string(text_or_empty(s, 2)));
    json_object_set_new(o, "env", opt_text(db_col_text(s, 3)));
    json_object_set_new(o, "cloud", opt_text(db_col_text(s, 4)));
    json_object_set_new(o, "pool", opt_text(db_col_text(s, 5)));
    json_object_set_new(o, strcmp(kind, "purchase") == 0 ? "amount" : "hourly", json_string(money));
    json_object_set_new(o, "currency", json_string(text_or_empty(s, 7)));
    json_object_set_new(o, "effective_from", time_text(db_col_int(s, 8)));
    json_object_set_new(o, "effective_until",
                        db_col_is_null(s, 13) ? json_null() : time_text(db_col_int(s, 13)));
    json_object_set_new(o, "estimate", json_boolean(db_col_int(s, 9) != 0));
    json_object_set_new(o, "note", opt_text(db_col_text(s, 10)));
    json_object_set_new(o, "created_at", time_text(db_col_int(s, 11)));
    json_object_set_new(o, "updated_at", time_text(db_col_int(s, 12)));
    return o;
}

static int price_get(struct conn *c, int64_t id, json_t **out)
{
    struct db_stmt *s = prep(c, ST_PRICE_GET);
    int step;

    *out = NULL;
    if (!s)
        return GI_INTERNAL;
    db_bind_int(s, ":id", id);
    step = db_step(c, s);
    if (step == DB_ROW)
        *out = price_doc(s);
    db_reset(s);
    if (step == DB_ROW)
        return GI_OK;
    return step == DB_DONE ? GI_NOT_FOUND : db_status(step);
}

static void bind_price(struct db_stmt *s, const struct store_price *in)
{
    db_bind_text(s, ":kind", in->kind ? in->kind : "hourly");
    db_bind_text(s, ":model", in->model);
    db_bind_text(s, ":env", in->env ? in->env : "");
    db_bind_text(s, ":cloud", in->cloud ? in->cloud : "");
    db_bind_text(s, ":pool", in->pool ? in->pool : "");
    db_bind_int(s, ":micros", in->micros);
    db_bind_text(s, ":currency", in->currency);
    db_bind_int(s, ":from", in->effective_from);
    db_bind_int(s, ":estimate", in->estimate ? 1 : 0);
    db_bind_opt_text(s, ":note", in->note);
    db_bind_int(s, ":now", gi_now());
}

/* GI_CONFLICT when another entry (not `id`) has in's key and time. */
static int price_dup(struct conn *c, const struct store_price *in, int64_t id)
{
    struct db_stmt *s = prep(c, ST_PRICE_DUP);
    int64_t other;
    int rc;

    if (!s)
        return GI_INTERNAL;
    bind_price(s, in);
    db_bind_int(s, ":id", id);
    rc = db_fetch_int(c, s, &other);
    if (rc == GI_OK)
        return GI_CONFLICT;
    return rc == GI_NOT_FOUND ? GI_OK : rc;
}

/* Re-prices the hourly rollups after a change of an hourly entry. */
static int reprice(struct conn *c, const char *kind, int64_t from)
{
    if (kind && strcmp(kind, "hourly") != 0)
        return GI_OK;
    return usage_reprice(c, from);
}

int store_price_create(struct store *st, const char *actor, const struct store_price *in,
                       json_t **out)
{
    struct conn *c = db_conn_get(st);
    struct db_stmt *s;
    int64_t id = 0;
    int rc = db_tx_begin(c);

    *out = NULL;
    if (rc != GI_OK || (rc = price_dup(c, in, 0)) != GI_OK)
        goto cleanup;
    rc = GI_INTERNAL;
    if (!(s = prep(c, ST_PRICE_ADD)))
        goto cleanup;
    bind_price(s, in);
    if ((rc = db_fetch_int(c, s, &id)) != GI_OK || (rc = price_get(c, id, out)) != GI_OK ||
        (rc = reprice(c, in->kind, in->effective_from)) != GI_OK)
        goto cleanup;
    rc = db_audit(c, actor, "create", "price", id, NULL, *out);
cleanup:
    rc = db_tx_end_doc(c, rc, out);
    db_conn_put(st, c);
    return rc;
}

/* True when entry doc `p` prices GPU model `model` (word matching). */
static bool doc_fits_model(const json_t *p, const char *model)
{
    const char *m = json_string_value(json_object_get(p, "model"));

    if (!m)
        return false;
    return strcasecmp(m, model) == 0 || (count_words(m) > 0 && store_model_matches(m, model));
}

int store_price_list(struct store *st, const struct store_price_filter *f,
                     const struct store_page *pg, json_t **items, int64_t *total)
{
    struct conn *c = db_conn_get(st);
    struct db_stmt *s = prep(c, ST_PRICE_LIST);
    json_t *all = json_array(), *page = json_array();
    int64_t limit = pg ? pg->limit : 100, offset = pg ? pg->offset : 0, n = 0;
    int step;

    *items = NULL;
    *total = 0;
    if (!s) {
        step = GI_INTERNAL;
        goto cleanup;
    }
    db_bind_text(s, ":kind", f->kind);
    while ((step = db_step(c, s)) == DB_ROW) {
        json_t *doc = price_doc(s);
        if (f->model && !doc_fits_model(doc, f->model)) {
            json_decref(doc);
            continue;
        }
        if (n >= offset && n < offset + limit)
            json_array_append(page, doc);
        json_decref(doc);
        n++;
    }
    db_reset(s);
cleanup:
    db_conn_put(st, c);
    json_decref(all);
    if (step != DB_DONE) {
        json_decref(page);
        return step == DB_ROW ? GI_INTERNAL : db_status(step);
    }
    *items = page;
    *total = n;
    return GI_OK;
}

int store_price_get(struct store *st, int64_t id, json_t **out)
{
    struct conn *c = db_conn_get(st);
    int rc = price_get(c, id, out);

    db_conn_put(st, c);
    return rc;
}

/* Unix seconds of an RFC 3339 member of a document (0 when absent). */
static int64_t doc_time(const json_t *doc, const char *name)
{
    int64_t t = 0;
    const char *v = json_string_value(json_object_get(doc, name));

    if (v && gi_time_parse(v, &t) != GI_OK)
        t = 0;
    return t;
}

int store_price_update(struct store *st, const char *actor, int64_t id,
                       const struct store_price *in, json_t **out)
{
    struct conn *c = db_conn_get(st);
    struct db_stmt *s;
    json_t *before = NULL;
    int64_t old_from;
    const char *old_kind;
    int rc = db_tx_begin(c);

    *out = NULL;
    if (rc != GI_OK || (rc = price_get(c, id, &before)) != GI_OK ||
        (rc = price_dup(c, in, id)) != GI_OK)
        goto cleanup;
    rc = GI_INTERNAL;
    if (!(s = prep(c, ST_PRICE_UPDATE)))
        goto cleanup;
    bind_price(s, in);
    db_bind_int(s, ":id", id);
    if ((rc = db_exec_done(c, s)) != GI_OK || (rc = price_get(c, id, out)) != GI_OK)
        goto cleanup;
    /* The old entry stopped pricing from its time and the new one starts
     * from its own: both kinds' rollups from the earlier time on. */
    old_from = doc_time(before, "effective_from");
    old_kind = json_string_value(json_object_get(before, "kind"));
    if ((rc = reprice(c, old_kind,
                      old_from < in->effective_from ? old_from : in->effective_from)) != GI_OK ||
        (rc = reprice(c, in->kind,
                      old_from < in->effective_from ? old_from : in->effective_from)) != GI_OK)
        goto cleanup;
    rc = db_audit(c, actor, "update", "price", id, before, *out);
cleanup:
    json_decref(before);
    rc = db_tx_end_doc(c, rc, out);
    db_conn_put(st, c);
    return rc;
}

int store_price_delete(struct store *st, const char *actor, int64_t id)
{
    struct conn *c = db_conn_get(st);
    struct db_stmt *s;
    json_t *before = NULL;
    int rc = db_tx_begin(c);

    if (rc != GI_OK || (rc = price_get(c, id, &before)) != GI_OK)
        goto cleanup;
    rc = GI_INTERNAL;
    if (!(s = prep(c, ST_PRICE_DELETE)))
        goto cleanup;
    db_bind_int(s, ":id", id);
    if ((rc = db_exec_done(c, s)) != GI_OK ||
        (rc = reprice(c, json_string_value(json_object_get(before, "kind")),
                      doc_time(before, "effective_from"))) != GI_OK)
        goto cleanup;
    rc = db_audit(c, actor, "delete", "price", id, before, NULL);
cleanup:
    json_decref(before);
    rc = db_tx_end(c, rc);
    db_conn_put(st, c);
    return rc;
}

int store_price_lookup(struct store *st, const char *kind, const char *model, const char *env,
                       const char *cloud, const char *pool, int64_t at, json_t **out)
{
    struct conn *c = db_conn_get(st);
    struct price_catalog *cat = NULL;
    int64_t micros = 0, pid = 0;
    char cur[4], money[32];
    json_t *entry = NULL;
    int rc;

    *out = NULL;
    db_read_begin(c);
    if ((rc = price_catalog_load(c, kind, &cat)) != GI_OK)
        goto cleanup;
    if (!price_catalog_pick(cat, model, env, cloud, pool, at, &micros, cur, &pid)) {
        rc = GI_NOT_FOUND;
        goto cleanup;
    }
    if ((rc = price_get(c, pid, &entry)) != GI_OK)
        goto cleanup;
    gi_money_format(micros, 2, money, sizeof money);
    *out = json_pack("{s:s, s:s, s:o, s:s, s:s, s:I, s:O, s:O}", "model", model, "kind", kind, "at",
                     time_text(at), strcmp(kind, "purchase") == 0 ? "amount" : "hourly", money,
                     "currency", cur, "price_id", (json_int_t)pid, "estimate",
                     json_object_get(entry, "estimate"), "price", entry);
cleanup:
    db_read_end(c);
    json_decref(entry);
    price_catalog_free(cat);
    db_conn_put(st, c);
    return rc;
}

/* The shipped estimates: plausible on-demand cloud rates per GPU-hour and
 * list prices per GPU, in USD micro-units. */
static const struct {
    const char *model;
    int64_t hourly, purchase;
} seed[] = {
    {"H200", 7910000, INT64_C(35000000000)},      {"H100", 6880000, INT64_C(30000000000)},
    {"A100 80GB", 5120000, INT64_C(15000000000)}, {"A100 40GB", 4100000, INT64_C(10000000000)},
    {"L40S", 1860000, INT64_C(8000000000)},       {"L4", 800000, INT64_C(2500000000)},
    {"A10G", 1010000, INT64_C(3500000000)},       {"T4", 530000, INT64_C(1500000000)},
    {"V100", 3060000, INT64_C(4000000000)},       {"MI300X", 6000000, INT64_C(15000000000)},
    {"MI250X", 3000000, INT64_C(10000000000)},
};

int store_prices_seed(struct store *st, bool *seeded)
{
    struct conn *c = db_conn_get(st);
    struct db_stmt *s;
    int64_t marks = 0, id;
    int rc = db_tx_begin(c);

    *seeded = false;
    if (rc != GI_OK)
        goto cleanup;
    rc = GI_INTERNAL;
    if (!(s = prep(c, ST_SEED_MARK)) || (rc = db_fetch_int(c, s, &marks)) != GI_OK || marks > 0)
        goto cleanup;
    for (size_t i = 0; rc == GI_OK && i < sizeof seed / sizeof *seed; i++) {
        for (int k = 0; rc == GI_OK && k < 2; k++) {
            struct store_price p = {
                .kind = k ? "purchase" : "hourly",
                .model = seed[i].model,
                .currency = "USD",
                .note = k ? "estimate: purchase price per GPU"
                          : "estimate: on-demand cloud rate per GPU-hour",
                .micros = k ? seed[i].purchase : seed[i].hourly,
                .estimate = true,
            };
            if (!(s = prep(c, ST_PRICE_ADD))) {
                rc = GI_INTERNAL;
                break;
            }
            bind_price(s, &p);
            rc = db_fetch_int(c, s, &id);
        }
    }
    if (rc != GI_OK || !(s = prep(c, ST_SEED_DONE)))
        goto cleanup;
    db_bind_int(s, ":now", gi_now());
    if ((rc = db_exec_done(c, s)) == GI_OK && (rc = usage_reprice(c, 0)) == GI_OK)
        *seeded = true;
cleanup:
    rc = db_tx_end(c, rc);
    if (rc != GI_OK)
        *seeded = false;
    db_conn_put(st, c);
    return rc;
}
