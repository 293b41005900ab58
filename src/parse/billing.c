/* Cloud billing exports; see billing.h. */
#include "parse/billing.h"
#include "core/money.h"
#include "core/status.h"
#include "core/util.h"
#include "parse/csv.h"

#include <ctype.h>
#include <sodium.h>
#include <stdarg.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <strings.h>
#include <time.h>

/* The columns one provider's lines are read from: each is a list of
 * normalized names (lower case, letters and digits only), the first
 * present in the header winning. */
enum col {
    C_LINE_ID,
    C_INTERVAL,
    C_ACCOUNT,
    C_START,
    C_END,
    C_USAGE_TYPE,
    C_RESOURCE,
    C_RESOURCE_NAME,
    C_COST,
    C_CURRENCY,
    C_ITYPE,
    C_TAGS,
    C_SKU,
    C_SYSLABELS,
    C_CREDITS,
    C_METER_CAT,
    C_METER_SUB,
    C_METER_NAME,
    C_PRODUCT,
    C_ADDINFO,
    C__COUNT
};

struct provider {
    const char *name;
    const char *const *cols[C__COUNT];
    enum col required[4]; /* C__COUNT ends the list */
};

#define L(...)                                                                                     \
    (const char *const[]) { __VA_ARGS__, NULL }

static const struct provider aws = {
    "aws",
    {
        [C_LINE_ID] = L("identitylineitemid"),
        [C_INTERVAL] = L("identitytimeinterval"),
        [C_ACCOUNT] = L("lineitemusageaccountid", "billpayeraccountid"),
        [C_START] = L("lineitemusagestartdate"),
        [C_END] = L("lineitemusageenddate"),
        [C_USAGE_TYPE] = L("lineitemusagetype"),
        [C_RESOURCE] = L("lineitemresourceid"),
        [C_COST] = L("lineitemunblendedcost", "lineitemblendedcost"),
        [C_CURRENCY] = L("lineitemcurrencycode"),
        [C_ITYPE] = L("productinstancetype"),
        [C_TAGS] = L("resourcetags"),
    },
    {C_START, C_COST, C__COUNT},
};

static const struct provider gcp = {
    "gcp",
    {
        [C_ACCOUNT] = L("billingaccountid"),
        [C_START] = L("usagestarttime"),
        [C_END] = L("usageendtime"),
        [C_RESOURCE] = L("resourceglobalname"),
        [C_RESOURCE_NAME] = L("resourcename"),
        [C_COST] = L("cost"),
        [C_CURRENCY] = L("currency"),
        [C_TAGS] = L("labels"),
        [C_SKU] = L("skudescription"),
        [C_SYSLABELS] = L("systemlabels"),
        [C_CREDITS] = L("credits"),
    },
    {C_START, C_COST, C_SKU, C__COUNT},
};

static const struct provider azure = {
    "azure",
    {
        [C_ACCOUNT] = L("subscriptionid", "subscriptionguid"),
        [C_START] = L("date", "usagedatetime", "usagedate"),
        [C_RESOURCE] = L("resourceid", "instanceid"),
        [C_COST] = L("costinbillingcurrency", "pretaxcost", "cost"),
        [C_CURRENCY] = L("billingcurrency", "billingcurrencycode", "currency", "currencycode"),
        [C_TAGS] = L("tags"),
        [C_METER_CAT] = L("metercategory"),
        [C_METER_SUB] = L("metersubcategory"),
        [C_METER_NAME] = L("metername"),
        [C_PRODUCT] = L("productname", "product"),
        [C_ADDINFO] = L("additionalinfo"),
    },
    {C_START, C_COST, C__COUNT},
};

/* What the header says: each column's index (-1 absent), and AWS's
 * legacy tag columns (resourceTags/user:KEY). */
struct layout {
    const struct provider *p;
    int idx[C__COUNT];
    int tagcol[CSV_MAX_FIELDS];
    char tagkey[CSV_MAX_FIELDS][96];
    size_t ntags;
    char names[CSV_MAX_FIELDS][96]; /* header names as written, for messages */
    char norm[CSV_MAX_FIELDS][96];
    size_t ncols;
};

