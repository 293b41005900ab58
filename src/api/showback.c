/* The cost settings (TCO amortization, energy price, PUE, the reports'
 * currency) and the monthly showback report, one row per team, as JSON
 * or CSV. What each figure means is in src/store/showback.c. */
#include "api/api.h"
#include "api/scope.h"
#include "core/money.h"
#include "core/status.h"
#include "core/util.h"
#include "store/store.h"

#include <math.h>
#include <string.h>
#include <time.h>

static json_t *settings_json(const struct store_cost_settings *s)
{
    char kwh[32];

    gi_money_format(s->energy_micros_kwh, 2, kwh, sizeof kwh);
    return json_pack("{s:I, s:s, s:f, s:s}", "amortization_years",
                     (json_int_t)s->amortization_years, "energy_price_per_kwh", kwh, "pue",
                     (double)s->pue_milli / 1000.0, "currency", s->currency);
}

void api_cost_settings_get(struct req *r)
{
    struct store_cost_settings s;
    int st = store_cost_settings_get(r->store, &s);

    if (st != GI_OK)
        reply_status(r, st, "cost settings");
    else
        reply_json(r, 200, settings_json(&s));
}

void api_cost_settings_put(struct req *r)
{
    static const char *const fields[] = {"amortization_years", "energy_price_per_kwh", "pue",
                                         "currency", NULL};
    struct store_cost_settings s;
    json_t *body = NULL, *v;
    const char *cur = NULL;
    int st;

    if (!req_json_body_or_reply(r, &body))
        return;
    if (!json_known_or_reply(r, body, fields))
        goto cleanup;
    if ((st = store_cost_settings_get(r->store, &s)) != GI_OK) {
        reply_status(r, st, "cost settings");
        goto cleanup;
    }
    if (!json_int_or_reply(r, body, "amortization_years", false, 1, 50, &s.amortization_years) ||
        !json_str_or_reply(r, body, "currency", false, 3, &cur))
        goto cleanup;
    if ((v = json_object_get(body, "energy_price_per_kwh")) && !json_is_null(v)) {
        char buf[32];
        const char *text = buf;
        if (json_is_string(v))
            text = json_string_value(v);
        else if (json_is_integer(v))
            snprintf(buf, sizeof buf, "%lld", (long long)json_integer_value(v));
        else
            buf[0] = '\0';
        if (gi_money_parse(text, GI_MONEY_STRICT, false, &s.energy_micros_kwh) != GI_OK) {
            reply_error(r, 400, "validation_failed", "energy_price_per_kwh",
                        "energy_price_per_kwh must be a non-negative decimal string with at most "
                        "6 decimals, such as \"0.12\"");
            goto cleanup;
        }
    }
    if ((v = json_object_get(body, "pue")) && !json_is_null(v)) {
        double pue = json_number_value(v);
        if (!json_is_number(v) || !(pue >= 1.0 && pue <= 10.0)) {
            reply_error(r, 400, "validation_failed", "pue",
                        "pue must be a number from 1.0 to 10.0");
            goto cleanup;
        }
        s.pue_milli = (int64_t)llround(pue * 1000.0);
    }
    if (cur) {
        if (!gi_currency_ok(cur)) {
            reply_error(r, 400, "validation_failed", "currency",
                        "currency must be an ISO 4217 code: 3 upper-case letters such as USD");
            goto cleanup;
        }
        memcpy(s.currency, cur, 4);
    }
    if ((st = store_cost_settings_put(r->store, r->who.name, &s)) != GI_OK)
        reply_status(r, st, "cost settings");
    else
        reply_json(r, 200, settings_json(&s));
cleanup:
    json_decref(body);
}

