/* The price catalog: list, create, read, change and delete entries, and
 * the rate the catalog gives one GPU at a time. Money travels as decimal
 * strings ("2.50", at most 6 decimals) or whole JSON integers, never as
 * JSON reals, so that no amount passes through floating point. */
#include "api/api.h"
#include "core/money.h"
#include "core/status.h"
#include "core/util.h"
#include "store/store.h"

#include <string.h>

static const char *const price_fields[] = {"kind",           "model",    "env",    "cloud",
                                           "pool",           "hourly",   "amount", "currency",
                                           "effective_from", "estimate", "note",   NULL};

/* Reads a money member into *micros: a decimal string or an integer, not
 * negative, at most 6 decimals; 400 naming the field otherwise. */
static bool money_or_reply(struct req *r, const json_t *obj, const char *field, int64_t *micros)
{
    const json_t *v = json_object_get(obj, field);
    char buf[32];
    const char *text = buf;

    if (v == NULL || json_is_null(v)) {
        reply_error(r, 400, "validation_failed", field, "%s is required", field);
        return false;
    }
    if (json_is_integer(v))
        snprintf(buf, sizeof buf, "%lld", (long long)json_integer_value(v));
    else if (json_is_string(v))
        text = json_string_value(v);
    else {
        reply_error(r, 400, "validation_failed", field,
                    "%s must be a decimal string such as \"2.50\"", field);
        return false;
    }
    if (gi_money_parse(text, GI_MONEY_STRICT, false, micros) != GI_OK) {
        reply_error(r, 400, "validation_failed", field,
                    "%s must be a non-negative decimal amount with at most 6 decimals, such as "
                    "\"2.50\"",
                    field);
        return false;
    }
    return true;
}

/* Validates a whole entry (a new one, or a stored one with a change laid
 * over it) into *p, borrowing from obj. */
static bool price_or_reply(struct req *r, const json_t *obj, struct store_price *p)
{
    const char *from = NULL;
    const json_t *est;

    memset(p, 0, sizeof *p);
    if (!json_known_or_reply(r, obj, price_fields) ||
        !json_str_or_reply(r, obj, "kind", false, 16, &p->kind) ||
        !json_str_or_reply(r, obj, "model", true, 128, &p->model) ||
        !json_str_or_reply(r, obj, "env", false, 128, &p->env) ||
        !json_str_or_reply(r, obj, "cloud", false, 128, &p->cloud) ||
        !json_str_or_reply(r, obj, "pool", false, 128, &p->pool) ||
        !json_str_or_reply(r, obj, "currency", false, 3, &p->currency) ||
        !json_str_or_reply(r, obj, "effective_from", false, 64, &from) ||
        !json_str_or_reply(r, obj, "note", false, 512, &p->note))
        return false;
    if (!p->kind)
        p->kind = "hourly";
    if (strcmp(p->kind, "hourly") != 0 && strcmp(p->kind, "purchase") != 0) {
        reply_error(r, 400, "validation_failed", "kind",
                    "kind must be hourly (a rate per GPU-hour) or purchase (a price per GPU)");
        return false;
    }
    if (strcmp(p->kind, "hourly") == 0 && json_object_get(obj, "amount")) {
        reply_error(r, 400, "validation_failed", "amount",
                    "amount belongs to kind purchase; an hourly entry gives hourly");
        return false;
    }
    if (strcmp(p->kind, "purchase") == 0 && json_object_get(obj, "hourly")) {
        reply_error(r, 400, "validation_failed", "hourly",
                    "hourly belongs to kind hourly; a purchase entry gives amount");
        return false;
    }
    if (!money_or_reply(r, obj, strcmp(p->kind, "hourly") == 0 ? "hourly" : "amount", &p->micros))
        return false;
    if (!p->currency)
        p->currency = "USD";
    if (!gi_currency_ok(p->currency)) {
        reply_error(r, 400, "validation_failed", "currency",
                    "currency must be an ISO 4217 code: 3 upper-case letters such as USD");
        return false;
    }
    p->effective_from = gi_now();
    if (from && gi_time_parse(from, &p->effective_from) != GI_OK) {
        reply_error(r, 400, "validation_failed", "effective_from",
                    "effective_from must be an RFC 3339 time such as 2026-11-01T00:00:00Z");
        return false;
    }
    est = json_object_get(obj, "estimate");
    if (est && !json_is_null(est) && !json_is_boolean(est)) {
        reply_error(r, 400, "validation_failed", "estimate", "estimate must be true or false");
        return false;
    }
    p->estimate = json_is_true(est);
    return true;
}