static void normalize(const char *in, char *out, size_t len)
{
    size_t n = 0;

    for (; *in && n + 1 < len; in++)
        if (isalnum((unsigned char)*in))
            out[n++] = (char)tolower((unsigned char)*in);
    out[n] = '\0';
}

static int find_col(const struct layout *lo, const char *norm)
{
    for (size_t i = 0; i < lo->ncols; i++)
        if (strcmp(lo->norm[i], norm) == 0)
            return (int)i;
    return -1;
}

static bool has(const struct layout *lo, const char *norm) { return find_col(lo, norm) >= 0; }

static void problem(struct billing_file *f, size_t line, const char *column, const char *fmt, ...)
    __attribute__((format(printf, 4, 5)));

static void problem(struct billing_file *f, size_t line, const char *column, const char *fmt, ...)
{
    struct billing_problem *p;
    va_list ap;

    f->nerr++;
    if (f->nproblems >= BILLING_MAX_PROBLEMS)
        return;
    if (!f->problems && !(f->problems = calloc(BILLING_MAX_PROBLEMS, sizeof *f->problems)))
        return;
    p = &f->problems[f->nproblems++];
    p->line = line;
    gi_strlcpy(p->column, column ? column : "", sizeof p->column);
    va_start(ap, fmt);
    vsnprintf(p->reason, sizeof p->reason, fmt, ap);
    va_end(ap);
}

/* Reads the header: names, the provider (given or detected) and where
 * each of its columns is. False (with a problem) when the provider cannot
 * be told or a required column is missing. */
static bool read_layout(struct billing_file *f, const struct csv *c, enum billing_format fmt,
                        struct layout *lo)
{
    bool slash = false, camel = false;

    memset(lo, 0, sizeof *lo);
    lo->ncols = c->nfields;
    for (size_t i = 0; i < c->nfields; i++) {
        const char *h = c->fields[i];
        while (*h == ' ')
            h++;
        gi_strlcpy(lo->names[i], h, sizeof lo->names[i]);
        normalize(h, lo->norm[i], sizeof lo->norm[i]);
        slash = slash || strchr(h, '/') != NULL;
        if (strncasecmp(h, "resourceTags/", 13) == 0 && h[13]) {
            const char *k = h + 13;
            if (strncmp(k, "user:", 5) == 0)
                k += 5;
            lo->tagcol[lo->ntags] = (int)i;
            gi_strlcpy(lo->tagkey[lo->ntags++], k, sizeof lo->tagkey[0]);
        }
    }
    if (fmt == BILLING_AUTO) {
        if (has(lo, "lineitemusagestartdate") || has(lo, "lineitemunblendedcost"))
            fmt = BILLING_AWS;
        else if (has(lo, "skudescription") && has(lo, "usagestarttime"))
            fmt = BILLING_GCP;
        else if (has(lo, "metercategory") || has(lo, "pretaxcost") ||
                 has(lo, "costinbillingcurrency") || has(lo, "usagedatetime"))
            fmt = BILLING_AZURE;
        else {
            problem(f, c->record_line, NULL,
                    "the header is not one of an AWS cost and usage report, a GCP billing export "
                    "or Azure cost details; name the format with format=aws|gcp|azure");
            return false;
        }
    }
    f->format = fmt;
    lo->p = fmt == BILLING_AWS ? &aws : fmt == BILLING_GCP ? &gcp : &azure;
    for (int k = 0; k < C__COUNT; k++) {
        lo->idx[k] = -1;
        for (const char *const *n = lo->p->cols[k]; n && *n && lo->idx[k] < 0; n++)
            lo->idx[k] = find_col(lo, *n);
    }
    if (fmt == BILLING_AWS) {
        f->variant = slash ? "aws-cur" : "aws-cur2";
    } else if (fmt == BILLING_GCP) {
        f->variant = "gcp";
    } else {
        int ci = lo->idx[C_COST];
        camel = ci >= 0 && islower((unsigned char)lo->names[ci][0]);
        f->variant = has(lo, "usagedatetime") || has(lo, "pretaxcost") ? "azure-payg"
                     : camel                                           ? "azure-mca"
                                                                       : "azure-ea";
    }
    for (const enum col *k = lo->p->required; *k != C__COUNT; k++) {
        if (lo->idx[*k] >= 0)
            continue;
        problem(f, c->record_line, lo->p->cols[*k][0],
                "a %s export needs this column (any of its spellings: %s%s%s)", lo->p->name,
                lo->p->cols[*k][0], lo->p->cols[*k][1] ? ", " : "",
                lo->p->cols[*k][1] ? lo->p->cols[*k][1] : "");
        return false;
    }
    if (fmt == BILLING_AWS && lo->idx[C_ITYPE] < 0 && lo->idx[C_USAGE_TYPE] < 0) {
        problem(f, c->record_line, "product/instanceType",
                "an AWS export needs product/instanceType or lineItem/UsageType to find GPU "
                "instances");
        return false;
    }
    return true;
}

