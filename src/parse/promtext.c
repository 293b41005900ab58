/* Prometheus text exposition format 0.0.4 parser; see promtext.h.
 *
 * The input is split into lines with memchr; each line is lexed once,
 * left to right. Names and unescaped label values are copied into one
 * scratch buffer sized for the longest allowed line (an unescaped line
 * never needs more bytes than its raw form), so a parse makes exactly
 * one allocation. */
#include "parse/promtext.h"
#include "core/status.h"

#include <errno.h>
#include <stdarg.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

/* Character classes: bit 1 may start a metric name, bit 2 may continue
 * one, bit 4 may start a label name (no ':'), bit 8 a blank. */
enum { C_NAME0 = 1, C_NAME = 2, C_LABEL0 = 4, C_BLANK = 8 };

static const unsigned char cls[256] = {
    ['\t'] = C_BLANK,
    [' '] = C_BLANK,
    [':'] = C_NAME0 | C_NAME,
    ['_'] = C_NAME0 | C_NAME | C_LABEL0,
    ['0'] = C_NAME,
    ['1'] = C_NAME,
    ['2'] = C_NAME,
    ['3'] = C_NAME,
    ['4'] = C_NAME,
    ['5'] = C_NAME,
    ['6'] = C_NAME,
    ['7'] = C_NAME,
    ['8'] = C_NAME,
    ['9'] = C_NAME,
#define L(c) [c] = C_NAME0 | C_NAME | C_LABEL0
    L('a'),
    L('b'),
    L('c'),
    L('d'),
    L('e'),
    L('f'),
    L('g'),
    L('h'),
    L('i'),
    L('j'),
    L('k'),
    L('l'),
    L('m'),
    L('n'),
    L('o'),
    L('p'),
    L('q'),
    L('r'),
    L('s'),
    L('t'),
    L('u'),
    L('v'),
    L('w'),
    L('x'),
    L('y'),
    L('z'),
    L('A'),
    L('B'),
    L('C'),
    L('D'),
    L('E'),
    L('F'),
    L('G'),
    L('H'),
    L('I'),
    L('J'),
    L('K'),
    L('L'),
    L('M'),
    L('N'),
    L('O'),
    L('P'),
    L('Q'),
    L('R'),
    L('S'),
    L('T'),
    L('U'),
    L('V'),
    L('W'),
    L('X'),
    L('Y'),
    L('Z'),
#undef L
};

#define IS(c, k) (cls[(unsigned char)(c)] & (k))

/* State of one parse. */
struct parser {
    prom_sample_fn fn;
    void *ctx;
    struct prom_error *err;
    size_t line;
    size_t nsamples;
    char *buf;                      /* scratch: names and values of one line */
    char family[PROM_MAX_NAME + 1]; /* family of the last # TYPE line */
    size_t family_len;
    enum prom_type family_type;
    struct prom_label labels[PROM_MAX_LABELS];
};

/* Records an error at the current line and returns st. */
__attribute__((format(printf, 3, 4))) static int fail(struct parser *ps, int st, const char *fmt,
                                                      ...)
{
    char why[200];
    va_list ap;

    va_start(ap, fmt);
    vsnprintf(why, sizeof why, fmt, ap);
    va_end(ap);
    ps->err->line = ps->line;
    snprintf(ps->err->msg, sizeof ps->err->msg, "line %zu: %s", ps->line, why);
    return st;
}

/* Writes a token into out (capacity 40) for an error message: at most 32
 * bytes, bytes outside printable ASCII shown as '?'. */
static const char *shown(const char *s, size_t n, char out[40])
{
    size_t k = n > 32 ? 32 : n;

    for (size_t i = 0; i < k; i++)
        out[i] = (s[i] >= 0x20 && s[i] < 0x7f) ? s[i] : '?';
    memcpy(out + k, n > 32 ? "..." : "", n > 32 ? 4 : 1);
    return out;
}

