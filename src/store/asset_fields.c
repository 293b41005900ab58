/* The fields of an asset record: the column model, and the reading of an
 * input record (API, CSV import, import sources) into column values,
 * field by field, so that a bad field can be dropped alone. */
#include "store/assets_int.h"
#include "core/money.h"
#include "core/status.h"
#include "core/util.h"
#include "store/links.h"

#include <ctype.h>
#include <stdio.h>
#include <string.h>

const struct asset_col asset_cols[] = {
    {"tag", AC_TEXT},
    {"kind", AC_TEXT},
    {"serial", AC_TEXT},
    {"epc", AC_TEXT},
    {"vendor", AC_TEXT},
    {"model", AC_TEXT},
    {"parent_id", AC_INT},
    {"datacenter_id", AC_INT},
    {"room", AC_TEXT},
    {"rack", AC_TEXT},
    {"rack_u", AC_INT},
    {"storage", AC_TEXT},
    {"purchase_date", AC_TEXT},
    {"purchase_cost_micros", AC_INT},
    {"currency", AC_TEXT},
    {"supplier", AC_TEXT},
    {"order_number", AC_TEXT},
    {"warranty_end", AC_TEXT},
    {"lease_end", AC_TEXT},
    {"depreciation_years", AC_DBL},
    {"salvage_micros", AC_INT},
    {"gpu_uuid", AC_TEXT},
    {"host_id", AC_INT},
    {"source_key", AC_TEXT},
    {"custom", AC_JSON},
    {"last_seen", AC_INT},
    {NULL, AC_TEXT},
};

/* The asset kinds. */
static const char *const kinds[] = {"server", "gpu", "psu", "ssd", "nic", "switch", "other", NULL};

bool store_asset_kind_valid(const char *s)
{
    for (const char *const *k = kinds; s && *k; k++)
        if (strcmp(*k, s) == 0)
            return true;
    return false;
}

/* Days since 1970-01-01 of a proleptic Gregorian date. */
static int64_t days_from_civil(int64_t y, int64_t m, int64_t d)
{
    int64_t era, yoe, doy, doe;

    y -= m <= 2;
    era = (y >= 0 ? y : y - 399) / 400;
    yoe = y - era * 400;
    doy = (153 * (m + (m > 2 ? -3 : 9)) + 2) / 5 + d - 1;
    doe = yoe * 365 + yoe / 4 - yoe / 100 + doy;
    return era * 146097 + doe - 719468;
}

bool asset_date_parse(const char *s, int64_t *days)
{
    static const int mdays[] = {31, 28, 31, 30, 31, 30, 31, 31, 30, 31, 30, 31};
    int64_t y = 0, m = 0, d = 0;
    int dim;

    if (!s || strlen(s) != 10 || s[4] != '-' || s[7] != '-')
        return false;
    for (int i = 0; i < 10; i++) {
        if (i == 4 || i == 7)
            continue;
        if (!isdigit((unsigned char)s[i]))
            return false;
        if (i < 4)
            y = y * 10 + (s[i] - '0');
        else if (i < 7)
            m = m * 10 + (s[i] - '0');
        else
            d = d * 10 + (s[i] - '0');
    }
    if (y < 1900 || m < 1 || m > 12 || d < 1)
        return false;
    dim = mdays[m - 1] + (m == 2 && ((y % 4 == 0 && y % 100 != 0) || y % 400 == 0));
    if (d > dim)
        return false;
    if (days)
        *days = days_from_civil(y, m, d);
    return true;
}

bool store_asset_date_valid(const char *s) { return asset_date_parse(s, NULL); }

/* The date `months` after the date s (the day clamped to the month's
 * end), into out (11 bytes). */
static bool date_add_months(const char *s, int64_t months, char *out, size_t len)
{
    static const int mdays[] = {31, 28, 31, 30, 31, 30, 31, 31, 30, 31, 30, 31};
    int64_t y, m, d, total;
    int dim;

    if (!asset_date_parse(s, NULL) || months < 0 || months > 1200)
        return false;
    y = (s[0] - '0') * 1000 + (s[1] - '0') * 100 + (s[2] - '0') * 10 + (s[3] - '0');
    m = (s[5] - '0') * 10 + (s[6] - '0');
    d = (s[8] - '0') * 10 + (s[9] - '0');
    total = y * 12 + (m - 1) + months;
    y = total / 12;
    m = total % 12 + 1;
    dim = mdays[m - 1] + (m == 2 && ((y % 4 == 0 && y % 100 != 0) || y % 400 == 0));
    if (d > dim)
        d = dim;
    return snprintf(out, len, "%04d-%02d-%02d", (int)y, (int)m, (int)d) == 10;
}