/* Reads ?month=YYYY-MM (default: the current UTC month) into [from, to). */
static bool month_or_reply(struct req *r, int64_t *from, int64_t *to, char *label, size_t len)
{
    const char *m = req_param(r, "month");
    struct tm tm = {0};
    int y, mo;

    if (m == NULL) {
        time_t now = (time_t)gi_now();
        struct tm cur;
        gmtime_r(&now, &cur);
        y = cur.tm_year + 1900;
        mo = cur.tm_mon + 1;
    } else {
        int64_t yy, mm;
        char ys[5], ms[3];
        if (strlen(m) != 7 || m[4] != '-') {
            reply_error(r, 400, "validation_failed", "month", "month must be YYYY-MM");
            return false;
        }
        memcpy(ys, m, 4);
        ys[4] = '\0';
        memcpy(ms, m + 5, 2);
        ms[2] = '\0';
        if (gi_parse_int64(ys, 1970, 9999, &yy) != GI_OK ||
            gi_parse_int64(ms, 1, 12, &mm) != GI_OK) {
            reply_error(r, 400, "validation_failed", "month", "month must be YYYY-MM");
            return false;
        }
        y = (int)yy;
        mo = (int)mm;
    }
    tm.tm_year = y - 1900;
    tm.tm_mon = mo - 1;
    tm.tm_mday = 1;
    *from = (int64_t)timegm(&tm);
    tm.tm_mon += 1;
    *to = (int64_t)timegm(&tm);
    snprintf(label, len, "%04d-%02d", y, mo);
    return true;
}

/* A report row flattened for CSV. */
static json_t *flat_row(const json_t *row, const char *month)
{
    const json_t *h = json_object_get(row, "gpu_hours"), *cost = json_object_get(row, "cost");
    const json_t *cat = json_object_get(cost, "catalog"), *tco = json_object_get(cost, "tco");
    const json_t *bill = json_object_get(cost, "billed");

    return json_pack(
        "{s:s, s:O, s:O, s:O, s:O, s:O, s:O, s:O, s:O, s:O, s:O, s:O, s:O, s:O, s:O, s:O, s:O, "
        "s:O, s:O}",
        "month", month, "team", json_object_get(row, "team"), "gpu_hours_owned",
        json_object_get(h, "owned"), "gpu_hours_busy", json_object_get(h, "busy"),
        "gpu_hours_allocated_idle", json_object_get(h, "allocated_idle"), "gpu_hours_idle",
        json_object_get(h, "idle"), "gpu_hours_unknown", json_object_get(h, "unknown"),
        "energy_kwh", json_object_get(row, "energy_kwh"), "catalog_cost",
        json_object_get(cat, "amount"), "catalog_busy", json_object_get(cat, "busy"),
        "catalog_waste", json_object_get(cat, "waste"), "catalog_idle",
        json_object_get(cat, "idle"), "catalog_unknown", json_object_get(cat, "unknown"),
        "catalog_unpriced_gpu_hours", json_object_get(cat, "unpriced_gpu_hours"), "tco_cost",
        json_object_get(tco, "amount"), "tco_capital", json_object_get(tco, "capital"),
        "tco_energy", json_object_get(tco, "energy"), "billed_cost",
        json_object_get(bill, "amount"), "currency", json_object_get(cat, "currency"));
}

/* The report's data centers into *sc: ?datacenter= (a name or an id),
 * else a confined token's own (n 0: every data center). */
static bool showback_scope_or_reply(struct req *r, struct store_scope *sc)
{
    const char *dc = NULL;
    int64_t id = 0;
    int st;

    sc->n = 0;
    if (!req_param_str_or_reply(r, "datacenter", 255, &dc))
        return false;
    if (dc && *dc) {
        st = store_dc_id_by_name(r->store, dc, &id);
        if (st == GI_NOT_FOUND && gi_parse_int64(dc, 1, INT64_MAX, &id) != GI_OK)
            id = -1; /* names no data center: the report has nothing */
        else if (st != GI_OK && st != GI_NOT_FOUND) {
            reply_status(r, st, "data center");
            return false;
        }
    }
    if (id >= 0 && !who_dc_filter_or_reply(r, &id, sc))
        return false;
    if (id != 0) {
        sc->n = 1;
        sc->dcs[0] = id;
    }
    return true;
}

void api_showback(struct req *r)
{
    struct store_scope sc;
    int64_t from, to;
    char month[16];
    json_t *out = NULL;
    int st;

    if (!month_or_reply(r, &from, &to, month, sizeof month) || !showback_scope_or_reply(r, &sc))
        return;
    if ((st = store_showback(r->store, from, to, &sc, &out)) != GI_OK) {
        reply_status(r, st, "showback");
        return;
    }
    json_object_set_new(out, "month", json_string(month));
    if (req_wants_csv(r)) {
        json_t *rows = json_array(), *row;
        size_t i;
        json_array_foreach(json_object_get(out, "items"), i, row)
            json_array_append_new(rows, flat_row(row, month));
        json_decref(out);
        reply_list(r, rows, (int64_t)json_array_size(rows), 0);
        return;
    }
    reply_json(r, 200, out);
}