/* The cell of column k in the current record; "" when absent. */
static const char *cell(const struct layout *lo, const struct csv *c, enum col k)
{
    int i = lo->idx[k];
    return i >= 0 && (size_t)i < c->nfields ? c->fields[i] : "";
}

static const char *colname(const struct layout *lo, enum col k)
{
    return lo->idx[k] >= 0 ? lo->names[lo->idx[k]] : lo->p->cols[k][0];
}

/* ---- time ---- */

static bool digits(const char **p, int n, int *out)
{
    int v = 0;

    for (int i = 0; i < n; i++, (*p)++) {
        if (!isdigit((unsigned char)**p))
            return false;
        v = v * 10 + (**p - '0');
    }
    *out = v;
    return true;
}

static int days_in(int y, int m)
{
    static const int d[] = {31, 28, 31, 30, 31, 30, 31, 31, 30, 31, 30, 31};
    bool leap = (y % 4 == 0 && y % 100 != 0) || y % 400 == 0;
    return m == 2 && leap ? 29 : d[m - 1];
}

/* Reads [T| ]HH:MM[:SS[.fraction]] into h/mi/sec; absent is midnight. */
static bool read_clock(const char **p, int *h, int *mi, int *sec)
{
    *h = *mi = *sec = 0;
    if (**p != 'T' && **p != 't' && **p != ' ')
        return true;
    if (!isdigit((unsigned char)(*p)[1]))
        return true; /* "2026-11-01 UTC" */
    (*p)++;
    if (!digits(p, 2, h) || *(*p)++ != ':' || !digits(p, 2, mi))
        return false;
    if (**p == ':') {
        (*p)++;
        if (!digits(p, 2, sec))
            return false;
        if (**p == '.') {
            int n = 0;
            for ((*p)++; isdigit((unsigned char)**p); (*p)++)
                n++;
            if (n == 0 || n > 9)
                return false;
        }
    }
    return *h <= 23 && *mi <= 59 && *sec <= 60;
}

/* Reads a zone: Z, " UTC", ±HH:MM, ±HHMM, ±HH, or nothing (UTC). */
static bool read_zone(const char **p, int *offset)
{
    int oh = 0, om = 0, sign;

    *offset = 0;
    if (**p == 'Z' || **p == 'z') {
        (*p)++;
        return true;
    }
    if (strcasecmp(*p, " UTC") == 0 || strcasecmp(*p, "UTC") == 0 || strcasecmp(*p, " GMT") == 0) {
        *p += strlen(*p);
        return true;
    }
    if (**p != '+' && **p != '-')
        return true;
    sign = *(*p)++ == '+' ? 1 : -1;
    if (!digits(p, 2, &oh))
        return false;
    if (**p == ':')
        (*p)++;
    if (isdigit((unsigned char)**p) && !digits(p, 2, &om))
        return false;
    if (oh > 23 || om > 59)
        return false;
    *offset = sign * (oh * 3600 + om * 60);
    return true;
}

