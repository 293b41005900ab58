/* CSV import and export of hardware assets, in the columns asset managers
 * use. The header names a column by gpuinv's field name or by a name
 * familiar to Snipe-IT and NetBox users (matched ignoring case, spaces
 * and underscores): "Asset Tag" / "AssetTag" / "Tag", "Serial Number" /
 * "Serial No." / "Product Key", "Model" / "Model Name", "Manufacturer",
 * "Category" (the kind, read from words such as GPU, Server, Power
 * Supply, SSD, NIC, Switch), "Purchase Date", "Purchase Cost" (1,234.56
 * or 1.234,56), "Warranty" / "Warranty Months" ("36" or "36 months"),
 * "Order #" / "Order No." / "Order Number", "Supplier", "Location" /
 * "Site" / "Datacenter" (a data center by name; with a Site column,
 * NetBox's Location is the room), "Rack", "Position" / "U", "Status"
 * (Snipe-IT and NetBox status names, or a stage), NetBox's "Device Type"
 * (the model) and "Role" (the kind). "custom.NAME" columns, and every
 * column not recognized, become custom fields. The asset tag is the
 * upsert key; blank rows are skipped; every problem names its line and
 * column; any problem, or dry_run, writes nothing.
 *
 * The export (GET /api/v1/assets?format=csv) writes exactly the columns
 * the import reads, so an export imports back to the same assets. */
#include "api/api.h"
#include "api/scope.h"
#include "api/csvimport.h"
#include "core/status.h"
#include "core/util.h"
#include "parse/csv.h"
#include "store/store.h"

#include <ctype.h>
#include <malloc.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#define ASSET_IMPORT_MAX_ROWS 50000

/* What a column fills: a field of the record (`field`, in location when
 * loc), with the name the store's errors use for it. */
enum col_kind {
    C_TEXT,    /* a text field as it is */
    C_KIND,    /* category words -> kind */
    C_STAGE,   /* status names -> stage */
    C_COST,    /* locale amounts */
    C_MONTHS,  /* "36 months" */
    C_DATE,    /* YYYY-MM-DD (a time after it is dropped) */
    C_NUMBER,  /* a decimal number */
    C_CUSTOM,  /* a custom field */
    C_INTEGER, /* a whole number */
};

struct alias {
    const char *names; /* normalized header names, '|'-separated */
    const char *field;
    enum col_kind kind;
    bool loc;
};

static const struct alias aliases[] = {
    {"tag|asset tag|assettag", "tag", C_TEXT, false},
    {"serial|serial number|serial no.|serial no|product key|key", "serial", C_TEXT, false},
    {"model|model name|asset model|device type", "model", C_TEXT, false},
    {"vendor|manufacturer", "vendor", C_TEXT, false},
    {"kind|category|role|device role", "kind", C_KIND, false},
    {"stage|status|status label", "stage", C_STAGE, false},
    {"purchase date", "purchase_date", C_DATE, false},
    {"purchase cost|cost", "purchase_cost", C_COST, false},
    {"currency", "currency", C_TEXT, false},
    {"warranty|warranty months", "warranty_months", C_MONTHS, false},
    {"warranty end|warranty expires", "warranty_end", C_DATE, false},
    {"lease end", "lease_end", C_DATE, false},
    {"order number|order #|order no.|order no|order num|order", "order_number", C_TEXT, false},
    {"supplier", "supplier", C_TEXT, false},
    {"datacenter|data center|location|site", "datacenter", C_TEXT, true},
    {"room", "room", C_TEXT, true},
    /* NetBox: a location inside the site, when a site column names the
     * data center (see column_of). */
    {"location", "room", C_TEXT, true},
    {"rack", "rack", C_TEXT, true},
    {"u|rack u|position", "u", C_INTEGER, true},
    {"storage", "storage", C_TEXT, true},
    {"epc", "epc", C_TEXT, false},
    {"parent|parent tag", "parent", C_TEXT, false},
    {"parent serial", "parent_serial", C_TEXT, false},
    {"depreciation years|depreciation", "depreciation_years", C_NUMBER, false},
    {"salvage|salvage value", "salvage", C_COST, false},
    {"gpu uuid", "gpu_uuid", C_TEXT, false},
    {NULL, NULL, C_TEXT, false},
};

