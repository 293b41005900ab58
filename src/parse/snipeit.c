/* Snipe-IT hardware pages into asset records; see snipeit.h. */
#include "parse/snipeit.h"
#include "core/status.h"
#include "core/util.h"

#include <ctype.h>
#include <stdio.h>
#include <string.h>
#include <strings.h>

/* A decoded string is never longer than its escaped form. */
#define TEXT_MAX 4096

static void warn(json_t *warnings, size_t index, const char *field, const char *msg)
{
    json_array_append_new(warnings, json_pack("{s:I, s:s, s:s}", "index", (json_int_t)index,
                                              "field", field, "error", msg));
}

/* Appends code point cp as UTF-8; false when it does not fit or is not a
 * character a text field may hold. */
static bool put_utf8(unsigned long cp, char *out, size_t *o, size_t outlen)
{
    unsigned char b[4];
    size_t n;

    if (cp == 0 || cp > 0x10FFFF || (cp >= 0xD800 && cp <= 0xDFFF))
        return false;
    if (cp < 0x80) {
        b[0] = (unsigned char)cp;
        n = 1;
    } else if (cp < 0x800) {
        b[0] = (unsigned char)(0xC0 | (cp >> 6));
        b[1] = (unsigned char)(0x80 | (cp & 0x3F));
        n = 2;
    } else if (cp < 0x10000) {
        b[0] = (unsigned char)(0xE0 | (cp >> 12));
        b[1] = (unsigned char)(0x80 | ((cp >> 6) & 0x3F));
        b[2] = (unsigned char)(0x80 | (cp & 0x3F));
        n = 3;
    } else {
        b[0] = (unsigned char)(0xF0 | (cp >> 18));
        b[1] = (unsigned char)(0x80 | ((cp >> 12) & 0x3F));
        b[2] = (unsigned char)(0x80 | ((cp >> 6) & 0x3F));
        b[3] = (unsigned char)(0x80 | (cp & 0x3F));
        n = 4;
    }
    if (*o + n >= outlen)
        return false;
    memcpy(out + *o, b, n);
    *o += n;
    return true;
}

/* The code point of the reference at s ("&...;"), its length in *n; 0
 * when s does not start a reference this decoder knows. */
static unsigned long reference(const char *s, size_t *n)
{
    static const struct {
        const char *name;
        unsigned long cp;
    } named[] = {{"&amp;", '&'},  {"&lt;", '<'},    {"&gt;", '>'},
                 {"&quot;", '"'}, {"&apos;", '\''}, {"&nbsp;", 0xA0}};
    unsigned long cp = 0;
    size_t i = 2;
    int base = 10, digits = 0;

    for (size_t k = 0; k < sizeof named / sizeof *named; k++)
        if (strncmp(s, named[k].name, strlen(named[k].name)) == 0) {
            *n = strlen(named[k].name);
            return named[k].cp;
        }
    if (s[1] != '#')
        return 0;
    if (s[2] == 'x' || s[2] == 'X') {
        base = 16;
        i = 3;
    }
    for (; s[i] && s[i] != ';' && digits < 8; i++, digits++) {
        int d;
        if (isdigit((unsigned char)s[i]))
            d = s[i] - '0';
        else if (base == 16 && isxdigit((unsigned char)s[i]))
            d = tolower((unsigned char)s[i]) - 'a' + 10;
        else
            return 0;
        cp = cp * (unsigned long)base + (unsigned long)d;
    }
    if (s[i] != ';' || digits == 0)
        return 0;
    *n = i + 1;
    return cp;
}

bool snipeit_html_decode(const char *in, char *out, size_t outlen)
{
    size_t o = 0;

    if (outlen == 0)
        return false;
    for (size_t i = 0; in[i];) {
        size_t n = 0;
        unsigned long cp = in[i] == '&' ? reference(in + i, &n) : 0;
        if (n > 0) {
            if (!put_utf8(cp, out, &o, outlen))
                return false;
            i += n;
            continue;
        }
        if (o + 1 >= outlen)
            return false;
        out[o++] = in[i++];
    }
    out[o] = '\0';
    return true;
}