int billing_time(const char *s, int64_t *out)
{
    const char *p = s;
    int y, mo, d, h, mi, sec, off;
    struct tm tm = {0};
    int64_t t;

    if (!s || !*s)
        return GI_INVALID;
    if (gi_parse_int64(s, 0, INT64_C(253402300799), out) == GI_OK)
        return GI_OK;
    if (isdigit((unsigned char)p[0]) && isdigit((unsigned char)p[1]) &&
        (p[2] == '/' || (p[1] == '/'))) {
        /* MM/DD/YYYY, as Azure EA writes dates; one-digit parts allowed. */
        char *e;
        long m = strtol(p, &e, 10), dd;
        if (*e != '/')
            return GI_INVALID;
        dd = strtol(e + 1, &e, 10);
        if (*e != '/' || !isdigit((unsigned char)e[1]))
            return GI_INVALID;
        p = e + 1;
        if (!digits(&p, 4, &y))
            return GI_INVALID;
        mo = (int)m;
        d = (int)dd;
    } else if (!digits(&p, 4, &y) || *p++ != '-' || !digits(&p, 2, &mo) || *p++ != '-' ||
               !digits(&p, 2, &d)) {
        return GI_INVALID;
    }
    if (mo < 1 || mo > 12 || d < 1 || d > days_in(y, mo) || !read_clock(&p, &h, &mi, &sec) ||
        !read_zone(&p, &off) || *p != '\0')
        return GI_INVALID;
    tm.tm_year = y - 1900;
    tm.tm_mon = mo - 1;
    tm.tm_mday = d;
    tm.tm_hour = h;
    tm.tm_min = mi;
    tm.tm_sec = sec;
    t = (int64_t)timegm(&tm) - off;
    if (t < 0 || t > INT64_C(253402300799))
        return GI_INVALID;
    *out = t;
    return GI_OK;
}

/* ---- what is GPU capacity ---- */

static bool contains_word_ci(const char *s, const char *w)
{
    size_t n = strlen(w);

    for (const char *p = s; *p; p++)
        if (strncasecmp(p, w, n) == 0 && (p == s || !isalnum((unsigned char)p[-1])) &&
            !isalnum((unsigned char)p[n]))
            return true;
    return false;
}

/* AWS: instance families p* and g* (p4d, p5, g5, g6e, gr6, ...) and dl1. */
static bool aws_gpu_type(const char *itype)
{
    const char *dot = strchr(itype, '.');
    size_t fam = dot ? (size_t)(dot - itype) : 0;

    if (fam < 2 || !dot[1])
        return false;
    if ((itype[0] == 'p' || itype[0] == 'g') && isdigit((unsigned char)itype[1]))
        return true;
    if (itype[0] == 'g' && itype[1] == 'r' && isdigit((unsigned char)itype[2]))
        return true;
    return strncmp(itype, "dl1.", 4) == 0;
}

/* GCP: a GPU SKU, or a machine of the GPU families (A2, A3, A4, G2, G4). */
static bool gcp_gpu_sku(const char *sku, const char *spec)
{
    static const char *const fam[] = {"a2", "a3", "a4", "g2", "g4", NULL};

    if (contains_word_ci(sku, "gpu"))
        return true;
    for (const char *const *f = fam; *f; f++) {
        if (strncasecmp(sku, *f, 2) == 0 && sku[2] == ' ' && contains_word_ci(sku, "instance"))
            return true;
        if (strncasecmp(spec, *f, 2) == 0 && spec[2] == '-')
            return true;
    }
    return false;
}

/* Azure: a word naming an N-series VM (NC, ND, NV followed by nothing, a
 * digit or a lower-case letter: "NC24ads", "NCasT4", "ND", "NVadsA10"). */