/* One bad field: appended to errors; GI_INVALID when the reading is
 * strict (it stops), else GI_OK (the field is dropped). */
static int bad(json_t *errors, int index, bool strict, const char *field, const char *msg)
{
    json_array_append_new(
        errors, json_pack("{s:i, s:s, s:s}", "index", index, "field", field, "error", msg));
    return strict ? GI_INVALID : GI_OK;
}

/* A text field: a string of 1..max bytes of valid text, or null / ""
 * (no value). *ok false (with the error recorded) when it is neither. */
static int text_field(const json_t *v, const char *field, size_t max, json_t *cols, const char *col,
                      int index, bool strict, json_t *errors)
{
    const char *s;
    char msg[96];

    if (!v)
        return GI_OK;
    if (json_is_null(v) || (json_is_string(v) && json_string_length(v) == 0)) {
        json_object_set_new(cols, col, json_null());
        return GI_OK;
    }
    if (json_is_integer(v)) { /* a serial or an order number read as a number */
        char buf[32];
        snprintf(buf, sizeof buf, "%lld", (long long)json_integer_value(v));
        json_object_set_new(cols, col, json_string(buf));
        return GI_OK;
    }
    if (!json_is_string(v))
        return bad(errors, index, strict, field, "must be a string");
    s = json_string_value(v);
    if (json_string_length(v) > max || !gi_text_ok(s)) {
        snprintf(msg, sizeof msg, "must be text of at most %zu bytes", max);
        return bad(errors, index, strict, field, msg);
    }
    json_object_set_new(cols, col, json_string(s));
    return GI_OK;
}

/* A tag: 1..64 letters, digits and . _ - : (it appears in URLs). */
bool store_asset_tag_valid(const char *s)
{
    size_t n = s ? strlen(s) : 0;

    if (n == 0 || n > 64)
        return false;
    for (size_t i = 0; i < n; i++)
        if (!isalnum((unsigned char)s[i]) && !strchr("._-:", s[i]))
            return false;
    return true;
}

static int date_field(const json_t *v, const char *field, json_t *cols, int index, bool strict,
                      json_t *errors)
{
    if (!v)
        return GI_OK;
    if (json_is_null(v) || (json_is_string(v) && json_string_length(v) == 0)) {
        json_object_set_new(cols, field, json_null());
        return GI_OK;
    }
    if (!json_is_string(v) || !asset_date_parse(json_string_value(v), NULL))
        return bad(errors, index, strict, field, "must be a date YYYY-MM-DD");
    json_object_set_new(cols, field, json_string(json_string_value(v)));
    return GI_OK;
}

/* An amount: a decimal string or a number; *micros receives it. */
static bool amount_read(const json_t *v, int64_t *micros)
{
    char buf[64];

    if (json_is_string(v))
        return gi_money_parse(json_string_value(v), GI_MONEY_LENIENT, false, micros) == GI_OK;
    if (json_is_integer(v)) {
        snprintf(buf, sizeof buf, "%lld", (long long)json_integer_value(v));
        return gi_money_parse(buf, GI_MONEY_LENIENT, false, micros) == GI_OK;
    }
    if (json_is_real(v)) {
        snprintf(buf, sizeof buf, "%.6f", json_real_value(v));
        return gi_money_parse(buf, GI_MONEY_LENIENT, false, micros) == GI_OK;
    }
    return false;
}

/* purchase_cost {amount, currency} (or an amount alone, with `currency`
 * beside it). */
static int cost_field(const json_t *rec, json_t *cols, int index, bool strict, json_t *errors)
{
    const json_t *v = json_object_get(rec, "purchase_cost");
    const json_t *cur = json_object_get(rec, "currency");
    int64_t micros;

    if (json_is_object(v)) {
        cur = json_object_get(v, "currency") ? json_object_get(v, "currency") : cur;
        v = json_object_get(v, "amount");
        if (!v)
            v = json_null();
    }
    if (cur && !json_is_null(cur)) {
        if (!json_is_string(cur) || !gi_currency_ok(json_string_value(cur)))
            return bad(errors, index, strict, "purchase_cost.currency",
                       "must be a currency code of 3 capital letters");
        json_object_set_new(cols, "currency", json_string(json_string_value(cur)));
    }
    if (!v)
        return GI_OK;
    if (json_is_null(v) || (json_is_string(v) && json_string_length(v) == 0)) {
        json_object_set_new(cols, "purchase_cost_micros", json_null());
        return GI_OK;
    }
    if (!amount_read(v, &micros))
        return bad(errors, index, strict, "purchase_cost", "must be a non-negative decimal amount");
    json_object_set_new(cols, "purchase_cost_micros", json_integer(micros));
    return GI_OK;
}