/* One header column: what it fills, and the error field name that
 * points back at it. */
struct column {
    const struct alias *a; /* NULL: a custom field */
    char custom[128];      /* the custom field's name */
    char header[128];      /* as written */
};

/* The header name lower-cased, '_' as ' ', spaces collapsed, trimmed. */
static void norm_header(const char *in, char *out, size_t len)
{
    size_t n = 0;
    bool space = false;

    for (; *in && n + 1 < len; in++) {
        char ch = *in == '_' ? ' ' : (char)tolower((unsigned char)*in);
        if (ch == ' ') {
            space = n > 0;
            continue;
        }
        if (space && n + 2 < len)
            out[n++] = ' ';
        space = false;
        out[n++] = ch;
    }
    out[n] = '\0';
}

static bool name_in(const char *names, const char *h)
{
    size_t hl = strlen(h);

    for (const char *p = names; *p;) {
        const char *e = strchr(p, '|');
        size_t l = e ? (size_t)(e - p) : strlen(p);
        if (l == hl && strncmp(p, h, l) == 0)
            return true;
        p = e ? e + 1 : p + l;
    }
    return false;
}

static void column_of(const char *header, bool has_site, struct column *col)
{
    char h[128];

    memset(col, 0, sizeof *col);
    gi_strlcpy(col->header, header, sizeof col->header);
    if (strncmp(header, "custom.", 7) == 0) {
        gi_strlcpy(col->custom, header + 7, sizeof col->custom);
        return;
    }
    norm_header(header, h, sizeof h);
    for (const struct alias *a = aliases; a->names; a++)
        if (name_in(a->names, h) &&
            !(has_site && strcmp(h, "location") == 0 && !strcmp(a->field, "datacenter"))) {
            col->a = a;
            return;
        }
    gi_strlcpy(col->custom, header, sizeof col->custom);
}

/* The field name the store reports for a column's value. */
static const char *error_field(const struct column *col, char *buf, size_t len)
{
    if (!col->a)
        return "custom";
    if (col->a->loc)
        snprintf(buf, len, "location.%s", col->a->field);
    else if (strcmp(col->a->field, "currency") == 0)
        snprintf(buf, len, "purchase_cost.currency");
    else
        snprintf(buf, len, "%s", col->a->field);
    return buf;
}

/* Category words to a kind, the first word found deciding (a "GPU
 * Server" is a server); NULL when none fits. */
static const char *kind_of(const char *v)
{
    static const struct {
        const char *word, *kind;
    } words[] = {
        {"server", "server"}, {"gpu", "gpu"},       {"graphics", "gpu"}, {"accelerator", "gpu"},
        {"psu", "psu"},       {"power", "psu"},     {"ssd", "ssd"},      {"nvme", "ssd"},
        {"disk", "ssd"},      {"drive", "ssd"},     {"nic", "nic"},      {"hca", "nic"},
        {"network", "nic"},   {"switch", "switch"}, {"other", "other"},  {NULL, NULL}};
    char low[128];

    norm_header(v, low, sizeof low);
    for (int i = 0; words[i].word; i++)
        if (strstr(low, words[i].word))
            return words[i].kind;
    return NULL;
}

/* Status names (Snipe-IT's default labels, NetBox's device statuses, the
 * stages and their display names) to a stage; NULL when none fits. */
static const char *stage_of(const char *v)
{
    static const struct {
        const char *names, *stage;
    } map[] = {
        {"ordered|planned|on order", "ordered"},
        {"received|pending|staged", "received"},
        {"active|deployed|in use", "active"},
        {"spare|ready to deploy|inventory|offline|in stock", "spare"},
        {"diagnostic repair|diagnostic & repair|diagnostic and repair|repair|broken|out for "
         "repair|out for diagnostics|failed",
         "diagnostic_repair"},
        {"refurbishment candidate|refurbishment|refurbish", "refurbishment_candidate"},
        {"decommissioned|decommissioning|archived|retired|lost/stolen|lost|stolen|disposed",
         "decommissioned"},
        {NULL, NULL},
    };
    char low[128];

    norm_header(v, low, sizeof low);
    for (int i = 0; map[i].names; i++)
        if (name_in(map[i].names, low))
            return map[i].stage;
    return NULL;
}