static bool azure_gpu_text(const char *s)
{
    if (contains_word_ci(s, "gpu"))
        return true;
    for (const char *p = s; *p; p++) {
        bool start = p == s || p[-1] == ' ' || p[-1] == '_' || p[-1] == '-' || p[-1] == '/';
        if (!start || p[0] != 'N' || (p[1] != 'C' && p[1] != 'D' && p[1] != 'V'))
            continue;
        if (!p[2] || p[2] == ' ' || p[2] == '_' || isdigit((unsigned char)p[2]) ||
            islower((unsigned char)p[2]))
            return true;
    }
    return false;
}

/* ---- JSON cells ---- */

/* Parses a JSON cell; Tags written without their outer braces get them.
 * NULL when it is not JSON. Caller owns. */
static json_t *json_cell(const char *v, bool wrap_braces)
{
    json_t *j = json_loads(v, JSON_DECODE_ANY, NULL);
    const char *p = v;

    if (j || !wrap_braces)
        return j;
    while (isspace((unsigned char)*p))
        p++;
    if (*p != '"')
        return NULL;
    {
        size_t n = strlen(v);
        char *w = malloc(n + 3);
        if (!w)
            return NULL;
        w[0] = '{';
        memcpy(w + 1, v, n);
        w[n + 1] = '}';
        w[n + 2] = '\0';
        j = json_loads(w, 0, NULL);
        free(w);
    }
    return j;
}

/* Adds one tag; the key loses AWS's "user:" / "user_" prefix. */
static void tag_add(json_t *tags, const char *key, const char *value)
{
    if (strncmp(key, "user:", 5) == 0 || strncmp(key, "user_", 5) == 0)
        key += 5;
    if (*key && value && *value)
        json_object_set_new(tags, key, json_string(value));
}

/* The line's tags as one object; false when a tags cell is not JSON. */
static bool read_tags(struct billing_file *f, const struct layout *lo, const struct csv *c,
                      json_t *tags)
{
    const char *v = cell(lo, c, C_TAGS);
    json_t *j;

    for (size_t i = 0; i < lo->ntags; i++)
        if ((size_t)lo->tagcol[i] < c->nfields)
            tag_add(tags, lo->tagkey[i], c->fields[lo->tagcol[i]]);
    if (!*v)
        return true;
    j = json_cell(v, true);
    if (json_is_object(j)) {
        const char *k;
        json_t *x;
        json_object_foreach(j, k, x)
            tag_add(tags, k, json_string_value(x));
    } else if (json_is_array(j)) {
        /* GCP labels: [{"key": "team", "value": "vision"}, ...] */
        size_t i;
        json_t *x;
        json_array_foreach(j, i, x) {
            const char *k = json_string_value(json_object_get(x, "key"));
            if (k)
                tag_add(tags, k, json_string_value(json_object_get(x, "value")));
        }
    } else {
        problem(f, c->record_line, colname(lo, C_TAGS),
                "tags must be a JSON object (with or without its braces) or a JSON array of "
                "{\"key\",\"value\"}");
        json_decref(j);
        return false;
    }
    json_decref(j);
    return true;
}

/* GCP credits: a JSON array of {"name", "amount", ...}; the amounts are
 * summed into *micros. False when the cell or an amount is unreadable. */
static bool read_credits(struct billing_file *f, const struct layout *lo, const struct csv *c,
                         int64_t *micros)
{
    const char *v = cell(lo, c, C_CREDITS);
    json_t *j, *x;
    size_t i;
    bool good = true;

    *micros = 0;
    if (!*v)
        return true;
    j = json_loads(v, JSON_DECODE_ANY, NULL);
    if (!json_is_array(j)) {
        problem(f, c->record_line, colname(lo, C_CREDITS),
                "credits must be a JSON array of {\"name\",\"amount\"}");
        json_decref(j);
        return false;
    }
    json_array_foreach(j, i, x) {
        json_t *a = json_object_get(x, "amount");
        char buf[64];
        int64_t m;
        if (json_is_string(a))
            gi_strlcpy(buf, json_string_value(a), sizeof buf);
        else if (json_is_integer(a))
            snprintf(buf, sizeof buf, "%lld", (long long)json_integer_value(a));
        else if (json_is_real(a))
            snprintf(buf, sizeof buf, "%.9f", json_real_value(a));
        else
            buf[0] = '\0';
        if (gi_money_parse(buf, GI_MONEY_LENIENT, true, &m) != GI_OK) {
            problem(f, c->record_line, colname(lo, C_CREDITS), "credit %zu has no readable amount",
                    i + 1);
            good = false;
            break;
        }
        *micros += m;
    }
    json_decref(j);
    return good;
}