bool snipeit_money(const char *s, char *out, size_t outlen)
{
    char digits[64];
    const char *last_comma = strrchr(s, ','), *last_dot = strrchr(s, '.'), *mark = NULL;
    size_t commas = 0, dots = 0, n = 0, after = 0;
    bool seen_digit = false, in_frac = false;

    for (const char *p = s; *p; p++) {
        commas += *p == ',';
        dots += *p == '.';
    }
    if (commas && dots) {
        /* The decimal mark occurs once, after every thousands separator. */
        mark = last_comma > last_dot ? last_comma : last_dot;
        if ((mark == last_comma ? commas : dots) != 1)
            return false;
    } else if (commas == 1)
        mark =
            strspn(last_comma + 1, "0123456789") == 3 && last_comma[4] == '\0' ? NULL : last_comma;
    else if (dots == 1)
        mark = last_dot;
    for (const char *p = s; *p; p++) {
        if (isdigit((unsigned char)*p)) {
            if (n + 2 >= sizeof digits)
                return false;
            digits[n++] = *p;
            seen_digit = true;
            after += in_frac;
        } else if (p == mark) {
            if (!seen_digit)
                digits[n++] = '0';
            digits[n++] = '.';
            in_frac = true;
        } else if ((*p == ',' || *p == '.' || *p == ' ' || *p == '\'') && seen_digit && !in_frac) {
            continue; /* a thousands separator */
        } else {
            return false;
        }
    }
    if (!seen_digit || (in_frac && after == 0) || n + 1 > outlen)
        return false;
    digits[n] = '\0';
    return gi_strlcpy(out, digits, outlen);
}

bool snipeit_months(const json_t *v, int64_t *months)
{
    char num[24];
    const char *s;
    size_t n;

    if (json_is_integer(v)) {
        *months = json_integer_value(v);
        return *months >= 0 && *months <= 1200;
    }
    if (!json_is_string(v))
        return false;
    s = json_string_value(v);
    while (*s == ' ')
        s++;
    n = strspn(s, "0123456789");
    if (n == 0 || n >= sizeof num)
        return false;
    memcpy(num, s, n);
    num[n] = '\0';
    return gi_parse_int64(num, 0, 1200, months) == GI_OK;
}

const char *snipeit_stage_for(const char *meta)
{
    static const struct {
        const char *meta, *stage;
    } map[] = {{"deployed", "active"},
               {"deployable", "spare"},
               {"pending", "received"},
               {"archived", "decommissioned"},
               {"undeployable", "diagnostic_repair"}};

    for (size_t i = 0; meta && i < sizeof map / sizeof *map; i++)
        if (strcmp(map[i].meta, meta) == 0)
            return map[i].stage;
    return NULL;
}

/* A decoded, non-empty text value into o[key]; a value of the wrong type
 * or that cannot be decoded is warned as `field`. */
static bool put_text(json_t *o, const char *key, const json_t *v, json_t *warnings, size_t index,
                     const char *field)
{
    char buf[TEXT_MAX];

    if (v == NULL || json_is_null(v))
        return false;
    if (json_is_integer(v)) {
        /* Serials and tags that are all digits sometimes arrive as numbers. */
        snprintf(buf, sizeof buf, "%lld", (long long)json_integer_value(v));
    } else if (!json_is_string(v) || json_string_length(v) >= sizeof buf ||
               !snipeit_html_decode(json_string_value(v), buf, sizeof buf) || !gi_text_ok(buf)) {
        warn(warnings, index, field, "must be text");
        return false;
    }
    if (buf[0] == '\0')
        return false;
    json_object_set_new(o, key, json_string(buf));
    return true;
}

/* obj[key].name, decoded, into o[dst]. */
static bool put_name(json_t *o, const char *dst, const json_t *obj, const char *key,
                     json_t *warnings, size_t index)
{
    const json_t *v = json_object_get(obj, key);
    char field[96];

    if (v == NULL || json_is_null(v))
        return false;
    snprintf(field, sizeof field, "%s.name", key);
    if (!json_is_object(v)) {
        warn(warnings, index, key, "must be an object with a name");
        return false;
    }
    return put_text(o, dst, json_object_get(v, "name"), warnings, index, field);
}