static int salvage_field(const json_t *rec, json_t *cols, int index, bool strict, json_t *errors)
{
    const json_t *v = json_object_get(rec, "salvage");
    int64_t micros;

    if (json_is_object(v))
        v = json_object_get(v, "amount") ? json_object_get(v, "amount") : json_null();
    if (!v)
        return GI_OK;
    if (json_is_null(v) || (json_is_string(v) && json_string_length(v) == 0)) {
        json_object_set_new(cols, "salvage_micros", json_null());
        return GI_OK;
    }
    if (!amount_read(v, &micros))
        return bad(errors, index, strict, "salvage", "must be a non-negative decimal amount");
    json_object_set_new(cols, "salvage_micros", json_integer(micros));
    return GI_OK;
}

/* An integer field within [min, max] (a number, or digits in a string). */
static int int_field(const json_t *v, const char *field, const char *col, int64_t min, int64_t max,
                     json_t *cols, int index, bool strict, json_t *errors)
{
    int64_t n;
    char msg[96];

    if (!v)
        return GI_OK;
    if (json_is_null(v) || (json_is_string(v) && json_string_length(v) == 0)) {
        json_object_set_new(cols, col, json_null());
        return GI_OK;
    }
    if ((json_is_integer(v) && (n = json_integer_value(v)) >= min && n <= max) ||
        (json_is_string(v) && gi_parse_int64(json_string_value(v), min, max, &n) == GI_OK)) {
        json_object_set_new(cols, col, json_integer(n));
        return GI_OK;
    }
    snprintf(msg, sizeof msg, "must be an integer from %lld to %lld", (long long)min,
             (long long)max);
    return bad(errors, index, strict, field, msg);
}

static const char sql_dc_id[] = "SELECT id FROM datacenters WHERE name = :name";
static const char sql_parent_by_tag[] = "SELECT id FROM assets WHERE tag = :tag";
static const char sql_parent_by_serial[] =
    "SELECT id FROM assets WHERE serial = :serial ORDER BY id LIMIT 1";

/* A single id by one text parameter; GI_NOT_FOUND when no row. */
static int id_by_text(struct conn *c, const char *sql, const char *name, const char *v, int64_t *id)
{
    struct db_stmt *s = db_prep(c, sql);

    if (!s)
        return GI_INTERNAL;
    db_bind_text(s, name, v);
    return db_fetch_int(c, s, id);
}

/* location {datacenter, room, rack, u, storage}; the same names at the top
 * level are read too (datacenter by name, or datacenter_id). */
static int location_fields(struct conn *c, const json_t *rec, json_t *cols, int index, bool strict,
                           json_t *errors)
{
    const json_t *loc = json_object_get(rec, "location"), *src, *v;
    int rc;

    if (loc && !json_is_object(loc) && !json_is_null(loc))
        return bad(errors, index, strict, "location", "must be an object");
    src = json_is_object(loc) ? loc : rec;
    if ((v = json_object_get(src, "datacenter")) != NULL) {
        int64_t id;
        if (json_is_null(v) || (json_is_string(v) && json_string_length(v) == 0)) {
            json_object_set_new(cols, "datacenter_id", json_null());
        } else if (!json_is_string(v)) {
            if ((rc = bad(errors, index, strict, "location.datacenter",
                          "must be a data center's name")) != GI_OK)
                return rc;
        } else if ((rc = id_by_text(c, sql_dc_id, ":name", json_string_value(v), &id)) == GI_OK) {
            json_object_set_new(cols, "datacenter_id", json_integer(id));
        } else if (rc == GI_NOT_FOUND) {
            if ((rc = bad(errors, index, strict, "location.datacenter",
                          "no data center has this name")) != GI_OK)
                return rc;
        } else {
            return rc;
        }
    }
    if ((rc = int_field(json_object_get(rec, "datacenter_id"), "datacenter_id", "datacenter_id", 1,
                        INT64_MAX, cols, index, strict, errors)) != GI_OK)
        return rc;
    if ((rc = text_field(json_object_get(src, "room"), "location.room", 128, cols, "room", index,
                         strict, errors)) != GI_OK ||
        (rc = text_field(json_object_get(src, "rack"), "location.rack", 128, cols, "rack", index,
                         strict, errors)) != GI_OK ||
        (rc = text_field(json_object_get(src, "storage"), "location.storage", 128, cols, "storage",
                         index, strict, errors)) != GI_OK)
        return rc;
    v = json_object_get(src, "u") ? json_object_get(src, "u") : json_object_get(src, "rack_u");
    return int_field(v, "location.u", "rack_u", 0, 100, cols, index, strict, errors);
}