static size_t skip_blanks(const char *s, size_t i, size_t n)
{
    while (i < n && IS(s[i], C_BLANK))
        i++;
    return i;
}

/* Length of the valid UTF-8 sequence starting at s[0] (a byte >= 0x80),
 * or 0 when it is not one. avail bytes are readable. */
static size_t utf8_len(const unsigned char *s, size_t avail)
{
    unsigned char c = s[0];
    size_t need;
    unsigned char lo = 0x80, hi = 0xbf;

    if (c >= 0xc2 && c <= 0xdf) {
        need = 1;
    } else if (c >= 0xe0 && c <= 0xef) {
        need = 2;
        if (c == 0xe0)
            lo = 0xa0;
        else if (c == 0xed)
            hi = 0x9f;
    } else if (c >= 0xf0 && c <= 0xf4) {
        need = 3;
        if (c == 0xf0)
            lo = 0x90;
        else if (c == 0xf4)
            hi = 0x8f;
    } else {
        return 0;
    }
    if (avail < need + 1 || s[1] < lo || s[1] > hi)
        return 0;
    for (size_t i = 2; i <= need; i++)
        if (s[i] < 0x80 || s[i] > 0xbf)
            return 0;
    return need + 1;
}

int prom_parse_value(const char *s, size_t len, double *out)
{
    char tmp[64];
    char *end = NULL;

    if (len == 0 || len >= sizeof tmp)
        return -1;
    /* Only what decimal numbers, NaN, Inf and Infinity are made of: strtod
     * would also skip leading white space and read hex and "nan(…)". */
    for (size_t i = 0; i < len; i++)
        if (!((s[i] >= '0' && s[i] <= '9') || strchr("+-.eEaAfFiInNtTyY", s[i]) != NULL) ||
            s[i] == '\0')
            return -1;
    memcpy(tmp, s, len);
    tmp[len] = '\0';
    /* On ERANGE strtod gives ±HUGE_VAL (±Inf) or a value near zero, as
     * Prometheus does; both are accepted. */
    *out = strtod(tmp, &end);
    return end == tmp + len ? 0 : -1;
}

/* Reads a timestamp token: an optionally signed decimal int64. */
static int parse_ts(const char *s, size_t n, int64_t *out)
{
    char tmp[32];
    char *end = NULL;
    long long v;
    size_t i = 0;

    if (n == 0 || n >= sizeof tmp)
        return -1;
    if (s[0] == '-' || s[0] == '+')
        i++;
    if (i == n)
        return -1;
    for (; i < n; i++)
        if (s[i] < '0' || s[i] > '9')
            return -1;
    memcpy(tmp, s, n);
    tmp[n] = '\0';
    errno = 0;
    v = strtoll(tmp, &end, 10);
    if (errno != 0 || end != tmp + n)
        return -1;
    *out = v;
    return 0;
}

const char *prom_type_name(enum prom_type t)
{
    switch (t) {
    case PROM_COUNTER:
        return "counter";
    case PROM_GAUGE:
        return "gauge";
    case PROM_HISTOGRAM:
        return "histogram";
    case PROM_SUMMARY:
        return "summary";
    case PROM_UNTYPED:
        break;
    }
    return "untyped";
}

const char *prom_label_get(const struct prom_sample *s, const char *name)
{
    for (size_t i = 0; i < s->nlabels; i++)
        if (strcmp(s->labels[i].name, name) == 0)
            return s->labels[i].value;
    return NULL;
}

/* Handles a comment line (s[0] == '#'): # TYPE sets the current family,
 * # HELP and every other comment are ignored. */