/* ---- one line ---- */

static char *dup(const char *s) { return strdup(s ? s : ""); }

/* The last segment of a path ("/.../virtualMachines/vm-1" → "vm-1"). */
static const char *last_segment(const char *s)
{
    const char *slash = strrchr(s, '/');
    return slash ? slash + 1 : s;
}

/* A digest of every cell of the record, for exports without line ids. */
static void row_digest(const struct csv *c, char out[33])
{
    crypto_generichash_state h;
    unsigned char d[16];
    static const unsigned char sep = 0x1f;

    crypto_generichash_init(&h, NULL, 0, sizeof d);
    for (size_t i = 0; i < c->nfields; i++) {
        crypto_generichash_update(&h, (const unsigned char *)c->fields[i], strlen(c->fields[i]));
        crypto_generichash_update(&h, &sep, 1);
    }
    crypto_generichash_final(&h, d, sizeof d);
    gi_hex(d, sizeof d, out);
}

/* The instance type and whether the line is GPU capacity. */
static bool gpu_line(const struct layout *lo, const struct csv *c, json_t *sys, char *itype,
                     size_t len)
{
    itype[0] = '\0';
    if (lo->p == &aws) {
        const char *t = cell(lo, c, C_ITYPE);
        if (!*t) {
            const char *ut = cell(lo, c, C_USAGE_TYPE), *colon = strrchr(ut, ':');
            t = colon ? colon + 1 : "";
        }
        gi_strlcpy(itype, t, len);
        return aws_gpu_type(itype);
    }
    if (lo->p == &gcp) {
        const char *spec = json_string_value(json_object_get(sys, "machine_spec"));
        const char *sku = cell(lo, c, C_SKU);
        gi_strlcpy(itype, spec ? spec : sku, len);
        return gcp_gpu_sku(sku, spec ? spec : "");
    }
    {
        const char *texts[] = {cell(lo, c, C_METER_SUB), cell(lo, c, C_METER_NAME),
                               cell(lo, c, C_PRODUCT), NULL};
        const char *svc = json_string_value(json_object_get(sys, "ServiceType"));
        bool gpu = svc && azure_gpu_text(svc);
        for (int i = 0; !gpu && texts[i]; i++)
            gpu = azure_gpu_text(texts[i]);
        gi_strlcpy(itype, svc ? svc : *texts[1] ? texts[1] : texts[0], len);
        return gpu;
    }
}

/* GCP system_labels ([{key,value}]) or Azure AdditionalInfo ({...}) as an
 * object of strings; an unreadable cell is no information. */
static json_t *side_info(const struct layout *lo, const struct csv *c)
{
    json_t *o = json_object(), *j;
    const char *v = cell(lo, c, lo->p == &gcp ? C_SYSLABELS : C_ADDINFO);

    if (!*v)
        return o;
    j = json_cell(v, true);
    if (json_is_array(j)) {
        size_t i;
        json_t *x;
        json_array_foreach(j, i, x) {
            const char *k = json_string_value(json_object_get(x, "key"));
            const char *val = json_string_value(json_object_get(x, "value"));
            if (k && val)
                json_object_set_new(o, last_segment(k), json_string(val));
        }
    } else if (json_is_object(j)) {
        json_object_update(o, j);
    }
    json_decref(j);
    return o;
}

static bool read_money(struct billing_file *f, const struct layout *lo, const struct csv *c,
                       enum col k, int64_t *micros)
{
    const char *v = cell(lo, c, k);

    if (gi_money_parse(v, GI_MONEY_LENIENT, true, micros) == GI_OK)
        return true;
    problem(f, c->record_line, colname(lo, k), "%s is not a number: '%.60s'", colname(lo, k), v);
    return false;
}