/* parent (a tag; also parent_tag) or parent_serial: the parent's id. */
static int parent_field(struct conn *c, const json_t *rec, int64_t self_id, json_t *cols, int index,
                        bool strict, json_t *errors)
{
    const json_t *v = json_object_get(rec, "parent");
    const char *sql = sql_parent_by_tag, *name = ":tag", *field = "parent";
    int64_t id;
    int rc;

    if (!v && (v = json_object_get(rec, "parent_tag")) != NULL)
        field = "parent_tag";
    if (!v && (v = json_object_get(rec, "parent_serial")) != NULL) {
        sql = sql_parent_by_serial;
        name = ":serial";
        field = "parent_serial";
    }
    if (!v)
        return GI_OK;
    if (json_is_null(v) || (json_is_string(v) && json_string_length(v) == 0)) {
        json_object_set_new(cols, "parent_id", json_null());
        return GI_OK;
    }
    if (!json_is_string(v))
        return bad(errors, index, strict, field, "must be a string");
    rc = id_by_text(c, sql, name, json_string_value(v), &id);
    if (rc == GI_NOT_FOUND)
        return bad(errors, index, strict, field, "no asset has this tag or serial");
    if (rc != GI_OK)
        return rc;
    if (id == self_id)
        return bad(errors, index, strict, field, "an asset cannot be its own parent");
    json_object_set_new(cols, "parent_id", json_integer(id));
    return GI_OK;
}

/* custom: an object of scalar values (null removes a key), merged key by
 * key into the stored one by the writer. */
static int custom_field(const json_t *v, json_t *cols, int index, bool strict, json_t *errors)
{
    const char *k;
    json_t *x, *out;

    if (!v)
        return GI_OK;
    if (!json_is_object(v) || json_object_size(v) > 64)
        return bad(errors, index, strict, "custom", "must be an object of at most 64 fields");
    json_object_foreach((json_t *)v, k, x) {
        if (strlen(k) == 0 || strlen(k) > 64 || !gi_text_ok(k) ||
            (!json_is_null(x) && !json_is_string(x) && !json_is_number(x) && !json_is_boolean(x)) ||
            (json_is_string(x) && json_string_length(x) > 1024))
            return bad(errors, index, strict, "custom",
                       "fields must have names of 1..64 bytes and scalar values");
    }
    out = json_deep_copy(v);
    json_object_set_new(cols, "custom", out);
    return GI_OK;
}