static int parse_comment(struct parser *ps, const char *s, size_t n)
{
    static const struct {
        const char *word;
        enum prom_type type;
    } types[] = {{"counter", PROM_COUNTER},
                 {"gauge", PROM_GAUGE},
                 {"histogram", PROM_HISTOGRAM},
                 {"summary", PROM_SUMMARY},
                 {"untyped", PROM_UNTYPED}};
    char tok[40];
    size_t i = skip_blanks(s, 1, n), name0, name_len, w0;

    if (n - i < 5 || memcmp(s + i, "TYPE", 4) != 0 || !IS(s[i + 4], C_BLANK))
        return GI_OK;
    i = skip_blanks(s, i + 5, n);
    name0 = i;
    if (i == n || !IS(s[i], C_NAME0))
        return fail(ps, GI_INVALID, "expected a metric name after # TYPE");
    while (i < n && IS(s[i], C_NAME))
        i++;
    name_len = i - name0;
    if (name_len > PROM_MAX_NAME)
        return fail(ps, GI_TOO_LARGE, "metric name longer than %d bytes", PROM_MAX_NAME);
    if (i < n && !IS(s[i], C_BLANK))
        return fail(ps, GI_INVALID, "unexpected character after the metric name in # TYPE");
    i = skip_blanks(s, i, n);
    w0 = i;
    while (i < n && !IS(s[i], C_BLANK))
        i++;
    if (skip_blanks(s, i, n) != n)
        return fail(ps, GI_INVALID, "unexpected text after the metric type");
    for (size_t k = 0; k < sizeof types / sizeof *types; k++) {
        if (strlen(types[k].word) == i - w0 && memcmp(types[k].word, s + w0, i - w0) == 0) {
            memcpy(ps->family, s + name0, name_len);
            ps->family[name_len] = '\0';
            ps->family_len = name_len;
            ps->family_type = types[k].type;
            return GI_OK;
        }
    }
    if (i == w0)
        return fail(ps, GI_INVALID, "missing metric type in # TYPE");
    return fail(ps, GI_INVALID, "unknown metric type \"%s\"", shown(s + w0, i - w0, tok));
}

/* The type of the metric named name (len bytes): the last # TYPE family
 * when the name is that family, or one of its histogram / summary
 * series. */
static enum prom_type type_of(const struct parser *ps, const char *name, size_t len)
{
    static const char *const suffixes[] = {"_bucket", "_sum", "_count", "_created"};
    size_t fl = ps->family_len;

    if (fl == 0 || len < fl || memcmp(name, ps->family, fl) != 0)
        return PROM_UNTYPED;
    if (len == fl)
        return ps->family_type;
    if (ps->family_type != PROM_HISTOGRAM && ps->family_type != PROM_SUMMARY)
        return PROM_UNTYPED;
    for (size_t k = 0; k < sizeof suffixes / sizeof *suffixes; k++)
        if (strlen(suffixes[k]) == len - fl && memcmp(name + fl, suffixes[k], len - fl) == 0)
            return ps->family_type;
    return PROM_UNTYPED;
}

/* Reads a quoted label value starting after its opening quote at s[*i],
 * unescaping into o. Returns GI_OK with *i after the closing quote and
 * the unescaped length in *vlen, or the status of the recorded error. */
static int read_value(struct parser *ps, const char *s, size_t n, size_t *i, char *o, size_t *vlen)
{
    char *o0 = o;
    size_t k = *i;
    char tok[40];

    for (;;) {
        /* Copy the plain run up to the next quote, backslash, control or
         * non-ASCII byte at once. */
        size_t run = k;
        while (run < n && s[run] != '"' && s[run] != '\\' && (unsigned char)s[run] >= 0x20 &&
               (unsigned char)s[run] < 0x80)
            run++;
        memcpy(o, s + k, run - k);
        o += run - k;
        k = run;
        if (k >= n)
            return fail(ps, GI_INVALID, "unterminated label value");
        unsigned char c = (unsigned char)s[k];
        if (c == '"') {
            k++;
            break;
        }
        if (c == '\\') {
            if (k + 1 >= n)
                return fail(ps, GI_INVALID, "unterminated label value");
            char e = s[k + 1];
            if (e == '\\' || e == '"')
                *o++ = e;
            else if (e == 'n')
                *o++ = '\n';
            else
                return fail(ps, GI_INVALID, "invalid escape \"\\%s\" in label value",
                            shown(s + k + 1, 1, tok));
            k += 2;
        } else if (c >= 0x80) {
            size_t u = utf8_len((const unsigned char *)s + k, n - k);
            if (u == 0)
                return fail(ps, GI_INVALID, "invalid UTF-8 in label value");
            memcpy(o, s + k, u);
            o += u;
            k += u;
        } else if (c == '\0') {
            return fail(ps, GI_INVALID, "NUL byte in label value");
        } else {
            *o++ = (char)c; /* other control bytes (tab, CR) pass through */
            k++;
        }
    }
    if ((size_t)(o - o0) > PROM_MAX_VALUE)
        return fail(ps, GI_TOO_LARGE, "label value longer than %d bytes", PROM_MAX_VALUE);
    *i = k;
    *vlen = (size_t)(o - o0);
    return GI_OK;
}