/* Dates: {"date": "YYYY-MM-DD", "formatted"}, {"datetime": "YYYY-MM-DD
 * hh:mm:ss"} or text; the day part is kept. */
static void put_date(json_t *rec, const char *key, const json_t *v, json_t *warnings, size_t index)
{
    const char *s = NULL;
    char day[11];

    if (v == NULL || json_is_null(v))
        return;
    if (json_is_object(v))
        s = json_string_value(json_object_get(v, "date"))
                ? json_string_value(json_object_get(v, "date"))
                : json_string_value(json_object_get(v, "datetime"));
    else
        s = json_string_value(v);
    if (s == NULL || strlen(s) < 10 || (s[10] != '\0' && s[10] != ' ' && s[10] != 'T') ||
        strspn(s, "0123456789") != 4 || s[4] != '-' || strspn(s + 5, "0123456789") != 2 ||
        s[7] != '-' || strspn(s + 8, "0123456789") != 2) {
        warn(warnings, index, key, "must be a date");
        return;
    }
    memcpy(day, s, 10);
    day[10] = '\0';
    json_object_set_new(rec, key, json_string(day));
}

static const char *kind_for(const char *category)
{
    static const struct {
        const char *word, *kind;
    } map[] = {{"gpu", "gpu"},
               {"graphics", "gpu"},
               {"accelerator", "gpu"},
               {"server", "server"},
               {"power", "psu"},
               {"psu", "psu"},
               {"ssd", "ssd"},
               {"disk", "ssd"},
               {"drive", "ssd"},
               {"storage", "ssd"},
               {"nic", "nic"},
               {"network card", "nic"},
               {"network adapter", "nic"},
               {"switch", "switch"}};
    char l[128];
    size_t i = 0;

    for (; category && category[i] && i + 1 < sizeof l; i++)
        l[i] = (char)tolower((unsigned char)category[i]);
    l[i] = '\0';
    for (size_t k = 0; k < sizeof map / sizeof *map; k++)
        if (strstr(l, map[k].word))
            return map[k].kind;
    return "other";
}

/* custom_fields {"<Label>": {"field": "_snipeit_x_7", "value": ...}} into
 * custom by decoded label; a GPU UUID field also fills gpu_uuid. */
static void custom_fields(const json_t *cf, json_t *rec, json_t *custom, json_t *warnings,
                          size_t index)
{
    const char *label;
    json_t *f;

    if (cf == NULL || json_is_null(cf) || (json_is_array(cf) && json_array_size(cf) == 0))
        return; /* PHP writes an empty map as [] */
    if (!json_is_object(cf)) {
        warn(warnings, index, "custom_fields", "must be an object");
        return;
    }
    json_object_foreach((json_t *)cf, label, f) {
        char name[128], l[128];
        const char *col = json_string_value(json_object_get(f, "field"));
        const json_t *v = json_is_object(f) ? json_object_get(f, "value") : NULL;
        size_t i = 0;
        if (!snipeit_html_decode(label, name, sizeof name) || !gi_text_ok(name) || !name[0] ||
            strlen(name) > 64) {
            warn(warnings, index, "custom_fields", "a field's label is not usable text");
            continue;
        }
        if (v == NULL || json_is_null(v))
            continue;
        if (!put_text(custom, name, v, warnings, index, "custom_fields"))
            continue;
        for (; name[i] && i + 1 < sizeof l; i++)
            l[i] = (char)tolower((unsigned char)name[i]);
        l[i] = '\0';
        if ((strstr(l, "gpu") && strstr(l, "uuid")) || (col && strstr(col, "gpu_uuid")))
            json_object_set(rec, "gpu_uuid", json_object_get(custom, name));
    }
}

