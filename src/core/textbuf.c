/* Growable text and the JSON and CSV writers; see textbuf.h. */
#include "core/textbuf.h"

#include <jansson.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

void tb_put(struct textbuf *b, const char *s, size_t n)
{
    size_t max = b->max ? b->max : TEXTBUF_MAX;

    if (b->failed)
        return;
    if (n > max || b->len + n > max) {
        b->failed = true;
        return;
    }
    if (b->len + n + 1 > b->cap) {
        size_t cap = b->cap ? b->cap : 4096;
        char *np;
        while (cap < b->len + n + 1)
            cap *= 2;
        if ((np = realloc(b->p, cap)) == NULL) {
            b->failed = true;
            return;
        }
        b->p = np;
        b->cap = cap;
    }
    memcpy(b->p + b->len, s, n);
    b->len += n;
    b->p[b->len] = '\0';
}

void tb_puts(struct textbuf *b, const char *s) { tb_put(b, s, strlen(s)); }

/* json_dump_callback's sink: appends to the buffer. */
static int dump_into(const char *s, size_t n, void *cls)
{
    struct textbuf *b = cls;

    tb_put(b, s, n);
    return b->failed ? -1 : 0;
}

bool tb_json_str(struct textbuf *b, const char *s)
{
    json_t *v;
    int rc;

    if (!s) {
        tb_put(b, "null", 4);
        return true;
    }
    if (!(v = json_string(s)))
        return false;
    rc = json_dump_callback(v, dump_into, b, JSON_ENCODE_ANY | JSON_COMPACT);
    json_decref(v);
    if (rc != 0)
        b->failed = true;
    return true;
}

void tb_json_real(struct textbuf *b, double d)
{
    char buf[64];
    int n = snprintf(buf, sizeof buf, "%.17g", d);
    char *e;

    if (n < 0 || (size_t)n >= sizeof buf - 3) {
        b->failed = true;
        return;
    }
    if (!strchr(buf, '.') && !strchr(buf, 'e')) {
        memcpy(buf + n, ".0", 3);
        n += 2;
    }
    if ((e = strchr(buf, 'e')) != NULL) {
        char *start = e + 1, *end = e + 2;
        if (*start == '-')
            start++;
        while (*end == '0')
            end++;
        if (end != start) {
            memmove(start, end, (size_t)(buf + n - end) + 1);
            n -= (int)(end - start);
        }
    }
    tb_put(b, buf, (size_t)n);
}

/* Whether a spreadsheet would run s as a formula (leading apostrophes,
 * which it strips, looked past). */
static bool csv_formula(const char *s)
{
    while (*s == '\'')
        s++;
    return *s != '\0' && strchr("=+-@\t\r", *s) != NULL;
}

void tb_csv_cell(struct textbuf *b, const char *s, bool text)
{
    bool formula = text && csv_formula(s);
    const char *p, *run;

    if (!formula && strpbrk(s, ",\"\r\n") == NULL) {
        tb_puts(b, s);
        return;
    }
    tb_put(b, formula ? "\"'" : "\"", formula ? 2 : 1);
    for (p = run = s; *p; p++)
        if (*p == '"') {
            tb_put(b, run, (size_t)(p - run) + 1);
            run = p;
        }
    tb_put(b, run, (size_t)(p - run));
    tb_put(b, "\"", 1);
}

void tb_csv_real(struct textbuf *b, double d)
{
    char buf[64];

    for (int prec = 15; prec <= 17; prec++) {
        snprintf(buf, sizeof buf, "%.*g", prec, d);
        if (strtod(buf, NULL) == d)
            break;
    }
    tb_puts(b, buf);
}

char *tb_take(struct textbuf *b, size_t *len)
{
    char *p = b->p;

    if (b->failed || !p) {
        free(p);
        p = b->failed ? NULL : strdup("");
        *len = 0;
    } else {
        *len = b->len;
    }
    b->p = NULL;
    b->len = b->cap = 0;
    b->failed = false;
    return p;
}

void tb_free(struct textbuf *b)
{
    free(b->p);
    b->p = NULL;
    b->len = b->cap = 0;
}