/* Reads `{label="value",…}` starting at s[*i] == '{' into ps->labels,
 * names and values copied to *o. Returns GI_OK with *i after the '}'. */
static int parse_labels(struct parser *ps, const char *s, size_t n, size_t *i, char **o,
                        size_t *nlabels)
{
    size_t k = *i + 1, nl = 0;
    char *w = *o;

    for (;;) {
        k = skip_blanks(s, k, n);
        if (k >= n)
            return fail(ps, GI_INVALID, "unterminated label set");
        if (s[k] == '}') {
            k++;
            break;
        }
        if (nl == PROM_MAX_LABELS)
            return fail(ps, GI_TOO_LARGE, "more than %d labels", PROM_MAX_LABELS);
        if (!IS(s[k], C_LABEL0))
            return fail(ps, GI_INVALID, "expected a label name");
        size_t l0 = k;
        while (k < n && IS(s[k], C_NAME) && s[k] != ':')
            k++;
        if (k - l0 > PROM_MAX_NAME)
            return fail(ps, GI_TOO_LARGE, "label name longer than %d bytes", PROM_MAX_NAME);
        ps->labels[nl].name = w;
        memcpy(w, s + l0, k - l0);
        w += k - l0;
        *w++ = '\0';
        k = skip_blanks(s, k, n);
        if (k >= n || s[k] != '=')
            return fail(ps, GI_INVALID, "expected '=' after label name");
        k = skip_blanks(s, k + 1, n);
        if (k >= n || s[k] != '"')
            return fail(ps, GI_INVALID, "expected '\"' to open the label value");
        k++;
        size_t vl = 0;
        int rc = read_value(ps, s, n, &k, w, &vl);
        if (rc != GI_OK)
            return rc;
        ps->labels[nl].value = w;
        w += vl;
        *w++ = '\0';
        nl++;
        k = skip_blanks(s, k, n);
        if (k < n && s[k] == ',') {
            k++;
            continue; /* a '}' may follow: trailing comma */
        }
        if (k < n && s[k] == '}') {
            k++;
            break;
        }
        if (k >= n)
            return fail(ps, GI_INVALID, "unterminated label set");
        return fail(ps, GI_INVALID, "expected ',' or '}' after a label value");
    }
    *i = k;
    *o = w;
    *nlabels = nl;
    return GI_OK;
}