/* A locale-formatted amount ("1,234.56", "1.234,56", "$ 1 234,56") as
 * plain decimal text into out; false when it is no amount. With both
 * separators the last one is the decimal point; with one kind only, it
 * separates thousands when it occurs more than once or is followed by
 * exactly three digits and is a comma, else it is the decimal point. */
static bool amount_of(const char *v, char *out, size_t len)
{
    char digits[64];
    size_t n = 0;
    const char *last_dot = strrchr(v, '.'), *last_comma = strrchr(v, ',');
    char dec = 0;
    int dots = 0, commas = 0;

    for (const char *p = v; *p; p++) {
        dots += *p == '.';
        commas += *p == ',';
    }
    if (dots && commas)
        dec = last_dot > last_comma ? '.' : ',';
    else if (commas == 1 && strlen(last_comma + 1) != 3)
        dec = ',';
    else if (dots == 1)
        dec = '.';
    for (const char *p = v; *p; p++) {
        if (isdigit((unsigned char)*p)) {
            if (n + 2 >= sizeof digits)
                return false;
            digits[n++] = *p;
        } else if (*p == dec) {
            digits[n++] = '.';
        } else if (*p == '.' || *p == ',' || *p == ' ' || *p == '\'' || *p == '$' ||
                   (unsigned char)*p >= 0x80 || isalpha((unsigned char)*p)) {
            /* thousands separators, currency signs and codes */
            if (isalpha((unsigned char)*p) && n > 0 && isdigit((unsigned char)p[1]))
                return false;
        } else {
            return false;
        }
    }
    digits[n] = '\0';
    if (n == 0 || digits[0] == '.')
        return false;
    return gi_strlcpy(out, digits, len);
}

/* "36", "36 months", "3 years" as months; -1 when unreadable. */
static int64_t months_of(const char *v)
{
    char *end;
    long long n;

    while (*v == ' ')
        v++;
    if (!isdigit((unsigned char)*v))
        return -1;
    n = strtoll(v, &end, 10);
    while (*end == ' ')
        end++;
    if (n < 0 || n > 1200)
        return -1;
    if (*end == '\0' || strncmp(end, "month", 5) == 0 || strncmp(end, "Month", 5) == 0)
        return n;
    if (strncmp(end, "year", 4) == 0 || strncmp(end, "Year", 4) == 0)
        return n * 12 <= 1200 ? n * 12 : -1;
    return -1;
}

/* A custom cell: true/false and canonical numbers as JSON values (as the
 * export writes them), anything else as text. */
static json_t *custom_value(const char *v)
{
    json_error_t jerr;
    json_t *j;

    if (strcmp(v, "true") == 0)
        return json_true();
    if (strcmp(v, "false") == 0)
        return json_false();
    if ((isdigit((unsigned char)v[0]) || (v[0] == '-' && isdigit((unsigned char)v[1]))) &&
        (j = json_loads(v, JSON_DECODE_ANY, &jerr)) != NULL) {
        if (json_is_number(j)) {
            char *back = json_dumps(j, JSON_ENCODE_ANY);
            bool same = back && strcmp(back, v) == 0;
            free(back);
            if (same)
                return j;
        }
        json_decref(j);
    }
    return json_string(v);
}