static json_t *asset(const json_t *o, json_t *warnings, size_t index)
{
    json_t *rec = json_object(), *custom = json_object(), *loc = json_object(),
           *tmp = json_object();
    const json_t *v, *st;
    char key[64], amount[64];
    int64_t months;

    put_text(rec, "tag", json_object_get(o, "asset_tag"), warnings, index, "asset_tag");
    put_text(rec, "serial", json_object_get(o, "serial"), warnings, index, "serial");
    put_name(rec, "model", o, "model", warnings, index);
    put_name(rec, "vendor", o, "manufacturer", warnings, index);
    put_name(rec, "supplier", o, "supplier", warnings, index);
    put_text(rec, "order_number", json_object_get(o, "order_number"), warnings, index,
             "order_number");
    put_name(custom, "category", o, "category", warnings, index);
    json_object_set_new(
        rec, "kind", json_string(kind_for(json_string_value(json_object_get(custom, "category")))));
    put_text(custom, "name", json_object_get(o, "name"), warnings, index, "name");
    if (!put_name(loc, "datacenter", o, "location", warnings, index))
        put_name(loc, "datacenter", o, "rtd_location", warnings, index);
    if (json_object_size(loc) > 0)
        json_object_set(rec, "location", loc);
    put_date(rec, "purchase_date", json_object_get(o, "purchase_date"), warnings, index);
    v = json_object_get(o, "purchase_cost");
    if (json_is_number(v)) {
        snprintf(amount, sizeof amount, "%.2f", json_number_value(v));
        json_object_set_new(rec, "purchase_cost", json_pack("{s:s}", "amount", amount));
    } else if (put_text(tmp, "cost", v, warnings, index, "purchase_cost")) {
        if (snipeit_money(json_string_value(json_object_get(tmp, "cost")), amount, sizeof amount))
            json_object_set_new(rec, "purchase_cost", json_pack("{s:s}", "amount", amount));
        else
            warn(warnings, index, "purchase_cost", "is not an amount");
    }
    v = json_object_get(o, "warranty_months");
    if (v && !json_is_null(v)) {
        if (snipeit_months(v, &months))
            json_object_set_new(rec, "warranty_months", json_integer(months));
        else
            warn(warnings, index, "warranty_months", "is not a number of months");
    }
    /* status_label is the older name of the same object. */
    st = json_object_get(o, "status_label");
    if (!json_is_object(st))
        st = json_object_get(o, "status");
    if (json_is_object(st)) {
        const char *meta = json_string_value(json_object_get(st, "status_meta"));
        if (!meta)
            meta = json_string_value(json_object_get(st, "status_type"));
        put_text(custom, "external_status", json_object_get(st, "name"), warnings, index,
                 "status_label.name");
        if (json_is_integer(json_object_get(st, "id")))
            json_object_set(custom, "external_status_id", json_object_get(st, "id"));
        if (snipeit_stage_for(meta))
            json_object_set_new(custom, "external_stage", json_string(snipeit_stage_for(meta)));
    } else if (st && !json_is_null(st)) {
        warn(warnings, index, "status_label", "must be an object");
    }
    custom_fields(json_object_get(o, "custom_fields"), rec, custom, warnings, index);
    v = json_object_get(o, "id");
    if (json_is_integer(v) && json_integer_value(v) >= 0) {
        snprintf(key, sizeof key, "snipeit:hardware:%lld", (long long)json_integer_value(v));
        json_object_set_new(rec, "source_key", json_string(key));
    }
    json_object_set(rec, "custom", custom);
    json_decref(custom);
    json_decref(loc);
    json_decref(tmp);
    return rec;
}

/* The first message of an error answer, into err. */
static void error_text(const json_t *doc, char *err, size_t errlen)
{
    const json_t *m = json_object_get(doc, "messages");
    const char *k;
    json_t *v;

    if (!m)
        m = json_object_get(doc, "errors");
    if (json_is_string(m)) {
        snprintf(err, errlen, "%.200s", json_string_value(m));
        return;
    }
    json_object_foreach((json_t *)m, k, v) {
        const char *s =
            json_is_array(v) ? json_string_value(json_array_get(v, 0)) : json_string_value(v);
        if (s) {
            snprintf(err, errlen, "%.60s: %.180s", k, s);
            return;
        }
    }
    if (json_is_string(json_object_get(doc, "message")))
        snprintf(err, errlen, "%.200s", json_string_value(json_object_get(doc, "message")));
    else
        snprintf(err, errlen, "the server reported an error");
}