/* Replies for a write; takes out. */
static void price_write_reply(struct req *r, int st, json_t *out, unsigned ok)
{
    if (st != GI_OK)
        json_decref(out);
    if (st == GI_CONFLICT)
        reply_error(r, 409, "conflict", "effective_from",
                    "an entry with this kind, model, env, cloud, pool and effective_from exists; "
                    "change that entry instead");
    else if (st != GI_OK)
        reply_status(r, st, "price");
    else
        reply_json(r, ok, out);
}

void api_prices_create(struct req *r)
{
    json_t *body = NULL, *out = NULL;
    struct store_price p;

    if (!req_json_body_or_reply(r, &body))
        return;
    if (price_or_reply(r, body, &p)) {
        int st = store_price_create(r->store, r->who.name, &p, &out);
        price_write_reply(r, st, out, 201);
    }
    json_decref(body);
}

void api_prices_list(struct req *r)
{
    struct store_page pg;
    struct store_price_filter f = {0};
    json_t *items = NULL;
    int64_t total = 0;
    int st;

    static const char *const sortable[] = {NULL};

    if (!req_page_or_reply(r, sortable, &pg) || !req_param_str_or_reply(r, "kind", 16, &f.kind) ||
        !req_param_str_or_reply(r, "model", 128, &f.model))
        return;
    if ((st = store_price_list(r->store, &f, &pg, &items, &total)) != GI_OK) {
        reply_status(r, st, "prices");
        return;
    }
    reply_list(r, items, total, pg.offset);
}

void api_prices_get(struct req *r)
{
    json_t *out = NULL;
    int st = store_price_get(r->store, r->id, &out);

    if (st != GI_OK)
        reply_status(r, st, "price");
    else
        reply_json(r, 200, out);
}

void api_prices_update(struct req *r)
{
    static const char *const derived[] = {"id", "effective_until", "created_at", "updated_at"};
    json_t *body = NULL, *cur = NULL, *out = NULL;
    struct store_price p;
    int st;

    if (!req_json_body_or_reply(r, &body))
        return;
    if (!json_known_or_reply(r, body, price_fields))
        goto cleanup;
    if ((st = store_price_get(r->store, r->id, &cur)) != GI_OK) {
        reply_status(r, st, "price");
        goto cleanup;
    }
    for (size_t i = 0; i < sizeof derived / sizeof *derived; i++)
        json_object_del(cur, derived[i]);
    /* A change of kind brings its own amount: the old one goes. */
    if (json_object_get(body, "kind")) {
        json_object_del(cur, "hourly");
        json_object_del(cur, "amount");
    }
    json_object_update(cur, body);
    if (price_or_reply(r, cur, &p)) {
        st = store_price_update(r->store, r->who.name, r->id, &p, &out);
        price_write_reply(r, st, out, 200);
    }
cleanup:
    json_decref(cur);
    json_decref(body);
}

void api_prices_delete(struct req *r)
{
    int st = store_price_delete(r->store, r->who.name, r->id);

    if (st != GI_OK)
        reply_status(r, st, "price");
    else
        reply_no_content(r);
}

void api_prices_rate(struct req *r)
{
    const char *kind = NULL, *model = NULL, *env = NULL, *cloud = NULL, *pool = NULL, *at = NULL;
    int64_t t = gi_now();
    json_t *out = NULL;
    int st;

    if (!req_param_str_or_reply(r, "kind", 16, &kind) ||
        !req_param_str_or_reply(r, "model", 128, &model) ||
        !req_param_str_or_reply(r, "env", 128, &env) ||
        !req_param_str_or_reply(r, "cloud", 128, &cloud) ||
        !req_param_str_or_reply(r, "pool", 128, &pool) || !req_param_str_or_reply(r, "at", 64, &at))
        return;
    if (!model || !*model) {
        reply_error(r, 400, "validation_failed", "model", "model is required");
        return;
    }
    if (kind && strcmp(kind, "hourly") != 0 && strcmp(kind, "purchase") != 0) {
        reply_error(r, 400, "validation_failed", "kind", "kind must be hourly or purchase");
        return;
    }
    if (at && gi_time_parse(at, &t) != GI_OK) {
        reply_error(r, 400, "validation_failed", "at", "at must be an RFC 3339 time");
        return;
    }
    st = store_price_lookup(r->store, kind ? kind : "hourly", model, env, cloud, pool, t, &out);
    if (st == GI_NOT_FOUND)
        reply_error(r, 404, "not_found", "model", "no catalog entry prices '%s' at that time",
                    model);
    else if (st != GI_OK)
        reply_status(r, st, "price");
    else
        reply_json(r, 200, out);
}