/* One cell into the record; false with a problem recorded. */
static bool put_cell(struct import_report *im, size_t line, const struct column *col, const char *v,
                     json_t *rec)
{
    json_t *target = rec;
    const char *field;
    char buf[64], efield[64];

    if (!col->a) {
        json_t *custom = json_object_get(rec, "custom");
        if (!custom)
            json_object_set_new(rec, "custom", custom = json_object());
        json_object_set_new(custom, col->custom, custom_value(v));
        return true;
    }
    field = col->a->field;
    if (col->a->loc) {
        target = json_object_get(rec, "location");
        if (!target)
            json_object_set_new(rec, "location", target = json_object());
    }
    error_field(col, efield, sizeof efield);
    switch (col->a->kind) {
    case C_KIND: {
        const char *k = kind_of(v);
        if (!k) {
            import_problem(im, line, col->header, "kind",
                           "not a kind: server, gpu, psu, ssd, nic, switch or other");
            return false;
        }
        json_object_set_new(target, field, json_string(k));
        return true;
    }
    case C_STAGE: {
        const char *s = stage_of(v);
        if (!s) {
            import_problem(im, line, col->header, "stage", "no lifecycle stage has this status");
            return false;
        }
        json_object_set_new(target, field, json_string(s));
        return true;
    }
    case C_COST:
        if (!amount_of(v, buf, sizeof buf)) {
            import_problem(im, line, col->header, efield, "not an amount");
            return false;
        }
        json_object_set_new(target, field, json_string(buf));
        return true;
    case C_MONTHS: {
        int64_t m = months_of(v);
        if (m < 0) {
            import_problem(im, line, col->header, efield, "not a number of months");
            return false;
        }
        json_object_set_new(target, field, json_integer(m));
        return true;
    }
    case C_DATE:
        /* "2024-01-31 00:00:00" as exported by asset managers */
        gi_strlcpy(buf, v, sizeof buf);
        if (strlen(buf) > 10 && (buf[10] == ' ' || buf[10] == 'T'))
            buf[10] = '\0';
        json_object_set_new(target, field, json_string(buf));
        return true;
    case C_NUMBER:
    case C_INTEGER:
    case C_TEXT:
    default:
        json_object_set_new(target, field, json_string(v));
        return true;
    }
}

void api_assets_import(struct req *r)
{
    struct import_report im;
    struct store_asset_err err = {0};
    struct csv c;
    struct column *cols = NULL;
    size_t ncols = 0;
    bool has_site = false;
    json_t *recs = json_array(), *lines = json_array(), *tags = json_object(), *report = NULL;
    int st;

    if (!import_open_or_reply(r, &c, &im))
        goto cleanup;
    ncols = c.nfields;
    if ((cols = calloc(ncols + 1, sizeof *cols)) == NULL) {
        reply_error(r, 500, "internal", NULL, "out of memory");
        goto cleanup;
    }
    for (size_t i = 0; i < ncols; i++) {
        char h[128];
        norm_header(json_string_value(json_array_get(im.header, i)), h, sizeof h);
        has_site = has_site || strcmp(h, "site") == 0;
    }
    for (size_t i = 0; i < ncols; i++)
        column_of(json_string_value(json_array_get(im.header, i)), has_site, &cols[i]);
    while ((st = import_next_row_or_reply(r, &c, &im, ASSET_IMPORT_MAX_ROWS)) == 1) {
        json_t *rec = json_object();
        bool ok = true;
        const char *tag;
        if (c.nfields > ncols) {
            import_problem(&im, c.record_line, NULL, NULL, "more cells than header columns");
            json_decref(rec);
            continue;
        }
        for (size_t i = 0; i < c.nfields; i++) {
            const char *v = import_unneutralize(c.fields[i]);
            if (*v == '\0')
                continue;
            if (cols[i].header[0] == '\0') {
                char name[16];
                import_column(&im, i, name, sizeof name);
                import_problem(&im, c.record_line, name, NULL,
                               "a value in a column without a header name");
                ok = false;
                continue;
            }
            ok = put_cell(&im, c.record_line, &cols[i], v, rec) && ok;
        }
        tag = json_string_value(json_object_get(rec, "tag"));
        if (ok && tag && json_object_get(tags, tag)) {
            import_problem(&im, c.record_line, "tag", "tag",
                           "the same asset tag appears twice in this file");
            ok = false;
        }
        if (ok && tag)
            json_object_set_new(tags, tag, json_true());
        if (ok) {
            json_array_append_new(recs, rec);
            json_array_append_new(lines, json_integer((json_int_t)c.record_line));
        } else {
            json_decref(rec);
        }
    }
    if (st < 0 || !import_verdict_or_reply(r, &im))
        goto cleanup;
    /* each row's asset where it is (by tag) and where the row puts it */
    for (size_t i = 0; i < json_array_size(recs); i++) {
        const json_t *rec = json_array_get(recs, i);
        const char *tag = json_string_value(json_object_get(rec, "tag"));
        int64_t dc = 0;
        bool known = tag && r->who.n_dcs > 0 && store_asset_dc(r->store, tag, NULL, &dc) == GI_OK;
        if ((known && !who_may_dc_or_reply(r, dc)) ||
            !who_may_asset_record_or_reply(r, rec, !known))
            goto cleanup;
    }
    st = store_asset_import(r->store, r->who.name, recs, im.dry_run, &report, &err);
    if (st == GI_INVALID || st == GI_CONFLICT) {
        size_t line = (size_t)json_integer_value(json_array_get(lines, (size_t)err.index));
        const char *column = err.field;
        char ef[64];
        /* The column that holds the field the store refused. */
        for (size_t i = 0; i < ncols; i++)
            if (strcmp(error_field(&cols[i], ef, sizeof ef), err.field) == 0 ||
                (strcmp(err.field, "warranty_months") == 0 && cols[i].a &&
                 strcmp(cols[i].a->field, "warranty_months") == 0)) {
                column = cols[i].header;
                break;
            }
        import_problem(&im, line, column, err.field, err.message);
        if (st == GI_INVALID)
            import_verdict_or_reply(r, &im);
        else
            import_conflict_reply(r, &im);
    } else if (st != GI_OK) {
        reply_status(r, st, "import");
    } else if (im.dry_run) {
        import_dry_run_reply(r, &im, json_incref(report));
    } else {
        json_object_set_new(report, "rows", json_integer((json_int_t)im.rows));
        reply_json(r, 200, json_incref(report));
    }
cleanup:
    free(cols);
    csv_free(&c);
    import_report_free(&im);
    json_decref(recs);
    json_decref(lines);
    json_decref(tags);
    json_decref(report);
    malloc_trim(0);
}