int snipeit_parse_page(const char *body, size_t len, json_t *records, json_t *warnings,
                       int64_t *total, size_t *rows, char *err, size_t errlen)
{
    json_error_t je;
    json_t *doc = json_loadb(body, len, JSON_REJECT_DUPLICATES, &je), *list, *o;
    size_t i, base = json_array_size(records);
    int rc = GI_INVALID;

    *total = -1;
    *rows = 0;
    err[0] = '\0';
    if (doc == NULL) {
        snprintf(err, errlen, "not JSON: %s (line %d)", je.text, je.line);
        return GI_INVALID;
    }
    list = json_object_get(doc, "rows");
    if (!json_is_object(doc) ||
        (json_is_string(json_object_get(doc, "status")) &&
         strcmp(json_string_value(json_object_get(doc, "status")), "error") == 0) ||
        (!json_is_array(list) &&
         (json_object_get(doc, "message") || json_object_get(doc, "errors")))) {
        error_text(doc, err, errlen);
        goto cleanup;
    }
    if (!json_is_array(list)) {
        snprintf(err, errlen, "the answer has no rows list");
        goto cleanup;
    }
    if (json_is_integer(json_object_get(doc, "total")))
        *total = json_integer_value(json_object_get(doc, "total"));
    json_array_foreach(list, i, o) {
        json_t *rec;
        if (!json_is_object(o)) {
            warn(warnings, base + i, "", "a row must be an object");
            continue;
        }
        if ((rec = asset(o, warnings, base + i)) == NULL ||
            json_array_append_new(records, rec) != 0) {
            rc = GI_INTERNAL;
            goto cleanup;
        }
    }
    *rows = json_array_size(list);
    rc = GI_OK;
cleanup:
    json_decref(doc);
    return rc;
}

int snipeit_lookup_parse(const char *body, size_t len, const char *serial, json_t **matches,
                         int64_t *total, char *err, size_t errlen)
{
    json_error_t je;
    json_t *doc = json_loadb(body, len, JSON_REJECT_DUPLICATES, &je), *list, *o;
    const char *status;
    char sn[256];
    size_t i;
    int rc = GI_INVALID;

    *matches = NULL;
    *total = 0;
    err[0] = '\0';
    if (doc == NULL) {
        snprintf(err, errlen, "not JSON: %s (line %d)", je.text, je.line);
        return GI_INVALID;
    }
    status = json_string_value(json_object_get(doc, "status"));
    list = json_object_get(doc, "rows");
    if (status && strcmp(status, "error") == 0 && !json_is_array(list)) {
        rc = (*matches = json_array()) ? GI_OK : GI_INTERNAL;
        goto cleanup;
    }
    if (!json_is_array(list)) {
        error_text(doc, err, errlen);
        goto cleanup;
    }
    json_array_foreach(list, i, o) {
        const char *raw = json_string_value(json_object_get(o, "serial"));
        const json_t *id = json_object_get(o, "id");
        if (!json_is_integer(id) || json_integer_value(id) < 1) {
            snprintf(err, errlen, "row %zu has no id", i);
            goto cleanup;
        }
        if (!raw || !serial || !snipeit_html_decode(raw, sn, sizeof sn) ||
            strcasecmp(sn, serial) != 0) {
            snprintf(err, errlen, "the answer lists assets of other serials");
            goto cleanup;
        }
    }
    if (!(*matches = json_deep_copy(list))) {
        rc = GI_INTERNAL;
        goto cleanup;
    }
    *total = (int64_t)json_array_size(list);
    if (json_is_integer(json_object_get(doc, "total")) &&
        json_integer_value(json_object_get(doc, "total")) > *total)
        *total = json_integer_value(json_object_get(doc, "total"));
    rc = GI_OK;
cleanup:
    json_decref(doc);
    return rc;
}