static bool read_time(struct billing_file *f, const struct layout *lo, const struct csv *c,
                      enum col k, const char *v, int64_t *t)
{
    if (billing_time(v, t) == GI_OK)
        return true;
    problem(f, c->record_line, colname(lo, k), "%s is not a time: '%.60s'", colname(lo, k), v);
    return false;
}

/* Reads the record's usage interval. */
static bool read_interval(struct billing_file *f, const struct layout *lo, const struct csv *c,
                          struct billing_line *l)
{
    const char *s = cell(lo, c, C_START), *e = cell(lo, c, C_END);

    if (!read_time(f, lo, c, C_START, s, &l->start))
        return false;
    if (*e) {
        if (!read_time(f, lo, c, C_END, e, &l->end))
            return false;
    } else {
        /* Azure rows are days; AWS and GCP rows without an end, hours. */
        l->end = l->start + (lo->p == &azure ? 86400 : 3600);
    }
    if (l->end < l->start) {
        problem(f, c->record_line, colname(lo, C_END), "the usage ends before it starts");
        return false;
    }
    return true;
}

static bool read_line(struct billing_file *f, const struct layout *lo, const struct csv *c,
                      struct billing_line *l, json_t *seen)
{
    json_t *sys = side_info(lo, c);
    char itype[128], key[192], digest[33];
    const char *cur, *team, *res = cell(lo, c, C_RESOURCE), *lid;
    int64_t credits = 0;
    bool good;

    memset(l, 0, sizeof *l);
    if (!gpu_line(lo, c, sys, itype, sizeof itype)) {
        json_decref(sys);
        f->skipped++;
        return false;
    }
    l->line = c->record_line;
    l->provider = lo->p->name;
    l->tags = json_object();
    /* Every cell is checked, so that one pass names all of a line's problems. */
    good = read_interval(f, lo, c, l);
    good = read_money(f, lo, c, C_COST, &l->cost_micros) && good;
    good = read_tags(f, lo, c, l->tags) && good;
    if (lo->p == &gcp)
        good = read_credits(f, lo, c, &credits) && good;
    cur = cell(lo, c, C_CURRENCY);
    if (good && *cur) {
        char up[4] = {0};
        for (int i = 0; i < 3 && cur[i]; i++)
            up[i] = (char)toupper((unsigned char)cur[i]);
        if (strlen(cur) != 3 || !gi_currency_ok(up)) {
            problem(f, c->record_line, colname(lo, C_CURRENCY),
                    "the currency must be a 3-letter code: '%.20s'", cur);
            good = false;
        }
        l->currency = dup(up);
    }
    if (!good) {
        json_decref(sys);
        return true;
    }
    if (!l->currency)
        l->currency = dup("USD");
    l->credits_micros = credits;
    l->cost_micros += credits;
    l->instance_type = dup(itype);
    l->account = dup(cell(lo, c, C_ACCOUNT));
    /* The instance: AWS's id, GCP's numeric id (the global name's last
     * segment) beside its name, Azure's resource path beside its VM name. */
    if (lo->p == &gcp) {
        l->resource_id = dup(*res ? last_segment(res) : "");
        l->resource_name = dup(cell(lo, c, C_RESOURCE_NAME));
    } else {
        l->resource_id = dup(res);
        l->resource_name = dup(lo->p == &azure && *res ? last_segment(res) : "");
    }
    team = NULL;
    {
        const char *k;
        json_t *x;
        json_object_foreach(l->tags, k, x)
            if (strcasecmp(k, "team") == 0)
                team = json_string_value(x);
    }
    l->team = dup(team);
    lid = cell(lo, c, C_LINE_ID);
    if (*lid) {
        snprintf(key, sizeof key, "%s/%s", lid, cell(lo, c, C_INTERVAL));
    } else {
        /* The same cells twice in one file are two lines: the second gets
         * its occurrence number, so re-importing the file still adds
         * nothing. */
        json_int_t n;
        row_digest(c, digest);
        n = json_integer_value(json_object_get(seen, digest)) + 1;
        json_object_set_new(seen, digest, json_integer(n));
        if (n > 1)
            snprintf(key, sizeof key, "%s#%lld", digest, (long long)n);
        else
            snprintf(key, sizeof key, "%s", digest);
    }
    l->line_key = dup(key);
    json_decref(sys);
    return true;
}