int asset_fields_read(struct conn *c, const json_t *rec, bool strict, int64_t self_id, int index,
                      json_t **cols_out, const char **stage, json_t *errors)
{
    static const struct {
        const char *field;
        size_t max;
    } texts[] = {{"serial", 128},   {"epc", 128},        {"vendor", 128},
                 {"model", 128},    {"supplier", 256},   {"order_number", 128},
                 {"gpu_uuid", 128}, {"source_key", 256}, {NULL, 0}};
    json_t *cols = json_object();
    const json_t *v;
    int rc = GI_OK;

    *cols_out = NULL;
    *stage = NULL;
    if (!json_is_object(rec)) {
        json_decref(cols);
        return bad(errors, index, true, "", "a record must be an object");
    }
    if ((v = json_object_get(rec, "tag")) != NULL && !json_is_null(v)) {
        if (!json_is_string(v) || !store_asset_tag_valid(json_string_value(v)))
            rc = bad(errors, index, strict, "tag",
                     "must be 1..64 letters, digits and . _ - : characters");
        else
            json_object_set_new(cols, "tag", json_string(json_string_value(v)));
    }
    if (rc == GI_OK && (v = json_object_get(rec, "kind")) != NULL) {
        if (!json_is_string(v) || !store_asset_kind_valid(json_string_value(v)))
            rc = bad(errors, index, strict, "kind",
                     "must be one of server, gpu, psu, ssd, nic, switch, other");
        else
            json_object_set_new(cols, "kind", json_string(json_string_value(v)));
    }
    if (rc == GI_OK && (v = json_object_get(rec, "stage")) != NULL && !json_is_null(v)) {
        if (!json_is_string(v) || !store_asset_stage_valid(json_string_value(v)))
            rc = bad(errors, index, strict, "stage",
                     "must be one of ordered, received, active, spare, diagnostic_repair, "
                     "refurbishment_candidate, decommissioned");
        else
            *stage = json_string_value(v);
    }
    for (int i = 0; rc == GI_OK && texts[i].field; i++)
        rc = text_field(json_object_get(rec, texts[i].field), texts[i].field, texts[i].max, cols,
                        texts[i].field, index, strict, errors);
    if (rc == GI_OK)
        rc = location_fields(c, rec, cols, index, strict, errors);
    if (rc == GI_OK)
        rc = parent_field(c, rec, self_id, cols, index, strict, errors);
    if (rc == GI_OK)
        rc = date_field(json_object_get(rec, "purchase_date"), "purchase_date", cols, index, strict,
                        errors);
    if (rc == GI_OK)
        rc = date_field(json_object_get(rec, "warranty_end"), "warranty_end", cols, index, strict,
                        errors);
    if (rc == GI_OK)
        rc =
            date_field(json_object_get(rec, "lease_end"), "lease_end", cols, index, strict, errors);
    if (rc == GI_OK && (v = json_object_get(rec, "warranty_months")) != NULL && !json_is_null(v) &&
        !json_object_get(cols, "warranty_end")) {
        /* Months from the purchase date, as asset managers record it. */
        json_t *m = json_object();
        const char *pd = json_string_value(json_object_get(cols, "purchase_date"));
        char end[16];
        rc = int_field(v, "warranty_months", "m", 0, 1200, m, index, strict, errors);
        if (rc == GI_OK && json_object_get(m, "m") && json_is_integer(json_object_get(m, "m"))) {
            if (!pd)
                rc = bad(errors, index, strict, "warranty_months", "needs a purchase_date");
            else if (date_add_months(pd, json_integer_value(json_object_get(m, "m")), end,
                                     sizeof end))
                json_object_set_new(cols, "warranty_end", json_string(end));
        }
        json_decref(m);
    }
    if (rc == GI_OK)
        rc = cost_field(rec, cols, index, strict, errors);
    if (rc == GI_OK)
        rc = salvage_field(rec, cols, index, strict, errors);
    if (rc == GI_OK && (v = json_object_get(rec, "depreciation_years")) != NULL) {
        double y = 0;
        if (json_is_null(v))
            json_object_set_new(cols, "depreciation_years", json_null());
        else if ((json_is_number(v) && (y = json_number_value(v)) > 0 && y <= 100) ||
                 (json_is_string(v) &&
                  gi_parse_double(json_string_value(v), 0.001, 100, &y) == GI_OK))
            json_object_set_new(cols, "depreciation_years", json_real(y));
        else
            rc = bad(errors, index, strict, "depreciation_years",
                     "must be a number of years above 0 and at most 100");
    }
    if (rc == GI_OK)
        rc = int_field(json_object_get(rec, "host_id"), "host_id", "host_id", 1, INT64_MAX, cols,
                       index, strict, errors);
    if (rc == GI_OK && (v = json_object_get(rec, "last_seen")) != NULL && !json_is_null(v)) {
        int64_t t;
        if ((json_is_integer(v) && (t = json_integer_value(v)) >= 0) ||
            (json_is_string(v) && gi_time_parse(json_string_value(v), &t) == GI_OK))
            json_object_set_new(cols, "last_seen", json_integer(t));
        else
            rc = bad(errors, index, strict, "last_seen", "must be an RFC 3339 time");
    }
    if (rc == GI_OK)
        rc = custom_field(json_object_get(rec, "custom"), cols, index, strict, errors);
    if (rc != GI_OK) {
        json_decref(cols);
        return rc;
    }
    *cols_out = cols;
    return GI_OK;
}

/* The serial is one to match by: not empty, not a placeholder. */
bool asset_serial_usable(const char *serial)
{
    char buf[160];
    return serial && links_norm(serial, true, buf, sizeof buf);
}