/* row[key] = v, or null when v is absent. */
static void setv(json_t *row, const char *key, json_t *v)
{
    json_object_set(row, key, v ? v : json_null());
}

json_t *api_asset_csv_rows(json_t *items)
{
    static const char *const plain[] = {"tag",    "kind",  "serial", "epc",
                                        "vendor", "model", "parent", NULL};
    static const char *const after[] = {"stage",        "purchase_date", "purchase_cost",
                                        "currency",     "supplier",      "order_number",
                                        "warranty_end", "lease_end",     "depreciation_years",
                                        "salvage",      "gpu_uuid",      NULL};
    json_t *rows = json_array(), *keys = json_object(), *a, *v;
    const char *k;
    size_t i;

    json_array_foreach(items, i, a) {
        json_object_foreach(json_object_get(a, "custom"), k, v)
            json_object_set_new(keys, k, json_true());
    }
    json_array_foreach(items, i, a) {
        json_t *row = json_object(), *loc = json_object_get(a, "location");
        const json_t *cost = json_object_get(a, "purchase_cost");
        const json_t *salv = json_object_get(a, "salvage");
        for (const char *const *p = plain; *p; p++)
            setv(row, *p, json_object_get(a, *p));
        setv(row, "datacenter", json_object_get(loc, "datacenter"));
        setv(row, "room", json_object_get(loc, "room"));
        setv(row, "rack", json_object_get(loc, "rack"));
        setv(row, "u", json_object_get(loc, "u"));
        setv(row, "storage", json_object_get(loc, "storage"));
        for (const char *const *p = after; *p; p++) {
            if (strcmp(*p, "purchase_cost") == 0)
                setv(row, *p, json_object_get(cost, "amount"));
            else if (strcmp(*p, "salvage") == 0)
                setv(row, *p, json_object_get(salv, "amount"));
            else
                setv(row, *p, json_object_get(a, *p));
        }
        json_object_foreach(keys, k, v) {
            char name[160];
            json_t *cv = json_object_get(json_object_get(a, "custom"), k);
            snprintf(name, sizeof name, "custom.%s", k);
            setv(row, name, cv ? cv : json_null());
        }
        json_array_append_new(rows, row);
    }
    json_decref(keys);
    json_decref(items);
    return rows;
}