static void line_free(struct billing_line *l)
{
    free(l->account);
    free(l->line_key);
    free(l->resource_id);
    free(l->resource_name);
    free(l->instance_type);
    free(l->currency);
    free(l->team);
    json_decref(l->tags);
    memset(l, 0, sizeof *l);
}

/* True when every string of a kept line was allocated. */
static bool line_complete(const struct billing_line *l)
{
    return l->account && l->line_key && l->resource_id && l->resource_name && l->instance_type &&
           l->currency && l->team && l->tags;
}

int billing_parse(const char *data, size_t len, enum billing_format fmt, size_t max_rows,
                  struct billing_file *out)
{
    struct csv c;
    struct layout *lo = calloc(1, sizeof *lo);
    json_t *seen = json_object();
    int st, rc = GI_OK;

    memset(out, 0, sizeof *out);
    csv_init(&c, data, len);
    if (!lo || !seen) {
        rc = GI_INTERNAL;
        goto cleanup;
    }
    if ((st = csv_next(&c)) != 1) {
        if (st == 0)
            problem(out, 1, NULL, "the file is empty; a header row is required");
        else
            problem(out, c.error_line, NULL, "header: %s", c.error);
        goto cleanup;
    }
    if (!read_layout(out, &c, fmt, lo))
        goto cleanup;
    while ((st = csv_next(&c)) != 0) {
        struct billing_line l;
        bool blank = true;
        if (st < 0) {
            char col[96];
            snprintf(col, sizeof col, "%s",
                     c.error_field >= 1 && c.error_field <= lo->ncols ? lo->names[c.error_field - 1]
                                                                      : "");
            problem(out, c.error_line, col, "%s", c.error);
            if (!c.resumable)
                break;
            continue;
        }
        for (size_t i = 0; i < c.nfields; i++)
            blank = blank && c.fields[i][0] == '\0';
        if (blank)
            continue;
        if (++out->rows > max_rows) {
            rc = GI_TOO_LARGE;
            goto cleanup;
        }
        if (!read_line(out, lo, &c, &l, seen))
            continue;
        if (!l.line_key) { /* invalid: its problems are recorded */
            line_free(&l);
            continue;
        }
        if (!line_complete(&l)) {
            line_free(&l);
            rc = GI_INTERNAL;
            goto cleanup;
        }
        if (out->n == out->cap) {
            size_t nc = out->cap ? out->cap * 2 : 64;
            struct billing_line *nl = realloc(out->lines, nc * sizeof *nl);
            if (!nl) {
                line_free(&l);
                rc = GI_INTERNAL;
                goto cleanup;
            }
            out->lines = nl;
            out->cap = nc;
        }
        out->lines[out->n++] = l;
    }
cleanup:
    if (rc == GI_OK && out->nerr > 0)
        rc = GI_INVALID;
    csv_free(&c);
    free(lo);
    json_decref(seen);
    return rc;
}

void billing_file_free(struct billing_file *f)
{
    for (size_t i = 0; i < f->n; i++)
        line_free(&f->lines[i]);
    free(f->lines);
    free(f->problems);
    memset(f, 0, sizeof *f);
}

bool billing_format_from_name(const char *name, enum billing_format *out)
{
    static const struct {
        const char *name;
        enum billing_format f;
    } names[] = {{"auto", BILLING_AUTO},
                 {"aws", BILLING_AWS},
                 {"gcp", BILLING_GCP},
                 {"azure", BILLING_AZURE}};

    for (size_t i = 0; name && i < sizeof names / sizeof *names; i++)
        if (strcmp(name, names[i].name) == 0) {
            *out = names[i].f;
            return true;
        }
    return false;
}