/* Parses one line (without its end) and delivers its sample, if any. */
static int parse_line(struct parser *ps, const char *s, size_t n)
{
    struct prom_sample smp;
    char tok[40];
    size_t i = skip_blanks(s, 0, n), name0, name_len, v0;
    char *o = ps->buf;
    int rc;

    if (i == n)
        return GI_OK;
    if (s[i] == '#')
        return parse_comment(ps, s + i, n - i);
    if (!IS(s[i], C_NAME0))
        return fail(ps, GI_INVALID, "expected a metric name");
    name0 = i;
    while (i < n && IS(s[i], C_NAME))
        i++;
    name_len = i - name0;
    if (name_len > PROM_MAX_NAME)
        return fail(ps, GI_TOO_LARGE, "metric name longer than %d bytes", PROM_MAX_NAME);
    memcpy(o, s + name0, name_len);
    o[name_len] = '\0';
    smp.name = o;
    o += name_len + 1;
    smp.nlabels = 0;
    smp.labels = ps->labels;
    if (i < n && !IS(s[i], C_BLANK) && s[i] != '{')
        return fail(ps, GI_INVALID, "unexpected character \"%s\" after the metric name",
                    shown(s + i, 1, tok));
    i = skip_blanks(s, i, n);
    if (i < n && s[i] == '{') {
        if ((rc = parse_labels(ps, s, n, &i, &o, &smp.nlabels)) != GI_OK)
            return rc;
        i = skip_blanks(s, i, n);
    }
    if (i == n)
        return fail(ps, GI_INVALID, "missing value");
    v0 = i;
    while (i < n && !IS(s[i], C_BLANK))
        i++;
    if (prom_parse_value(s + v0, i - v0, &smp.value) != 0)
        return fail(ps, GI_INVALID, "invalid value \"%s\"", shown(s + v0, i - v0, tok));
    i = skip_blanks(s, i, n);
    smp.has_ts = false;
    smp.ts_ms = 0;
    if (i < n) {
        size_t t0 = i;
        while (i < n && !IS(s[i], C_BLANK))
            i++;
        if (parse_ts(s + t0, i - t0, &smp.ts_ms) != 0)
            return fail(ps, GI_INVALID, "invalid timestamp \"%s\"", shown(s + t0, i - t0, tok));
        smp.has_ts = true;
        if (skip_blanks(s, i, n) != n)
            return fail(ps, GI_INVALID, "unexpected text after the timestamp");
    }
    if (++ps->nsamples > PROM_MAX_SAMPLES)
        return fail(ps, GI_TOO_LARGE, "more than %d samples", PROM_MAX_SAMPLES);
    smp.type = type_of(ps, smp.name, name_len);
    ps->err->line = ps->line;
    rc = ps->fn(ps->ctx, &smp, ps->err);
    if (rc != GI_OK) {
        char why[sizeof ps->err->msg];
        memcpy(why, ps->err->msg, sizeof why);
        return fail(ps, rc, "%s", why[0] ? why : "sample rejected by the consumer");
    }
    return GI_OK;
}

int prom_parse_text(const char *data, size_t len, prom_sample_fn fn, void *ctx,
                    struct prom_error *err)
{
    struct prom_error spare;
    struct parser *ps = NULL;
    const char *p = data, *end = data + len;
    int rc = GI_OK;

    if (err == NULL)
        err = &spare;
    memset(err, 0, sizeof *err);
    ps = calloc(1, sizeof *ps);
    if (ps == NULL || (ps->buf = malloc((len < PROM_MAX_LINE ? len : PROM_MAX_LINE) + 2)) == NULL) {
        snprintf(err->msg, sizeof err->msg, "out of memory");
        rc = GI_INTERNAL;
        goto cleanup;
    }
    ps->fn = fn;
    ps->ctx = ctx;
    ps->err = err;
    ps->line = 1;
    while (p < end) {
        const char *nl = memchr(p, '\n', (size_t)(end - p));
        size_t n = (size_t)((nl ? nl : end) - p);
        if (n > 0 && p[n - 1] == '\r')
            n--;
        if (n > PROM_MAX_LINE) {
            rc = fail(ps, GI_TOO_LARGE, "line longer than %d bytes", PROM_MAX_LINE);
            goto cleanup;
        }
        if ((rc = parse_line(ps, p, n)) != GI_OK)
            goto cleanup;
        p = nl ? nl + 1 : end;
        ps->line++;
    }
    err->line = 0;
    err->msg[0] = '\0';
cleanup:
    if (ps)
        free(ps->buf);
    free(ps);
    return rc;
}
